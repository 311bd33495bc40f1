"""``session-ledger-console``: start the console on a ledger and print the link to open.

    session-ledger-console --db PATH_OR_URL [--host 127.0.0.1] [--port 8765]
                           [--operator NAME | --trust-header HEADER [--trusted-proxy ADDR]...
                           [--allow-remote-proxy]] [--public-origin URL]

It listens on 127.0.0.1 unless told otherwise. Operators sign in with the link it prints, whose
token sets a session cookie (the token changes at every start, unless
``SESSION_LEDGER_CONSOLE_TOKEN`` sets it); every change they make is recorded with ``--operator``
as the actor. Behind a reverse proxy that authenticates operators, ``--trust-header`` names the
header that carries the operator's name, and the token is not used (docs/console.md). The
header is taken only from the proxy's address (``--trusted-proxy``, loopback by default), and a
console that trusts it listens beyond loopback only when told so (``--allow-remote-proxy``).
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import sys
from typing import List, Optional

import uvicorn

from session_ledger import LedgerError

from .app import PAGE_SIZE, TTL, TTL_UNITS, create_app
from .gate import (
    MAX_SESSIONS,
    SESSION_IDLE,
    SESSION_LIFETIME,
    OwnAddresses,
    Policy,
    is_loopback,
    token_problem,
    trusted_networks,
    valid_operator_name,
)


def _default_operator() -> str:
    """As the command line chooses its actor: $SESSION_LEDGER_ACTOR, $USER, then `operator`."""
    for name in (os.environ.get("SESSION_LEDGER_ACTOR"), os.environ.get("USER")):
        if name and valid_operator_name(name):
            return name
    return "operator"


def _duration(text: str) -> int:
    """``30m``, ``8h``, ``1d``: seconds (argparse's type, as scopes' TTLs are written)."""
    match = TTL.match(text)
    if not match or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration like 30m, 8h or 1d")
    return int(match.group(1)) * TTL_UNITS[match.group(2)]


def _is_url(db: str) -> bool:
    return db.startswith("postgres://") or db.startswith("postgresql://")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="session-ledger-console",
        description="The operator's console for a session ledger, in a browser.",
    )
    p.add_argument("--db", default=os.environ.get("SESSION_LEDGER_DB"),
                   help="the ledger: a SQLite file or a postgres:// URL (default: $SESSION_LEDGER_DB)")
    p.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="the port (default 8765; 0 picks a free one)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--operator", help="the operator's name, recorded as the actor of every change "
                     "(default: $SESSION_LEDGER_ACTOR, $USER, or 'operator')")
    who.add_argument("--trust-header", metavar="HEADER",
                     help="take each operator's name from this header, set by a trusted reverse proxy "
                     "(e.g. X-Forwarded-User); no token is printed or accepted")
    p.add_argument("--trusted-proxy", metavar="ADDR", action="append", default=[],
                   help="the address (or network, 10.0.0.0/8) of the proxy that sets --trust-header; "
                   "repeat for several (default: loopback only)")
    p.add_argument("--allow-remote-proxy", action="store_true",
                   help="with --trust-header, allow listening beyond loopback (--host 0.0.0.0), where "
                   "the proxy reaches the console from another machine")
    p.add_argument("--public-origin", metavar="URL",
                   help="the origin browsers use (https://console.example), when a proxy changes it")
    p.add_argument("--session-idle", type=_duration, default=SESSION_IDLE, metavar="DURATION",
                   help="a console session ends after this long without a request (default 8h)")
    p.add_argument("--session-lifetime", type=_duration, default=SESSION_LIFETIME, metavar="DURATION",
                   help="and this long after it began, used or not (default 1d)")
    p.add_argument("--max-sessions", type=int, default=MAX_SESSIONS, metavar="N",
                   help=f"the most console sessions alive at once; a new one evicts the least recently "
                   f"used (default {MAX_SESSIONS})")
    p.add_argument("--page-size", type=int, default=PAGE_SIZE,
                   help=f"sessions per page of a tree level (default {PAGE_SIZE})")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)

    def say(message: str) -> None:
        print(f"session-ledger-console: {message}", file=sys.stderr, flush=True)

    if not args.db:
        say("error: no ledger: give --db PATH_OR_URL or set SESSION_LEDGER_DB")
        return 2
    if not _is_url(args.db) and not os.path.exists(args.db):
        say(f"error: no ledger at {args.db} (create one with `session-ledger --db {args.db} init`)")
        return 1
    operator = None
    if args.trust_header is None:
        operator = args.operator or _default_operator()
        if not valid_operator_name(operator):
            say(f"error: the operator's name {operator!r} is not 1 to 64 characters from "
                "A-Z, a-z, 0-9 and . _ : @ -")
            return 2
    if not 1 <= args.page_size <= 1000:
        say("error: --page-size is from 1 to 1000")
        return 2
    if not 1 <= args.max_sessions <= 1_000_000:
        say("error: --max-sessions is from 1 to 1000000")
        return 2
    if args.trusted_proxy and not args.trust_header:
        say("error: --trusted-proxy names the proxy that sets --trust-header; give --trust-header too")
        return 2
    if args.allow_remote_proxy and not args.trust_header:
        say("error: --allow-remote-proxy is for a console behind a proxy; give --trust-header too")
        return 2
    if args.trust_header and not is_loopback(args.host):
        if not args.allow_remote_proxy:
            say(f"error: with --trust-header the console believes the name in {args.trust_header} "
                f"from whoever reaches it; listening on {args.host}, beyond loopback, needs "
                "--allow-remote-proxy (with --trusted-proxy naming the proxy's address), or listen "
                "on 127.0.0.1 with the proxy on this machine")
            return 2
        proxies = ", ".join(args.trusted_proxy) or "loopback only"
        say(f"warning: listening on {args.host} with --trust-header; {args.trust_header} is taken "
            f"from {proxies}: firewall the port so that only the proxy reaches it")
    token = None if args.trust_header else (os.environ.get("SESSION_LEDGER_CONSOLE_TOKEN") or secrets.token_urlsafe(32))
    weak = token_problem(token) if token is not None else None
    if weak:
        say(f"error: SESSION_LEDGER_CONSOLE_TOKEN is too weak: {weak}")
        return 2
    policy = Policy(
        token=token,
        operator=operator,
        trust_header=args.trust_header,
        public_origin=args.public_origin,
        secure_cookie=bool(args.public_origin and args.public_origin.startswith("https://")),
        trusted_proxies=tuple(args.trusted_proxy),
        session_idle=args.session_idle,
        session_lifetime=args.session_lifetime,
        max_sessions=args.max_sessions,
    )
    try:
        trusted_networks(policy)
        if args.public_origin:
            OwnAddresses.of(policy)
    except ValueError as e:
        say(f"error: {e}")
        return 2
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    # Listening before the link is printed: a browser that opens it at once waits in the
    # backlog until the server accepts, rather than being refused.
    sock.listen(2048)
    port = sock.getsockname()[1]
    # The console answers only to its own address: it knows the port once the socket is bound.
    policy.listen = (args.host, port)
    try:
        app = create_app(args.db, policy, page_size=args.page_size)
    except LedgerError as e:
        say(f"error: {e}")
        return 1
    host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    where = app.state.console.location
    if token is not None:
        say(f"serving {where} for operator {operator}")
        print(f"http://{host}:{port}/?token={token}", flush=True)
    else:
        say(f"serving {where}; operators are named by the {args.trust_header} header")
        print(f"http://{host}:{port}/", flush=True)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2, proxy_headers=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
