"""The console's cost as the ledger grows: the same pages on a ledger of 10,000 sessions and on
one of a million, in one run, as the console's own server time (its ``Server-Timing`` header:
from the request entering the console to the response leaving it, the gate, the ledger's calls
and the template included), and the ratio large/small of the medians.

Both ledgers are the scale bench's (benches/scale.rs, docs/performance.md "The scale bench"):
trees of 1,000 sessions, fan-out 10, every other one trusted, half of each tree materialized,
built once and cached. Build (or find) them with

    SCALE_BUILD_ONLY=1 SCALE_SESSIONS=1000000 cargo bench --bench scale

and run, with the binding and the console installed (scripts/test-python, scripts/test-console):

    target/python-venv/bin/python console/bench/scale.py \\
        target/scale-cache/10000-v9-s1.db target/scale-cache/1000000-v9-s1.db

Each ledger is copied to a temporary folder first (the console opens its own handles on it).
The console serves each copy on 127.0.0.1 with a page size of 10, and each measured page is
requested 30 times on each side, small and large alternating, after 3 untimed requests; the
chain's first verification finishes before anything is measured. Nothing here asserts a time.
It is not part of any test run: it needs the cached ledgers, which take minutes to build.
"""

from __future__ import annotations

import http.client
import os
import secrets
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Dict, List, Tuple

import uvicorn

from session_ledger_console import Policy, create_app

TOKEN = secrets.token_urlsafe(32)
ITERATIONS = 30
WARMUP = 3
PAGE_SIZE = 10

#: (name, path): what is measured. The Forest names tree t's root `tree000t` and the k-th child
#: of a session `<session>.<k>` (benches/support/mod.rs).
PAGES: List[Tuple[str, str]] = [
    ("tree page, 10 roots shown", "/"),
    ("tree page, 50 roots asked (10 exist at 10,000)", "/?roots=50"),
    ("one level's expansion: a root's 10 children", "/tree/level?parent=tree0002"),
    ("one level's expansion: 10 grandchildren", "/tree/level?parent=tree0002.3"),
    ("tree page with two levels open (30 sessions)", "/?open=tree0002~10&open=tree0002.3~10"),
    ("session page (explain, 20 audit rows)", "/session/tree0004.1.2"),
    ("audit page, newest 50, with the routine verification", "/audit"),
    ("audit page, one session's rows", "/audit?session=tree0004.1.2"),
    ("audit page, a subtree's rows", "/audit?subtree=tree0004.1"),
    ("audit page, one kind (posture.grant)", "/audit?kind=posture.grant"),
]


class Served:
    def __init__(self, db: str) -> None:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        policy = Policy(token=TOKEN, operator="bench", listen=("127.0.0.1", self.port))
        self.app = create_app(db, policy, page_size=PAGE_SIZE)
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning", timeout_graceful_shutdown=1))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        while not self.server.started:
            time.sleep(0.02)
        self.app.state.console.verifier.ready.wait()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port)
        self.conn.request("GET", f"/?token={TOKEN}")
        response = self.conn.getresponse()
        response.read()
        self.cookie = response.getheader("set-cookie", "").split(";")[0]

    def server_ms(self, path: str) -> float:
        self.conn.request("GET", path, headers={"Cookie": self.cookie})
        response = self.conn.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"{path}: HTTP {response.status}")
        timing = response.getheader("server-timing", "")
        return float(timing.split("dur=")[1])

    def stop(self) -> None:
        self.conn.close()
        self.server.should_exit = True
        self.thread.join(30)


def copy(path: str, into: Path) -> str:
    target = into / Path(path).name
    for suffix in ("", "-wal"):
        if os.path.exists(path + suffix):
            shutil.copyfile(path + suffix, str(target) + suffix)
    return str(target)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(dir=Path(sys.argv[1]).parent) as folder:
        sides = [Served(copy(sys.argv[1], Path(folder))), Served(copy(sys.argv[2], Path(folder)))]
        try:
            for name, path in PAGES:
                times: Dict[int, List[float]] = {0: [], 1: []}
                for i in range(WARMUP + ITERATIONS):
                    order = (0, 1) if i % 2 == 0 else (1, 0)
                    for side in order:
                        ms = sides[side].server_ms(path)
                        if i >= WARMUP:
                            times[side].append(ms)
                small, large = statistics.median(times[0]), statistics.median(times[1])
                print(
                    f"console {name}: small_p50_ms={small:.2f} large_p50_ms={large:.2f} "
                    f"large_max_ms={max(times[1]):.2f} ratio={large / small:.2f}  [{path}]"
                )
        finally:
            for side in sides:
                side.stop()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
