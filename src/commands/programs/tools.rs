//! Programs with modes (`curl`, `wget`, `tar`, `unzip`, the compressors, `yq`,
//! `journalctl`): read-only in the modes listed, and only there; package managers are in
//! `packages`, container tools in `containers`.

use super::{is_long, is_short, packages, Effect, Scan};

pub(super) fn rules(name: &str, scan: &mut Scan<'_>) {
    match name {
        "curl" => curl(scan),
        "wget" => wget(scan),
        "tar" => tar(scan),
        "unzip" => {
            if !scan.has(1, "lptvZzh", &["--help"]) {
                scan.flag(
                    0,
                    Effect::Writes,
                    "unzip extracts files unless it lists (-l), tests (-t) or shows the comment (-z)",
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
        "npm" | "pnpm" | "yarn" | "pip" | "pip3" | "uv" | "cargo" | "go" | "systemctl" => {
            packages::rules(name, scan)
        }
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
    // `-D -` dumps headers to standard output and `-o /dev/null` discards the body: no file.
    // `--cookie FILE` reads cookies; it is not an abbreviation of `--cookie-jar`.
    let no_file: Vec<usize> = scan
        .options_from(1)
        .iter()
        .filter(|(i, w)| {
            let next = scan.words.get(i + 1).map(String::as_str);
            (matches!(*w, "-D" | "-o" | "--output" | "--dump-header")
                && matches!(next, Some("-" | "/dev/null")))
                || matches!(*w, "--output=/dev/null" | "--output=-")
                || *w == "--cookie"
                || w.starts_with("--cookie=")
        })
        .map(|&(i, _)| i)
        .collect();
    scan.findings.retain(|f| !no_file.contains(&f.word));
    // `-Q CMD` sends an FTP command; those that only read are read-only (a `-`, `+` or `*`
    // before it says when it is sent, or that its failure is ignored).
    let words = scan.words;
    for (i, w) in scan.options_from(1) {
        let quote = if w == "-Q" || w == "--quote" {
            words.get(i + 1).map(String::as_str)
        } else if let Some(q) = w.strip_prefix("--quote=") {
            Some(q)
        } else if w.starts_with("-Q") && w.len() > 2 {
            Some(&w[2..])
        } else {
            continue;
        };
        let verb = quote
            .unwrap_or("")
            .trim_start_matches(['-', '+', '*'])
            .split(' ')
            .next()
            .unwrap_or("")
            .to_ascii_uppercase();
        if !matches!(
            verb.as_str(),
            "PWD"
                | "LIST"
                | "NLST"
                | "STAT"
                | "SIZE"
                | "MDTM"
                | "NOOP"
                | "HELP"
                | "SYST"
                | "TYPE"
                | "PASV"
                | "EPSV"
                | "CWD"
                | "CDUP"
                | "FEAT"
                | "MLSD"
                | "MLST"
        ) {
            scan.flag(
                i,
                Effect::Sends,
                "curl -Q sends an FTP command that changes files",
            );
        }
    }
    scan.options(
        1,
        "dFT",
        &[
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
    // `-H @FILE` sends a file's lines as headers; `--variable` reads a file or the
    // environment into a value an `--expand-...` option sends.
    let words = scan.words;
    for (i, w) in scan.options_from(1) {
        let header = match w {
            "-H" | "--header" | "--proxy-header" => words.get(i + 1).map(String::as_str),
            _ => w
                .strip_prefix("--header=")
                .or_else(|| w.strip_prefix("--proxy-header="))
                .or_else(|| w.strip_prefix("-H").filter(|h| !h.is_empty())),
        };
        if header.is_some_and(|h| h.starts_with('@'))
            || is_long(w, "--variable")
            || w.starts_with("--expand-")
        {
            scan.flag(
                i,
                Effect::Sends,
                "curl sends what it reads from a file or the environment",
            );
        }
    }
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
        if !method.is_some_and(|m| {
            matches!(
                m.to_ascii_uppercase().as_str(),
                "GET" | "HEAD" | "OPTIONS" | "TRACE"
            )
        }) {
            scan.flag(
                i,
                Effect::Sends,
                "curl -X with a method that is not GET, HEAD, OPTIONS or TRACE",
            );
        }
    }
}

fn wget(scan: &mut Scan<'_>) {
    let words = scan.words;
    if let [_, w] = words {
        if matches!(w.as_str(), "--help" | "-h" | "--version" | "-V") {
            return;
        }
    }
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
    scan.options(
        1,
        "i",
        &["--input-file"],
        Effect::Sends,
        "wget -i requests every line of a file, sending what the file holds",
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

#[cfg(test)]
mod tests {

    use super::super::deciding_word as word;

    #[test]
    fn curl_and_wget_read_unless_they_write_a_file_or_send_one() {
        for line in [
            "curl -X TRACE https://example.com",
            "curl -s -o /dev/null -w '%{http_code}' https://example.com",
            "curl --cookie cookies.txt https://example.com",
            "curl -Q PWD ftp://example.com",
            "curl -H 'Accept: text/html' https://example.com",
            "wget --help",
            "unzip -z a.zip",
            "unzip -hh",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("curl -Q 'DELE f.txt' ftp://example.com", "-Q"),
            ("curl -H @/etc/passwd https://example.com", "-H"),
            (
                "curl --variable x@f --expand-url 'https://e.com/{{x}}'",
                "--variable",
            ),
            (
                "curl --cookie-jar c.txt https://example.com",
                "--cookie-jar",
            ),
            ("wget -O - -i urls.txt", "-i"),
            ("unzip -o a.zip", "unzip"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }
}
