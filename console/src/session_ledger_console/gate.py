"""Only operators get in, and nothing changes but by a form of this console.

The gate is an ASGI middleware in front of every route. For each request it:

- refuses a request for a host that is not the console's own (421; 400 without one, or with two):
  the host of ``--public-origin``, or the address and port it listens on. A page fetched by a
  name that the attacker's DNS points at the console (DNS rebinding) is never served;
- identifies the operator: by the session cookie that the start-up link's token set (the token
  is printed when the console starts, as Jupyter prints its own), or by the header a trusted
  reverse proxy sets, named explicitly with ``--trust-header`` (then no token is accepted), and
  taken only from the proxy's own address (``--trusted-proxy``, loopback by default) and only
  once per request;
- refuses a request without a credential, or with a wrong one (401), and an operator name that
  cannot be an actor of the ledger (403); a console session lasts as `Sessions` says (idle
  time, lifetime, a bound on how many), and a sign-in from a browser that has one replaces it;
- refuses a state-changing request (any method but GET and HEAD) from an origin that is not
  one of the console's own (never compared with what the request says its host is), or
  without the CSRF token of the operator's current console session (403): a token of an
  earlier session, one that a later login replaced, is stale;
- adds the security headers to every response: a Content-Security-Policy that allows scripts
  from the console's own files only (no inline script, no eval), no framing, no caching; and
  answers a failure of the application with a plain 500 page that carries them too.

Refusal pages say why and nothing about the ledger: whoever reaches the port sees them.

Routes find the operator in ``request.state.operator``.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple, Union
from urllib.parse import parse_qs, quote, urlencode, urlsplit

Scope = Dict[str, Any]
Message = Dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

log = logging.getLogger("session_ledger_console")

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


#: The alphabets a token's strength is measured by, smallest first: a token is counted as if
#: each of its characters were drawn at random from the smallest that holds them all.
_DIGITS = "0123456789"
_LOWER = "abcdefghijklmnopqrstuvwxyz"
_UPPER = _LOWER.upper()
TOKEN_ALPHABETS = [
    _DIGITS,
    _DIGITS + "abcdef",
    _DIGITS + "ABCDEF",
    _LOWER,
    _UPPER,
    _DIGITS + _LOWER,
    _DIGITS + _UPPER,
    _LOWER + _UPPER,
    _DIGITS + _LOWER + _UPPER,
    _DIGITS + _LOWER + _UPPER + "-_",
    _DIGITS + _LOWER + _UPPER + "-_.~",
]
#: The least a token may hold, in bits: what `secrets.token_urlsafe(16)` gives and more.
TOKEN_BITS = 128


def token_bits(token: str) -> float:
    """A conservative measure of a token's strength: its length times log2 of the smallest of
    `TOKEN_ALPHABETS` that holds all its characters (0 when none does: a token is written in a
    link as it is, so only the characters a URL leaves alone are taken). A token made by hand
    from a larger alphabet than it seems to use is counted as the smaller one."""
    for alphabet in TOKEN_ALPHABETS:
        if all(ch in alphabet for ch in token):
            return len(token) * math.log2(len(alphabet))
    return 0.0


def token_problem(token: str) -> Optional[str]:
    """Why ``token`` is too weak to let operators in, or ``None``. Never repeats the token."""
    if token_bits(token) >= TOKEN_BITS:
        return None
    return (
        f"the token holds less than {TOKEN_BITS} bits: use at least 22 random characters of "
        "A-Z a-z 0-9 - _ (python3 -c 'import secrets; print(secrets.token_urlsafe(32))'), or 32 "
        "hexadecimal digits"
    )


def valid_operator_name(name: str) -> bool:
    """True when ``name`` can be recorded as the actor of a change."""
    return bool(ACTOR_NAME.match(name))


@dataclass
class Operator:
    """An operator's console session: who, and the CSRF token its forms carry."""

    name: str
    csrf: str
    sid: str
    #: When it began and when it was last used, by the sessions' clock.
    began: float = 0.0
    seen: float = 0.0
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
    #: The address and port the console listens on, known once its socket is bound: with the
    #: public origin, what a request's ``Host`` and ``Origin`` may name.
    listen: Optional[Tuple[str, int]] = None
    #: The addresses (or networks, ``10.0.0.0/8``) the trusted header is taken from; empty:
    #: loopback only.
    trusted_proxies: Tuple[str, ...] = ()
    #: Seconds a console session lives without a request, and at most.
    session_idle: float = 8 * 3600
    session_lifetime: float = 24 * 3600
    #: The most console sessions alive at once.
    max_sessions: int = 1000


