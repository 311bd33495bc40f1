-- session-ledger schema, version 2: authority. Postures (trust, trust_reads) that follow a
-- delegation, the grants that never do (command patterns, override scopes), and posture epochs.
--
-- Words (see docs/design.md):
--   posture  'trust' (tool calls are auto-approved) or 'trust_reads' (read-only commands are).
--            A created child gets its creator's posture at allocation (rules P1, P2); a spawned
--            child gets its parent's at its first read (P3).
--   grant    a command pattern or an override scope: judged against one session by an
--            operator, never inherited (P4).
--   epoch    the lifetime of one run of the embedding dashboard. Only postures of the current
--            epoch count (P5); a durable ledger carries them into each new epoch.
-- This file has shipped once it is released: never edit it, add V3__*.sql instead.

-------------------------------------------------------------------------------------------------
-- epochs: one row per run of the embedding dashboard. The current epoch is the highest.
-------------------------------------------------------------------------------------------------
CREATE TABLE epochs (
    -- 0 is the epoch a ledger starts in; each start adds one.
    epoch       INTEGER PRIMARY KEY CHECK (epoch >= 0),
    -- When it started.
    started_at  TEXT NOT NULL
                CHECK (started_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    -- Who started it ('migration' for epoch 0).
    started_by  TEXT NOT NULL CHECK (length(started_by) BETWEEN 1 AND 64),
    -- 1 when the postures of the previous epoch were carried into this one (durable postures),
    -- 0 when they lapsed.
    durable     INTEGER NOT NULL CHECK (durable IN (0, 1))
) STRICT;

INSERT INTO epochs (epoch, started_at, started_by, durable)
VALUES (0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), 'migration', 0);

CREATE TRIGGER epochs_are_history_update
BEFORE UPDATE ON epochs
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: epochs are history');
END;

CREATE TRIGGER epochs_are_history_delete
BEFORE DELETE ON epochs
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: epochs are history');
END;

