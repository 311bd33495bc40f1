//! Reaching a PostgreSQL ledger: over TCP and over the server's Unix socket,
//! one ledger either way; and the password in a URL appears nowhere: not in the library's errors
//! (`Display`, `Debug`, their sources), not in a handle's `Debug`, not in the command line's
//! errors (text or `--json`, from `--db` or `SESSION_LEDGER_DB`), not in its output that names
//! the ledger. Each test says it is skipped when no test server is given.

#[macro_use]
mod common;

use common::cli::{self, json_error, Run};
use common::postgres_place::{self, password_of};
use common::{Engine, TestResult};
use session_ledger::{Config, Ledger, PostureLevel, Propagation, Verdict};

/// A password that is not the server's: what a wrong password shows, if anything.
const WRONG: &str = "wrong-password-5f1c9e";

/// `url` with its password replaced by `password`.
fn with_password(url: &str, password: &str) -> String {
    url.replacen(
        &format!(":{}@", password_of(url)),
        &format!(":{password}@"),
        1,
    )
}

/// `url` naming the database `db` instead of its own (what comes after the last `/`).
fn with_database(url: &str, db: &str) -> String {
    let (server, _) = url.rsplit_once('/').expect("a database in the URL");
    format!("{server}/{db}")
}

/// The error, its `Debug`, and every error in its `source` chain, as text.
fn every_text_of(e: &session_ledger::Error) -> Vec<String> {
    let mut texts = vec![e.to_string(), format!("{e:?}")];
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        texts.push(s.to_string());
        texts.push(format!("{s:?}"));
        source = s.source();
    }
    texts
}

/// Fails when any of `texts` holds any of `secrets`.
fn assert_no_secret(what: &str, texts: &[String], secrets: &[&str]) {
    for text in texts {
        for secret in secrets {
            assert!(!text.contains(secret), "{what} shows a password: {text}");
        }
    }
}

#[test]
fn a_ledger_opened_over_tcp_and_over_the_unix_socket_is_one_ledger() -> TestResult {
    let f = fixture!(Engine::Postgres);
    let Some(tcp_base) = postgres_place::server_over_tcp() else {
        return Ok(());
    };
    // Each handle names itself to the server, so that the server can say how each came in.
    let name = |how: &str| format!("ledger_over_{how}_{}", std::process::id());
    let over_tcp = format!(
        "{}&application_name={}",
        f.place().url_on(&tcp_base),
        name("tcp")
    );
    let over_socket = format!("{}&application_name={}", f.target(), name("socket"));
    let tcp = Ledger::init(&over_tcp)?;
    let socket = Ledger::init(&over_socket)?;
    let tcp_at = tcp.location().to_string();
    let socket_at = socket.location().to_string();
    assert!(tcp_at.contains("@127.0.0.1:"), "{tcp_at}");
    assert!(!tcp_at.contains("(socket "), "{tcp_at}");
    assert!(socket_at.contains("(socket /"), "{socket_at}");

    // What one writes, the other reads, both ways.
    tcp.create_root("conductor", "op")?;
    tcp.grant("conductor", PostureLevel::Trust, "op")?;
    assert!(
        socket
            .create_child("worker", "conductor", "op")?
            .inherited_trust
    );
    assert_eq!(
        tcp.decide("worker", "make deploy", false)?.verdict,
        Verdict::Approve
    );
    socket.revoke("conductor", Propagation::CascadeUnchecked, "op")?;
    assert_eq!(
        tcp.decide("worker", "make deploy", false)?.verdict,
        Verdict::Ask
    );
    assert_eq!(tcp.audit_head()?, socket.audit_head()?);
    assert!(tcp.verify(None)?.ok && socket.verify(None)?.ok);

    // And each came in the way its URL says: over 127.0.0.1, or over the socket (no address).
    let clients = f.query(&format!(
        "SELECT DISTINCT application_name, coalesce(host(client_addr), 'socket')
           FROM pg_stat_activity WHERE application_name IN ('{}', '{}') ORDER BY 1",
        name("socket"),
        name("tcp")
    ));
    assert_eq!(
        clients,
        [
            [Some(name("socket")), Some("socket".to_owned())],
            [Some(name("tcp")), Some("127.0.0.1".to_owned())],
        ]
    );
    Ok(())
}

/// The ways to reach no ledger with a password in the URL: (what, URL, what the error says).
fn unreachable_ledgers(base: &str) -> Vec<(&'static str, String, &'static str)> {
    let password = password_of(base);
    vec![
        (
            "a wrong password",
            with_password(base, WRONG),
            "password authentication failed",
        ),
        (
            "a server that is not there",
            format!("postgresql://session_ledger_owner:{password}@127.0.0.1:1/session_ledger"),
            "",
        ),
        (
            "a database the server refuses",
            with_database(base, "no_such_database"),
            "does not exist",
        ),
        (
            "a URL that is not one",
            format!("postgresql://session_ledger_owner:{password}@localhost:port/session_ledger"),
            "not a PostgreSQL URL",
        ),
    ]
}

#[test]
fn no_error_of_a_wrong_password_an_absent_server_or_a_refused_database_shows_a_password(
) -> TestResult {
    let Some(base) = postgres_place::server() else {
        return Ok(());
    };
    let secrets = [password_of(&base), WRONG.to_owned()];
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    for (what, url, says) in unreachable_ledgers(&base) {
        let err =
            Ledger::open_with(&url, Config::default().create_if_missing(false)).expect_err(what);
        let texts = every_text_of(&err);
        assert!(texts[0].contains(says), "{what}: {}", texts[0]);
        assert_no_secret(what, &texts, &secrets);
    }

    // A ledger that is there names where it is, and no password, in its Debug.
    let f = fixture!(Engine::Postgres);
    assert_no_secret(
        "a handle",
        &[format!("{:?}", f.ledger), f.ledger.location().to_string()],
        &secrets,
    );
    Ok(())
}

