-- session-ledger schema, version 1: sessions and their lineage, labels, and the audit trail.
--
-- Read a ledger with the stock shell:   sqlite3 -readonly ledger.db
-- Conventions used throughout:
--   * every table is STRICT, every enum is a word checked by a CHECK constraint;
--   * times are UTC text 'YYYY-MM-DDTHH:MM:SS.sssZ' written by the library, so they sort as text;
--   * booleans are INTEGER 0 or 1;
--   * the rules are enforced by triggers as well as by the library, so they also hold for someone
--     editing the file in the sqlite3 shell.
-- This file has shipped once it is released: never edit it, add V2__*.sql instead.

-------------------------------------------------------------------------------------------------
-- sessions: one row per session the ledger has seen, ended or not. Ids are never reused.
-------------------------------------------------------------------------------------------------
CREATE TABLE sessions (
    -- Row number in the order the ledger first saw the session. Rows of one era sit together.
    seq         INTEGER PRIMARY KEY,
    -- The session id: 1 to 128 characters from [A-Za-z0-9._:-], starting with a letter or digit.
    id          TEXT NOT NULL UNIQUE
                CHECK (length(id) BETWEEN 1 AND 128
                       AND id GLOB '[A-Za-z0-9]*'
                       AND id NOT GLOB '*[^A-Za-z0-9._:-]*'),
    -- The id of the session that created (or spawned) this one; NULL for a root.
    created_by  TEXT REFERENCES sessions(id),
    -- 0 for a root; the creator's depth + 1 otherwise (trigger sessions_depth_follows_creator).
    depth       INTEGER NOT NULL CHECK (depth >= 0),
    -- How the session came to be:
    --   'root'    opened by an operator, no creator;
    --   'created' made through the ledger's create call by a live session;
    --   'spawned' a sub-<parent>-<n> id the ledger first saw when it was read.
    origin      TEXT NOT NULL CHECK (origin IN ('root', 'created', 'spawned')),
    -- When the ledger recorded the session.
    created_at  TEXT NOT NULL
                CHECK (created_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    -- When the session ended; NULL while it is live. An ended session stays as a tombstone.
    ended_at    TEXT
                CHECK (ended_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
                       AND ended_at >= created_at),
    -- A root has no creator and depth 0; every other session has both a creator and depth > 0.
    CHECK ((origin = 'root') = (created_by IS NULL)),
    CHECK ((created_by IS NULL) = (depth = 0))
) STRICT;

-- Children of a session, in creation order; also serves the per-creator creation-rate window.
CREATE INDEX sessions_by_creator ON sessions (created_by, created_at);

-- A new row must name an existing creator and sit exactly one level below it.
CREATE TRIGGER sessions_depth_follows_creator
BEFORE INSERT ON sessions
WHEN NEW.created_by IS NOT NULL
 AND NEW.depth IS NOT (SELECT depth + 1 FROM sessions WHERE id = NEW.created_by)
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: a session must be one level below an existing creator');
END;

-- Ids are never reused, not even through INSERT OR REPLACE.
CREATE TRIGGER sessions_ids_never_reused
BEFORE INSERT ON sessions
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id)
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: session ids are never reused');
END;

-- Who created whom, when and how never changes.
CREATE TRIGGER sessions_lineage_is_immutable
BEFORE UPDATE ON sessions
WHEN NEW.seq IS NOT OLD.seq
  OR NEW.id IS NOT OLD.id
  OR NEW.created_by IS NOT OLD.created_by
  OR NEW.depth IS NOT OLD.depth
  OR NEW.origin IS NOT OLD.origin
  OR NEW.created_at IS NOT OLD.created_at
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: a session''s lineage is immutable');
END;

-- An ended session stays ended, with the time it ended.
CREATE TRIGGER sessions_end_once
BEFORE UPDATE OF ended_at ON sessions
WHEN OLD.ended_at IS NOT NULL AND NEW.ended_at IS NOT OLD.ended_at
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: an ended session stays ended');
END;

-- Sessions are tombstoned by ending them, never deleted.
CREATE TRIGGER sessions_never_deleted
BEFORE DELETE ON sessions
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: sessions are never deleted; end them instead');
END;

