"""The console on a hostile network: requests as an attacker writes them, with curl's freedom
(any Host, any Origin, headers twice, foreign cookies, malformed parameters), against the
console serving a real ledger, on each engine, and in Chromium where a browser matters.

| finding                                                 | now                          |
|---------------------------------------------------------|------------------------------|
| another Host (DNS rebinding), reads included            | 421 (400: none, two, bad)    |
| Origin compared with the request's own Host             | compared with the console's  |
| the proxy's header from another peer / twice            | 403 / 400                    |
| trusting a header beyond loopback                       | refused at start, or warned  |
| a cascade confirmed without its preview's token         | 400, nothing revoked         |
| another application's cookie before the console's       | found leniently              |
| a refusal page showing where the ledger is              | shows nothing of it          |
| malformed parameters; a failing route                   | 400; 500 with the headers    |
| console sessions that never expire, unbounded           | idle/lifetime/bound/sign out |
| invisible characters (U+3164 and its kind)              | shown as escapes             |
| markup and invisible characters in a recorded command   | shown as text and escapes    |
| a stored pattern with a line break                      | removable                    |
| the sign-in link redirecting to //evil.example          | stays on the console         |
| a weak preset token                                     | refused at start             |
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple
from urllib.parse import urlencode, urlsplit

import pytest
from playwright.sync_api import Dialog, Page, expect

from conftest import OPERATOR, TOKEN, Console, Place, serve, stop
from session_ledger_console import Policy
from session_ledger_console.gate import SECURITY_HEADERS

PROXY_HEADER = "X-Forwarded-User"


@dataclass
class Answer:
    """A response as the client saw it."""

    status: int
    headers: List[Tuple[str, str]]
    body: str

    def header(self, name: str) -> Optional[str]:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def cookie(self) -> str:
        """The ``name=value`` of the cookie the response sets, or ``""``."""
        return (self.header("set-cookie") or "").split(";")[0]


def call(
    console: Console,
    method: str,
    path: str,
    headers: Sequence[Tuple[str, str]] = (),
    body: bytes = b"",
) -> Answer:
    """One request as written, headers repeated if given twice; ``Host`` is the console's own
    unless given."""
    parts = urlsplit(console.url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=60)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        if not any(k.lower() == "host" for k, _ in headers):
            conn.putheader("Host", parts.netloc)
        for key, value in headers:
            conn.putheader(key, value)
        if method not in ("GET", "HEAD"):
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body if body else None)
        response = conn.getresponse()
        return Answer(response.status, response.getheaders(), response.read().decode("utf-8", "replace"))
    finally:
        conn.close()


def form(fields: Dict[str, str]) -> Tuple[Tuple[str, str], bytes]:
    return ("Content-Type", "application/x-www-form-urlencoded"), urlencode(fields).encode()


def port_of(console: Console) -> int:
    port = urlsplit(console.url).port
    assert port is not None
    return port


def sign_in(console: Console) -> str:
    """Follows the start-up link; returns the ``Cookie`` header value it set."""
    answer = call(console, "GET", f"/?token={TOKEN}")
    assert answer.status == 303, answer
    return answer.cookie()


def csrf_in(body: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', body)
    assert found, "the page has a form"
    return found.group(1)


def assert_security_headers(answer: Answer, what: str = "") -> None:
    for name, value in SECURITY_HEADERS:
        assert answer.header(name.decode()) == value.decode(), f"{what}: {name.decode()} on {answer.status}"


@pytest.fixture
def proxied(place: Place) -> Iterator[Console]:
    """The console behind a reverse proxy that names operators in ``X-Forwarded-User``."""
    served = serve(place, Policy(token=None, operator=None, trust_header=PROXY_HEADER))
    yield served
    stop(served)


# ------------------------------------------------------------------------ 1. Host and Origin


def test_behind_the_proxy_a_request_for_another_host_is_refused_and_changes_nothing(proxied: Console) -> None:
    proxied.ledger.create_root("conductor", actor=OPERATOR)
    page = call(proxied, "GET", "/session/conductor", [(PROXY_HEADER, "bob")])
    assert page.status == 200
    # DNS rebinding: the attacker's name resolves to the console; the request says so in Host,
    # and its Origin is the attacker's page, which matches that Host.
    evil = f"evil.test:{urlsplit(proxied.url).port}"
    head = proxied.ledger.audit_head()
    content_type, body = form({"level": "trust", "confirm": "conductor", "csrf": csrf_in(page.body)})
    refused = call(
        proxied,
        "POST",
        "/session/conductor/grant",
        [("Host", evil), ("Origin", f"http://{evil}"), (PROXY_HEADER, "bob"), content_type, ("Cookie", page.cookie())],
        body,
    )
    assert refused.status == 421
    assert_security_headers(refused, "a POST for another host")
    read = call(proxied, "GET", "/audit", [("Host", evil), (PROXY_HEADER, "bob")])
    assert read.status == 421 and "conductor" not in read.body
    assert_security_headers(read, "a GET for another host")
    assert proxied.ledger.audit_head() == head
    assert proxied.ledger.posture("conductor") is None


def test_with_a_public_origin_pages_are_served_to_that_host_and_the_listening_address_only(place: Place) -> None:
    served = serve(
        place,
        Policy(token=None, operator=None, trust_header=PROXY_HEADER, public_origin="https://ledger-console.example"),
    )
    try:
        port = urlsplit(served.url).port
        for host, status in [
            ("ledger-console.example", 200),
            ("LEDGER-console.example:443", 200),
            (f"127.0.0.1:{port}", 200),
            ("evil.test", 421),
            (f"evil.test:{port}", 421),
            ("ledger-console.example:8443", 421),
            ("ledger-console.example.evil.test", 421),
        ]:
            answer = call(served, "GET", "/audit", [("Host", host), (PROXY_HEADER, "bob")])
            assert answer.status == status, host
            assert_security_headers(answer, host)
    finally:
        stop(served)


def test_a_loopback_console_answers_to_each_loopback_name_with_its_own_port_only(console: Console) -> None:
    cookie = sign_in(console)
    port = port_of(console)
    for host, status in [
        (f"127.0.0.1:{port}", 200),
        (f"localhost:{port}", 200),
        (f"[::1]:{port}", 200),
        (f"localhost:{port + 1}", 421),
        ("localhost", 421),
        (f"127.0.0.2:{port}", 421),
        (f"evil.test:{port}", 421),
        ("", 400),
        ("bad host:1", 400),
    ]:
        answer = call(console, "GET", "/", [("Host", host), ("Cookie", cookie)])
        assert answer.status == status, host
        assert_security_headers(answer, host)
    twice = call(console, "GET", "/", [("Host", f"127.0.0.1:{port}"), ("Host", f"evil.test:{port}"), ("Cookie", cookie)])
    assert twice.status == 400


def test_a_change_must_come_from_the_consoles_own_origin_whatever_the_request_says_its_host_is(
    console: Console,
) -> None:
    console.ledger.create_root("conductor", actor=OPERATOR)
    cookie = sign_in(console)
    csrf = csrf_in(call(console, "GET", "/session/conductor", [("Cookie", cookie)]).body)
    port = port_of(console)
    content_type, body = form({"level": "trust", "confirm": "conductor", "csrf": csrf})
    for origin in [f"http://evil.test:{port}", "null", f"https://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}"]:
        answer = call(console, "POST", "/session/conductor/grant", [("Origin", origin), ("Cookie", cookie), content_type], body)
        assert answer.status == 403, origin
    assert console.ledger.posture("conductor") is None
    answer = call(
        console, "POST", "/session/conductor/grant", [("Origin", f"http://localhost:{port}"), ("Cookie", cookie), content_type], body
    )
    assert answer.status == 303
    assert console.ledger.posture("conductor") is not None


def test_the_trusted_header_is_taken_only_from_a_configured_proxy_address(place: Place) -> None:
    served = serve(
        place, Policy(token=None, operator=None, trust_header=PROXY_HEADER, trusted_proxies=("192.0.2.7", "10.1.0.0/16"))
    )
    try:
        # This test's requests come from 127.0.0.1, which is not one of the proxies here.
        answer = call(served, "GET", "/", [(PROXY_HEADER, "bob")])
        assert answer.status == 403
        assert "bob" not in answer.body
        assert_security_headers(answer)
        assert call(served, "GET", "/").status == 401
    finally:
        stop(served)


def test_a_request_carrying_the_trusted_header_twice_is_refused(proxied: Console) -> None:
    answer = call(proxied, "GET", "/", [(PROXY_HEADER, "bob"), (PROXY_HEADER, "alice")])
    assert answer.status == 400
    assert_security_headers(answer)
    assert call(proxied, "GET", "/", [(PROXY_HEADER, "bob")]).status == 200


def test_the_host_rules_of_each_kind_of_listener() -> None:
    from session_ledger_console.gate import OwnAddresses

    anywhere = OwnAddresses.of(Policy(token=TOKEN, operator=OPERATOR, listen=("0.0.0.0", 8765)))
    assert anywhere.host("192.168.1.5:8765") and anywhere.host("[fe80::1]:8765") and anywhere.host("localhost:8765")
    # A name is what DNS rebinding brings: only an address, or a name given as the public origin.
    assert not anywhere.host("evil.test:8765") and not anywhere.host("192.168.1.5:8766")
    assert anywhere.origin("http://192.168.1.5:8765") and not anywhere.origin("http://evil.test:8765")
    one = OwnAddresses.of(Policy(token=TOKEN, operator=OPERATOR, listen=("192.168.1.5", 80)))
    assert one.host("192.168.1.5") and one.host("192.168.1.5:80") and not one.host("localhost:80")
    assert one.origin("http://192.168.1.5") and not one.origin("https://192.168.1.5")
    with pytest.raises(ValueError):
        OwnAddresses.of(Policy(token=TOKEN, operator=OPERATOR))


def run_console(args: List[str], env: Optional[Dict[str, str]] = None) -> "subprocess.CompletedProcess[str]":
    """The console command, expected to stop by itself (a refusal at start)."""
    return subprocess.run(
        [sys.executable, "-m", "session_ledger_console", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def start_console(args: List[str], env: Optional[Dict[str, str]] = None) -> Tuple["subprocess.Popen[str]", str]:
    """The console command, serving: returns it and the line it printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "session_ledger_console", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    assert process.stdout is not None
    line = process.stdout.readline().strip()
    return process, line


