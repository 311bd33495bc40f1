"""Archives through Python, on each engine (rule K1): a backend moves what is over (trees whose
every session ended, and the trail up to a signed checkpoint) out of the live ledger into a
file; the file verifies on its own and against the ledger; an archived id is refused, and the
ledger says where it went.

The crash sweeps and the attacks are the Rust suite's (tests/archive.rs); these show that the
binding hands the library's requests and answers over whole.
"""

from __future__ import annotations

import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

import session_ledger
from session_ledger import Conflict, Ledger, UnknownSession

from conftest import ACTOR, Place, sqlite_shell


def soon() -> datetime:
    """A cut-off just after now: every session ended so far ended before it."""
    return datetime.now(timezone.utc) + timedelta(seconds=1)


def ended_tree(ledger: Ledger, root: str) -> None:
    """A tree ``root > root-1`` that worked and then ended."""
    ledger.create_root(root, actor=ACTOR)
    ledger.grant(root, "trust", actor=ACTOR)
    ledger.create_child(f"{root}-1", creator=root, actor=ACTOR)
    ledger.add_pattern(f"{root}-1", "npm test", actor=ACTOR)
    ledger.decide(f"{root}-1", "git status", classify=True, record=True, asked_by="claude-code")
    ledger.end(f"{root}-1", actor=ACTOR)
    ledger.end(root, actor=ACTOR)


def test_an_archive_of_an_ended_tree_moves_it_out_and_the_ledger_says_where_it_went(place: Place) -> None:
    ledger = place.open()
    ended_tree(ledger, "done")
    ledger.create_root("running", actor=ACTOR)
    signed = ledger.checkpoint(session_ledger.generate_key("example.com/ledger"), actor=ACTOR)
    to = place.folder / "archive-1.db"

    run = ledger.archive(to, before=soon(), actor=ACTOR)
    made = run["made"]
    assert run["finished"] == [] and made is not None
    assert (made["archive"], made["trees"], made["sessions"]) == (1, 1, 2)
    assert (made["trail_from"], made["trail_size"]) == (0, signed["size"])
    assert made["decision_records"] == 1 and made["stayed_live"] == []
    assert made["file"] == str(to) and to.exists()

    # The archived ids are refused as archived (not as unknown), with where they went.
    for id in ["done", "done-1"]:
        with pytest.raises(Conflict) as gone:
            ledger.state(id)
        assert gone.value.kind == "session_archived"
        assert not isinstance(gone.value, UnknownSession)
        assert str(to) in str(gone.value)
    with pytest.raises(Conflict) as reused:
        ledger.create_root("done", actor=ACTOR)
    assert reused.value.kind == "session_archived"
    where = ledger.archived("done-1")
    assert where is not None
    assert (where["id"], where["tree"], where["archive"], where["file"]) == ("done-1", "done", 1, str(to))
    # When: the time of the archive's own audit row, which stays in the live ledger.
    made_row = ledger.audit(kind="archive.make")
    assert [e.session for e in made_row] == [None]
    assert datetime.fromisoformat(where["archived_at"].replace("Z", "+00:00")) == made_row[0].at

    # The running tree stayed, and is not said to be archived; the trail verifies from the
    # archive's boundary.
    assert ledger.archived("running") is None
    running = ledger.session("running")
    assert running is not None and running.live
    assert ledger.audit()[0].seq == signed["size"] + 1
    assert ledger.verify().ok


