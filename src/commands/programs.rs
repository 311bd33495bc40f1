//! What a program does with its words: the read-only classifier's per-program rules.
//!
//! Each rule looks at one simple command's words (the program first, wrappers already read
//! through by `classify`) and reports every word that makes the command more than a read:
//! an option that runs another program ([`Effect::Runs`]), one that writes a file it names
//! ([`Effect::WritesTo`]), a subcommand or operand that changes state ([`Effect::Writes`]),
//! one that sends data ([`Effect::Sends`]), or a word the rule does not know
//! ([`Effect::Unknown`]). A program with no rule is unknown, and so never read-only: this is
//! an allowlist.
//!
//! Options are read strictly: a short option letter is found inside a bundle (`-sSLo`), and a
//! long option by any prefix GNU's getopt would accept (`--out=x` for `--output`). Reading a
//! value as an option can only make a command ask, never approve.

use serde::Serialize;

mod cli;
mod cloud;
mod containers;
mod data;
mod dev;
mod git;
mod infra;
mod packages;
mod services;
mod system;
mod text;
mod tools;

use super::wrappers;

/// What a word makes a command do besides reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Effect {
    /// Runs another program (`find -exec`, `git -c`, `rg --pre`, a wrapper's command).
    Runs,
    /// Writes a file that an option names (`sort -o`, `find -fprint`, `curl -o`).
    WritesTo,
    /// Writes files or changes state (`rm`, `git commit`, `sed -i`, `tee FILE`).
    Writes,
    /// Removes the files it finds (`find -delete`).
    Deletes,
    /// Sends data over the network (`curl -d`, `curl -X POST`).
    Sends,
    /// Runs with another user's privileges (`sudo`, `doas`).
    Escalates,
    /// Changes the environment of the program it runs (`NAME=value`), which can make it load
    /// or run other code (`LD_PRELOAD`, `GIT_PAGER`).
    Environment,
    /// A program, subcommand or option the classifier has no rule for.
    Unknown,
    /// A construct of the line that is never read-only (a redirection, an expansion, ...).
    Construct,
}

impl Effect {
    /// True when a pattern's wildcard may not stand for the word: it makes the program run
    /// another program, write or delete where the pattern was not told it would, or change the
    /// program's environment.
    pub(crate) fn guarded(self) -> bool {
        matches!(
            self,
            Effect::Runs | Effect::WritesTo | Effect::Deletes | Effect::Environment
        )
    }
}

/// One word that makes a command more than a read, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// Its index in the command's words.
    pub(crate) word: usize,
    /// What it does.
    pub(crate) effect: Effect,
    /// Why, in words (`find runs a program for each file it finds`).
    pub(crate) why: &'static str,
}

/// The words of one command as a rule reads them, and what the rule found.
pub(crate) struct Scan<'w> {
    pub(crate) words: &'w [String],
    pub(crate) findings: Vec<Finding>,
}

