//! What the ledger gives agent runtimes, against the library on every engine: a child created
//! with its posture withheld (a sub-agent whose spawner cannot be established, rule G2) holds
//! none whatever its creator holds, inherits its creator's label on first read, and its create
//! row says why; and the class each tool falls in, which decides what the ledger does with it.

#[macro_use]
mod common;

use common::{Engine, TestResult};
use session_ledger::{
    AuditKind, AuditQuery, Permission, PostureLevel, Raise, ReadOnly, ToolClass, Verdict,
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

engine_tests! {
    a_child_created_withholding_its_posture_holds_none_and_its_create_row_says_why,
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
