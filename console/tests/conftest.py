"""The console's test setup: a real ledger on each engine, the console serving it on a port of
127.0.0.1, and Debian's Chromium driven by Playwright.

- ``place``: the test's ledger, a SQLite file in the test's temp folder, or a schema of its own
  in the PostgreSQL database ``SESSION_LEDGER_TEST_POSTGRES`` names (``scripts/with-postgres``
  sets it), dropped after the test. Without the variable the PostgreSQL cases are skipped, and
  said to be; with ``SESSION_LEDGER_REQUIRE_POSTGRES=1`` they fail instead.
- ``console``: the console (``create_app``) serving that ledger through uvicorn, in a thread of
  this process, with a known token; ``console.ledger`` is another handle on the same ledger,
  for the test's own setup, as the dashboard backend would have.
- ``browser``: Chromium from ``/usr/bin/chromium`` (or ``SESSION_LEDGER_CHROMIUM``), launched
  once; Playwright downloads no browser. ``page``: a new browser context signed in to the
  console with the start-up link.

Screenshots go to ``target/console-screenshots/<engine>/`` (or
``SESSION_LEDGER_CONSOLE_SCREENSHOTS``); docs/console.md shows the SQLite ones. The run ends
with a line that says how many browser tests ran, on which engines.
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import socket
import subprocess
import threading
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, List, cast

import pytest
import uvicorn
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, Playwright, sync_playwright

from session_ledger import Ledger
from session_ledger_console import Policy, create_app

REPO = Path(__file__).resolve().parents[2]
URL_VARIABLE = "SESSION_LEDGER_TEST_POSTGRES"
REQUIRE_VARIABLE = "SESSION_LEDGER_REQUIRE_POSTGRES"
CHROMIUM = os.environ.get("SESSION_LEDGER_CHROMIUM", "/usr/bin/chromium")
SCREENSHOTS = Path(os.environ.get("SESSION_LEDGER_CONSOLE_SCREENSHOTS", REPO / "target" / "console-screenshots"))
OPERATOR = "alice"
#: A token of the strength the console asks (128 bits and more: 43 characters of base64url).
TOKEN = "dGVzdC10b2tlbi1vZi10aGUtY29uc29sZS0xMjM0NTY"

_schemas = itertools.count()
_browser_runs: "Counter[str]" = Counter()


@dataclass
class Place:
    """One test's ledger: its engine, and the path or URL that opens it."""

    engine: str
    target: str
    folder: Path
    opened: List[Ledger] = field(default_factory=list)

    def open(self, **options: Any) -> Ledger:
        ledger = Ledger(self.target, **options)
        self.opened.append(ledger)
        return ledger


def _psql() -> str:
    found = shutil.which("psql")
    if found:
        return found
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))
    if not candidates:
        pytest.fail(f"{URL_VARIABLE} is set but psql is not found: install the PostgreSQL client")
    return candidates[-1]


