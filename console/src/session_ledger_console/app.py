"""The console's web application: its pages, fragments and actions.

Every page is rendered on the server from Jinja templates; htmx (served from the package,
``static/htmx.min.js``) loads the tree a level at a time, pages the levels, shows a dry-run
decision in place, and reloads what a page shows when the ledger changes (``/events``).

Two handles on the ledger: ``reader``, opened read-only, serves every GET, so that no page can
change anything (a GET writes nothing, not even a first read's label); ``writer`` serves the
actions, each a POST with the operator's name as the actor. The binding releases the GIL and
blocks while the ledger works, so the routes that call it are plain functions, which FastAPI
runs in its thread pool, off the event loop.
"""

from __future__ import annotations

import re
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib import resources
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Tuple, cast
from urllib.parse import quote, urlencode

import jinja2
import session_ledger
from fastapi import FastAPI, Form, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from session_ledger import Ledger, LedgerError

from . import text
from .gate import CSRF_FIELD, Gate, Operator, Policy, Refused, Sessions, cookie_header
from .live import HeadWatcher, Verifier

#: Sessions per page of a tree level, unless the console was started with another.
PAGE_SIZE = 50
#: The most sessions one level shows when the page reloads what it showed.
MAX_SHOWN = 1000
#: The most levels a reload of the tree opens.
MAX_OPEN = 200
#: Audit rows per page.
AUDIT_PAGE = 50
#: Recorded decisions per page of a session's decisions.
DECISIONS_PAGE = 50
#: Seconds without a change after which the event stream says it is alive.
KEEPALIVE_SECONDS = 15.0
#: A TTL as the command line writes it: a whole number and a unit.
TTL = re.compile(r"\s*([0-9]{1,12})\s*([smhd])\s*\Z")
#: A count in a query (how many sessions a level shows): ASCII digits, not ``²`` or ``٣``.
COUNT = re.compile(r"[0-9]{1,9}\Z")
#: An audit row's sequence number: a positive 64-bit integer.
SEQ = re.compile(r"[0-9]{1,19}\Z")
SEQ_MAX = 2**63 - 1
TTL_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


class BadParameter(Exception):
    """A parameter the console cannot read: answered 400 with a page that names it and its
    rule, never the value."""

    def __init__(self, name: str, rule: str) -> None:
        super().__init__(f"{name} {rule}")
        self.name = name
        self.rule = rule


