-- session-ledger schema on PostgreSQL, version 9: options an operator sets on the ledger
-- itself, as SQLite's version 13 (docs/agents.md, "Outside content"; rule G3).
--
-- One option so far: `untrusted_asks`. When it is 'on', a session whose label is untrusted (it,
-- or the ancestor it inherits its label from, read content from outside) is not approved by
-- `trust` for a call that is not read-only: the decision falls through to its patterns and
-- scopes, and asks if none admits the call. An option that was never set is 'off'.
--
-- Setting an option is an ordinary write under the write lock, with one `ledger.option` audit
-- row in the same transaction. Run docs/postgres-roles.sql again after this upgrade: it grants
-- the table to the application and auditor roles.
--
-- This file has shipped once it is released: never edit it, add V10__*.sql instead.

INSERT INTO audit_kinds (kind, meaning) VALUES
    ('ledger.option', 'an operator set an option of the ledger; detail: {"option", "value", "was"}: its name, ''on'' or ''off'', and what it was');

CREATE TABLE ledger_options (
    -- The option: the only name there is.
    name    text COLLATE "C" PRIMARY KEY CHECK (name IN ('untrusted_asks')),
    -- 'on' or 'off'.
    value   text COLLATE "C" NOT NULL CHECK (value IN ('on', 'off')),
    -- Who set it last, and when.
    set_by  text NOT NULL CHECK (char_length(set_by) BETWEEN 1 AND 64),
    set_at  timestamptz NOT NULL
            CHECK (date_trunc('milliseconds', set_at) = set_at
                   AND set_at >= '0001-01-01 00:00:00+00' AND set_at < '10000-01-01 00:00:00+00')
);
COMMENT ON TABLE ledger_options IS
    'session-ledger: options an operator set on the ledger (docs/agents.md); one never set is off';