def end_console(process: "subprocess.Popen[str]") -> str:
    """Stops a console started by `start_console`; returns what it wrote on standard error."""
    process.terminate()
    _, err = process.communicate(timeout=30)
    return err


def test_trusting_a_header_beyond_loopback_needs_its_own_flag_and_is_warned_about(place: Place) -> None:
    refused = run_console(["--db", place.target, "--host", "0.0.0.0", "--port", "0", "--trust-header", PROXY_HEADER])
    assert refused.returncode == 2
    assert "--allow-remote-proxy" in refused.stderr and "beyond loopback" in refused.stderr
    process, line = start_console(
        ["--db", place.target, "--host", "0.0.0.0", "--port", "0", "--trust-header", PROXY_HEADER,
         "--allow-remote-proxy", "--trusted-proxy", "192.0.2.7"]
    )
    try:
        assert line.startswith("http://0.0.0.0:")
    finally:
        err = end_console(process)
    assert "warning: listening on 0.0.0.0 with --trust-header" in err and "192.0.2.7" in err
    loopback, line = start_console(["--db", place.target, "--port", "0", "--trust-header", PROXY_HEADER])
    try:
        assert line.startswith("http://127.0.0.1:")
    finally:
        assert "warning" not in end_console(loopback)


# ------------------------------------------------------------------------ 2. cascade without a token