#: How the console's own addresses are named in ``Host`` and ``Origin``: a host name in lower
#: case or an IP address in its compressed form, and a port.
Authority = Tuple[str, int]

DEFAULT_PORTS = {"http": 80, "https": 443}
HOST_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?\Z")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
WILDCARDS = ("", "0.0.0.0", "::")


def _ip(text: str) -> Optional[Union[ipaddress.IPv4Address, ipaddress.IPv6Address]]:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and a loopback address: a listener only this machine reaches."""
    address = _ip(host.strip("[]"))
    return host.lower() == "localhost" or bool(address and address.is_loopback)


def _canonical_host(host: str) -> Optional[str]:
    """A host as ``Host`` or ``Origin`` names it, in one form: an IP address compressed (without
    brackets), a name in lower case; ``None`` when it is neither."""
    address = _ip(host[1:-1] if host.startswith("[") and host.endswith("]") else host)
    if address is not None:
        if ":" in host and not host.startswith("["):
            return None  # an IPv6 address in a Host header is always in brackets
        return address.compressed
    host = host.lower()
    return host if HOST_NAME.match(host) else None


def parse_authority(value: str) -> Optional[Tuple[str, Optional[int]]]:
    """``host``, ``host:port``, ``[v6]:port`` as a request's ``Host`` carries it: the host in its
    canonical form and the port (``None`` when not given); ``None`` when malformed."""
    if value.startswith("["):
        end = value.find("]")
        host, rest = value[: end + 1], value[end + 1 :]
        if end < 0 or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    else:
        host, colon, port_text_ = value.partition(":")
        port_text = port_text_ if colon else None
    port: Optional[int] = None
    if port_text is not None:
        if not (port_text.isascii() and port_text.isdigit() and len(port_text) <= 5):
            return None
        port = int(port_text)
        if not 0 < port < 65536:
            return None
    canonical = _canonical_host(host)
    return None if canonical is None else (canonical, port)


@dataclass(frozen=True)
class OwnAddresses:
    """The console's own origins: the public origin, and the listening address (each loopback
    name for a loopback listener; for one that listens on every address, any IP address with
    its port, since a name is what DNS rebinding brings and an address is not).

    Checked against a request's ``Host`` (reads included) and a change's ``Origin``; the
    request's own ``Host`` is never the reference."""

    #: (scheme, host, port) of each own origin.
    origins: FrozenSet[Tuple[str, str, int]]
    #: The port of a listener on every address, whose hosts are IP addresses: ``None`` if not.
    any_address_port: Optional[int]

    @staticmethod
    def of(policy: Policy) -> "OwnAddresses":
        origins = set()
        wildcard = None
        if policy.public_origin:
            parts = urlsplit(policy.public_origin)
            if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path.strip("/") or parts.query:
                raise ValueError(f"the public origin {policy.public_origin!r} is not http(s)://HOST[:PORT]")
            host = _canonical_host(parts.hostname)
            if host is None:
                raise ValueError(f"the public origin {policy.public_origin!r} has no host a browser names")
            origins.add((parts.scheme, host, parts.port or DEFAULT_PORTS[parts.scheme]))
        if policy.listen is not None:
            host, port = policy.listen
            if host.strip("[]") in WILDCARDS:
                wildcard = port
                hosts: Sequence[str] = LOOPBACK_NAMES
            elif is_loopback(host):
                hosts = LOOPBACK_NAMES
            else:
                hosts = [host]
            for name in hosts:
                canonical = _canonical_host(name if ":" not in name or name.startswith("[") else f"[{name}]")
                if canonical is not None:
                    origins.add(("http", canonical, port))
        if not origins:
            raise ValueError("the console must know its own origin: the address it listens on, or --public-origin")
        return OwnAddresses(frozenset(origins), wildcard)

    def _owns(self, scheme: Optional[str], host: str, port: Optional[int]) -> bool:
        for own_scheme, own_host, own_port in self.origins:
            if scheme is not None and scheme != own_scheme:
                continue
            if host == own_host and (port == own_port or (port is None and own_port == DEFAULT_PORTS[own_scheme])):
                return True
        if self.any_address_port is not None and scheme in (None, "http") and _ip(host) is not None:
            return port == self.any_address_port or (port is None and self.any_address_port == 80)
        return False

    def host(self, value: str) -> bool:
        """True when a ``Host`` header names the console."""
        parsed = parse_authority(value)
        return parsed is not None and self._owns(None, *parsed)

    def origin(self, value: str) -> bool:
        """True when an ``Origin`` header is one of the console's own."""
        parts = urlsplit(value)
        if parts.scheme not in DEFAULT_PORTS or parts.path or parts.query or parts.username:
            return False
        parsed = parse_authority(parts.netloc)
        if parsed is None:
            return False
        host, port = parsed
        return self._owns(parts.scheme, host, port if port is not None else DEFAULT_PORTS[parts.scheme])


