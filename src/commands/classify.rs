//! The read-only classifier: is a command line known to only read?
//!
//! A line is read-only only when it parses into simple commands (a construct the grammar refuses
//! is never read-only) and every one of them, read through its wrappers, is a program with a
//! rule (`programs`) that finds nothing in its words that writes, runs another program, changes
//! state or sends data. Everything else is not read-only, and the verdict names the word that
//! made it so. An unknown program is not read-only.

use std::ops::Range;

use serde::Serialize;

use super::programs::{self, Effect};
use super::wrappers::{is_assignment, read_wrapper, Inner};
use super::{parse_command_line, Refusal, SimpleCommand};

/// How deeply wrappers may nest (`sudo timeout 5 bash -c '...'`) before a command is not read.
const MAX_WRAPPERS: usize = 8;

/// The classifier's verdict on a command line ([`classify`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Classification {
    /// The line.
    pub line: String,
    /// True when every simple command of the line is known to only read.
    pub read_only: bool,
    /// The word that decided: for a line that is not read-only, the first word that made it
    /// so; for a read-only line, the program of its first part.
    pub word: String,
    /// What that word does, when the line is not read-only.
    pub effect: Option<Effect>,
    /// Why, in words.
    pub reason: String,
    /// Each simple command, with its verdict; empty when the line was refused.
    pub parts: Vec<ClassifiedPart>,
    /// The construct that stops the line, if one does: then it is not read-only.
    pub refused: Option<Refusal>,
}

/// One simple command of a [`Classification`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClassifiedPart {
    /// The part as written in the line.
    pub text: String,
    /// Its bytes in the line.
    pub range: Range<usize>,
    /// True when it is known to only read.
    pub read_only: bool,
    /// The word that decided (see [`Classification::word`]).
    pub word: String,
    /// What that word does, when the part is not read-only.
    pub effect: Option<Effect>,
    /// Why.
    pub reason: String,
    /// The wrappers read through to reach the command judged (`timeout`, `a shell's -c`).
    pub through: Vec<&'static str>,
}

/// Is `line` known to only read? Reads the line with the same grammar as `decide` and command
/// patterns, reads wrappers through (`timeout 5 cat x` is `cat x`; `bash -c 'ls; pwd'` is its
/// two commands; `sudo` is never read-only), and applies each program's rule.
///
/// ```
/// use session_ledger::classify;
/// assert!(classify("git status && ls -la | grep x").read_only);
/// let verdict = classify("find . -name '*.rs' -exec rm '{}' \\;");
/// assert!(!verdict.read_only);
/// assert_eq!(verdict.word, "-exec");
/// assert!(!classify("cat x > y").read_only); // a redirection
/// assert!(!classify("frobnicate").read_only); // unknown programs are not read-only
/// ```
pub fn classify(line: &str) -> Classification {
    classify_parsed(line, &parse_command_line(line))
}

/// [`classify`] of a line already parsed (`decide` parses once for the classifier and the
/// patterns both).
pub(crate) fn classify_parsed(
    line: &str,
    parsed: &Result<Vec<SimpleCommand>, Refusal>,
) -> Classification {
    let (parts, refused) = match parsed {
        Ok(commands) => (
            commands
                .iter()
                .map(|simple| {
                    let judged = judge(&simple.words, 0);
                    ClassifiedPart {
                        text: line[simple.range.clone()].to_owned(),
                        range: simple.range.clone(),
                        read_only: judged.effect.is_none(),
                        word: judged.word,
                        effect: judged.effect,
                        reason: judged.why,
                        through: judged.through,
                    }
                })
                .collect::<Vec<_>>(),
            None,
        ),
        Err(refusal) => (Vec::new(), Some(refusal.clone())),
    };
    let (word, effect, reason) = match (&refused, parts.iter().find(|p| !p.read_only)) {
        (Some(r), _) => (
            line[r.at..].chars().take(16).collect(),
            Some(Effect::Construct),
            format!("the line holds {r}, which is never read-only"),
        ),
        (None, Some(p)) => (p.word.clone(), p.effect, p.reason.clone()),
        (None, None) => {
            let first = &parts[0];
            (first.word.clone(), None, first.reason.clone())
        }
    };
    Classification {
        line: line.to_owned(),
        read_only: effect.is_none(),
        word,
        effect,
        reason,
        parts,
        refused,
    }
}