def test_a_cascade_confirmed_without_its_previews_token_is_refused_and_revokes_nothing(console: Console) -> None:
    ledger = console.ledger
    ledger.create_root("conductor", actor=OPERATOR)
    ledger.grant("conductor", "trust", actor=OPERATOR)
    ledger.create_child("worker", creator="conductor", actor=OPERATOR)
    cookie = sign_in(console)
    csrf = csrf_in(call(console, "GET", "/session/conductor", [("Cookie", cookie)]).body)
    head = ledger.audit_head()
    for fields in [{"propagation": "cascade", "token": ""}, {"propagation": "cascade"}, {"propagation": "cascade", "token": "  "}]:
        content_type, body = form({**fields, "csrf": csrf})
        answer = call(console, "POST", "/session/conductor/revoke", [("Cookie", cookie), content_type], body)
        assert answer.status == 400, fields
        assert "preview" in answer.body.lower()
        assert_security_headers(answer)
    assert ledger.audit_head() == head
    assert ledger.state("conductor").trust and ledger.state("worker").trust


# ------------------------------------------------------------------------ 3. foreign cookies


def test_another_apps_unusual_cookie_next_to_the_consoles_does_not_lock_the_operator_out(console: Console) -> None:
    ours = sign_in(console)
    for header in [
        f'prefs={{"theme":"dark"}}; {ours}',
        f"greeting=hello world; {ours}",
        f"flag; {ours}; other=1",
        f'quoted="a\\"b"; {ours}',
        f"{ours};last=x y",
        f"  {ours}  ",
    ]:
        answer = call(console, "GET", "/", [("Cookie", header)])
        assert answer.status == 200, header
    answer = call(console, "GET", "/", [("Cookie", 'prefs={"theme":"dark"}'), ("Cookie", ours)])
    assert answer.status == 200, "a cookie header split in two"