def trusted_networks(policy: Policy) -> List[Union[ipaddress.IPv4Network, ipaddress.IPv6Network]]:
    """The proxy addresses of ``--trusted-proxy`` as networks (raises ``ValueError`` for one
    that is not an address or a network); empty for loopback only."""
    return [ipaddress.ip_network(a, strict=False) for a in policy.trusted_proxies]


def _from_proxy(scope: Scope, networks: Sequence[Union[ipaddress.IPv4Network, ipaddress.IPv6Network]]) -> bool:
    """True when the request's peer (the TCP address, never a header) is a trusted proxy."""
    client = scope.get("client")
    address = _ip(str(client[0])) if client else None
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if not networks:
        return address.is_loopback
    return any(address in network for network in networks)


#: A console session ends after this long without a request (seconds)...
SESSION_IDLE = 8 * 3600
#: ... and this long after it began, used or not.
SESSION_LIFETIME = 24 * 3600
#: The most console sessions alive at once; a new one evicts the least recently used.
MAX_SESSIONS = 1000


class Sessions:
    """The operators' console sessions, in memory: a restart logs everyone out.

    Each ends after ``idle`` seconds without a request, and ``lifetime`` seconds after it
    began; at most ``most`` are alive at once, and a new one evicts the least recently used.
    So memory is bounded whatever arrives, and a cookie left in a browser stops counting. The
    clock is injectable (``time.monotonic`` by default), so that tests move it rather than
    wait."""

    def __init__(
        self,
        idle: float = SESSION_IDLE,
        lifetime: float = SESSION_LIFETIME,
        most: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle = idle
        self.lifetime = lifetime
        self.most = most
        self._clock = clock
        #: By id, least recently used first.
        self._by_id: "OrderedDict[str, Operator]" = OrderedDict()
        #: Behind a proxy: each operator's one session.
        self._by_name: Dict[str, str] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_id)

    def new(self, name: str) -> Operator:
        """A new console session for ``name``."""
        now = self._clock()
        operator = Operator(
            name=name, csrf=secrets.token_urlsafe(32), sid=secrets.token_urlsafe(32), began=now, seen=now
        )
        with self._lock:
            self._make_room(now)
            self._by_id[operator.sid] = operator
        return operator

    def get(self, sid: str) -> Optional[Operator]:
        """The live session ``sid``, marked as used now; ``None`` when there is none, or it
        has expired (then it is dropped)."""
        now = self._clock()
        with self._lock:
            operator = self._by_id.get(sid)
            if operator is None:
                return None
            if self._expired(operator, now):
                self._remove(sid)
                return None
            operator.seen = now
            self._by_id.move_to_end(sid)
            return operator

    def for_name(self, name: str) -> Operator:
        """Behind a proxy, which names the operator on every request: the operator's live
        session, or a new one. Requests without a cookie do not each make a session."""
        with self._lock:
            sid = self._by_name.get(name)
        operator = self.get(sid) if sid else None
        if operator is None:
            operator = self.new(name)
            with self._lock:
                if operator.sid in self._by_id:
                    self._by_name[name] = operator.sid
        return operator

    def drop(self, sid: str) -> None:
        with self._lock:
            self._remove(sid)

    def _expired(self, operator: Operator, now: float) -> bool:
        return now - operator.seen > self.idle or now - operator.began > self.lifetime

    def _remove(self, sid: str) -> None:
        operator = self._by_id.pop(sid, None)
        if operator is not None and self._by_name.get(operator.name) == sid:
            del self._by_name[operator.name]

    def _make_room(self, now: float) -> None:
        """Drops the sessions idle too long (the least recently used come first), then the
        least recently used until one more fits."""
        while self._by_id:
            sid, oldest = next(iter(self._by_id.items()))
            if not (self._expired(oldest, now) or len(self._by_id) >= self.most):
                break
            self._remove(sid)


