"""The console's parts that need no browser: how text is shown, and the start-up command."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from typing import List

from session_ledger_console.text import visible

from conftest import Place


def test_hidden_and_reordering_characters_are_shown_as_escapes_and_markup_as_text() -> None:
    assert str(visible("a<b>&\"'")) == "a&lt;b&gt;&amp;&#34;&#39;"
    shown = str(visible("x\x1by\u202ez\n"))
    assert shown.count('class="ctl"') == 3
    assert "\\x1b" in shown and "\\u202e" in shown and "\\x0a" in shown
    assert "\x1b" not in shown and "\u202e" not in shown
    assert str(visible(None)) == ""


def test_the_console_command_listens_on_localhost_and_prints_a_link_whose_token_lets_in(
    place: Place,
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "session_ledger_console", "--db", place.target, "--port", "0", "--operator", "carol"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        link = process.stdout.readline().strip()
        assert link.startswith("http://127.0.0.1:") and "/?token=" in link
        base = link.split("/?token=")[0]
        try:
            urllib.request.urlopen(base + "/")
            raise AssertionError("a page without the token was served")
        except urllib.error.HTTPError as e:
            assert e.code == 401
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
        page = opener.open(link).read().decode()
        assert '<strong id="operator">carol</strong>' in page
    finally:
        process.terminate()
        process.wait(30)


def test_the_console_command_refuses_a_missing_ledger_and_an_operator_name_it_cannot_record(
    place: Place,
) -> None:
    def run(args: List[str]) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(
            [sys.executable, "-m", "session_ledger_console", *args], capture_output=True, text=True, timeout=60
        )

    missing = run(["--db", str(place.folder / "nothing-here.db")])
    assert missing.returncode == 1 and "no ledger at" in missing.stderr
    bad = run(["--db", place.target, "--operator", "alice smith"])
    assert bad.returncode == 2 and "is not 1 to 64 characters" in bad.stderr
