//! System tools that show state in some uses and change it in others (`ip`, `ifconfig`,
//! `dmesg`), file viewers with an option that runs or writes (`less`, `man`, `bat`), and
//! small macOS and server tools (`sips`, `symbols`, `prometheus`).

use super::{is_short, Effect, Scan};

/// `ip`'s objects in the order it matches an abbreviation against them (`ip m` is
/// `maddress`, `ip n` is `neighbor`).
const IP_OBJECTS: &[&str] = &[
    "address",
    "addrlabel",
    "maddress",
    "route",
    "rule",
    "neighbor",
    "neighbour",
    "ntable",
    "ntbl",
    "link",
    "l2tp",
    "fou",
    "ila",
    "macsec",
    "tunnel",
    "tunl",
    "tuntap",
    "tap",
    "token",
    "tcpmetrics",
    "tcp_metrics",
    "monitor",
    "xfrm",
    "mroute",
    "mrule",
    "netns",
    "netconf",
    "vrf",
    "sr",
    "nexthop",
    "mptcp",
    "ioam",
    "stats",
    "help",
];

/// `ip` commands that only show; a word that abbreviates one of these and no command that
/// changes state is read as showing.
const IP_SHOWS: &[&str] = &[
    "show", "list", "lst", "get", "help", "identify", "pids", "list-id",
];
const IP_CHANGES: &[&str] = &[
    "add", "delete", "del", "change", "chg", "replace", "set", "flush", "restore", "exec",
    "attach", "detach", "append", "prepend", "update", "create", "save",
];

/// `ip [options] OBJECT [COMMAND [arguments]]`: read-only when the command shows (or is left
/// out, which shows), and no option reads commands from a file.
pub(super) fn ip(scan: &mut Scan<'_>) {
    const VALUED: &[&str] = &[
        "-n", "-netns", "-rc", "-rcvbuf", "-l", "-loops", "-f", "-family",
    ];
    const FLAGS: &[&str] = &[
        "-4",
        "-6",
        "-0",
        "-B",
        "-D",
        "-M",
        "-s",
        "-stats",
        "-statistics",
        "-d",
        "-details",
        "-r",
        "-resolve",
        "-o",
        "-oneline",
        "-t",
        "-timestamp",
        "-ts",
        "-tshort",
        "-V",
        "-Version",
        "-br",
        "-brief",
        "-j",
        "-json",
        "-p",
        "-pretty",
        "-h",
        "-human",
        "-human-readable",
        "-c",
        "-color",
        "-a",
        "-all",
        "-N",
        "-Numeric",
    ];
    let words = scan.words;
    let mut at = 1;
    while let Some(w) = words.get(at) {
        if !w.starts_with('-') {
            break;
        }
        // ip reads `--brief` as `-brief`.
        let w = w
            .strip_prefix('-')
            .filter(|o| o.starts_with('-'))
            .unwrap_or(w);
        let name = w.split_once('=').map_or(w, |(n, _)| n);
        if VALUED.contains(&name) {
            at += if w.contains('=') { 1 } else { 2 };
            continue;
        }
        if matches!(name, "-b" | "-batch" | "-force") {
            scan.flag(
                at,
                Effect::Unknown,
                "ip -batch runs the commands in a file nobody saw",
            );
        } else if !FLAGS.contains(&name) {
            scan.flag(
                at,
                Effect::Unknown,
                "an ip option the classifier does not know",
            );
        }
        at += 1;
    }
    let Some(object) = words.get(at) else {
        return; // `ip` alone prints its usage.
    };
    let Some(&full) = IP_OBJECTS.iter().find(|o| o.starts_with(object.as_str())) else {
        return scan.flag(
            at,
            Effect::Unknown,
            "an ip object the classifier does not know",
        );
    };
    if full == "monitor" {
        return;
    }
    if let Some(command) = words.get(at + 1) {
        let c = command.as_str();
        let shows = IP_SHOWS.iter().any(|s| s.starts_with(c));
        if !shows || IP_CHANGES.iter().any(|s| s.starts_with(c)) {
            scan.flag(
                at + 1,
                Effect::Writes,
                "an ip command that changes the network (add, del, set, flush, exec, ...)",
            );
        }
    }
}

