//! The storage contract (docs/storage-contract.md), against every engine.
//!
//! Three kinds of test live here:
//!
//! - The items of the contract that no other suite proves, on both engines: each runs raw SQL
//!   in the engine's own shell (`sqlite3` on the file, `psql` as the schema's owner), as an
//!   operator would, and checks that the database refuses it with the message of the rule that
//!   refuses it and that nothing changed (and, where it helps, that the same statement with a
//!   good value is accepted, so the refusal is the one the item names). The SQL is the same on
//!   both engines where it can be; where an engine needs its own statement for the same edit
//!   (SQLite's `INSERT OR REPLACE`, PostgreSQL's `INSERT ... ON CONFLICT DO UPDATE`), the test
//!   says so where it branches.
//! - The contract's PostgreSQL-only part (`postgres_only`): `TRUNCATE`, upserts, the
//!   application role of docs/postgres-roles.sql, and `timestamptz`.
//! - The doc and the schemas held together: every trigger of a fresh SQLite ledger names, in a
//!   comment line of its body, a contract item that lists it; every trigger of the PostgreSQL
//!   schema is cited by an item, by the item its SQLite namesake names; every trigger,
//!   constraint and code fragment the doc cites exists in the engine it is cited for; every test
//!   it cites exists, on the engines the doc says it runs on; and the SQLite triggers are
//!   defined as version 8 defined them, apart from that comment line (version 9 added it).
//!
//! Each failure of the last kind names the doc's line.

#[macro_use]
mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{raw, Engine, Fixture, Shell, TestResult};
use rusqlite::Connection;
use session_ledger::{AskedBy, AuditHead, Config, Ledger, ManualClock, PostureLevel, Taint};

const DOC: &str = "docs/storage-contract.md";
/// What a helper that can fail returns.
type Outcome<T> = Result<T, Box<dyn std::error::Error>>;
/// The PostgreSQL schema, which the doc's `- PostgreSQL:` lines cite: every migration in it.
const POSTGRES_SCHEMA: &str = "migrations/postgres/";
/// A time of the stored form, before anything the tests' ledgers write.
const T: &str = "2026-01-01T00:00:00.000Z";
/// A time of the stored form, after anything the tests' ledgers write.
const LATER: &str = "2999-01-01T00:00:00.000Z";

mod embedded {
    refinery::embed_migrations!("migrations/sqlite");
}

fn package_file(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

// ------------------------------------------------------------------------------------------------
// Raw edits, as in the shell
// ------------------------------------------------------------------------------------------------

/// What an engine says when a rule of each kind refuses a hand edit. A trigger says the same on
/// both engines: [`TRIGGER`] and the rest of its message.
struct Says {
    check: &'static str,
    unique: &'static str,
    foreign_key: &'static str,
    not_null: &'static str,
    /// A value the column's type does not hold (SQLite's `STRICT` tables, PostgreSQL's types).
    wrong_type: &'static [&'static str],
    /// A text that is not JSON where JSON belongs.
    not_json: &'static str,
}

fn says(engine: Engine) -> Says {
    match engine {
        Engine::Sqlite => Says {
            check: "CHECK constraint failed",
            unique: "UNIQUE constraint failed",
            foreign_key: "FOREIGN KEY constraint failed",
            not_null: "NOT NULL constraint failed",
            wrong_type: &["cannot store", "datatype mismatch"],
            // json_valid() in a CHECK.
            not_json: "CHECK constraint failed",
        },
        Engine::Postgres => Says {
            check: "violates check constraint",
            unique: "violates unique constraint",
            foreign_key: "violates foreign key constraint",
            not_null: "violates not-null constraint",
            wrong_type: &["invalid input syntax for type", "is of type"],
            // The cast to json (or the jsonb column) refuses it.
            not_json: "invalid input syntax for type json",
        },
    }
}

const TRIGGER: &str = "session-ledger:";

/// Runs `sql` (one or more statements) in a transaction in `shell`, as an operator would,
/// expects it to be refused with a message that contains one of `expected`, and rolls back
/// what is left.
fn refused(shell: &mut Shell, sql: &str, expected: &[&str]) {
    let outcome = shell.run(&format!("BEGIN;\n{sql};\nCOMMIT;"));
    shell.run("ROLLBACK").ok();
    let err = match outcome {
        Ok(()) => panic!("accepted, but the contract refuses it:\n    {sql}"),
        Err(err) => err,
    };
    assert!(
        expected.iter().any(|e| err.contains(e)),
        "refused with `{err}`, not with one of {expected:?}:\n    {sql}"
    );
}

/// Runs `sql` in a transaction that is then rolled back, and expects it to be accepted: the
/// control that shows a refusal is due to the one value changed.
fn accepted(shell: &mut Shell, sql: &str) {
    let outcome = shell.run(&format!("BEGIN;\n{sql};"));
    shell.run("ROLLBACK").ok();
    if let Err(err) = outcome {
        panic!("refused with `{err}`, but it is well formed:\n    {sql}");
    }
}

/// `template` with each `{}` replaced by a good value is accepted, and by each bad value is
/// refused with a message containing one of `expected`.
fn only_good_values(
    shell: &mut Shell,
    template: &str,
    good: &[&str],
    bad: &[&str],
    expected: &[&str],
) {
    for value in good {
        accepted(shell, &template.replace("{}", value));
    }
    for value in bad {
        refused(shell, &template.replace("{}", value), expected);
    }
}

/// The first column of `rows`, as text.
fn first_column(rows: Vec<Vec<Option<String>>>) -> Vec<String> {
    rows.into_iter()
        .map(|row| row[0].clone().expect("a value"))
        .collect()
}

