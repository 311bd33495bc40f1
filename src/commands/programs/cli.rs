//! Programs read as a command path: `PROGRAM [global options] GROUP... VERB [operands]
//! [options]` (`aws ec2 describe-instances`, `az vm list`, `gcloud compute instances list`,
//! `gh pr view 12`, `helm get values r`).
//!
//! A command is read-only when its path reaches a verb that only reads, and no word of the
//! path before that verb is a command that acts: a command that acts would take the verb as
//! its operand (`gcloud compute instances delete list` deletes an instance named `list`).
//! Global options are skipped with their values, so that a value is never read as a word of
//! the path (`az --query delete vm list` lists); an option the rule does not know ends the
//! path, since it may take the next word as its value.

use super::{Effect, Scan};

/// A program's global options: those that take the next word as their value (or a value
/// after `=`), and those that take none.
pub(super) struct Globals {
    pub(super) valued: &'static [&'static str],
    pub(super) flags: &'static [&'static str],
}

/// The command path: the words that are not options, each with its index, up to the first
/// option that is not one of `globals` (its index is the second value). A `--name=value`
/// cannot take the next word, so it is passed over whoever's option it is.
pub(super) fn path<'w>(
    scan: &Scan<'w>,
    globals: &Globals,
) -> (Vec<(usize, &'w str)>, Option<usize>) {
    let words = scan.words;
    let mut out = Vec::new();
    let mut at = 1;
    while let Some(word) = words.get(at) {
        let w = word.as_str();
        if w.len() < 2 || !w.starts_with('-') {
            out.push((at, w));
            at += 1;
            continue;
        }
        let name = w.split_once('=').map_or(w, |(n, _)| n);
        if globals.valued.contains(&name) {
            at += if w.contains('=') { 1 } else { 2 };
        } else if globals.flags.contains(&w) || (w.starts_with("--") && w.contains('=')) {
            at += 1;
        } else {
            return (out, Some(at));
        }
    }
    (out, None)
}

/// True when the command asks for help: its last word is one of `help` (`--help`), no `--`
/// comes before it, and the word before it is not an option that could take it as a value
/// (`gh pr create --title --help` creates a pull request titled `--help`).
pub(super) fn asks_help(scan: &Scan<'_>, help: &[&str]) -> bool {
    let words = scan.words;
    let n = words.len();
    if n < 2 || !help.contains(&words[n - 1].as_str()) || words[1..n - 1].iter().any(|w| w == "--")
    {
        return false;
    }
    let before = words[n - 2].as_str();
    n == 2 || !before.starts_with('-') || before.contains('=') || help.contains(&before)
}

/// Commands that act, as most command-path programs name them: a word of a path after its
/// first (which names a group) and before the verb, that is one of these or starts with one of
/// [`ACTING_PREFIXES`], is a command whose operand the verb would be.
const ACTS: &[&str] = &[
    "create",
    "delete",
    "del",
    "rm",
    "remove",
    "update",
    "set",
    "unset",
    "add",
    "patch",
    "put",
    "start",
    "stop",
    "restart",
    "reset",
    "resize",
    "resume",
    "suspend",
    "deploy",
    "undeploy",
    "undelete",
    "enable",
    "disable",
    "import",
    "export",
    "ssh",
    "scp",
    "login",
    "logout",
    "activate",
    "deactivate",
    "revoke",
    "grant",
    "snapshot",
    "publish",
    "pull",
    "push",
    "call",
    "invoke",
    "exec",
    "write",
    "access",
    "destroy",
    "encrypt",
    "decrypt",
    "sign",
    "init",
    "install",
    "uninstall",
    "upgrade",
    "apply",
    "attach",
    "detach",
    "move",
    "mv",
    "copy",
    "cp",
    "rename",
    "cancel",
    "purge",
    "restore",
    "rollback",
    "submit",
    "approve",
    "tag",
    "untag",
    "clone",
    "migrate",
    "promote",
    "failover",
    "connect",
    "tunnel",
    "open",
    "upload",
    "download",
    "sync",
    "reboot",
    "redeploy",
    "deallocate",
    "capture",
    "generalize",
    "regenerate",
    "renew",
    "rotate",
    "use",
    "switch",
    "configure",
    "edit",
    "merge",
    "close",
    "reopen",
    "lock",
    "unlock",
    "transfer",
    "assign",
    "unassign",
    "register",
    "unregister",
    "terminate",
    "kill",
    "scale",
    "drain",
    "wait",
    "trigger",
    "send",
    "receive",
    "claim",
    "recover",
    "run",
    "execute",
    "deprecate",
    "advance",
    "abandon",
    "retry",
    "ack",
    "seek",
    "recreate",
    "repair",
    "reconcile",
];

/// Prefixes of commands that act (`add-iam-policy-binding`, `set-iam-policy`).
const ACTING_PREFIXES: &[&str] = &[
    "add-",
    "remove-",
    "set-",
    "unset-",
    "delete-",
    "create-",
    "update-",
    "enable-",
    "disable-",
    "attach-",
    "detach-",
    "reset-",
    "start-",
    "stop-",
    "modify-",
    "simulate-",
];

/// True when `word` is a command that acts ([`ACTS`], [`ACTING_PREFIXES`]).
pub(super) fn acts(word: &str) -> bool {
    named(word, ACTS, ACTING_PREFIXES)
}

/// Reads a command path as groups and a verb: the first word that `reads` (at index 1 or
/// later, or at index 0 when it is one of `top`) is the verb and the words after it are its
/// operands. Returns the verb's place in `path`, or flags the command: a word before the verb
/// and after the first (a group) that acts ([`acts`]) is named as writing, and a path with no reading verb is named at the
/// word that acts, else at its last word (or the option that ended it, or the program).
pub(super) fn verb(
    scan: &mut Scan<'_>,
    path: &[(usize, &str)],
    stop: Option<usize>,
    top: &[&str],
    reads: impl Fn(&str) -> bool,
    why: &'static str,
) -> Option<usize> {
    let found = path
        .iter()
        .enumerate()
        .position(|(k, &(_, w))| (k > 0 && reads(w)) || (k == 0 && top.contains(&w)));
    let before = &path[..found.unwrap_or(path.len())];
    if let Some(&(i, _)) = before.iter().skip(1).find(|(_, w)| acts(w)) {
        scan.flag(
            i,
            Effect::Writes,
            "a command that acts (creates, deletes, sets, starts, connects, ...): the words \
             after it are its operands",
        );
        return None;
    }
    if found.is_none() {
        let at = path.last().map(|&(i, _)| i).or(stop).unwrap_or(0);
        scan.flag(at, Effect::Unknown, why);
    }
    found
}

/// True when `word` starts with one of `prefixes` or is one of `exact`.
pub(super) fn named(word: &str, exact: &[&str], prefixes: &[&str]) -> bool {
    exact.contains(&word) || prefixes.iter().any(|p| word.starts_with(p))
}

/// A program whose first operand (or first two or three) names what it does: read-only only
/// when that subcommand is listed in `reads` (as `sub`, `sub subsub`, ...). `valued` are
/// global options that take the next word. Help (`--help`, `-h` as the last word) is read-only
/// alone or right after a subcommand in `reads` or `known`; after any other word it may be a
/// plugin's, which would run it, or an operand of the command it runs (`uv run pytest --help`).
pub(super) fn subcommand(scan: &mut Scan<'_>, valued: &[&str], reads: &[&str], known: &[&str]) {
    let words = scan.words;
    let help = |k: usize| k + 1 == words.len() && matches!(words[k].as_str(), "--help" | "-h");
    let mut at = 1;
    while let Some(w) = words.get(at) {
        if !w.starts_with('-') || reads.contains(&w.as_str()) {
            break;
        }
        if help(at) {
            return;
        }
        at += if valued.contains(&w.as_str()) { 2 } else { 1 };
    }
    let Some(first) = words.get(at) else {
        return scan.flag(
            0,
            Effect::Unknown,
            "no subcommand: the classifier reads only those it lists",
        );
    };
    if (reads.contains(&first.as_str()) || known.contains(&first.as_str())) && help(at + 1) {
        return;
    }
    for len in 1..=3 {
        if words.len() >= at + len && reads.contains(&words[at..at + len].join(" ").as_str()) {
            return;
        }
    }
    scan.flag(
        at,
        Effect::Unknown,
        "a subcommand the classifier does not know to be read-only",
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split(' ').map(str::to_owned).collect()
    }

    const G: Globals = Globals {
        valued: &["--query", "-o"],
        flags: &["--debug"],
    };

    #[test]
    fn a_path_skips_global_options_and_their_values_and_stops_at_an_unknown_option() {
        let w = words("az --query delete --debug --x=1 vm list --resource-group g");
        let scan = Scan::new(&w);
        let (p, stop) = path(&scan, &G);
        assert_eq!(p, vec![(5, "vm"), (6, "list")]);
        assert_eq!(stop, Some(7));
    }

    #[test]
    fn help_is_asked_only_where_no_option_can_take_it_as_its_value() {
        for (line, asked) in [
            ("gh --help", true),
            ("gh pr create --help", true),
            ("gh pr create --title x --help", true),
            ("gh pr create --title --help", false),
            ("gh pr create -- --help", false),
            ("gh pr create --help x", false),
        ] {
            let w = words(line);
            assert_eq!(
                asks_help(&Scan::new(&w), &["--help", "-h"]),
                asked,
                "{line}"
            );
        }
    }

    #[test]
    fn a_word_that_acts_before_the_verb_makes_the_verb_its_operand() {
        let reads = |w: &str| w == "list" || w == "describe";
        let w = words("gcloud compute instances delete list");
        let mut scan = Scan::new(&w);
        let (p, stop) = path(&scan, &G);
        assert_eq!(verb(&mut scan, &p, stop, &[], reads, "no verb"), None);
        assert_eq!(scan.findings[0].word, 3);
        assert_eq!(scan.findings[0].effect, Effect::Writes);
        let w = words("gcloud compute instances describe my-vm");
        let mut scan = Scan::new(&w);
        let (p, stop) = path(&scan, &G);
        assert_eq!(verb(&mut scan, &p, stop, &[], reads, "no verb"), Some(2));
        assert!(scan.findings.is_empty());
        assert!(acts("add-iam-policy-binding") && acts("delete") && !acts("deletes"));
        assert!(!acts("list") && !acts("instances") && !acts("settings"));
    }
}
