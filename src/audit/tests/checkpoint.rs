//! Keys, notes and checkpoints against the examples of the specifications they follow.

use super::*;

// The signed-note example of Go's golang.org/x/mod/sumdb/note, the format's reference
// implementation: a key, a text, and the note that key makes of it (Ed25519 signatures are
// deterministic, so signing again must give the same bytes).
const GO_SIGNER: &str =
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
const GO_VERIFIER: &str = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
const GO_TEXT: &str = "If you think cryptography is the answer to your problem,\n\
                       then you don't know what your problem is.\n";
const GO_NOTE: &str = "If you think cryptography is the answer to your problem,\n\
                       then you don't know what your problem is.\n\
                       \n\
                       \u{2014} PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";

// The example of the C2SP signed-note specification (as of C2SP commit d4c16da), with the
// verifier key it gives.
const SPEC_VERIFIER: &str = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
const SPEC_NOTE: &str = "This is an example message.\n\n\u{2014} example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";

// The example of the current C2SP signed-note specification: a text with a blank line of its
// own, separated from the signatures by the last one.
const SPEC_POEM: &str = "Ognuno sta solo sul cuor della terra\ntrafitto da un raggio di sole:\n\ned \u{e8} subito sera.\n\n\u{2014} quasimodo.example/salvatore NnugSzTjtVAewIS+Z/iJhUPeFDkO/5QQ2i5ddnGITLlC+EhfLW9oJKONrMouFSQU0xMcXxj99ihAQwaqP3ZekRwNtIc=\n";

// The example of the C2SP tlog-checkpoint specification.
const SPEC_CHECKPOINT: &str = "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n\n\u{2014} example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=\n";

#[test]
fn signing_the_reference_example_gives_its_note_byte_for_byte() -> Result<()> {
    let signer: SignerKey = GO_SIGNER.parse()?;
    assert_eq!(signer.to_string(), GO_SIGNER);
    assert_eq!(signer.verifier().to_string(), GO_VERIFIER);
    assert_eq!(signer.sign_note(GO_TEXT), GO_NOTE);
    let verifier: VerifierKey = GO_VERIFIER.parse()?;
    assert_eq!(verifier.open(GO_NOTE), Ok(GO_TEXT));
    Ok(())
}

#[test]
fn the_signed_note_specifications_examples_read_and_verify() -> Result<()> {
    let verifier: VerifierKey = SPEC_VERIFIER.parse()?;
    assert_eq!(
        (verifier.name(), verifier.id()),
        ("example.com/foo", "530d903a".to_owned())
    );
    assert_eq!(verifier.to_string(), SPEC_VERIFIER);
    assert_eq!(
        verifier.open(SPEC_NOTE),
        Ok("This is an example message.\n")
    );

    let poem = parse_note(SPEC_POEM).expect("the example is a note");
    assert!(poem.text.ends_with(":\n\ned \u{e8} subito sera.\n"));
    assert_eq!(poem.signatures.len(), 1);
    assert_eq!(poem.signatures[0].name, "quasimodo.example/salvatore");
    assert_eq!(poem.signatures[0].signature.len(), 64);
    assert_eq!(
        verifier.open(SPEC_POEM),
        Err(NoteProblem::NotSignedByKey),
        "a note by another key is not this key's"
    );
    Ok(())
}

#[test]
fn the_checkpoint_specifications_example_reads_and_writes_back_its_text() -> Result<()> {
    let signed = SignedCheckpoint::parse(SPEC_CHECKPOINT)?;
    let c = &signed.checkpoint;
    assert_eq!(
        (c.origin.as_str(), c.size),
        ("example.com/behind-the-sofa", 20852163)
    );
    assert_eq!(
        c.root_base64(),
        "CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I="
    );
    assert!(SPEC_CHECKPOINT.starts_with(&c.body()));
    let note = parse_note(SPEC_CHECKPOINT).expect("a note");
    assert_eq!(note.signatures[0].name, c.origin);
    assert_eq!(note.signatures[0].signature.len(), 64);
    Ok(())
}

#[test]
fn a_checkpoint_signed_here_opens_with_its_verifier_and_no_other() -> Result<()> {
    let key = SignerKey::generate("example.com/ledger")?;
    let checkpoint = Checkpoint {
        origin: "example.com/ledger".to_owned(),
        size: 42,
        root: [7; 32],
    };
    let signed = SignedCheckpoint::sign(checkpoint.clone(), &key);
    let opened = SignedCheckpoint::open(&signed.note, &key.verifier()).expect("opens");
    assert_eq!(opened.checkpoint, checkpoint);
    assert_eq!(SignedCheckpoint::parse(&signed.note)?, signed);
    let again: SignerKey = key.to_string().parse()?;
    assert_eq!(again.verifier(), key.verifier());

    let other = SignerKey::generate("example.com/ledger")?;
    assert_eq!(
        SignedCheckpoint::open(&signed.note, &other.verifier()),
        Err(NoteProblem::NotSignedByKey)
    );
    // Every bit of the text and of the signature line's base64 matters.
    let bytes = signed.note.as_bytes();
    let text_end = checkpoint.body().len();
    for at in 0..bytes.len() {
        let mut bad = bytes.to_vec();
        bad[at] ^= 1;
        let Ok(bad) = String::from_utf8(bad) else {
            continue;
        };
        let opened = SignedCheckpoint::open(&bad, &key.verifier());
        assert!(
            opened.is_err(),
            "byte {at} of {:?} flipped still opens",
            signed.note
        );
        if at < text_end && opened != Err(NoteProblem::BadSignature) {
            // A flipped text byte either breaks the note's form or its signature.
            assert!(
                matches!(opened, Err(NoteProblem::Malformed(_))),
                "byte {at}: {opened:?}"
            );
        }
    }
    Ok(())
}

#[test]
fn malformed_keys_and_checkpoints_are_refused_with_a_reason() {
    for bad in [
        "",
        "PeterNeumann",
        "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+173116ae+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
    ] {
        assert!(bad.parse::<VerifierKey>().is_err(), "{bad:?}");
    }
    assert!(GO_VERIFIER.parse::<SignerKey>().is_err());
    assert!(
        "PRIVATE+KEY+PeterNeumann+c74f20a4+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
            .parse::<SignerKey>()
            .is_err()
    );
    for body in [
        "o\n01\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        "o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I\n",
        "o\n-1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        "o+x\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n",
        "o\n1\n",
        "o\n1\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=",
    ] {
        assert!(Checkpoint::parse_body(body).is_err(), "{body:?}");
    }
}
