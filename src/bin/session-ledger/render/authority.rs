//! The text of authority: postures, decisions, revocations, command patterns and override
//! scopes.

use std::io::Write;

use session_ledger::{
    Affected, Authority, Classification, CommandPattern, Decision, Grant, PatternTest, Posture,
    PostureLevel, PostureSource, Reason, Revocation, RevocationKind, Scope, StandingGrant, Verdict,
    Withheld,
};

use super::text::{count, json_line, widest};
use crate::error::CliError;

/// `trust granted by alice`, or an inherited posture with the chain back to its grant.
pub fn posture_words(p: &Posture) -> String {
    let lapsed = if p.current {
        String::new()
    } else {
        format!(", lapsed with epoch {}", p.epoch)
    };
    match p.source {
        PostureSource::Granted => format!("{} granted by {}{lapsed}", p.level, p.granted_by),
        PostureSource::Inherited => format!(
            "{} inherited via {} from {}'s grant on {}{lapsed}",
            p.level,
            p.chain.join(" > "),
            p.granted_by,
            p.granted_on
        ),
    }
}

/// `decide`'s text: the verdict, and which posture, pattern or scope admitted the command or
/// why none did.
pub fn describe_decision(d: &Decision) -> String {
    let why = match &d.reason {
        Reason::Trust { posture } => posture_words(posture),
        Reason::TrustReads {
            posture,
            classification,
        } => match classification {
            Some(c) => format!(
                "{}; the ledger classifies it read-only ({})",
                posture_words(posture),
                c.parts
                    .iter()
                    .map(|p| p.word.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => posture_words(posture),
        },
        Reason::Pattern {
            pattern,
            added_by,
            parts,
        } if parts.len() <= 1 => format!(
            "pattern {pattern:?} added by {added_by}{}",
            read_through(parts.first().and_then(|p| p.inner.as_deref()))
        ),
        Reason::Pattern { parts, .. } => {
            let each: Vec<String> = parts
                .iter()
                .map(|p| {
                    format!(
                        "{:?}{} by pattern {:?} (added by {})",
                        p.part.text,
                        read_through(p.inner.as_deref()),
                        p.pattern,
                        p.added_by
                    )
                })
                .collect();
            format!("every part admitted: {}", each.join("; "))
        }
        Reason::ToolRule { rule, added_by } => format!("tool rule {rule:?} added by {added_by}"),
        Reason::Scope {
            scope,
            granted_by,
            expires_at,
        } => format!(
            "scope {scope} granted by {granted_by}: every command, until {}",
            session_ledger::format_ts(*expires_at)
        ),
        Reason::UnknownSession => "the ledger does not know this session".to_owned(),
        Reason::SessionEnded => "the session has ended".to_owned(),
        Reason::Nothing {
            reads_only,
            lapsed_epoch,
            unadmitted,
            refused,
            classification,
            kept,
            untrusted,
        } => {
            let base = match (reads_only, lapsed_epoch, classification) {
                _ if *untrusted => "its trust does not cover what is not read-only: the session \
                                    read content from outside, and the ledger's option \
                                    untrusted-asks is on"
                    .to_owned(),
                (true, _, Some(c)) => format!(
                    "trust_reads covers read-only commands only, and this one is not: {:?}: {}",
                    c.word, c.reason
                ),
                (true, _, None) => "trust_reads covers read-only commands only".to_owned(),
                (_, Some(epoch), _) => format!("its posture lapsed with epoch {epoch}"),
                _ => "no posture, pattern or scope admits it".to_owned(),
            };
            match (refused, unadmitted) {
                (Some(r), _) => format!("{base}; no pattern ever admits {r}"),
                (_, Some(p)) => {
                    let mut text = format!(
                        "{base}; no pattern admits the part {:?} at bytes {}..{}",
                        p.text, p.range.start, p.range.end
                    );
                    if let Some(k) = kept {
                        text.push_str(&format!(
                            ": the wildcard of pattern {:?} does not stand for {:?} ({})",
                            k.pattern, k.word, k.why
                        ));
                    }
                    text
                }
                _ => base,
            }
        }
        _ => "see --json".to_owned(),
    };
    let verdict = match d.verdict {
        Verdict::Approve => "approve",
        Verdict::Ask => "ask",
    };
    format!("{verdict}: {why}")
}

/// `classify`'s text: the verdict and the word that decided; each part on a line of its own
/// when the line has several.
pub fn describe_classification(c: &Classification) -> String {
    let verdict = |read_only: bool, word: &str, reason: &str, through: &[&str]| {
        let through = if through.is_empty() {
            String::new()
        } else {
            format!(", read through {}", through.join(", "))
        };
        if read_only {
            format!("read-only: {word:?} {reason}{through}")
        } else {
            format!("not read-only: {word:?}: {reason}{through}")
        }
    };
    let mut text = match c.parts.as_slice() {
        [one] => verdict(one.read_only, &one.word, &one.reason, &one.through),
        _ => verdict(c.read_only, &c.word, &c.reason, &[]),
    };
    if c.parts.len() > 1 {
        for (n, p) in c.parts.iter().enumerate() {
            text.push_str(&format!(
                "\n  part {}: {:?}: {}",
                n + 1,
                p.text,
                verdict(p.read_only, &p.word, &p.reason, &p.through)
            ));
        }
    }
    text
}

/// `, read through to "npm test"` when a pattern admitted a wrapper's inner command.
fn read_through(inner: Option<&str>) -> String {
    inner
        .map(|i| format!(", read through to {i:?}"))
        .unwrap_or_default()
}

/// The sessions a revocation changed (or would change, or left holding a posture), one line
/// each, the ids padded to the longest so that the columns after them line up.
fn print_affected(out: &mut dyn Write, sessions: &[Affected]) -> Result<(), CliError> {
    let id_w = widest(sessions, |a| a.id.len());
    let depth_w = widest(sessions, |a| a.depth.to_string().len());
    for a in sessions {
        let how = if a.granted_directly {
            "granted"
        } else {
            "inherited"
        };
        let lapsed = if a.current { "" } else { ", lapsed" };
        writeln!(
            out,
            "  {:<id_w$}  depth {:>depth_w$}  {} ({how}{lapsed})",
            a.id, a.depth, a.posture
        )?;
    }
    Ok(())
}

/// `revoke`'s output: what changed (or would, for a preview, with its token), and who still
/// holds a posture after a local revoke; or the revocation as JSON.
pub fn print_revocation(out: &mut dyn Write, json: bool, r: &Revocation) -> Result<(), CliError> {
    if json {
        return json_line(out, r);
    }
    let root = r.root.as_deref().unwrap_or("every session");
    match r.propagation {
        RevocationKind::Preview => writeln!(
            out,
            "a cascade from {root} would change {}:",
            count(r.count, "session", "sessions")
        )?,
        RevocationKind::Global => writeln!(
            out,
            "revoked {} (global)",
            count(r.count, "posture", "postures")
        )?,
        how => writeln!(
            out,
            "revoked {} ({how} from {root})",
            count(r.count, "posture", "postures")
        )?,
    }
    print_affected(out, &r.sessions)?;
    if let Some(holding) = &r.still_holding {
        let (n, verb) = match holding.len() {
            1 => ("1 descendant".to_owned(), "holds"),
            n => (format!("{n} descendants"), "hold"),
        };
        let colon = if holding.is_empty() { "" } else { ":" };
        writeln!(
            out,
            "{n} still {verb} a posture inherited through {root}{colon}"
        )?;
        print_affected(out, holding)?;
    }
    if !r.grants_revoked.is_empty() {
        writeln!(
            out,
            "revoked with it {}:",
            count(r.grants_revoked.len(), "grant", "grants")
        )?;
        print_standing(out, &r.grants_revoked)?;
    }
    let takes = takes_flags(&r.still_approving);
    if !r.still_approving.is_empty() {
        let n = count(r.still_approving.len(), "grant", "grants");
        let approve = if r.still_approving.len() == 1 {
            "approves"
        } else {
            "approve"
        };
        if r.propagation == RevocationKind::Preview {
            writeln!(
                out,
                "{n} would still approve on their own, unless the cascade takes them with {takes}:"
            )?;
        } else {
            writeln!(
                out,
                "{n} still {approve} on their own (a posture revocation leaves them standing; \
                 take them with {takes}):"
            )?;
        }
        print_standing(out, &r.still_approving)?;
    }
    if let Some(token) = &r.token {
        writeln!(out, "token: {token}")?;
        writeln!(
            out,
            "apply: session-ledger revoke {root} --cascade --token {token}"
        )?;
        if !r.still_approving.is_empty() {
            writeln!(
                out,
                "   or: session-ledger revoke {root} --cascade {takes} --token {token}"
            )?;
        }
    }
    Ok(())
}

/// The flags that take the kinds of grant in `grants`: `--scopes`, `--patterns`, or both.
fn takes_flags(grants: &[StandingGrant]) -> String {
    let scopes = grants
        .iter()
        .any(|g| matches!(g.grant, Grant::Scope { .. }));
    let patterns = grants
        .iter()
        .any(|g| matches!(g.grant, Grant::Pattern { .. }));
    match (scopes, patterns) {
        (true, true) => "--scopes --patterns",
        (true, false) => "--scopes",
        _ => "--patterns",
    }
    .to_owned()
}

/// Scopes and patterns, one line each under the session holding them, the ids padded so that
/// the columns after them line up.
fn print_standing(out: &mut dyn Write, grants: &[StandingGrant]) -> Result<(), CliError> {
    let id_w = widest(grants, |g| g.session.len());
    let depth_w = widest(grants, |g| g.depth.to_string().len());
    for g in grants {
        writeln!(
            out,
            "  {:<id_w$}  depth {:>depth_w$}  {}",
            g.session,
            g.depth,
            grant_words(g)
        )?;
    }
    Ok(())
}

/// `scope hotfix (granted by bob, until T): every command`, or `pattern "npm test" (added by
/// bob)`.
fn grant_words(g: &StandingGrant) -> String {
    match &g.grant {
        Grant::Scope { scope, expires_at } => format!(
            "scope {scope} (granted by {}, until {}): every command",
            g.granted_by,
            session_ledger::format_ts(*expires_at)
        ),
        Grant::Pattern { pattern } => format!("pattern {pattern:?} (added by {})", g.granted_by),
        _ => "see --json".to_owned(),
    }
}

/// What approves for a session now, in a few words: `every command`, `read-only commands and
/// the lines its patterns admit`, or `nothing: every command asks`.
pub fn approves_words(a: &Authority) -> String {
    if a.approves_every_command() {
        return "every command".to_owned();
    }
    let mut what = Vec::new();
    if a.live
        && a.posture
            .as_ref()
            .is_some_and(|p| p.current && p.level == PostureLevel::TrustReads)
    {
        what.push("read-only commands");
    }
    if a.live && a.patterns.iter().any(|p| p.refused.is_none()) {
        what.push("the lines its patterns admit");
    }
    if what.is_empty() {
        "nothing: every command asks".to_owned()
    } else {
        what.join(" and ")
    }
}

/// Why something a session holds approves nothing now.
pub fn withheld_words(w: &Withheld) -> String {
    match w {
        Withheld::SessionEnded => "the session has ended: every command asks".to_owned(),
        Withheld::LapsedPosture { epoch } => {
            format!("its posture lapsed with epoch {epoch} and counts no more")
        }
        Withheld::RefusedPattern { pattern, problem } => {
            format!("pattern {pattern:?} is refused by this version and admits nothing: {problem}")
        }
        _ => "see --json".to_owned(),
    }
}

/// `authority`'s text: what approves, then each posture, scope and pattern, then what is
/// withheld.
pub fn print_authority(out: &mut dyn Write, a: &Authority) -> Result<(), CliError> {
    writeln!(out, "{} approves {}", a.session, approves_words(a))?;
    match &a.posture {
        Some(p) => writeln!(out, "  posture:  {}", posture_words(p))?,
        None => writeln!(out, "  posture:  none")?,
    }
    for sc in &a.scopes {
        writeln!(
            out,
            "  scope:    {} (granted by {}, until {}): every command",
            sc.name,
            sc.granted_by,
            session_ledger::format_ts(sc.expires_at)
        )?;
    }
    for p in &a.patterns {
        writeln!(out, "  pattern:  {:?} (added by {})", p.pattern, p.added_by)?;
    }
    for w in &a.withheld {
        writeln!(out, "  withheld: {}", withheld_words(w))?;
    }
    Ok(())
}

/// `pattern test`'s text: the verdict, then each part of the command line and whether the
/// pattern admits it.
pub fn describe_test(test: &PatternTest) -> String {
    let verdict = if test.admitted {
        "admits"
    } else {
        "does not admit"
    };
    let mut lines = vec![format!(
        "pattern {:?} {verdict} {:?}",
        test.pattern, test.command
    )];
    if let Some(r) = &test.refused {
        lines.push(format!("  never admitted by any pattern: {r}"));
    }
    for (n, part) in test.parts.iter().enumerate() {
        let yes = if part.admitted {
            "admitted"
        } else {
            "NOT admitted"
        };
        lines.push(format!(
            "  part {}: {:?} (bytes {}..{}, words {:?}): {yes}",
            n + 1,
            part.text,
            part.range.start,
            part.range.end,
            part.words
        ));
    }
    lines.join("\n")
}

/// One line of `pattern list`.
pub fn describe_pattern(p: &CommandPattern) -> String {
    let refused = p.refused.as_ref().map_or(String::new(), |why| {
        format!("  REFUSED by this version, admits nothing: {why}")
    });
    format!(
        "{:?}  (added by {} at {}){refused}",
        p.pattern,
        p.added_by,
        session_ledger::format_ts(p.added_at)
    )
}

/// One line of `scope list`.
pub fn describe_scope(s: &Scope) -> String {
    let state = match s.revoked_at {
        Some(at) => format!("revoked at {}", session_ledger::format_ts(at)),
        None => format!("expires {}", session_ledger::format_ts(s.expires_at)),
    };
    format!("{}  granted by {}, {state}", s.name, s.granted_by)
}

/// `on` or `off`.
pub fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

/// `option`'s text: a line per option.
pub fn describe_options(options: &[(String, bool)]) -> String {
    options
        .iter()
        .map(|(name, on)| format!("{name}: {}", on_off(*on)))
        .collect::<Vec<_>>()
        .join("\n")
}
