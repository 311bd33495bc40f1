"""The audit page: newest first, paged, filtered by kind, session, subtree and time, with the
chain's verification state; in Chromium, on each engine."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from typing import List

from playwright.sync_api import Page, expect

from conftest import OPERATOR, Console, shoot


def shows_rows(page: Page, seqs: List[int]) -> None:
    """Waits until the page's table shows exactly these rows, in this order."""
    expect(page.locator("table.audit td.seq")).to_have_text([str(s) for s in seqs])


def test_the_audit_trail_pages_newest_first_and_filters_by_kind_session_subtree_and_time(
    console: Console, page: Page
) -> None:
    ledger = console.ledger
    ledger.create_root("conductor", actor=OPERATOR)
    ledger.grant("conductor", "trust", actor=OPERATOR)
    for n in range(30):
        ledger.create_child(f"worker-{n}", creator="conductor", actor="dashboard")
    for n in range(30):
        ledger.create_root(f"other-{n}", actor=OPERATOR)
    total = ledger.audit_head().seq

    page.goto(console.link("/audit"))
    expect(page.locator("#chain-state")).to_contain_text("The hash chain verifies")
    first = list(range(total, total - 50, -1))
    shows_rows(page, first)
    shoot(page, console.place, "audit")
    page.locator("#older").click()
    shows_rows(page, list(range(total - 50, 0, -1)))
    expect(page.locator("#older")).to_have_count(0)
    page.locator("#newest").click()
    shows_rows(page, first)

    page.locator("select[name=kind]").select_option("posture.grant")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("table.audit td.kind")).to_have_text(["posture.grant"])
    page.goto(console.link("/audit?session=worker-7"))
    expect(page.locator("table.audit td.session")).to_have_text(["worker-7"])
    page.goto(console.link("/audit?subtree=conductor&kind=session.create"))
    expect(page.locator("table.audit td.session")).to_have_count(30)
    tomorrow = (datetime.now(timezone.utc) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    page.goto(console.link(f"/audit?since={tomorrow}"))
    expect(page.locator("table.audit td.empty")).to_have_text("no rows")
    page.goto(console.link(f"/audit?until={tomorrow}&kind=posture.grant"))
    expect(page.locator("table.audit td.kind")).to_have_text(["posture.grant"])

    # A change made elsewhere shows on the first page without a reload, and is verified.
    page.goto(console.link("/audit"))
    ledger.create_root("late", actor=OPERATOR)
    expect(page.locator("table.audit td.session").first).to_have_text("late")
    page.reload()
    expect(page.locator("#chain-state")).to_contain_text(f"through #{total + 1}")
