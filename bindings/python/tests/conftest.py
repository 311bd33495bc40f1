"""Where each test's ledger lives: a SQLite file in the test's temp folder, and, when
``SESSION_LEDGER_TEST_POSTGRES`` names a PostgreSQL database (``scripts/with-postgres`` sets it),
a schema of its own there, dropped after the test.

The behaviour tests take the ``place`` fixture and run once per engine. Without the variable the
PostgreSQL cases are skipped, and said to be; with ``SESSION_LEDGER_REQUIRE_POSTGRES=1`` (as the
README's test command sets) they fail instead. The schema is made with ``psql``, which the
PostgreSQL test setup needs anyway, so that the suite needs no PostgreSQL driver of its own.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator, List

import pytest

from session_ledger import Ledger

URL_VARIABLE = "SESSION_LEDGER_TEST_POSTGRES"
REQUIRE_VARIABLE = "SESSION_LEDGER_REQUIRE_POSTGRES"
ACTOR = "alice"

_schemas = itertools.count()


@dataclass
class Place:
    """One test's ledger: its engine, and the path or URL that opens it."""

    engine: str
    target: str
    folder: Path
    opened: List[Ledger] = field(default_factory=list)

    def open(self, **options: Any) -> Ledger:
        """A new handle on the test's ledger, closed when the test ends. A handle that may
        write creates the ledger if the test has none yet (``create=True``, as ``init`` would);
        a read-only one opens what is there."""
        if not options.get("read_only", False):
            options.setdefault("create", True)
        ledger = Ledger(self.target, **options)
        self.opened.append(ledger)
        return ledger

    def close_all(self) -> None:
        for ledger in self.opened:
            ledger.close()


def _psql() -> str:
    """psql: on PATH, or beside the newest PostgreSQL server programs."""
    found = shutil.which("psql")
    if found:
        return found
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/psql"),
        key=lambda p: [int(x) if x.isdigit() else 0 for x in p.split("/")[4].split(".")],
    )
    if not candidates:
        pytest.fail(f"{URL_VARIABLE} is set but psql is not found: install the PostgreSQL client")
    return candidates[-1]


def _sql(url: str, sql: str) -> None:
    subprocess.run(
        [_psql(), "--no-psqlrc", "--quiet", "--set=ON_ERROR_STOP=1", "--dbname", url, "--command", sql],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def postgres_server() -> str:
    """The test server's URL; skips the test without one, or fails it when one is required."""
    url = os.environ.get(URL_VARIABLE, "")
    if url:
        return url
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(f"{URL_VARIABLE} is not set, and {REQUIRE_VARIABLE}=1")
    pytest.skip(f"{URL_VARIABLE} is not set (run under scripts/with-postgres)")


@pytest.fixture(params=["sqlite", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """The test's ledger on each engine."""
    if request.param == "sqlite":
        sqlite = Place("sqlite", str(tmp_path / "ledger.db"), tmp_path)
        yield sqlite
        sqlite.close_all()
        return
    base = postgres_server()
    schema = f"py_{os.getpid()}_{next(_schemas)}"
    # pgcrypto (every ledger's migration asks for it) goes into `public` once, where it serves
    # every schema and outlives the dropped ones; the lock is the one the Rust tests take.
    _sql(
        base,
        "SELECT pg_advisory_lock(1); CREATE EXTENSION IF NOT EXISTS pgcrypto SCHEMA public; "
        f"SELECT pg_advisory_unlock(1); DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}",
    )
    join = "&" if "?" in base else "?"
    postgres = Place("postgres", f"{base}{join}options=-c%20search_path%3D{schema}%2Cpublic", tmp_path)
    yield postgres
    postgres.close_all()
    _sql(base, f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def sqlite_place(tmp_path: Path) -> Iterator[Place]:
    """A SQLite ledger, for the tests that reach into the file with Python's sqlite3."""
    sqlite = Place("sqlite", str(tmp_path / "ledger.db"), tmp_path)
    yield sqlite
    sqlite.close_all()


@pytest.fixture
def ledger(place: Place) -> Ledger:
    """A ledger with the default settings, on each engine."""
    return place.open()


# Python's sqlite3 must never open a ledger file in the process that has it open through the
# binding: that process then holds two copies of SQLite, and POSIX locks are per process, so
# neither copy sees the other's locks, and closing one's file releases the other's. What a test
# does to the file with sqlite3 (a hand edit, a held write lock) runs in another process, as an
# operator's shell or another writer would.

_HOLD_LOCK = """
import sqlite3, sys
shell = sqlite3.connect(sys.argv[1], isolation_level=None)
shell.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
shell.execute("ROLLBACK")
"""


def sqlite_shell(path: str, script: str) -> None:
    """Runs `script` on the SQLite file at `path` in another process, as a hand edit."""
    code = "import sqlite3, sys; sqlite3.connect(sys.argv[1], isolation_level=None).executescript(sys.argv[2])"
    subprocess.run([sys.executable, "-c", code, path, script], check=True)


class WriteLockHolder:
    """Another process holding the SQLite file's write lock (`BEGIN IMMEDIATE`) until released."""

    def __init__(self, path: str) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-c", _HOLD_LOCK, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        stdout: IO[str] = self._process.stdout  # type: ignore[assignment]
        assert stdout.readline().strip() == "locked"

    def release(self) -> None:
        if self._process.poll() is None:
            stdin: IO[str] = self._process.stdin  # type: ignore[assignment]
            stdin.write("\n")
            stdin.flush()
            self._process.wait(30)

