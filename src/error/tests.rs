//! Every error variant has a sample, a distinct kind and a message of bounded length.

use super::*;
use std::collections::BTreeSet;

/// One error of each leaf variant. The matches below have no wildcard, so a new variant does
/// not compile until it is added there, and the test fails until it has a sample here.
fn one_of_each() -> Vec<Error> {
    let samples: Vec<Error> = vec![
        InputError::InvalidId {
            id: "a b".into(),
            problem: IdProblem::BadCharacter,
        }
        .into(),
        InputError::InvalidActor("x/y".into()).into(),
        InputError::InvalidTaint("top".into()).into(),
        InputError::InvalidPosture("all".into()).into(),
        InputError::InvalidPropagation("sideways".into()).into(),
        InputError::InvalidAuditKind("session.explode".into()).into(),
        InputError::InvalidPattern {
            pattern: String::new(),
            problem: "it is empty".into(),
        }
        .into(),
        InputError::InvalidScopeName("a b".into()).into(),
        InputError::InvalidTtl("0s".into()).into(),
        InputError::EmptyCommand.into(),
        InputError::InvalidToken("xyz".into()).into(),
        InputError::InvalidHead("12".into()).into(),
        InputError::InvalidTime("yesterday".into()).into(),
        InputError::NothingToRaise.into(),
        InputError::InvalidConfig("max_depth 0".into()).into(),
        InputError::InvalidCopyTarget(Location::File("copy.db".into())).into(),
        InputError::InvalidNote("the checkpoint: no blank line".into()).into(),
        Conflict::UnknownSession("nobody".into()).into(),
        Conflict::SessionEnded("gone".into()).into(),
        Conflict::SessionExists("conductor".into()).into(),
        Conflict::UnknownPattern {
            session: "conductor".into(),
            pattern: "npm test".into(),
        }
        .into(),
        Conflict::UnknownScope {
            session: "conductor".into(),
            name: "hotfix".into(),
        }
        .into(),
        Conflict::StalePreview {
            root: "conductor".into(),
        }
        .into(),
        Conflict::NotEmpty(Location::Server("postgresql://app@db:5432/ledger".into())).into(),
        Conflict::NoCheckpoint.into(),
        Conflict::NotInCheckpoint { seq: 9, size: 8 }.into(),
        Conflict::NotCovered {
            record: "0193a0b0c0d0e0f0a1b2c3d4e5f60718".into(),
            why: "it waits to be integrated".into(),
        }
        .into(),
        Conflict::SessionArchived {
            id: "worker-1".into(),
            archive: 3,
            file: "/var/archives/ledger-2026-11.db".into(),
            made_at: "2026-12-01T00:00:00.000Z".into(),
        }
        .into(),
        Conflict::Archived("rows 1 to 40 are archived".into()).into(),
        Conflict::NotArchivable("a session still runs".into()).into(),
        CreationRefused::DepthLimit {
            child: "deep".into(),
            depth: 65,
            max: 64,
        }
        .into(),
        CreationRefused::ChildLimit {
            creator: "conductor".into(),
            live: 50,
            max: 50,
        }
        .into(),
        CreationRefused::RateLimit {
            creator: "conductor".into(),
            count: 100,
            max: 100,
            window_secs: 60,
        }
        .into(),
        StorageError::NoLedger(Location::File("ledger.db".into())).into(),
        StorageError::NotALedger(Location::File("notes.txt".into())).into(),
        StorageError::SchemaTooNew {
            found: 99,
            supported: 7,
        }
        .into(),
        StorageError::ReadOnly(Location::File("ledger.db".into())).into(),
        StorageError::IsArchive(Location::File("archive-1.db".into())).into(),
        Error::from(std::io::Error::other("disk on fire")),
        StorageError::Standby(Location::Server("postgresql://app@db2:5432/ledger".into())).into(),
        StorageError::Unavailable {
            location: Location::Server("postgresql://app@db1:5432,db2:5432/ledger".into()),
            waited: std::time::Duration::from_secs(30),
            cause: "connection refused".into(),
        }
        .into(),
        StorageError::DurabilityUnknown {
            location: Location::Server("postgresql://app@db1:5432/ledger".into()),
            seq: 42,
            hash: "ab".repeat(32),
            why: "the server committed it, and warned".into(),
        }
        .into(),
        StorageError::NotCommitted {
            location: Location::Server("postgresql://app@db1:5432/ledger".into()),
            seq: 42,
            hash: "ab".repeat(32),
        }
        .into(),
        StorageError::DecisionsUnknown {
            location: Location::Server("postgresql://app@db1:5432/ledger".into()),
            records: vec!["0193a0b0c0d0e0f0a1b2c3d4e5f60718".into()],
            why: "the server committed them, and warned".into(),
        }
        .into(),
        Corruption::new("a cycle").into(),
    ];
    let mut variants = BTreeSet::new();
    for e in &samples {
        let variant = match e {
            Error::Input(e) => match e {
                InputError::InvalidId { .. } => 0,
                InputError::InvalidActor(_) => 1,
                InputError::InvalidTaint(_) => 2,
                InputError::InvalidPosture(_) => 3,
                InputError::InvalidPropagation(_) => 4,
                InputError::InvalidAuditKind(_) => 5,
                InputError::InvalidPattern { .. } => 6,
                InputError::InvalidScopeName(_) => 7,
                InputError::InvalidTtl(_) => 8,
                InputError::EmptyCommand => 9,
                InputError::InvalidToken(_) => 10,
                InputError::InvalidHead(_) => 11,
                InputError::InvalidTime(_) => 12,
                InputError::NothingToRaise => 13,
                InputError::InvalidConfig(_) => 14,
                InputError::InvalidCopyTarget(_) => 15,
                InputError::InvalidNote(_) => 16,
            },
            Error::Conflict(e) => match e {
                Conflict::UnknownSession(_) => 20,
                Conflict::SessionEnded(_) => 21,
                Conflict::SessionExists(_) => 22,
                Conflict::UnknownPattern { .. } => 23,
                Conflict::UnknownScope { .. } => 24,
                Conflict::StalePreview { .. } => 25,
                Conflict::NotEmpty(_) => 26,
                Conflict::NoCheckpoint => 27,
                Conflict::NotInCheckpoint { .. } => 28,
                Conflict::NotCovered { .. } => 29,
                Conflict::SessionArchived { .. } => 33,
                Conflict::Archived(_) => 34,
                Conflict::NotArchivable(_) => 35,
            },
            Error::Refused(e) => match e {
                CreationRefused::DepthLimit { .. } => 30,
                CreationRefused::ChildLimit { .. } => 31,
                CreationRefused::RateLimit { .. } => 32,
            },
            Error::Storage(e) => match e {
                StorageError::NoLedger(_) => 40,
                StorageError::NotALedger(_) => 41,
                StorageError::SchemaTooNew { .. } => 42,
                StorageError::ReadOnly(_) => 43,
                StorageError::IsArchive(_) => 51,
                StorageError::Engine(_) => 44,
                StorageError::Standby(_) => 45,
                StorageError::Unavailable { .. } => 46,
                StorageError::DurabilityUnknown { .. } => 47,
                StorageError::NotCommitted { .. } => 48,
                StorageError::DecisionsUnknown { .. } => 49,
            },
            Error::Corruption(_) => 50,
        };
        variants.insert(variant);
    }
    assert_eq!(variants.len(), 45, "a variant has no sample in one_of_each");
    samples
}

