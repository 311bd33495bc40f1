//! The sub-agents a Claude Code session asked for, kept between hook processes, so that a
//! sub-agent's start can be matched with the call that spawned it.
//!
//! Claude Code's `SubagentStart` names the new agent and its type, never who spawned it. What
//! names the spawner is the `PreToolUse` of the `Agent` call before it (from the session, or
//! from a sub-agent: then it carries that sub-agent's `agent_id`), and, once the agent runs,
//! the call's `PostToolUse`, whose response names the new `agentId`. So each `Agent` call is
//! written here when it is asked, each start when it is matched, and each `PostToolUse` that
//! names its agent; a start is matched to the calls of its type not yet matched, and only when
//! they all come from one spawner.
//!
//! One file per Claude Code session, of JSON lines, each appended with one `write` to a file
//! opened for appending (so lines of hooks running at once do not interleave), readable by its
//! owner only. What is lost with it is only the match: a start that cannot be matched is
//! recorded with no posture, and asks.

use std::collections::{BTreeSet, HashMap};
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One line of the file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum Line {
    /// An `Agent` call was asked for by the ledger session `by`.
    Spawn {
        tool_use_id: String,
        by: String,
        agent_type: String,
    },
    /// The call `tool_use_id` started the agent `agent`.
    Started { tool_use_id: String, agent: String },
}

/// The file of one Claude Code session.
#[derive(Debug, Clone)]
pub(crate) struct Spawns {
    path: PathBuf,
}

/// What a start was matched with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Match {
    /// The ledger session that spawned it.
    Spawner(String),
    /// No spawner can be established, and why.
    Unknown(String),
}

impl Spawns {
    /// The file of the Claude Code session `session_id` in `folder`, which is created if
    /// missing. An id of anything but ASCII letters, digits, `-` and `_` is refused.
    pub(crate) fn open(folder: &Path, session_id: &str) -> io::Result<Spawns> {
        // The id names a file in `folder`: never a path (Claude Code's are UUIDs).
        let plain = !session_id.is_empty()
            && session_id.len() <= 128
            && session_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !plain {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the session id {session_id:?} is not one a file may be named after"),
            ));
        }
        std::fs::create_dir_all(folder)?;
        Ok(Spawns {
            path: folder.join(format!("{session_id}.spawns.jsonl")),
        })
    }

    /// An `Agent` call `tool_use_id` of type `agent_type`, asked by the ledger session `by`.
    pub(crate) fn spawn(&self, tool_use_id: &str, by: &str, agent_type: &str) -> io::Result<()> {
        self.append(&Line::Spawn {
            tool_use_id: tool_use_id.to_owned(),
            by: by.to_owned(),
            agent_type: agent_type.to_owned(),
        })
    }

    /// The call `tool_use_id` started the agent `agent` (its `PostToolUse` says so).
    pub(crate) fn started(&self, tool_use_id: &str, agent: &str) -> io::Result<()> {
        self.append(&Line::Started {
            tool_use_id: tool_use_id.to_owned(),
            agent: agent.to_owned(),
        })
    }

    /// The spawner of the agent `agent` of type `agent_type`, which has just started; the
    /// call it is matched with is written as started.
    pub(crate) fn match_start(&self, agent: &str, agent_type: &str) -> io::Result<Match> {
        let lines = self.read()?;
        let mut spawns: Vec<(&str, &str, &str)> = Vec::new();
        let mut started: HashMap<&str, &str> = HashMap::new();
        for line in &lines {
            match line {
                Line::Spawn {
                    tool_use_id,
                    by,
                    agent_type,
                } => spawns.push((tool_use_id, by, agent_type)),
                Line::Started { tool_use_id, agent } => {
                    started.insert(tool_use_id, agent);
                }
            }
        }
        // Its call's PostToolUse may have named it already.
        if let Some((_, by, _)) = spawns
            .iter()
            .find(|(id, _, _)| started.get(id) == Some(&agent))
        {
            return Ok(Match::Spawner((*by).to_owned()));
        }
        let waiting: Vec<&(&str, &str, &str)> = spawns
            .iter()
            .filter(|(id, _, t)| *t == agent_type && !started.contains_key(id))
            .collect();
        let spawners: BTreeSet<&str> = waiting.iter().map(|(_, by, _)| *by).collect();
        match (waiting.first(), spawners.len()) {
            (Some((id, by, _)), 1) => {
                self.started(id, agent)?;
                Ok(Match::Spawner((*by).to_owned()))
            }
            (None, _) => Ok(Match::Unknown(format!(
                "no Agent call of type {agent_type} was waiting for it"
            ))),
            _ => Ok(Match::Unknown(format!(
                "Agent calls of type {agent_type} by {} were waiting, and which one started it \
                 cannot be told",
                spawners.into_iter().collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    fn read(&self) -> io::Result<Vec<Line>> {
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut lines = Vec::new();
        for line in BufReader::new(file).lines() {
            // A line cut short by a crash is skipped: what it said is lost, nothing more.
            if let Ok(parsed) = serde_json::from_str(&line?) {
                lines.push(parsed);
            }
        }
        Ok(lines)
    }

    fn append(&self, line: &Line) -> io::Result<()> {
        let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
        text.push('\n');
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(&self.path)?.write_all(text.as_bytes())
    }
}