def test_of_two_console_cookies_only_the_one_of_a_live_session_counts_and_two_live_ones_count_for_none(
    console: Console,
) -> None:
    first = sign_in(console)
    name = first.split("=")[0]
    for header in [f"{name}=not-a-session; {first}", f"{first}; {name}=not-a-session"]:
        assert call(console, "GET", "/", [("Cookie", header)]).status == 200, header
    second = sign_in(console)  # another browser: a console session of its own
    assert call(console, "GET", "/", [("Cookie", f"{first}; {second}")]).status == 401


# ------------------------------------------------------------------------ 4. refusal pages


def test_a_refusal_page_tells_nothing_about_the_ledger(console: Console) -> None:
    location = console.ledger.location
    assert location
    port = port_of(console)
    refusals = [
        call(console, "GET", "/"),
        call(console, "GET", "/audit"),
        call(console, "GET", "/?token=not-the-token"),
        call(console, "GET", "/", [("Host", f"evil.test:{port}")]),
        call(console, "POST", "/session/x/end", [("Cookie", sign_in(console))]),
    ]
    for answer in refusals:
        assert answer.status in (401, 403, 421), answer.status
        for secret in [location, str(console.place.folder), "ledger.db", "sqlite", "postgres", "socket", OPERATOR]:
            assert secret.lower() not in answer.body.lower(), (answer.status, secret)


# ------------------------------------------------------------------------ 5. no input reaches a 500


def test_each_malformed_parameter_answers_400_with_the_pages_usual_headers(console: Console) -> None:
    console.ledger.create_root("conductor", actor=OPERATOR)
    cookie = sign_in(console)
    for path in [
        "/audit?since=notadate",
        "/audit?until=2026-13-45",
        "/audit?before=99999999999999999999999",
        "/audit?before=-1",
        "/audit/rows?before=99999999999999999999999",
        "/audit?kind=no.such.kind",
        "/?open=conductor~%C2%B2",
        "/?open=conductor~" + "9" * 5000,
        "/tree/body?open=conductor",
        "/?roots=%C2%B2",
        "/tree/level?parent=conductor&shown=" + "9" * 5000,
        "/session/conductor/decisions?before=-1",
        "/session/conductor/decisions?before=99999999999999999999999",
        "/session/conductor/decisions?before=%C2%B2",
    ]:
        answer = call(console, "GET", path, [("Cookie", cookie)])
        assert answer.status == 400, path[:80]
        assert_security_headers(answer, path[:80])


def test_an_exception_in_a_route_answers_a_plain_500_with_the_security_headers(console: Console) -> None:
    def boom() -> None:
        raise RuntimeError("a secret detail of the failure")

    console.app.add_api_route("/boom", boom)
    answer = call(console, "GET", "/boom", [("Cookie", sign_in(console))])
    assert answer.status == 500
    assert_security_headers(answer, "a 500")
    assert "secret detail" not in answer.body and "Traceback" not in answer.body


#: What a hostile client sends a parameter: the bytes of its value, percent-encoded on the wire.
HOSTILE: List[bytes] = [
    b"",
    b" ",
    b"0",
    b"-1",
    b"-99999999999999999999999",
    b"99999999999999999999999",
    b"9" * 5000,
    "²".encode(),
    "٣".encode(),
    "１".encode(),
    b"1e9",
    b"0x10",
    b"NaN",
    b"~",
    b"conductor~",
    "conductor~²".encode(),
    b"conductor~" + b"9" * 5000,
    b"\xff",
    b"\xc3\x28",
    b"\xed\xa0\x80",
    b"\x00",
    b"\x1b[2J",
    b"\r\n",
    b"\x7f\x08",
    "\u202e\u3164\ufeff".encode(),
    b"x" * 4000,
    b"../../etc/passwd",
    b"//evil.example/x",
    b"<script>alert(1)</script>",
    b"9999-12-31T23:59:59+14:00",
    b"0001-01-01T00:00:00-14:00",
    b"sub-conductor-99999999999999999999999",
]


