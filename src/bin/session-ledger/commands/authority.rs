//! The commands on authority: postures (`trust`, `revoke`, `revoke-all`), the grants judged for
//! one session (`pattern`, `scope`), a decision (`decide`, recorded with `--record`) and the
//! read-only classifier it can use (`classify`), what may approve for a session now
//! (`authority`) and why a session holds what it holds (`explain`), and the posture epochs
//! (`epoch`).

use session_ledger::{
    AlsoRevoke, AskedBy, LedgerOption, NewPattern, PostureLevel, Propagation, ReadOnly, ToolCall,
    ToolRule,
};

use crate::args::{
    AlsoRevokeArgs, EpochCommand, PatternCommand, RecordArgs, ScopeCommand, ToolCallArgs,
};
use crate::context::{acting, command_line, open_existing, open_for_reading, Context};
use crate::error::CliError;
use crate::render::Report;

/// `trust`: `--full` or (clap makes sure of one of them) `--reads`.
pub fn trust(
    ctx: &Context<'_>,
    id: &str,
    full: bool,
    actor: &Option<String>,
) -> Result<Report, CliError> {
    let ledger = open_existing(ctx.db)?;
    let level = if full {
        PostureLevel::Trust
    } else {
        PostureLevel::TrustReads
    };
    let posture = ledger.grant(id, level, &acting(ctx, actor)?)?;
    Ok(Report::Granted {
        id: id.to_owned(),
        posture,
    })
}

/// `revoke`: `--cascade` (bound to a preview by `--token`), `--local`, or `--preview`; with
/// `--scopes` and `--patterns`, the grants of the sessions it reaches too.
pub fn revoke(
    ctx: &Context<'_>,
    id: &str,
    cascade: bool,
    local: bool,
    token: &Option<String>,
    also: AlsoRevokeArgs,
    actor: &Option<String>,
) -> Result<Report, CliError> {
    if token.is_some() && !cascade {
        return Err(CliError::Usage(
            "--token applies a preview to a cascade: use it with --cascade".into(),
        ));
    }
    if !cascade && !local && (also.scopes || also.patterns) {
        return Err(CliError::Usage(
            "--scopes and --patterns say what a revocation takes, and a preview takes nothing: \
             its list shows what they would take; use them with --cascade or --local"
                .into(),
        ));
    }
    let propagation = if cascade {
        match token {
            Some(token) => Propagation::Cascade {
                token: token.clone(),
            },
            None => Propagation::CascadeUnchecked,
        }
    } else if local {
        Propagation::Local
    } else {
        Propagation::Preview
    };
    let ledger = open_existing(ctx.db)?;
    Ok(Report::Revoked(ledger.revoke_with(
        id,
        propagation,
        also_revoke(also),
        &acting(ctx, actor)?,
    )?))
}

/// `revoke-all`: every session's posture, and with `--scopes` and `--patterns` every live
/// session's grants too.
pub fn revoke_all(
    ctx: &Context<'_>,
    also: AlsoRevokeArgs,
    actor: &Option<String>,
) -> Result<Report, CliError> {
    let ledger = open_existing(ctx.db)?;
    Ok(Report::Revoked(ledger.revoke_all_with(
        also_revoke(also),
        &acting(ctx, actor)?,
    )?))
}

fn also_revoke(also: AlsoRevokeArgs) -> AlsoRevoke {
    AlsoRevoke {
        scopes: also.scopes,
        patterns: also.patterns,
    }
}

/// `authority`: everything that may approve for a session now.
pub fn authority(ctx: &Context<'_>, id: &str) -> Result<Report, CliError> {
    Ok(Report::Authority(open_for_reading(ctx)?.authority(id)?))
}

/// `pattern add`, `remove` and `list`, and `pattern test`, which needs no ledger.
pub fn pattern(ctx: &Context<'_>, command: &PatternCommand) -> Result<Report, CliError> {
    match command {
        PatternCommand::Test { pattern, command } => Ok(Report::PatternTested(
            session_ledger::test_pattern(pattern, &command_line(command))?,
        )),
        PatternCommand::Add {
            id,
            pattern,
            must_match,
            must_not_match,
            admit_any_command,
            actor,
        } => {
            let ledger = open_existing(ctx.db)?;
            let mut checks = NewPattern::new().admit_any_command(*admit_any_command);
            checks.must_match.clone_from(must_match);
            checks.must_not_match.clone_from(must_not_match);
            let added = ledger.add_pattern_checked(id, pattern, &acting(ctx, actor)?, &checks)?;
            Ok(Report::PatternAdded {
                id: id.clone(),
                pattern: pattern.clone(),
                added,
            })
        }
        PatternCommand::TestTool { rule, call } => {
            let rule_parsed = ToolRule::parse(rule).map_err(|problem| {
                session_ledger::Error::Input(session_ledger::InputError::InvalidPattern {
                    pattern: rule.clone(),
                    problem,
                })
            })?;
            let admitted = rule_parsed.admits(&tool_call(call)?);
            Ok(Report::ToolRuleTested {
                rule: rule.clone(),
                tool: call.tool.clone().unwrap_or_default(),
                admitted,
            })
        }
        PatternCommand::Review => Ok(Report::PatternReviews(
            open_for_reading(ctx)?.review_patterns()?,
        )),
        PatternCommand::Remove { id, pattern, actor } => {
            let ledger = open_existing(ctx.db)?;
            ledger.remove_pattern(id, pattern, &acting(ctx, actor)?)?;
            Ok(Report::PatternRemoved {
                id: id.clone(),
                pattern: pattern.clone(),
            })
        }
        PatternCommand::List { id } => Ok(Report::Patterns(open_for_reading(ctx)?.patterns(id)?)),
    }
}