-------------------------------------------------------------------------------------------------
-- labels: the information-flow label of each *materialized* session. A session without a row
-- here is not materialized yet: its label is its nearest materialized ancestor's, written on
-- first read (rule L2).
-------------------------------------------------------------------------------------------------
CREATE TABLE labels (
    -- The labelled session.
    session_id       TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id),
    -- The taint class, on the ordered lattice public < private < secret.
    taint            TEXT NOT NULL CHECK (taint IN ('public', 'private', 'secret')),
    -- 1 once the session has read untrusted data; never returns to 0.
    untrusted        INTEGER NOT NULL CHECK (untrusted IN (0, 1)),
    -- When the label was first written.
    materialized_at  TEXT NOT NULL
                     CHECK (materialized_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    -- How it was first written:
    --   'born'      a root, written with the default (private, trusted) when it was opened;
    --   'inherited' copied from the nearest materialized ancestor on first read or first raise.
    materialized_how TEXT NOT NULL CHECK (materialized_how IN ('born', 'inherited')),
    -- For 'inherited': the ancestor whose label was copied. NULL for 'born'.
    inherited_from   TEXT REFERENCES sessions (id),
    -- When the label was last raised; NULL if it never was.
    raised_at        TEXT
                     CHECK (raised_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    CHECK ((materialized_how = 'inherited') = (inherited_from IS NOT NULL))
) STRICT, WITHOUT ROWID;

-- Rule L1: labels are monotone. Neither the taint class nor the untrusted flag can go down.
CREATE TRIGGER labels_never_lower
BEFORE UPDATE ON labels
WHEN (CASE NEW.taint WHEN 'public' THEN 0 WHEN 'private' THEN 1 WHEN 'secret' THEN 2 END)
   < (CASE OLD.taint WHEN 'public' THEN 0 WHEN 'private' THEN 1 WHEN 'secret' THEN 2 END)
  OR NEW.untrusted < OLD.untrusted
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: labels only rise (rule L1)');
END;

-- Where a label came from is history, and history does not change.
CREATE TRIGGER labels_provenance_is_immutable
BEFORE UPDATE ON labels
WHEN NEW.session_id IS NOT OLD.session_id
  OR NEW.materialized_at IS NOT OLD.materialized_at
  OR NEW.materialized_how IS NOT OLD.materialized_how
  OR NEW.inherited_from IS NOT OLD.inherited_from
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: a label''s provenance is immutable');
END;

-- A label is written once (later changes are raises), not even through INSERT OR REPLACE,
-- which would otherwise lower it by deleting the old row.
CREATE TRIGGER labels_written_once
BEFORE INSERT ON labels
WHEN EXISTS (SELECT 1 FROM labels WHERE session_id = NEW.session_id)
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: a label is materialized once; raise it instead');
END;

-- Only a root is born, and it is born with the default (private, trusted).
CREATE TRIGGER labels_born_with_the_default
BEFORE INSERT ON labels
WHEN NEW.materialized_how = 'born'
 AND ((SELECT origin FROM sessions WHERE id = NEW.session_id) IS NOT 'root'
      OR NEW.taint IS NOT 'private' OR NEW.untrusted IS NOT 0)
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: only a root is born with a label, and with the default (private, trusted)');
END;

-- An inherited label is at least its source's and at least its creator's, and the creator must
-- be materialized first (rule L2): no label can be written below what its session inherits.
CREATE TRIGGER labels_inherit_faithfully
BEFORE INSERT ON labels
WHEN NEW.materialized_how = 'inherited'
      AND (NOT EXISTS (SELECT 1 FROM labels WHERE session_id = NEW.inherited_from)
           OR NOT EXISTS (SELECT 1 FROM labels
                           WHERE session_id = (SELECT created_by FROM sessions
                                                WHERE id = NEW.session_id))
           OR EXISTS (SELECT 1 FROM labels AS above
                       WHERE above.session_id IN (NEW.inherited_from,
                                                  (SELECT created_by FROM sessions
                                                    WHERE id = NEW.session_id))
                         AND ((CASE NEW.taint WHEN 'public' THEN 0 WHEN 'private' THEN 1
                                              WHEN 'secret' THEN 2 END)
                              < (CASE above.taint WHEN 'public' THEN 0 WHEN 'private' THEN 1
                                                  WHEN 'secret' THEN 2 END)
                              OR NEW.untrusted < above.untrusted)))
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: an inherited label cannot be lower than its source or its creator (rule L2)');
END;

-- Deleting a label would return the session to the default: that is lowering it.
CREATE TRIGGER labels_never_deleted
BEFORE DELETE ON labels
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: labels are never deleted (rule L1)');
END;

-------------------------------------------------------------------------------------------------
-- audit_kinds: what each value of audit.kind means. Later versions add rows here.
-------------------------------------------------------------------------------------------------
CREATE TABLE audit_kinds (
    -- The kind, '<subject>.<event>'.
    kind     TEXT PRIMARY KEY NOT NULL CHECK (kind GLOB '[a-z]*.[a-z_]*'),
    -- One line on what a row of this kind records and what its detail holds.
    meaning  TEXT NOT NULL
) STRICT, WITHOUT ROWID;

INSERT INTO audit_kinds (kind, meaning) VALUES
    ('session.root',           'an operator opened a root session; detail: {}'),
    ('session.create',         'a live session created a child; detail: {"creator", "depth"}'),
    ('session.create_refused', 'a create was refused by a bound (rule S2); detail: {"creator", "reason", "limit", ...}'),
    ('session.spawn',          'a spawned sub-agent id was first seen and recorded; detail: {"created_by", "depth"}'),
    ('session.end',            'a session was ended and stays as a tombstone; detail: {}'),
    ('label.inherit',          'a label was materialized from the nearest materialized ancestor (rule L2/L3); detail: {"from", "taint", "untrusted"}'),
    ('label.raise',            'a label was raised (rule L1); detail: {"before": {...}, "after": {...}}');

CREATE TRIGGER audit_kinds_are_fixed_update
BEFORE UPDATE ON audit_kinds
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: audit kinds are fixed by migrations');
END;

CREATE TRIGGER audit_kinds_are_fixed_delete
BEFORE DELETE ON audit_kinds
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: audit kinds are fixed by migrations');
END;

-------------------------------------------------------------------------------------------------
-- audit: append-only record of every change, written in the same transaction as the change.
-------------------------------------------------------------------------------------------------
CREATE TABLE audit (
    -- Position in the trail; rows are only ever appended.
    seq         INTEGER PRIMARY KEY,
    -- When the change committed (the time its transaction read the clock).
    at          TEXT NOT NULL
                CHECK (at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    -- Who made the change: an operator's name, or 'ledger' for writes the ledger makes itself
    -- (materializing a label on first read, recording a spawned sub-agent).
    actor       TEXT NOT NULL CHECK (length(actor) BETWEEN 1 AND 64),
    -- What happened; one of audit_kinds.kind.
    kind        TEXT NOT NULL REFERENCES audit_kinds (kind),
    -- Which session it happened to. For a refused create, the id that was refused (no row exists).
    session_id  TEXT CHECK (session_id IS NULL OR length(session_id) BETWEEN 1 AND 128),
    -- Everything else, as a JSON object; the keys per kind are listed in audit_kinds.meaning.
    detail      TEXT NOT NULL CHECK (json_valid(detail) AND json_type(detail) = 'object')
) STRICT;

CREATE INDEX audit_by_session ON audit (session_id, seq);
CREATE INDEX audit_by_kind ON audit (kind, seq);

-- The kind must be a known one even where foreign keys are off (the sqlite3 shell's default).
CREATE TRIGGER audit_kind_is_known
BEFORE INSERT ON audit
WHEN NOT EXISTS (SELECT 1 FROM audit_kinds WHERE kind = NEW.kind)
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: unknown audit kind');
END;

-- Append-only: rows are never replaced, updated or deleted.
CREATE TRIGGER audit_is_append_only_insert
BEFORE INSERT ON audit
WHEN EXISTS (SELECT 1 FROM audit WHERE seq = NEW.seq)
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: the audit trail is append-only');
END;

CREATE TRIGGER audit_is_append_only_update
BEFORE UPDATE ON audit
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: the audit trail is append-only');
END;

CREATE TRIGGER audit_is_append_only_delete
BEFORE DELETE ON audit
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: the audit trail is append-only');
END;

-------------------------------------------------------------------------------------------------
-- Views for people reading the ledger.
-------------------------------------------------------------------------------------------------

-- Every session with its path from its root ('root/child/grandchild') and its stored label
-- (taint and untrusted are NULL while the session is not materialized).
CREATE VIEW session_tree AS
WITH RECURSIVE tree (id, path) AS (
    SELECT id, id FROM sessions WHERE created_by IS NULL
    UNION ALL
    SELECT s.id, tree.path || '/' || s.id
      FROM sessions AS s JOIN tree ON s.created_by = tree.id
)
SELECT s.id, s.created_by, s.depth, s.origin, tree.path,
       s.created_at, s.ended_at,
       l.taint, l.untrusted, l.materialized_how, l.inherited_from
  FROM tree
  JOIN sessions AS s ON s.id = tree.id
  LEFT JOIN labels AS l ON l.session_id = s.id;

-- Sessions that have not ended.
CREATE VIEW live_sessions AS
SELECT id, created_by, depth, origin, created_at
  FROM sessions
 WHERE ended_at IS NULL;
