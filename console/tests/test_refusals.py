"""Only operators get in, nothing changes but by a form of the console, and what the ledger holds
is shown as text: each refusal with the status it gets, in Chromium, on each engine.

| refusal                                              | status |
|------------------------------------------------------|--------|
| no credential (no cookie, no proxy header)           | 401    |
| a wrong token in the start-up link                   | 401    |
| an operator name from the proxy the ledger can't record | 403 |
| a POST without a CSRF token                          | 403    |
| a POST with a stale CSRF token (an earlier session's)| 403    |
| a POST from another origin                           | 403    |
| a GET on an action                                   | 405    |
"""

from __future__ import annotations

import http.client
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, Iterator, List, Optional, Tuple
from urllib.parse import urlencode, urlsplit

import pytest
from playwright.sync_api import Dialog, Page, expect

from conftest import OPERATOR, TOKEN, Console, Place, serve, shoot, stop
from session_ledger_console import Policy


def post(console: Console, path: str, fields: Dict[str, str], headers: Optional[Dict[str, str]] = None) -> int:
    """A form POST outside the browser; returns the status."""
    parts = urlsplit(console.url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port)
    body = urlencode(fields)
    conn.request(
        "POST",
        path,
        body=body,
        headers={"Content-Type": "application/x-www-form-urlencoded", **(headers or {})},
    )
    status = conn.getresponse().status
    conn.close()
    return status


def cookie_header(page: Page) -> str:
    return "; ".join(f"{c['name']}={c['value']}" for c in page.context.cookies())


def csrf_of(page: Page) -> str:
    return page.locator("input[name=csrf]").first.get_attribute("value") or ""


def test_without_a_credential_or_with_a_wrong_token_nothing_is_shown(
    console: Console, new_page: object
) -> None:
    console.ledger.create_root("conductor", actor=OPERATOR)
    page: Page = new_page()  # type: ignore[operator]
    for path in ["/", "/session/conductor", "/audit", "/events", "/tree/level?parent=conductor"]:
        response = page.goto(console.link(path))
        assert response is not None and response.status == 401, path
        assert "conductor" not in page.content(), path
    expect(page.locator("h1")).to_have_text("Sign in with the console's link")
    shoot(page, console.place, "refused-no-credential")
    response = page.goto(console.link("/?token=not-the-token"))
    assert response is not None and response.status == 401
    expect(page.locator("h1")).to_have_text("Wrong token")
    assert page.context.cookies() == [], "a wrong token sets no cookie"
    response = page.goto(console.login_link())
    assert response is not None and response.status == 200
    assert "token=" not in page.url, "the token leaves the address bar"
    expect(page.locator("#operator")).to_have_text(OPERATOR)


def test_a_post_without_a_csrf_token_or_with_a_stale_one_changes_nothing(
    console: Console, page: Page
) -> None:
    console.ledger.create_root("conductor", actor=OPERATOR)
    page.goto(console.link("/session/conductor"))
    head = console.ledger.audit_head()
    cookies = {"Cookie": cookie_header(page)}
    assert post(console, "/session/conductor/grant", {"level": "trust"}, cookies) == 403
    assert post(console, "/session/conductor/grant", {"level": "trust", "csrf": "forged"}, cookies) == 403
    assert post(console, "/session/conductor/grant", {"level": "trust", "csrf": csrf_of(page)}) == 401
    # Signing in again (another tab, the same browser) starts a new console session: the form
    # still open in this page carries the earlier session's token, which is stale now.
    other = page.context.new_page()
    other.goto(console.login_link())
    page.locator("form#grant [name=confirm]").fill("conductor")
    with page.expect_navigation() as navigation:
        page.get_by_role("button", name="Grant trust", exact=True).click()
    response = navigation.value
    assert response is not None and response.status == 403
    expect(page.locator("h1")).to_have_text("Refused: stale form")
    shoot(page, console.place, "refused-stale-form")
    assert console.ledger.audit_head() == head, "nothing was written"
    assert console.ledger.posture("conductor") is None