def cookie_header(policy: Policy, value: str, max_age: int) -> bytes:
    """The ``Set-Cookie`` value of the console's session cookie; ``max_age`` 0 clears it."""
    parts = [f"{COOKIE}={value}", "Path=/", "HttpOnly", "SameSite=Strict", f"Max-Age={max_age}"]
    if policy.secure_cookie:
        parts.append("Secure")
    return "; ".join(parts).encode("latin-1")


def same_origin_path(path: str) -> str:
    """``path`` as a redirect that stays on the console: re-encoded (no line break reaches a
    header), and ``/`` for a path that a browser would read as another host (``//evil.example``,
    ``/\\evil.example``)."""
    if not path.startswith("/") or path.startswith(("//", "/\\")):
        return "/"
    return quote(path, safe="/-._~")


def _headers(scope: Scope, name: bytes) -> List[str]:
    """Every value of the header ``name`` (lower case), in order."""
    return [str(value.decode("latin-1")) for key, value in scope.get("headers", []) if key.lower() == name]


def _header(scope: Scope, name: bytes) -> Optional[str]:
    values = _headers(scope, name)
    return values[0] if values else None


def _single(scope: Scope, name: bytes, label: str) -> Optional[str]:
    """The value of a header that must come at most once (400 when it comes twice: which one
    counts would depend on who reads it)."""
    values = _headers(scope, name)
    if len(values) > 1:
        raise Refused(400, f"Refused: {label} twice", f"This request carries {label} more than once.")
    return values[0] if values else None