/// One command's verdict.
struct Judged {
    word: String,
    effect: Option<Effect>,
    why: String,
    through: Vec<&'static str>,
}

impl Judged {
    fn not(word: &str, effect: Effect, why: impl Into<String>) -> Judged {
        Judged {
            word: word.to_owned(),
            effect: Some(effect),
            why: why.into(),
            through: Vec::new(),
        }
    }

    fn through(mut self, wrapper: &'static str) -> Judged {
        self.through.insert(0, wrapper);
        self
    }
}

fn judge(words: &[String], depth: usize) -> Judged {
    let Some(first) = words.first() else {
        return Judged::not("", Effect::Unknown, "no command");
    };
    if depth > MAX_WRAPPERS {
        return Judged::not(first, Effect::Unknown, "wrappers nested too deeply to read");
    }
    if is_assignment(first) {
        return Judged::not(
            first,
            Effect::Environment,
            "an assignment changes the environment of the program it runs, which can make it \
             run other code (LD_PRELOAD, PATH, GIT_PAGER)",
        );
    }
    if let Some(wrapped) = read_wrapper(words) {
        let wrapper = wrapped.wrapper;
        if matches!(wrapper, "sudo" | "doas") {
            return Judged::not(
                first,
                Effect::Escalates,
                format!("{wrapper} runs its command with another user's privileges"),
            );
        }
        return match wrapped.inner {
            Inner::Shell => Judged::not(
                first,
                Effect::Runs,
                "runs a shell that reads commands nobody saw",
            ),
            Inner::Script(i) if i + 1 < words.len() => Judged::not(
                &words[i + 1],
                Effect::Unknown,
                "words after a shell's script become its $0, $1, ...: the line means something \
                 other than the script",
            ),
            Inner::Script(i) => script(&words[i], depth).through(wrapper),
            Inner::Words(i) if wrapper == "watch" => {
                // watch hands its words, joined by spaces, to `sh -c`.
                script(&words[i..].join(" "), depth).through(wrapper)
            }
            Inner::Words(i) => judge(&words[i..], depth + 1).through(wrapper),
        };
    }
    match programs::findings(words).first() {
        Some(found) => {
            let word = &words[found.word];
            Judged::not(word, found.effect, found.why)
        }
        None => Judged {
            word: first.clone(),
            effect: None,
            why: "known to only read".to_owned(),
            through: Vec::new(),
        },
    }
}

/// A shell script (`bash -c SCRIPT`): read-only when every command in it is.
fn script(text: &str, depth: usize) -> Judged {
    match parse_command_line(text) {
        Err(refusal) => Judged::not(
            text,
            Effect::Construct,
            format!("the script holds {refusal}, which is never read-only"),
        ),
        Ok(commands) => {
            let mut last = None;
            for simple in commands {
                let judged = judge(&simple.words, depth + 1);
                if judged.effect.is_some() {
                    return judged;
                }
                last.get_or_insert(judged);
            }
            last.unwrap_or_else(|| Judged::not(text, Effect::Unknown, "an empty script"))
        }
    }
}

/// The words of one simple command that a pattern's wildcard may not stand for, each with why:
/// a word that makes the program run another program or write a file it names
/// ([`Effect::guarded`]), a leading assignment, the program a wrapper runs, and a shell's
/// script. A pattern admits such a word only by naming it.
pub(crate) fn guarded_words(words: &[String]) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    guard(words, 0, 0, &mut out);
    out.sort_by_key(|&(i, _)| i);
    out.dedup_by_key(|&mut (i, _)| i);
    out
}