class _Attacker(BaseHTTPRequestHandler):
    """Another site's page: a form that posts to the console, with a token it obtained."""

    page = b""

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def attacker() -> Iterator[Tuple[ThreadingHTTPServer, str]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_post_from_another_origin_is_refused_even_with_the_cookie_and_the_token(
    console: Console, page: Page, attacker: Tuple[ThreadingHTTPServer, str]
) -> None:
    console.ledger.create_root("conductor", actor=OPERATOR)
    page.goto(console.link("/session/conductor"))
    token = csrf_of(page)
    head = console.ledger.audit_head()
    _Attacker.page = (
        f'<form method="post" action="{console.url}/session/conductor/grant">'
        f'<input name="csrf" value="{token}"><input name="level" value="trust">'
        '<button id="go">win a prize</button></form>'
    ).encode()
    page.goto(attacker[1])
    with page.expect_navigation() as navigation:
        page.locator("#go").click()
    response = navigation.value
    assert response is not None and response.status == 403
    expect(page.locator("h1")).to_have_text("Refused: another origin")
    assert post(
        console,
        "/session/conductor/grant",
        {"level": "trust", "csrf": token},
        {"Cookie": cookie_header(page), "Origin": "http://evil.example"},
    ) == 403
    assert console.ledger.audit_head() == head
    # The same form from the console's own origin goes through.
    assert post(
        console,
        "/session/conductor/grant",
        {"level": "trust", "confirm": "conductor", "csrf": token},
        {"Cookie": cookie_header(page), "Origin": console.url},
    ) == 303
    assert console.ledger.posture("conductor") is not None


def test_no_get_changes_anything(console: Console, page: Page) -> None:
    ledger = console.ledger
    ledger.create_root("conductor", actor=OPERATOR)
    ledger.grant("conductor", "trust", actor=OPERATOR)
    ledger.create_child("worker", creator="conductor", actor=OPERATOR)
    ledger.add_pattern("conductor", "make *", actor=OPERATOR)
    head = ledger.audit_head()
    for path in ["/session/conductor/grant?level=trust", "/session/conductor/end", "/epoch?confirm=x"]:
        response = page.goto(console.link(path))
        assert response is not None
        assert response.status == (405 if "epoch" not in path else 200), path
    # Every page, a first read's label included (worker is not materialized), and a dry run.
    for path in [
        "/",
        "/?open=conductor~50",
        "/session/worker",
        "/session/sub-worker-1",
        "/session/conductor/decide?command=make+deploy",
        "/session/worker/revoke",
        "/session/worker/decisions",
        "/audit",
    ]:
        page.goto(console.link(path))
    assert ledger.audit_head() == head
    assert ledger.session("sub-worker-1") is None


def test_the_pages_run_no_inline_script_under_a_policy_that_forbids_it(console: Console, page: Page) -> None:
    console.ledger.create_root("conductor", actor=OPERATOR)
    console.ledger.decide("conductor", "ls", record=True, asked_by=OPERATOR)
    for path in ["/", "/session/conductor", "/audit", "/epoch", "/session/conductor/revoke", "/session/conductor/decisions"]:
        response = page.goto(console.link(path))
        assert response is not None
        policy = response.headers["content-security-policy"]
        assert "script-src 'self';" in policy and "unsafe-inline" not in policy and "unsafe-eval" not in policy
        html = page.content()
        assert re.findall(r"<script(?![^>]*\bsrc=)[^>]*>", html) == [], path
        assert re.findall(r"\son[a-z]+=", html) == [], path
        assert response.headers["x-frame-options"] == "DENY"


def test_hostile_text_in_patterns_command_lines_and_an_operators_name_is_shown_as_text(
    console: Console, page: Page, new_page: object
) -> None:
    dialogs: List[str] = []

    def record(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", record)
    console.ledger.create_root("target", actor=OPERATOR)
    page.goto(console.link("/session/target"))
    hostile = "echo '<script>alert(1)</script>' \"q\\\"uote\" '\"><img src=x onerror=alert(2)>'"
    form = page.locator("form.pattern")
    form.locator("[name=pattern]").fill(hostile)
    form.get_by_role("button", name="Add the pattern").click()
    expect(page.locator("#patterns code")).to_have_text([hostile])
    expect(page.locator("table.audit td.detail").first).to_contain_text("<script>alert(1)</script>")
    # A pattern with a control character is refused by the ledger; its message names it.
    form = page.locator("form.pattern")
    form.locator("[name=pattern]").fill("printf '\x1b[31mred\u202etxt.exe'")
    form.get_by_role("button", name="Add the pattern").click()
    expect(page.locator(".flash.error")).to_contain_text("control character")
    # A command line with markup, quotes and hidden characters, tried as a dry run.
    decide = page.locator("form.decide")
    decide.locator("[name=command]").fill("echo '</code><b>bold</b>' \x1b[2J \u202egnp.exe")
    decide.get_by_role("button", name="Try it").click()
    shown = page.locator("#decision .decision code").first
    expect(shown).to_contain_text("</code><b>bold</b>")
    expect(shown.locator(".ctl")).to_have_text(["\\x1b", "\\u202e"])
    expect(page.locator("#decision b")).to_have_count(0)
    assert page.locator("img").count() == 0 and page.locator("script:not([src])").count() == 0
    shoot(page, console.place, "hostile-text")

    proxied = serve(console.place, Policy(token=None, operator=None, trust_header="X-Forwarded-User"))
    try:
        visitor: Page = new_page()  # type: ignore[operator]
        visitor.on("dialog", record)
        visitor.context.set_extra_http_headers({"X-Forwarded-User": "<script>alert(3)</script>"})
        response = visitor.goto(proxied.link("/"))
        assert response is not None and response.status == 403
        expect(visitor.locator("main p").first).to_contain_text("'<script>alert(3)</script>'")
        assert visitor.locator("script").count() == 0
    finally:
        stop(proxied)
    assert dialogs == [], "no script of the ledger's text ran"


def test_behind_a_proxy_each_operator_is_named_by_the_header_and_recorded_as_the_actor(
    place: Place, new_page: object
) -> None:
    proxied = serve(place, Policy(token=None, operator=None, trust_header="X-Forwarded-User"))
    try:
        proxied.ledger.create_root("conductor", actor=OPERATOR)
        nobody: Page = new_page()  # type: ignore[operator]
        response = nobody.goto(proxied.link("/"))
        assert response is not None and response.status == 401
        response = nobody.goto(proxied.link(f"/?token={TOKEN}"))
        assert response is not None and response.status == 401, "no token is accepted behind a proxy"
        bob: Page = new_page()  # type: ignore[operator]
        bob.context.set_extra_http_headers({"X-Forwarded-User": "bob@example.com"})
        response = bob.goto(proxied.link("/session/conductor"))
        assert response is not None and response.status == 200
        expect(bob.locator("#operator")).to_have_text("bob@example.com")
        bob.locator("form#grant [name=confirm]").fill("conductor")
        bob.get_by_role("button", name="Grant trust", exact=True).click()
        expect(bob.locator(".flash.done")).to_contain_text("Granted trust on conductor.")
        grant = proxied.ledger.audit(kind="posture.grant")
        assert [row.actor for row in grant] == ["bob@example.com"]
    finally:
        stop(proxied)
