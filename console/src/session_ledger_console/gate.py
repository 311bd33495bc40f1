"""Only operators get in, and nothing changes but by a form of this console.

The gate is an ASGI middleware in front of every route. For each request it:

- identifies the operator: by the session cookie that the start-up link's token set (the token
  is printed when the console starts, as Jupyter prints its own), or by the header a trusted
  reverse proxy sets, named explicitly with ``--trust-header`` (then no token is accepted);
- refuses a request without a credential, or with a wrong one (401), and an operator name that
  cannot be an actor of the ledger (403);
- refuses a state-changing request (any method but GET and HEAD) from another origin, or
  without the CSRF token of the operator's current console session (403): a token of an
  earlier session, one that a later login replaced, is stale;
- adds the security headers to every response: a Content-Security-Policy that allows scripts
  from the console's own files only (no inline script, no eval), no framing, no caching.

Routes find the operator in ``request.state.operator``.
"""

from __future__ import annotations

import re
import secrets
import threading
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlencode

Scope = Dict[str, Any]
Message = Dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

#: An operator's name is recorded as the actor of every change: the ledger's actor names.
ACTOR_NAME = re.compile(r"[A-Za-z0-9._:@-]{1,64}\Z")

#: The session cookie's name.
COOKIE = "session_ledger_console"

#: The form field that carries the CSRF token.
CSRF_FIELD = "csrf"

#: The largest form the console reads: a pattern with its examples fits many times over.
MAX_FORM_BYTES = 64 * 1024

SECURITY_HEADERS: List[Tuple[bytes, bytes]] = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        b"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
]


def valid_operator_name(name: str) -> bool:
    """True when ``name`` can be recorded as the actor of a change."""
    return bool(ACTOR_NAME.match(name))


@dataclass
class Operator:
    """An operator's console session: who, and the CSRF token its forms carry."""

    name: str
    csrf: str
    sid: str
    #: Messages to show on the next page (one-shot).
    flashes: List[Dict[str, Any]] = field(default_factory=list)


@dataclass
class Refused(Exception):
    """A request the gate turns away, with the page that says why."""

    status: int
    title: str
    detail: str


@dataclass
class Policy:
    """How operators are identified."""

    #: The token of the start-up link; ``None`` when a reverse proxy identifies operators.
    token: Optional[str]
    #: The operator's name for a token login.
    operator: Optional[str]
    #: The header a trusted reverse proxy sets to the operator's name.
    trust_header: Optional[str] = None
    #: The origin the browser sees (``https://console.example``), when a proxy changes it.
    public_origin: Optional[str] = None
    #: Mark the cookie ``Secure`` (the console is served over HTTPS by a proxy).
    secure_cookie: bool = False


class Sessions:
    """The operators' console sessions, in memory: a restart logs everyone out."""

    def __init__(self) -> None:
        self._by_id: Dict[str, Operator] = {}
        self._lock = threading.Lock()

    def new(self, name: str) -> Operator:
        operator = Operator(name=name, csrf=secrets.token_urlsafe(32), sid=secrets.token_urlsafe(32))
        with self._lock:
            self._by_id[operator.sid] = operator
        return operator

    def get(self, sid: str) -> Optional[Operator]:
        with self._lock:
            return self._by_id.get(sid)

    def drop(self, sid: str) -> None:
        with self._lock:
            self._by_id.pop(sid, None)


def _header(scope: Scope, name: bytes) -> Optional[str]:
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _cookie(scope: Scope) -> Optional[str]:
    raw = _header(scope, b"cookie")
    if not raw:
        return None
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(raw)
    except Exception:
        return None
    morsel = jar.get(COOKIE)
    return morsel.value if morsel else None


def _origin_of(scope: Scope, policy: Policy) -> str:
    """The console's own origin, as the browser addresses it."""
    if policy.public_origin:
        return policy.public_origin.rstrip("/")
    host = _header(scope, b"host") or ""
    return f"{scope.get('scheme', 'http')}://{host}"