/// `scope grant`, `revoke` and `list`.
pub fn scope(ctx: &Context<'_>, command: &ScopeCommand) -> Result<Report, CliError> {
    match command {
        ScopeCommand::Grant {
            id,
            name,
            ttl,
            actor,
        } => {
            let ttl = session_ledger::parse_ttl(ttl)?;
            let ledger = open_existing(ctx.db)?;
            let scope = ledger.grant_scope(id, name, ttl, &acting(ctx, actor)?)?;
            Ok(Report::ScopeGranted {
                id: id.clone(),
                name: name.clone(),
                scope,
            })
        }
        ScopeCommand::Revoke { id, name, actor } => {
            let ledger = open_existing(ctx.db)?;
            ledger.revoke_scope(id, name, &acting(ctx, actor)?)?;
            Ok(Report::ScopeRevoked {
                id: id.clone(),
                name: name.clone(),
            })
        }
        ScopeCommand::List { id } => Ok(Report::Scopes(open_for_reading(ctx)?.scopes(id)?)),
    }
}

/// `decide`: whether `id` may run `command` now, the caller saying it only reads
/// (`--read-only`) or the ledger classifying it (`--classify`); or, with `--tool`, whether it
/// may make that tool call. With `--record`, the decision and its record in one call, which
/// returns no decision without its committed record: an answer is never printed unrecorded.
pub fn decide(
    ctx: &Context<'_>,
    id: &str,
    read_only: bool,
    classify: bool,
    tool: &ToolCallArgs,
    record: &RecordArgs,
    command: &[String],
) -> Result<Report, CliError> {
    let asker = record
        .record
        .then(|| acting(ctx, &record.actor))
        .transpose()?;
    let ledger = open_existing(ctx.db)?;
    let read_only = if classify {
        ReadOnly::Classify
    } else {
        ReadOnly::from(read_only)
    };
    let Some(actor) = asker else {
        return Ok(Report::Decided(match tool.tool {
            Some(_) => ledger.decide_tool(id, &tool_call(tool)?)?,
            None => ledger.decide(id, &command_line(command), read_only)?,
        }));
    };
    let asked = AskedBy {
        actor: &actor,
        tool_use_id: record.tool_use_id.as_deref(),
    };
    Ok(Report::Recorded(match tool.tool {
        Some(_) => ledger.decide_tool_and_record(id, &tool_call(tool)?, &asked)?,
        None => ledger.decide_and_record(id, &command_line(command), read_only, &asked)?,
    }))
}

/// The library's view of `--tool NAME [--path P] [--url U] [--root DIR]`.
fn tool_call(call: &ToolCallArgs) -> Result<ToolCall<'_>, CliError> {
    let tool = call
        .tool
        .as_deref()
        .ok_or_else(|| CliError::Usage("--tool NAME is required".to_owned()))?;
    Ok(ToolCall {
        tool,
        path: call.path.as_deref(),
        url: call.url.as_deref(),
        root: call.root.as_deref(),
    })
}

/// `classify`: whether a command line is known to only read; needs no ledger.
pub fn classify(command: &[String]) -> Result<Report, CliError> {
    Ok(Report::Classified(session_ledger::classify(&command_line(
        command,
    ))))
}

/// `explain`: the label, the posture chain, the grants and the audit rows of `id`.
pub fn explain(ctx: &Context<'_>, id: &str) -> Result<Report, CliError> {
    Ok(Report::Explained(Box::new(
        open_for_reading(ctx)?.explain(id)?,
    )))
}

/// `epoch start` and `epoch show`.
pub fn epoch(ctx: &Context<'_>, command: &EpochCommand) -> Result<Report, CliError> {
    match command {
        EpochCommand::Start { durable, actor } => {
            let ledger = open_existing(ctx.db)?;
            let start = ledger.start_epoch_with(*durable, &acting(ctx, actor)?)?;
            Ok(Report::EpochStarted(start))
        }
        EpochCommand::Show => Ok(Report::Epoch(open_for_reading(ctx)?.current_epoch()?)),
    }
}

/// `option [NAME [on|off]]`: the ledger's options, one of them, or one set.
pub fn option(
    ctx: &Context<'_>,
    name: Option<&str>,
    value: Option<&str>,
    actor: &Option<String>,
) -> Result<Report, CliError> {
    let chosen = match name {
        None => None,
        Some(name) => Some(LedgerOption::parse(name).ok_or_else(|| {
            let known: Vec<String> = LedgerOption::ALL
                .iter()
                .map(|o| o.as_str().replace('_', "-"))
                .collect();
            CliError::Usage(format!(
                "no option {name:?}: the options are {}",
                known.join(", ")
            ))
        })?),
    };
    match (chosen, value) {
        (Some(option), Some(value)) => {
            let ledger = open_existing(ctx.db)?;
            let was = ledger.set_option(option, value == "on", &acting(ctx, actor)?)?;
            Ok(Report::OptionSet {
                option: option.as_str().replace('_', "-"),
                on: value == "on",
                was,
            })
        }
        (chosen, _) => {
            let ledger = open_for_reading(ctx)?;
            let options = match chosen {
                Some(option) => vec![option],
                None => LedgerOption::ALL.to_vec(),
            };
            let mut shown = Vec::new();
            for option in options {
                shown.push((option.as_str().replace('_', "-"), ledger.option(option)?));
            }
            Ok(Report::Options(shown))
        }
    }
}