#[test]
fn every_variant_has_a_distinct_snake_case_kind() {
    let samples = one_of_each();
    let mut kinds = BTreeSet::new();
    for e in &samples {
        let kind = e.kind();
        assert!(
            !kind.is_empty()
                && kind.starts_with(|c: char| c.is_ascii_lowercase())
                && kind.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                && !kind.ends_with('_')
                && !kind.contains("__"),
            "{kind:?} is not snake_case"
        );
        assert!(kinds.insert(kind), "two variants are named {kind:?}");
    }
    assert_eq!(kinds.len(), samples.len());
}

#[test]
fn the_caller_can_act_on_input_and_conflicts_and_a_refusal_is_its_own_kind() {
    for e in one_of_each() {
        let by_kind = matches!(e, Error::Input(_) | Error::Conflict(_));
        assert_eq!(e.is_caller_error(), by_kind, "{e:?}");
        assert_eq!(e.is_refusal(), matches!(e, Error::Refused(_)), "{e:?}");
    }
}

#[test]
fn a_long_value_is_quoted_cut_on_a_character_boundary_with_its_full_length() {
    // Three-byte characters: a cut at byte 64 would fall inside one, and slicing there panics.
    let message = InputError::InvalidActor("€".repeat(1_000)).to_string();
    assert!(
        message.starts_with(&format!(
            "invalid actor name \"{}…\" (1000 characters): ",
            "€".repeat(64)
        )),
        "{message}"
    );

    let id = format!("{}\n{}", "a".repeat(63), "b".repeat(100));
    let message = Error::from(InputError::InvalidId {
        id,
        problem: IdProblem::TooLong,
    })
    .to_string();
    assert_eq!(
        message,
        format!(
            "invalid session id \"{}\\n…\" (164 characters): it is longer than 128 characters",
            "a".repeat(63)
        )
    );
}

#[test]
fn a_value_of_at_most_64_characters_is_quoted_whole() {
    let pattern = "x".repeat(64);
    assert_eq!(
        InputError::InvalidPattern {
            pattern: pattern.clone(),
            problem: "it holds a NUL".into(),
        }
        .to_string(),
        format!("invalid command pattern {pattern:?}: it holds a NUL")
    );
    assert_eq!(
        InputError::InvalidTaint("x'y\"z".into()).to_string(),
        r#"unknown taint class "x'y\"z": expected public, private or secret"#
    );
}
