//! `git`: its global options, then a subcommand. Read-only subcommands are listed; everything
//! else writes (a known writer) or is unknown (an alias or an external `git-<name>` program,
//! either of which may run anything).

use super::{is_short, Effect, Scan};

/// Subcommands that only read, whatever their options (some options are checked below).
const READS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "annotate",
    "shortlog",
    "describe",
    "rev-parse",
    "rev-list",
    "ls-files",
    "ls-tree",
    "ls-remote",
    "cat-file",
    "grep",
    "merge-base",
    "name-rev",
    "show-ref",
    "for-each-ref",
    "whatchanged",
    "count-objects",
    "version",
    "diff-tree",
    "diff-files",
    "diff-index",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "var",
    "cherry",
    "range-diff",
    "show-branch",
    "verify-pack",
    "verify-commit",
    "verify-tag",
    "request-pull",
    "fsck",
    "archive",
    "help",
];

/// Subcommands known to write the repository, the working tree or a remote.
const WRITES: &[&str] = &[
    "add",
    "am",
    "apply",
    "format-patch",
    "checkout",
    "cherry-pick",
    "clean",
    "clone",
    "commit",
    "fetch",
    "gc",
    "init",
    "merge",
    "mv",
    "prune",
    "pull",
    "push",
    "rebase",
    "reset",
    "restore",
    "revert",
    "rm",
    "switch",
    "update-index",
    "update-ref",
    "maintenance",
    "repack",
    "filter-branch",
    "mergetool",
    "difftool",
    "submodule",
    "worktree",
    "notes",
    "stash",
    "tag",
    "branch",
    "remote",
    "config",
    "reflog",
    "lfs",
];

/// Global options that take a value in the next word.
const VALUED: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--config-env",
];

pub(super) fn rules(scan: &mut Scan<'_>) {
    let words = scan.words;
    let mut at = 1;
    while let Some(word) = words.get(at) {
        let w = word.as_str();
        if !w.starts_with('-') {
            break;
        }
        let name = w.split_once('=').map_or(w, |(n, _)| n);
        match name {
            "-c" | "--config-env" => scan.flag(
                at,
                Effect::Runs,
                "git -c sets configuration, which can name a program to run (core.pager, \
                 core.fsmonitor, diff.external)",
            ),
            "-C" | "--git-dir" | "--work-tree" => scan.flag(
                at,
                Effect::Runs,
                "git reads another repository's configuration, which can name a program to run",
            ),
            "--exec-path" if w.contains('=') => scan.flag(
                at,
                Effect::Runs,
                "git --exec-path= runs its commands from that folder",
            ),
            "--exec-path"
            | "--no-pager"
            | "--bare"
            | "--no-replace-objects"
            | "--version"
            | "--literal-pathspecs"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs"
            | "--no-optional-locks"
            | "--html-path"
            | "--man-path"
            | "--info-path"
            | "-P"
            | "--namespace"
            | "-p"
            | "--paginate"
            | "--help"
            | "-h" => {}
            _ => scan.flag(
                at,
                Effect::Unknown,
                "a git option the classifier does not know",
            ),
        }
        at += if VALUED.contains(&w) { 2 } else { 1 };
    }
    let Some(sub) = words.get(at).map(String::as_str) else {
        return; // `git`, `git --version`: prints and exits.
    };
    let from = at + 1;
    // Options that run a program or write a file, on every subcommand that reads.
    scan.options(
        from,
        "",
        &["--output"],
        Effect::WritesTo,
        "git --output writes the file it names",
    );
    scan.exact(
        from,
        &["--ext-diff"],
        Effect::Runs,
        "git --ext-diff runs the configured diff program",
    );
    match sub {
        "grep" => scan.options(
            from,
            "O",
            &["--open-files-in-pager"],
            Effect::Runs,
            "git grep -O runs a pager on the files it finds",
        ),
        "help" => scan.flag(at, Effect::Runs, "git help runs a manual viewer or a browser"),
        "branch" => listing(
            scan,
            at,
            "adlrv",
            &["--list", "--all", "--remotes", "--contains", "--no-contains", "--merged",
              "--no-merged", "--points-at", "--show-current", "--verbose"],
            "dDmMcCuf",
            &["--delete", "--move", "--copy", "--set-upstream-to", "--unset-upstream",
              "--edit-description", "--force", "--track", "--no-track", "--create-reflog"],
            "git branch with a name creates or changes a branch",
        ),
        "tag" => listing(
            scan,
            at,
            "ln",
            &["--list", "--contains", "--no-contains", "--points-at", "--merged", "--no-merged"],
            "dasfmFue",
            &["--delete", "--annotate", "--sign", "--force", "--message", "--file",
              "--local-user", "--edit", "--create-reflog"],
            "git tag with a name creates or changes a tag",
        ),
        "remote" | "stash" | "reflog" | "worktree" | "submodule" | "notes" | "sparse-checkout"
        | "bundle" | "rerere" | "bisect" => {
            let reads: &[&str] = match sub {
                "remote" => &["show", "get-url"],
                "stash" => &["list", "show"],
                "reflog" => &["show"],
                "worktree" | "sparse-checkout" => &["list"],
                "submodule" => &["status", "summary"],
                "bundle" => &["verify", "list-heads"],
                "rerere" => &["status", "diff", "remaining"],
                "bisect" => &["log"],
                _ => &["list", "show"],
            };
            let operand = scan.operands(from).first().copied();
            match operand {
                None if sub == "remote" || sub == "reflog" => {}
                Some((_, op)) if reads.contains(&op) => {}
                Some((i, _)) => scan.flag(i, Effect::Writes, "a git subcommand that changes the repository"),
                None => scan.flag(at, Effect::Writes, "a git subcommand that changes the repository"),
            }
        }
        "config" => config(scan, at),
        "replace" => listing(
            scan,
            at,
            "l",
            &["--list", "--format"],
            "df",
            &["--delete", "--edit", "--graft", "--convert-graft-file", "--force"],
            "git replace with an object replaces it",
        ),
        "archive" => {
            scan.options(from, "o", &[], Effect::WritesTo, "git archive -o writes the file it names");
            scan.options(from, "", &["--exec"], Effect::Runs, "git archive --exec runs the program it names");
        }
        "fsck" => scan.options(from, "", &["--lost-found"], Effect::Writes, "git fsck --lost-found writes what it finds"),
        "hash-object" => scan.exact(from, &["-w"], Effect::Writes, "git hash-object -w writes the object"),
        "apply" if scan.has(from, "", &["--check"])
            && !scan.has(from, "", &["--apply", "--index", "--cached", "--3way", "--reject"]) => {}
        "format-patch" if scan.has(from, "", &["--stdout"]) => {}
        "symbolic-ref" => {
            scan.options(from, "d", &["--delete"], Effect::Writes, "git symbolic-ref -d deletes the ref");
            if let Some(&(i, _)) = scan.operands(from).get(1) {
                scan.flag(i, Effect::Writes, "git symbolic-ref with a target sets the ref");
            }
        }
        s if READS.contains(&s) => {}
        s if WRITES.contains(&s) => {
            scan.flag(at, Effect::Writes, "a git subcommand that changes the repository or a remote")
        }
        _ => scan.flag(
            at,
            Effect::Unknown,
            "an unknown git subcommand: an alias or an external git-<name> program, which can run anything",
        ),
    }
}

