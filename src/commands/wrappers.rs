//! Wrappers: programs whose arguments are another command (`timeout 5 npm test`, `sudo
//! systemctl restart nginx`, `bash -c 'npm test'`), and where in a simple command's words that
//! inner command starts.
//!
//! A wrapper is **transparent** when it only changes how the same command runs (`timeout`,
//! `nice`, `nohup`, `time`, `stdbuf`, `command`, `env` with nothing but assignments, and a shell's
//! `-c SCRIPT`): a pattern that admits the inner command admits the wrapped one. A privilege
//! wrapper (`sudo`, `doas`), `xargs` (its arguments come from input nobody saw), `watch` (which
//! hands its words to `sh -c`) and `exec` (which replaces the shell) are **opaque**: a pattern
//! admits them only by naming the wrapper and the inner command.
//!
//! The option tables are the programs' own (GNU coreutils, sudo 1.9, OpenBSD doas, GNU findutils'
//! xargs, procps' watch, bash): an option this module does not know makes the wrapper
//! unreadable, and an unreadable wrapper is read as no wrapper at all, so its words are judged
//! as they stand (which asks).

/// What a wrapper runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Inner {
    /// The words from this index on are the inner command (its program first, or its leading
    /// assignments for `env NAME=value program`).
    Words(usize),
    /// The word at this index is a shell script, to be read by the same grammar.
    Script(usize),
    /// No command: the wrapper runs a shell of its own (`sudo -s`, `bash`), or nothing.
    Shell,
}

/// A simple command read as a wrapper around another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wrapped {
    /// The wrapper's name as it is known (`timeout`, `bash -c`).
    pub(crate) wrapper: &'static str,
    /// True when a pattern that admits the inner command admits the wrapped one.
    pub(crate) transparent: bool,
    /// What it runs.
    pub(crate) inner: Inner,
}

/// How a wrapper's options read: flags that take no value, and options that take the next word
/// (or a value glued to them: `-n5`, `--adjustment=5`).
struct Options {
    flags: &'static [&'static str],
    valued: &'static [&'static str],
}

/// Reads `words` as a wrapper around another command, or `None` when the first word is not a
/// wrapper or its options are not ones this module knows.
pub(crate) fn read_wrapper(words: &[String]) -> Option<Wrapped> {
    let program = words.first()?.as_str();
    let name = program.rsplit('/').next().unwrap_or(program);
    let wrapped = |wrapper, transparent, inner| {
        Some(Wrapped {
            wrapper,
            transparent,
            inner,
        })
    };
    match name {
        "timeout" => {
            let at = skip_options(words, 1, TIMEOUT)?;
            // The duration, then the command.
            words.get(at)?;
            command_at(words, at + 1).and_then(|i| wrapped("timeout", true, Inner::Words(i)))
        }
        "nice" => {
            let mut at = 1;
            // `nice -5 cmd`, `nice -n 5 cmd`, `nice --adjustment=5 cmd`.
            if words
                .get(1)
                .is_some_and(|w| w.len() > 1 && w[1..].bytes().all(|b| b.is_ascii_digit()))
            {
                at = 2;
            }
            let at = skip_options(words, at, NICE)?;
            command_at(words, at).and_then(|i| wrapped("nice", true, Inner::Words(i)))
        }
        "nohup" => command_at(words, skip_dashdash(words, 1))
            .and_then(|i| wrapped("nohup", true, Inner::Words(i))),
        "time" => {
            let at = skip_options(words, 1, TIME)?;
            command_at(words, at).and_then(|i| wrapped("time", true, Inner::Words(i)))
        }
        "stdbuf" => {
            let at = skip_options(words, 1, STDBUF)?;
            command_at(words, at).and_then(|i| wrapped("stdbuf", true, Inner::Words(i)))
        }
        "command" => {
            // `command -v x` and `command -V x` look a name up and run nothing.
            let at = skip_options(words, 1, COMMAND)?;
            if words[1..at]
                .iter()
                .any(|w| w.contains('v') || w.contains('V'))
            {
                return None;
            }
            command_at(words, at).and_then(|i| wrapped("command", true, Inner::Words(i)))
        }
        "env" => {
            // Only assignments and `--` keep `env` transparent: `env NAME=x cmd` is the command
            // `NAME=x cmd`. Any option (`-i`, `-u`, `-S`, `-C`) makes it a program of its own.
            let at = skip_dashdash(words, 1);
            if words.get(at).is_some_and(|w| w.starts_with('-')) {
                return None;
            }
            // With no program after the assignments, `env` prints the environment: no wrapper.
            (at..words.len()).find(|&i| !is_assignment(&words[i]))?;
            wrapped("env", true, Inner::Words(at))
        }
        "sudo" => {
            let at = skip_options(words, 1, SUDO)?;
            let shell = words[1..at]
                .iter()
                .any(|w| matches!(w.as_str(), "-s" | "-i" | "--shell" | "--login"));
            match command_at(words, at) {
                Some(i) => wrapped("sudo", false, Inner::Words(i)),
                None if shell => wrapped("sudo", false, Inner::Shell),
                None => None,
            }
        }
        "doas" => {
            let at = skip_options(words, 1, DOAS)?;
            match command_at(words, at) {
                Some(i) => wrapped("doas", false, Inner::Words(i)),
                None => wrapped("doas", false, Inner::Shell),
            }
        }
        "exec" => {
            let at = skip_options(words, 1, EXEC)?;
            command_at(words, at).and_then(|i| wrapped("exec", false, Inner::Words(i)))
        }
        "xargs" => {
            let at = skip_options(words, 1, XARGS)?;
            // With no command, xargs runs `echo`.
            command_at(words, at).and_then(|i| wrapped("xargs", false, Inner::Words(i)))
        }
        "watch" => {
            let at = skip_options(words, 1, WATCH)?;
            command_at(words, at).and_then(|i| wrapped("watch", false, Inner::Words(i)))
        }
        "bash" | "sh" | "zsh" | "dash" | "ksh" => shell(words),
        _ => None,
    }
}

