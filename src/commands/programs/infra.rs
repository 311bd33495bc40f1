//! Infrastructure tools: `helm`, `terraform`, `packer`, `cdk` and the `ansible` family. Each
//! reads in the subcommands listed; a subcommand that runs the project's code (`terraform
//! plan` runs external data sources, `cdk synth` runs the app, `ansible-playbook --check`
//! runs modules on the hosts) is not read-only, even where it changes nothing.

use super::cli::{self, asks_help, path, Globals};
use super::{Effect, Scan};

const HELM: Globals = Globals {
    valued: &[
        "-n",
        "--namespace",
        "--kube-context",
        "--kubeconfig",
        "--kube-apiserver",
        "--kube-as-user",
        "--kube-as-group",
        "--kube-ca-file",
        "--kube-token",
        "--kube-tls-server-name",
        "--registry-config",
        "--repository-cache",
        "--repository-config",
        "--burst-limit",
        "--qps",
        "--content-cache",
    ],
    flags: &["--debug", "--kube-insecure-skip-tls-verify", "--version"],
};

/// helm's own commands; any other is a plugin, a program of its own.
const HELM_COMMANDS: &[&str] = &[
    "completion",
    "create",
    "dependency",
    "dep",
    "dependencies",
    "env",
    "get",
    "help",
    "history",
    "hist",
    "install",
    "lint",
    "list",
    "ls",
    "package",
    "plugin",
    "pull",
    "fetch",
    "push",
    "registry",
    "repo",
    "rollback",
    "search",
    "show",
    "inspect",
    "status",
    "template",
    "test",
    "uninstall",
    "un",
    "delete",
    "del",
    "upgrade",
    "verify",
    "version",
];

/// `helm [options] COMMAND [SUBCOMMAND] [operands]`: read-only in its reading commands, and in
/// `install`, `upgrade`, `uninstall` and `rollback` with `--dry-run`.
pub(super) fn helm(scan: &mut Scan<'_>) {
    let (words, stop) = path(scan, &HELM);
    let command = words.first().map(|&(_, w)| w);
    if command.is_none_or(|c| HELM_COMMANDS.contains(&c)) && asks_help(scan, &["--help", "-h"]) {
        return;
    }
    let Some(&(i, command)) = words.first() else {
        if !scan.words.iter().any(|w| w == "--version") {
            scan.flag(stop.unwrap_or(0), Effect::Unknown, "helm with no command");
        }
        return;
    };
    let sub = words.get(1).map(|&(_, w)| w);
    let from = i + 1;
    match command {
        "version" | "env" | "completion" | "help" | "lint" | "verify" | "list" | "ls"
        | "status" | "history" | "hist" | "search" | "get" | "show" | "inspect" | "template" => {}
        "repo" | "dependency" | "dep" | "dependencies" | "plugin"
            if sub.is_some_and(|s| {
                matches!(s, "list" | "ls") || (command == "plugin" && s == "verify")
            }) => {}
        "install" | "upgrade" | "uninstall" | "un" | "delete" | "del" | "rollback" => {
            let dry = scan.words[from..].iter().any(|w| {
                w == "--dry-run"
                    || w.strip_prefix("--dry-run=")
                        .is_some_and(|m| matches!(m, "client" | "server" | "true"))
            });
            if !dry {
                scan.flag(
                    i,
                    Effect::Writes,
                    "helm changes a release unless it is a --dry-run",
                );
            }
        }
        c if HELM_COMMANDS.contains(&c) => {
            let at = words.get(1).map_or(i, |&(k, _)| k);
            scan.flag(
                at,
                Effect::Writes,
                "a helm command that changes a release, a chart or a repository",
            );
        }
        _ => scan.flag(i, Effect::Unknown, "a helm plugin, a program of its own"),
    }
    // helm's options are read as Go's pflag reads them: whole names, no abbreviations.
    scan.exact(
        from,
        &["--post-renderer"],
        Effect::Runs,
        "helm --post-renderer runs the program it names",
    );
    scan.exact(
        from,
        &["--output-dir"],
        Effect::WritesTo,
        "helm template --output-dir writes the files it renders",
    );
    scan.exact(
        from,
        &["--dependency-update"],
        Effect::Writes,
        "helm --dependency-update downloads the chart's dependencies into it",
    );
}