class Gate:
    """The ASGI middleware described in the module's docstring."""

    def __init__(
        self,
        app: App,
        policy: Policy,
        sessions: Sessions,
        render_refusal: Callable[[Refused], bytes],
    ) -> None:
        self.app = app
        self.policy = policy
        self.sessions = sessions
        self.render_refusal = render_refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        set_cookie: List[bytes] = []

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v)
                    for k, v in message.get("headers", [])
                    if k.lower() not in {name for name, _ in SECURITY_HEADERS}
                ]
                headers.extend(SECURITY_HEADERS)
                headers.extend((b"set-cookie", c) for c in set_cookie)
                message = {**message, "headers": headers}
            await send(message)

        try:
            if scope["path"].startswith("/static/"):
                await self.app(scope, receive, send_with_headers)
                return
            method = scope["method"]
            if self.policy.token is not None and method in ("GET", "HEAD"):
                query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
                if "token" in query:
                    await self._login(scope, query, send_with_headers, set_cookie)
                    return
            operator = self._identify(scope, set_cookie)
            if method not in ("GET", "HEAD"):
                receive = await self._check_change(scope, receive, operator)
            scope.setdefault("state", {})["operator"] = operator
        except Refused as refused:
            await self._refuse(refused, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _cookie_header(self, value: str, max_age: Optional[int] = None) -> bytes:
        parts = [f"{COOKIE}={value}", "Path=/", "HttpOnly", "SameSite=Strict"]
        if max_age is not None:
            parts.append(f"Max-Age={max_age}")
        if self.policy.secure_cookie:
            parts.append("Secure")
        return "; ".join(parts).encode("latin-1")

    async def _login(
        self, scope: Scope, query: Dict[str, List[str]], send: Send, set_cookie: List[bytes]
    ) -> None:
        """The start-up link: a right token opens a new console session, sets its cookie and
        sends the browser on to the same page without the token."""
        given = query.get("token", [""])[0]
        assert self.policy.token is not None
        if not secrets.compare_digest(given.encode(), self.policy.token.encode()):
            raise Refused(
                401,
                "Wrong token",
                "The token in this link is not the console's. Open the link the console "
                "printed when it started.",
            )
        operator = self.sessions.new(self.policy.operator or "operator")
        set_cookie.append(self._cookie_header(operator.sid))
        rest = {k: v for k, v in query.items() if k != "token"}
        location = scope["path"] + (("?" + urlencode(rest, doseq=True)) if rest else "")
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    def _identify(self, scope: Scope, set_cookie: List[bytes]) -> Operator:
        sid = _cookie(scope)
        session = self.sessions.get(sid) if sid else None
        header = self.policy.trust_header
        if header is None:
            if session is None:
                raise Refused(
                    401,
                    "Sign in with the console's link",
                    "This console lets in only its operators. Open the link with the token "
                    "that the console printed when it started.",
                )
            return session
        name = _header(scope, header.lower().encode("latin-1"))
        if not name:
            raise Refused(
                401,
                "No operator identity",
                f"The reverse proxy in front of this console sets the operator's name in "
                f"{header}; this request came without it.",
            )
        if not valid_operator_name(name):
            raise Refused(
                403,
                "Not a name the ledger can record",
                f"The operator's name {name!r} from {header} is not 1 to 64 characters from "
                "A-Z, a-z, 0-9 and . _ : @ -; every change is recorded with the operator's "
                "name, so the console lets in only names the ledger can record.",
            )
        if session is None or session.name != name:
            if session is not None and scope["method"] not in ("GET", "HEAD"):
                # Another operator behind the same browser: its forms are not this one's.
                raise Refused(403, "Stale form", "This form belongs to another operator's session.")
            session = self.sessions.new(name)
            set_cookie.append(self._cookie_header(session.sid))
        return session

    async def _check_change(self, scope: Scope, receive: Receive, operator: Operator) -> Receive:
        """Refuses a change from another origin or without the current CSRF token; returns a
        `receive` that replays the form it read."""
        expected = _origin_of(scope, self.policy)
        origin = _header(scope, b"origin")
        if origin is not None and origin != expected:
            raise Refused(
                403,
                "Refused: another origin",
                f"A change may only come from this console's own pages ({expected}); this one "
                f"came from {origin}.",
            )
        site = _header(scope, b"sec-fetch-site")
        if origin is None and site is not None and site not in ("same-origin", "none"):
            raise Refused(403, "Refused: another site", "A change may only come from this console's own pages.")
        body = b""
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise Refused(400, "Disconnected", "The request ended before its form.")
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > MAX_FORM_BYTES:
                raise Refused(413, "Form too large", "The console reads forms of up to 64 KiB.")
        content_type = (_header(scope, b"content-type") or "").split(";")[0].strip()
        fields = parse_qs(body.decode("utf-8", "replace")) if content_type == "application/x-www-form-urlencoded" else {}
        given = fields.get(CSRF_FIELD, [""])[0]
        if not given:
            raise Refused(
                403,
                "Refused: no CSRF token",
                "Every change comes from a form of this console, which carries a token; this "
                "request had none. Nothing was changed.",
            )
        if not secrets.compare_digest(given.encode(), operator.csrf.encode()):
            raise Refused(
                403,
                "Refused: stale form",
                "This form's token is not the one of your current console session (it came "
                "from a page loaded before you signed in again, or before the console "
                "restarted). Nothing was changed: reload the page and try again.",
            )
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return replay

    async def _refuse(self, refused: Refused, send: Send) -> None:
        body = self.render_refusal(refused)
        await send(
            {
                "type": "http.response.start",
                "status": refused.status,
                "headers": [
                    (b"content-type", b"text/html; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