def _routes(console: Console) -> List[Tuple[str, str, List[str], List[str], List[str]]]:
    """Every route of the console: (method, path template, path, query and form parameters)."""
    from fastapi.routing import APIRoute
    from starlette.routing import Mount

    found = []
    for route in console.app.routes:
        if isinstance(route, APIRoute):
            d = route.dependant
            for method in sorted(route.methods or []):
                found.append(
                    (
                        method,
                        route.path,
                        [p.name for p in d.path_params],
                        [p.alias for p in d.query_params],
                        [p.alias for p in d.body_params],
                    )
                )
        elif isinstance(route, Mount):
            found.append(("GET", route.path + "/{path}", ["path"], [], []))
    return found


def test_every_route_answers_every_hostile_parameter_without_a_5xx_and_with_the_security_headers(
    console: Console,
) -> None:
    from urllib.parse import quote_from_bytes

    ledger = console.ledger
    ledger.create_root("conductor", actor=OPERATOR)
    ledger.create_child("worker", creator="conductor", actor=OPERATOR)
    cookie = sign_in(console)
    routes = _routes(console)
    assert {r[1] for r in routes} >= {"/", "/audit", "/session/{id}", "/session/{id}/revoke", "/epoch"}
    tried = 0
    for method, template, path_params, query_params, form_params in routes:
        if template == "/events":
            continue  # a stream that never ends; it has no parameter
        for target in path_params + query_params + form_params:
            for value in HOSTILE:
                def encoded(name: str) -> str:
                    if name == target:
                        return quote_from_bytes(value, safe="")
                    return "conductor" if name in ("id", "path") else "x"

                path = template
                for name in path_params:
                    path = path.replace("{" + name + "}", encoded(name))
                query = "&".join(f"{n}={encoded(n)}" for n in query_params if n == target)
                headers: List[Tuple[str, str]] = [("Cookie", cookie)]
                body = b""
                if method == "POST":
                    csrf = csrf_in(call(console, "GET", "/epoch", [("Cookie", cookie)]).body)
                    fields = [f"{n}={encoded(n)}" for n in form_params] + [f"csrf={csrf}"]
                    body = "&".join(fields).encode()
                    headers += [("Content-Type", "application/x-www-form-urlencoded"), ("Origin", console.url)]
                answer = call(console, method, path + ("?" + query if query else ""), headers, body)
                what = f"{method} {template} {target}={value[:40]!r}"
                assert answer.status < 500 and answer.status != 422, f"{what}: {answer.status}"
                assert_security_headers(answer, what)
                tried += 1
    assert tried > 500


# ------------------------------------------------------------------------ 6. console sessions


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_console_session_ends_after_its_idle_time_or_its_lifetime_whichever_comes_first() -> None:
    from session_ledger_console.gate import Sessions

    clock = Clock()
    sessions = Sessions(idle=100, lifetime=1000, most=10, clock=clock)
    idle = sessions.new("alice")
    busy = sessions.new("alice")
    for _ in range(10):
        clock.now += 99
        assert sessions.get(busy.sid) is busy
    assert sessions.get(idle.sid) is None, "idle for 990 s"
    clock.now += 99
    assert sessions.get(busy.sid) is None, "used every 99 s, but 990 + 99 s after it began"
    assert len(sessions) == 0


def test_live_console_sessions_are_bounded_and_the_least_recently_used_goes_first() -> None:
    from session_ledger_console.gate import Sessions

    clock = Clock()
    sessions = Sessions(idle=100, lifetime=1000, most=3, clock=clock)
    a, b, c = (sessions.new(n) for n in ("a", "b", "c"))
    clock.now += 1
    assert sessions.get(a.sid) is a
    d = sessions.new("d")
    assert len(sessions) == 3
    assert sessions.get(b.sid) is None
    assert [sessions.get(x.sid) for x in (a, c, d)] == [a, c, d]


def test_behind_the_proxy_requests_without_a_cookie_share_the_operators_one_console_session(proxied: Console) -> None:
    for _ in range(3000):
        assert call(proxied, "GET", "/favicon-not-here", [(PROXY_HEADER, "bob")]).status == 404
    assert call(proxied, "GET", "/", [(PROXY_HEADER, "carol")]).status == 200
    assert len(proxied.app.state.sessions) == 2


