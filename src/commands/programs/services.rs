//! Hosted services' CLIs read as a command path ([`super::cli`]): `gh GROUP VERB` (and `gh
//! api`), `auth0 GROUP... VERB` (and `auth0 api`). Read-only when the verb only reads, no
//! option opens a browser or sends data, and nothing prints a secret.

use super::cli::{self, asks_help, path, Globals};
use super::{is_long, Effect, Scan};

const SECRET: &str = "prints a secret or a credential: the operator is asked, since a read-only \
                      approval does not raise the session's label";

const GH: Globals = Globals {
    valued: &["-R", "--repo"],
    flags: &["--version"],
};

/// gh's own command groups. Any other first word is an alias or an extension (a program of
/// its own), which can run anything.
const GH_GROUPS: &[&str] = &[
    "pr",
    "issue",
    "repo",
    "run",
    "workflow",
    "release",
    "gist",
    "search",
    "cache",
    "secret",
    "variable",
    "label",
    "auth",
    "config",
    "codespace",
    "cs",
    "extension",
    "extensions",
    "ext",
    "alias",
    "ssh-key",
    "gpg-key",
    "project",
    "org",
    "ruleset",
    "rs",
    "attestation",
    "at",
    "status",
    "browse",
    "api",
    "help",
    "version",
    "completion",
];

/// gh verbs that only read.
const GH_READS: &[&str] = &[
    "list",
    "ls",
    "view",
    "status",
    "diff",
    "checks",
    "watch",
    "verify",
    "verify-asset",
    "trusted-root",
    "field-list",
    "item-list",
    "check",
    "logs",
    "ports",
    "get",
    "search",
];

/// `gh [-R REPO] GROUP VERB [operands] [options]`.
pub(super) fn gh(scan: &mut Scan<'_>) {
    let (words, stop) = path(scan, &GH);
    let known = words.first().is_none_or(|(_, g)| GH_GROUPS.contains(g));
    if known && asks_help(scan, &["--help", "-h"]) {
        return;
    }
    let web = |scan: &mut Scan<'_>, from: usize, letter: &str| {
        scan.options(
            from,
            letter,
            &["--web"],
            Effect::Runs,
            "gh --web opens a web browser",
        )
    };
    match words.as_slice() {
        [] if scan.words.iter().any(|w| w == "--version") => {}
        [] => scan.flag(stop.unwrap_or(0), Effect::Unknown, "gh with no command"),
        [(i, g), ..] if !GH_GROUPS.contains(g) => scan.flag(
            *i,
            Effect::Unknown,
            "not a gh command: an alias or an extension, which can run anything",
        ),
        [(_, "version" | "help" | "completion" | "status"), ..] => {}
        [(i, "browse"), ..] => {
            if !scan.has(i + 1, "n", &["--no-browser"]) {
                scan.flag(*i, Effect::Runs, "gh browse opens a web browser");
            }
        }
        [(i, "api"), ..] => api(scan, *i),
        [(_, "search"), (i, "repos" | "issues" | "prs" | "commits" | "code"), ..] => {
            web(scan, i + 1, "w")
        }
        [(i, _)] => scan.flag(*i, Effect::Unknown, "a gh group with no verb"),
        [(_, group), (i, verb), ..] if GH_READS.contains(verb) => {
            let i = *i;
            // `gh run list -w NAME` names a workflow; elsewhere `-w` is `--web`.
            web(scan, i + 1, if *group == "run" { "" } else { "w" });
            let token = words.get(2).is_some_and(|&(_, key)| key.contains("token"));
            if (*group == "auth" && scan.has(i + 1, "t", &["--show-token"]))
                || (*group == "config" && token)
            {
                scan.flag(i, Effect::Unknown, SECRET);
            }
            // `gh codespace ports forward` and `ports visibility` act; `ports` alone lists.
            if *verb == "ports" {
                if let Some(&(k, _)) = words.get(2) {
                    scan.flag(
                        k,
                        Effect::Writes,
                        "gh codespace ports forwards or changes a port",
                    );
                }
            }
        }
        [(_, "auth"), (i, "token"), ..] => scan.flag(*i, Effect::Unknown, SECRET),
        [_, (i, verb), ..] => {
            let effect = if cli::acts(verb) || *verb == "download" {
                Effect::Writes
            } else {
                Effect::Unknown
            };
            scan.flag(*i, effect, "a gh command that does not only read");
        }
    }
}

