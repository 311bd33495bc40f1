"""The operator's console for session-ledger: a web application over the ``session_ledger``
binding (docs/console.md). ``create_app`` builds it; ``session-ledger-console`` runs it."""

from .app import create_app
from .gate import Policy

__all__ = ["create_app", "Policy"]
