//! Programs over data files: the `sqlite3` and `duckdb` shells (read-only only with
//! `-readonly` and SQL that writes no file and loads no code), `openssl` (its listings and
//! the inspection of a certificate or a server) and `7z` (listing, testing, hashing).

use super::{Effect, Scan};

/// Words of SQL (or of the shells' extensions) that write a file, load code or change the
/// connection, which `-readonly` does not stop: `VACUUM INTO`, `writefile()`, `edit()`,
/// `load_extension()`, `ATTACH`, duckdb's `COPY ... TO`, `EXPORT`, `INSTALL` and `LOAD`.
const SQL_BEYOND_READONLY: &[&str] = &[
    "vacuum",
    "writefile",
    "edit",
    "load_extension",
    "attach",
    "detach",
    "copy",
    "export",
    "import",
    "install",
    "load",
    "pragma",
    "set",
    "call",
    "fts3_tokenizer",
];

/// Why a piece of SQL given to a shell is not read-only, if it is not.
fn sql_beyond_readonly(sql: &str) -> Option<&'static str> {
    if sql.trim_start().starts_with('.') {
        return Some("a dot-command of the shell, which can run a program or write a file");
    }
    let lower = sql.to_ascii_lowercase();
    lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|w| SQL_BEYOND_READONLY.contains(&w))
        .then_some("SQL that writes a file, loads code or changes the connection even read-only")
}

/// `sqlite3` and `duckdb`: read-only when opened `-readonly`, with SQL on the line (without
/// it, the shell reads commands nobody saw), none of which writes a file or loads code.
pub(super) fn sql_shell(name: &str, scan: &mut Scan<'_>) {
    let words = scan.words;
    if let [_, w] = words {
        if matches!(w.as_str(), "-help" | "--help" | "-version" | "--version") {
            return;
        }
    }
    let mut readonly = false;
    let mut sql: Vec<(usize, &str)> = Vec::new();
    let mut database = None;
    let mut at = 1;
    while let Some(w) = words.get(at) {
        let w = w.as_str();
        let next = words.get(at + 1).map(String::as_str);
        match w.trim_start_matches('-') {
            _ if !w.starts_with('-') || w == "-" => {
                if database.is_none() {
                    database = Some(at);
                } else {
                    sql.push((at, w));
                }
            }
            "readonly" => readonly = true,
            "safe" | "bail" | "batch" | "echo" | "header" | "noheader" | "json" | "csv"
            | "table" | "line" | "column" | "list" | "markdown" | "box" | "html" | "ascii"
            | "quote" | "tabs" | "nofollow" | "no-stdin" => {}
            "cmd" | "c" | "s" if name == "duckdb" || w == "-cmd" => {
                sql.extend(next.map(|t| (at + 1, t)));
                at += 1;
            }
            "separator" | "newline" | "nullvalue" => at += 1,
            "init" => scan.flag(
                at,
                Effect::Unknown,
                "-init runs the commands in a file nobody saw",
            ),
            _ => scan.flag(
                at,
                Effect::Unknown,
                "a shell option the classifier does not know",
            ),
        }
        at += 1;
    }
    if !readonly {
        return scan.flag(
            0,
            Effect::Writes,
            "opens the database for writing: only -readonly keeps it unchanged (even a read can \
             roll back a journal)",
        );
    }
    if sql.is_empty() {
        return scan.flag(
            database.unwrap_or(0),
            Effect::Unknown,
            "with no SQL on the line the shell reads commands nobody saw",
        );
    }
    for (i, text) in sql {
        if let Some(why) = sql_beyond_readonly(text) {
            scan.flag(i, Effect::Unknown, why);
        }
    }
}

