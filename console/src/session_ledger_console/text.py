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