/// `gh api ENDPOINT`: a GET (the default, unless a field or `--input` makes it a POST) only
/// reads; `gh api graphql` reads when its query is not a mutation.
fn api(scan: &mut Scan<'_>, at: usize) {
    let words = scan.words;
    let mut method: Option<(usize, String)> = None;
    let mut body: Option<usize> = None;
    let mut queries: Vec<(usize, &str)> = Vec::new();
    let mut endpoint = None;
    let mut j = at + 1;
    while let Some(w) = words.get(j) {
        let w = w.as_str();
        let (name, glued) = match w.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ if w.len() > 2 && !w.starts_with("--") && w.starts_with('-') => {
                (&w[..2], Some(&w[2..]))
            }
            _ => (w, None),
        };
        let value = glued.or_else(|| words.get(j + 1).map(String::as_str));
        let takes = |n: &str| glued.is_none() && n.starts_with('-');
        j += 1;
        match name {
            "-X" | "--method" => {
                method = value.map(|m| (j - 1, m.to_ascii_uppercase()));
                j += usize::from(takes(name));
            }
            "-f" | "-F" | "--field" | "--raw-field" => {
                body.get_or_insert(j - 1);
                if let Some(v) = value {
                    let (key, text) = v.split_once('=').unwrap_or((v, ""));
                    if name != "-f" && name != "--raw-field" && text.starts_with('@') {
                        scan.flag(
                            j - 1,
                            Effect::Unknown,
                            "gh api reads this field from a file nobody saw",
                        );
                    } else if key == "query" {
                        queries.push((j - 1, text));
                    }
                }
                j += usize::from(takes(name));
            }
            "--input" => {
                scan.flag(
                    j - 1,
                    Effect::Sends,
                    "gh api --input sends a file as the request body",
                );
                j += usize::from(takes(name));
            }
            "-H" | "--header" => {
                if value
                    .is_some_and(|h| h.to_ascii_lowercase().starts_with("x-http-method-override"))
                {
                    scan.flag(
                        j - 1,
                        Effect::Sends,
                        "a header that overrides the request's method",
                    );
                }
                j += usize::from(takes(name));
            }
            "-q" | "--jq" | "-t" | "--template" | "--hostname" | "--cache" | "-p" | "--preview" => {
                j += usize::from(takes(name));
            }
            "--paginate" | "--slurp" | "-i" | "--include" | "--silent" | "--verbose" => {}
            _ if w.starts_with('-') && w.len() > 1 => scan.flag(
                j - 1,
                Effect::Unknown,
                "a gh api option the classifier does not know",
            ),
            _ => {
                endpoint.get_or_insert(w);
            }
        }
    }
    if endpoint == Some("graphql") {
        for (i, query) in queries {
            let q = query.to_ascii_lowercase();
            if q.contains("mutation") || q.contains("subscription") {
                scan.flag(
                    i,
                    Effect::Sends,
                    "a GraphQL mutation changes what the service holds",
                );
            }
        }
        return;
    }
    match (method, body) {
        (Some((i, m)), _) if !matches!(m.as_str(), "GET" | "HEAD") => scan.flag(
            i,
            Effect::Sends,
            "gh api with a method that is not GET or HEAD",
        ),
        (None, Some(i)) => scan.flag(
            i,
            Effect::Sends,
            "gh api with a field and no -X GET sends a POST",
        ),
        _ => {}
    }
}