/// `openssl`: `version`, `help`, `list` and `x509 -noout` (printing a certificate's fields),
/// with options known not to write. `s_client` sends what it reads on its standard input.
pub(super) fn openssl(scan: &mut Scan<'_>) {
    let words = scan.words;
    let Some(sub) = words.get(1).map(String::as_str) else {
        return scan.flag(
            0,
            Effect::Unknown,
            "openssl with no command reads commands nobody saw",
        );
    };
    let (flags, valued): (&[&str], &[&str]) = match sub {
        "version" | "help" | "list" => return,
        "x509" => (
            &[
                "-noout",
                "-text",
                "-subject",
                "-issuer",
                "-dates",
                "-startdate",
                "-enddate",
                "-serial",
                "-fingerprint",
                "-sha1",
                "-sha256",
                "-sha512",
                "-md5",
                "-pubkey",
                "-modulus",
                "-purpose",
                "-email",
                "-ocsp_uri",
                "-hash",
                "-subject_hash",
                "-issuer_hash",
                "-ocspid",
                "-alias",
                "-ext",
                "-nocert",
            ],
            &[
                "-in",
                "-inform",
                "-nameopt",
                "-certopt",
                "-checkend",
                "-ext",
            ],
        ),
        "s_client" => {
            return scan.flag(
                1,
                Effect::Sends,
                "openssl s_client sends what it reads on its standard input to the server",
            )
        }
        _ => {
            return scan.flag(
                1,
                Effect::Unknown,
                "an openssl command the classifier does not know to only read",
            )
        }
    };
    let mut at = 2;
    while let Some(w) = words.get(at) {
        let w = w.as_str();
        if valued.contains(&w) {
            at += 1;
        } else if !flags.contains(&w) {
            let effect = if w == "-out" || w.starts_with("-key") {
                Effect::WritesTo
            } else {
                Effect::Unknown
            };
            scan.flag(
                at,
                effect,
                "an openssl option the classifier does not know to only read",
            );
        }
        at += 1;
    }
    if sub == "x509" && !words.iter().any(|w| w == "-noout") {
        scan.flag(
            1,
            Effect::Unknown,
            "openssl x509 without -noout re-encodes the certificate",
        );
    }
}

/// `7z` and kin: read-only in its commands that list (`l`), test (`t`), hash (`h`), benchmark
/// (`b`) or show information (`i`); with none it prints its help.
pub(super) fn seven_zip(scan: &mut Scan<'_>) {
    if let Some(&(i, command)) = scan.operands(1).first() {
        if !matches!(command, "l" | "t" | "h" | "b" | "i") {
            scan.flag(
                i,
                Effect::Writes,
                "a 7z command that adds, extracts, updates or deletes",
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::sql_beyond_readonly;

    use super::super::deciding_word as word;

    #[test]
    fn sql_that_writes_a_file_or_loads_code_is_found_even_read_only() {
        for sql in [
            "SELECT * FROM t",
            "DROP TABLE t",
            "EXPLAIN SELECT 1; SELECT 2",
        ] {
            assert_eq!(sql_beyond_readonly(sql), None, "{sql}");
        }
        for sql in [
            ".shell rm -rf /",
            "VACUUM INTO 'copy.db'",
            "SELECT writefile('x', 'y')",
            "SELECT load_extension('./x.so')",
            "COPY t TO 'out.csv'",
            "ATTACH 'other.db' AS o",
        ] {
            assert!(sql_beyond_readonly(sql).is_some(), "{sql}");
        }
    }

    #[test]
    fn database_shells_read_only_when_opened_readonly_with_sql_on_the_line() {
        for line in [
            "sqlite3 -readonly db.sqlite 'SELECT * FROM t'",
            "sqlite3 -readonly -json db.sqlite 'DROP TABLE t'",
            "duckdb -readonly db.duckdb -c 'SELECT 1'",
            "sqlite3 -version",
            "duckdb --help",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("sqlite3 db.sqlite 'SELECT 1'", "sqlite3"),
            ("sqlite3 -safe db.sqlite 'DROP TABLE t'", "sqlite3"),
            ("sqlite3 -readonly db.sqlite", "db.sqlite"),
            ("sqlite3 -readonly db.sqlite '.output x'", ".output x"),
            (
                "sqlite3 -readonly -cmd '.shell id' db.sqlite 'SELECT 1'",
                ".shell id",
            ),
            (
                "sqlite3 -readonly -init s.sql db.sqlite 'SELECT 1'",
                "-init",
            ),
            (
                "duckdb -readonly db.duckdb \"COPY t TO 'x.csv'\"",
                "COPY t TO 'x.csv'",
            ),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }

    #[test]
    fn openssl_inspects_certificates_and_7z_lists_but_neither_writes() {
        for line in [
            "openssl version -a",
            "openssl x509 -noout -fingerprint -sha256 -in c.pem",
            "7z l a.7z",
            "7zz t -scrcSHA256 a.7z",
            "7z",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("openssl x509 -in c.pem -out c.der", "-out"),
            ("openssl x509 -in c.pem -text", "x509"),
            ("openssl genrsa -out k.pem 2048", "genrsa"),
            ("openssl s_client -connect example.com:443", "s_client"),
            ("openssl enc -aes-256-cbc -in f", "enc"),
            ("7z x a.7z", "x"),
            ("7za a a.7z dir/", "a"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }
}