def test_an_archive_verifies_alone_and_against_the_live_ledger_and_a_tampered_copy_does_not(
    place: Place,
) -> None:
    ledger = place.open()
    ended_tree(ledger, "done")
    key = session_ledger.generate_key("example.com/ledger")
    verifier = session_ledger.verifier_key(key)
    ledger.checkpoint(key, actor=ACTOR)
    to = place.folder / "archive-1.db"
    made = ledger.archive(to, before=soon(), actor=ACTOR)["made"]
    assert made is not None and made["trail_size"] > 0
    # The live ledger signs on past the archive: the check against it proves the extension.
    ledger.create_root("later", actor=ACTOR)
    ledger.checkpoint(key, actor=ACTOR)

    alone = ledger.verify_archive(to, verifier, alone=True)
    assert alone["ok"], alone["findings"]
    assert (alone["archive"], alone["sha256"], alone["sessions"]) == (1, made["sha256"], 2)
    both = ledger.verify_archive(str(to), verifier)
    assert both["ok"], both["findings"]
    # Against the ledger: the checks of the file alone, then the ledger's record of it and a
    # proof that its newest checkpoint extends the archive's.
    checks = [f["check"] for f in alone["findings"]]
    assert "live" not in checks
    assert [f["check"] for f in both["findings"]] == checks + ["live", "consistency"]

    # A stranger's key does not verify the archive's checkpoint.
    stranger = session_ledger.verifier_key(session_ledger.generate_key("example.com/ledger"))
    assert not ledger.verify_archive(to, stranger, alone=True)["ok"]

    # One row of a copy's trail changed by hand, its guard dropped: the copy fails, alone and
    # against the ledger; the original is untouched and still verifies.
    tampered = place.folder / "tampered.db"
    shutil.copyfile(to, tampered)
    sqlite_shell(
        str(tampered),
        "DROP TRIGGER audit_is_append_only_update; UPDATE audit SET actor = 'mallory' WHERE seq = 1;",
    )
    for result in [
        ledger.verify_archive(tampered, verifier, alone=True),
        ledger.verify_archive(tampered, verifier),
    ]:
        assert result["ok"] is False
        failed = {(f["check"], f["problem"]) for f in result["findings"] if not f["valid"]}
        assert {("chain", "hash_mismatch"), ("rows", "rewritten")} <= failed, failed
    # The ledger recorded the original's SHA-256: the copy is not the file it archived.
    against = ledger.verify_archive(tampered, verifier)["findings"]
    assert [f["problem"] for f in against if f["check"] == "live"] == ["mismatch"]
    assert ledger.verify_archive(to, verifier)["ok"]

    # A ledger is no archive: that is an error, not a failed check.
    other = Ledger(place.folder / "other.db", create=True)
    other.close()
    with pytest.raises(session_ledger.InvalidInput) as refused:
        ledger.verify_archive(place.folder / "other.db", verifier, alone=True)
    assert refused.value.kind == "invalid_config"


def test_a_tree_with_a_session_still_running_is_refused_as_not_archivable(place: Place) -> None:
    ledger = place.open()
    ledger.create_root("busy", actor=ACTOR)
    ledger.create_child("busy-1", creator="busy", actor=ACTOR)
    ledger.end("busy", actor=ACTOR)
    ledger.checkpoint(session_ledger.generate_key("example.com/ledger"), actor=ACTOR)
    to = place.folder / "archive.db"
    with pytest.raises(Conflict) as refused:
        ledger.archive(to, tree="busy", actor=ACTOR)
    assert refused.value.kind == "not_archivable"
    assert "busy-1" in str(refused.value)
    assert not to.exists()
    busy = ledger.session("busy-1")
    assert busy is not None and busy.live
    assert ledger.archived("busy") is None


def test_an_archive_asked_for_neither_a_cut_off_nor_a_tree_is_refused(place: Place) -> None:
    ledger = place.open()
    ended_tree(ledger, "done")
    to = place.folder / "archive.db"
    with pytest.raises(Conflict) as refused:
        ledger.archive(to, actor=ACTOR)
    assert refused.value.kind == "not_archivable"
    assert not to.exists()
    # A naive time is refused before the library is asked: it names no instant.
    with pytest.raises(TypeError, match="before must be a timezone-aware datetime"):
        ledger.archive(to, before=datetime.now(), actor=ACTOR)
    with pytest.raises(TypeError, match="to must be a str or os.PathLike, not int"):
        ledger.archive(7, before=soon(), actor=ACTOR)  # type: ignore[arg-type]
    assert ledger.session("done") is not None


def test_with_nothing_to_archive_no_archive_is_made_and_no_file_is_written(place: Place) -> None:
    ledger = place.open()
    ledger.create_root("running", actor=ACTOR)
    ledger.create_child("running-1", creator="running", actor=ACTOR)
    to = place.folder / "archive.db"
    # No ended tree, and no checkpoint to cut the trail at.
    run = ledger.archive(to, before=soon(), actor=ACTOR)
    assert (run["finished"], run["made"]) == ([], None)
    # A run that moved nothing held the write lock for nothing.
    assert run["longest_batch_us"] == 0
    assert not to.exists()
    # An ended tree named by its root is taken; then nothing is left to take.
    ended_tree(ledger, "done")
    made = ledger.archive(to, tree="done", actor=ACTOR)["made"]
    assert made is not None and made["sessions"] == 2
    again = place.folder / "again.db"
    run = ledger.archive(again, before=soon(), actor=ACTOR)
    assert (run["finished"], run["made"]) == ([], None)
    assert not again.exists()
