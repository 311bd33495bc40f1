//! `find`, `sed` and `awk`: programs whose arguments are a small language of their own, in
//! which some words run programs or write files.

use super::{is_long, is_short, Effect, Scan};

pub(super) fn find(scan: &mut Scan<'_>) {
    for (i, w) in scan.words.iter().enumerate().skip(1) {
        match w.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => scan.flag(
                i,
                Effect::Runs,
                "find runs a program for each file it finds",
            ),
            "-delete" => scan.flag(
                i,
                Effect::Deletes,
                "find -delete removes the files it finds",
            ),
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                scan.flag(i, Effect::WritesTo, "find -fprint writes the file it names")
            }
            _ => {}
        }
    }
}

pub(super) fn sed(scan: &mut Scan<'_>) {
    let words = scan.words;
    // Each script with the index of the word that holds it.
    let mut scripts: Vec<(usize, &str)> = Vec::new();
    let mut operand = None;
    let mut at = 1;
    while let Some(w) = words.get(at) {
        let w = w.as_str();
        at += 1;
        if w == "--" {
            operand = operand.or_else(|| words.get(at).map(|o| (at, o.as_str())));
            break;
        }
        if !w.starts_with('-') || w == "-" {
            operand.get_or_insert((at - 1, w));
            continue;
        }
        if let Some(long) = w.strip_prefix("--") {
            let (name, value) = long.split_once('=').unwrap_or((long, ""));
            if is_long(&format!("--{name}"), "--in-place") {
                scan.flag(at - 1, Effect::Writes, "sed -i edits the files it is given");
            } else if is_long(&format!("--{name}"), "--file") {
                scan.flag(
                    at - 1,
                    Effect::Unknown,
                    "sed -f reads its script from a file nobody saw",
                );
            } else if is_long(&format!("--{name}"), "--expression") {
                if long.contains('=') {
                    scripts.push((at - 1, value));
                } else if let Some(next) = words.get(at) {
                    scripts.push((at, next));
                    at += 1;
                }
            }
            continue;
        }
        // A bundle of short options; `-e`, `-f` and `-l` take the rest, or the next word.
        for (k, c) in w.char_indices().skip(1) {
            match c {
                'i' => {
                    scan.flag(at - 1, Effect::Writes, "sed -i edits the files it is given");
                    break; // the rest is a backup suffix
                }
                'e' | 'f' | 'l' => {
                    let rest = &w[k + 1..];
                    let value = if rest.is_empty() {
                        at += 1;
                        words.get(at - 1).map(|v| (at - 1, v.as_str()))
                    } else {
                        Some((at - 1, rest))
                    };
                    match (c, value) {
                        ('e', Some(script)) => scripts.push(script),
                        ('f', _) => scan.flag(
                            at - 1,
                            Effect::Unknown,
                            "sed -f reads its script from a file nobody saw",
                        ),
                        _ => {}
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    if scripts.is_empty() {
        scripts.extend(operand);
    }
    for (i, script) in scripts {
        if let Some((effect, why)) = sed_script(script) {
            scan.flag(i, effect, why);
        }
    }
}

/// What a sed script does besides printing: its `e`, `w` and `W` commands and the `e` and
/// `w` flags of `s`, or a command this reader does not know.
fn sed_script(script: &str) -> Option<(Effect, &'static str)> {
    let runs = (Effect::Runs, "the sed script's e command runs a program");
    let writes = (Effect::WritesTo, "the sed script's w command writes a file");
    let unknown = (
        Effect::Unknown,
        "a sed command the classifier does not know",
    );
    let s: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_to_line_end = |i: &mut usize| {
        while *i < s.len() && s[*i] != '\n' {
            *i += 1;
        }
    };
    // Past a delimited part (`/re/`, an s command's halves), honouring backslashes.
    let delimited = |i: &mut usize, delim: char| -> bool {
        while *i < s.len() {
            match s[*i] {
                '\\' => *i += 2,
                c if c == delim => {
                    *i += 1;
                    return true;
                }
                _ => *i += 1,
            }
        }
        false
    };
    while i < s.len() {
        let c = s[i];
        if c.is_whitespace() || c == ';' || c == '{' || c == '}' || c == '!' {
            i += 1;
            continue;
        }
        // An address: a line number, `$`, `first~step`, `/re/` or `\cREc`, and a range `,`.
        if c.is_ascii_digit() || c == '$' || c == ',' || c == '~' || c == '+' {
            i += 1;
            continue;
        }
        if c == '/' || c == '\\' {
            let delim = if c == '\\' {
                i += 1;
                *s.get(i)?
            } else {
                '/'
            };
            i += 1;
            if !delimited(&mut i, delim) {
                return Some(unknown);
            }
            while i < s.len() && (s[i] == 'I' || s[i] == 'M') {
                i += 1;
            }
            continue;
        }
        i += 1;
        match c {
            's' | 'y' => {
                let Some(&delim) = s.get(i) else {
                    return Some(unknown);
                };
                i += 1;
                if !delimited(&mut i, delim) || !delimited(&mut i, delim) {
                    return Some(unknown);
                }
                if c == 's' {
                    while i < s.len() && !matches!(s[i], ';' | '\n' | '}' | ' ') {
                        match s[i] {
                            'e' => return Some(runs),
                            'w' => return Some(writes),
                            _ => i += 1,
                        }
                    }
                }
            }
            'e' => return Some(runs),
            'w' | 'W' => return Some(writes),
            'a' | 'i' | 'c' | 'r' | 'R' | 'b' | 't' | 'T' | ':' => skip_to_line_end(&mut i),
            'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'z' | 'F'
            | 'q' | 'Q' | 'l' | 'L' => {
                while i < s.len() && s[i].is_ascii_digit() {
                    i += 1;
                }
            }
            _ => return Some(unknown),
        }
    }
    None
}

pub(super) fn awk(scan: &mut Scan<'_>) {
    let words = scan.words;
    let mut at = 1;
    while let Some(w) = words.get(at) {
        let w = w.as_str();
        if w == "--" {
            at += 1;
            break;
        }
        if !w.starts_with('-') || w == "-" {
            break;
        }
        if is_short(w, "fE") || is_long(w, "--file") || is_long(w, "--exec") {
            scan.flag(
                at,
                Effect::Unknown,
                "awk -f reads its program from a file nobody saw",
            );
        } else if is_short(w, "il") || is_long(w, "--include") || is_long(w, "--load") {
            scan.flag(
                at,
                Effect::Runs,
                "awk -i and -l load code (inplace editing, extensions)",
            );
        }
        let valued = matches!(w, "-F" | "-v" | "-f" | "-i" | "-l" | "-E");
        at += if valued { 2 } else { 1 };
    }
    let Some(program) = words.get(at) else {
        return;
    };
    if let Some((effect, why)) = awk_program(program) {
        scan.flag(at, effect, why);
    }
}

/// What an awk program does besides reading and printing: `system()`, a pipe to or from a
/// command, or a `print` or `printf` redirected to a file.
fn awk_program(program: &str) -> Option<(Effect, &'static str)> {
    let mut code = String::with_capacity(program.len());
    let s: Vec<char> = program.chars().collect();
    let mut i = 0;
    let mut last = ' ';
    // The program without its strings and regular expressions, each left as `""`.
    while i < s.len() {
        let c = s[i];
        let regex_here = c == '/'
            && matches!(
                last,
                ' ' | '(' | ',' | '{' | ';' | '~' | '!' | '&' | '|' | '}' | '\n'
            );
        if c == '"' || regex_here {
            let close = c;
            i += 1;
            while i < s.len() && s[i] != close {
                i += if s[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            code.push_str("\"\"");
            last = '"';
            continue;
        }
        if c == '#' {
            while i < s.len() && s[i] != '\n' {
                i += 1;
            }
            continue;
        }
        code.push(c);
        if !c.is_whitespace() {
            last = c;
        } else if c == '\n' {
            last = '\n';
        }
        i += 1;
    }
    if code.contains("system") || code.contains("@load") || code.contains("@include") {
        return Some((Effect::Runs, "the awk program calls system() or loads code"));
    }
    let bytes = code.as_bytes();
    for (j, &b) in bytes.iter().enumerate() {
        if b == b'|' && bytes.get(j + 1) != Some(&b'|') && (j == 0 || bytes[j - 1] != b'|') {
            return Some((Effect::Runs, "the awk program pipes to or from a command"));
        }
    }
    // `print ... > file`: a `>` at the top level of a print statement.
    for (start, _) in code.match_indices("print") {
        let mut depth = 0i32;
        for b in code[start..].bytes() {
            match b {
                b'(' => depth += 1,
                b')' => depth -= 1,
                b';' | b'}' | b'\n' if depth <= 0 => break,
                b'>' if depth <= 0 => {
                    return Some((Effect::WritesTo, "the awk program prints to a file"))
                }
                _ => {}
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts_that_run_or_write_are_found() {
        for script in [
            "p",
            "s/a/b/g",
            "1,5d",
            "/x/,/y/p",
            "s|a|b|;2q",
            "y/abc/xyz/",
            "$!N",
            "s/w/e/",
        ] {
            assert_eq!(sed_script(script), None, "{script}");
        }
        for script in [
            "s/a/b/e",
            "s/a/b/w out",
            "1e rm -rf /",
            "w out",
            "/x/W f",
            "k",
        ] {
            assert!(sed_script(script).is_some(), "{script}");
        }
    }

    #[test]
    fn awk_programs_that_run_or_write_are_found() {
        for program in [
            "{print $1}",
            "$3 > 100 {print}",
            "/a|b/ {n++} END {print n}",
            "{print ($1 > 2)}",
            "a || b",
        ] {
            assert_eq!(awk_program(program), None, "{program}");
        }
        for program in [
            "{system(\"rm -rf /\")}",
            "{print | \"sh\"}",
            "BEGIN {\"date\" | getline d}",
            "{print > \"out\"}",
            "{printf \"%s\", $1 >> f}",
        ] {
            assert!(awk_program(program).is_some(), "{program}");
        }
    }
}