/// `ifconfig [options] [INTERFACE]`: showing, unless a word after the interface sets it.
pub(super) fn ifconfig(scan: &mut Scan<'_>) {
    for (i, w) in scan.options_from(1) {
        if w.starts_with('-')
            && !matches!(
                w,
                "-a" | "-s" | "-v" | "-l" | "-L" | "-u" | "-d" | "-m" | "-C"
            )
        {
            scan.flag(
                i,
                Effect::Unknown,
                "an ifconfig option the classifier does not know",
            );
        }
    }
    let operands: Vec<usize> = scan
        .words
        .iter()
        .enumerate()
        .skip(1)
        .filter(|(_, w)| {
            !matches!(
                w.as_str(),
                "-a" | "-s" | "-v" | "-l" | "-L" | "-u" | "-d" | "-m" | "-C"
            )
        })
        .map(|(i, _)| i)
        .collect();
    if let Some(&i) = operands.get(1) {
        scan.flag(
            i,
            Effect::Writes,
            "a word after the interface sets it (an address, up, down, mtu, ...)",
        );
    }
}

/// `dmesg`: reading the kernel's ring buffer, unless an option clears it or sets the console.
pub(super) fn dmesg(scan: &mut Scan<'_>) {
    scan.options(
        1,
        "cCDEn",
        &[
            "--clear",
            "--read-clear",
            "--console-off",
            "--console-on",
            "--console-level",
        ],
        Effect::Writes,
        "dmesg clears the ring buffer or changes the console's logging",
    );
}

/// `less`, `more`, `man`, `bat`: viewers, unless an option runs a program or writes a file.
pub(super) fn viewer(name: &str, scan: &mut Scan<'_>) {
    match name {
        "less" => {
            scan.options(
                1,
                "oO",
                &["--log-file", "--LOG-FILE"],
                Effect::WritesTo,
                "less -o copies its input to the file it names",
            );
            scan.options(
                1,
                "k",
                &["--lesskey-file", "--lesskey-src", "--lesskey-content"],
                Effect::Unknown,
                "less reads key bindings, which can run commands, from a file nobody saw",
            );
            let plus: Vec<usize> = scan
                .options_from(1)
                .iter()
                .filter(|(_, w)| w.starts_with('+'))
                .map(|&(i, _)| i)
                .collect();
            for i in plus {
                scan.flag(
                    i,
                    Effect::Unknown,
                    "less runs a +command at start, which can run a shell",
                );
            }
        }
        "man" => scan.options(
            1,
            "PHX",
            &["--pager", "--html", "--gxditview"],
            Effect::Runs,
            "man runs the pager or browser this option names",
        ),
        "bat" | "batcat" => {
            scan.options(
                1,
                "",
                &["--pager"],
                Effect::Runs,
                "bat --pager runs the program it names",
            );
            if scan.operands(1).first().is_some_and(|&(_, w)| w == "cache") {
                scan.flag(1, Effect::Writes, "bat cache builds or clears bat's cache");
            }
        }
        "ag" => scan.options(
            1,
            "",
            &["--pager"],
            Effect::Runs,
            "ag --pager runs the program it names",
        ),
        _ => {} // more
    }
}

/// `sips` (macOS): reading an image's properties with `-g` or checking a profile; any other
/// option changes the image.
pub(super) fn sips(scan: &mut Scan<'_>) {
    let words = scan.words;
    let mut at = 1;
    while let Some(w) = words.get(at) {
        match w.as_str() {
            "-g" | "--getProperty" => at += 1,
            "--verify" | "-1" | "--oneLine" | "-h" | "--help" | "-H" | "--helpProperties" => {}
            o if o.starts_with('-') => scan.flag(
                at,
                Effect::Writes,
                "a sips option that changes the image or writes a file",
            ),
            _ => {}
        }
        at += 1;
    }
}