impl<'w> Scan<'w> {
    fn new(words: &'w [String]) -> Scan<'w> {
        Scan {
            words,
            findings: Vec::new(),
        }
    }

    /// Records a finding at word `i`.
    pub(crate) fn flag(&mut self, i: usize, effect: Effect, why: &'static str) {
        self.findings.push(Finding {
            word: i,
            effect,
            why,
        });
    }

    /// The words after the program (from `from`) up to a `--`, with their indices.
    pub(crate) fn options_from(&self, from: usize) -> Vec<(usize, &'w str)> {
        let mut out = Vec::new();
        for (i, w) in self.words.iter().enumerate().skip(from) {
            if w == "--" {
                break;
            }
            out.push((i, w.as_str()));
        }
        out
    }

    /// Flags every word from `from` that is one of the short options `letters` (alone, glued
    /// to a value, or in a bundle) or a long option named in `long` (or a prefix of one).
    pub(crate) fn options(
        &mut self,
        from: usize,
        letters: &str,
        long: &[&str],
        effect: Effect,
        why: &'static str,
    ) {
        for (i, w) in self.options_from(from) {
            if is_short(w, letters) || long.iter().any(|l| is_long(w, l)) {
                self.flag(i, effect, why);
            }
        }
    }

    /// Flags every word from `from` equal to one of `names`, or starting with one followed by
    /// `=`.
    pub(crate) fn exact(&mut self, from: usize, names: &[&str], effect: Effect, why: &'static str) {
        for (i, w) in self.options_from(from) {
            let name = w.split_once('=').map_or(w, |(n, _)| n);
            if names.contains(&name) {
                self.flag(i, effect, why);
            }
        }
    }

    /// The operands from `from`: words that are not options, assuming every option takes no
    /// value (so a rule using this reads an option's value as an operand, which is stricter).
    pub(crate) fn operands(&self, from: usize) -> Vec<(usize, &'w str)> {
        let mut out = Vec::new();
        let mut after_dashes = false;
        for (i, w) in self.words.iter().enumerate().skip(from) {
            if !after_dashes && w == "--" {
                after_dashes = true;
            } else if after_dashes || !w.starts_with('-') || w == "-" {
                out.push((i, w.as_str()));
            }
        }
        out
    }

    /// True when any word from `from` is one of the short `letters` or a long option in `long`.
    pub(crate) fn has(&self, from: usize, letters: &str, long: &[&str]) -> bool {
        self.options_from(from)
            .iter()
            .any(|(_, w)| is_short(w, letters) || long.iter().any(|l| is_long(w, l)))
    }
}

/// `-x`, `-xvalue` or a bundle holding one of `letters` (never `--...`).
pub(crate) fn is_short(word: &str, letters: &str) -> bool {
    !letters.is_empty()
        && word.len() > 1
        && word.starts_with('-')
        && !word.starts_with("--")
        && word[1..].chars().any(|c| letters.contains(c))
}

/// `--name`, `--name=value`, or an abbreviation getopt would accept (`--out` for `--output`).
pub(crate) fn is_long(word: &str, name: &str) -> bool {
    let Some(given) = word.strip_prefix("--") else {
        return false;
    };
    let given = given.split_once('=').map_or(given, |(g, _)| g);
    let name = name.trim_start_matches('-');
    !given.is_empty() && name.starts_with(given)
}

/// The program's name when it is one the classifier may recognize: a bare name, or a path in
/// the system's program folders. `./ls` is a file of the working tree, not `ls`.
pub(crate) fn program_name(word: &str) -> Option<&str> {
    if !word.contains('/') {
        return Some(word);
    }
    for dir in [
        "/bin/",
        "/usr/bin/",
        "/usr/local/bin/",
        "/sbin/",
        "/usr/sbin/",
    ] {
        if let Some(name) = word.strip_prefix(dir) {
            if !name.contains('/') && !name.is_empty() {
                return Some(name);
            }
        }
    }
    None
}

/// Programs that only read, whatever their options: they write no file, run nothing and
/// change nothing (GNU coreutils and their common peers).
const READERS: &[&str] = &[
    "ls",
    "dir",
    "vdir",
    "cat",
    "head",
    "tail",
    "wc",
    "nl",
    "cut",
    "tr",
    "rev",
    "tac",
    "fold",
    "fmt",
    "paste",
    "join",
    "column",
    "expand",
    "unexpand",
    "od",
    "hexdump",
    "strings",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "shasum",
    "seq",
    "sleep",
    "yes",
    "true",
    "false",
    "expr",
    "numfmt",
    "echo",
    "pwd",
    "whoami",
    "id",
    "groups",
    "uname",
    "arch",
    "nproc",
    "locale",
    "tty",
    "getconf",
    "basename",
    "dirname",
    "readlink",
    "realpath",
    "stat",
    "du",
    "df",
    "printenv",
    "which",
    "type",
    "whereis",
    "ps",
    "pgrep",
    "uptime",
    "free",
    "w",
    "who",
    "cal",
    "diff",
    "cmp",
    "comm",
    "grep",
    "egrep",
    "fgrep",
    "zgrep",
    "zcat",
    "bzcat",
    "xzcat",
    "cd",
    "test",
    "jq",
    "lsblk",
    "logname",
    "users",
    "tsort",
    "ptx",
    "look",
    "factor",
    "pathchk",
    "eza",
    "exa",
    "locate",
    "host",
    "ping",
    "ping6",
    "help",
    ":",
];

/// Programs whose only read-only use is asking for their version.
const VERSION_ONLY: &[&str] = &[
    "python", "python3", "node", "ruby", "perl", "java", "rustc", "gcc", "cc", "clang", "make",
    "deno", "bun", "php", "rustup", "dotnet",
];

/// `python3.12` and the like: a Python named with its version.
fn is_versioned_python(name: &str) -> bool {
    name.strip_prefix("python")
        .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
}

/// What `words` (a command whose wrappers are read through; no leading assignment) does
/// besides reading. An empty list means read-only.
pub(crate) fn findings(words: &[String]) -> Vec<Finding> {
    let mut scan = Scan::new(words);
    let Some(name) = words.first().and_then(|w| program_name(w)) else {
        scan.flag(
            0,
            Effect::Unknown,
            "a program from a path the classifier does not know",
        );
        return scan.findings;
    };
    match name {
        n if READERS.contains(&n) => {}
        n if VERSION_ONLY.contains(&n) || is_versioned_python(n) => {
            let python = n.starts_with("python");
            if !matches!(&words[1..], [v] if matches!(v.as_str(), "--version" | "-V" | "--help" | "-h")
                || (python && v == "-VV"))
            {
                scan.flag(
                    0,
                    Effect::Unknown,
                    "only its --version and --help are known to be read-only",
                );
            }
        }
        "git" => git::rules(&mut scan),
        "aws" => cloud::aws(&mut scan),
        "az" => cloud::az(&mut scan),
        "gcloud" => cloud::gcloud(&mut scan),
        "gh" => services::gh(&mut scan),
        "auth0" => services::auth0(&mut scan),
        "helm" => infra::helm(&mut scan),
        "terraform" => infra::terraform(&mut scan),
        "packer" => infra::packer(&mut scan),
        "cdk" => infra::cdk(&mut scan),
        n if n == "ansible" || n.starts_with("ansible-") => infra::ansible(n, &mut scan),
        "docker" | "podman" => containers::docker(&mut scan),
        "docker-compose" | "podman-compose" => containers::compose(&mut scan, 1),
        "kubectl" | "oc" => containers::kubectl(&mut scan),
        "brew" => dev::brew(&mut scan),
        "fzf" => dev::fzf(&mut scan),
        "ruff" => dev::ruff(&mut scan),
        "sqlite3" | "duckdb" => data::sql_shell(name, &mut scan),
        "openssl" => data::openssl(&mut scan),
        "7z" | "7za" | "7zr" | "7zz" => data::seven_zip(&mut scan),
        "ip" => system::ip(&mut scan),
        "ifconfig" => system::ifconfig(&mut scan),
        "dmesg" => system::dmesg(&mut scan),
        "less" | "more" | "man" | "bat" | "batcat" | "ag" => system::viewer(name, &mut scan),
        "sips" => system::sips(&mut scan),
        "symbols" => system::symbols(&mut scan),
        "prometheus" => system::prometheus(&mut scan),
        "command" => system::command(&mut scan),
        "dig" | "nslookup" => system::dns(name, &mut scan),
        "find" => text::find(&mut scan),
        "sed" => text::sed(&mut scan),
        "awk" | "gawk" | "mawk" | "nawk" => text::awk(&mut scan),
        "sort" => {
            scan.options(
                1,
                "o",
                &["--output"],
                Effect::WritesTo,
                "sort -o writes the file it names",
            );
            scan.options(
                1,
                "",
                &["--compress-program"],
                Effect::Runs,
                "sort runs the compress program",
            );
        }
        "uniq" | "xxd" => {
            // xxd's options that take a value (`-l 120`); uniq's (`-f 1`) are read as operands,
            // which is stricter.
            let valued = if name == "xxd" { "cglosnR" } else { "" };
            let mut operands = Vec::new();
            let mut at = 1;
            while let Some(w) = words.get(at) {
                if w == "--" {
                    operands.extend((at + 1..words.len()).map(|k| (k, ())));
                    break;
                }
                if !w.starts_with('-') || w == "-" {
                    operands.push((at, ()));
                } else if w.len() == 2 && valued.contains(&w[1..]) {
                    at += 1;
                }
                at += 1;
            }
            if let Some(&(i, _)) = operands.get(1) {
                scan.flag(i, Effect::Writes, "a second operand is the file it writes");
            }
        }
        "tee" => {
            if let Some(&(i, _)) = scan.operands(1).first() {
                scan.flag(i, Effect::Writes, "tee writes every file it names");
            }
        }
        "tree" => scan.options(
            1,
            "o",
            &[],
            Effect::WritesTo,
            "tree -o writes the file it names",
        ),
        "file" => scan.options(
            1,
            "C",
            &["--compile"],
            Effect::Writes,
            "file -C writes a magic file",
        ),
        "date" => {
            scan.options(
                1,
                "s",
                &["--set"],
                Effect::Writes,
                "date --set changes the clock",
            );
            for (i, w) in scan.operands(1) {
                if !w.starts_with('+') {
                    scan.flag(i, Effect::Writes, "a date operand sets the clock");
                }
            }
        }
        "hostname" => {
            scan.options(
                1,
                "bF",
                &["--boot", "--file"],
                Effect::Writes,
                "sets the host name",
            );
            if let Some(&(i, _)) = scan.operands(1).first() {
                scan.flag(i, Effect::Writes, "a host name operand sets the host name");
            }
        }
        "printf" => scan.options(
            1,
            "v",
            &[],
            Effect::Writes,
            "printf -v assigns a shell variable",
        ),
        "rg" => {
            scan.options(
                1,
                "",
                &["--pre"],
                Effect::Runs,
                "rg --pre runs a program on every file",
            );
            scan.options(
                1,
                "",
                &["--hostname-bin"],
                Effect::Runs,
                "rg --hostname-bin runs a program",
            );
            scan.options(
                1,
                "z",
                &["--search-zip"],
                Effect::Runs,
                "rg -z runs decompression programs",
            );
        }
        "fd" | "fdfind" => scan.options(
            1,
            "xX",
            &["--exec", "--exec-batch"],
            Effect::Runs,
            "fd -x runs a program for each file",
        ),
        "base64" | "base32" | "basenc" => scan.options(
            1,
            "o",
            &["--output"],
            Effect::WritesTo,
            "base64 -o writes the file it names (BSD)",
        ),
        // `env` with a command or an option it reads through; here it prints the environment,
        // unless an option it does not know changes that.
        "env" => {
            for (i, w) in scan.options_from(1) {
                if !wrappers::is_assignment(w) && !matches!(w, "-0" | "--null") {
                    scan.flag(
                        i,
                        Effect::Unknown,
                        "an env option the classifier does not know",
                    );
                }
            }
        }
        // `xargs` with a command is read through; here it has none it could read.
        "xargs" => scan.flag(
            0,
            Effect::Unknown,
            "xargs with no command runs echo, or with an option the classifier does not know",
        ),
        _ => tools::rules(name, &mut scan),
    }
    scan.findings
}

/// For the rules' tests: the word that makes `line` not read-only, or `None` when it is.
#[cfg(test)]
fn deciding_word(line: &str) -> Option<String> {
    let c = super::classify(line);
    (!c.read_only).then_some(c.word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_found_in_bundles_and_by_prefix() {
        assert!(is_short("-sSLo", "o"));
        assert!(is_short("-ofile", "o"));
        assert!(!is_short("--output", "o"));
        assert!(!is_short("-", "o"));
        assert!(is_long("--output", "--output"));
        assert!(is_long("--out=x", "--output"));
        assert!(is_long("--o", "--output"));
        assert!(!is_long("--", "--output"));
        assert!(!is_long("--outputs", "--output"));
        assert_eq!(program_name("/usr/bin/ls"), Some("ls"));
        assert_eq!(program_name("./ls"), None);
        assert_eq!(program_name("/tmp/ls"), None);
    }

    #[test]
    fn option_values_are_not_operands_and_interpreters_read_only_for_help_and_version() {
        let read_only = |line: &str| crate::commands::classify(line).read_only;
        for line in [
            "xxd -l 120 file.bin",
            "xxd -s 0x30 -c 12 file.bin",
            "python -VV",
            "python3.12 --version",
            "node --help",
            "ping -c 3 example.com",
            "dig example.com",
            "nslookup example.com",
        ] {
            assert!(read_only(line), "{line}");
        }
        for line in [
            "xxd in.bin out.hex",
            "python -m calendar",
            "python3.12 -c 'print(1)'",
            "dig -f names.txt",
            "nslookup",
        ] {
            assert!(!read_only(line), "{line}");
        }
    }
}
