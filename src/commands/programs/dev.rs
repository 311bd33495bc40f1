//! Developer tools with many modes: `brew` (its reading commands; `outdated` and `fetch`
//! update or download, `home` opens a browser), `fzf` (a filter, unless an option runs a
//! command, listens or writes its history) and `ruff` (checking, not fixing).

use super::cli::asks_help;
use super::{Effect, Scan};

/// brew commands that only read.
const BREW_READS: &[&str] = &[
    "info",
    "abv",
    "list",
    "ls",
    "search",
    "-S",
    "deps",
    "desc",
    "leaves",
    "uses",
    "missing",
    "config",
    "--config",
    "doctor",
    "dr",
    "options",
    "tap-info",
    "formulae",
    "casks",
    "log",
    "cat",
    "commands",
    "help",
    "shellenv",
    "--cache",
    "--cellar",
    "--caskroom",
    "--prefix",
    "--repository",
    "--repo",
    "--version",
    "-v",
    "--env",
    "--help",
    "-h",
];

/// brew commands that change Homebrew's state or files, or run code.
const BREW_ACTS: &[&str] = &[
    "install",
    "uninstall",
    "remove",
    "rm",
    "reinstall",
    "upgrade",
    "update",
    "up",
    "tap",
    "untap",
    "link",
    "ln",
    "unlink",
    "pin",
    "unpin",
    "cleanup",
    "autoremove",
    "migrate",
    "postinstall",
    "post_install",
    "edit",
    "create",
    "gist-logs",
    "services",
    "bundle",
    "developer",
    "readall",
    "audit",
    "bottle",
    "bump",
    "bump-formula-pr",
    "bump-cask-pr",
    "test",
    "style",
    "vendor-install",
    "fetch",
    "outdated",
    "home",
    "homepage",
    "docs",
    "analytics",
];

/// `brew COMMAND [options] [names]`.
pub(super) fn brew(scan: &mut Scan<'_>) {
    let Some(command) = scan.words.get(1).map(String::as_str) else {
        return scan.flag(0, Effect::Unknown, "brew with no command");
    };
    let known = BREW_READS.contains(&command) || BREW_ACTS.contains(&command);
    if known && asks_help(scan, &["--help", "-h"]) {
        return;
    }
    let rest = scan.words[2..].iter().map(String::as_str);
    // A formula or cask given as a file is Ruby code, which brew evaluates.
    let files: Vec<usize> = (2..scan.words.len())
        .filter(|&k| scan.words[k].ends_with(".rb"))
        .collect();
    for k in files {
        scan.flag(
            k,
            Effect::Runs,
            "brew evaluates a formula file, which is Ruby code",
        );
    }
    match command {
        "info" | "abv" => scan.options(
            2,
            "",
            &["--github"],
            Effect::Runs,
            "brew info --github opens a web browser",
        ),
        c if BREW_READS.contains(&c) => {}
        "analytics" if rest.clone().all(|w| w == "state") => {}
        "outdated" => scan.flag(
            1,
            Effect::Writes,
            "brew outdated runs brew update first, which fetches every tap",
        ),
        "fetch" => scan.flag(
            1,
            Effect::Writes,
            "brew fetch downloads into Homebrew's cache",
        ),
        "home" | "homepage" | "docs" => scan.flag(1, Effect::Runs, "opens a web browser"),
        "bundle" if rest.clone().any(|w| w == "check" || w == "list") => scan.flag(
            1,
            Effect::Runs,
            "brew bundle evaluates the Brewfile, which is Ruby code",
        ),
        c if BREW_ACTS.contains(&c) => scan.flag(
            1,
            Effect::Writes,
            "a brew command that installs, changes or removes",
        ),
        _ => scan.flag(
            1,
            Effect::Unknown,
            "not a brew command the classifier knows: an external command can run anything",
        ),
    }
}

