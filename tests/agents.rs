//! What the ledger gives agent runtimes, against the library on every engine: a child created
//! with its posture withheld (a sub-agent whose spawner cannot be established, rule G2) holds
//! none whatever its creator holds, inherits its creator's label on first read, and its create
//! row says why; and the class each tool falls in, which decides what the ledger does with it.

#[macro_use]
mod common;

use common::{Engine, TestResult};
use session_ledger::{
    AuditKind, AuditQuery, LedgerOption, Permission, PostureLevel, Raise, ReadOnly, Reason,
    ToolCall, ToolClass, Verdict,
};

fn a_child_created_withholding_its_posture_holds_none_and_its_create_row_says_why(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("conductor", "alice")?;
    f.ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    let untrusted = Raise {
        taint: None,
        untrusted: true,
    };
    f.ledger.raise("conductor", untrusted, "alice")?;
    let why = "two Agent calls of type general-purpose were waiting";
    let created = f
        .ledger
        .create_child_withholding("agent-1", "conductor", "claude-code", why)?;
    assert_eq!(
        (created.inherited_trust, created.inherited_trust_reads),
        (false, false)
    );
    let state = f.ledger.state("agent-1")?;
    assert!(!state.trust && !state.trust_reads, "{state:?}");
    assert!(state.untrusted, "the label is inherited as any child's");
    let asked = f
        .ledger
        .decide("agent-1", "make deploy", ReadOnly::Classify)?;
    assert_eq!(asked.verdict, Verdict::Ask);
    // Beside it, a child created the usual way holds the creator's posture.
    f.ledger
        .create_child("agent-2", "conductor", "claude-code")?;
    assert!(f.ledger.state("agent-2")?.trust);

    let rows = f.ledger.audit(&AuditQuery::all().session("agent-1"))?;
    let create = rows
        .iter()
        .find(|r| r.kind == AuditKind::SessionCreate)
        .expect("its create row");
    assert_eq!(create.detail["withheld"], why);
    assert_eq!(create.detail["inherited_trust"], false);
    assert!(f.verify_in_sql().is_none());

    for bad in ["", "   ", &"x".repeat(1_001)] {
        let e = f
            .ledger
            .create_child_withholding("agent-3", "conductor", "op", bad)
            .expect_err("refused");
        assert_eq!(e.kind(), "invalid_config", "{bad:?}");
    }
    assert!(f.ledger.session("agent-3")?.is_none());
    Ok(())
}

fn with_untrusted_asks_on_an_untrusted_sessions_trust_covers_only_what_reads(
    engine: Engine,
) -> TestResult {
    let f = fixture!(engine);
    f.ledger.create_root("conductor", "alice")?;
    f.ledger.grant("conductor", PostureLevel::Trust, "alice")?;
    f.ledger.add_pattern("conductor", "make test", "alice")?;
    let outside = Raise {
        taint: None,
        untrusted: true,
    };
    f.ledger.raise("conductor", outside, "claude-code")?;
    let verdict = |id: &str, command: &str| -> Result<_, session_ledger::Error> {
        f.ledger.decide(id, command, ReadOnly::Classify)
    };
    // Off, as a ledger starts: trust approves whatever the label says.
    assert!(!f.ledger.option(LedgerOption::UntrustedAsks)?);
    assert_eq!(verdict("conductor", "touch x")?.verdict, Verdict::Approve);

    assert!(!f
        .ledger
        .set_option(LedgerOption::UntrustedAsks, true, "alice")?);
    let asked = verdict("conductor", "touch x")?;
    assert_eq!(asked.verdict, Verdict::Ask);
    assert!(
        matches!(
            asked.reason,
            Reason::Nothing {
                untrusted: true,
                ..
            }
        ),
        "{asked:?}"
    );
    // What only reads is still approved by trust; a pattern still admits its command.
    assert_eq!(verdict("conductor", "ls -la")?.verdict, Verdict::Approve);
    assert!(matches!(
        verdict("conductor", "make test")?.reason,
        Reason::Pattern { .. }
    ));
    // Tool calls alike.
    let edit = ToolCall {
        tool: "Write",
        path: None,
        url: None,
        root: None,
    };
    let read = ToolCall {
        tool: "Read",
        path: None,
        url: None,
        root: None,
    };
    assert_eq!(
        f.ledger.decide_tool("conductor", &edit)?.verdict,
        Verdict::Ask
    );
    assert_eq!(
        f.ledger.decide_tool("conductor", &read)?.verdict,
        Verdict::Approve
    );
    // A child inherits the posture at its create and the label at its first read: it asks too,
    // and so does one never read yet.
    f.ledger.create_child("worker", "conductor", "alice")?;
    assert_eq!(verdict("worker", "touch x")?.verdict, Verdict::Ask);
    f.ledger.create_child("worker-2", "conductor", "alice")?;
    assert_eq!(
        f.ledger
            .decide("worker-2", "touch x", ReadOnly::No)?
            .verdict,
        Verdict::Ask
    );
    // A trusted session that read nothing from outside is not touched by it.
    f.ledger.create_root("clean", "alice")?;
    f.ledger.grant("clean", PostureLevel::Trust, "alice")?;
    assert_eq!(verdict("clean", "touch x")?.verdict, Verdict::Approve);

    assert!(f
        .ledger
        .set_option(LedgerOption::UntrustedAsks, false, "bob")?);
    assert_eq!(verdict("conductor", "touch x")?.verdict, Verdict::Approve);
    let rows = f.ledger.audit(&AuditQuery::all())?;
    let set: Vec<(&str, &str, &str)> = rows
        .iter()
        .filter(|r| r.kind == AuditKind::LedgerOption)
        .map(|r| {
            (
                r.actor.as_str(),
                r.detail["value"].as_str().unwrap_or(""),
                r.detail["was"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(set, [("alice", "on", "off"), ("bob", "off", "on")]);
    assert!(f.verify_in_sql().is_none());
    Ok(())
}

engine_tests! {
    a_child_created_withholding_its_posture_holds_none_and_its_create_row_says_why,
    with_untrusted_asks_on_an_untrusted_sessions_trust_covers_only_what_reads,
}

#[test]
fn each_tool_falls_in_the_class_that_decides_what_the_ledger_does_with_it() {
    for (tool, class) in [
        ("Bash", ToolClass::Shell),
        ("Read", ToolClass::ReadOnly),
        ("Grep", ToolClass::ReadOnly),
        ("Glob", ToolClass::ReadOnly),
        ("WebFetch", ToolClass::ReadOnly),
        ("WebSearch", ToolClass::ReadOnly),
        ("Edit", ToolClass::Edit),
        ("Write", ToolClass::Edit),
        ("NotebookEdit", ToolClass::Edit),
        ("mcp__github__create_issue", ToolClass::Mcp),
        ("Agent", ToolClass::Spawn),
        ("Task", ToolClass::Spawn),
        ("TodoWrite", ToolClass::Other),
        ("bash", ToolClass::Other),
    ] {
        assert_eq!(ToolClass::of(tool), class, "{tool}");
        assert_eq!(
            class.decided(),
            !matches!(class, ToolClass::Spawn | ToolClass::Other)
        );
    }
    assert_eq!(Permission::Deny.as_str(), "deny");
}
