-- V8: revocation events with an identifier.
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
-- This file has shipped once it is released: never edit it, add V9__*.sql instead.

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