/// fzf `--bind` actions that run no command.
const FZF_ACTIONS: &[&str] = &[
    "accept",
    "accept-non-empty",
    "accept-or-print-query",
    "abort",
    "backward-char",
    "backward-delete-char",
    "backward-delete-char/eof",
    "backward-kill-word",
    "backward-word",
    "beginning-of-line",
    "bell",
    "cancel",
    "change-border-label",
    "change-header",
    "change-header-label",
    "change-input-label",
    "change-list-label",
    "change-multi",
    "change-nth",
    "change-preview-label",
    "change-preview-window",
    "change-prompt",
    "change-query",
    "change-ghost",
    "change-pointer",
    "clear-screen",
    "clear-multi",
    "clear-query",
    "clear-selection",
    "close",
    "delete-char",
    "delete-char/eof",
    "deselect",
    "deselect-all",
    "disable-search",
    "down",
    "enable-search",
    "end-of-line",
    "exclude",
    "exclude-multi",
    "first",
    "forward-char",
    "forward-word",
    "half-page-down",
    "half-page-up",
    "hide-header",
    "hide-input",
    "hide-preview",
    "ignore",
    "jump",
    "jump-accept",
    "kill-line",
    "kill-word",
    "last",
    "next-history",
    "next-selected",
    "offset-down",
    "offset-up",
    "offset-middle",
    "page-down",
    "page-up",
    "pos",
    "prev-history",
    "prev-selected",
    "preview-down",
    "preview-up",
    "preview-page-down",
    "preview-page-up",
    "preview-half-page-down",
    "preview-half-page-up",
    "preview-bottom",
    "preview-top",
    "print",
    "print-query",
    "put",
    "rebind",
    "unbind",
    "toggle-bind",
    "refresh-preview",
    "replace-query",
    "search",
    "select",
    "select-all",
    "show-header",
    "show-input",
    "show-preview",
    "toggle",
    "toggle-all",
    "toggle-in",
    "toggle-out",
    "toggle-header",
    "toggle-hscroll",
    "toggle-input",
    "toggle-multi-line",
    "toggle-preview",
    "toggle-preview-wrap",
    "toggle-raw",
    "toggle-search",
    "toggle-sort",
    "toggle-track",
    "toggle-track-current",
    "toggle-wrap",
    "track",
    "track-current",
    "trigger",
    "unix-line-discard",
    "unix-word-rubout",
    "up",
    "yank",
];

/// True when an fzf `--bind` value binds only actions that run no command (`execute`,
/// `become`, `reload`, `transform`, `preview` and kin run one).
fn fzf_bind_reads(spec: &str) -> bool {
    let mut rest = spec;
    loop {
        let Some((_, after)) = rest.split_once(':') else {
            return false;
        };
        rest = after;
        loop {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '/'))
                .unwrap_or(rest.len());
            if !FZF_ACTIONS.contains(&&rest[..end]) {
                return false;
            }
            rest = &rest[end..];
            let close = match rest.chars().next() {
                Some('(') => Some(')'),
                Some('[') => Some(']'),
                Some('{') => Some('}'),
                Some('<') => Some('>'),
                Some(':') => return true, // the rest of the value is this action's argument
                _ => None,
            };
            if let Some(close) = close {
                let Some(k) = rest.find(close) else {
                    return false;
                };
                rest = &rest[k + 1..];
            }
            match rest.chars().next() {
                None => return true,
                Some('+') => rest = &rest[1..],
                Some(',') => {
                    rest = &rest[1..];
                    break;
                }
                Some(_) => return false,
            }
        }
    }
}

/// `fzf [options]`: a filter over its input, unless an option runs a command (`--preview`,
/// a `--bind` to `execute`), listens for other programs or writes its history.
pub(super) fn fzf(scan: &mut Scan<'_>) {
    let words = scan.words;
    for (i, w) in words.iter().enumerate().skip(1) {
        let (name, value) = match w.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (w.as_str(), words.get(i + 1).map(String::as_str)),
        };
        match name {
            "--preview" | "--with-shell" => scan.flag(i, Effect::Runs, "fzf runs this command in a shell"),
            "--man" => scan.flag(i, Effect::Runs, "fzf --man runs man"),
            "--listen" | "--listen-unsafe" => scan.flag(i, Effect::Unknown, "fzf --listen lets other programs drive it"),
            "--history" => scan.flag(i, Effect::WritesTo, "fzf --history writes the file it names"),
            "--bind" if !value.is_some_and(fzf_bind_reads) => scan.flag(
                i,
                Effect::Runs,
                "fzf --bind binds an action that runs a command (execute, become, reload, transform)",
            ),
            _ => {}
        }
    }
}