/// `terraform [-chdir=DIR] COMMAND [options]`.
pub(super) fn terraform(scan: &mut Scan<'_>) {
    const GLOBALS: Globals = Globals {
        valued: &["-chdir"],
        flags: &["-version", "--version", "-v"],
    };
    if asks_help(scan, &["-help", "--help", "-h"]) {
        return;
    }
    let (words, stop) = path(scan, &GLOBALS);
    let Some(&(i, command)) = words.first() else {
        if !scan
            .words
            .iter()
            .any(|w| GLOBALS.flags.contains(&w.as_str()))
        {
            scan.flag(
                stop.unwrap_or(0),
                Effect::Unknown,
                "terraform with no command",
            );
        }
        return;
    };
    let sub = words.get(1).copied();
    match (command, sub) {
        ("version" | "validate" | "graph" | "modules" | "output" | "show", _)
        | ("providers", None | Some((_, "schema")))
        | ("metadata", Some((_, "functions")))
        | ("state", Some((_, "list" | "show" | "pull")))
        | ("workspace", Some((_, "list" | "show"))) => {}
        ("fmt", _) => {
            let checks = scan.words[i + 1..]
                .iter()
                .any(|w| w == "-check" || w == "--check" || w == "-write=false");
            if !checks || scan.words.iter().any(|w| w == "-write=true") {
                scan.flag(
                    i,
                    Effect::Writes,
                    "terraform fmt rewrites files unless -check or -write=false",
                );
            }
        }
        ("plan", _) => scan.flag(
            i,
            Effect::Runs,
            "terraform plan runs the providers and any program the configuration names (an \
             external data source)",
        ),
        ("console", _) => scan.flag(
            i,
            Effect::Unknown,
            "terraform console evaluates what it reads from its input",
        ),
        ("providers" | "metadata" | "state" | "workspace", Some((k, _))) => scan.flag(
            k,
            Effect::Writes,
            "a terraform subcommand that changes state or files",
        ),
        _ => scan.flag(
            i,
            Effect::Writes,
            "a terraform command that changes state or files",
        ),
    }
}

/// `packer COMMAND [options] [template]`.
pub(super) fn packer(scan: &mut Scan<'_>) {
    if asks_help(scan, &["-help", "--help", "-h"]) {
        return;
    }
    let words = scan.operands(1);
    let Some(&(i, command)) = words.first() else {
        if !scan
            .words
            .iter()
            .any(|w| w == "--version" || w == "-version")
        {
            scan.flag(0, Effect::Unknown, "packer with no command");
        }
        return;
    };
    match (command, words.get(1).map(|&(_, w)| w)) {
        ("version" | "validate" | "inspect", _) | ("plugins", Some("installed" | "required")) => {}
        ("fmt", _)
            if scan
                .words
                .iter()
                .any(|w| w == "-check" || w == "-write=false") => {}
        ("console", _) => scan.flag(
            i,
            Effect::Unknown,
            "packer console evaluates what it reads from its input",
        ),
        _ => scan.flag(
            i,
            Effect::Writes,
            "a packer command that builds, installs or rewrites files",
        ),
    }
    scan.exact(
        i + 1,
        &["-evaluate-datasources"],
        Effect::Runs,
        "packer runs the template's data sources",
    );
}

/// `cdk COMMAND [options]`.
pub(super) fn cdk(scan: &mut Scan<'_>) {
    const GLOBALS: Globals = Globals {
        valued: &[
            "--app",
            "-a",
            "--context",
            "-c",
            "--profile",
            "--output",
            "-o",
            "--plugin",
            "-p",
            "--role-arn",
            "-r",
            "--proxy",
            "--ca-bundle-path",
        ],
        flags: &[
            "--version",
            "--json",
            "-j",
            "--verbose",
            "-v",
            "--debug",
            "--no-color",
            "--quiet",
            "-q",
        ],
    };
    if asks_help(scan, &["--help", "-h"]) {
        return;
    }
    let (words, stop) = path(scan, &GLOBALS);
    let Some(&(i, command)) = words.first() else {
        if !scan.words.iter().any(|w| w == "--version") {
            scan.flag(stop.unwrap_or(0), Effect::Unknown, "cdk with no command");
        }
        return;
    };
    match command {
        "version" | "doctor" | "notices" => {}
        "context" => scan.options(
            i + 1,
            "e",
            &["--reset", "--clear"],
            Effect::Writes,
            "cdk context --reset changes cdk.context.json",
        ),
        "list" | "ls" | "diff" | "synth" | "synthesize" | "metadata" => scan.flag(
            i,
            Effect::Runs,
            "cdk runs the app (cdk.json's app, or --app) to synthesize its stacks",
        ),
        "docs" | "doc" => scan.flag(i, Effect::Runs, "cdk docs opens a web browser"),
        _ => scan.flag(
            i,
            Effect::Writes,
            "a cdk command that deploys, changes or writes",
        ),
    }
}

