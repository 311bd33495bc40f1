//! Cloud CLIs read as a command path ([`super::cli`]): `aws SERVICE OPERATION`, `az GROUP...
//! VERB`, `gcloud GROUP... VERB`. Read-only when the operation or verb only reads (`list`,
//! `describe`, `show`, `get-...`), no word before it acts, and nothing in it prints a secret:
//! a command whose purpose is to print a secret or a credential (`aws secretsmanager
//! get-secret-value`, `az storage account keys list`) hands the session an authority the
//! operator did not see, and the classifier cannot raise the session's label; it asks.

use super::cli::{self, asks_help, named, path, Globals};
use super::{Effect, Scan};

const SECRET: &str = "prints a secret or a credential: the operator is asked, since a read-only \
                      approval does not raise the session's label";

const AWS: Globals = Globals {
    valued: &[
        "--profile",
        "--region",
        "--output",
        "--endpoint-url",
        "--query",
        "--color",
        "--cli-read-timeout",
        "--cli-connect-timeout",
        "--ca-bundle",
        "--cli-binary-format",
    ],
    flags: &[
        "--debug",
        "--no-verify-ssl",
        "--no-paginate",
        "--no-sign-request",
        "--no-cli-pager",
        "--no-cli-auto-prompt",
        "--version",
    ],
};

/// An aws operation that only reads.
fn aws_reads(service: &str, op: &str) -> bool {
    named(
        op,
        &[
            "test-dns-answer",
            "check-if-phone-number-is-opted-out",
            "download-db-log-file-portion",
        ],
        &[
            "list-",
            "describe-",
            "get-",
            "batch-get-",
            "head-",
            "lookup-",
            "filter-",
            "search-",
            "validate-",
            "estimate-",
            "simulate-",
            "admin-get-",
            "admin-list-",
        ],
    ) || (service == "dynamodb" && matches!(op, "scan" | "query" | "transact-get-items"))
}

/// `aws [options] SERVICE OPERATION [options]`, `aws SERVICE help`, `aws s3 ls`.
pub(super) fn aws(scan: &mut Scan<'_>) {
    scan.exact(
        1,
        &["--cli-auto-prompt"],
        Effect::Unknown,
        "aws --cli-auto-prompt lets a prompt change the command before it runs",
    );
    if asks_help(scan, &["--help"]) {
        return;
    }
    let (words, stop) = path(scan, &AWS);
    let last = scan.words.len() - 1;
    let help_at = |k: usize| words.len() == k + 1 && words[k] == (last, "help");
    match words.as_slice() {
        [] if scan.words.iter().any(|w| w == "--version") => {}
        [] => scan.flag(stop.unwrap_or(0), Effect::Unknown, "aws with no service"),
        _ if help_at(0) || help_at(1) => {}
        [_] => scan.flag(words[0].0, Effect::Unknown, "aws with no operation"),
        [(_, "s3"), (_, "ls"), ..] | [(_, "logs"), (_, "tail"), ..] => {}
        [(_, "configure"), (_, "list" | "list-profiles"), ..] => {}
        [(_, "configure"), (_, "get"), rest @ ..] => {
            let secret = rest
                .iter()
                .find(|(_, k)| k.contains("secret") || k.contains("token"));
            if let Some(&(i, _)) = secret {
                scan.flag(i, Effect::Unknown, SECRET);
            }
        }
        [(_, "configure"), (i, "export-credentials"), ..] => scan.flag(*i, Effect::Unknown, SECRET),
        [(_, service), (i, op), ..] if aws_reads(service, op) => {
            let i = *i;
            if op.ends_with("-token")
                || op.ends_with("-password")
                || *op == "get-login"
                || [
                    "secret-value",
                    "password-data",
                    "credentials",
                    "access-details",
                ]
                .iter()
                .any(|s| op.contains(s))
            {
                scan.flag(i, Effect::Unknown, SECRET);
            }
            scan.exact(i + 1, &["--with-decryption"], Effect::Unknown, SECRET);
            aws_outfile(scan, i, help_at(2));
        }
        [_, (i, op), ..] => {
            let first = op.split('-').next().unwrap_or(op);
            let effect = if cli::acts(first) {
                Effect::Writes
            } else {
                Effect::Unknown
            };
            scan.flag(
                *i,
                effect,
                "an aws operation that is not known to only read (list-, describe-, get-, ...)",
            );
        }
    }
}