const AUTH0: Globals = Globals {
    valued: &["--tenant", "-t"],
    flags: &["--debug", "--no-color", "--no-input", "--json", "--csv"],
};

/// `auth0 [--tenant T] GROUP... VERB [operands]`, `auth0 api [METHOD] PATH`.
pub(super) fn auth0(scan: &mut Scan<'_>) {
    if asks_help(scan, &["--help", "-h"]) {
        return;
    }
    scan.options(1, "", &["--reveal-secrets"], Effect::Unknown, SECRET);
    let (words, stop) = path(scan, &AUTH0);
    if let [(_, "api"), rest @ ..] = words.as_slice() {
        if let Some(&(i, _)) = rest.first().filter(|(_, m)| {
            matches!(
                m.to_ascii_lowercase().as_str(),
                "post" | "put" | "patch" | "delete"
            )
        }) {
            return scan.flag(i, Effect::Sends, "auth0 api with a method that is not GET");
        }
        let data = scan.options_from(1).into_iter().find(|(_, w)| {
            *w == "-d" || w.starts_with("-d") && !w.starts_with("--") || is_long(w, "--data")
        });
        if let Some((i, _)) = data {
            scan.flag(i, Effect::Sends, "auth0 api with data sends a POST");
        }
        return;
    }
    cli::verb(
        scan,
        &words,
        stop,
        &[],
        |w| {
            matches!(
                w,
                "list" | "ls" | "show" | "search" | "search-by-email" | "tail" | "diff" | "stats"
            )
        },
        "an auth0 command with no verb known to only read (list, show, search, tail)",
    );
}

#[cfg(test)]
mod tests {

    use super::super::deciding_word as word;

    #[test]
    fn gh_reads_its_listing_and_viewing_verbs_and_a_get_of_its_api() {
        for line in [
            "gh pr list --state open",
            "gh -R owner/repo pr view 123 --json title",
            "gh run list -w build.yml",
            "gh search code 'func main' --language go",
            "gh api repos/o/r/pulls --paginate -q '.[].title'",
            "gh api -X GET search/issues -f q=repo:cli/cli",
            "gh api graphql -f query='query { viewer { login } }'",
            "gh browse -n",
            "gh pr create --help",
            "gh --version",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
    }

    #[test]
    fn gh_commands_that_write_open_a_browser_send_or_print_a_token_are_not_read_only() {
        for (line, w) in [
            ("gh pr create --title x", "create"),
            ("gh pr view 1 --web", "--web"),
            ("gh issue list -w", "-w"),
            ("gh browse", "browse"),
            ("gh run download 1", "download"),
            ("gh auth token", "token"),
            ("gh auth status --show-token", "status"),
            ("gh codespace ports forward 80:80", "forward"),
            ("gh config get oauth_token", "get"),
            ("gh api repos/o/r/issues -f title=bug", "-f"),
            ("gh api -X POST repos/o/r/issues", "-X"),
            ("gh api --method=PATCH repos/o/r", "--method=PATCH"),
            ("gh api repos/o/r --input body.json", "--input"),
            ("gh api graphql -f query='mutation { x }'", "-f"),
            ("gh my-extension list", "my-extension"),
            ("gh my-extension --help", "my-extension"),
            ("gh pr create --title --help", "create"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }

    #[test]
    fn auth0_reads_its_listing_verbs_and_a_get_of_its_api() {
        for line in [
            "auth0 apps list",
            "auth0 --tenant t users show user_1",
            "auth0 protection bpd show",
            "auth0 logs tail --filter type:s",
            "auth0 api get clients",
            "auth0 api stats/daily",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("auth0 apps create --name x", "create"),
            ("auth0 apps delete list", "delete"),
            ("auth0 apps list --reveal-secrets", "--reveal-secrets"),
            ("auth0 api post clients", "post"),
            ("auth0 api clients -d '{}'", "-d"),
            ("auth0 test token", "token"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }
}