@dataclass
class Console:
    """What the routes share."""

    reader: Ledger
    writer: Ledger
    location: str
    page_size: int
    watcher: HeadWatcher
    verifier: Verifier
    templates: jinja2.Environment
    #: Operators sign out in the console (with a token link; behind a proxy, the proxy's).
    signs_out: bool = True


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("session_ledger_console", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["visible"] = text.visible
    env.filters["detail"] = text.detail
    env.filters["when"] = text.when
    env.filters["q"] = lambda v: quote(str(v), safe="")
    env.filters["b64"] = text.b64
    env.filters["posture_words"] = text.posture_words
    env.filters["approves_words"] = text.approves_words
    env.filters["withheld_words"] = text.withheld_words
    env.filters["grant_words"] = text.grant_words
    env.filters["pattern_words"] = text.pattern_words
    env.filters["decision_why"] = text.decision_why
    return env


def create_app(
    db: str,
    policy: Policy,
    *,
    page_size: int = PAGE_SIZE,
    verify_on_start: bool = True,
    clock: Callable[[], float] = time.monotonic,
) -> FastAPI:
    """The console over the ledger at ``db`` (a SQLite path or a PostgreSQL URL). ``clock``
    times the console sessions (a test moves its own)."""
    writer = Ledger(db)
    reader = Ledger(db, read_only=True)
    console = Console(
        reader=reader,
        writer=writer,
        location=writer.location,
        page_size=page_size,
        watcher=HeadWatcher(reader),
        verifier=Verifier(reader),
        templates=_environment(),
        signs_out=policy.trust_header is None,
    )
    if verify_on_start:
        console.verifier.start()
    sessions = Sessions(policy.session_idle, policy.session_lifetime, policy.max_sessions, clock)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        reader.close()
        writer.close()

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.console = console
    app.state.sessions = sessions
    static = resources.files("session_ledger_console") / "static"
    app.mount("/static", StaticFiles(directory=str(static)), name="static")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> RedirectResponse:
        """Where browsers look for an icon without asking the page: the package's SVG one."""
        return RedirectResponse("/static/favicon.svg", status_code=308)
    _routes(app, console)
    _sign_out(app, console, policy, sessions)

    def refusal_page(refused: Refused) -> bytes:
        page = console.templates.get_template("refused.html")
        # Nothing about the ledger (where it is, its engine, its operators): whoever reaches
        # the port sees this page.
        return page.render(refused=refused).encode()

    app.add_middleware(Gate, policy=policy, sessions=sessions, render_refusal=refusal_page)

    @app.exception_handler(BadParameter)
    async def bad_parameter(_: Request, e: Exception) -> Response:
        assert isinstance(e, BadParameter)
        refused = Refused(400, "Bad request", f"The parameter {e.name!r} {e.rule}. Nothing was changed.")
        return HTMLResponse(refusal_page(refused), status_code=400)

    @app.exception_handler(RequestValidationError)
    async def missing_parameter(_: Request, e: Exception) -> Response:
        """A parameter missing or unreadable: 400 (not FastAPI's 422 with the input echoed)."""
        assert isinstance(e, RequestValidationError)
        names = [str(err["loc"][-1]) for err in e.errors() if err.get("loc")]
        named = [n for n in names if re.fullmatch(r"[a-z_]{1,32}", n)]
        what = f"The parameter {named[0]!r} is missing or malformed" if named else "A parameter is missing or malformed"
        return HTMLResponse(refusal_page(Refused(400, "Bad request", what + ". Nothing was changed.")), status_code=400)

    @app.middleware("http")
    async def server_timing(request: Request, call_next: Callable[[Request], Any]) -> Response:
        """How long the console took, in the ``Server-Timing`` header: what the scale figures
        of docs/performance.md measure."""
        started = time.perf_counter()
        response: Response = await call_next(request)
        response.headers["server-timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.3f}"
        return response

    return app


def _sign_out(app: FastAPI, c: Console, policy: Policy, sessions: Sessions) -> None:
    @app.post("/logout", response_class=HTMLResponse)
    def logout(request: Request) -> HTMLResponse:
        """Ends the operator's console session (a form of it, with its CSRF token) and clears
        its cookie."""
        sessions.drop(_operator(request).sid)
        page = c.templates.get_template("signed_out.html").render(proxied=policy.trust_header is not None)
        response = HTMLResponse(page)
        response.headers.append("set-cookie", cookie_header(policy, "", 0).decode("latin-1"))
        return response


def _operator(request: Request) -> Operator:
    operator: Operator = request.state.operator
    return operator


def _flash(
    request: Request, kind: str, message: str, sessions: Optional[List[str]] = None, lines: Optional[List[str]] = None
) -> None:
    """A message for the operator's next page: with ``sessions`` (ids, shown as links) or
    ``lines`` (text, one a line)."""
    _operator(request).flashes.append({"kind": kind, "text": message, "sessions": sessions or [], "lines": lines or []})


def _back(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def _session_url(id: str) -> str:
    return "/session/" + quote(id, safe="")


def _count(name: str, value: str) -> int:
    """A count from a query: empty is 0; anything but ASCII digits is a bad parameter."""
    if not value:
        return 0
    if not COUNT.match(value):
        raise BadParameter(name, "is a whole number of at most 9 digits")
    return int(value)


def _parse_open(values: List[str], page_size: int) -> Dict[str, int]:
    """``ID~N`` entries: the levels a page shows open, and how many sessions each shows (at
    least a page, so that a reload shows a session added since)."""
    opened: Dict[str, int] = {}
    for value in values[:MAX_OPEN]:
        id, tilde, shown = value.rpartition("~")
        if not (id and tilde and shown):
            raise BadParameter("open", "is a session's id, ~ and a number of sessions (ID~N)")
        opened[id] = max(page_size, min(_count("open", shown), MAX_SHOWN))
    return opened


def _flag(name: str, value: str) -> bool:
    if value not in ("", "0", "1"):
        raise BadParameter(name, "is 0 or 1")
    return value == "1"


def _moment(name: str, value: str) -> datetime:
    """A time from the audit's filters, ISO 8601, in UTC unless it says otherwise."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return moment.astimezone(timezone.utc) if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    except (ValueError, OverflowError):
        raise BadParameter(name, "is a date and time (2026-01-31T12:00:00)") from None


def _seq(name: str, value: str) -> int:
    if not SEQ.match(value) or int(value) > SEQ_MAX:
        raise BadParameter(name, "is an audit row's number")
    return int(value)


def _record_number(name: str, value: str) -> int:
    """A recorded decision's number (``DecisionRecord.id``): a positive 64-bit integer."""
    if not SEQ.match(value) or int(value) > SEQ_MAX:
        raise BadParameter(name, "is a recorded decision's number (the last one's of the page before)")
    return int(value)


def _routes(app: FastAPI, c: Console) -> None:
    def render(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        operator = _operator(request)
        flashes, operator.flashes = operator.flashes, []
        page = c.templates.get_template(name)
        html = page.render(
            operator=operator,
            csrf_field=CSRF_FIELD,
            location=c.location,
            flashes=flashes,
            signs_out=c.signs_out,
            head=str(c.reader.audit_head()),
            **values,
        )
        return HTMLResponse(html, status_code=status)

    def fragment(name: str, **values: Any) -> HTMLResponse:
        return HTMLResponse(c.templates.get_template(name).render(**values))

    def level(parent: Optional[str], after: Optional[str], limit: int, opened: Dict[str, int]) -> Dict[str, Any]:
        """A page of one level, with the levels below it that are open, as the templates take
        it: each open level one more `tree_level` call, so the cost is what is shown."""
        page = c.reader.tree_level(parent, after=after, limit=limit)
        children: Dict[str, Any] = {}
        for node in page.nodes:
            if node.id in opened and node.has_children:
                children[node.id] = level(node.id, None, opened[node.id], opened)
        return {"parent": parent, "page": page, "children": children}

    # ----------------------------------------------------------------------------- the tree

    def forest(roots: str, open: List[str]) -> Dict[str, Any]:
        """The roots a page shows, with the levels open below them."""
        opened = _parse_open(open, c.page_size)
        shown = max(c.page_size, min(_count("roots", roots), MAX_SHOWN))
        return level(None, None, shown, opened)

    @app.get("/", response_class=HTMLResponse)
    def tree_page(request: Request, roots: str = "", open: List[str] = Query([])) -> HTMLResponse:
        return render(request, "tree.html", tree=forest(roots, open), page_size=c.page_size)

    @app.get("/tree/body", response_class=HTMLResponse)
    def tree_body(roots: str = "", open: List[str] = Query([])) -> HTMLResponse:
        return fragment("tree_body.html", tree=forest(roots, open))

    @app.get("/tree/level", response_class=HTMLResponse)
    def tree_level(parent: str = "", after: str = "", shown: str = "") -> HTMLResponse:
        """One page of a level: the first when a node opens, the next when "more" is pressed."""
        already = _count("shown", shown)
        try:
            data = level(parent or None, after or None, c.page_size, {})
        except LedgerError as e:
            return HTMLResponse(f'<p class="error">{text.visible(e)}</p>', status_code=404)
        template = "level_more.html" if after else "level.html"
        return fragment(template, tree=data, shown=already)

    @app.get("/tree/toggle", response_class=HTMLResponse)
    def tree_toggle(id: str, open: str = "") -> HTMLResponse:
        """The button of a node, open or closed; closing also empties its level."""
        return fragment("toggle.html", id=id, open=_flag("open", open))

    # ----------------------------------------------------------------------------- a session

    def session_facts(id: str) -> Dict[str, Any]:
        explanation = c.reader.explain(id)
        audit = list(reversed(c.reader.audit(session=id, limit=20)))
        return {"x": explanation, "audit": audit, "now": datetime.now(timezone.utc)}

    def spawned_reach(id: str) -> List[str]:
        """The live sub-agents that ending ``id`` ends with it: the sessions spawned under it,
        through spawned sessions only, as the ledger's end walks them."""
        reached: List[str] = []
        frontier = [id]
        while frontier:
            for child in c.reader.children(frontier.pop()):
                if child.origin == "spawned":
                    frontier.append(child.id)
                    if child.live:
                        reached.append(child.id)
        return reached

    def session_view(request: Request, id: str, status: int = 200) -> HTMLResponse:
        """A session's page; with what ending it would reach, for its confirmation."""
        try:
            facts = session_facts(id)
            reach = spawned_reach(id) if facts["x"].session.live else []
        except LedgerError as e:
            return render(request, "missing.html", status=404, id=id, error=str(e))
        return render(request, "session.html", status=status, id=id, reach=reach, **facts)

    def unconfirmed(request: Request, id: str, confirm: str, what: str) -> Optional[HTMLResponse]:
        """The session's page with 400 when an action's typed confirmation (the session's id)
        is missing or wrong; ``None`` when it is right."""
        if confirm.strip() == id:
            return None
        _flash(request, "error", f"Nothing was {what}: type the session's id, {id}, to confirm.")
        return session_view(request, id, status=400)

    @app.get("/session/{id}", response_class=HTMLResponse)
    def session_page(request: Request, id: str) -> HTMLResponse:
        return session_view(request, id)

    @app.get("/session/{id}/facts", response_class=HTMLResponse)
    def session_facts_fragment(request: Request, id: str) -> HTMLResponse:
        """The facts again when the ledger changes: with the operator's CSRF token, for the
        remove and revoke forms of its patterns and scopes."""
        try:
            facts = session_facts(id)
            return fragment("session_facts.html", id=id, operator=_operator(request), csrf_field=CSRF_FIELD, **facts)
        except LedgerError as e:
            return HTMLResponse(f'<p class="error">{text.visible(e)}</p>', status_code=404)

    @app.get("/session/{id}/decisions", response_class=HTMLResponse)
    def decisions_page(request: Request, id: str, before: str = "") -> HTMLResponse:
        """A session's recorded decisions, newest first, a page at a time: ``before`` is the
        number of the last decision of the page before. Read-only: a record never changes.
        Decisions recorded about an id the ledger does not know (each asked) are shown too."""
        cursor = _record_number("before", before.strip()) if before.strip() else None
        try:
            records = c.reader.decisions(session=id, before=cursor, limit=DECISIONS_PAGE)
            session = c.reader.session(id)
        except LedgerError as e:
            return render(request, "missing.html", status=404, id=id, error=str(e))
        if session is None and not records and cursor is None:
            return render(request, "missing.html", status=404, id=id, error=f"no session {id!r} in the ledger, and no decision recorded about it")
        older = None
        if len(records) == DECISIONS_PAGE:
            older = f"{_session_url(id)}/decisions?" + urlencode({"before": records[-1].id})
        return render(
            request, "decisions.html", id=id, known=session is not None, decisions=records, older=older,
            paged=cursor is not None, page_size=DECISIONS_PAGE,
        )

    @app.get("/session/{id}/decide", response_class=HTMLResponse)
    def decide(id: str, command: str = "", read_only: str = "") -> HTMLResponse:
        """Would this be approved? A dry run on the read-only handle: nothing is written."""
        try:
            detail = c.reader.decision_detail(id, command, read_only=bool(read_only))
        except LedgerError as e:
            return fragment("decision.html", id=id, command=command, detail=None, error=str(e))
        return fragment("decision.html", id=id, command=command, detail=detail, error=None)

    def preview_page(
        request: Request, id: str, status: int = 200, stale: bool = False, unbound: bool = False,
        scopes: bool = False, patterns: bool = False,
    ) -> HTMLResponse:
        """The preview of a cascade on ``id``, with its token: the postures it removes and the
        scopes and patterns that would still approve after it, which the confirmation can take
        too (``scopes``, ``patterns``: the boxes as the operator left them); ``stale`` when a
        confirmation came too late, ``unbound`` when one came without a preview's token."""
        try:
            preview = c.reader.revoke(id, "preview", actor=_operator(request).name)
            session = c.reader.session(id)
        except LedgerError as e:
            return render(request, "missing.html", status=404, id=id, error=str(e))
        top = session.depth if session is not None else 0
        kinds = {g.kind for g in preview.still_approving}
        return render(
            request, "revoke.html", status=status, id=id, preview=preview, top=top, stale=stale, unbound=unbound,
            has_scopes="scope" in kinds, has_patterns="pattern" in kinds, scopes=scopes, patterns=patterns,
        )

    def stop_flash(request: Request, done: session_ledger.Revocation, what: str) -> None:
        """What a stop did, and what it left approving, as flashes: the operator who believes
        a tree is stopped sees exactly what is not."""
        taken = ""
        if done.grants_revoked:
            n = len(done.grants_revoked)
            taken = f" and revoked {n} scope{'s' if n != 1 else ''} or pattern{'s' if n != 1 else ''} with it"
        _flash(request, "done", f"{what}{taken}.", done.sessions)
        if done.still_approving:
            n = len(done.still_approving)
            verb = "approves" if n == 1 else "approve"
            lines = [f"{g.session}: {text.grant_words(g)}" for g in done.still_approving]
            _flash(request, "warning", f"Still {verb} on their own ({n}), as a posture revocation leaves them:", lines=lines)

    @app.get("/session/{id}/revoke", response_class=HTMLResponse)
    def revoke_page(request: Request, id: str) -> HTMLResponse:
        return preview_page(request, id)

    @app.post("/session/{id}/revoke", response_class=HTMLResponse)
    def revoke(
        request: Request, id: str, propagation: str = Form(...), token: str = Form(""),
        scopes: str = Form(""), patterns: str = Form(""),
    ) -> Response:
        operator = _operator(request)
        if propagation not in ("cascade", "local"):
            raise BadParameter("propagation", "is 'cascade' or 'local'")
        take_scopes, take_patterns = _flag("scopes", scopes), _flag("patterns", patterns)
        also = {"scopes": take_scopes, "patterns": take_patterns}
        if propagation == "cascade" and not token.strip():
            # A cascade applies only a preview the operator saw. The binding refuses one without
            # a token too; this answers with the preview to confirm.
            return preview_page(request, id, status=400, unbound=True, **also)
        try:
            if propagation == "cascade":
                # Bound to the preview's token, which covers the scopes and patterns it listed:
                # a grant added since makes it stale (409), as a posture or a session does.
                done = c.writer.revoke(
                    id, "cascade", actor=operator.name, token=token, scopes=take_scopes, patterns=take_patterns
                )
                stop_flash(request, done, f"Revoked the posture of {done.count} sessions")
            else:
                done = c.writer.revoke(id, "local", actor=operator.name, scopes=take_scopes, patterns=take_patterns)
                message = f"Revoked the posture of {id} only."
                if done.still_holding:
                    message += " These descendants still hold a posture inherited through it:"
                else:
                    message += " No descendant holds a posture inherited through it."
                _flash(request, "done", message, done.still_holding)
                if done.still_approving:
                    lines = [f"{g.session}: {text.grant_words(g)}" for g in done.still_approving]
                    _flash(request, "warning", f"{id} still approves on its own:", lines=lines)
        except session_ledger.StalePreview:
            return preview_page(request, id, status=409, stale=True, **also)
        except LedgerError as e:
            _flash(request, "error", str(e))
        return _back(_session_url(id))

    @app.get("/revoke-all", response_class=HTMLResponse)
    def revoke_all_page(request: Request) -> HTMLResponse:
        return render(request, "revoke_all.html", done=None)

    @app.post("/revoke-all", response_class=HTMLResponse)
    def revoke_all(
        request: Request, confirm: str = Form(""), scopes: str = Form(""), patterns: str = Form("")
    ) -> HTMLResponse:
        """Every session's posture, and with the boxes every live scope and pattern: behind a
        typed confirmation. The answer lists what it left approving, with the form to take it."""
        take_scopes, take_patterns = _flag("scopes", scopes), _flag("patterns", patterns)
        if confirm.strip() != "revoke all":
            _flash(request, "error", "Nothing was revoked: type 'revoke all' to confirm.")
            return render(request, "revoke_all.html", status=400, done=None)
        try:
            done = c.writer.revoke_all(actor=_operator(request).name, scopes=take_scopes, patterns=take_patterns)
        except LedgerError as e:
            _flash(request, "error", str(e))
            return render(request, "revoke_all.html", status=200, done=None)
        stop_flash(request, done, f"Revoked every posture ({done.count})")
        return render(request, "revoke_all.html", done=done)

    def act(request: Request, id: str, call: Callable[[str], str]) -> Response:
        """Runs an action with the operator's name as the actor; says what happened."""
        try:
            _flash(request, "done", call(_operator(request).name))
        except LedgerError as e:
            _flash(request, "error", str(e))
        return _back(_session_url(id))

    @app.post("/session/{id}/grant")
    def grant(request: Request, id: str, level: str = Form(...), confirm: str = Form("")) -> Response:
        """A posture reaches every child the session creates from now on: granted only behind
        its typed confirmation."""
        refused = unconfirmed(request, id, confirm, "granted")
        if refused is not None:
            return refused

        def call(actor: str) -> str:
            # The ledger checks the word: anything but `trust` and `trust_reads` is refused.
            p = c.writer.grant(id, cast(session_ledger.PostureLevel, level), actor=actor)
            return f"Granted {p.level} on {p.session}."

        return act(request, id, call)

    @app.post("/session/{id}/end")
    def end(request: Request, id: str, confirm: str = Form("")) -> Response:
        """Ending reaches the session's spawned sub-agents: only behind its typed confirmation."""
        refused = unconfirmed(request, id, confirm, "ended")
        if refused is not None:
            return refused

        def call(actor: str) -> str:
            ended = c.writer.end(id, actor=actor)
            if not ended.spawned:
                return f"Ended {id}; it had no live spawned sub-agent."
            n = len(ended.spawned)
            return f"Ended {id} and {n} spawned sub-agent{'s' if n != 1 else ''}: {', '.join(ended.spawned)}."

        return act(request, id, call)

    @app.post("/session/{id}/patterns")
    def add_pattern(
        request: Request, id: str, pattern: str = Form(...), must_match: str = Form(""), must_not_match: str = Form("")
    ) -> Response:
        def call(actor: str) -> str:
            def lines(text: str) -> List[str]:
                return [line for line in text.splitlines() if line.strip()]

            added = c.writer.add_pattern(
                id, pattern, actor=actor, must_match=lines(must_match), must_not_match=lines(must_not_match)
            )
            return f"Added the pattern {pattern!r}." if added else f"{id} already had the pattern {pattern!r}."

        return act(request, id, call)

    @app.post("/session/{id}/patterns/remove")
    def remove_pattern(request: Request, id: str, pattern_b64: str = Form(...)) -> Response:
        """The form carries the pattern encoded: a browser rewrites the line breaks of a form
        field (LF and CR become CR LF), so a pattern stored with one could not be named."""
        pattern = text.unb64(pattern_b64)
        if pattern is None:
            raise BadParameter("pattern_b64", "is a pattern's UTF-8 in base64url, as its remove button sends it")

        def call(actor: str) -> str:
            c.writer.remove_pattern(id, pattern, actor=actor)
            return f"Removed the pattern {pattern!r}."

        return act(request, id, call)

    @app.post("/session/{id}/scopes")
    def grant_scope(request: Request, id: str, name: str = Form(...), ttl: str = Form(...)) -> Response:
        match = TTL.match(ttl)
        if not match:
            _flash(request, "error", f"A TTL is a whole number and a unit s, m, h or d (like 30m), not {ttl!r}.")
            return _back(_session_url(id))
        seconds = int(match.group(1)) * TTL_UNITS[match.group(2)]

        def call(actor: str) -> str:
            scope = c.writer.grant_scope(id, name, ttl_seconds=seconds, actor=actor)
            return f"Granted the scope {scope.name} until {text.when(scope.expires_at)}."

        return act(request, id, call)

    @app.post("/session/{id}/scopes/revoke")
    def revoke_scope(request: Request, id: str, name: str = Form(...)) -> Response:
        def call(actor: str) -> str:
            c.writer.revoke_scope(id, name, actor=actor)
            return f"Revoked the scope {name}."

        return act(request, id, call)

    # ----------------------------------------------------------------------------- epochs

    @app.get("/epoch", response_class=HTMLResponse)
    def epoch_page(request: Request) -> HTMLResponse:
        return render(request, "epoch.html", epoch=c.reader.current_epoch())

    @app.post("/epoch")
    def start_epoch(request: Request, confirm: str = Form(""), durable: str = Form("")) -> Response:
        expected = f"start epoch {c.reader.current_epoch() + 1}"
        if confirm.strip() != expected:
            _flash(request, "error", f"Nothing was started: type {expected!r} to confirm.")
            return _back("/epoch")
        try:
            started = c.writer.start_epoch(actor=_operator(request).name, durable=True if durable else None)
            _flash(
                request,
                "done",
                f"Started epoch {started.epoch}: {started.lapsed} postures lapsed, {started.carried} carried over.",
            )
        except LedgerError as e:
            _flash(request, "error", str(e))
        return _back("/epoch")

    # ----------------------------------------------------------------------------- the audit trail

    def audit_rows(filters: Dict[str, str], before: str) -> Dict[str, Any]:
        """A page of the audit trail, newest first, as the filters and ``before`` (the row
        number the page starts below) ask; raises ``BadParameter`` or ``InvalidInput`` for a
        filter it cannot read."""
        args: Dict[str, Any] = {"limit": AUDIT_PAGE}
        for key in ("kind", "session", "subtree"):
            if filters[key]:
                args[key] = filters[key]
        for key in ("since", "until"):
            if filters[key]:
                args[key] = _moment(key, filters[key])
        if before:
            args["before"] = _seq("before", before)
        error = None
        rows: List[Any] = []
        try:
            rows = list(reversed(c.reader.audit(**args)))
        except session_ledger.InvalidInput:
            raise
        except LedgerError as e:
            error = str(e)
        older = None
        if len(rows) == AUDIT_PAGE:
            older = "/audit?" + urlencode({**{k: v for k, v in filters.items() if v}, "before": rows[-1].seq})
        query = urlencode({k: v for k, v in filters.items() if v})
        return {"rows": rows, "filters": filters, "older": older, "error": error, "paged": "before" in args, "query": query}

    def audit_view(filters: Dict[str, str], before: str) -> Tuple[int, Dict[str, Any]]:
        """The audit rows with their status: 400, with the reason and no rows, for a filter
        that cannot be read."""
        try:
            return 200, audit_rows(filters, before)
        except (BadParameter, session_ledger.InvalidInput, ValueError, OverflowError) as e:
            error = str(e) if isinstance(e, (BadParameter, LedgerError)) else "a filter is out of range"
            return 400, {"rows": [], "filters": filters, "older": None, "error": error, "paged": False, "query": ""}

    def audit_filters(kind: str, session: str, subtree: str, since: str, until: str) -> Dict[str, str]:
        return {"kind": kind.strip(), "session": session.strip(), "subtree": subtree.strip(),
                "since": since.strip(), "until": until.strip()}

    @app.get("/audit", response_class=HTMLResponse)
    def audit_page(
        request: Request, kind: str = "", session: str = "", subtree: str = "", since: str = "",
        until: str = "", before: str = "",
    ) -> HTMLResponse:
        status, data = audit_view(audit_filters(kind, session, subtree, since, until), before.strip())
        chain = c.verifier.refresh()
        return render(request, "audit.html", status=status, kinds=session_ledger.AUDIT_KINDS, chain=chain, **data)

    @app.get("/audit/rows", response_class=HTMLResponse)
    def audit_rows_fragment(
        kind: str = "", session: str = "", subtree: str = "", since: str = "", until: str = "", before: str = "",
    ) -> HTMLResponse:
        status, data = audit_view(audit_filters(kind, session, subtree, since, until), before.strip())
        response = fragment("audit_rows.html", **data)
        response.status_code = status
        return response

    # ----------------------------------------------------------------------------- live

    @app.get("/events")
    async def events() -> StreamingResponse:
        """The audit head now and at each change, as Server-Sent Events."""

        async def stream() -> Any:
            yield "retry: 1000\n\n"
            async for head in c.watcher.listen(KEEPALIVE_SECONDS):
                yield ": alive\n\n" if head is None else f"event: head\ndata: {head}\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")
