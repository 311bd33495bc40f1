//! Words as a shell reads them: what the command line prints for a reader to paste (the demo's
//! steps, the command that creates a missing folder).

/// `words` as a shell command line: each word as it is when it needs no quotes, else in single
/// quotes.
pub fn shell_words(words: &[&str]) -> String {
    let quoted: Vec<String> = words
        .iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
            if plain {
                (*w).to_owned()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect();
    quoted.join(" ")
}