/// An aws operation's options take one value or more; a word that follows neither an option
/// nor another value is an operand, which for a streaming operation is the file it writes
/// (`aws s3api get-object --bucket b --key k FILE`). A second value after an option is read
/// as that file too, which is stricter than a list option needs.
fn aws_outfile(scan: &mut Scan<'_>, op: usize, help: bool) {
    let words = scan.words;
    let mut after_option = false;
    for (j, w) in words.iter().enumerate().skip(op + 1) {
        if w.starts_with("--") {
            let flag = (AWS.flags.contains(&w.as_str()) && w != "--version")
                || w.starts_with("--no-")
                || w.contains('=')
                || matches!(
                    w.as_str(),
                    "--with-decryption" | "--recursive" | "--dry-run" | "--follow" | "--descending"
                );
            after_option = !flag;
        } else if after_option {
            after_option = false;
        } else if !(help && j == words.len() - 1) {
            scan.flag(
                j,
                Effect::WritesTo,
                "an operand of an aws operation is the file a streaming operation writes",
            );
        }
    }
}

const AZ: Globals = Globals {
    valued: &["--subscription", "--query", "-o", "--output"],
    flags: &["--debug", "--verbose", "--only-show-errors", "--version"],
};

/// An az verb that only reads.
fn az_reads(verb: &str) -> bool {
    verb != "get-credentials"
        && named(
            verb,
            &[
                "list",
                "show",
                "get",
                "exists",
                "query",
                "tail",
                "logs",
                "url",
                "version",
                "summarize",
            ],
            &["list-", "show-", "get-"],
        )
}

/// `az [options] GROUP... VERB [options]`.
pub(super) fn az(scan: &mut Scan<'_>) {
    if asks_help(scan, &["--help", "-h"]) {
        return;
    }
    let (words, stop) = path(scan, &AZ);
    if words.is_empty() && scan.words.iter().any(|w| w == "--version") {
        return;
    }
    if let [(_, "devops"), (i, "configure")] = words.as_slice() {
        if !scan.has(i + 1, "l", &["--list"]) || scan.has(i + 1, "d", &["--defaults"]) {
            scan.flag(*i, Effect::Writes, "az devops configure sets defaults");
        }
        return;
    }
    if flags_get_credentials(scan, &words) {
        return;
    }
    let Some(k) = cli::verb(
        scan,
        &words,
        stop,
        &["version", "find"],
        az_reads,
        "an az command with no verb known to only read (list, show, get-..., exists)",
    ) else {
        return;
    };
    let (i, verb) = words[k];
    let group = |w: &str| words[..k].iter().any(|&(_, g)| g == w);
    if group("keys")
        || group("credential")
        || group("credentials")
        || (group("secret") && verb == "show")
        || [
            "keys",
            "connection-string",
            "access-token",
            "publishing",
            "password",
        ]
        .iter()
        .any(|s| verb.contains(s))
    {
        scan.flag(i, Effect::Unknown, SECRET);
    }
}

const GCLOUD: Globals = Globals {
    valued: &[
        "--project",
        "--format",
        "--account",
        "--configuration",
        "--region",
        "--zone",
        "--verbosity",
        "--billing-project",
        "--impersonate-service-account",
        "--trace-token",
        "--access-token-file",
    ],
    flags: &["--quiet", "-q", "--log-http", "--no-user-output-enabled"],
};

/// A gcloud verb that only reads.
fn gcloud_reads(verb: &str) -> bool {
    verb != "get-credentials"
        && named(
            verb,
            &["list", "describe", "get", "read", "tail", "ls", "cat"],
            &["list-", "describe-", "get-"],
        )
}

/// `gcloud [options] [alpha|beta] GROUP... VERB [operands] [options]`.
pub(super) fn gcloud(scan: &mut Scan<'_>) {
    scan.options(
        1,
        "",
        &["--flags-file"],
        Effect::Unknown,
        "gcloud --flags-file reads options from a file nobody saw",
    );
    if asks_help(scan, &["--help", "-h"]) {
        return;
    }
    let (mut words, stop) = path(scan, &GCLOUD);
    if words
        .first()
        .is_some_and(|(_, w)| matches!(*w, "alpha" | "beta" | "preview"))
    {
        words.remove(0);
    }
    if flags_get_credentials(scan, &words) {
        return;
    }
    // `gcloud run` is a group (`gcloud run services list`), and `run deploy` acts.
    let Some(k) = cli::verb(
        scan,
        &words,
        stop,
        &["info", "version", "help", "topic"],
        gcloud_reads,
        "a gcloud command with no verb known to only read (list, describe, get-..., read)",
    ) else {
        return;
    };
    let (i, verb) = words[k];
    if ["token", "password", "auth-string"]
        .iter()
        .any(|s| verb.contains(s))
    {
        scan.flag(i, Effect::Unknown, SECRET);
    }
}