/// `ruff [COMMAND] [options] [paths]`: checking and formatting checks read; `--fix` and
/// `format` rewrite files unless `--diff` or `--check`.
pub(super) fn ruff(scan: &mut Scan<'_>) {
    let words = scan.words;
    let Some(&(i, command)) = scan.operands(1).first() else {
        return; // `ruff`, `ruff --help`, `ruff --version`: prints and exits.
    };
    let shows = scan.has(i + 1, "", &["--diff"]);
    match command {
        "check" => {
            if !shows {
                scan.exact(
                    i + 1,
                    &["--fix", "--fix-only"],
                    Effect::Writes,
                    "ruff check --fix rewrites the files it checks",
                );
            }
            scan.exact(
                i + 1,
                &["--add-noqa"],
                Effect::Writes,
                "ruff --add-noqa rewrites the files it checks",
            );
        }
        "format" if !shows && !scan.has(i + 1, "", &["--check"]) => scan.flag(
            i,
            Effect::Writes,
            "ruff format rewrites files unless --check or --diff",
        ),
        "format" | "rule" | "linter" | "config" | "version" | "help" | "analyze" => {}
        _ => scan.flag(
            i,
            Effect::Unknown,
            "a ruff command the classifier does not know to only read",
        ),
    }
    scan.options(
        i + 1,
        "o",
        &["--output-file"],
        Effect::WritesTo,
        "ruff --output-file writes the file it names",
    );
    for (k, w) in words.iter().enumerate().skip(i + 1) {
        let value = w.strip_prefix("--config=").or_else(|| {
            (w == "--config")
                .then(|| words.get(k + 1).map(String::as_str))
                .flatten()
        });
        if value.is_some_and(|v| v.contains('=')) {
            scan.flag(
                k,
                Effect::Unknown,
                "an inline ruff setting, which can turn fixing on",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fzf_bind_reads;

    use super::super::deciding_word as word;

    #[test]
    fn brew_reads_its_listings_and_refuses_what_installs_updates_or_opens_a_browser() {
        for line in [
            "brew info --json=v2 python",
            "brew list --versions",
            "brew -S python",
            "brew --prefix python",
            "brew install --help",
            "brew analytics state",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("brew install python", "install"),
            ("brew outdated", "outdated"),
            ("brew fetch python", "fetch"),
            ("brew home python", "home"),
            ("brew info --github python", "--github"),
            ("brew bundle check", "bundle"),
            ("brew some-external-command --help", "some-external-command"),
            ("brew", "brew"),
            ("brew info ./evil.rb", "./evil.rb"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }

    #[test]
    fn fzf_binds_that_run_a_command_are_found_and_the_others_read() {
        for spec in [
            "ctrl-a:select-all,ctrl-d:deselect-all",
            "tab:toggle+down",
            "ctrl-p:put(text)",
            "change:first",
        ] {
            assert!(fzf_bind_reads(spec), "{spec}");
        }
        for spec in [
            "enter:execute(vim {})",
            "enter:become:vim {}",
            "ctrl-r:reload(find .)",
            "focus:transform-header:echo x",
            "a:toggle+execute-silent(rm {})",
            "ctrl-x:abort,enter:execute(rm {})",
        ] {
            assert!(!fzf_bind_reads(spec), "{spec}");
        }
        assert_eq!(word("fzf -m --height=50% --bind=ctrl-a:select-all"), None);
        assert_eq!(
            word("fzf --preview='cat {}'").as_deref(),
            Some("--preview=cat {}")
        );
        assert_eq!(word("fzf --listen=6266").as_deref(), Some("--listen=6266"));
        assert_eq!(word("fzf --history /tmp/h").as_deref(), Some("--history"));
    }

    #[test]
    fn ruff_checks_read_and_fixes_or_formats_write() {
        for line in [
            "ruff check --select E501 src/",
            "ruff format --check",
            "ruff check --fix --diff",
            "ruff rule E501",
            "ruff --version",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("ruff check --fix", "--fix"),
            ("ruff format src/", "format"),
            ("ruff check --output-file r.json", "--output-file"),
            ("ruff check --config 'fix = true'", "--config"),
            ("ruff clean", "clean"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }
}
