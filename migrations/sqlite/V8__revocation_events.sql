-- V8: revocation events with an identifier, and an audit trail whose times never go back.
--
-- Revocation events. One revocation (a cascade, a local revoke, a global revoke) writes one
-- posture.revoke row per posture it removes, all in one transaction. Until this version nothing
-- tied those rows together: two cascades from the same root could only be told apart by their
-- time. From this version the library writes into each row's detail "revocation", the seq of
-- the event's first row, which every row of the event shares (the hash chain covers the
-- detail, so the identifier is as tamper-evident as the rest of the row). The view
-- `revocations` gains a column `revocation`. Rows written before this version have no
-- identifier in their detail; the view gives them the seq of the first row of their run: the
-- consecutive posture.revoke rows with the same time, actor, propagation and root, which are
-- the rows one event wrote (see docs/schema.md).
--
-- Time order. Listing the trail by time (Ledger::audit with since/until) finds the first row at
-- or after a time by a binary search over seq, which needs `at` never to decrease along seq.
-- The library writes it so (Ledger::write takes the later of the clock and the newest row's
-- time), but nothing held it for a row appended in the sqlite3 shell, and builds before that
-- rule wrote the clock as it was, so a clock stepped back left earlier times after later ones.
-- A trigger now refuses a row whose time is before its predecessor's, and `audit_time_order`
-- records from which seq the rows written before this version are in order, so that a listing
-- by time reads the rows before it (if any) in full instead of trusting a search there.
--
-- This file has shipped once it is released: never edit it, add V9__*.sql instead.

-------------------------------------------------------------------------------------------------
-- Time order.
-------------------------------------------------------------------------------------------------

-- One row: where the trail's times are known to be in order.
CREATE TABLE audit_time_order (
    -- Always 1: the table has exactly one row.
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    -- No audit row after this seq has a time before its predecessor's. 1, unless a row written
    -- before version 8 went back in time; then the seq of the last such row. From version 8 on
    -- the trigger audit_time_never_goes_back keeps every new row in order, so this never moves.
    ordered_from  INTEGER NOT NULL CHECK (ordered_from >= 1)
) STRICT;

-- The last row, if any, whose time is before its predecessor's (with `at` of the fixed-width
-- form the CHECK on audit.at requires, text order is time order).
INSERT INTO audit_time_order (id, ordered_from)
SELECT 1, coalesce(max(seq), 1)
  FROM (SELECT seq, at < lag(at) OVER (ORDER BY seq) AS goes_back FROM audit)
 WHERE goes_back;

-- The row is written by this migration only.
CREATE TRIGGER audit_time_order_is_fixed_insert
BEFORE INSERT ON audit_time_order
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: audit_time_order is fixed by migrations');
END;

CREATE TRIGGER audit_time_order_is_fixed_update
BEFORE UPDATE ON audit_time_order
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: audit_time_order is fixed by migrations');
END;

CREATE TRIGGER audit_time_order_is_fixed_delete
BEFORE DELETE ON audit_time_order
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: audit_time_order is fixed by migrations');
END;

-- A new row's time is not before the previous row's, and has the stored form. The form is the
-- CHECK on audit.at restated, so that `PRAGMA ignore_check_constraints = ON` cannot let in a
-- time whose text order is not its time order. The previous row is the one
-- audit_extends_the_chain has just read, so this costs no page more.
CREATE TRIGGER audit_time_never_goes_back
BEFORE INSERT ON audit
WHEN NEW.at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR NEW.at < (SELECT at FROM audit WHERE seq = NEW.seq - 1)
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: an audit row''s time cannot be before the previous row''s');
END;

-------------------------------------------------------------------------------------------------
-- Revocation events.
-------------------------------------------------------------------------------------------------

-- posture.revoke rows list one more detail key. The meanings are fixed by a trigger, which
-- steps aside for this.
DROP TRIGGER audit_kinds_are_fixed_update;
UPDATE audit_kinds
   SET meaning = 'a posture was revoked; detail: {"propagation": local|cascade|global, "revocation", "root", "posture", "source", "granted_on", "current"}'
 WHERE kind = 'posture.revoke';
CREATE TRIGGER audit_kinds_are_fixed_update
BEFORE UPDATE ON audit_kinds
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: audit kinds are fixed by migrations');
END;

-- Every posture revocation: which session lost what, in which propagation, from which root,
-- by whom and when, and which revocation event removed it (`revocation`: the seq of the
-- event's first row). A row written before version 8 has no "revocation" in its detail; it
-- gets the first seq of its run, the consecutive posture.revoke rows with the same time, actor,
-- propagation and root (seq minus the row's rank in that group is constant along a run).
DROP VIEW revocations;
CREATE VIEW revocations AS
WITH revokes AS (
    SELECT seq, at, actor, session_id, detail,
           json_extract(detail, '$.revocation') AS recorded,
           json_extract(detail, '$.propagation') AS propagation,
           json_extract(detail, '$.root') AS root
      FROM audit
     WHERE kind = 'posture.revoke'
),
runs AS (
    SELECT revokes.*,
           seq - row_number() OVER (PARTITION BY at, actor, propagation, root ORDER BY seq) AS run
      FROM revokes
)
SELECT seq, at, actor, session_id, propagation, root,
       json_extract(detail, '$.posture') AS posture,
       json_extract(detail, '$.source') AS source,
       json_extract(detail, '$.granted_on') AS granted_on,
       coalesce(recorded,
                min(seq) OVER (PARTITION BY at, actor, propagation, root, run)) AS revocation
  FROM runs;
