"""docs/console.md shows what the console prints: the command of "Starting it", run as written
(the ledger's path, the port and the token being the test's), writes the documented line to
standard output and the documented line to standard error, each to the stream the guide says."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

from conftest import OPERATOR, REPO, TOKEN

GUIDE = REPO / "docs" / "console.md"
#: What the guide's example names, and what the test puts in its place.
GUIDE_DB = "/var/lib/dashboard/ledger.db"
GUIDE_PORT = "8765"
GUIDE_TOKEN = "Qm9xY2..."


def starting_it() -> Dict[str, List[str]]:
    """The guide's "Starting it": its command line, and the lines it shows on each stream."""
    section = GUIDE.read_text(encoding="utf-8").split("## Starting it", 1)[1].split("\n## ", 1)[0]
    command = re.search(r"```sh\n(?:.*\n)*?(session-ledger-console [^\n]*)\n", section)
    stdout = re.search(r"to standard output[^\n]*:\n\n```text\n(.*?)```", section, re.DOTALL)
    stderr = re.search(r"on standard error[^`]*?:\n\n```text\n(.*?)```", section, re.DOTALL)
    assert command and stdout and stderr, "docs/console.md: the command, then a block for each stream"
    return {
        "command": command.group(1).split(),
        "stdout": stdout.group(1).splitlines(),
        "stderr": stderr.group(1).splitlines(),
    }


def test_the_guide_shows_what_the_console_writes_to_each_stream(tmp_path: Path) -> None:
    from session_ledger import Ledger

    db = str(tmp_path / "ledger.db")
    Ledger(db, create=True).close()
    guide = starting_it()
    assert guide["command"] == ["session-ledger-console", "--db", GUIDE_DB, "--operator", OPERATOR]
    args = [db if a == GUIDE_DB else a for a in guide["command"][1:]] + ["--port", "0"]
    process = subprocess.Popen(
        [sys.executable, "-m", "session_ledger_console", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SESSION_LEDGER_CONSOLE_TOKEN": TOKEN},
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        link = process.stdout.readline()
        port = re.search(r":(\d+)/", link)
        assert port, link
        said = [process.stderr.readline() for _ in guide["stderr"]]
    finally:
        process.terminate()
        out, err = process.communicate(timeout=30)

    def as_run(line: str) -> str:
        return line.replace(GUIDE_DB, db).replace(GUIDE_PORT, port.group(1)).replace(GUIDE_TOKEN, TOKEN)

    assert (link + out).splitlines() == [as_run(line) for line in guide["stdout"]]
    assert [line.rstrip("\n") for line in said] == [as_run(line) for line in guide["stderr"]]
    assert "error" not in err


def test_a_refusal_at_start_goes_to_standard_error_alone(tmp_path: Path) -> None:
    """A refusal goes to standard error, and standard output stays empty: a script that reads
    the link reads nothing else."""
    run = subprocess.run(
        [sys.executable, "-m", "session_ledger_console", "--db", str(tmp_path / "missing.db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith("session-ledger-console: error: no ledger at ")