def _sql(url: str, sql: str) -> None:
    subprocess.run(
        [_psql(), "--no-psqlrc", "--quiet", "--set=ON_ERROR_STOP=1", "--dbname", url, "--command", sql],
        check=True,
        stdout=subprocess.DEVNULL,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """The test's ledger on each engine, created (the console opens only a ledger that exists)."""
    if request.param == "sqlite":
        place = Place("sqlite", str(tmp_path / "ledger.db"), tmp_path)
    else:
        base = os.environ.get(URL_VARIABLE, "")
        if not base:
            if os.environ.get(REQUIRE_VARIABLE) == "1":
                pytest.fail(f"{URL_VARIABLE} is not set, and {REQUIRE_VARIABLE}=1")
            pytest.skip(f"{URL_VARIABLE} is not set (run under scripts/with-postgres)")
        schema = f"console_{os.getpid()}_{next(_schemas)}"
        _sql(
            base,
            "SELECT pg_advisory_lock(1); CREATE EXTENSION IF NOT EXISTS pgcrypto SCHEMA public; "
            f"SELECT pg_advisory_unlock(1); DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}",
        )
        join = "&" if "?" in base else "?"
        place = Place("postgres", f"{base}{join}options=-c%20search_path%3D{schema}%2Cpublic", tmp_path)
        request.addfinalizer(lambda: _sql(base, f"DROP SCHEMA {schema} CASCADE"))
    place.open(create=True)
    yield place
    for ledger in place.opened:
        ledger.close()


@dataclass
class Console:
    """A console serving the test's ledger."""

    url: str
    place: Place
    ledger: Ledger
    server: uvicorn.Server
    thread: threading.Thread

    @property
    def app(self) -> FastAPI:
        """The console's application, as ``create_app`` made it."""
        return cast(FastAPI, self.server.config.app)

    def link(self, path: str = "/") -> str:
        return f"{self.url}{path}"

    def login_link(self) -> str:
        return f"{self.url}/?token={TOKEN}"


def serve(place: Place, policy: Policy, **options: Any) -> Console:
    """Starts the console on a free port of 127.0.0.1 and waits until it listens. The console
    learns the address it listens on, as the command line tells it, and uvicorn rewrites no
    address from a proxy's headers, as with the command line."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    app = create_app(place.target, replace(policy, listen=("127.0.0.1", port)), **options)
    config = uvicorn.Config(
        app, log_level="warning", timeout_graceful_shutdown=1, lifespan="on", proxy_headers=False
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the console did not start")
        threading.Event().wait(0.02)
    return Console(f"http://127.0.0.1:{port}", place, place.open(), server, thread)


def stop(console: Console) -> None:
    console.server.should_exit = True
    console.thread.join(30)


@pytest.fixture
def console(place: Place) -> Iterator[Console]:
    """The console with a token for the operator ``alice``."""
    served = serve(place, Policy(token=TOKEN, operator=OPERATOR))
    yield served
    stop(served)


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"no Chromium at {CHROMIUM}: install Debian's chromium (apt-get install chromium)")
    # As root (CI) Chromium needs --no-sandbox; a container's small /dev/shm needs the other.
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"]
    )
    yield browser
    browser.close()


@pytest.fixture
def new_page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Makes pages in fresh browser contexts (no cookie), closed after the test."""
    contexts = []
    engine = request.node.callspec.params.get("place", "-") if hasattr(request.node, "callspec") else "-"
    request.node.user_properties.append(("browser", engine))

    def make() -> Page:
        context = browser.new_context(viewport={"width": 1200, "height": 800})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        return page

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_page: Any, console: Console) -> Page:
    """A page signed in to the console with its start-up link."""
    page: Page = new_page()
    response = page.goto(console.login_link())
    assert response is not None and response.status == 200
    return page


def shoot(page: Page, place: Place, name: str, *, full: bool = True) -> Path:
    """Saves a screenshot of the page as it is now."""
    folder = SCREENSHOTS / place.engine
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=full)
    return path


def cli() -> str:
    """The command line built by cargo (scripts/test-console builds it)."""
    path = os.environ.get("SESSION_LEDGER_CLI", str(REPO / "target" / "debug" / "session-ledger"))
    if not os.path.exists(path):
        pytest.fail(f"no session-ledger command line at {path}: run `cargo build --bin session-ledger`")
    return path


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and report.passed:
        for key, engine in report.user_properties:
            if key == "browser":
                _browser_runs[str(engine)] += 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    total = sum(_browser_runs.values())
    engines = ", ".join(f"{engine} {n}" for engine, n in sorted(_browser_runs.items()))
    terminalreporter.write_line(
        f"console: {total} browser tests passed in Chromium ({engines or 'none'})"
    )


def wait_for(condition: Any, what: str, timeout: float = 10.0) -> None:
    """Waits for ``condition()`` to hold, checking every 50 ms, and fails after ``timeout``."""
    done = threading.Event()
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        done.wait(0.05)
    pytest.fail(f"waited {timeout} s for {what}")