-------------------------------------------------------------------------------------------------
-- postures: the posture each session holds, with where it came from. No row: no posture.
-- A revocation deletes the row; the audit trail keeps the history.
-------------------------------------------------------------------------------------------------
CREATE TABLE postures (
    -- The session holding the posture.
    session_id      TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id),
    -- 'trust': every tool call is approved; 'trust_reads': read-only commands are.
    posture         TEXT NOT NULL CHECK (posture IN ('trust', 'trust_reads')),
    -- 'granted' by an operator on this session, or 'inherited' from its creator.
    source          TEXT NOT NULL CHECK (source IN ('granted', 'inherited')),
    -- The operator whose grant this posture traces back to.
    granted_by      TEXT NOT NULL CHECK (length(granted_by) BETWEEN 1 AND 64),
    -- When that operator granted it.
    granted_at      TEXT NOT NULL
                    CHECK (granted_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    -- The session the operator granted it on (this session itself when 'granted').
    granted_on      TEXT NOT NULL REFERENCES sessions (id),
    -- For 'inherited': the creator it was copied from, at this session's allocation.
    inherited_from  TEXT REFERENCES sessions (id),
    -- When this session came to hold it: the grant, or the allocation that copied it.
    allocated_at    TEXT NOT NULL
                    CHECK (allocated_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    -- The delegation chain as a JSON array of ids: granted_on first, this session last.
    chain           TEXT NOT NULL CHECK (json_valid(chain) AND json_type(chain) = 'array'),
    -- The epoch it belongs to; it counts only while this is the current (highest) epoch.
    epoch           INTEGER NOT NULL REFERENCES epochs (epoch),
    CHECK ((source = 'granted') = (inherited_from IS NULL)),
    CHECK (source = 'inherited' OR granted_on = session_id)
) STRICT, WITHOUT ROWID;

-- Postures of one epoch: counted and carried over when the next epoch starts.
CREATE INDEX postures_by_epoch ON postures (epoch);

-- A posture row never changes except to be carried into a later epoch (durable postures): a
-- different level, source or chain is a new grant or a revocation, with its audit row.
CREATE TRIGGER postures_change_only_by_epoch
BEFORE UPDATE ON postures
WHEN NEW.session_id IS NOT OLD.session_id
  OR NEW.posture IS NOT OLD.posture
  OR NEW.source IS NOT OLD.source
  OR NEW.granted_by IS NOT OLD.granted_by
  OR NEW.granted_at IS NOT OLD.granted_at
  OR NEW.granted_on IS NOT OLD.granted_on
  OR NEW.inherited_from IS NOT OLD.inherited_from
  OR NEW.allocated_at IS NOT OLD.allocated_at
  OR NEW.chain IS NOT OLD.chain
  OR NEW.epoch < OLD.epoch
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: a posture only moves into a later epoch; grant or revoke instead');
END;

-- Rules P1 and P2: an inherited posture is exactly the posture the creator holds in the same
-- epoch at the moment the child is allocated, and comes from the child's own creator.
CREATE TRIGGER postures_inherit_only_what_the_creator_holds
BEFORE INSERT ON postures
WHEN NEW.source = 'inherited'
 AND (NEW.inherited_from IS NOT (SELECT created_by FROM sessions WHERE id = NEW.session_id)
      OR NOT EXISTS (SELECT 1 FROM postures AS c
                      WHERE c.session_id = NEW.inherited_from
                        AND c.posture = NEW.posture
                        AND c.epoch = NEW.epoch))
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: an inherited posture must be the creator''s own (rules P1, P2)');
END;

-------------------------------------------------------------------------------------------------
-- command_patterns: "this command is fine for this session". Never inherited (rule P4).
-------------------------------------------------------------------------------------------------
CREATE TABLE command_patterns (
    -- The session the operator judged.
    session_id  TEXT NOT NULL REFERENCES sessions (id),
    -- An exact command line, or a glob where '*' matches any run of characters; matched
    -- against the whole command line. No other character is special.
    pattern     TEXT NOT NULL CHECK (length(pattern) BETWEEN 1 AND 1024 AND instr(pattern, char(0)) = 0),
    -- Who added it, and when.
    added_by    TEXT NOT NULL CHECK (length(added_by) BETWEEN 1 AND 64),
    added_at    TEXT NOT NULL
                CHECK (added_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    PRIMARY KEY (session_id, pattern)
) STRICT, WITHOUT ROWID;

-------------------------------------------------------------------------------------------------
-- override_scopes: named, TTL-bounded grants, re-checked against the clock at every decision.
-- Never inherited and never turned into a posture (rule P4).
-------------------------------------------------------------------------------------------------
CREATE TABLE override_scopes (
    -- The session it was granted to.
    session_id  TEXT NOT NULL REFERENCES sessions (id),
    -- Its name: 1 to 64 characters from [A-Za-z0-9._:-], starting with a letter or digit.
    name        TEXT NOT NULL
                CHECK (length(name) BETWEEN 1 AND 64
                       AND name GLOB '[A-Za-z0-9]*'
                       AND name NOT GLOB '*[^A-Za-z0-9._:-]*'),
    -- Who granted it, and when.
    granted_by  TEXT NOT NULL CHECK (length(granted_by) BETWEEN 1 AND 64),
    granted_at  TEXT NOT NULL
                CHECK (granted_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    -- When it stops admitting anything.
    expires_at  TEXT NOT NULL
                CHECK (expires_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
                       AND expires_at > granted_at),
    -- When and by whom it was revoked before expiring; NULL otherwise.
    revoked_at  TEXT
                CHECK (revoked_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    revoked_by  TEXT CHECK (length(revoked_by) BETWEEN 1 AND 64),
    CHECK ((revoked_at IS NULL) = (revoked_by IS NULL)),
    PRIMARY KEY (session_id, name)
) STRICT, WITHOUT ROWID;

-------------------------------------------------------------------------------------------------
-- New audit kinds.
-------------------------------------------------------------------------------------------------
INSERT INTO audit_kinds (kind, meaning) VALUES
    ('posture.grant',   'an operator granted a posture; detail: {"posture", "previous"}'),
    ('posture.revoke',  'a posture was revoked; detail: {"propagation": local|cascade|global, "root", "posture", "source", "granted_on", "current"}'),
    ('epoch.start',     'a new posture epoch started; detail: {"epoch", "durable", "lapsed", "carried"}'),
    ('pattern.add',     'an operator allowed a command pattern for one session; detail: {"pattern"}'),
    ('pattern.remove',  'a command pattern was removed; detail: {"pattern"}'),
    ('scope.grant',     'an operator granted an override scope; detail: {"scope", "expires_at"}'),
    ('scope.revoke',    'an override scope was revoked before it expired; detail: {"scope", "expires_at"}');

-- From this version, an allocation records the posture it passed on, and ending a session ends
-- its spawned sub-agents. The meanings are fixed by a trigger, which steps aside for this.
DROP TRIGGER audit_kinds_are_fixed_update;
UPDATE audit_kinds
   SET meaning = 'a live session created a child; detail: {"creator", "depth", "inherited_trust", "inherited_trust_reads"}'
 WHERE kind = 'session.create';
UPDATE audit_kinds
   SET meaning = 'a create was refused by a bound (rule S2); detail: {"creator", "reason", "limit", ..., "inherited_trust": false, "inherited_trust_reads": false}'
 WHERE kind = 'session.create_refused';
UPDATE audit_kinds
   SET meaning = 'a spawned sub-agent id was first seen and recorded; detail: {"created_by", "depth", "inherited_trust", "inherited_trust_reads", "ended"}'
 WHERE kind = 'session.spawn';
UPDATE audit_kinds
   SET meaning = 'a session was ended and stays as a tombstone; detail: {} or, for a spawned sub-agent ended with its session, {"ended_with"}'
 WHERE kind = 'session.end';
CREATE TRIGGER audit_kinds_are_fixed_update
BEFORE UPDATE ON audit_kinds
BEGIN
    SELECT RAISE(ABORT, 'session-ledger: audit kinds are fixed by migrations');
END;

-------------------------------------------------------------------------------------------------
-- Views.
-------------------------------------------------------------------------------------------------

-- Live sessions holding a posture that counts now (current epoch), with the operator's grant
-- it traces back to and the delegation chain.
CREATE VIEW trusted_now AS
SELECT p.session_id, p.posture, p.source, p.granted_by, p.granted_at, p.granted_on,
       p.inherited_from, p.allocated_at, p.chain, p.epoch
  FROM postures AS p
  JOIN sessions AS s ON s.id = p.session_id
 WHERE s.ended_at IS NULL
   AND p.epoch = (SELECT max(epoch) FROM epochs);
