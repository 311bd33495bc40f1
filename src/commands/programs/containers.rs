//! Container tools: `docker` and `podman`, their `compose` (and `docker-compose`,
//! `podman-compose`), and `kubectl`: read-only in the subcommands listed, with no option that
//! writes a file or loads a plugin.

use super::cli::subcommand;
use super::{Effect, Scan};

/// docker's global options that take a value.
const DOCKER_VALUED: &[&str] = &[
    "-H",
    "--host",
    "-c",
    "--context",
    "--config",
    "-l",
    "--log-level",
];

/// docker subcommands that only read.
const DOCKER_READS: &[&str] = &[
    "ps",
    "images",
    "inspect",
    "logs",
    "version",
    "info",
    "top",
    "port",
    "diff",
    "history",
    "search",
    "events",
    "stats",
    "export",
    "save",
    "container ls",
    "container ps",
    "container list",
    "container inspect",
    "container logs",
    "container top",
    "container port",
    "container diff",
    "container stats",
    "container export",
    "image ls",
    "image list",
    "image inspect",
    "image history",
    "image save",
    "network ls",
    "network inspect",
    "volume ls",
    "volume inspect",
    "system df",
    "system info",
    "system events",
    "context ls",
    "context show",
    "context inspect",
    "service ls",
    "service list",
    "service inspect",
    "service ps",
    "service logs",
    "secret ls",
    "secret inspect",
    "config ls",
    "config inspect",
    "stack ls",
    "stack ps",
    "stack services",
    "node ls",
    "node inspect",
    "node ps",
    "plugin ls",
    "plugin inspect",
    "buildx ls",
    "buildx inspect",
    "buildx du",
    "buildx version",
    "buildx imagetools inspect",
    "manifest inspect",
    "trust inspect",
];

/// docker's own commands that act, for `docker COMMAND --help`.
const DOCKER_ACTS: &[&str] = &[
    "run",
    "exec",
    "build",
    "pull",
    "push",
    "rm",
    "rmi",
    "start",
    "stop",
    "restart",
    "kill",
    "create",
    "cp",
    "commit",
    "tag",
    "login",
    "logout",
    "network",
    "volume",
    "image",
    "container",
    "system",
    "builder",
    "load",
    "import",
    "pause",
    "unpause",
    "rename",
    "update",
    "wait",
    "attach",
];

/// `docker`, `podman`: their reading subcommands, and `compose`.
pub(super) fn docker(scan: &mut Scan<'_>) {
    let words = scan.words;
    let mut at = 1;
    while let Some(w) = words.get(at).filter(|w| w.starts_with('-')) {
        at += if DOCKER_VALUED.contains(&w.as_str()) {
            2
        } else {
            1
        };
    }
    if words.get(at).is_some_and(|w| w == "compose") {
        return compose(scan, at + 1);
    }
    subcommand(scan, DOCKER_VALUED, DOCKER_READS, DOCKER_ACTS);
    // `docker save`, `docker export`: to standard output, unless -o names a file.
    if words
        .get(at)
        .is_some_and(|w| matches!(w.as_str(), "save" | "export" | "image" | "container"))
    {
        scan.options(
            at + 1,
            "o",
            &["--output"],
            Effect::WritesTo,
            "writes the archive to the file it names",
        );
    }
}

/// `docker compose [options] COMMAND` (and `docker-compose`, `podman-compose`, with `from` 1).
pub(super) fn compose(scan: &mut Scan<'_>, from: usize) {
    const VALUED: &[&str] = &[
        "-f",
        "--file",
        "-p",
        "--project-name",
        "--project-directory",
        "--env-file",
        "--profile",
        "--ansi",
        "--parallel",
        "--progress",
    ];
    let words = scan.words;
    let mut at = from;
    while let Some(w) = words.get(at).filter(|w| w.starts_with('-')) {
        if matches!(w.as_str(), "--help" | "-h" | "--version" | "-v") && at + 1 == words.len() {
            return;
        }
        at += if VALUED.contains(&w.as_str()) { 2 } else { 1 };
    }
    match words.get(at).map(String::as_str) {
        Some(
            "ps" | "logs" | "config" | "ls" | "images" | "version" | "top" | "port" | "events",
        ) => scan.options(
            at + 1,
            "o",
            &["--output"],
            Effect::WritesTo,
            "docker compose config -o writes the file it names",
        ),
        _ => scan.flag(
            at.min(words.len() - 1),
            Effect::Unknown,
            "a compose command the classifier does not know to only read",
        ),
    }
}

/// `kubectl`, `oc`: their reading subcommands.
pub(super) fn kubectl(scan: &mut Scan<'_>) {
    const VALUED: &[&str] = &[
        "-n",
        "--namespace",
        "--context",
        "--kubeconfig",
        "--cluster",
        "--user",
        "-s",
        "--server",
    ];
    subcommand(
        scan,
        VALUED,
        &[
            "get",
            "describe",
            "logs",
            "explain",
            "version",
            "api-resources",
            "api-versions",
            "cluster-info",
            "top",
            "events",
            "diff",
            "wait",
            "completion",
            "kustomize",
            "--version",
            "config view",
            "config get-contexts",
            "config current-context",
            "config get-clusters",
            "config get-users",
            "auth can-i",
            "auth whoami",
            "rollout status",
            "rollout history",
            "plugin list",
        ],
        &[
            "apply",
            "create",
            "delete",
            "edit",
            "patch",
            "replace",
            "scale",
            "rollout",
            "exec",
            "run",
            "cp",
            "port-forward",
            "label",
            "annotate",
            "drain",
            "cordon",
            "uncordon",
            "taint",
            "expose",
            "set",
            "autoscale",
            "attach",
            "proxy",
            "debug",
            "config",
            "auth",
        ],
    );
    scan.exact(
        1,
        &["--enable-alpha-plugins", "--enable-exec", "--enable-helm"],
        Effect::Runs,
        "kubectl kustomize runs the plugins or programs the kustomization names",
    );
    if scan.words.iter().any(|w| w == "kustomize") {
        scan.options(
            1,
            "o",
            &["--output"],
            Effect::WritesTo,
            "kubectl kustomize -o writes the files it names",
        );
    }
}

#[cfg(test)]
mod tests {

    use super::super::deciding_word as word;

    #[test]
    fn docker_and_compose_read_in_their_listing_subcommands_and_help() {
        for line in [
            "docker ps -a",
            "docker buildx imagetools inspect nginx",
            "docker save myimage",
            "docker run --help",
            "docker compose -f c.yml --project-name p ps",
            "docker-compose logs -f",
            "kubectl wait --for=condition=Ready pod/x",
            "kubectl delete --help",
            "kubectl -h",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("docker run --rm alpine", "run"),
            ("docker run alpine --help", "run"),
            ("docker save -o img.tar myimage", "-o"),
            ("docker buildx imagetools create -t x y", "buildx"),
            ("docker compose up -d", "up"),
            ("docker compose config -o out.yml", "-o"),
            ("docker frob --help", "frob"),
            ("kubectl frob --help", "frob"),
            ("kubectl kustomize --enable-exec .", "--enable-exec"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }
}