def test_an_idle_console_session_is_refused_and_so_is_one_past_its_lifetime(place: Place) -> None:
    clock = Clock()
    served = serve(place, Policy(token=TOKEN, operator=OPERATOR, session_idle=600, session_lifetime=3600), clock=clock)
    try:
        cookie = sign_in(served)
        assert call(served, "GET", "/", [("Cookie", cookie)]).status == 200
        clock.now += 601
        assert call(served, "GET", "/", [("Cookie", cookie)]).status == 401
        cookie = sign_in(served)
        for _ in range(7):
            clock.now += 500
            assert call(served, "GET", "/", [("Cookie", cookie)]).status == 200
        clock.now += 500
        assert call(served, "GET", "/", [("Cookie", cookie)]).status == 401
    finally:
        stop(served)


def test_the_session_cookie_lasts_no_longer_than_the_console_session(console: Console) -> None:
    answer = call(console, "GET", f"/?token={TOKEN}")
    assert "Max-Age=86400" in (answer.header("set-cookie") or "")


def test_signing_in_again_from_a_browser_replaces_its_console_session(console: Console) -> None:
    first = sign_in(console)
    again = call(console, "GET", f"/?token={TOKEN}", [("Cookie", first)])
    assert again.status == 303
    second = again.cookie()
    assert second and second != first
    assert len(console.app.state.sessions) == 1
    assert call(console, "GET", "/", [("Cookie", first)]).status == 401
    assert call(console, "GET", "/", [("Cookie", second)]).status == 200


def test_signing_out_ends_the_console_session_and_only_a_form_of_it_can(console: Console, page: Page) -> None:
    cookie = "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())
    assert call(console, "POST", "/logout", [("Cookie", cookie)]).status == 403, "no CSRF token"
    page.get_by_role("button", name="Sign out").click()
    expect(page.locator("h1")).to_have_text("Signed out")
    assert page.context.cookies() == [], "the cookie is cleared"
    assert call(console, "GET", "/", [("Cookie", cookie)]).status == 401, "the session has ended"
    response = page.goto(console.link("/"))
    assert response is not None and response.status == 401
    assert len(console.app.state.sessions) == 0


# ------------------------------------------------------------------------ 7. invisible characters


def test_invisible_and_confusable_characters_are_shown_as_escapes() -> None:
    from session_ledger_console.text import visible

    for ch in [
        "\u3164",  # Hangul filler: `npm\u3164test` renders as `npm test`
        "\u115f", "\u1160", "\uffa0",  # the other Hangul fillers
        "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff",  # zero-width space, joiners, word joiner, BOM
        "\u180e", "\u034f", "\u00ad",  # Mongolian vowel separator, grapheme joiner, soft hyphen
        "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
        "\u200e", "\u200f", "\u061c",  # bidi controls and marks
        "\U000e0001", "\U000e0041", "\U000e007f",  # tag characters
        "\ufe0f", "\ufe00", "\U000e0100",  # variation selectors
        "\u00a0", "\u2007", "\u3000",  # spaces that are not the space
        "\x1b", "\n", "\x7f",
    ]:
        shown = str(visible(f"npm{ch}test"))
        code = ord(ch)
        escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
        assert ch not in shown and escape in shown and 'class="ctl"' in shown, f"U+{code:04X}"
    assert str(visible("npm test -- é ü 中文 😀")) == "npm test -- é ü 中文 😀"


def test_a_recorded_command_with_markup_and_invisible_characters_is_shown_as_text(console: Console, page: Page) -> None:
    dialogs: List[str] = []

    def record(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    ledger = console.ledger
    ledger.create_root("target", actor=OPERATOR)
    # What an agent asks is its own text: markup, an escape sequence, a right-to-left override,
    # a Hangul filler; its tool-use id may hold markup and a zero-width space too.
    command = "echo '</code><b>bold</b><script>alert(1)</script>' \x1b[2J \u202egnp.exe npm\u3164test"
    recorded = ledger.decide("target", command, record=True, asked_by="claude-code", tool_use_id="<i>x\u200b")
    assert ledger.decision(recorded.record or "") is not None
    for path in ["/session/target", "/session/target/decisions"]:
        page.goto(console.link(path))
        shown = page.locator("#decisions td.input code")
        expect(shown).to_have_count(1)
        expect(shown).to_contain_text("</code><b>bold</b><script>alert(1)</script>")
        expect(shown.locator(".ctl")).to_have_text(["\\x1b", "\\u202e", "\\u3164"])
        tool_use = page.locator("#decisions .tool-use")
        expect(tool_use).to_contain_text("<i>x")
        expect(tool_use.locator(".ctl")).to_have_text(["\\u200b"])
        expect(page.locator("#decisions b, #decisions i")).to_have_count(0)
        assert page.locator("script:not([src])").count() == 0, path
    assert dialogs == [], "no script of the agent's text ran"


# ------------------------------------------------------------------------ 8. any stored pattern is removable


#: Patterns the ledger refuses today but may hold from older, looser rules: line breaks of each
#: kind, control characters, marks that reorder text.
STORED_PATTERNS = [
    "echo a\nrm -rf /",
    "echo b\r",
    "echo c\r\nls",
    "\nleading line break",
    "printf '\x01\x02\x1f\x7f'",
    "tab\there",
    "echo \u200fRTL\u202e txt.exe",
    " spaces around ",
]


def _sql_text(value: str) -> str:
    """A PostgreSQL escape string literal of ``value``, every character spelled out."""
    out = []
    for ch in value:
        if ch.isascii() and ch.isprintable() and ch not in "'\\":
            out.append(ch)
        else:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) < 0x10000 else f"\\U{ord(ch):08x}")
    return "E'" + "".join(out) + "'"


