-- session-ledger schema on PostgreSQL, version 6: every live authority of a session in one
-- view, and a stop that can reach grants too (SQLite version 11; docs/schema.md, "Who may
-- approve what now").
--
-- A posture is not the only thing that approves: a live override scope approves every command
-- of its session, and a command pattern the lines it admits. Neither follows a delegation
-- (rule P4), so revoking postures, even down a whole tree, leaves them standing. An operator
-- who stops a tree must see them, and may revoke them in the same step: a cascade (or a local
-- or global revoke) can now also revoke the live scopes and remove the patterns of the live
-- sessions it reaches. Those rows are audited as scope.revoke and pattern.remove, with the
-- revocation event they belong to.
--
-- Run docs/postgres-roles.sql again after this upgrade: it grants the new view to the
-- application and auditor roles.
--
-- This file has shipped once it is released: never edit it, add V7__*.sql instead.

-- The scopes that may still approve: not revoked, by expiry. A global stop revokes those still
-- live at its time without reading the revoked ones, which only accumulate.
CREATE INDEX override_scopes_unrevoked ON override_scopes (expires_at) WHERE revoked_at IS NULL;

-- scope.revoke and pattern.remove rows written by a revocation name it. The meanings are fixed
-- by a trigger, which steps aside for this.
DROP TRIGGER audit_kinds_are_fixed_update ON audit_kinds;
UPDATE audit_kinds
   SET meaning = 'an override scope was revoked before it expired; detail: {"scope", "expires_at"}, and when a posture revocation reached it, {"propagation", "revocation", "root"}'
 WHERE kind = 'scope.revoke';
UPDATE audit_kinds
   SET meaning = 'a command pattern was removed; detail: {"pattern"}, and when a posture revocation reached it, {"propagation", "revocation", "root"}'
 WHERE kind = 'pattern.remove';
CREATE TRIGGER audit_kinds_are_fixed_update
BEFORE UPDATE ON audit_kinds
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: audit kinds are fixed by migrations');
COMMENT ON TRIGGER audit_kinds_are_fixed_update ON audit_kinds IS
    'session-ledger: what an audit kind means is fixed by migrations';

-- Everything that approves for a live session now, one row per authority:
--   authority   'trust' or 'trust_reads' (a posture of the current epoch), 'scope' (an override
--               scope not revoked and not expired: it approves every command), or 'pattern' (a
--               command pattern: it approves the lines it admits);
--   name        the scope's name or the pattern's text; NULL for a posture;
--   source      'granted' on this session, or 'inherited' along the delegation (postures only);
--   granted_by, granted_at   the operator and time of the grant behind it;
--   expires_at  when a scope stops approving; NULL otherwise;
--   granted_on  the session the operator granted it on (this one, but for an inherited posture);
--   chain       an inherited posture's delegation chain (JSON array), granted_on first.
-- A pattern stored under an older build's looser rules is listed although this build's decide
-- refuses it (`session-ledger pattern list` marks it). Scopes are compared with the server's
-- clock at the start of the reader's transaction (now()).
CREATE VIEW live_authority AS
SELECT p.session_id, p.posture AS authority, NULL::text AS name, p.source, p.granted_by,
       p.granted_at, NULL::timestamptz AS expires_at, p.granted_on, p.chain
  FROM postures AS p
  JOIN sessions AS s ON s.id = p.session_id
 WHERE s.ended_at IS NULL
   AND p.epoch = (SELECT max(epoch) FROM epochs)
UNION ALL
SELECT o.session_id, 'scope', o.name, 'granted', o.granted_by, o.granted_at, o.expires_at,
       o.session_id, NULL
  FROM override_scopes AS o
  JOIN sessions AS s ON s.id = o.session_id
 WHERE s.ended_at IS NULL
   AND o.revoked_at IS NULL
   AND o.expires_at > now()
UNION ALL
SELECT c.session_id, 'pattern', c.pattern, 'granted', c.added_by, c.added_at, NULL,
       c.session_id, NULL
  FROM command_patterns AS c
  JOIN sessions AS s ON s.id = c.session_id
 WHERE s.ended_at IS NULL;
COMMENT ON VIEW live_authority IS
    'session-ledger: everything that approves for a live session now: postures of the current epoch, live scopes, command patterns';