/// `az aks get-credentials` and `gcloud container clusters get-credentials` write the cluster's
/// credentials into the kubeconfig: flags the word and says so.
fn flags_get_credentials(scan: &mut Scan<'_>, words: &[(usize, &str)]) -> bool {
    let Some(&(i, _)) = words.iter().find(|(_, w)| *w == "get-credentials") else {
        return false;
    };
    scan.flag(
        i,
        Effect::Writes,
        "writes the cluster's credentials to the kubeconfig",
    );
    true
}

#[cfg(test)]
mod tests {

    use super::super::deciding_word as word;

    #[test]
    fn aws_reads_list_describe_and_get_operations_past_its_global_options() {
        for line in [
            "aws s3 ls s3://bucket --recursive",
            "aws --profile prod --region us-west-2 lambda list-functions",
            "aws ec2 describe-instances --filters Name=tag:Name,Values=x",
            "aws ec2 describe-instances help",
            "aws dynamodb query --table-name t",
            "aws s3 rm --help",
            "aws logs tail --log-group-name g --follow",
            "aws configure get region",
            "aws configure get aws_access_key_id",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
    }

    #[test]
    fn aws_operations_that_write_stream_to_a_file_or_print_secrets_are_not_read_only() {
        for (line, w) in [
            ("aws s3 cp a s3://b/a", "cp"),
            (
                "aws ec2 terminate-instances --instance-ids i-1",
                "terminate-instances",
            ),
            ("aws s3api get-object --bucket b --key k out.bin", "out.bin"),
            (
                "aws secretsmanager get-secret-value --secret-id s",
                "get-secret-value",
            ),
            (
                "aws ssm get-parameter --name p --with-decryption",
                "--with-decryption",
            ),
            ("aws ecr get-login-password", "get-login-password"),
            ("aws sqs receive-message --queue-url q", "receive-message"),
            (
                "aws --cli-auto-prompt ec2 describe-instances",
                "--cli-auto-prompt",
            ),
            ("aws s3", "s3"),
            (
                "aws configure get aws_secret_access_key",
                "aws_secret_access_key",
            ),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }

    #[test]
    fn az_reads_a_verb_after_its_groups_and_global_values_are_never_verbs() {
        for line in [
            "az --query delete vm list",
            "az -o delete vm list",
            "az network vnet subnet list --vnet-name v -g g",
            "az vm show -g g -n vm",
            "az vm delete --help",
            "az find 'how to create vm'",
            "az devops configure --list",
            "az --version",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("az vm delete list", "delete"),
            ("az vm create -n x", "create"),
            ("az --subscription s vm delete x", "delete"),
            ("az aks get-credentials -n c", "get-credentials"),
            ("az storage account keys list -n a", "list"),
            ("az keyvault secret show --name s", "show"),
            ("az account get-access-token", "get-access-token"),
            ("az devops configure --defaults project=p", "configure"),
            ("az login", "login"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }

    #[test]
    fn gcloud_reads_a_verb_and_its_operands_but_not_one_that_a_command_takes_as_its_operand() {
        for line in [
            "gcloud --project delete compute instances list",
            "gcloud compute instances describe my-vm --zone z",
            "gcloud beta run services list",
            "gcloud logging read 'severity>=ERROR'",
            "gcloud help compute instances",
            "gcloud config get-value project",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("gcloud compute instances delete list", "delete"),
            ("gcloud run deploy svc", "deploy"),
            (
                "gcloud container clusters get-credentials c",
                "get-credentials",
            ),
            ("gcloud auth print-access-token", "print-access-token"),
            (
                "gcloud --flags-file=f.yaml compute instances list",
                "--flags-file=f.yaml",
            ),
            ("gcloud compute", "compute"),
            (
                "gcloud redis instances get-auth-string r",
                "get-auth-string",
            ),
            (
                "gcloud compute instances simulate-maintenance-event list",
                "simulate-maintenance-event",
            ),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }
}
