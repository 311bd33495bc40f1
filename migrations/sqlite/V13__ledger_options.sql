-- V13: options an operator sets on the ledger itself, which every handle on it follows
-- (docs/agents.md, "Outside content"; rule G3).
--
-- One option so far: `untrusted_asks`. When it is 'on', a session whose label is untrusted (it,
-- or the ancestor it inherits its label from, read content from outside) is not approved by
-- `trust` for a call that is not read-only: the decision falls through to its patterns and
-- scopes, and asks if none admits the call. An option that was never set is 'off'.
--
-- Setting an option is an ordinary write under the write lock, with one `ledger.option` audit
-- row in the same transaction.
--
-- This file has shipped once it is released: never edit it, add V14__*.sql instead.

INSERT INTO audit_kinds (kind, meaning) VALUES
    ('ledger.option', 'an operator set an option of the ledger; detail: {"option", "value", "was"}: its name, ''on'' or ''off'', and what it was');

CREATE TABLE ledger_options (
    -- The option: the only name there is.
    name    TEXT PRIMARY KEY NOT NULL CHECK (name IN ('untrusted_asks')),
    -- 'on' or 'off'.
    value   TEXT NOT NULL CHECK (value IN ('on', 'off')),
    -- Who set it last, and when (UTC, YYYY-MM-DDTHH:MM:SS.sssZ).
    set_by  TEXT NOT NULL CHECK (length(set_by) BETWEEN 1 AND 64),
    set_at  TEXT NOT NULL
            CHECK (set_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
) STRICT, WITHOUT ROWID;
