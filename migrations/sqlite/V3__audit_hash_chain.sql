-- session-ledger schema, version 3: a hash chain over the audit trail (rule A3), so that an
-- edited, removed or truncated row is detected by anyone holding the ledger, with the stock
-- sqlite3 shell alone (it has sha3()); see docs/audit.md.
--
-- Each row carries its predecessor's hash and its own:
--
--   hash = lower(hex(sha3(prev_hash || '|' || seq || '|' || F(at) || F(actor) || F(kind)
--                         || F(session_id) || F(detail), 256)))
--   F(x) = length(CAST(x AS BLOB)) || ':' || x || '|'      (a NULL session_id is '-|')
--
-- Every field is length-prefixed in bytes, so no two rows encode alike. The first row's
-- prev_hash is 64 zeros. The library extends the chain in the transaction of the change it
-- records; writes are serialized, so the chain never forks.
-- This file has shipped once it is released: never edit it, add V4__*.sql instead.

-- The previous row's hash (64 zeros for the first row).
ALTER TABLE audit ADD COLUMN prev_hash TEXT NOT NULL DEFAULT '';
-- SHA3-256 of prev_hash and this row's canonical encoding, as 64 lower-case hex digits.
ALTER TABLE audit ADD COLUMN hash TEXT NOT NULL DEFAULT '';

-- Chain the rows written before this version, in order. Updating audit rows is forbidden, so
-- the trigger that forbids it steps aside for this one statement and is put back unchanged.
DROP TRIGGER audit_is_append_only_update;

WITH RECURSIVE chain (seq, prev_hash, hash) AS (
    SELECT 0, NULL, '0000000000000000000000000000000000000000000000000000000000000000'
    UNION ALL
    SELECT a.seq, chain.hash,
           lower(hex(sha3(chain.hash || '|' || a.seq || '|'
                          || length(CAST(a.at AS BLOB)) || ':' || a.at || '|'
                          || length(CAST(a.actor AS BLOB)) || ':' || a.actor || '|'
                          || length(CAST(a.kind AS BLOB)) || ':' || a.kind || '|'
                          || coalesce(length(CAST(a.session_id AS BLOB)) || ':' || a.session_id, '-') || '|'
                          || length(CAST(a.detail AS BLOB)) || ':' || a.detail || '|', 256)))
      FROM chain JOIN audit AS a ON a.seq = chain.seq + 1
)
UPDATE audit SET prev_hash = chain.prev_hash, hash = chain.hash
  FROM chain
 WHERE audit.seq = chain.seq;

CREATE TRIGGER audit_is_append_only_update
BEFORE UPDATE ON audit
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: the audit trail is append-only');
END;

-- A new row extends the chain: the next seq, the head's hash as prev_hash, a well-formed hash.
-- (Whether the hash is right is for the verifiers: session-ledger verify, or docs/audit.md.)
CREATE TRIGGER audit_extends_the_chain
BEFORE INSERT ON audit
WHEN NEW.seq IS NOT coalesce((SELECT max(seq) FROM audit), 0) + 1
  OR NEW.prev_hash IS NOT coalesce((SELECT hash FROM audit WHERE seq = NEW.seq - 1), '0000000000000000000000000000000000000000000000000000000000000000')
  OR length(NEW.hash) != 64
  OR NEW.hash GLOB '*[^0-9a-f]*'
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: an audit row must extend the hash chain');
END;

-------------------------------------------------------------------------------------------------
-- Views for auditors (docs/audit.md).
-------------------------------------------------------------------------------------------------

-- Each session's state now: its stored label (NULL while not materialized) and the posture
-- that counts now (NULL if none, or if it lapsed with an earlier epoch, or the session ended).
CREATE VIEW session_state AS
SELECT s.id, s.created_by, s.depth, s.origin, s.created_at, s.ended_at,
       l.taint, l.untrusted, l.materialized_how, l.inherited_from AS label_from,
       CASE WHEN s.ended_at IS NULL AND p.epoch = (SELECT max(epoch) FROM epochs)
            THEN p.posture END AS posture,
       CASE WHEN s.ended_at IS NULL AND p.epoch = (SELECT max(epoch) FROM epochs)
            THEN p.source END AS posture_source,
       CASE WHEN s.ended_at IS NULL AND p.epoch = (SELECT max(epoch) FROM epochs)
            THEN p.granted_by END AS granted_by,
       CASE WHEN s.ended_at IS NULL AND p.epoch = (SELECT max(epoch) FROM epochs)
            THEN p.granted_on END AS granted_on
  FROM sessions AS s
  LEFT JOIN labels AS l ON l.session_id = s.id
  LEFT JOIN postures AS p ON p.session_id = s.id;

-- Every posture revocation: which session lost what, in which propagation, from which root,
-- by whom and when.
CREATE VIEW revocations AS
SELECT seq, at, actor, session_id,
       json_extract(detail, '$.propagation') AS propagation,
       json_extract(detail, '$.root') AS root,
       json_extract(detail, '$.posture') AS posture,
       json_extract(detail, '$.source') AS source,
       json_extract(detail, '$.granted_on') AS granted_on
  FROM audit
 WHERE kind = 'posture.revoke';

-- Every create refused by a bound (rule S2): who tried, under which creator, and why.
CREATE VIEW refused_creations AS
SELECT seq, at, actor, session_id,
       json_extract(detail, '$.creator') AS creator,
       json_extract(detail, '$.reason') AS reason,
       json_extract(detail, '$.limit') AS "limit"
  FROM audit
 WHERE kind = 'session.create_refused';