fn a_session_is_a_root_exactly_when_it_has_no_creator_and_sits_at_depth_zero(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let mut shell = f.shell();
    only_good_values(
        &mut shell,
        "INSERT INTO sessions (id, created_by, depth, origin, created_at) VALUES ('x', {})",
        &[
            &format!("'root', 1, 'created', '{T}'"),
            &format!("NULL, 0, 'root', '{T}'"),
        ],
        &[
            &format!("'root', 1, 'root', '{T}'"),  // a root with a creator
            &format!("NULL, 0, 'created', '{T}'"), // a created session without one
            &format!("NULL, 1, 'root', '{T}'"),    // a root not at depth 0
            &format!("NULL, -1, 'root', '{T}'"),   // no depth is negative
        ],
        &[says(engine).check],
    );
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn no_column_of_a_sessions_lineage_can_be_changed_by_hand(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a b");
    let before = f.snapshot();
    let mut shell = f.shell();
    let seq = match engine {
        Engine::Sqlite => "seq = 99",
        // `seq` is an identity column: PostgreSQL itself refuses any new value but DEFAULT
        // (below), and DEFAULT draws the next number, which the trigger refuses.
        Engine::Postgres => "seq = DEFAULT",
    };
    for set in [
        seq.to_owned(),
        "id = 'z'".to_owned(),
        "created_by = 'b'".to_owned(),
        "depth = 2".to_owned(),
        "origin = 'spawned'".to_owned(),
        format!("created_at = '{LATER}'"),
        "created_by = NULL, depth = 0, origin = 'root'".to_owned(),
    ] {
        refused(
            &mut shell,
            &format!("UPDATE sessions SET {set} WHERE id = 'a'"),
            &["lineage is immutable"],
        );
    }
    if engine == Engine::Postgres {
        refused(
            &mut shell,
            "UPDATE sessions SET seq = 99 WHERE id = 'a'",
            &["can only be updated to DEFAULT"],
        );
    }
    // Ending a session is the one change a session row takes.
    accepted(
        &mut shell,
        &format!("UPDATE sessions SET ended_at = '{LATER}' WHERE id = 'a'"),
    );
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn only_a_root_is_born_with_a_label_and_only_with_the_default(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > child");
    let before = f.snapshot();
    let mut shell = f.shell();
    let template = format!(
        "INSERT INTO sessions (id, depth, origin, created_at) VALUES ('r2', 0, 'root', '{T}');
         INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how,
                             inherited_from)
         VALUES ({{}})"
    );
    only_good_values(
        &mut shell,
        &template,
        &[&format!("'r2', 'private', false, '{T}', 'born', NULL")],
        &[
            &format!("'r2', 'secret', false, '{T}', 'born', NULL"), // above the default
            &format!("'r2', 'public', false, '{T}', 'born', NULL"), // below it
            &format!("'r2', 'private', true, '{T}', 'born', NULL"), // untrusted
            &format!("'child', 'private', false, '{T}', 'born', NULL"), // not a root
            &format!("'r2', 'private', false, '{T}', 'born', 'root'"), // born, yet from someone
        ],
        &["only a root is born", says(engine).check],
    );
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn where_a_label_came_from_cannot_be_changed_by_hand(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > child other");
    f.ledger.state("child")?;
    let before = f.snapshot();
    let mut shell = f.shell();
    for set in [
        "session_id = 'other'".to_owned(),
        format!("materialized_at = '{LATER}'"),
        "materialized_how = 'born', inherited_from = NULL".to_owned(),
        "inherited_from = 'child'".to_owned(),
    ] {
        refused(
            &mut shell,
            &format!("UPDATE labels SET {set} WHERE session_id = 'child'"),
            &["provenance is immutable"],
        );
    }
    // A raise is the change a label takes.
    accepted(
        &mut shell,
        &format!(
            "UPDATE labels SET taint = 'secret', raised_at = '{LATER}' WHERE session_id = 'child'"
        ),
    );
    assert_eq!(f.snapshot(), before);
    Ok(())
}

/// A `postures` insert with the values in place of `{}`.
const POSTURE_INSERT: &str =
    "INSERT INTO postures (session_id, posture, source, granted_by, granted_at, granted_on,
                           inherited_from, allocated_at, chain, epoch)
     VALUES ({})";

/// A well-formed decision record about `a` of the tree `root`, as a hand insert writes it, with
/// each column `overrides` names given its value instead (SQL text).
fn decision_insert(overrides: &[(&str, &str)]) -> String {
    let defaults = [
        ("record", "'0123456789abcdef0123456789abcdef'"),
        ("at", "'2026-01-01T00:00:00.000Z'"),
        ("session_id", "'a'"),
        ("tree", "'root'"),
        ("tool", "NULL"),
        ("input", "'ls'"),
        ("input_bytes", "2"),
        ("input_sha256", "NULL"),
        ("verdict", "'ask'"),
        ("authority", "'nothing'"),
        ("reason", "'{\"kind\":\"nothing\"}'"),
        ("asked_by", "'op'"),
        ("tool_use_id", "NULL"),
    ];
    let value = |column: &str, default: &str| {
        overrides
            .iter()
            .find(|(c, _)| *c == column)
            .map_or(default.to_owned(), |(_, v)| (*v).to_owned())
    };
    let columns: Vec<&str> = defaults.iter().map(|(c, _)| *c).collect();
    let values: Vec<String> = defaults.iter().map(|(c, d)| value(c, d)).collect();
    format!(
        "INSERT INTO decisions ({}) VALUES ({})",
        columns.join(", "),
        values.join(", ")
    )
}

fn a_decision_record_written_by_hand_keeps_its_form(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let mut shell = f.shell();
    let says = says(engine);
    let long = "x".repeat(4097);
    let cut = "x".repeat(4096);
    let sha = "a".repeat(64);
    let quoted = |text: &str| format!("'{text}'");
    let (long, cut, sha) = (quoted(&long), quoted(&cut), quoted(&sha));
    accepted(&mut shell, &decision_insert(&[]));
    // A cut input, with the whole input's length and hash beside it.
    accepted(
        &mut shell,
        &decision_insert(&[
            ("input", &cut),
            ("input_bytes", "5000"),
            ("input_sha256", &sha),
        ]),
    );
    // A tool call, with the agent's id for it.
    accepted(
        &mut shell,
        &decision_insert(&[
            ("tool", "'WebFetch'"),
            ("input", "'https://example.com/'"),
            ("input_bytes", "20"),
            ("tool_use_id", "'toolu_01'"),
        ]),
    );
    let upper = "0123456789ABCDEF0123456789ABCDEF".to_owned();
    for overrides in [
        // A record id that is not 32 lower-case hex digits.
        vec![("record", quoted(&upper))],
        vec![("record", "'0123'".to_owned())],
        vec![("record", "'0123456789abcdef0123456789abcdeg'".to_owned())],
        // An input longer than the record keeps.
        vec![
            ("input", long.clone()),
            ("input_bytes", "5000".to_owned()),
            ("input_sha256", sha.clone()),
        ],
        // A cut input without its hash, a whole one with a hash, a length shorter than the
        // input, a hash that is not 64 lower-case hex digits.
        vec![("input", cut.clone()), ("input_bytes", "5000".to_owned())],
        vec![("input_sha256", sha.clone())],
        vec![("input_bytes", "1".to_owned())],
        vec![
            ("input", cut.clone()),
            ("input_bytes", "5000".to_owned()),
            ("input_sha256", quoted(&"A".repeat(64))),
        ],
        // A reason that is JSON but not an object.
        vec![("reason", "'[]'".to_owned())],
        vec![("reason", "'\"nothing\"'".to_owned())],
        // Names of no length.
        vec![("session_id", "''".to_owned())],
        vec![("tree", "''".to_owned())],
        vec![("tool", "''".to_owned())],
        vec![("asked_by", "''".to_owned())],
        vec![("tool_use_id", "''".to_owned())],
    ] {
        let overrides: Vec<(&str, &str)> =
            overrides.iter().map(|(c, v)| (*c, v.as_str())).collect();
        refused(&mut shell, &decision_insert(&overrides), &[says.check]);
    }
    // A reason that is not JSON at all.
    refused(
        &mut shell,
        &decision_insert(&[("reason", "'nothing'")]),
        &[says.not_json],
    );
    // A second record with the same id: the key refuses it, or first (on SQLite) the
    // trigger that also refuses a replacing insert.
    f.exec(&decision_insert(&[]))?;
    let stored = f.snapshot();
    refused(
        &mut shell,
        &decision_insert(&[("verdict", "'approve'"), ("authority", "'trust'")]),
        &[says.unique, "decision records are append-only"],
    );
    assert_eq!(f.snapshot(), stored);
    assert_ne!(stored, before);
    Ok(())
}

fn a_record_appended_by_hand_is_queued_and_leaves_the_queue_only_for_the_log(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    // Appended in the shell, as any writer could: the trigger queues it.
    f.exec(&decision_insert(&[]))?;
    let id = f.column("SELECT id FROM decisions")[0].clone();
    assert_eq!(
        f.column("SELECT id FROM decision_queue"),
        std::slice::from_ref(&id)
    );
    let before = f.snapshot();
    let mut shell = f.shell();
    for (sql, says) in [
        (
            "DELETE FROM decision_queue".to_owned(),
            "a decision record leaves the queue only once it is in the log",
        ),
        (
            "UPDATE decision_queue SET id = id".to_owned(),
            "the decision queue is changed only by appending and integrating",
        ),
        // A position outside a batch: the audit row it names is no decisions.integrate row.
        (
            format!("INSERT INTO decision_log (seq, decision, batch) VALUES (1, {id}, 1)"),
            "a decision must take the next position of the log",
        ),
    ] {
        refused(&mut shell, &sql, &[says]);
    }
    assert_eq!(f.snapshot(), before);
    // Integration takes it: its position, its batch's audit row, and out of the queue.
    let done = f.ledger.integrate_decisions("op")?;
    assert_eq!((done.records, done.log_size, done.queued), (1, 1, 0));
    assert!(f.column("SELECT id FROM decision_queue").is_empty());
    let batch = f.column("SELECT seq FROM audit WHERE kind = 'decisions.integrate'");
    assert_eq!(
        f.query("SELECT seq, batch FROM decision_records"),
        [[Some("1".to_owned()), Some(batch[0].clone())]]
    );
    // Out of the queue, a record can no more go back in by an update than by hand: a queue
    // row for a logged record would stop every later integration on the log's key.
    refused(
        &mut shell,
        &format!("UPDATE decision_log SET decision = {id}"),
        &["the decision log is append-only"],
    );
    refused(
        &mut shell,
        &format!("INSERT INTO decision_queue (id) VALUES ({id})"),
        &["a decision record already in the log does not wait in the queue"],
    );
    // A second record under the same record id, or a replacement of the stored one, is refused
    // (SQLite's `INSERT OR REPLACE` would otherwise delete the old row without a trigger).
    let again = decision_insert(&[("input", "'id'")]);
    let mut edits = vec![again.clone()];
    if engine == Engine::Sqlite {
        edits.push(again.replacen("INSERT INTO", "INSERT OR REPLACE INTO", 1));
        // Another record id, in the stored record's `id`.
        edits.push(
            decision_insert(&[("record", "'fedcba9876543210fedcba9876543210'")])
                .replacen(
                    "INSERT INTO decisions (",
                    "INSERT OR REPLACE INTO decisions (id, ",
                    1,
                )
                .replacen("VALUES (", &format!("VALUES ({id}, "), 1),
        );
    }
    for sql in &edits {
        refused(
            &mut shell,
            sql,
            &[
                "decision records are append-only",
                "duplicate key value",
                "UNIQUE constraint",
            ],
        );
    }
    assert_eq!(f.ledger.integrate_decisions("op")?.records, 0);
    assert!(f.ledger.verify(None)?.ok);
    Ok(())
}

fn a_posture_row_says_consistently_whether_it_was_granted_or_inherited(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let mut shell = f.shell();
    let says = says(engine);
    only_good_values(
        &mut shell,
        POSTURE_INSERT,
        &[&format!(
            "'a', 'trust', 'granted', 'op', '{T}', 'a', NULL, '{T}', '[\"a\"]', 0"
        )],
        &[
            // Granted, yet inherited from someone.
            &format!("'a', 'trust', 'granted', 'op', '{T}', 'a', 'root', '{T}', '[\"a\"]', 0"),
            // Granted, but on another session.
            &format!("'a', 'trust', 'granted', 'op', '{T}', 'root', NULL, '{T}', '[\"root\"]', 0"),
            // A chain that is JSON but not an array.
            &format!("'a', 'trust', 'granted', 'op', '{T}', 'a', NULL, '{T}', '{{}}', 0"),
        ],
        &[says.check],
    );
    // A chain that is not JSON at all.
    refused(
        &mut shell,
        &POSTURE_INSERT.replace(
            "{}",
            &format!("'a', 'trust', 'granted', 'op', '{T}', 'a', NULL, '{T}', 'a', 0"),
        ),
        &[says.not_json],
    );
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn epochs_cannot_be_changed_or_removed_by_hand(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    f.ledger.start_epoch("dashboard")?;
    let before = f.snapshot();
    let mut shell = f.shell();
    let mut edits = vec![
        "UPDATE epochs SET durable = true WHERE epoch = 1",
        "UPDATE epochs SET started_by = 'someone' WHERE epoch = 0",
        "UPDATE epochs SET epoch = 5 WHERE epoch = 1",
        "DELETE FROM epochs WHERE epoch = 1",
        "DELETE FROM epochs",
    ];
    if engine == Engine::Postgres {
        // An upsert of an existing epoch updates it, and the update trigger refuses that.
        // SQLite's replacing insert deletes it without firing the delete trigger: the gap
        // the doc records for C17.
        edits.push(
            "INSERT INTO epochs (epoch, started_at, started_by, durable)
             VALUES (1, '2026-01-01T00:00:00.000Z', 'someone', true)
             ON CONFLICT (epoch) DO UPDATE SET durable = EXCLUDED.durable",
        );
    }
    for sql in edits {
        refused(&mut shell, sql, &["epochs are history"]);
    }
    only_good_values(
        &mut shell,
        &format!(
            "INSERT INTO epochs (epoch, started_at, started_by, durable) VALUES ({{}}, '{LATER}', 'x', false)"
        ),
        &["2"],
        &["-1"],
        &[says(engine).check],
    );
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn grants_written_by_hand_keep_their_form(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let mut shell = f.shell();
    let says = says(engine);
    let longest = format!("'{}'", "x".repeat(1024));
    let too_long = format!("'{}'", "x".repeat(1025));
    let pattern = format!(
        "INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
         VALUES ('a', {{}}, 'op', '{T}')"
    );
    only_good_values(
        &mut shell,
        &pattern,
        &["'npm test'", &longest],
        &["''", &too_long],
        &[says.check],
    );
    // A NUL in a pattern. SQLite's text can hold one, and the CHECK refuses it; PostgreSQL's
    // text cannot hold one at all, so it refuses to make the value.
    let (nul, nul_refused) = match engine {
        Engine::Sqlite => ("'ls' || char(0) || ' /'", says.check),
        Engine::Postgres => ("'ls' || chr(0) || ' /'", "null character not permitted"),
    };
    refused(&mut shell, &pattern.replace("{}", nul), &[nul_refused]);
    let good_name = "n".repeat(64);
    let long_name = "n".repeat(65);
    only_good_values(
        &mut shell,
        "INSERT INTO override_scopes (session_id, name, granted_by, granted_at, expires_at,
                                      revoked_at, revoked_by)
         VALUES ('a', {})",
        &[
            &format!("'hotfix', 'op', '{T}', '{LATER}', NULL, NULL"),
            &format!("'hotfix', 'op', '{T}', '{LATER}', '{T}', 'op'"),
            &format!("'{good_name}', 'op', '{T}', '{LATER}', NULL, NULL"),
        ],
        &[
            &format!("'has space', 'op', '{T}', '{LATER}', NULL, NULL"),
            &format!("'-hotfix', 'op', '{T}', '{LATER}', NULL, NULL"),
            &format!("'', 'op', '{T}', '{LATER}', NULL, NULL"),
            &format!("'{long_name}', 'op', '{T}', '{LATER}', NULL, NULL"),
            // Expires when it is granted.
            &format!("'hotfix', 'op', '{T}', '{T}', NULL, NULL"),
            // Revoked without a time, or without an actor.
            &format!("'hotfix', 'op', '{T}', '{LATER}', NULL, 'op'"),
            &format!("'hotfix', 'op', '{T}', '{LATER}', '{T}', NULL"),
        ],
        &[says.check],
    );
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn audit_kinds_cannot_be_changed_or_removed_by_hand(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    let before = f.snapshot();
    let mut shell = f.shell();
    let mut edits = vec![
        "UPDATE audit_kinds SET meaning = 'nothing to see' WHERE kind = 'posture.revoke'",
        "UPDATE audit_kinds SET kind = 'session.rooted' WHERE kind = 'session.root'",
        "DELETE FROM audit_kinds WHERE kind = 'label.raise'",
        "DELETE FROM audit_kinds",
    ];
    if engine == Engine::Postgres {
        // An upsert that rewrites a kind's meaning is an update, which the update trigger
        // refuses. SQLite's replacing insert is the gap the doc records for C24.
        edits.push(
            "INSERT INTO audit_kinds (kind, meaning) VALUES ('posture.revoke', 'nothing to see')
             ON CONFLICT (kind) DO UPDATE SET meaning = EXCLUDED.meaning",
        );
    }
    for sql in edits {
        refused(&mut shell, sql, &["audit kinds are fixed"]);
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn the_audit_time_order_row_cannot_be_added_changed_or_removed_by_hand(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let rows = f.query("SELECT id, ordered_from FROM audit_time_order");
    assert_eq!(
        rows,
        [[Some("1".to_owned()), Some("1".to_owned())]],
        "a fresh ledger's one row"
    );
    let replace = match engine {
        Engine::Sqlite => {
            "INSERT OR REPLACE INTO audit_time_order (id, ordered_from) VALUES (1, 5)"
        }
        // PostgreSQL's replacing insert.
        Engine::Postgres => {
            "INSERT INTO audit_time_order (id, ordered_from) VALUES (1, 5)
             ON CONFLICT (id) DO UPDATE SET ordered_from = EXCLUDED.ordered_from"
        }
    };
    let mut shell = f.shell();
    for sql in [
        "INSERT INTO audit_time_order (id, ordered_from) VALUES (2, 1)",
        replace,
        "UPDATE audit_time_order SET ordered_from = 9",
        "DELETE FROM audit_time_order",
    ] {
        refused(&mut shell, sql, &["audit_time_order is fixed"]);
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn every_enum_column_refuses_a_word_outside_its_set(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let mut shell = f.shell();
    let label = |values: &str| {
        format!(
            "INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how,
                                 inherited_from)
             VALUES ('a', {values}, 'root')"
        )
    };
    // A flag. SQLite keeps an integer 0 or 1 (`false` and `true` are 0 and 1) and refuses any
    // other value; PostgreSQL's boolean takes its own spellings of true and false (`'yes'`)
    // and refuses a number or any other word.
    let (flags, not_flags): (&[&str], &[&str]) = match engine {
        Engine::Sqlite => (
            &["0", "1", "false", "true"],
            &["2", "-1", "'yes'", "'false'", "NULL"],
        ),
        Engine::Postgres => (
            &["false", "true", "'yes'"],
            &["2", "-1", "0", "'maybe'", "NULL"],
        ),
    };
    // An integer column. SQLite's STRICT table refuses a real; PostgreSQL rounds a numeric into
    // a bigint on assignment, so the column still holds an integer.
    let not_integers: &[&str] = match engine {
        Engine::Sqlite => &["'one'", "1.5", "x'01'"],
        Engine::Postgres => &["'one'", "x'01'"],
    };
    let cases: Vec<(String, &[&str], &[&str])> = vec![
        (
            format!(
                "INSERT INTO sessions (id, depth, origin, created_at) VALUES ('r2', 0, {{}}, '{T}')"
            ),
            &["'root'"],
            &["'Root'", "'sideways'", "''", "NULL"],
        ),
        (
            label(&format!("{{}}, false, '{T}', 'inherited'")),
            &["'private'", "'secret'"],
            &["'Private'", "'confidential'", "NULL"],
        ),
        (
            label(&format!("'private', {{}}, '{T}', 'inherited'")),
            flags,
            not_flags,
        ),
        (
            label(&format!("'private', false, '{T}', {{}}")),
            &["'inherited'"],
            &["'copied'", "'Inherited'"],
        ),
        (
            POSTURE_INSERT.replace(
                "{}",
                &format!("'a', {{}}, 'granted', 'op', '{T}', 'a', NULL, '{T}', '[\"a\"]', 0"),
            ),
            &["'trust'", "'trust_reads'"],
            &["'admin'", "'TRUST'", "'trust reads'"],
        ),
        (
            POSTURE_INSERT.replace(
                "{}",
                &format!("'a', 'trust', {{}}, 'op', '{T}', 'a', NULL, '{T}', '[\"a\"]', 0"),
            ),
            &["'granted'"],
            &["'stolen'", "'Granted'"],
        ),
        (
            format!(
                "INSERT INTO epochs (epoch, started_at, started_by, durable) VALUES (1, '{T}', 'x', {{}})"
            ),
            flags,
            not_flags,
        ),
        // A decision record's verdict and authority.
        (
            decision_insert(&[("verdict", "{}")]),
            &["'approve'", "'ask'", "'deny'"],
            &["'allow'", "'Approve'", "''", "NULL"],
        ),
        (
            decision_insert(&[("authority", "{}")]),
            &["'trust'", "'tool_rule'", "'unknown_session'"],
            &["'operator'", "'Trust'", "'patterns'", "NULL"],
        ),
        // Columns keep their declared types (SQLite: STRICT).
        (
            format!(
                "INSERT INTO epochs (epoch, started_at, started_by, durable) VALUES ({{}}, '{T}', 'x', false)"
            ),
            &["1", "'1'"],
            not_integers,
        ),
    ];
    let says = says(engine);
    let mut expected = vec![says.check, TRIGGER, says.not_null];
    expected.extend(says.wrong_type);
    for (template, good, bad) in cases {
        only_good_values(&mut shell, &template, good, bad, &expected);
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

/// Where each statement of [`time_columns`] takes the time under test.
const AT: &str = "<time>";

/// Each time column of the ledger, with a statement that writes `AT` into it (the statement's
/// other times are good), on a ledger built by `build("root > a b")` with `a` materialized and
/// `head` its audit head.
fn time_columns(head: &AuditHead) -> Vec<(&'static str, String)> {
    let posture = |granted: &str, allocated: &str| {
        POSTURE_INSERT.replace(
            "{}",
            &format!(
                "'b', 'trust', 'granted', 'op', '{granted}', 'b', NULL, '{allocated}', '[\"b\"]', 0"
            ),
        )
    };
    let scope = |granted: &str, expires: &str, revoked: &str| {
        format!(
            "INSERT INTO override_scopes (session_id, name, granted_by, granted_at, expires_at,
                                          revoked_at, revoked_by)
             VALUES ('a', 'hotfix', 'op', '{granted}', '{expires}', '{revoked}', 'op')"
        )
    };
    let hash = "a".repeat(64);
    vec![
        (
            "sessions.created_at",
            format!(
                "INSERT INTO sessions (id, depth, origin, created_at) VALUES ('r2', 0, 'root', '{AT}')"
            ),
        ),
        (
            "sessions.ended_at",
            format!("UPDATE sessions SET ended_at = '{AT}' WHERE id = 'b'"),
        ),
        (
            "labels.materialized_at",
            format!(
                "INSERT INTO sessions (id, depth, origin, created_at) VALUES ('r2', 0, 'root', '{T}');
                 INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
                 VALUES ('r2', 'private', false, '{AT}', 'born')"
            ),
        ),
        (
            "labels.raised_at",
            format!("UPDATE labels SET raised_at = '{AT}' WHERE session_id = 'a'"),
        ),
        (
            "epochs.started_at",
            format!(
                "INSERT INTO epochs (epoch, started_at, started_by, durable) VALUES (1, '{AT}', 'x', false)"
            ),
        ),
        ("postures.granted_at", posture(AT, T)),
        ("postures.allocated_at", posture(T, AT)),
        (
            "command_patterns.added_at",
            format!(
                "INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
                 VALUES ('a', 'ls', 'op', '{AT}')"
            ),
        ),
        (
            "override_scopes.granted_at",
            scope(AT, "2999-12-31T00:00:00.000Z", LATER),
        ),
        ("override_scopes.expires_at", scope(T, AT, T)),
        ("override_scopes.revoked_at", scope(T, LATER, AT)),
        (
            "audit.at",
            format!(
                "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
                 VALUES ({}, '{AT}', 'x', 'session.end', 'b', '{{}}', '{}', '{hash}')",
                head.seq + 1,
                head.hash
            ),
        ),
        (
            "decisions.at",
            decision_insert(&[("at", &format!("'{AT}'"))]),
        ),
        (
            "ledger_options.set_at",
            format!(
                "INSERT INTO ledger_options (name, value, set_by, set_at)
                 VALUES ('untrusted_asks', 'on', 'op', '{AT}')"
            ),
        ),
    ]
}

fn every_time_column_refuses_a_time_of_another_form(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a b");
    f.ledger.state("a")?;
    let head = f.ledger.audit_head()?;
    let before = f.snapshot();
    let mut shell = f.shell();
    // Finer than a millisecond, not a time at all, or a time without a four-digit year's
    // text (PostgreSQL reads each of the last four as a time): refused on both engines.
    let mut bad = vec![
        "2999-01-01T00:00:00.0001Z",
        "",
        "not a time",
        "infinity",
        "-infinity",
        "29990-01-01T00:00:00.000Z",
        "0044-03-15T00:00:00.000Z BC",
    ];
    if engine == Engine::Sqlite {
        // SQLite stores the text, so only its one form is a time. PostgreSQL reads each of
        // these as the time it spells (its input syntax for a timestamptz) and stores the
        // instant, which has one text form; `tomorrow` is midnight tomorrow.
        bad.extend([
            "2999-01-01 00:00:00.000Z",
            "2999-01-01T00:00:00Z",
            "2999-01-01T00:00:00.0000Z",
            "2999-01-01T00:00:00.000+00:00",
            "2999-01-01t00:00:00.000z",
            "tomorrow",
        ]);
    }
    let check = says(engine).check;
    for (column, template) in time_columns(&head) {
        accepted(&mut shell, &template.replace(AT, LATER));
        for value in &bad {
            let sql = template.replace(AT, value);
            let outcome = shell.run(&format!("BEGIN; {sql}; COMMIT;"));
            shell.run("ROLLBACK").ok();
            match outcome {
                Ok(()) => panic!("{column} took the time {value:?}:\n    {sql}"),
                Err(err) => assert!(
                    err.contains(check) || err.contains("time"),
                    "{column}: {value:?} refused with `{err}`"
                ),
            }
        }
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

fn with_foreign_keys_on_no_row_can_name_a_session_epoch_or_kind_that_does_not_exist(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let head = f.ledger.audit_head()?;
    let before = f.snapshot();
    let mut shell = f.shell();
    if engine == Engine::Sqlite {
        // As on every connection the library opens. PostgreSQL checks foreign keys on every
        // connection: there is nothing to turn on.
        shell.run("PRAGMA foreign_keys = ON")?;
    }
    let fk = says(engine).foreign_key;
    let pattern = format!(
        "INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
         VALUES ({{}}, 'ls', 'op', '{T}')"
    );
    only_good_values(&mut shell, &pattern, &["'a'"], &["'ghost'"], &[fk]);
    only_good_values(
        &mut shell,
        &format!(
            "INSERT INTO override_scopes (session_id, name, granted_by, granted_at, expires_at)
             VALUES ({{}}, 'hotfix', 'op', '{T}', '{LATER}')"
        ),
        &["'a'"],
        &["'ghost'"],
        &[fk],
    );
    only_good_values(
        &mut shell,
        &POSTURE_INSERT.replace(
            "{}",
            &format!("{{}}, 'trust', 'granted', 'op', '{T}', {{}}, NULL, '{T}', '[]', 0"),
        ),
        &["'a'"],
        &["'ghost'"],
        &[fk],
    );
    only_good_values(
        &mut shell,
        &POSTURE_INSERT.replace(
            "{}",
            &format!("'a', 'trust', 'granted', 'op', '{T}', 'a', NULL, '{T}', '[]', {{}}"),
        ),
        &["0"],
        &["7"],
        &[fk],
    );
    // These have triggers of their own, which refuse first.
    refused(
        &mut shell,
        &format!(
            "INSERT INTO sessions (id, created_by, depth, origin, created_at)
             VALUES ('c', 'ghost', 1, 'created', '{T}')"
        ),
        &[fk, "one level below an existing creator"],
    );
    refused(
        &mut shell,
        &format!(
            "INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
             VALUES ('ghost', 'private', false, '{T}', 'born')"
        ),
        &[fk, "only a root is born"],
    );
    // The next row of the chain in every other respect.
    let hash = "a".repeat(64);
    refused(
        &mut shell,
        &format!(
            "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
             VALUES ({}, '{LATER}', 'x', 'made.up', NULL, '{{}}', '{}', '{hash}')",
            head.seq + 1,
            head.hash
        ),
        &[fk, "unknown audit kind"],
    );
    match engine {
        // With foreign keys off, as in the sqlite3 shell, the reference that only a foreign key
        // holds is not checked: why the library turns them on for every connection of its own.
        Engine::Sqlite => {
            shell.run("PRAGMA foreign_keys = OFF")?;
            accepted(&mut shell, &pattern.replace("{}", "'ghost'"));
        }
        // A psql session has no switch for them: a new one refuses it as well.
        Engine::Postgres => refused(&mut f.shell(), &pattern.replace("{}", "'ghost'"), &[fk]),
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

/// C41: the next row of the chain, its hash right for its fields, is refused when its detail is
/// not in the one JSON form the library writes (and Python's `json.dumps(..., ensure_ascii=False,
/// separators=(",", ":"), sort_keys=True)` writes), and accepted when it is, escapes and all.
/// C42 and the items it changes (C3, C9, C19, C36 to C39): a row leaves the live ledger only
/// behind an archive row that the database checked against a signed checkpoint and the chain,
/// and only up to its boundary; a session only once its compact row is written, and its id is
/// never used again.
fn rows_leave_only_into_an_archive_and_only_up_to_its_boundary(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("done > done-1; live > live-1");
    f.ledger.state("done-1")?;
    f.ledger.end("done-1", "test")?;
    f.ledger.end("done", "test")?;
    let key = session_ledger::SignerKey::generate("example.org/ledger")?;
    let signed = f.ledger.checkpoint(&key, None, "test")?;
    let size = signed.checkpoint.size;
    f.ledger.create_root("after", "test")?;
    let hash_at = |seq: u64| -> String {
        f.query(&format!("SELECT hash FROM audit WHERE seq = {seq}"))[0][0]
            .clone()
            .expect("a hash")
    };
    let (boundary_hash, other_hash) = (hash_at(size), hash_at(size - 1));
    let archive = |number: i64, trail: u64, hash: &str| {
        format!(
            "INSERT INTO archives (archive, file, sha256, trail_size, trail_hash, log_size, trees,
                                   sessions, made_at, made_by)
             VALUES ({number}, 'a.db', '{}', {trail}, '{hash}', 0, 1, 2, '{LATER}', 'x')",
            "0".repeat(64)
        )
    };
    let mut shell = f.shell();
    let nothing_yet = [
        "DELETE FROM audit WHERE seq = 1".to_owned(),
        "DELETE FROM audit_tree WHERE level = 0 AND idx = 0".to_owned(),
        "DELETE FROM labels WHERE session_id = 'done-1'".to_owned(),
        "DELETE FROM sessions WHERE id = 'done-1'".to_owned(),
    ];
    for sql in &nothing_yet {
        refused(&mut shell, sql, &["session-ledger:"]);
    }
    // An archive row: only at a checkpoint's size, with its row's hash, numbered in order.
    refused(
        &mut shell,
        &archive(1, size - 1, &other_hash),
        &["session-ledger: an archive"],
    );
    refused(
        &mut shell,
        &archive(1, size, &other_hash),
        &["session-ledger: an archive"],
    );
    refused(
        &mut shell,
        &archive(2, size, &boundary_hash),
        &["session-ledger: an archive"],
    );
    // ... and with the decision log's last position up to it (none here).
    refused(
        &mut shell,
        &archive(1, size, &boundary_hash).replace("', 0, 1, 2,", "', 5, 1, 2,"),
        &["session-ledger: an archive"],
    );
    // Only an ended session is archived.
    refused(
        &mut shell,
        &format!(
            "{}; INSERT INTO archived_sessions (id, tree, archive) VALUES ('live-1', 'live', 1)",
            archive(1, size, &boundary_hash)
        ),
        &["session-ledger: only a session that has ended"],
    );
    let made = archive(1, size, &boundary_hash);
    accepted(&mut shell, &made);
    // Behind it: the trail up to the boundary, never a row past it.
    accepted(
        &mut shell,
        &format!("{made}; DELETE FROM audit WHERE seq <= {size}"),
    );
    refused(
        &mut shell,
        &format!("{made}; DELETE FROM audit WHERE seq = {}", size + 2),
        &["session-ledger: the audit trail is append-only"],
    );
    // The tree's nodes behind its frontier only: leaf 0 when its parent lies within it.
    let frontier_level = u64::BITS - 1 - size.leading_zeros();
    refused(
        &mut shell,
        &format!("{made}; DELETE FROM audit_tree WHERE level = {frontier_level} AND idx = 0"),
        &["session-ledger: the audit tree is append-only"],
    );
    if size >= 2 {
        accepted(
            &mut shell,
            &format!("{made}; DELETE FROM audit_tree WHERE level = 0 AND idx = 0"),
        );
    }
    // A session and its label leave only with their compact row, and the id stays taken.
    refused(
        &mut shell,
        &format!("{made}; DELETE FROM labels WHERE session_id = 'done-1'"),
        &["session-ledger: labels are never deleted"],
    );
    let moved = format!(
        "{made}; INSERT INTO archived_sessions (id, tree, archive) VALUES ('done-1', 'done', 1);
         DELETE FROM labels WHERE session_id = 'done-1'; DELETE FROM sessions WHERE id = 'done-1'"
    );
    accepted(&mut shell, &moved);
    refused(
        &mut shell,
        &format!(
            "{moved}; INSERT INTO sessions (id, created_by, depth, origin, created_at)
                      VALUES ('done-1', NULL, 0, 'root', '{LATER}')"
        ),
        &["session-ledger: session ids are never reused"],
    );
    // And what records the move is history.
    for change in [
        "UPDATE archives SET file = 'b.db'",
        "DELETE FROM archives",
        "UPDATE archived_sessions SET tree = 'x'",
        "DELETE FROM archived_sessions",
    ] {
        refused(
            &mut shell,
            &format!("{moved}; {change}"),
            &["session-ledger: archive"],
        );
    }
    Ok(())
}

fn an_audit_detail_outside_its_one_json_form_is_refused(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let before = f.snapshot();
    let head = f.ledger.audit_head()?;
    let row = |detail: &str| {
        let seq = head.seq + 1;
        let hash =
            session_ledger::chain_hash(&head.hash, seq, LATER, "x", "session.end", None, detail);
        format!(
            "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
             VALUES ({seq}, '{LATER}', 'x', 'session.end', NULL, '{}', '{}', '{hash}')",
            detail.replace('\'', "''"),
            head.hash
        )
    };
    let mut shell = f.shell();
    // The form, as the library writes it: every escape there is, characters that are written
    // as themselves (`/`, DEL, U+2028, an emoji), nesting, and the largest and smallest integers.
    let canonical = [
        serde_json::json!({}),
        serde_json::json!({
            "a": 1, "b": [1, -2, {"y": true, "z": null}], "d": false, "e": [], "f": {},
            "s": "\"q\" \\ / \u{8}\u{c}\n\r\t \u{1} \u{b} \u{1f} \u{7f} \u{2028} é 😀",
        }),
        serde_json::json!({"note": "a backslash, then u001F: \\u001F", "é": i64::MAX, "z": i64::MIN}),
    ];
    for detail in &canonical {
        accepted(&mut shell, &row(&detail.to_string()));
    }
    for detail in [
        r#"{"b":1,"a":2}"#,
        r#"{"a":1,"a":2}"#,
        r#"{"b":{"d":1,"c":2}}"#,
        r#"{"a": 1}"#,
        r#"{"a":[1, 2]}"#,
        r#" {"a":1}"#,
        r#"{"a":1.5}"#,
        r#"{"a":1.0}"#,
        r#"{"a":1e2}"#,
        r#"{"a":-0}"#,
        r#"{"a":99999999999999999999}"#,
        r#"{"a":"\u00e9"}"#,
        r#"{"a":"\/"}"#,
        r#"{"a":"\u000a"}"#,
        r#"{"a":"\u001F"}"#,
        r#"{"a":"\ud83d\ude00"}"#,
    ] {
        refused(&mut shell, &row(detail), &["canonical"]);
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

/// `insert`, an `INSERT INTO ...` statement, as the engine's insert that replaces the row with
/// the same key: SQLite's `INSERT OR REPLACE`; PostgreSQL's `ON CONFLICT (key) DO UPDATE`,
/// setting `set`.
fn replacing(engine: Engine, insert: &str, key: &str, set: &str) -> String {
    match engine {
        Engine::Sqlite => insert.replacen("INSERT INTO", "INSERT OR REPLACE INTO", 1),
        Engine::Postgres => format!("{insert} ON CONFLICT ({key}) DO UPDATE SET {set}"),
    }
}

fn a_second_row_for_the_same_key_is_refused_in_every_table(engine: Engine) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    f.ledger.grant("root", PostureLevel::Trust, "op")?;
    f.ledger.add_pattern("root", "npm test", "op")?;
    f.ledger
        .grant_scope("root", "hotfix", Duration::from_secs(3600), "op")?;
    let head = f.ledger.audit_head()?;
    let before = f.snapshot();
    let mut shell = f.shell();
    let says = says(engine);
    let hash = "a".repeat(64);
    // Where a replace would rewrite history, a trigger refuses it as well.
    for (insert, key, set) in [
        (
            format!(
                "INSERT INTO sessions (id, depth, origin, created_at) VALUES ('root', 0, 'root', '{T}')"
            ),
            "id",
            "created_at = EXCLUDED.created_at",
        ),
        (
            format!(
                "INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
                 VALUES ('root', 'private', false, '{T}', 'born')"
            ),
            "session_id",
            "materialized_at = EXCLUDED.materialized_at",
        ),
        (
            format!(
                "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
                 VALUES ({}, '{LATER}', 'x', 'session.end', 'a', '{{}}', '{}', '{hash}')",
                head.seq, head.hash
            ),
            "seq",
            "hash = EXCLUDED.hash",
        ),
    ] {
        let replace = replacing(engine, &insert, key, set);
        for sql in [&insert, &replace] {
            refused(&mut shell, sql, &[TRIGGER, says.unique]);
        }
    }
    for sql in [
        POSTURE_INSERT.replace(
            "{}",
            &format!(
                "'root', 'trust', 'granted', 'op', '{T}', 'root', NULL, '{T}', '[\"root\"]', 0"
            ),
        ),
        format!(
            "INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
             VALUES ('root', 'npm test', 'other', '{T}')"
        ),
        format!(
            "INSERT INTO override_scopes (session_id, name, granted_by, granted_at, expires_at)
             VALUES ('root', 'hotfix', 'other', '{T}', '{LATER}')"
        ),
        "INSERT INTO audit_kinds (kind, meaning) VALUES ('session.root', 'again')".to_owned(),
        format!(
            "INSERT INTO epochs (epoch, started_at, started_by, durable) VALUES (0, '{T}', 'x', false)"
        ),
    ] {
        refused(&mut shell, &sql, &[says.unique]);
    }
    assert_eq!(f.snapshot(), before);
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// The chain's hash input, byte for byte (C21)
// ------------------------------------------------------------------------------------------------

/// One row of the doc's worked example.
#[derive(Debug, Default, Clone)]
struct ExampleRow {
    seq: i64,
    at: String,
    actor: String,
    kind: String,
    session_id: Option<String>,
    detail: String,
    input: String,
    hash: String,
}

/// The rows of the doc's ```text chain-example block, and its ```sql block: the SQL
/// expression that recomputes a row's hash.
fn chain_example() -> (Vec<ExampleRow>, String) {
    let doc = fs::read_to_string(package_file(DOC)).expect("read docs/storage-contract.md");
    let block = |fence: &str| -> String {
        let start = doc
            .find(fence)
            .unwrap_or_else(|| panic!("{DOC} has no {fence:?} block"))
            + fence.len();
        let end = doc[start..].find("```").expect("a closing fence") + start;
        doc[start..end].to_owned()
    };
    let mut rows = Vec::new();
    for paragraph in block("```text chain-example\n").split("\n\n") {
        let mut row = ExampleRow::default();
        for line in paragraph.lines() {
            let (key, value) = line
                .split_once(": ")
                .unwrap_or_else(|| panic!("{DOC}: `{line}` is not `field: value`"));
            let value = value.to_owned();
            match key {
                "seq" => row.seq = value.parse().expect("seq is a number"),
                "at" => row.at = value,
                "actor" => row.actor = value,
                "kind" => row.kind = value,
                "session_id" => row.session_id = (value != "NULL").then_some(value),
                "detail" => row.detail = value,
                "input" => row.input = value,
                "hash" => row.hash = value,
                other => panic!("{DOC}: unknown field `{other}` in the chain example"),
            }
        }
        rows.push(row);
    }
    (rows, block("```sql\n"))
}

/// The encoding as the doc states it, built here from the fields, independently of the
/// library's `chain_hash`.
fn encode(prev_hash: &str, row: &ExampleRow) -> String {
    let field = |x: Option<&str>| match x {
        Some(x) => format!("{}:{x}|", x.len()),
        None => "-|".to_owned(),
    };
    format!(
        "{prev_hash}|{}|{}{}{}{}{}",
        row.seq,
        field(Some(&row.at)),
        field(Some(&row.actor)),
        field(Some(&row.kind)),
        field(row.session_id.as_deref()),
        field(Some(&row.detail)),
    )
}

fn sha3_hex(bytes: &[u8]) -> String {
    use sha3::Digest;
    sha3::Sha3_256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Registers `sha3(X, 256)` on a plain connection, as the stock shell has it built in.
fn with_sha3(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        "sha3",
        2,
        rusqlite::functions::FunctionFlags::SQLITE_UTF8
            | rusqlite::functions::FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            use sha3::Digest;
            let text: String = ctx.get(0)?;
            Ok(sha3::Sha3_256::digest(text.as_bytes()).to_vec())
        },
    )
}
/// The audit trail as stored, oldest first: each row's fields with `at` as its text (the bytes
/// hashed), its `prev_hash`, and, on SQLite, the hash the doc's SQL recomputes from the stored
/// row.
fn stored_trail(f: &Fixture, doc_sql: &str) -> Outcome<Vec<(ExampleRow, String, Option<String>)>> {
    let text_of = |value: &Option<String>| value.clone().expect("a value");
    let row_of = |r: &[Option<String>]| -> Outcome<(ExampleRow, String)> {
        Ok((
            ExampleRow {
                seq: text_of(&r[0]).parse()?,
                at: text_of(&r[1]),
                actor: text_of(&r[2]),
                kind: text_of(&r[3]),
                session_id: r[4].clone(),
                detail: text_of(&r[5]),
                input: String::new(),
                hash: text_of(&r[7]),
            },
            text_of(&r[6]),
        ))
    };
    match f.engine {
        Engine::Sqlite => {
            let conn = f.sql();
            with_sha3(&conn)?;
            let mut stmt = conn.prepare(&format!(
                "SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash,
                        {doc_sql} AS recomputed
                   FROM audit ORDER BY seq"
            ))?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((
                        ExampleRow {
                            seq: r.get(0)?,
                            at: r.get(1)?,
                            actor: r.get(2)?,
                            kind: r.get(3)?,
                            session_id: r.get(4)?,
                            detail: r.get(5)?,
                            input: String::new(),
                            hash: r.get(7)?,
                        },
                        r.get(6)?,
                        Some(r.get(8)?),
                    ))
                })?
                .collect::<Result<_, _>>()?;
            Ok(rows)
        }
        // `at` is a timestamptz: its text is the one docs/postgres-verify.sql hashes, and the
        // library's. The doc's SQL is SQLite's; docs/postgres-verify.sql recomputes the hashes.
        Engine::Postgres => f
            .query(
                "SELECT seq, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'),
                        actor, kind, session_id, detail, prev_hash, hash
                   FROM audit ORDER BY seq",
            )
            .iter()
            .map(|r| row_of(r).map(|(row, prev)| (row, prev, None)))
            .collect(),
    }
}

fn the_hash_input_given_in_the_contract_is_what_the_library_hashes_and_stores(
    engine: Engine,
) -> TestResult {
    let (example, sql) = chain_example();
    assert_eq!(example.len(), 3, "{DOC}: the chain example has three rows");
    let clock = Arc::new(ManualClock::new(T.parse()?));
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .clock(clock.clone())
    );
    f.ledger.create_root("conductor", "alice")?;
    clock.advance(chrono::TimeDelta::milliseconds(1_500));
    f.ledger.start_epoch("dashboard")?;
    clock.advance(chrono::TimeDelta::milliseconds(750));
    f.ledger.add_pattern("conductor", "grep é", "alice")?;

    let stored = stored_trail(&f, &sql)?;
    assert_eq!(stored.len(), example.len(), "the library wrote other rows");

    let mut prev = session_ledger::GENESIS_HASH.to_owned();
    for (doc, (row, prev_hash, recomputed)) in example.iter().zip(&stored) {
        let seq = doc.seq;
        // The fields the library stored are the doc's, byte for byte.
        assert_eq!(
            (
                &row.seq,
                &row.at,
                &row.actor,
                &row.kind,
                &row.session_id,
                &row.detail
            ),
            (
                &doc.seq,
                &doc.at,
                &doc.actor,
                &doc.kind,
                &doc.session_id,
                &doc.detail
            ),
            "row {seq}: the library stored other fields than the doc shows"
        );
        assert_eq!(prev_hash, &prev, "row {seq}: prev_hash");
        // The input is the doc's rule applied to the fields, and its digest is the hash.
        assert_eq!(
            doc.input,
            encode(&prev, doc),
            "row {seq}: the doc's input is not its rule"
        );
        assert_eq!(
            sha3_hex(doc.input.as_bytes()),
            doc.hash,
            "row {seq}: the doc's hash"
        );
        let library = session_ledger::chain_hash(
            &prev,
            doc.seq,
            &doc.at,
            &doc.actor,
            &doc.kind,
            doc.session_id.as_deref(),
            &doc.detail,
        );
        assert_eq!(library, doc.hash, "row {seq}: chain_hash");
        assert_eq!(row.hash, doc.hash, "row {seq}: the stored hash");
        if let Some(recomputed) = recomputed {
            assert_eq!(recomputed, &doc.hash, "row {seq}: the doc's SQL");
        }
        prev = doc.hash.clone();
    }
    if engine == Engine::Postgres {
        // Every stored hash, which is the doc's, is what the psql verifier recomputes.
        assert_eq!(f.verify_in_sql(), None, "docs/postgres-verify.sql");
    }
    assert!(f.ledger.verify(None)?.ok);
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// Transactions (C30, C32, C33)
// ------------------------------------------------------------------------------------------------

const WRITERS: usize = 3;
const WRITES_PER_WRITER: usize = 20;

/// The module `engine_tests!` puts an engine's tests in: the start of their names.
fn module_of(engine: Engine) -> &'static str {
    match engine {
        Engine::Sqlite => "sqlite",
        Engine::Postgres => "postgres",
    }
}

fn writers_in_several_processes_append_to_one_chain_in_one_order(engine: Engine) -> TestResult {
    const NAME: &str = "writers_in_several_processes_append_to_one_chain_in_one_order";
    if let Ok(target) = std::env::var("SESSION_LEDGER_CONTRACT_WRITER") {
        // A writer process: its own ledger handle on the shared file or database.
        let writer = std::env::var("SESSION_LEDGER_CONTRACT_WRITER_NAME")?;
        let ledger = Ledger::init(&target)?;
        for i in 0..WRITES_PER_WRITER {
            let id = format!("{writer}-{i}");
            ledger.create_root(&id, &writer)?;
            ledger.grant(&id, PostureLevel::Trust, &writer)?;
        }
        return Ok(());
    }
    let f = fixture!(engine);
    let test = format!("{}::{NAME}", module_of(engine));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            Command::new(std::env::current_exe()?)
                .args(["--exact", &test, "--test-threads=1"])
                .env("SESSION_LEDGER_CONTRACT_WRITER", f.target())
                .env("SESSION_LEDGER_CONTRACT_WRITER_NAME", format!("writer{w}"))
                .stdout(Stdio::null())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    for mut writer in writers {
        assert!(writer.wait()?.success(), "a writer process failed");
    }
    let rows = WRITERS * WRITES_PER_WRITER * 2;
    let v = f.ledger.verify(None)?;
    assert!(v.ok, "{v:?}");
    assert_eq!(v.rows as usize, rows);
    let seqs = first_column(f.query("SELECT seq FROM audit ORDER BY seq"));
    let expected: Vec<String> = (1..=rows).map(|s| s.to_string()).collect();
    assert_eq!(seqs, expected);
    // Each writer's own rows are in the order it wrote them.
    for w in 0..WRITERS {
        let kinds: Vec<(String, String)> = f
            .query(&format!(
                "SELECT session_id, kind FROM audit WHERE actor = 'writer{w}' ORDER BY seq"
            ))
            .into_iter()
            .map(|r| (r[0].clone().expect("an id"), r[1].clone().expect("a kind")))
            .collect();
        let expected: Vec<(String, String)> = (0..WRITES_PER_WRITER)
            .flat_map(|i| {
                let id = format!("writer{w}-{i}");
                [
                    (id.clone(), "session.root".to_owned()),
                    (id, "posture.grant".to_owned()),
                ]
            })
            .collect();
        assert_eq!(kinds, expected, "writer{w}");
    }
    Ok(())
}

fn a_write_waits_for_a_transaction_holding_the_write_lock_and_then_succeeds(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.build("root > a");
    let mut holder = f.shell();
    holder.run(&match engine {
        Engine::Sqlite => "BEGIN IMMEDIATE".to_owned(),
        // The ledger's lock, which every write transaction of the engine takes first.
        Engine::Postgres => format!("BEGIN; {}", common::postgres_place::WRITE_LOCK),
    })?;
    std::thread::scope(|s| -> TestResult {
        let writer = s.spawn(|| f.ledger.create_child("b", "root", "op"));
        std::thread::sleep(Duration::from_millis(300));
        let waited = !writer.is_finished();
        holder.run("COMMIT")?;
        assert!(waited, "the write did not wait for the lock");
        writer.join().expect("the writer thread")?;
        Ok(())
    })?;
    assert!(f.ledger.session("b")?.is_some());
    assert!(f.ledger.verify(None)?.ok);
    Ok(())
}

fn a_read_transaction_sees_one_state_while_the_library_commits_beside_it(
    engine: Engine,
) -> TestResult {
    // A writer blocked by the reader would give up after this, and the test fail.
    let f = fixture!(
        engine,
        Config::default()
            .create_if_missing(true)
            .busy_timeout(Duration::from_secs(2))
    );
    f.build("root > a");
    const STATE: &str = "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM postures),
                                (SELECT max(seq) FROM audit)";
    let mut reader = f.shell();
    reader.run(match engine {
        Engine::Sqlite => "BEGIN",
        // As the engine's snapshot reads: a plain BEGIN would see each statement's own state.
        Engine::Postgres => "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    })?;
    // The first read of the transaction fixes its snapshot.
    let before = reader.query(STATE);
    let number = |rows: &[Vec<Option<String>>], i: usize| -> i64 {
        rows[0][i]
            .as_deref()
            .expect("a number")
            .parse()
            .expect("a number")
    };
    // Commits while the read transaction is open: the reader does not block them.
    f.ledger.create_child("b", "root", "op")?;
    f.ledger.grant("root", PostureLevel::Trust, "op")?;
    let committed = f.query(STATE);
    assert_eq!(
        (0..3).map(|i| number(&committed, i)).collect::<Vec<_>>(),
        [
            number(&before, 0) + 1,
            number(&before, 1) + 1,
            number(&before, 2) + 2
        ],
        "a new reader sees the commits"
    );
    assert_eq!(
        reader.query(STATE),
        before,
        "the snapshot moved inside its transaction"
    );
    reader.run("COMMIT")?;
    assert_eq!(reader.query(STATE), committed);
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// PostgreSQL's own part of the contract
// ------------------------------------------------------------------------------------------------

/// Tests of what only PostgreSQL has: `TRUNCATE`, upserts, roles, `timestamptz`. Each skips,
/// as every PostgreSQL test does, when no test server is given.
mod postgres_only {
    use std::io::Write as _;

    use super::*;
    use common::postgres_place::Place;

    /// The variable naming the test server's database as the application role
    /// (scripts/with-postgres sets it).
    const APP_URL_VARIABLE: &str = "SESSION_LEDGER_TEST_POSTGRES_APP";

    /// Another key than the ledger's write lock: whoever runs docs/postgres-roles.sql holds it,
    /// since the file grants on the database every test's schema shares.
    const ROLES_LOCK: i64 = 7814902317660418408;

    #[test]
    fn truncate_is_refused_on_every_table_that_never_loses_rows() -> TestResult {
        let f = fixture!(Engine::Postgres);
        f.build("root > a");
        f.ledger.state("a")?;
        // A decision record integrated, and one still queued.
        f.ledger
            .decide_and_record("a", "ls", false, &AskedBy::actor("op"))?;
        f.ledger.integrate_decisions("op")?;
        f.ledger
            .decide_and_record("a", "pwd", false, &AskedBy::actor("op"))?;
        let before = f.snapshot();
        let mut shell = f.shell();
        // TRUNCATE removes rows without firing a row's delete trigger: each of these tables has
        // a statement trigger for it. A table that others reference can be truncated only
        // together with them (CASCADE): without, PostgreSQL refuses before any trigger runs.
        for (table, message) in [
            ("sessions", "sessions are never deleted"),
            ("labels", "labels are never deleted"),
            ("epochs", "epochs are history"),
            ("audit_kinds", "audit kinds are fixed"),
            ("audit", "the audit trail is append-only"),
            ("audit_time_order", "audit_time_order is fixed"),
            ("audit_tree", "the audit tree is append-only"),
            ("checkpoints", "checkpoints are history"),
            ("decisions", "decision records are append-only"),
            ("decision_log", "the decision log is append-only"),
            // The one table here that loses rows, and only into the log (C40).
            (
                "decision_queue",
                "a decision record leaves the queue only once it is in the log",
            ),
        ] {
            refused(&mut shell, &format!("TRUNCATE {table} CASCADE"), &[message]);
            refused(
                &mut shell,
                &format!("TRUNCATE {table}"),
                &[
                    message,
                    "cannot truncate a table referenced in a foreign key constraint",
                ],
            );
        }
        refused(
            &mut shell,
            "TRUNCATE sessions, labels, epochs, postures, command_patterns, override_scopes,
                      audit_kinds, audit, audit_time_order, audit_tree, checkpoints, decisions,
                      decision_queue, decision_log",
            &[TRIGGER],
        );
        assert_eq!(f.snapshot(), before);
        Ok(())
    }

    #[test]
    fn an_upsert_cannot_lower_a_label_reuse_an_id_or_rewrite_a_row_of_history() -> TestResult {
        let f = fixture!(Engine::Postgres);
        f.build("root > a");
        f.raise("root", Some(Taint::Secret), true);
        f.ledger.grant("a", PostureLevel::TrustReads, "op")?;
        let recorded = f
            .ledger
            .decide_and_record("a", "ls", false, &AskedBy::actor("op"))?;
        f.ledger.integrate_decisions("op")?;
        let head = f.ledger.audit_head()?;
        let before = f.snapshot();
        let mut shell = f.shell();
        let hash = "a".repeat(64);
        // `INSERT ... ON CONFLICT` runs the insert triggers on the proposed row first, and `DO
        // UPDATE` then runs the update triggers on the row it changes: either refuses.
        for (sql, expected) in [
            (
                format!(
                    "INSERT INTO sessions (id, depth, origin, created_at)
                     VALUES ('a', 0, 'root', '{T}')
                     ON CONFLICT (id) DO UPDATE
                     SET created_by = NULL, depth = 0, origin = 'root'"
                ),
                &["session ids are never reused"][..],
            ),
            (
                format!(
                    "INSERT INTO sessions (id, depth, origin, created_at)
                     VALUES ('a', 0, 'root', '{T}') ON CONFLICT (id) DO NOTHING"
                ),
                &["session ids are never reused"],
            ),
            // A well-formed first label for the root, whose update lowers the stored one.
            (
                format!(
                    "INSERT INTO labels (session_id, taint, untrusted, materialized_at,
                                         materialized_how)
                     VALUES ('root', 'private', false, '{T}', 'born')
                     ON CONFLICT (session_id) DO UPDATE SET taint = 'public', untrusted = false"
                ),
                &["a label is materialized once"],
            ),
            // trust_reads widened to trust in place.
            (
                POSTURE_INSERT.replace(
                    "{}",
                    &format!(
                        "'a', 'trust', 'granted', 'op', '{T}', 'a', NULL, '{T}', '[\"a\"]', 0"
                    ),
                ) + " ON CONFLICT (session_id) DO UPDATE SET posture = EXCLUDED.posture",
                &["a posture only moves into a later epoch"],
            ),
            (
                format!(
                    "INSERT INTO epochs (epoch, started_at, started_by, durable)
                     VALUES (0, '{T}', 'someone', true)
                     ON CONFLICT (epoch) DO UPDATE
                     SET started_by = EXCLUDED.started_by, durable = EXCLUDED.durable"
                ),
                &["epochs are history"],
            ),
            (
                "INSERT INTO audit_kinds (kind, meaning) VALUES ('posture.revoke', 'nothing')
                 ON CONFLICT (kind) DO UPDATE SET meaning = EXCLUDED.meaning"
                    .to_owned(),
                &["audit kinds are fixed"],
            ),
            // The head rewritten in place. A row that conflicts cannot extend the chain, so
            // that trigger may be the one that refuses.
            (
                format!(
                    "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
                     VALUES ({}, '{LATER}', 'x', 'session.end', 'a', '{{}}', '{}', '{hash}')
                     ON CONFLICT (seq) DO UPDATE SET actor = EXCLUDED.actor, hash = EXCLUDED.hash",
                    head.seq,
                    "0".repeat(64)
                ),
                &["append-only", "extend the hash chain"],
            ),
            (
                "INSERT INTO audit_time_order (id, ordered_from) VALUES (1, 5)
                 ON CONFLICT (id) DO UPDATE SET ordered_from = EXCLUDED.ordered_from"
                    .to_owned(),
                &["audit_time_order is fixed"],
            ),
            // The record's verdict turned into an approval, and its position taken by another.
            (
                decision_insert(&[
                    ("record", &format!("'{}'", recorded.record)),
                    ("verdict", "'approve'"),
                    ("authority", "'trust'"),
                ]) + " ON CONFLICT (record) DO UPDATE SET verdict = EXCLUDED.verdict,
                       authority = EXCLUDED.authority",
                &["decision records are append-only"],
            ),
            (
                "INSERT INTO decision_log (seq, decision, batch)
                 SELECT 1, id, (SELECT max(seq) FROM audit) FROM decisions
                 ON CONFLICT (seq) DO UPDATE SET decision = EXCLUDED.decision"
                    .to_owned(),
                &["the decision log is append-only"],
            ),
        ] {
            refused(&mut shell, &sql, expected);
        }
        assert_eq!(f.snapshot(), before);
        Ok(())
    }

    /// The application role's URL for `f`'s ledger: the role's own URL with the ledger's
    /// schema as its search_path, as the owner's URL has it. `None`, having said so, when the
    /// test server names no application role.
    fn application_role_url(f: &Fixture) -> Option<String> {
        let Some(app) = std::env::var(APP_URL_VARIABLE)
            .ok()
            .filter(|u| !u.is_empty())
        else {
            if std::env::var("SESSION_LEDGER_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("{APP_URL_VARIABLE} is not set, and SESSION_LEDGER_REQUIRE_POSTGRES=1");
            }
            // Straight to the terminal: the test harness hides what a passing test prints.
            let _ = writeln!(
                std::io::stderr(),
                "\n*** SKIPPED: the application role's tests do not run: {APP_URL_VARIABLE} is \
                 not set (scripts/with-postgres sets it) ***\n"
            );
            return None;
        };
        let target = f.target();
        let (_, options) = target
            .split_once('?')
            .expect("the ledger's URL names its schema in its options");
        Some(format!("{app}?{options}"))
    }

    /// The documented setup: the owner runs docs/postgres-roles.sql in the ledger's schema, in
    /// one transaction.
    fn grant_the_documented_roles(f: &Fixture) -> TestResult {
        let roles = fs::read_to_string(package_file("docs/postgres-roles.sql"))?;
        f.shell().run(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock({ROLES_LOCK});\n{roles}\nCOMMIT;"
        ))?;
        Ok(())
    }

    #[test]
    fn the_application_role_cannot_rewrite_the_audit_trail_or_switch_a_trigger_off() -> TestResult {
        let f = fixture!(Engine::Postgres);
        let Some(app_url) = application_role_url(&f) else {
            return Ok(());
        };
        f.build("root > a");
        grant_the_documented_roles(&f)?;
        let head = f.ledger.audit_head()?;
        let before = f.snapshot();
        let mut app = Shell::postgres(&app_url);
        let denied = "permission denied for table";
        let not_owner = "must be owner of";
        let mut edits = vec![
            (
                "UPDATE audit SET actor = 'someone-else' WHERE seq = 1".to_owned(),
                denied,
            ),
            ("UPDATE audit SET detail = '{}'".to_owned(), denied),
            ("DELETE FROM audit WHERE seq = 1".to_owned(), denied),
            ("DELETE FROM audit".to_owned(), denied),
            ("TRUNCATE audit".to_owned(), denied),
            (
                "DROP TRIGGER audit_is_append_only_update ON audit".to_owned(),
                not_owner,
            ),
            // Every trigger of the session, replication role off: owner or superuser only.
            (
                "SET session_replication_role = replica".to_owned(),
                "permission denied to set parameter",
            ),
        ];
        for table in [
            "sessions",
            "labels",
            "epochs",
            "postures",
            "audit_kinds",
            "audit",
            "audit_time_order",
        ] {
            edits.push((
                format!("ALTER TABLE {table} DISABLE TRIGGER USER"),
                not_owner,
            ));
            edits.push((
                format!("ALTER TABLE {table} DISABLE TRIGGER ALL"),
                not_owner,
            ));
        }
        edits.push((
            "ALTER TABLE audit DISABLE TRIGGER audit_is_append_only_delete".to_owned(),
            not_owner,
        ));
        for (sql, expected) in &edits {
            refused(&mut app, sql, &[expected]);
        }
        // What the library does as this role, it may: append the next row of the chain.
        accepted(
            &mut app,
            &format!(
                "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
                 VALUES ({}, '{LATER}', 'x', 'session.end', 'a', '{{}}', '{}', '{}')",
                head.seq + 1,
                head.hash,
                "a".repeat(64)
            ),
        );
        assert_eq!(f.snapshot(), before);
        Ok(())
    }

    #[test]
    fn the_application_role_records_and_integrates_decisions_and_cannot_change_one() -> TestResult {
        let f = fixture!(Engine::Postgres);
        let Some(app_url) = application_role_url(&f) else {
            return Ok(());
        };
        f.ledger.create_root("root", "op")?;
        f.ledger.grant("root", PostureLevel::Trust, "op")?;
        f.ledger.create_child("a", "root", "op")?;
        grant_the_documented_roles(&f)?;
        // The dashboard's handle, as the application role: it records, integrates, and signs
        // a checkpoint that covers what it recorded.
        let app = Ledger::open_with(&app_url, Config::default())?;
        let asked = AskedBy::actor("claude-code");
        let recorded = app.decide_and_record("a", "cargo build", false, &asked)?;
        assert_eq!(recorded.decision.verdict, session_ledger::Verdict::Approve);
        let done = app.integrate_decisions("op")?;
        assert_eq!((done.records, done.log_size, done.queued), (1, 1, 0));
        app.decide_and_record("a", "cargo test", false, &asked)?;
        let key = session_ledger::SignerKey::generate("example.com/ledger")?;
        let signed = app.checkpoint(&key, None, "op")?;
        let verified = app.verify_checkpoint(
            &signed.note,
            &key.verifier(),
            &session_ledger::CheckpointOptions::default(),
        )?;
        assert!(verified.ok, "{verified:?}");
        assert_eq!(app.decisions(&Default::default())?.len(), 2);
        // One more, left in the queue.
        let queued = app.decide_and_record("a", "cargo run", false, &asked)?;
        assert_eq!(app.decision(&queued.record)?.and_then(|r| r.seq), None);

        let before = f.snapshot();
        let mut shell = Shell::postgres(&app_url);
        let denied = "permission denied for table";
        let not_owner = "must be owner of";
        let mut edits = vec![
            (
                "UPDATE decisions SET verdict = 'approve', authority = 'trust'".to_owned(),
                denied,
            ),
            ("DELETE FROM decisions".to_owned(), denied),
            ("TRUNCATE decisions".to_owned(), denied),
            ("UPDATE decision_log SET seq = seq + 1".to_owned(), denied),
            ("DELETE FROM decision_log".to_owned(), denied),
            ("TRUNCATE decision_log".to_owned(), denied),
            ("UPDATE decision_queue SET id = id".to_owned(), denied),
            ("TRUNCATE decision_queue".to_owned(), denied),
            // The role may take a record out of the queue, as integration does, and the
            // schema lets it take out only what the log holds.
            (
                "DELETE FROM decision_queue".to_owned(),
                "a decision record leaves the queue only once it is in the log",
            ),
        ];
        for table in ["decisions", "decision_log", "decision_queue"] {
            edits.push((
                format!("ALTER TABLE {table} DISABLE TRIGGER USER"),
                not_owner,
            ));
        }
        for (sql, expected) in &edits {
            refused(&mut shell, sql, &[expected]);
        }
        assert_eq!(f.snapshot(), before);
        Ok(())
    }

    mod postgres_migrations {
        refinery::embed_migrations!("migrations/postgres");
    }

    /// A schema at PostgreSQL version 1 with a session in it, written as version 1 allowed:
    /// `created_at` as given.
    fn version_1_ledger_with_a_root_created_at(created_at: &str) -> Option<Place> {
        let place = Place::new()?;
        let mut client = place.client();
        postgres_migrations::migrations::runner()
            .set_target(refinery::Target::Version(1))
            .run(&mut client)
            .expect("migrate to version 1");
        client
            .execute(
                "INSERT INTO sessions (id, depth, origin, created_at)
                 VALUES ('root', 0, 'root', $1::text::timestamptz)",
                &[&created_at],
            )
            .expect("a root at version 1");
        client
            .execute(
                "INSERT INTO labels (session_id, taint, untrusted, materialized_at,
                                     materialized_how)
                 VALUES ('root', 'private', false, $1::text::timestamptz, 'born')",
                &[&T],
            )
            .expect("its label at version 1");
        Some(place)
    }

    /// The newest schema version of the PostgreSQL migrations.
    fn newest_postgres_version() -> i32 {
        postgres_migrations::migrations::runner()
            .get_migrations()
            .iter()
            .map(|m| m.version())
            .max()
            .expect("PostgreSQL migrations")
    }

    /// Migrates the empty schema `place` to PostgreSQL version 2 and writes a trail of `n` rows
    /// chained as the library chains them, appended by hand one statement each, as version 2's
    /// row triggers checked them.
    fn write_version_2_ledger_with_audit_rows(place: &Place, n: i64) {
        let mut client = place.client();
        postgres_migrations::migrations::runner()
            .set_target(refinery::Target::Version(2))
            .run(&mut client)
            .expect("migrate to version 2");
        let mut prev = session_ledger::GENESIS_HASH.to_owned();
        for seq in 1..=n {
            let (at, id) = (
                format!("2026-01-01T00:00:{seq:02}.000Z"),
                format!("root-{seq}"),
            );
            let hash =
                session_ledger::chain_hash(&prev, seq, &at, "op", "session.root", Some(&id), "{}");
            client
                .execute(
                    "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
                     VALUES ($1, $2::text::timestamptz, 'op', 'session.root', $3, '{}', $4, $5)",
                    &[&seq, &at, &id, &prev, &hash],
                )
                .expect("an audit row at version 2");
            prev = hash;
        }
    }

    #[test]
    fn a_version_2_ledger_upgrades_to_audit_checks_by_statement_and_its_chain_goes_on() -> TestResult
    {
        let Some(place) = Place::new() else {
            return Ok(());
        };
        write_version_2_ledger_with_audit_rows(&place, 3);
        let trail = "SELECT seq, at, actor, kind, session_id, detail, prev_hash, hash
                       FROM audit ORDER BY seq";
        let before = place.query(trail);
        let ledger = Ledger::init(place.url())?;
        let version = place.query("SELECT max(version) FROM refinery_schema_history");
        assert_eq!(version[0][0], Some(newest_postgres_version().to_string()));
        assert_eq!(place.query(trail), before, "the upgrade changed the trail");
        // The audit table's insert checks are statement triggers now, none per row.
        let insert_triggers = place.query(
            "SELECT tgname, (tgtype & 1) = 1 AS per_row FROM pg_trigger
              WHERE tgrelid = 'audit'::regclass AND NOT tgisinternal AND (tgtype & 4) = 4
              ORDER BY 1",
        );
        let expected: Vec<Vec<Option<String>>> = [
            "audit_extends_the_chain",
            "audit_kind_is_known",
            "audit_time_never_goes_back",
        ]
        .iter()
        .map(|name| vec![Some((*name).to_owned()), Some("f".to_owned())])
        .collect();
        assert_eq!(insert_triggers, expected);
        // The library's next row extends the trail written before the upgrade.
        ledger.create_root("after-upgrade", "op")?;
        let v = ledger.verify(None)?;
        assert!(v.ok, "{v:?}");
        assert_eq!((v.rows, ledger.audit_head()?.seq), (4, 4_i64));
        Ok(())
    }

    #[test]
    fn a_writer_of_one_ledger_never_waits_for_a_writer_of_another_in_the_same_database(
    ) -> TestResult {
        let config = Config::default()
            .create_if_missing(true)
            .busy_timeout(Duration::from_secs(1));
        let held = fixture!(Engine::Postgres, config.clone());
        let Some(other) = Place::new() else {
            return Ok(());
        };
        let held_ledger = &held.ledger;
        let other_ledger = Ledger::open_with(other.url(), config)?;
        held_ledger.create_root("root", "op")?;
        other_ledger.create_root("root", "op")?;
        let mut holder = held.place().client();
        holder.batch_execute(&format!("BEGIN; {}", common::postgres_place::WRITE_LOCK))?;
        // The other ledger's writers go on while the held one's lock is taken...
        other_ledger.create_child("child", "root", "op")?;
        // ...and the held one's wait for it, until their busy timeout.
        let waited = held_ledger.create_child("child", "root", "op");
        assert!(
            matches!(&waited, Err(session_ledger::Error::Storage(e)) if e.is_busy()),
            "{waited:?}"
        );
        holder.batch_execute("COMMIT")?;
        held_ledger.create_child("child", "root", "op")?;
        Ok(())
    }

    #[test]
    fn a_version_1_ledger_upgrades_to_times_held_in_range_and_keeps_its_rows() -> TestResult {
        let Some(place) = version_1_ledger_with_a_root_created_at(T) else {
            return Ok(());
        };
        let ledger = Ledger::init(place.url())?;
        assert_eq!(
            ledger.session("root")?.map(|s| s.id),
            Some("root".to_owned())
        );
        let version = place.query("SELECT max(version) FROM refinery_schema_history");
        assert_eq!(version[0][0], Some(newest_postgres_version().to_string()));
        let refused = place.exec("UPDATE sessions SET ended_at = 'infinity' WHERE id = 'root'");
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.contains("sessions_ended_at_in_range")),
            "{refused:?}"
        );
        Ok(())
    }

    #[test]
    fn a_version_1_ledger_holding_an_infinite_time_is_not_upgraded_and_left_as_it_was() -> TestResult
    {
        let Some(place) = version_1_ledger_with_a_root_created_at("infinity") else {
            return Ok(());
        };
        let before = place.dump();
        let refused = Ledger::init(place.url());
        let Err(e) = &refused else {
            panic!("a ledger with an infinite time was opened: {refused:?}");
        };
        assert!(
            e.to_string().contains("sessions_created_at_in_range"),
            "{e}"
        );
        assert_eq!(
            place.dump(),
            before,
            "the failed migration left nothing behind"
        );
        Ok(())
    }

    #[test]
    fn every_time_column_is_a_timestamptz_held_to_whole_milliseconds() -> TestResult {
        let f = fixture!(Engine::Postgres);
        f.build("root > a b");
        f.ledger.state("a")?;
        let head = f.ledger.audit_head()?;
        let before = f.snapshot();
        let columns = time_columns(&head);
        // Every column of the ledger's tables that holds a time, or is named for one, is a
        // timestamptz, and they are the columns the contract lists.
        let typed = f.query(
            "SELECT c.table_name || '.' || c.column_name, c.data_type
               FROM information_schema.columns AS c
               JOIN information_schema.tables AS t USING (table_schema, table_name)
              WHERE t.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
                AND t.table_name <> 'refinery_schema_history'
                AND (c.data_type LIKE '%time%' OR c.data_type = 'date'
                     OR c.column_name LIKE '%\\_at')
                -- checkpoints.signed_at and archives.made_at are no times the chain hashes:
                -- their CHECKs are C37's and C42's.
                AND (t.table_name, c.column_name) <> ('checkpoints', 'signed_at')
                AND (t.table_name, c.column_name) <> ('archives', 'made_at')
              ORDER BY 1",
        );
        let mut expected: Vec<Vec<Option<String>>> = columns
            .iter()
            .map(|(column, _)| {
                vec![
                    Some((*column).to_owned()),
                    Some("timestamp with time zone".to_owned()),
                ]
            })
            .collect();
        expected.sort();
        assert_eq!(typed, expected);
        // Whole milliseconds: the precision the library stores, and the chain hashes.
        let mut shell = f.shell();
        let check = says(Engine::Postgres).check;
        for (column, template) in &columns {
            accepted(&mut shell, &template.replace(AT, LATER));
            for finer in [
                "2999-01-01T00:00:00.000001Z",
                "2999-01-01T00:00:00.123456Z",
                "2999-01-01T01:00:00.0005+01:00",
            ] {
                let sql = template.replace(AT, finer);
                let err = shell
                    .run(&format!("BEGIN; {sql}; COMMIT;"))
                    .expect_err(&format!("{column} took the time {finer:?}"));
                shell.run("ROLLBACK").ok();
                assert!(
                    err.contains(check),
                    "{column}: {finer:?} refused with `{err}`"
                );
            }
        }
        assert_eq!(f.snapshot(), before);
        Ok(())
    }
}

engine_tests! {
    a_session_is_a_root_exactly_when_it_has_no_creator_and_sits_at_depth_zero,
    no_column_of_a_sessions_lineage_can_be_changed_by_hand,
    only_a_root_is_born_with_a_label_and_only_with_the_default,
    where_a_label_came_from_cannot_be_changed_by_hand,
    a_posture_row_says_consistently_whether_it_was_granted_or_inherited,
    epochs_cannot_be_changed_or_removed_by_hand,
    grants_written_by_hand_keep_their_form,
    audit_kinds_cannot_be_changed_or_removed_by_hand,
    the_audit_time_order_row_cannot_be_added_changed_or_removed_by_hand,
    an_audit_detail_outside_its_one_json_form_is_refused,
    rows_leave_only_into_an_archive_and_only_up_to_its_boundary,
    every_enum_column_refuses_a_word_outside_its_set,
    every_time_column_refuses_a_time_of_another_form,
    with_foreign_keys_on_no_row_can_name_a_session_epoch_or_kind_that_does_not_exist,
    a_second_row_for_the_same_key_is_refused_in_every_table,
    a_decision_record_written_by_hand_keeps_its_form,
    a_record_appended_by_hand_is_queued_and_leaves_the_queue_only_for_the_log,
    the_hash_input_given_in_the_contract_is_what_the_library_hashes_and_stores,
    writers_in_several_processes_append_to_one_chain_in_one_order,
    a_write_waits_for_a_transaction_holding_the_write_lock_and_then_succeeds,
    a_read_transaction_sees_one_state_while_the_library_commits_beside_it,
}

// ------------------------------------------------------------------------------------------------
// Version 9: the triggers as version 8 defined them, each naming its item
// ------------------------------------------------------------------------------------------------

/// Every object of the schema on `conn`: `(type, name) -> (tbl_name, sql)`.
fn schema(conn: &Connection) -> BTreeMap<(String, String), (String, Option<String>)> {
    let mut stmt = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema")
        .expect("prepare");
    let rows = stmt
        .query_map([], |r| Ok(((r.get(0)?, r.get(1)?), (r.get(2)?, r.get(3)?))))
        .expect("read the schema");
    rows.collect::<Result<_, _>>().expect("read the schema")
}

/// A ledger as version 8 of this software left it, at `path`.
fn version_8_ledger(path: &Path) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open(path)?;
    // Version 3 chains existing rows with sha3(), which the library registers and the stock
    // shell has built in.
    with_sha3(&conn)?;
    embedded::migrations::runner()
        .set_target(refinery::Target::Version(8))
        .run(&mut conn)
        .expect("migrate to version 8");
    conn.execute_batch("PRAGMA application_id = 1397515367;")?;
    Ok(conn)
}

/// A ledger as version 9 of this software left it, at `path`: the version that named each
/// trigger's contract item and changed nothing else.
fn version_9_ledger(path: &Path) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open(path)?;
    with_sha3(&conn)?;
    embedded::migrations::runner()
        .set_target(refinery::Target::Version(9))
        .run(&mut conn)
        .expect("migrate to version 9");
    conn.execute_batch("PRAGMA application_id = 1397515367;")?;
    Ok(conn)
}

/// A fresh ledger, created by the library and read with a plain connection.
fn fresh_ledger(dir: &Path) -> Connection {
    let path = dir.join("fresh.db");
    drop(Ledger::init(&path).expect("create a ledger"));
    raw(&path)
}

/// The `-- contract C<n>: words` lines of a trigger's SQL, with their line index.
fn contract_lines(sql: &str) -> Vec<(usize, String, String)> {
    sql.lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let rest = line.trim_start().strip_prefix("-- contract ")?;
            let (item, words) = rest.split_once(':').unwrap_or((rest, ""));
            Some((i, item.to_owned(), words.trim().to_owned()))
        })
        .collect()
}

/// `sql` without its contract lines.
fn without_contract_lines(sql: &str) -> String {
    let lines: Vec<&str> = sql
        .split('\n')
        .filter(|l| !l.trim_start().starts_with("-- contract "))
        .collect();
    lines.join("\n")
}

#[test]
fn every_trigger_is_defined_as_in_version_8_apart_from_its_contract_line() -> TestResult {
    let dir = tempfile::tempdir()?;
    let v8 = schema(&version_8_ledger(&dir.path().join("v8.db"))?);
    let fresh = schema(&version_9_ledger(&dir.path().join("v9.db"))?);
    let mut problems = Vec::new();
    let keys: BTreeSet<_> = v8.keys().chain(fresh.keys()).collect();
    for key in keys {
        let (kind, name) = key;
        let (Some(old), Some(new)) = (v8.get(key), fresh.get(key)) else {
            problems.push(format!(
                "the {kind} `{name}` is in only one of version 8 and a fresh ledger"
            ));
            continue;
        };
        if kind == "trigger" {
            let sql = new.1.as_deref().unwrap_or("");
            let lines = contract_lines(sql);
            if lines.len() != 1 {
                problems.push(format!(
                    "the trigger `{name}` has {} contract lines; it needs one",
                    lines.len()
                ));
            }
            let same = old.0 == new.0 && old.1.as_deref() == Some(&without_contract_lines(sql));
            if !same {
                problems.push(format!(
                    "the trigger `{name}` differs from version 8's by more than its contract \
                     line:\n--- version 8\n{}\n--- now\n{sql}",
                    old.1.as_deref().unwrap_or("")
                ));
            }
        } else if old != new && name != "refinery_schema_history" {
            problems.push(format!("the {kind} `{name}` differs from version 8's"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Drift(problems.join("\n")).into())
    }
}

#[test]
fn a_version_8_ledger_upgrades_to_triggers_that_name_their_items_and_keeps_every_row() -> TestResult
{
    let dir = tempfile::tempdir()?;
    let old = dir.path().join("old.db");
    {
        let conn = version_8_ledger(&old)?;
        conn.execute_batch(&format!(
            "INSERT INTO sessions (id, depth, origin, created_at)
                  VALUES ('conductor', 0, 'root', '{T}');
             INSERT INTO sessions (id, created_by, depth, origin, created_at)
                  VALUES ('worker', 'conductor', 1, 'created', '{T}');
             INSERT INTO labels (session_id, taint, untrusted, materialized_at, materialized_how)
                  VALUES ('conductor', 'private', 0, '{T}', 'born');
             UPDATE labels SET taint = 'secret', raised_at = '{T}' WHERE session_id = 'conductor';
             INSERT INTO postures (session_id, posture, source, granted_by, granted_at,
                                   granted_on, inherited_from, allocated_at, chain, epoch)
                  VALUES ('conductor', 'trust', 'granted', 'alice', '{T}', 'conductor', NULL,
                          '{T}', '[\"conductor\"]', 0);
             INSERT INTO command_patterns (session_id, pattern, added_by, added_at)
                  VALUES ('worker', 'npm test', 'alice', '{T}');"
        ))?;
        let mut prev = session_ledger::GENESIS_HASH.to_owned();
        for (seq, kind, session) in [
            (1, "session.root", "conductor"),
            (2, "session.create", "worker"),
            (3, "posture.grant", "conductor"),
        ] {
            let hash =
                session_ledger::chain_hash(&prev, seq, T, "alice", kind, Some(session), "{}");
            conn.execute(
                "INSERT INTO audit (seq, at, actor, kind, session_id, detail, prev_hash, hash)
                 VALUES (?1, ?2, 'alice', ?3, ?4, '{}', ?5, ?6)",
                (seq, T, kind, session, &prev, &hash),
            )?;
            prev = hash;
        }
    }
    let rows = |path: &Path| -> Vec<String> {
        common::cli::dump(path)
            .expect("read every table")
            .into_iter()
            .filter(|r| !r.starts_with("refinery_schema_history:"))
            .collect()
    };
    let before = rows(&old);
    assert!(before.iter().any(|r| r.starts_with("audit:")));
    let ledger = Ledger::init(&old)?;
    assert!(ledger.verify(None)?.ok);
    drop(ledger);
    // Version 10 adds one kind, and no other row.
    let mut expected = before.clone();
    expected.push(
        "audit_kinds: [Text(\"checkpoint.sign\"), Text(\"a checkpoint of the audit tree was signed; \
         detail: {\\\"origin\\\", \\\"size\\\", \\\"root\\\", \\\"key\\\"}\")]"
            .to_owned(),
    );
    // Version 11 says in two kinds' meanings that a revocation writes them too.
    for (kind, said) in [
        ("pattern.remove", "detail: {\\\"pattern\\\"}"),
        (
            "scope.revoke",
            "detail: {\\\"scope\\\", \\\"expires_at\\\"}",
        ),
    ] {
        let row = expected
            .iter_mut()
            .find(|r| r.starts_with(&format!("audit_kinds: [Text(\"{kind}\")")))
            .expect("the kind is there before the upgrade");
        *row = row.replace(
            said,
            &format!(
                "{said}, and when a posture revocation reached it, {{\\\"propagation\\\", \
                 \\\"revocation\\\", \\\"root\\\"}}"
            ),
        );
    }
    // Version 12 adds one kind, for decision records, and no other row.
    expected.push(
        "audit_kinds: [Text(\"decisions.integrate\"), Text(\"a batch of decision records was \
         given positions in the decision log; detail: {\\\"first\\\", \\\"count\\\", \\\"root\\\"}: \
         the first position, how many, and the RFC 6962 root over their leaves (docs/audit.md, \
         \\\"Decision records\\\")\")]"
            .to_owned(),
    );
    // Version 13 adds one kind, for ledger options, and no other row.
    expected.push(
        "audit_kinds: [Text(\"ledger.option\"), Text(\"an operator set an option of the ledger; \
         detail: {\\\"option\\\", \\\"value\\\", \\\"was\\\"}: its name, 'on' or 'off', and what it \
         was\")]"
            .to_owned(),
    );
    // Version 15 adds one kind, for archives, and no other row.
    expected.push(
        "audit_kinds: [Text(\"archive.make\"), Text(\"ended trees and the trail up to a signed \
         checkpoint were written to an archive file, which verified, and now leave the live \
         ledger; detail: {\\\"archive\\\", \\\"file\\\", \\\"sha256\\\", \\\"trail_size\\\", \\\"trees\\\", \
         \\\"sessions\\\"}: its number, the file as named, the SHA-256 of its bytes, the boundary, \
         and how many trees and sessions it took (docs/operations.md, \\\"Archiving\\\")\")]"
            .to_owned(),
    );
    expected.sort();
    assert_eq!(rows(&old), expected, "the upgrade changed rows");
    let conn = raw(&old);
    let version: i64 = conn.query_row(
        "SELECT max(version) FROM refinery_schema_history",
        [],
        |r| r.get(0),
    )?;
    assert_eq!(version, session_ledger::schema_version());
    let upgraded = schema(&conn);
    for ((kind, name), (_, sql)) in &upgraded {
        if kind == "trigger" {
            assert_eq!(
                contract_lines(sql.as_deref().unwrap_or("")).len(),
                1,
                "{name}"
            );
        }
    }
    let fresh = schema(&fresh_ledger(dir.path()));
    let without_history = |s: &BTreeMap<(String, String), (String, Option<String>)>| {
        s.iter()
            .filter(|((_, name), _)| !name.starts_with("refinery"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(without_history(&upgraded), without_history(&fresh));
    Ok(())
}

// ------------------------------------------------------------------------------------------------
// The doc and the schemas held together
// ------------------------------------------------------------------------------------------------

/// The doc's problems, one a line; printed as they are when a test fails.
struct Drift(String);

impl fmt::Debug for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Drift {}

fn fail_with(problems: Vec<String>) -> TestResult {
    if problems.is_empty() {
        return Ok(());
    }
    Err(Drift(format!(
        "{DOC} and the schema disagree ({}):\n{}",
        problems.len(),
        problems.join("\n")
    ))
    .into())
}

/// One field of an item: `- Rule:`, `- SQLite:`, `- PostgreSQL:` or `- Tests:`, with its
/// continuation lines.
struct Field {
    line: usize,
    text: String,
}

/// One item of the contract: `### C<n>. Title` and its fields.
struct Item {
    id: String,
    line: usize,
    rule: Option<Field>,
    sqlite: Option<Field>,
    postgres: Option<Field>,
    tests: Option<Field>,
}

impl Item {
    /// The backticked names of the `- SQLite:` field.
    fn enforced_by(&self) -> Vec<String> {
        self.sqlite
            .as_ref()
            .map(|f| backticked(&f.text))
            .unwrap_or_default()
    }

    /// The backticked names of the `- PostgreSQL:` field.
    fn enforced_on_postgres_by(&self) -> Vec<String> {
        self.postgres
            .as_ref()
            .map(|f| backticked(&f.text))
            .unwrap_or_default()
    }
}

fn at(line: usize) -> String {
    format!("{DOC}:{line}")
}

/// The text between backticks, in order.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn contract_items() -> Vec<Item> {
    let text = fs::read_to_string(package_file(DOC)).expect("read docs/storage-contract.md");
    let mut items: Vec<Item> = Vec::new();
    let mut fenced = false;
    let mut open: Option<(&'static str, Field)> = None;
    let close = |items: &mut Vec<Item>, open: &mut Option<(&'static str, Field)>| {
        if let (Some((name, field)), Some(item)) = (open.take(), items.last_mut()) {
            let slot = match name {
                "rule" => &mut item.rule,
                "sqlite" => &mut item.sqlite,
                "postgres" => &mut item.postgres,
                _ => &mut item.tests,
            };
            *slot = Some(field);
        }
    };
    let mut in_item = false;
    for (i, line) in text.lines().enumerate() {
        let no = i + 1;
        if line.trim_start().starts_with("```") {
            close(&mut items, &mut open);
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if line.starts_with('#') {
            close(&mut items, &mut open);
            in_item = false;
            if let Some(heading) = line.strip_prefix("### ") {
                if let Some((id, _)) = heading.split_once(". ") {
                    if id.starts_with('C') && id[1..].bytes().all(|b| b.is_ascii_digit()) {
                        items.push(Item {
                            id: id.to_owned(),
                            line: no,
                            rule: None,
                            sqlite: None,
                            postgres: None,
                            tests: None,
                        });
                        in_item = true;
                    }
                }
            }
            continue;
        }
        if !in_item {
            continue;
        }
        if let Some((_, field)) = open.as_mut() {
            if line.starts_with("  ") && !line.trim().is_empty() {
                field.text.push(' ');
                field.text.push_str(line.trim());
                continue;
            }
            close(&mut items, &mut open);
        }
        for (prefix, name) in [
            ("- Rule:", "rule"),
            ("- SQLite:", "sqlite"),
            ("- PostgreSQL:", "postgres"),
            ("- Tests:", "tests"),
        ] {
            if let Some(rest) = line.strip_prefix(prefix) {
                open = Some((
                    name,
                    Field {
                        line: no,
                        text: rest.trim().to_owned(),
                    },
                ));
            }
        }
    }
    close(&mut items, &mut open);
    items
}

/// What a fresh ledger's schema holds: object names by type, columns by table, and every
/// object's SQL.
struct FreshSchema {
    _dir: tempfile::TempDir,
    objects: BTreeMap<String, String>,
    triggers: BTreeMap<String, String>,
    conn: Connection,
}

impl FreshSchema {
    fn new() -> FreshSchema {
        let dir = tempfile::tempdir().expect("temp dir");
        let conn = fresh_ledger(dir.path());
        let mut objects = BTreeMap::new();
        let mut triggers = BTreeMap::new();
        for ((kind, name), (_, sql)) in schema(&conn) {
            let sql = sql.unwrap_or_default();
            if kind == "trigger" {
                triggers.insert(name.clone(), sql.clone());
            }
            objects.insert(name, sql);
        }
        FreshSchema {
            _dir: dir,
            objects,
            triggers,
            conn,
        }
    }

    fn has_column(&self, table: &str, column: &str) -> bool {
        self.conn
            .query_row(
                "SELECT count(*) FROM pragma_table_info(:table) WHERE name = :column",
                rusqlite::named_params! { ":table": table, ":column": column },
                |r| r.get::<_, i64>(0),
            )
            .is_ok_and(|n| n == 1)
    }
}

/// Text without any whitespace, for comparing SQL and code fragments.
fn squeezed(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display())) {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = fs::read_to_string(&path).expect("read a source file");
            out.push((path, text));
        }
    }
}

fn is_identifier(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[test]
fn every_contract_item_names_its_rule_its_enforcement_and_its_tests() -> TestResult {
    const RULES: [&str; 24] = [
        "L1", "L2", "L3", "L4", "L5", "P1", "P2", "P3", "P4", "P5", "R1", "R2", "R3", "R4", "S1",
        "S2", "A1", "A2", "A3", "A4", "A5", "D1", "D2", "K1",
    ];
    let items = contract_items();
    let mut problems = Vec::new();
    if items.is_empty() {
        problems.push(format!("{DOC} has no items (`### C<n>. Title`)"));
    }
    let mut seen = BTreeSet::new();
    for item in &items {
        if !seen.insert(item.id.as_str()) {
            problems.push(format!(
                "{}: {} is a second item {0}",
                at(item.line),
                item.id
            ));
        }
        match &item.rule {
            None => problems.push(format!(
                "{}: {} has no `- Rule:` line",
                at(item.line),
                item.id
            )),
            Some(rule) => {
                let named: Vec<&str> = rule
                    .text
                    .split(|c: char| !c.is_ascii_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .collect();
                if named.is_empty() || named.iter().any(|r| !RULES.contains(r)) {
                    problems.push(format!(
                        "{}: {} serves {:?}, which are not all rules of docs/design.md",
                        at(rule.line),
                        item.id,
                        rule.text
                    ));
                }
            }
        }
        for (field, name) in [
            (&item.sqlite, "SQLite"),
            (&item.postgres, "PostgreSQL"),
            (&item.tests, "Tests"),
        ] {
            match field {
                None => problems.push(format!(
                    "{}: {} has no `- {name}:` line",
                    at(item.line),
                    item.id
                )),
                Some(f) if backticked(&f.text).is_empty() => problems.push(format!(
                    "{}: {}'s `- {name}:` line names nothing in backticks",
                    at(f.line),
                    item.id
                )),
                Some(_) => {}
            }
        }
    }
    fail_with(problems)
}

#[test]
fn every_trigger_names_a_contract_item_that_lists_it() -> TestResult {
    let schema = FreshSchema::new();
    let items = contract_items();
    let mut problems = Vec::new();
    for (name, sql) in &schema.triggers {
        let lines = contract_lines(sql);
        let [(index, id, words)] = lines.as_slice() else {
            problems.push(format!(
                "the trigger `{name}` has {} `-- contract C<n>: ...` lines in its body; it needs \
                 exactly one",
                lines.len()
            ));
            continue;
        };
        let after_begin = sql
            .lines()
            .nth(index.wrapping_sub(1))
            .is_some_and(|l| l.trim() == "BEGIN");
        if !after_begin || words.is_empty() {
            problems.push(format!(
                "the trigger `{name}`: its contract line is not `-- contract {id}: <short words>` \
                 right after BEGIN"
            ));
        }
        match items.iter().find(|i| &i.id == id) {
            None => problems.push(format!(
                "the trigger `{name}` names the contract item {id}, which {DOC} does not have"
            )),
            Some(item) if !item.enforced_by().iter().any(|n| n == name) => problems.push(format!(
                "{}: the trigger `{name}` names {id}, but {id}'s `- SQLite:` line does not \
                     list it",
                at(item.sqlite.as_ref().map_or(item.line, |f| f.line))
            )),
            Some(_) => {}
        }
    }
    fail_with(problems)
}

#[test]
fn every_trigger_constraint_and_fragment_the_contract_cites_exists() -> TestResult {
    let schema = FreshSchema::new();
    let all_sql = squeezed(
        &schema
            .objects
            .values()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let mut code = Vec::new();
    sources(&package_file("src"), &mut code);
    let all_code = squeezed(
        &code
            .iter()
            .map(|(_, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let mut problems = Vec::new();
    for item in contract_items() {
        let Some(field) = &item.sqlite else { continue };
        for cited in backticked(&field.text) {
            let place = at(field.line);
            let id = &item.id;
            if is_identifier(&cited) {
                if !schema.objects.contains_key(&cited) {
                    problems.push(format!(
                        "{place}: {id} cites `{cited}`, but a fresh ledger has no trigger, \
                         index, table or view of that name"
                    ));
                }
            } else if let Some((table, column)) = cited
                .split_once('.')
                .filter(|(t, c)| is_identifier(t) && is_identifier(c))
            {
                if !schema.has_column(table, column) {
                    problems.push(format!(
                        "{place}: {id} cites the column `{cited}`, which a fresh ledger does \
                         not have"
                    ));
                }
            } else if let Some(function) = cited.strip_suffix("()").filter(|f| is_identifier(f)) {
                let definition = format!("fn {function}(");
                if !code.iter().any(|(_, text)| text.contains(&definition)) {
                    problems.push(format!(
                        "{place}: {id} cites `{cited}`, but no `{definition}` is under src/"
                    ));
                }
            } else {
                let fragment = squeezed(&cited);
                if !all_sql.contains(&fragment) && !all_code.contains(&fragment) {
                    problems.push(format!(
                        "{place}: {id} cites `{cited}`, which is neither in a fresh ledger's \
                         schema nor in the engine's code under src/"
                    ));
                }
            }
        }
    }
    fail_with(problems)
}

/// On which engines a cited test runs, as the `- Tests:` line says before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Runs {
    /// `both engines:`, a test of `engine_tests!`.
    Both,
    /// `SQLite only:`, a plain test that never takes a PostgreSQL fixture.
    Sqlite,
    /// `PostgreSQL only:`, a plain test that takes a PostgreSQL fixture.
    Postgres,
    /// `no database:`, a plain test that opens no ledger.
    NoDatabase,
}

const RUNS: [(&str, Runs); 4] = [
    ("both engines:", Runs::Both),
    ("SQLite only:", Runs::Sqlite),
    ("PostgreSQL only:", Runs::Postgres),
    ("no database:", Runs::NoDatabase),
];

/// The backticked names of `text`, each with the engines the nearest marker before it says
/// (`None` when there is none).
fn tests_by_engine(text: &str) -> Vec<(String, Option<Runs>)> {
    let mut out = Vec::new();
    let mut runs = None;
    for (i, piece) in text.split('`').enumerate() {
        if i % 2 == 1 {
            out.push((piece.to_owned(), runs));
        } else if let Some((_, r)) = RUNS
            .iter()
            .filter_map(|(marker, r)| piece.rfind(marker).map(|at| (at, *r)))
            .max_by_key(|(at, _)| *at)
        {
            runs = Some(r);
        }
    }
    out
}

/// The names `engine_tests! { ... }` lists in a test file's text.
fn engine_tests_of(text: &str) -> BTreeSet<String> {
    let Some(start) = text.find("\nengine_tests! {") else {
        return BTreeSet::new();
    };
    let body = &text[start..];
    let body = &body[..body.find('}').unwrap_or(body.len())];
    body.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| is_identifier(w) && *w != "engine_tests")
        .map(str::to_owned)
        .collect()
}

/// The text of `fn name(` in `text`, up to the next function or test attribute.
fn function_text<'t>(text: &'t str, name: &str) -> Option<&'t str> {
    let start = text.find(&format!("fn {name}("))?;
    let rest = &text[start + 3..];
    let end = ["\nfn ", "\n    fn ", "#[test]"]
        .iter()
        .filter_map(|next| rest.find(next))
        .min()
        .unwrap_or(rest.len());
    Some(&text[start..start + 3 + end])
}

#[test]
fn every_test_the_contract_cites_exists_on_the_engines_it_names() -> TestResult {
    let mut problems = Vec::new();
    for item in contract_items() {
        let Some(field) = &item.tests else { continue };
        for (cited, runs) in tests_by_engine(&field.text) {
            let place = at(field.line);
            let id = &item.id;
            let Some((file, name)) = cited.split_once("::") else {
                problems.push(format!(
                    "{place}: {id} cites `{cited}` as a test; write `tests/FILE.rs::name`"
                ));
                continue;
            };
            if !(file.starts_with("tests/") || file.starts_with("src/")) || !file.ends_with(".rs") {
                problems.push(format!(
                    "{place}: {id} cites a test in `{file}`, which is not a file under tests/ or \
                     src/"
                ));
                continue;
            }
            let Ok(text) = fs::read_to_string(package_file(file)) else {
                problems.push(format!(
                    "{place}: {id} cites a test in `{file}`, which does not exist"
                ));
                continue;
            };
            let Some(function) = function_text(&text, name) else {
                problems.push(format!(
                    "{place}: {id} cites the test `{name}`, but `{file}` has no `fn {name}(`"
                ));
                continue;
            };
            let Some(runs) = runs else {
                problems.push(format!(
                    "{place}: {id} cites `{cited}` without saying where it runs (`both \
                     engines:`, `SQLite only:`, `PostgreSQL only:` or `no database:` before it)"
                ));
                continue;
            };
            let on_both = engine_tests_of(&text).contains(name);
            // A PostgreSQL fixture, or a bare schema on the test server.
            let takes_postgres = ["Engine::Postgres", "Place::new()"]
                .iter()
                .any(|fixture| function.contains(fixture));
            let opens_a_ledger = ["fixture!", "Fixture", "Ledger::open"]
                .iter()
                .any(|call| function.contains(call));
            let wrong = match runs {
                Runs::Both => (!on_both).then_some("is not in the file's `engine_tests!`"),
                _ if on_both => Some("is in the file's `engine_tests!`: it runs on both engines"),
                Runs::Sqlite => takes_postgres.then_some("takes a PostgreSQL fixture"),
                Runs::Postgres => (!takes_postgres).then_some("takes no PostgreSQL fixture"),
                Runs::NoDatabase => opens_a_ledger.then_some("opens a ledger"),
            };
            if let Some(wrong) = wrong {
                problems.push(format!(
                    "{place}: {id} says `{cited}` runs on {runs:?}, but it {wrong}"
                ));
            }
        }
    }
    fail_with(problems)
}

/// What the PostgreSQL schema defines, read from its migration: the names it creates, the
/// columns of each table, and its text.
struct PostgresSchema {
    /// Trigger names, each with the table it is on.
    triggers: BTreeMap<String, String>,
    /// Every table, index, view, function and trigger name.
    objects: BTreeSet<String>,
    /// `table.column` of every table's columns.
    columns: BTreeSet<String>,
    /// The types its columns are declared with (`text`, `timestamptz`, ...).
    types: BTreeSet<String>,
    text: String,
}

impl PostgresSchema {
    fn read() -> PostgresSchema {
        let mut files: Vec<PathBuf> = fs::read_dir(package_file(POSTGRES_SCHEMA))
            .expect("the PostgreSQL migrations")
            .map(|entry| entry.expect("a migration").path())
            .collect();
        // In version order (V1, V2, …, as refinery runs them), one text.
        files.sort_by_key(|path| {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            name.trim_start_matches('V')
                .split("__")
                .next()
                .and_then(|v| v.parse::<u32>().ok())
                .unwrap_or(u32::MAX)
        });
        let text: String = files
            .iter()
            .map(|path| fs::read_to_string(path).expect("read a PostgreSQL migration") + "\n")
            .collect();
        let mut schema = PostgresSchema {
            triggers: BTreeMap::new(),
            objects: BTreeSet::new(),
            columns: BTreeSet::new(),
            types: BTreeSet::new(),
            text: String::new(),
        };
        let mut lines = text.lines().peekable();
        while let Some(line) = lines.next() {
            let name_after = |prefix: &str| {
                line.strip_prefix(prefix).map(|rest| {
                    rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or("")
                        .to_owned()
                })
            };
            if let Some(trigger) = name_after("CREATE TRIGGER ") {
                // `BEFORE event ON table` is the statement's next line.
                let table = lines
                    .peek()
                    .and_then(|l| l.split_once(" ON "))
                    .and_then(|(_, after)| after.split_whitespace().next())
                    .unwrap_or_default()
                    .to_owned();
                schema.objects.insert(trigger.clone());
                schema.triggers.insert(trigger, table);
            } else if let Some(table) = name_after("CREATE TABLE ") {
                for column in lines.by_ref().take_while(|l| !l.starts_with(");")) {
                    let column = column.trim();
                    let mut words = column.split_whitespace();
                    let word = words.next().unwrap_or("");
                    let constraint = ["CHECK", "PRIMARY", "UNIQUE", "FOREIGN", "--"]
                        .iter()
                        .any(|k| word.starts_with(k));
                    if column.starts_with(|c: char| c.is_ascii_lowercase()) && !constraint {
                        schema.columns.insert(format!("{table}.{word}"));
                        if let Some(declared) = words.next() {
                            schema.types.insert(declared.to_owned());
                        }
                    }
                }
                schema.objects.insert(table);
            } else if let Some(name) = ["CREATE INDEX ", "CREATE VIEW ", "CREATE FUNCTION "]
                .iter()
                .find_map(|prefix| name_after(prefix))
            {
                schema.objects.insert(name);
            } else if let Some(name) = line
                .trim_start()
                .strip_prefix("ADD CONSTRAINT ")
                .and_then(|rest| rest.split_whitespace().next())
            {
                // A constraint a later migration adds to a table (`ALTER TABLE … ADD CONSTRAINT`).
                schema.objects.insert(name.to_owned());
            } else if let Some(trigger) = name_after("DROP TRIGGER ") {
                // What a later migration drops is gone, unless a still later line creates it
                // again under the same name.
                schema.objects.remove(&trigger);
                schema.triggers.remove(&trigger);
            } else if let Some(name) = name_after("DROP FUNCTION ").or_else(|| {
                line.trim_start()
                    .strip_prefix("DROP CONSTRAINT ")
                    .map(|rest| rest.trim_end_matches([',', ';']).trim().to_owned())
            }) {
                // A trigger keeps its name in `objects` when only its namesake function goes.
                if !schema.triggers.contains_key(&name) {
                    schema.objects.remove(&name);
                }
            }
        }
        schema.text = text;
        schema
    }
}

#[test]
fn every_trigger_constraint_and_fragment_a_postgres_line_cites_exists() -> TestResult {
    let schema = PostgresSchema::read();
    assert!(
        schema.triggers.len() >= 30 && schema.columns.contains("audit.prev_hash"),
        "{POSTGRES_SCHEMA} read as {} triggers and {} columns",
        schema.triggers.len(),
        schema.columns.len()
    );
    let mut engine = Vec::new();
    sources(&package_file("src/storage/postgres"), &mut engine);
    let mut code = Vec::new();
    sources(&package_file("src"), &mut code);
    let roles = fs::read_to_string(package_file("docs/postgres-roles.sql"))?;
    let verify = fs::read_to_string(package_file("docs/postgres-verify.sql"))?;
    // A fragment is in the schema, in the engine's code, in the documented role setup, or in
    // the psql verifier.
    let places = squeezed(
        &[schema.text.as_str(), roles.as_str(), verify.as_str()]
            .into_iter()
            .chain(engine.iter().map(|(_, t)| t.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let mut problems = Vec::new();
    for item in contract_items() {
        let Some(field) = &item.postgres else {
            continue;
        };
        for cited in backticked(&field.text) {
            let place = at(field.line);
            let id = &item.id;
            if is_identifier(&cited) {
                if !schema.objects.contains(&cited) && !schema.types.contains(&cited) {
                    problems.push(format!(
                        "{place}: {id} cites `{cited}`, but {POSTGRES_SCHEMA} creates no \
                         trigger, function, index, table, view or constraint of that name, nor declares a \
                         column of that type"
                    ));
                }
            } else if let Some((table, column)) = cited
                .split_once('.')
                .filter(|(t, c)| is_identifier(t) && is_identifier(c))
            {
                if !schema.columns.contains(&format!("{table}.{column}")) {
                    problems.push(format!(
                        "{place}: {id} cites the column `{cited}`, which {POSTGRES_SCHEMA} does \
                         not create"
                    ));
                }
            } else if let Some(function) = cited.strip_suffix("()").filter(|f| is_identifier(f)) {
                let definition = format!("fn {function}(");
                let in_sql = format!("CREATE FUNCTION {function}(");
                if !code.iter().any(|(_, text)| text.contains(&definition))
                    && !schema.text.contains(&in_sql)
                {
                    problems.push(format!(
                        "{place}: {id} cites `{cited}`, but no `{definition}` is under src/ and \
                         no `{in_sql}` in {POSTGRES_SCHEMA}"
                    ));
                }
            } else if cited.starts_with("docs/") || cited.starts_with("migrations/") {
                if !package_file(&cited).is_file() {
                    problems.push(format!(
                        "{place}: {id} cites the file `{cited}`, which does not exist"
                    ));
                }
            } else if !places.contains(&squeezed(&cited)) {
                problems.push(format!(
                    "{place}: {id} cites `{cited}`, which is not in {POSTGRES_SCHEMA}, the \
                     engine's code under src/storage/postgres/, docs/postgres-roles.sql or \
                     docs/postgres-verify.sql"
                ));
            }
        }
    }
    fail_with(problems)
}

#[test]
fn every_postgres_trigger_is_cited_by_the_item_its_sqlite_namesake_names() -> TestResult {
    let schema = PostgresSchema::read();
    let sqlite = FreshSchema::new();
    let items = contract_items();
    let mut problems = Vec::new();
    for (trigger, table) in &schema.triggers {
        let citing: Vec<&Item> = items
            .iter()
            .filter(|i| i.enforced_on_postgres_by().iter().any(|n| n == trigger))
            .collect();
        if citing.is_empty() {
            problems.push(format!(
                "the trigger `{trigger}` on {table} of {POSTGRES_SCHEMA} is on no item's \
                 `- PostgreSQL:` line"
            ));
        }
        // The same name keeps the same item on both engines.
        if let Some(sql) = sqlite.triggers.get(trigger) {
            for (_, id, _) in contract_lines(sql) {
                if !citing.iter().any(|i| i.id == id) {
                    problems.push(format!(
                        "the trigger `{trigger}` names {id} in the SQLite schema, but {id}'s \
                         `- PostgreSQL:` line does not cite it"
                    ));
                }
            }
        }
    }
    fail_with(problems)
}