/// `git branch` and `git tag`: read-only when they list, with no option that changes a ref.
fn listing(
    scan: &mut Scan<'_>,
    at: usize,
    list_letters: &str,
    list_long: &[&str],
    write_letters: &str,
    write_long: &[&str],
    why: &'static str,
) {
    let from = at + 1;
    scan.options(from, write_letters, write_long, Effect::Writes, why);
    let lists = scan.has(from, list_letters, list_long);
    if !lists {
        if let Some(&(i, _)) = scan.operands(from).first() {
            scan.flag(i, Effect::Writes, why);
        }
    }
}

/// `git config`: reads with `--get*`, `--list` or one name; anything else writes.
fn config(scan: &mut Scan<'_>, at: usize) {
    let from = at + 1;
    let why = "git config with a value, or an option that edits, changes the configuration";
    let words = scan.words;
    if let Some(sub) = words.get(from).map(String::as_str) {
        match sub {
            "get" | "list" => return,
            "set" | "unset" | "rename-section" | "remove-section" | "edit" => {
                return scan.flag(from, Effect::Writes, why)
            }
            _ => {}
        }
    }
    let reads = words[from..].iter().any(|w| {
        let name = w.split_once('=').map_or(w.as_str(), |(n, _)| n);
        is_short(w, "l")
            || [
                "--get",
                "--get-all",
                "--get-regexp",
                "--get-urlmatch",
                "--list",
            ]
            .contains(&name)
    });
    scan.options(
        from,
        "e",
        &[
            "--add",
            "--unset",
            "--unset-all",
            "--replace-all",
            "--rename-section",
            "--remove-section",
            "--edit",
        ],
        Effect::Writes,
        why,
    );
    if !reads && scan.operands(from).len() > 1 {
        let (i, _) = scan.operands(from)[1];
        scan.flag(i, Effect::Writes, why);
    }
}

#[cfg(test)]
mod tests {

    use super::super::deciding_word as word;

    #[test]
    fn git_reads_in_subcommands_that_check_verify_or_print_and_writes_elsewhere() {
        for line in [
            "git fsck --full",
            "git verify-commit HEAD",
            "git archive --format=zip HEAD",
            "git apply --check p.diff",
            "git format-patch --stdout -1",
            "git symbolic-ref --short HEAD",
            "git replace -l",
            "git bisect log",
            "git rerere status",
            "git bundle verify r.bundle",
            "git --paginate log",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("git archive -o f.tar HEAD", "-o"),
            ("git archive --remote=o --exec=x HEAD", "--exec=x"),
            ("git apply p.diff", "apply"),
            ("git format-patch -3", "format-patch"),
            ("git symbolic-ref HEAD refs/heads/x", "refs/heads/x"),
            ("git fsck --lost-found", "--lost-found"),
            ("git hash-object -w f", "-w"),
            ("git replace a b", "a"),
            ("git rerere", "rerere"),
            ("git lfs ls-files", "lfs"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }
}
