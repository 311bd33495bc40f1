"""What an operator does in the console, each change recorded with the operator's name as the
actor, in Chromium, on each engine."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from conftest import OPERATOR, Console, shoot


def test_a_local_revoke_lists_the_descendants_that_still_hold_and_ending_greys_a_session(
    console: Console, page: Page
) -> None:
    ledger = console.ledger
    ledger.create_root("conductor", actor=OPERATOR)
    page.goto(console.link("/session/conductor"))
    grant = page.locator("form#grant")
    expect(grant.locator(".reach")).to_contain_text("Every child it creates from now on")
    grant.locator("[name=confirm]").fill("conductor")
    grant.get_by_role("button", name="Grant trust", exact=True).click()
    expect(page.locator(".flash.done")).to_have_text("Granted trust on conductor.")
    ledger.create_child("worker-1", creator="conductor", actor="dashboard")
    ledger.create_child("worker-2", creator="conductor", actor="dashboard")

    page.get_by_role("link", name="Revoke…").click()
    page.locator("#confirm-local").click()
    flash = page.locator(".flash.done")
    expect(flash).to_contain_text("Revoked the posture of conductor only.")
    expect(flash.locator("li")).to_have_text(["worker-1", "worker-2"])
    assert not ledger.state("conductor").trust and ledger.state("worker-1").trust

    # Ending a session names the sub-agents it ends with it, and asks for its id typed.
    ledger.state("sub-worker-2-1")
    ledger.state("sub-sub-worker-2-1-1")
    page.goto(console.link("/session/worker-2"))
    end = page.locator("form#end")
    expect(end.locator("#reach")).to_have_text("2")
    expect(end.locator(".reach a")).to_have_text(["sub-worker-2-1", "sub-sub-worker-2-1-1"])
    end.locator("[name=confirm]").fill("worker-1")
    end.get_by_role("button", name="End worker-2 and 2 sub-agents").click()
    expect(page.locator(".flash.error")).to_contain_text("Nothing was ended: type the session's id, worker-2")
    assert ledger.session("worker-2").live  # type: ignore[union-attr]
    end = page.locator("form#end")
    end.locator("[name=confirm]").fill("worker-2")
    end.get_by_role("button", name="End worker-2 and 2 sub-agents").click()
    expect(page.locator(".badge.ended")).to_have_text("ended")
    expect(page.locator(".flash.done")).to_have_text(
        "Ended worker-2 and 2 spawned sub-agents: sub-worker-2-1, sub-sub-worker-2-1-1."
    )
    assert not ledger.session("sub-sub-worker-2-1-1").live  # type: ignore[union-attr]
    page.goto(console.link("/?open=conductor~50"))
    expect(page.locator('li.node.ended[data-id="worker-2"]')).to_have_count(1)
    expect(page.locator('li.node[data-id="worker-2"] .ended-at')).to_contain_text("ended ")
    rows = ledger.audit(session="worker-2", kind="session.end")
    assert [r.actor for r in rows] == [OPERATOR]
    assert {r.actor for r in ledger.audit(kind="posture.revoke")} == {OPERATOR}


def test_patterns_and_scopes_are_added_and_removed_with_examples_checked(console: Console, page: Page) -> None:
    ledger = console.ledger
    ledger.create_root("builder", actor=OPERATOR)
    page.goto(console.link("/session/builder"))
    form = page.locator("form.pattern")
    form.locator("[name=pattern]").fill("cargo test *")
    form.locator("[name=must_not_match]").fill("cargo test --release")
    form.get_by_role("button", name="Add the pattern").click()
    expect(page.locator(".flash.error")).to_contain_text("cargo test --release")
    assert ledger.patterns("builder") == []

    form = page.locator("form.pattern")
    form.locator("[name=pattern]").fill("cargo test -p *")
    form.locator("[name=must_match]").fill("cargo test -p session-ledger")
    form.locator("[name=must_not_match]").fill("cargo test")
    form.get_by_role("button", name="Add the pattern").click()
    expect(page.locator("#patterns code")).to_have_text(["cargo test -p *"])

    scopes = page.locator("form", has=page.locator("[name=ttl]"))
    scopes.locator("[name=name]").fill("deploy-window")
    scopes.locator("[name=ttl]").fill("soon")
    scopes.get_by_role("button", name="Grant the scope").click()
    expect(page.locator(".flash.error")).to_contain_text("not 'soon'")
    scopes = page.locator("form", has=page.locator("[name=ttl]"))
    scopes.locator("[name=name]").fill("deploy-window")
    scopes.locator("[name=ttl]").fill("30m")
    scopes.get_by_role("button", name="Grant the scope").click()
    expect(page.locator("#scopes li")).to_contain_text("deploy-window")
    shoot(page, console.place, "grants")

    page.locator("#scopes").get_by_role("button", name="revoke").click()
    expect(page.locator("#scopes")).to_have_text("none")
    page.locator("#patterns").get_by_role("button", name="remove").click()
    expect(page.locator("#patterns")).to_contain_text("none")
    kinds = [(r.kind, r.actor) for r in ledger.audit(session="builder")][1:]
    assert kinds == [
        ("pattern.add", OPERATOR),
        ("scope.grant", OPERATOR),
        ("scope.revoke", OPERATOR),
        ("pattern.remove", OPERATOR),
    ]


def test_a_new_epoch_starts_only_behind_its_typed_confirmation(console: Console, page: Page) -> None:
    ledger = console.ledger
    ledger.create_root("conductor", actor=OPERATOR)
    ledger.grant("conductor", "trust", actor=OPERATOR)
    epoch = ledger.current_epoch()
    page.goto(console.link("/epoch"))
    expect(page.locator("#epoch")).to_have_text(str(epoch))
    page.locator("[name=confirm]").fill("yes")
    page.get_by_role("button", name=f"Start epoch {epoch + 1}").click()
    expect(page.locator(".flash.error")).to_contain_text(f"type 'start epoch {epoch + 1}'")
    assert ledger.current_epoch() == epoch
    page.locator("[name=confirm]").fill(f"start epoch {epoch + 1}")
    page.get_by_role("button", name=f"Start epoch {epoch + 1}").click()
    expect(page.locator(".flash.done")).to_contain_text(f"Started epoch {epoch + 1}: 1 postures lapsed")
    assert ledger.current_epoch() == epoch + 1
    assert not ledger.state("conductor").trust
    assert [r.actor for r in ledger.audit(kind="epoch.start")][-1] == OPERATOR
    page.goto(console.link("/"))
    expect(page.locator('li.node[data-id="conductor"] .posture')).to_have_text("trust · granted · lapsed")