/// A failed run of the binary: one line on stderr (one JSON object under `--json`), nothing on
/// stdout, and no password anywhere.
fn assert_fails_without_secret(r: &Run, what: &str, json: bool, secrets: &[&str]) {
    cli::assert_clean_failure(r, what);
    if json {
        json_error(r, what).expect("a JSON error");
    }
    assert_no_secret(what, &[r.stderr.clone(), r.stdout.clone()], secrets);
}

#[test]
fn the_command_lines_errors_and_the_output_naming_a_ledger_never_show_the_password_in_its_url(
) -> TestResult {
    let Some(fx) = cli::Fixture::empty_on(Engine::Postgres) else {
        return Ok(());
    };
    let base = postgres_place::server().expect("a server");
    let secrets = [password_of(&base), WRONG.to_owned()];
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let target = fx.store().target();

    // Nothing at the URL yet: `no_ledger`, naming where, from --db and from SESSION_LEDGER_DB.
    let mut unreachable = unreachable_ledgers(&base);
    unreachable.push(("a schema with no ledger", target.clone(), "no ledger at"));
    for (what, url, says) in &unreachable {
        for json in [false, true] {
            let flags: &[&str] = if json { &["--json"] } else { &[] };
            let mut args = flags.to_vec();
            args.extend(["--db", url, "state", "conductor"]);
            let r = cli::run_raw(fx.dir(), &args);
            assert_fails_without_secret(&r, &format!("{what} (--db)"), json, &secrets);
            assert!(r.stderr.contains(says), "{what}: {}", r.stderr);

            let mut args = flags.to_vec();
            args.extend(["tree"]);
            let r = cli::run_raw_env(fx.dir(), &[("SESSION_LEDGER_DB", url)], &args);
            assert_fails_without_secret(&r, &format!("{what} (env)"), json, &secrets);
        }
    }

    // What names the ledger: `init`, in text and JSON.
    let text = cli::ok(&fx, &["init"])?;
    assert!(text.starts_with("ledger ready at postgresql://"), "{text}");
    let json = cli::ok_json(&fx, &["init"])?;
    let path = cli::text(&json["path"]);
    assert!(
        path.starts_with("postgresql://session_ledger_owner@"),
        "{json}"
    );
    assert_no_secret("init", &[text, json.to_string()], &secrets);
    Ok(())
}

#[test]
fn a_password_with_an_unencoded_at_sign_is_refused_naming_the_host_meant_and_the_encoding(
) -> TestResult {
    // No server is needed: the URL is refused before anything connects.
    let dir = tempfile::tempdir()?;
    let secret = "pa55-word";
    let url = format!("postgresql://session_ledger_app:{secret}@tail@db.example.org:5432/ledger");
    let err = Ledger::init(&url).expect_err("an '@' in the password");
    let texts = every_text_of(&err);
    assert_eq!(err.kind(), "invalid_config", "{}", texts[0]);
    assert!(texts[0].contains("\"db.example.org\""), "{}", texts[0]);
    assert!(texts[0].contains("%40"), "{}", texts[0]);
    assert_no_secret("an '@' in the password", &texts, &[secret, "tail"]);
    let r = cli::run_raw(dir.path(), &["--db", &url, "state", "x"]);
    assert_fails_without_secret(&r, "the CLI", false, &[secret, "tail"]);
    assert!(r.stderr.contains("%40"), "{}", r.stderr);
    Ok(())
}

#[test]
fn a_host_that_cannot_be_found_is_named_in_the_error_without_the_password() -> TestResult {
    let secret = "pa55-word-9e1";
    let url = format!("postgresql://session_ledger_app:{secret}@no-such-host.invalid:5432/ledger");
    let err = Ledger::init(&url).expect_err("no such host");
    let texts = every_text_of(&err);
    assert!(
        texts[0].contains("no-such-host.invalid:5432"),
        "{}",
        texts[0]
    );
    assert!(texts[0].contains("percent-encoded"), "{}", texts[0]);
    assert_no_secret("an unknown host", &texts, &[secret]);
    Ok(())
}

#[test]
fn init_and_copy_as_a_role_that_may_not_create_the_tables_say_to_run_them_as_the_owner(
) -> TestResult {
    let Some(fx) = cli::Fixture::empty_on(Engine::Postgres) else {
        return Ok(());
    };
    // The application role, on the fixture's empty schema, where it may create nothing.
    let app_base = std::env::var("SESSION_LEDGER_TEST_POSTGRES_APP")?;
    let owner = fx.store().target();
    let (_, search_path) = owner
        .split_once('?')
        .ok_or("the fixture's URL sets search_path")?;
    let app = format!("{app_base}?{search_path}");
    let source = fx.dir().join("source.db");
    cli::ok(&source, &["init"])?;
    cli::ok(&source, &["create", "conductor", "--actor", "alice"])?;
    let source = source.to_str().ok_or("a UTF-8 path")?;
    for args in [
        vec!["--db", app.as_str(), "init"],
        vec!["copy", "--from", source, "--to", app.as_str()],
    ] {
        let r = cli::run_raw(fx.dir(), &args);
        let what = args.join(" ");
        cli::assert_clean_failure(&r, &what);
        assert!(
            r.stderr.contains("run this as the owner role"),
            "{what}: {}",
            r.stderr
        );
        assert_no_secret(
            &what,
            std::slice::from_ref(&r.stderr),
            &[&password_of(&app)],
        );
    }
    Ok(())
}