/// `symbols` (macOS): prints a binary's symbols, unless it saves a signature.
pub(super) fn symbols(scan: &mut Scan<'_>) {
    scan.exact(
        1,
        &["-saveSignature"],
        Effect::WritesTo,
        "symbols -saveSignature writes the file it names",
    );
}

/// `prometheus`: its help and version only; anything else starts the server.
pub(super) fn prometheus(scan: &mut Scan<'_>) {
    if !matches!(&scan.words[1..], [w] if matches!(w.as_str(), "--help" | "-h" | "--help-long" | "--help-man" | "--version"))
    {
        scan.flag(
            0,
            Effect::Writes,
            "prometheus starts a server that writes its storage",
        );
    }
}

/// `dig` and `nslookup` ask a name server about the names on the line; a file of names
/// (`dig -f`) or names read from standard input (`nslookup` with none) sends what they hold.
pub(super) fn dns(name: &str, scan: &mut Scan<'_>) {
    if name == "dig" {
        let file: Vec<usize> = scan
            .options_from(1)
            .iter()
            .filter(|(_, w)| w.starts_with("-f"))
            .map(|&(i, _)| i)
            .collect();
        for i in file {
            scan.flag(
                i,
                Effect::Sends,
                "dig -f sends a query for every line of a file",
            );
        }
    } else if scan.operands(1).first().is_none_or(|&(_, w)| w == "-") {
        scan.flag(
            0,
            Effect::Sends,
            "nslookup with no name reads queries from its input and sends them",
        );
    }
}

/// `command -v NAME` and `command -V NAME` look a name up and run nothing (with a command to
/// run, `command` is a wrapper, read through before this).
pub(super) fn command(scan: &mut Scan<'_>) {
    if !scan.options_from(1).iter().any(|(_, w)| is_short(w, "vV")) {
        scan.flag(
            0,
            Effect::Unknown,
            "command without -v runs the command it is given",
        );
    }
}

#[cfg(test)]
mod tests {

    use super::super::deciding_word as word;

    #[test]
    fn ip_shows_its_objects_and_refuses_every_command_that_changes_them() {
        for line in [
            "ip a",
            "ip -br --color addr show dev eth0",
            "ip -s -s link",
            "ip route get 8.8.8.8",
            "ip -n ns1 neigh",
            "ip monitor all",
            "ip netns pids ns1",
            "ip tunt list",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("ip addr add 10.0.0.1/24 dev eth0", "add"),
            ("ip link set eth0 up", "set"),
            ("ip l s eth0 up", "s"),
            ("ip route flush table main", "flush"),
            ("ip netns exec ns1 bash", "exec"),
            ("ip -batch cmds.txt", "-batch"),
            ("ip frobnicate", "frobnicate"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }

    #[test]
    fn ifconfig_dmesg_and_viewers_read_unless_a_word_sets_runs_or_writes() {
        for line in [
            "ifconfig",
            "ifconfig -a",
            "ifconfig en0",
            "dmesg -TH",
            "dmesg --level=err",
            "less f",
            "man ls",
            "more f",
            "bat f",
            "sips -g pixelWidth i.png",
            "symbols -uuid /bin/ls",
            "prometheus --version",
            "command -v python",
        ] {
            assert_eq!(word(line), None, "{line}");
        }
        for (line, w) in [
            ("ifconfig eth0 up", "up"),
            ("ifconfig eth0 10.0.0.1 netmask 255.0.0.0", "10.0.0.1"),
            ("dmesg -c", "-c"),
            ("dmesg -THc", "-THc"),
            ("dmesg -n 1", "-n"),
            ("less -o log f", "-o"),
            ("less '+!rm x' f", "+!rm x"),
            ("man -P 'sh -c x' ls", "-P"),
            ("bat --pager 'sh -c x' f", "--pager"),
            ("sips -s format jpeg i.png", "-s"),
            ("symbols -saveSignature s.txt /bin/ls", "-saveSignature"),
            ("prometheus --config.file=p.yml", "prometheus"),
        ] {
            assert_eq!(word(line).as_deref(), Some(w), "{line}");
        }
    }
}
