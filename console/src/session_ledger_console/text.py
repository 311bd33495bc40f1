"""How values from the ledger are shown: always as text.

Jinja escapes every value it renders (autoescape is on for every template), so an id, an actor,
a pattern, a command line or an audit detail can never become markup. `visible` goes further for
the characters a browser would hide or act on: control characters (an escape sequence, a
carriage return that hides what comes before it), the format characters that reorder text (a
right-to-left override that makes `exe.txt` out of `txt.exe`), the characters Unicode says to
draw as nothing (Default_Ignorable_Code_Point: zero-width spaces and joiners, the Hangul fillers
that make `npm\u3164test` look like `npm test`, variation selectors, tag characters), and the
spaces that look like a space and are not one (a no-break space). Each is shown as its escape,
`\\x1b` or `\\u202e`, marked so that an operator sees that it is there.

The properties come from the ``regex`` package's Unicode tables, not from a list kept here:
the standard library's ``unicodedata`` has the categories but not Default_Ignorable_Code_Point
(the Hangul filler is a letter, ``Lo``, by category).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import datetime
from typing import Any, List, Optional

import regex
from markupsafe import Markup, escape

#: What is shown as an escape: controls, format characters, surrogates, private use and
#: unassigned code points (the categories C*), line and paragraph separators, what Unicode says
#: to draw as nothing, and every white space but the space itself.
HIDDEN = regex.compile(
    r"(?V1)[\p{C}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}\p{Bidi_Control}\p{White_Space}--[\x20]]"
)


def _hidden(ch: str) -> bool:
    return HIDDEN.match(ch) is not None


def _escape_of(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(value: Any) -> Markup:
    """``value`` as escaped text, with hidden and reordering characters shown as escapes."""
    text = "" if value is None else str(value)
    out: List[Markup] = []
    run: List[str] = []
    for ch in text:
        if _hidden(ch):
            if run:
                out.append(escape("".join(run)))
                run = []
            out.append(Markup('<span class="ctl" title="a hidden character">{}</span>').format(_escape_of(ch)))
        else:
            run.append(ch)
    if run:
        out.append(escape("".join(run)))
    return Markup("").join(out)


def detail(value: Any) -> Markup:
    """An audit row's detail as compact JSON text, shown as `visible` shows text."""
    return visible(json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": ")))


def when(value: Optional[datetime]) -> str:
    """A time in UTC to the second, as the operator reads it."""
    if value is None:
        return ""
    return value.strftime("%Y-%m-%d %H:%M:%SZ")


BASE64URL = re.compile(r"[A-Za-z0-9_-]*\Z")


def b64(value: str) -> str:
    """``value``'s UTF-8 in base64url without padding: a form field that carries any text
    exactly, line breaks included, which a browser would otherwise rewrite."""
    return base64.urlsafe_b64encode(value.encode("utf-8")).decode("ascii").rstrip("=")


def unb64(encoded: str) -> Optional[str]:
    """The text `b64` encoded; ``None`` for anything else (another alphabet, padding, a length
    no encoding has, bytes that are not UTF-8, nothing)."""
    if not encoded or not BASE64URL.match(encoded) or len(encoded) % 4 == 1:
        return None
    try:
        raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
        return raw.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


# What approves a session, in the command line's words (`session-ledger authority ID`, the
# `still approve` lines of `revoke`), so that the console and the command line say the same.


def posture_words(p: Any) -> str:
    """``trust granted by alice``, or an inherited posture with its chain back to the grant;
    a lapsed one says so."""
    lapsed = "" if p.current else f", lapsed with epoch {p.epoch}"
    if p.source == "granted":
        return f"{p.level} granted by {p.granted_by}{lapsed}"
    return f"{p.level} inherited via {' > '.join(p.chain)} from {p.granted_by}'s grant on {p.granted_on}{lapsed}"


def approves_words(a: Any) -> str:
    """What approves for a session now, in a few words: ``every command``, ``read-only
    commands and the lines its patterns admit``, or ``nothing: every command asks``."""
    if a.approves_every_command():
        return "every command"
    what = []
    if a.live and a.posture is not None and a.posture.current and a.posture.level == "trust_reads":
        what.append("read-only commands")
    if a.live and any(p.refused is None for p in a.patterns):
        what.append("the lines its patterns admit")
    return " and ".join(what) if what else "nothing: every command asks"


def withheld_words(w: Any) -> str:
    """Why something a session holds approves nothing now."""
    if w.kind == "session_ended":
        return "the session has ended: every command asks"
    if w.kind == "lapsed_posture":
        return f"its posture lapsed with epoch {w.epoch} and counts no more"
    if w.kind == "refused_pattern":
        return f"pattern {json.dumps(w.pattern, ensure_ascii=False)} is refused by this version and admits nothing: {w.problem}"
    return "something it holds approves nothing (see the command line's --json authority)"


def grant_words(g: Any) -> str:
    """A standing grant as ``revoke`` lists it: ``scope hotfix (granted by bob, until T): every
    command`` or ``pattern "npm test" (added by bob)``."""
    if g.kind == "scope":
        return f"scope {g.name} (granted by {g.granted_by}, until {when(g.expires_at)}): every command"
    if g.kind == "pattern":
        return f"pattern {json.dumps(g.name, ensure_ascii=False)} (added by {g.granted_by})"
    return f"{g.kind} {g.name} (granted by {g.granted_by})"


def pattern_words(p: Any) -> str:
    """A command pattern as ``authority`` lists it: ``"npm test" (added by bob)``."""
    return f"{json.dumps(p.pattern, ensure_ascii=False)} (added by {p.added_by})"


def decision_why(d: Any) -> str:
    """What a recorded decision's authority was, in a few words, from its reason: the chain of
    a posture back to the grant (``via conductor > worker-1``), the pattern or tool rule that
    admitted it, the scope; empty when nothing admitted it."""
    reason = d.reason if isinstance(d.reason, dict) else {}
    kind = reason.get("kind")
    if kind in ("trust", "trust_reads"):
        posture = reason.get("posture")
        chain = posture.get("chain") if isinstance(posture, dict) else None
        if isinstance(chain, list) and chain:
            return "via " + " > ".join(str(link) for link in chain)
        return ""
    if kind == "pattern":
        return json.dumps(str(reason.get("pattern", "")), ensure_ascii=False)
    if kind == "tool_rule":
        return str(reason.get("rule", ""))
    if kind == "scope":
        return str(reason.get("scope", ""))
    return ""