/// `bash -c SCRIPT`, `sh -lc SCRIPT`, `bash -e -c SCRIPT`: the script is the inner command.
/// Transparent only when nothing follows the script (words after it become `$0`, `$1`, ...,
/// which a script of plain words never reads, but which say the caller meant something else).
fn shell(words: &[String]) -> Option<Wrapped> {
    let mut at = 1;
    let mut command = false;
    while let Some(word) = words.get(at) {
        let Some(flags) = word.strip_prefix('-') else {
            break;
        };
        if flags.is_empty() || flags.starts_with('-') {
            // `--` or a long option (`--norc`, `--login`): not read here.
            return None;
        }
        if !flags.bytes().all(|b| b"cilexuv".contains(&b)) {
            return None;
        }
        command |= flags.contains('c');
        at += 1;
    }
    if !command {
        return (at == words.len()).then_some(Wrapped {
            wrapper: "a shell",
            transparent: false,
            inner: Inner::Shell,
        });
    }
    words.get(at)?;
    Some(Wrapped {
        wrapper: "a shell's -c",
        transparent: at + 1 == words.len(),
        inner: Inner::Script(at),
    })
}

/// The index of the first word at or after `at` that is a command (not `--`), if there is one.
fn command_at(words: &[String], at: usize) -> Option<usize> {
    let at = skip_dashdash(words, at);
    (at < words.len()).then_some(at)
}

fn skip_dashdash(words: &[String], at: usize) -> usize {
    if words.get(at).is_some_and(|w| w == "--") {
        at + 1
    } else {
        at
    }
}

/// True for `NAME=value` with a shell variable name before the `=`.
pub(crate) fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        }
        None => false,
    }
}

/// Skips the options from `at`, returning the index of the first operand; `None` when an option
/// is not in the table (the wrapper is then not read through).
fn skip_options(words: &[String], mut at: usize, options: Options) -> Option<usize> {
    while let Some(word) = words.get(at) {
        if word == "--" {
            return Some(at);
        }
        if !word.starts_with('-') || word == "-" {
            return Some(at);
        }
        if let Some((name, _)) = word.split_once('=').filter(|_| word.starts_with("--")) {
            if !options.valued.contains(&name) {
                return None;
            }
            at += 1;
            continue;
        }
        if options.flags.contains(&word.as_str()) {
            at += 1;
            continue;
        }
        if options.valued.contains(&word.as_str()) {
            at += 2;
            continue;
        }
        // A short option with its value glued on (`-n5`, `-uroot`), or bundled flags (`-pk`).
        if !word.starts_with("--") && word.len() > 2 {
            let first = &word[..2];
            if options.valued.contains(&first) {
                at += 1;
                continue;
            }
            let all_flags = word[1..]
                .chars()
                .all(|c| options.flags.iter().any(|f| f.len() == 2 && f.ends_with(c)));
            if all_flags {
                at += 1;
                continue;
            }
        }
        return None;
    }
    Some(at)
}