def store_patterns_by_hand(place: Place, session: str, patterns: List[str]) -> None:
    """Writes pattern rows as an older version of the ledger could have, past today's checks."""
    if place.engine == "sqlite":
        # In another process: two copies of SQLite in one process (Python's and the binding's)
        # would release each other's file locks.
        script = (
            "import json, sqlite3, sys\n"
            "rows = json.load(sys.stdin)\n"
            "db = sqlite3.connect(sys.argv[1], timeout=30)\n"
            "with db:\n"
            "    db.executemany('INSERT INTO command_patterns (session_id, pattern, added_by, added_at) "
            "VALUES (?, ?, \\'old\\', \\'2026-01-01T00:00:00.000Z\\')', rows)\n"
            "db.close()\n"
        )
        subprocess.run(
            [sys.executable, "-c", script, place.target],
            input=json.dumps([[session, p] for p in patterns]),
            text=True,
            check=True,
        )
    else:
        from conftest import _sql

        values = ", ".join(f"('{session}', {_sql_text(p)}, 'old', '2026-01-01T00:00:00.000Z')" for p in patterns)
        _sql(place.target, f"INSERT INTO command_patterns (session_id, pattern, added_by, added_at) VALUES {values}")


def test_a_stored_pattern_is_removable_from_the_console_whatever_characters_it_holds(
    place: Place, new_page: Any
) -> None:
    # The rows are there before the console starts, as in a ledger an older version wrote.
    place.opened[0].create_root("builder", actor=OPERATOR)
    store_patterns_by_hand(place, "builder", STORED_PATTERNS)
    console = serve(place, Policy(token=TOKEN, operator=OPERATOR))
    try:
        remove_each_pattern(console, new_page())
    finally:
        stop(console)


def remove_each_pattern(console: Console, page: Page) -> None:
    """Signs in and removes every pattern of ``builder`` with its button, one after the other."""
    ledger = console.ledger
    assert sorted(ledger.patterns("builder")) == sorted(STORED_PATTERNS)
    page.goto(console.login_link())
    page.goto(console.link("/session/builder"))
    for left in range(len(STORED_PATTERNS), 0, -1):
        expect(page.locator("#patterns li")).to_have_count(left)
        page.locator("#patterns").get_by_role("button", name="remove").first.click()
        expect(page.locator(".flash.done")).to_contain_text("Removed the pattern")
    expect(page.locator("#patterns")).to_contain_text("none")
    assert ledger.patterns("builder") == []
    removed = [row.detail["pattern"] for row in ledger.audit(session="builder", kind="pattern.remove")]
    assert sorted(removed) == sorted(STORED_PATTERNS)


def test_a_remove_form_with_a_malformed_pattern_encoding_is_refused(console: Console) -> None:
    ledger = console.ledger
    ledger.create_root("builder", actor=OPERATOR)
    ledger.add_pattern("builder", "npm test", actor=OPERATOR)
    cookie = sign_in(console)
    csrf = csrf_in(call(console, "GET", "/session/builder", [("Cookie", cookie)]).body)
    for encoded in ["not base64!", "bnBtIHRlc3Q=", "a", "_w", ""]:  # "_w" is 0xff: not UTF-8
        content_type, body = form({"pattern_b64": encoded, "csrf": csrf})
        answer = call(console, "POST", "/session/builder/patterns/remove", [("Cookie", cookie), content_type], body)
        assert answer.status == 400, encoded
    assert ledger.patterns("builder") == ["npm test"]


# ------------------------------------------------------------------------ 9. no redirect leaves the console


