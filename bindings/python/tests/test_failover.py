"""A PostgreSQL deployment's URL of several servers, and the error of a write whose durability is
unknown, through the binding."""

from __future__ import annotations

import pickle
import re

import pytest

from session_ledger import AuditHead, DurabilityUnknown, Ledger, LedgerError, StorageError

from conftest import ACTOR, Place


def test_a_write_whose_durability_is_unknown_is_a_storage_error_of_its_own_class() -> None:
    assert issubclass(DurabilityUnknown, StorageError)
    assert issubclass(DurabilityUnknown, LedgerError)
    assert DurabilityUnknown.__module__ == "session_ledger"
    e = DurabilityUnknown("the write ... may or may not last", "durability_unknown", 42, "ab" * 32)
    back = pickle.loads(pickle.dumps(e))
    assert (type(back), back.message, back.kind, back.seq, back.hash) == (
        DurabilityUnknown,
        "the write ... may or may not last",
        "durability_unknown",
        42,
        "ab" * 32,
    )
    # What a caller looks for it with.
    head = AuditHead.parse(f"{back.seq}:{back.hash}")
    assert (head.seq, head.hash) == (42, "ab" * 32)


def test_a_url_of_several_servers_reaches_the_one_that_takes_writes(place: Place) -> None:
    if place.engine != "postgres":
        pytest.skip("a URL of several servers is PostgreSQL's")
    # A first host where nothing listens, as a primary that died: the next one is tried.
    several = re.sub(r"@", "@127.0.0.1:1,", place.target, count=1)
    join = "&" if "?" in several else "?"
    ledger = Ledger(f"{several}{join}target_session_attrs=read-write&connect_timeout=2", create=True)
    try:
        ledger.create_root("conductor", actor=ACTOR)
        assert ledger.state("conductor").known
        assert "127.0.0.1:1" in ledger.location
    finally:
        ledger.close()
