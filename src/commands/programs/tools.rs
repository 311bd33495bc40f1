//! Programs with subcommands or modes (`curl`, `tar`, `docker`, `kubectl`, package managers,
//! `systemctl`): read-only in the subcommands and modes listed, and only there.

use super::{is_long, is_short, Effect, Scan};

pub(super) fn rules(name: &str, scan: &mut Scan<'_>) {
    match name {
        "curl" => curl(scan),
        "wget" => wget(scan),
        "tar" => tar(scan),
        "unzip" => {
            if !scan.has(1, "lptvZ", &[]) {
                scan.flag(
                    0,
                    Effect::Writes,
                    "unzip extracts files unless it lists (-l) or tests (-t)",
                );
            }
        }
        "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" | "unzstd" => {
            if !scan.has(1, "clt", &["--stdout", "--to-stdout", "--list", "--test"]) {
                scan.flag(
                    0,
                    Effect::Writes,
                    "it replaces files unless it writes to standard output (-c)",
                );
            }
        }
        "yq" => scan.options(
            1,
            "i",
            &["--inplace"],
            Effect::Writes,
            "yq -i edits the file",
        ),
        "docker" | "podman" => subcommand(
            scan,
            &[
                "-H",
                "--host",
                "-c",
                "--context",
                "--config",
                "-l",
                "--log-level",
            ],
            &[
                "ps",
                "images",
                "inspect",
                "logs",
                "version",
                "info",
                "top",
                "port",
                "diff",
                "history",
                "search",
                "events",
                "stats",
                "container ls",
                "container ps",
                "container list",
                "container inspect",
                "container logs",
                "container top",
                "container port",
                "container diff",
                "image ls",
                "image list",
                "image inspect",
                "image history",
                "network ls",
                "network inspect",
                "volume ls",
                "volume inspect",
                "system df",
                "system info",
                "context ls",
                "context show",
                "compose ps",
                "compose logs",
                "compose config",
                "compose ls",
                "compose images",
                "compose version",
                "compose top",
            ],
        ),
        "kubectl" | "oc" => subcommand(
            scan,
            &[
                "-n",
                "--namespace",
                "--context",
                "--kubeconfig",
                "--cluster",
                "--user",
                "-s",
                "--server",
            ],
            &[
                "get",
                "describe",
                "logs",
                "explain",
                "version",
                "api-resources",
                "api-versions",
                "cluster-info",
                "top",
                "events",
                "config view",
                "config get-contexts",
                "config current-context",
                "config get-clusters",
                "config get-users",
                "auth can-i",
                "auth whoami",
                "rollout status",
                "rollout history",
            ],
        ),
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
            ],
        ),
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
        ),
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
            ],
        ),
        "go" => subcommand(scan, &[], &["version", "env", "list", "doc", "help"]),
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
        ),
        "journalctl" => scan.options(
            1,
            "",
            &[
                "--vacuum-size",
                "--vacuum-time",
                "--vacuum-files",
                "--rotate",
                "--flush",
                "--sync",
                "--relinquish-var",
                "--smart-relinquish-var",
                "--setup-keys",
                "--update-catalog",
            ],
            Effect::Writes,
            "journalctl changes the journal",
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

/// A program whose first operand (or first two) names what it does: read-only only when that
/// subcommand is listed in `reads` (as `sub` or `sub subsub`). `valued` are global options
/// that take the next word.
fn subcommand(scan: &mut Scan<'_>, valued: &[&str], reads: &[&str]) {
    let words = scan.words;
    let mut at = 1;
    while let Some(w) = words.get(at) {
        if !w.starts_with('-') || reads.contains(&w.as_str()) {
            break;
        }
        at += if valued.contains(&w.as_str()) { 2 } else { 1 };
    }
    let Some(first) = words.get(at) else {
        return scan.flag(
            0,
            Effect::Unknown,
            "no subcommand: the classifier reads only those it lists",
        );
    };
    if reads.contains(&first.as_str()) {
        return;
    }
    if let Some(second) = words.get(at + 1) {
        if reads.contains(&format!("{first} {second}").as_str()) {
            return;
        }
    }
    scan.flag(
        at,
        Effect::Unknown,
        "a subcommand the classifier does not know to be read-only",
    );
}

fn curl(scan: &mut Scan<'_>) {
    scan.options(
        1,
        "oOcD",
        &[
            "--output",
            "--remote-name",
            "--remote-name-all",
            "--cookie-jar",
            "--dump-header",
            "--trace",
            "--trace-ascii",
            "--libcurl",
            "--stderr",
            "--etag-save",
            "--hsts",
            "--alt-svc",
            "--output-dir",
            "--create-dirs",
        ],
        Effect::WritesTo,
        "curl writes the file this option names",
    );
    // `-D -` dumps headers to standard output: no file.
    let dash_d: Vec<usize> = scan
        .options_from(1)
        .iter()
        .filter(|(i, w)| *w == "-D" && scan.words.get(i + 1).is_some_and(|v| v == "-"))
        .map(|&(i, _)| i)
        .collect();
    scan.findings.retain(|f| !dash_d.contains(&f.word));
    scan.options(
        1,
        "dFTQ",
        &[
            "--quote",
            "--ftp-create-dirs",
            "--data",
            "--data-raw",
            "--data-binary",
            "--data-urlencode",
            "--data-ascii",
            "--form",
            "--form-string",
            "--upload-file",
            "--json",
            "--post301",
            "--post302",
            "--post303",
            "--mail-rcpt",
            "--mail-from",
        ],
        Effect::Sends,
        "curl sends data with this option",
    );
    scan.options(
        1,
        "K",
        &["--config"],
        Effect::Unknown,
        "curl -K reads options from a file nobody saw",
    );
    let words = scan.words;
    for (i, w) in scan.options_from(1) {
        let method = if w == "-X" || w == "--request" {
            words.get(i + 1).map(String::as_str)
        } else if let Some(m) = w.strip_prefix("--request=") {
            Some(m)
        } else if w.starts_with("-X") && w.len() > 2 {
            Some(&w[2..])
        } else {
            continue;
        };
        if !method
            .is_some_and(|m| matches!(m.to_ascii_uppercase().as_str(), "GET" | "HEAD" | "OPTIONS"))
        {
            scan.flag(
                i,
                Effect::Sends,
                "curl -X with a method that is not GET, HEAD or OPTIONS",
            );
        }
    }
}

fn wget(scan: &mut Scan<'_>) {
    let words = scan.words;
    let to_stdout = words.windows(2).any(|w| {
        (w[0] == "-O" || w[0] == "--output-document" || w[0].ends_with("O"))
            && w[1] == "-"
            && w[0].starts_with('-')
    }) || words.iter().any(|w| {
        w == "-O-"
            || w == "--output-document=-"
            || w == "--spider"
            || (is_short(w, "O") && w.ends_with("O-"))
    });
    if !to_stdout {
        scan.flag(
            0,
            Effect::Writes,
            "wget saves what it fetches unless it writes to standard output (-O -)",
        );
    }
    scan.options(
        1,
        "oa",
        &["--output-file", "--append-output"],
        Effect::WritesTo,
        "wget writes its log to the file it names",
    );
    scan.options(
        1,
        "e",
        &["--execute"],
        Effect::Unknown,
        "wget -e runs a wgetrc command",
    );
    for (i, w) in scan.options_from(1) {
        if [
            "--post-data",
            "--post-file",
            "--body-data",
            "--body-file",
            "--method",
        ]
        .iter()
        .any(|l| is_long(w, l))
        {
            scan.flag(i, Effect::Sends, "wget sends data with this option");
        }
    }
}

/// `tar`: read-only when it lists (`t`), and runs nothing.
fn tar(scan: &mut Scan<'_>) {
    let words = scan.words;
    let Some(first) = words.get(1) else {
        return;
    };
    // The mode is in the first word, with or without a dash (`tar tf x`, `tar -tzf x`), or a
    // long option anywhere.
    let bundle = if first.starts_with("--") {
        ""
    } else {
        first.trim_start_matches('-')
    };
    let lists = bundle.contains('t')
        || words.iter().any(|w| is_long(w, "--list"))
        || words.iter().skip(2).any(|w| w == "-t");
    let writes = bundle.chars().any(|c| "cxruA".contains(c))
        || words.iter().any(|w| {
            [
                "--create",
                "--extract",
                "--get",
                "--append",
                "--update",
                "--catenate",
                "--concatenate",
                "--delete",
            ]
            .iter()
            .any(|l| is_long(w, l))
        });
    if writes || !lists {
        scan.flag(
            1,
            Effect::Writes,
            "tar creates, extracts or changes an archive unless it lists (t)",
        );
    }
    scan.options(
        1,
        "IF",
        &[
            "--use-compress-program",
            "--to-command",
            "--info-script",
            "--new-volume-script",
            "--rsh-command",
            "--checkpoint-action",
        ],
        Effect::Runs,
        "tar runs the program this option names",
    );
}