fn guard(words: &[String], offset: usize, depth: usize, out: &mut Vec<(usize, &'static str)>) {
    if depth > MAX_WRAPPERS {
        out.extend((0..words.len()).map(|i| (offset + i, "wrappers nested too deeply")));
        return;
    }
    let assignments = words.iter().take_while(|w| is_assignment(w)).count();
    for i in 0..assignments {
        out.push((offset + i, "an assignment changes what the program runs"));
    }
    if assignments > 0 {
        return guard(&words[assignments..], offset + assignments, depth + 1, out);
    }
    if let Some(wrapped) = read_wrapper(words) {
        match wrapped.inner {
            Inner::Words(i) if wrapped.wrapper == "watch" => {
                out.extend(
                    (i..words.len()).map(|k| (offset + k, "watch runs its words as a script")),
                );
            }
            Inner::Words(i) => {
                out.push((offset + i, "a wrapper runs this program"));
                // `env A=x cmd`: the assignments are guarded, and the program after them.
                let assigned = words[i..].iter().take_while(|w| is_assignment(w)).count();
                if assigned > 0 && i + assigned < words.len() {
                    out.push((offset + i + assigned, "a wrapper runs this program"));
                }
                guard(&words[i..], offset + i, depth + 1, out);
            }
            Inner::Script(i) => out.push((offset + i, "a shell runs this script")),
            Inner::Shell => {}
        }
        return;
    }
    for found in programs::findings(words) {
        if found.effect.guarded() {
            out.push((offset + found.word, found.why));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(line: &str) -> (bool, String) {
        let c = classify(line);
        (c.read_only, c.word)
    }

    #[test]
    fn the_issue_table_is_not_read_only_and_names_the_word() {
        for (line, word) in [
            ("git -c core.pager='rm -rf /' log", "-c"),
            ("find . -exec rm -rf / ;", "-exec"),
            ("timeout 5 rm -rf /", "rm"),
            ("env rm -rf /", "rm"),
            ("sudo rm -rf /", "sudo"),
            ("bash -c 'rm -rf /'", "rm"),
            ("xargs rm -rf", "rm"),
            ("sed -i s/a/b/ f", "-i"),
            ("rg --pre sh x", "--pre"),
            ("sort -o out in", "-o"),
            ("tee out", "out"),
            ("curl -o f http://x", "-o"),
            ("curl -X POST http://x", "-X"),
            ("tar xf a.tar", "xf"),
            ("git diff --output=x", "--output=x"),
            ("git push", "push"),
            ("LD_PRELOAD=x ls", "LD_PRELOAD=x"),
            ("awk '{system(\"id\")}'", "{system(\"id\")}"),
        ] {
            assert_eq!(verdict(line), (false, word.to_owned()), "{line}");
        }
    }

    #[test]
    fn plain_reads_are_read_only_through_transparent_wrappers() {
        for line in [
            "ls -la",
            "git status",
            "git log --oneline -5",
            "timeout 5 cat x",
            "bash -lc 'git status && ls'",
            "find . -name x -print",
            "grep -rn foo src | head -5",
            "sed -n 1,5p f",
            "xargs grep x",
            "curl -sSL https://example.com",
            "tar tzf a.tgz",
            "git branch -a",
            "git config --get user.name",
        ] {
            let verdict = classify(line);
            assert!(verdict.read_only, "{line}: {verdict:?}");
        }
    }

    #[test]
    fn wildcards_are_kept_from_words_that_run_or_write() {
        let words =
            |line: &str| -> Vec<String> { parse_command_line(line).unwrap().remove(0).words };
        let guarded = |line: &str| -> Vec<usize> {
            guarded_words(&words(line))
                .into_iter()
                .map(|(i, _)| i)
                .collect()
        };
        assert_eq!(guarded("git -c x=y log"), vec![1]);
        assert_eq!(guarded("timeout 5 rm -rf /"), vec![2]);
        assert_eq!(guarded("bash -c 'x'"), vec![2]);
        assert_eq!(guarded("env A=1 npm test"), vec![1, 2]);
        assert_eq!(guarded("git status"), Vec::<usize>::new());
        assert_eq!(guarded("npm test"), Vec::<usize>::new());
    }
}