const TIMEOUT: Options = Options {
    flags: &[
        "--preserve-status",
        "--foreground",
        "-v",
        "--verbose",
        "-f",
        "-p",
    ],
    valued: &["-s", "--signal", "-k", "--kill-after"],
};
const NICE: Options = Options {
    flags: &[],
    valued: &["-n", "--adjustment"],
};
const TIME: Options = Options {
    flags: &["-p", "-v", "--verbose", "--portability", "-q", "--quiet"],
    valued: &[],
};
const STDBUF: Options = Options {
    flags: &[],
    valued: &["-i", "-o", "-e", "--input", "--output", "--error"],
};
const COMMAND: Options = Options {
    flags: &["-p", "-v", "-V"],
    valued: &[],
};
const SUDO: Options = Options {
    flags: &[
        "-A",
        "-b",
        "-E",
        "-e",
        "-H",
        "-i",
        "-K",
        "-k",
        "-l",
        "-n",
        "-P",
        "-S",
        "-s",
        "-V",
        "-v",
        "--askpass",
        "--background",
        "--preserve-env",
        "--set-home",
        "--login",
        "--reset-timestamp",
        "--remove-timestamp",
        "--non-interactive",
        "--preserve-groups",
        "--stdin",
        "--shell",
    ],
    valued: &[
        "-C",
        "-D",
        "-g",
        "-h",
        "-p",
        "-R",
        "-r",
        "-T",
        "-t",
        "-U",
        "-u",
        "--close-from",
        "--chdir",
        "--group",
        "--host",
        "--prompt",
        "--chroot",
        "--role",
        "--command-timeout",
        "--type",
        "--other-user",
        "--user",
    ],
};
const DOAS: Options = Options {
    flags: &["-n", "-s", "-L"],
    valued: &["-u", "-C"],
};
const EXEC: Options = Options {
    flags: &["-c", "-l"],
    valued: &["-a"],
};
const XARGS: Options = Options {
    flags: &[
        "-0",
        "-o",
        "-p",
        "-r",
        "-t",
        "-x",
        "--null",
        "--open-tty",
        "--interactive",
        "--no-run-if-empty",
        "--verbose",
        "--exit",
    ],
    valued: &[
        "-a",
        "-d",
        "-E",
        "-I",
        "-L",
        "-n",
        "-P",
        "-s",
        "--arg-file",
        "--delimiter",
        "--eof",
        "--replace",
        "--max-lines",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
    ],
};
const WATCH: Options = Options {
    flags: &[
        "-b",
        "-c",
        "-d",
        "-e",
        "-f",
        "-g",
        "-p",
        "-r",
        "-t",
        "-w",
        "-x",
        "--beep",
        "--color",
        "--no-color",
        "--differences",
        "--errexit",
        "--follow",
        "--chgexit",
        "--precise",
        "--no-rerun",
        "--no-title",
        "--no-wrap",
        "--exec",
    ],
    valued: &["-n", "-q", "--interval", "--equexit", "--shotsdir"],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> Option<Wrapped> {
        let words: Vec<String> = line.split(' ').map(str::to_owned).collect();
        read_wrapper(&words)
    }

    #[test]
    fn each_wrapper_names_where_its_inner_command_starts() {
        for (line, wrapper, transparent, inner) in [
            ("timeout 5 npm test", "timeout", true, Inner::Words(2)),
            (
                "timeout -s KILL 5 npm test",
                "timeout",
                true,
                Inner::Words(4),
            ),
            (
                "timeout --signal=KILL 5s npm",
                "timeout",
                true,
                Inner::Words(3),
            ),
            ("nice -n 5 npm test", "nice", true, Inner::Words(3)),
            ("nice -5 npm", "nice", true, Inner::Words(2)),
            ("nohup npm test", "nohup", true, Inner::Words(1)),
            ("time -p npm", "time", true, Inner::Words(2)),
            ("stdbuf -oL npm", "stdbuf", true, Inner::Words(2)),
            ("command npm", "command", true, Inner::Words(1)),
            ("env A=1 npm", "env", true, Inner::Words(1)),
            ("env npm", "env", true, Inner::Words(1)),
            (
                "sudo -u root systemctl restart",
                "sudo",
                false,
                Inner::Words(3),
            ),
            ("sudo -uroot systemctl", "sudo", false, Inner::Words(2)),
            ("sudo -s", "sudo", false, Inner::Shell),
            ("doas rm", "doas", false, Inner::Words(1)),
            ("xargs -0 -n 1 rm -rf", "xargs", false, Inner::Words(4)),
            ("watch -n 1 ls", "watch", false, Inner::Words(3)),
            ("exec rm", "exec", false, Inner::Words(1)),
            ("bash -c x", "a shell's -c", true, Inner::Script(2)),
            ("sh -lc x", "a shell's -c", true, Inner::Script(2)),
            ("/bin/bash -e -c x", "a shell's -c", true, Inner::Script(3)),
            ("bash -c x y", "a shell's -c", false, Inner::Script(2)),
            ("bash", "a shell", false, Inner::Shell),
        ] {
            assert_eq!(
                read(line),
                Some(Wrapped {
                    wrapper,
                    transparent,
                    inner
                }),
                "{line}"
            );
        }
    }

    #[test]
    fn an_unknown_option_or_no_command_is_not_read_through() {
        for line in [
            "timeout 5",
            "timeout --bogus 5 npm",
            "env -i npm",
            "env -S x",
            "env",
            "command -v npm",
            "nice",
            "bash script.sh",
            "bash --norc -c x",
            "xargs",
            "npm test",
        ] {
            assert_eq!(read(line), None, "{line}");
        }
    }
}