/// The `ansible` programs: what lists, documents or checks syntax, and runs no module.
pub(super) fn ansible(name: &str, scan: &mut Scan<'_>) {
    if asks_help(scan, &["--help", "-h", "--version"]) {
        return;
    }
    let has = |scan: &Scan<'_>, long: &[&str]| scan.has(1, "", long);
    // An inventory given as a script is run to list the hosts.
    let words = scan.words;
    for (k, w) in words.iter().enumerate().skip(1) {
        let inventory = match w.as_str() {
            "-i" | "--inventory" | "--inventory-file" => words.get(k + 1).map(String::as_str),
            _ => w.strip_prefix("--inventory="),
        };
        if inventory.is_some_and(|i| {
            [".py", ".sh", ".rb", ".pl", ".js"]
                .iter()
                .any(|x| i.ends_with(x))
        }) {
            scan.flag(
                k,
                Effect::Runs,
                "an inventory script runs to list the hosts",
            );
        }
    }
    let first = scan.operands(1).first().copied();
    let sub = scan.operands(1).get(1).map(|&(_, w)| w);
    match name {
        "ansible-doc" => {}
        "ansible" | "ansible-console" if has(scan, &["--list-hosts"]) => {}
        "ansible-playbook" if has(scan, &["--syntax-check", "--list-hosts", "--list-tasks", "--list-tags"]) => {}
        "ansible-inventory" => scan.options(1, "", &["--output"], Effect::WritesTo, "ansible-inventory --output writes the file it names"),
        "ansible-config" if first.is_some_and(|(_, c)| matches!(c, "list" | "dump" | "view" | "validate")) => {}
        "ansible-galaxy"
            if first.is_some_and(|(_, g)| g == "role" || g == "collection")
                && sub.is_some_and(|s| matches!(s, "list" | "search" | "info" | "verify")) => {}
        "ansible-test" if first.is_some_and(|(_, c)| c == "env") => {}
        "ansible-vault" if first.is_some_and(|(_, c)| c == "view") => scan.flag(
            first.map_or(0, |(i, _)| i),
            Effect::Unknown,
            "prints a secret or a credential: the operator is asked, since a read-only approval \
             does not raise the session's label",
        ),
        "ansible" | "ansible-console" | "ansible-playbook" => scan.flag(
            0,
            Effect::Runs,
            "runs modules on the hosts: --check runs them too, and a task may opt out of check mode",
        ),
        "ansible-test" | "ansible-lint" => scan.flag(
            0,
            Effect::Runs,
            "runs a collection's tests, or the project's lint rules after installing its requirements",
        ),
        "ansible-pull" => scan.flag(0, Effect::Writes, "ansible-pull clones a repository and runs it"),
        _ => {
            let first = if name == "ansible-galaxy" { scan.operands(1).get(1).copied() } else { first };
            let at = first.map_or(0, |(i, _)| i);
            let effect = if first.is_some_and(|(_, c)| cli::acts(c)) { Effect::Writes } else { Effect::Unknown };
            scan.flag(at, effect, "an ansible command that installs, changes or fetches");
        }
    }
}

#[cfg(test)]
mod tests {

    use super::super::deciding_word as word;

    #[test]
    fn helm_reads_releases_and_charts_and_changes_them_only_without_dry_run() {
        for line in [
            "helm -n prod list",
            "helm get values r -n prod",
            "helm template r ./chart -f values.yaml",
            "helm install r nginx/nginx --dry-run=client",
            "helm install --help",
            "helm repo ls",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("helm install r nginx/nginx", "install"),
            ("helm install r c --dry-run=none", "install"),
            ("helm template r c --output-dir out", "--output-dir"),
            (
                "helm template r c --post-renderer ./x.sh",
                "--post-renderer",
            ),
            ("helm lint c --dependency-update", "--dependency-update"),
            ("helm repo add s https://x", "add"),
            ("helm diff upgrade r c", "diff"),
            ("helm diff --help", "diff"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }

    #[test]
    fn terraform_and_packer_read_state_and_check_format_but_plan_runs_code() {
        for line in [
            "terraform -chdir=infra validate -json",
            "terraform state show aws_instance.a",
            "terraform fmt -check -recursive",
            "terraform plan -help",
            "packer validate -syntax-only t.pkr.hcl",
            "packer fmt -check .",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("terraform plan -out=p", "plan"),
            ("terraform fmt", "fmt"),
            ("terraform state rm a.b", "rm"),
            ("terraform workspace select dev", "select"),
            ("terraform console", "console"),
            ("terraform apply", "apply"),
            ("packer build t.json", "build"),
            ("packer fmt .", "fmt"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }

    #[test]
    fn cdk_and_ansible_are_read_only_only_where_they_run_none_of_the_projects_code() {
        for line in [
            "cdk --version",
            "cdk deploy --help",
            "cdk context --json",
            "ansible-playbook site.yml --syntax-check",
            "ansible all --list-hosts",
            "ansible-galaxy collection list",
            "ansible-inventory --graph",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("cdk synth", "synth"),
            ("cdk list --app 'npx ts-node app.ts'", "list"),
            ("cdk deploy", "deploy"),
            ("ansible-playbook site.yml --check", "ansible-playbook"),
            ("ansible all -m ping", "ansible"),
            ("ansible-vault view s.yml", "view"),
            ("ansible-inventory --list --output i.json", "--output"),
            ("ansible-galaxy role install x", "install"),
            ("ansible-inventory -i inv.py --list", "-i"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }
}