def _cookies(scope: Scope) -> List[str]:
    """Every value of the console's cookie, however the rest of the header is written.

    Read leniently, as browsers send it: split on ``;``, each piece at its first ``=``. Another
    application on the same host may set cookies that a strict parser stops at (a JSON value,
    a space, a piece without ``=``); they are skipped, and the console's cookie is found
    wherever it is. Several ``Cookie`` headers count as one."""
    found = []
    for header in _headers(scope, b"cookie"):
        for piece in header.split(";"):
            name, equals, value = piece.partition("=")
            if equals and name.strip() == COOKIE:
                found.append(value.strip().strip('"'))
    return found


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
        self.own = OwnAddresses.of(policy)
        if policy.token is not None and token_problem(policy.token):
            raise ValueError(token_problem(policy.token))
        self.proxies = trusted_networks(policy)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        set_cookie: List[bytes] = []
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
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
            await self._handle(scope, receive, send_with_headers, set_cookie)
        except Exception:
            # A failure the routes did not expect: a plain page, with the same headers as every
            # other response, and nothing of the failure but in the console's log.
            log.exception("the console failed on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            set_cookie.clear()
            await self._refuse(
                Refused(500, "The console failed", "Something went wrong on this request; the console's log says what."),
                send_with_headers,
            )

    async def _handle(self, scope: Scope, receive: Receive, send: Send, set_cookie: List[bytes]) -> None:
        """The gate's checks, then the application."""
        try:
            self._check_host(scope)
            if scope["path"].startswith("/static/") or scope["path"] == "/favicon.ico":
                await self.app(scope, receive, send)
                return
            method = scope["method"]
            if self.policy.token is not None and method in ("GET", "HEAD"):
                query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
                if "token" in query:
                    await self._login(scope, query, send, set_cookie)
                    return
            operator = self._identify(scope)
            if method not in ("GET", "HEAD"):
                receive = await self._check_change(scope, receive, operator)
            scope.setdefault("state", {})["operator"] = operator
        except Refused as refused:
            await self._refuse(refused, send)
            return
        await self.app(scope, receive, send)

    def _check_host(self, scope: Scope) -> None:
        """Refuses a request whose ``Host`` is not the console's own: 400 without one (or with
        two), 421 for another host."""
        host = _single(scope, b"host", "Host")
        if not host:
            raise Refused(400, "Refused: no host", "This request does not say which host it is for.")
        if parse_authority(host) is None:
            raise Refused(400, "Refused: malformed host", "This request's Host header is not a host and port.")
        if not self.own.host(host):
            raise Refused(
                421,
                "Refused: not this console's host",
                "This console answers only to its own address; this request was sent to another "
                "name (a link through another name, or a page whose name was pointed at it).",
            )


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
        # A browser that signs in again replaces its console session rather than adding one:
        # its earlier cookie stops counting.
        earlier = self._session(scope)
        if earlier is not None:
            self.sessions.drop(earlier.sid)
        operator = self.sessions.new(self.policy.operator or "operator")
        set_cookie.append(cookie_header(self.policy, operator.sid, int(self.sessions.lifetime)))
        rest = {k: v for k, v in query.items() if k != "token"}
        location = same_origin_path(scope["path"]) + (("?" + urlencode(rest, doseq=True)) if rest else "")
        await send(
            {
                "type": "http.response.start",
                "status": 303,
                "headers": [(b"location", location.encode("latin-1")), (b"content-length", b"0")],
            }
        )
        await send({"type": "http.response.body", "body": b""})

    def _session(self, scope: Scope) -> Optional[Operator]:
        """The console session the request's cookie names. Of two console cookies (one left
        from another path, or set by another application on the host), the one of a live
        session counts; two of live sessions count for none, since which browser sent them
        cannot be told."""
        live = {sid: session for sid in _cookies(scope) if sid for session in [self.sessions.get(sid)] if session}
        return next(iter(live.values())) if len(live) == 1 else None

    def _identify(self, scope: Scope) -> Operator:
        header = self.policy.trust_header
        if header is None:
            session = self._session(scope)
            if session is None:
                raise Refused(
                    401,
                    "Sign in with the console's link",
                    "This console lets in only its operators. Open the link with the token "
                    "that the console printed when it started.",
                )
            return session
        name = _single(scope, header.lower().encode("latin-1"), header)
        if name is not None and not _from_proxy(scope, self.proxies):
            raise Refused(
                403,
                "Refused: not from the proxy",
                f"This console takes {header} only from its reverse proxy; this request came "
                "from another address.",
            )
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
        # The proxy names the operator on every request: one console session per operator, no
        # cookie. Another operator's form carries another session's CSRF token, refused below.
        return self.sessions.for_name(name)

    async def _check_change(self, scope: Scope, receive: Receive, operator: Operator) -> Receive:
        """Refuses a change from another origin or without the current CSRF token; returns a
        `receive` that replays the form it read."""
        origin = _single(scope, b"origin", "Origin")
        if origin is not None and not self.own.origin(origin):
            raise Refused(
                403,
                "Refused: another origin",
                "A change may only come from this console's own pages; this one came from "
                f"{origin}.",
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