def test_the_sign_in_link_never_redirects_off_the_console(console: Console) -> None:
    for path, expected in [
        (f"//evil.example/x?token={TOKEN}", "/"),
        (f"/\\evil.example/x?token={TOKEN}", "/"),
        (f"/%2F/evil.example?token={TOKEN}", "/"),
        (f"/%5Cevil.example?token={TOKEN}", "/"),
        (f"/%0d%0aSet-Cookie:%20x=1?token={TOKEN}", "/%0D%0ASet-Cookie%3A%20x%3D1"),
        (f"/session/worker-1?token={TOKEN}&open=a~1", "/session/worker-1?open=a~1"),
        (f"/?token={TOKEN}", "/"),
    ]:
        answer = call(console, "GET", path)
        assert answer.status == 303, path
        location = answer.header("location") or ""
        assert location == expected, path
        assert urlsplit(location).netloc == "" and not location.startswith(("//", "/\\")), path


# ------------------------------------------------------------------------ 10. weak preset token


def test_a_preset_token_weaker_than_128_bits_is_refused_at_start(place: Place) -> None:
    for weak in ["a", "test-token-0123456789", "x" * 27, "0" * 38, "deadbeef" * 3, "has space in it, 1234567890abcdef"]:
        refused = run_console(["--db", place.target, "--port", "0"], {"SESSION_LEDGER_CONSOLE_TOKEN": weak})
        assert refused.returncode == 2, weak
        assert "128 bits" in refused.stderr, weak
        assert len(weak) < 8 or weak not in refused.stderr, "the token is not repeated"
    strong = "Qm9xY2Fyc3RhbmQtYmV0dGVy"  # 24 characters of the URL-safe base64 alphabet
    process, line = start_console(["--db", place.target, "--port", "0"], {"SESSION_LEDGER_CONSOLE_TOKEN": strong})
    try:
        assert line.endswith(f"/?token={strong}")
    finally:
        end_console(process)


def test_the_token_rule_counts_the_smallest_alphabet_the_characters_come_from() -> None:
    from session_ledger_console.gate import token_bits

    assert token_bits("a" * 22) < 128 and token_bits("A" * 27) < 128  # letters of one case: 4.7 bits each
    assert token_bits("0123456789abcdef" * 2) == 128  # 32 hexadecimal digits
    assert token_bits("Ab0-" + "x" * 18) >= 128  # 22 characters of base64url
    assert token_bits("Ab0-" + "x" * 17) < 128
    assert token_bits("9" * 39) >= 128 and token_bits("9" * 38) < 128
    assert token_bits("caf\u00e9" * 10) == 0 and token_bits("a b" * 20) == 0  # not of a link's alphabet


# ------------------------------------------------------------------------ a new user's report


def test_the_favicon_is_served_within_the_origin_without_a_credential(console: Console) -> None:
    answer = call(console, "GET", "/favicon.ico")
    if answer.status in (301, 302, 307, 308):
        location = answer.header("location") or ""
        assert location.startswith("/static/") and urlsplit(location).netloc == ""
        answer = call(console, "GET", location)
    assert answer.status == 200
    assert (answer.header("content-type") or "").startswith("image/")
    assert_security_headers(answer)
    page = call(console, "GET", "/", [("Cookie", sign_in(console))])
    assert re.search(r'<link rel="icon" [^>]*href="/static/favicon\.svg"', page.body)


def test_ending_a_session_and_granting_a_posture_are_refused_without_their_typed_confirmation(
    console: Console,
) -> None:
    ledger = console.ledger
    ledger.create_root("conductor", actor=OPERATOR)
    cookie = sign_in(console)
    csrf = csrf_in(call(console, "GET", "/session/conductor", [("Cookie", cookie)]).body)
    head = ledger.audit_head()
    for action, fields in [
        ("grant", {"level": "trust"}),
        ("grant", {"level": "trust_reads", "confirm": ""}),
        ("grant", {"level": "trust", "confirm": "conductor2"}),
        ("end", {}),
        ("end", {"confirm": "yes"}),
    ]:
        content_type, body = form({**fields, "csrf": csrf})
        answer = call(console, "POST", f"/session/conductor/{action}", [("Cookie", cookie), content_type], body)
        assert answer.status == 400, (action, fields)
        assert "type the session&#39;s id, conductor, to confirm" in answer.body
    assert ledger.audit_head() == head
    assert ledger.posture("conductor") is None and ledger.session("conductor").live  # type: ignore[union-attr]
