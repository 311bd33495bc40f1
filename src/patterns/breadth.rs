//! How broad a pattern is: whether it admits any command (refused at `pattern add` unless the
//! operator says so), what it no longer admits since wildcards were kept from words that run
//! programs or write files, and warnings for a wildcard where a destructive program takes its
//! target.

use super::{word_matches, Pattern};
use crate::commands::{guarded_words, Piece};

/// Programs whose words after them are a command: a wildcard there admits any command.
const ANY_COMMAND_WRAPPERS: &[&str] = &[
    "bash", "sh", "zsh", "dash", "ksh", "eval", "sudo", "doas", "env", "xargs", "exec", "watch",
    "timeout", "nice", "nohup", "time", "stdbuf", "command", "su", "runuser", "setsid", "chroot",
    "nsenter", "unshare", "flock", "ionice", "taskset", "chrt",
];

/// Programs that destroy what they are pointed at, and those that do with `-R`.
const DESTRUCTIVE: &[&str] = &["rm", "dd", "shred", "truncate", "wipefs", "rmdir", "unlink"];
const RECURSIVE_DESTRUCTIVE: &[&str] = &["chmod", "chown", "chgrp", "setfacl"];

/// Words a pattern's wildcard may once have stood for that make a program run another program
/// or write a file it names: [`Pattern::narrowed`] tries each where the pattern has a wildcard.
const PROBES: &[&str] = &[
    "-c",
    "-C",
    "--git-dir=x",
    "--work-tree=x",
    "--exec-path=x",
    "--config-env=x",
    "--output=x",
    "--ext-diff",
    "-O",
    "-exec",
    "-execdir",
    "-ok",
    "-okdir",
    "-delete",
    "-fprint",
    "-fprint0",
    "-fprintf",
    "-fls",
    "--pre",
    "--hostname-bin",
    "-z",
    "-x",
    "-X",
    "--exec",
    "--exec-batch",
    "-o",
    "--compress-program",
    "-I",
    "--to-command",
    "--use-compress-program",
    "--checkpoint-action=exec",
    "-D",
    "--trace",
    "--libcurl",
    "-i",
    "-l",
    "--include",
    "--load",
    "A=x",
];

impl Pattern {
    /// The program the pattern names, when its first word is plain text.
    fn program(&self) -> Option<&str> {
        match self.words.first().map(Vec::as_slice) {
            Some([Piece::Text(program)]) => Some(program.rsplit('/').next().unwrap_or(program)),
            _ => None,
        }
    }

    fn star_after_program(&self) -> bool {
        self.words[1..].iter().any(|w| w.contains(&Piece::Star))
    }

    /// Why adding this pattern would admit any command, if it would: a lone `*`, a wildcard
    /// as the program, or a wildcard after a wrapper or a shell (`sudo *`, `bash -c *`,
    /// `env *`, `xargs *`, `eval *`). Such a pattern is refused unless the operator says so.
    ///
    /// ```
    /// use session_ledger::Pattern;
    /// assert!(Pattern::parse("*")?.admits_any_command().is_some());
    /// assert!(Pattern::parse("bash -c *")?.admits_any_command().is_some());
    /// assert!(Pattern::parse("git *")?.admits_any_command().is_none());
    /// # Ok::<(), session_ledger::Error>(())
    /// ```
    pub fn admits_any_command(&self) -> Option<String> {
        let first = self.words.first()?;
        if first.as_slice() == [Piece::Star] {
            return Some(
                "a wildcard as the program admits any program, for as long as the pattern stands"
                    .to_owned(),
            );
        }
        let name = self.program()?;
        (ANY_COMMAND_WRAPPERS.contains(&name) && self.star_after_program()).then(|| {
            format!(
                "{name} runs the words after it as a command, so a wildcard there admits any \
                 command; name the command instead (timeout, nice, nohup, time, stdbuf, command, \
                 env and a shell's -c are read through: a pattern for the inner command admits it)"
            )
        })
    }

    /// Warnings for a pattern that is valid but likely broader than meant: a wildcard where a
    /// destructive program (`rm`, `dd`, `mkfs`, `chmod -R`, ...) takes its target.
    pub fn warnings(&self) -> Vec<String> {
        let Some(name) = self.program() else {
            return Vec::new();
        };
        let recursive = self.words[1..]
            .iter()
            .any(|w| matches!(w.as_slice(), [Piece::Text(t)] if t == "-R" || t == "--recursive"));
        let destructive = DESTRUCTIVE.contains(&name)
            || name.starts_with("mkfs")
            || (RECURSIVE_DESTRUCTIVE.contains(&name) && recursive);
        if destructive && self.star_after_program() {
            vec![format!(
                "a wildcard stands where {name} takes its target: the pattern lets this session \
                 {name} any target, for as long as it stands"
            )]
        } else {
            Vec::new()
        }
    }

    /// Why this pattern admits less than it did before wildcards were kept from words that run
    /// programs or write files, if it does: it would be refused if added now
    /// ([`Pattern::admits_any_command`]), or one of its wildcards no longer stands for such
    /// words (`git *` and `git -c ...`). A line it approved that now asks is one of these.
    ///
    /// ```
    /// use session_ledger::Pattern;
    /// assert!(Pattern::parse("git *")?.narrowed().unwrap().contains("-c"));
    /// assert!(Pattern::parse("sudo *")?.narrowed().is_some());
    /// assert_eq!(Pattern::parse("npm test")?.narrowed(), None);
    /// # Ok::<(), session_ledger::Error>(())
    /// ```
    pub fn narrowed(&self) -> Option<String> {
        if let Some(why) = self.admits_any_command() {
            return Some(format!("it would be refused if added now: {why}"));
        }
        let base: Vec<String> = self
            .words
            .iter()
            .map(|w| {
                w.iter()
                    .map(|p| match p {
                        Piece::Text(t) => t.as_str(),
                        Piece::Star => "x",
                    })
                    .collect()
            })
            .collect();
        let fixed = base.len() - usize::from(self.open_ended);
        let mut kept: Vec<&str> = Vec::new();
        for probe in PROBES {
            let mut tries: Vec<(Vec<String>, usize)> = Vec::new();
            for (i, word) in self.words.iter().enumerate().take(fixed) {
                if word.contains(&Piece::Star) && word_matches(word, probe) {
                    let mut line = base.clone();
                    line[i] = (*probe).to_owned();
                    tries.push((line, i));
                }
            }
            if self.open_ended {
                for filler in 0..2 {
                    let mut line = base[..fixed].to_vec();
                    line.extend(std::iter::repeat_n("x".to_owned(), filler));
                    let at = line.len();
                    line.push((*probe).to_owned());
                    tries.push((line, at));
                }
            }
            let guarded = tries
                .iter()
                .any(|(line, at)| guarded_words(line).iter().any(|(i, _)| i == at));
            if guarded && !kept.contains(probe) {
                kept.push(probe);
            }
        }
        (!kept.is_empty()).then(|| {
            format!(
                "its wildcard no longer stands for {}, which run a program, write a file or \
                 change the environment; a pattern that names such a word still admits it",
                kept.join(" ")
            )
        })
    }
}
