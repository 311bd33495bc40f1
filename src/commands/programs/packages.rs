//! Package managers and service managers (`npm`, `pip`, `uv`, `cargo`, `go`, `systemctl`):
//! read-only in the subcommands listed, and only there ([`super::cli::subcommand`]).

use super::cli::subcommand;
use super::{is_long, Effect, Scan};

pub(super) fn rules(name: &str, scan: &mut Scan<'_>) {
    match name {
        "npm" | "pnpm" | "yarn" => subcommand(
            scan,
            &[],
            &[
                "ls",
                "list",
                "ll",
                "la",
                "view",
                "info",
                "show",
                "v",
                "outdated",
                "search",
                "config get",
                "config list",
                "prefix",
                "root",
                "bin",
                "whoami",
                "explain",
                "why",
                "query",
                "fund",
                "help",
                "audit",
                "--version",
                "-v",
                "version",
                "find",
                "get",
                "owner ls",
                "ping",
                "cache ls",
                "cache list",
                "licenses list",
            ],
            &[
                "install",
                "i",
                "ci",
                "uninstall",
                "remove",
                "update",
                "publish",
                "run",
                "test",
                "exec",
                "init",
                "link",
                "pack",
                "add",
                "config",
                "cache",
            ],
        ),
        "pip" | "pip3" => subcommand(
            scan,
            &[],
            &[
                "list",
                "show",
                "freeze",
                "check",
                "inspect",
                "config list",
                "config get",
                "debug",
                "index versions",
                "--version",
                "-V",
                "help",
                "search",
                "config debug",
                "cache dir",
                "cache info",
                "cache list",
            ],
            &[
                "install",
                "uninstall",
                "download",
                "wheel",
                "config",
                "cache",
                "hash",
            ],
        ),
        "uv" if matches!(scan.words.len(), 1) || scan.words[1..] == ["pip"] => {}
        "uv" if scan.words.get(1).is_some_and(|w| w == "version") => {
            if let Some((i, _)) = scan
                .options_from(2)
                .into_iter()
                .find(|(_, w)| !w.starts_with('-') || is_long(w, "--bump") || is_long(w, "--set"))
            {
                scan.flag(
                    i,
                    Effect::Writes,
                    "uv version with a version or --bump sets it",
                );
            }
        }
        "uv" => subcommand(
            scan,
            &[],
            &[
                "--version",
                "-V",
                "tree",
                "pip list",
                "pip show",
                "pip freeze",
                "pip tree",
                "pip check",
                "python list",
                "python find",
                "tool list",
                "cache dir",
                "help",
            ],
            &[
                "run", "sync", "lock", "add", "remove", "venv", "pip", "tool", "python", "build",
                "publish", "init",
            ],
        ),
        "cargo" if cargo_reads(scan) => {}
        "cargo" => subcommand(
            scan,
            &[],
            &[
                "--version",
                "-V",
                "version",
                "tree",
                "metadata",
                "search",
                "locate-project",
                "pkgid",
                "verify-project",
                "read-manifest",
                "help",
                "--list",
                "info",
            ],
            &[
                "build",
                "b",
                "check",
                "c",
                "run",
                "r",
                "test",
                "t",
                "bench",
                "doc",
                "d",
                "clean",
                "install",
                "uninstall",
                "publish",
                "new",
                "init",
                "add",
                "remove",
                "update",
                "fetch",
                "vendor",
                "fix",
                "package",
                "owner",
                "login",
                "logout",
                "yank",
            ],
        ),
        "go" => subcommand(
            scan,
            &[],
            &["version", "env", "list", "doc", "help"],
            &[
                "build", "run", "test", "get", "install", "mod", "generate", "vet",
            ],
        ),
        "systemctl" => subcommand(
            scan,
            &[],
            &[
                "status",
                "list-units",
                "list-unit-files",
                "list-timers",
                "list-sockets",
                "list-dependencies",
                "list-jobs",
                "is-active",
                "is-enabled",
                "is-failed",
                "is-system-running",
                "show",
                "cat",
                "get-default",
                "--version",
            ],
            &[
                "start",
                "stop",
                "restart",
                "reload",
                "enable",
                "disable",
                "mask",
                "unmask",
                "kill",
                "edit",
                "daemon-reload",
            ],
        ),
        _ => scan.flag(
            0,
            Effect::Unknown,
            "a program the classifier does not know to be read-only",
        ),
    }
    if name == "go" {
        scan.exact(
            1,
            &["-w", "-u"],
            Effect::Writes,
            "go env -w changes the environment file",
        );
        scan.exact(
            1,
            &["-toolexec", "-exec"],
            Effect::Runs,
            "go -toolexec runs the program it names",
        );
    }
}

/// `cargo owner --list` and `cargo update --dry-run` only read.
fn cargo_reads(scan: &Scan<'_>) -> bool {
    match scan.words.get(1).map(String::as_str) {
        Some("owner") => {
            scan.has(2, "l", &["--list"]) && !scan.has(2, "ar", &["--add", "--remove"])
        }
        Some("update") => scan.has(2, "", &["--dry-run"]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {

    use super::super::deciding_word as word;

    #[test]
    fn package_managers_read_their_listings_and_help_only_for_a_command_they_know() {
        for line in [
            "npm ls --depth 0",
            "pip cache list",
            "uv",
            "uv pip",
            "uv version --short",
            "cargo info serde",
            "cargo owner --list serde",
            "cargo update --dry-run",
            "cargo --help",
            "cargo build --help",
            "pip -h",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("uv run pytest --help", "run"),
            ("uv version 1.2.3", "1.2.3"),
            ("uv version --bump minor", "--bump"),
            ("cargo update", "update"),
            ("cargo frob --help", "frob"),
            ("npm doctor", "doctor"),
            ("npm install", "install"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }
}
