"""How values from the ledger are shown: always as text.

Jinja escapes every value it renders (autoescape is on for every template), so an id, an actor,
a pattern, a command line or an audit detail can never become markup. `visible` goes further for
the characters a browser would hide or act on: control characters (an escape sequence, a
carriage return that hides what comes before it), and the format characters that reorder text
(a right-to-left override that makes `exe.txt` out of `txt.exe`). Each is shown as its escape,
`\\x1b` or `\\u202e`, marked so that an operator sees that it is there.
"""

from __future__ import annotations

import json
import unicodedata
from datetime import datetime
from typing import Any, List, Optional

from markupsafe import Markup, escape


def _hidden(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn")


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
