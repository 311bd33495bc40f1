-- session-ledger schema on PostgreSQL, version 1: the whole ledger as the SQLite ledger has it
-- after its version 8 (migrations/sqlite/V1 to V8), in one migration.
--
-- The same tables, columns, views and triggers, with the same names. Every rule the SQLite
-- triggers and CHECKs enforce is enforced here by PostgreSQL itself, for the library and for
-- someone typing in psql alike (docs/postgres.md, docs/schema.md). Conventions:
--   * times are timestamptz held to whole milliseconds, the precision the library stores;
--   * booleans are boolean;
--   * ids are text, checked to be 1 to 128 characters from [A-Za-z0-9._:-] starting with a
--     letter or digit, and compared byte by byte (COLLATE "C"), as SQLite compares them, so that
--     every listing ordered by id is in the same order on both engines;
--   * every enum is a word checked by a CHECK constraint;
--   * every trigger refuses with SQLSTATE SL001 and a message that starts with
--     'session-ledger:', the message of its SQLite counterpart. SL001 is the ledger's own code:
--     an error with it is the schema refusing a change that breaks a rule;
--   * triggers that only compare the row's own values test them in their WHEN clause and call
--     ledger_refuse(message); triggers that look at other rows have a function of their name.
-- Row-level BEFORE triggers see the rows an earlier row of the same statement wrote (a
-- first read writes a path of labels in one INSERT, each checked against the one above it).
--
-- This file has shipped once it is released: never edit it, add V2__*.sql instead.

-------------------------------------------------------------------------------------------------
-- Preconditions.
-------------------------------------------------------------------------------------------------

-- The audit hash covers the bytes of each text as the library wrote them (docs/audit.md). A
-- database in another encoding would store other bytes, or refuse some characters.
DO $$
BEGIN
    IF current_setting('server_encoding') <> 'UTF8' THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = format('session-ledger: a ledger needs a database in the UTF8 encoding, not %s',
                             current_setting('server_encoding'));
    END IF;
END
$$;

-- pgcrypto's digest(), so that an auditor can recompute the chain's SHA3-256 hashes with psql
-- alone (docs/postgres-verify.sql). A trusted extension since PostgreSQL 13: the database's
-- owner may create it.
CREATE EXTENSION IF NOT EXISTS pgcrypto;

-- pgcrypto offers the digests of the OpenSSL it was built with; SHA3 needs OpenSSL 1.1.1 or
-- later. Refuse here rather than leave a ledger that psql cannot verify.
DO $$
BEGIN
    IF encode(digest(convert_to('', 'UTF8'), 'sha3-256'), 'hex')
       <> 'a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a' THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: pgcrypto''s sha3-256 digest gives a wrong hash';
    END IF;
END
$$;

-------------------------------------------------------------------------------------------------
-- Helpers.
-------------------------------------------------------------------------------------------------

-- The trigger function of every trigger whose whole test is its WHEN clause: refuses the
-- change with the message given as the trigger's argument.
CREATE FUNCTION ledger_refuse() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'SL001', MESSAGE = TG_ARGV[0];
END
$$;
COMMENT ON FUNCTION ledger_refuse() IS
    'session-ledger: refuses a change, with SQLSTATE SL001 and the trigger''s argument as the message';

-- The rank of a taint class on the lattice public < private < secret; NULL outside it.
CREATE FUNCTION taint_rank(taint text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE taint WHEN 'public' THEN 0 WHEN 'private' THEN 1 WHEN 'secret' THEN 2 END
$$;
COMMENT ON FUNCTION taint_rank(text) IS
    'session-ledger: the rank of a taint class, public 0 < private 1 < secret 2; NULL outside the lattice';

-------------------------------------------------------------------------------------------------
-- sessions: one row per session the ledger has seen, ended or not. Ids are never reused.
-------------------------------------------------------------------------------------------------
CREATE TABLE sessions (
    -- The order in which the ledger recorded sessions; children and trees are listed in it.
    -- Numbered by PostgreSQL (a rolled-back create leaves a gap, which only the order sees).
    seq         bigint GENERATED ALWAYS AS IDENTITY NOT NULL UNIQUE,
    -- The session id, the key every walk of the tree searches.
    id          text COLLATE "C" PRIMARY KEY
                CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
    -- The id of the session that created (or spawned) this one; NULL for a root.
    created_by  text COLLATE "C" REFERENCES sessions (id),
    -- 0 for a root; the creator's depth + 1 otherwise (trigger sessions_depth_follows_creator).
    depth       integer NOT NULL CHECK (depth >= 0),
    -- How the session came to be:
    --   'root'    opened by an operator, no creator;
    --   'created' made through the ledger's create call by a live session;
    --   'spawned' a sub-<parent>-<n> id the ledger first saw when it was read.
    origin      text COLLATE "C" NOT NULL CHECK (origin IN ('root', 'created', 'spawned')),
    -- When the ledger recorded the session.
    created_at  timestamptz NOT NULL CHECK (date_trunc('milliseconds', created_at) = created_at),
    -- When the session ended; NULL while it is live. An ended session stays as a tombstone.
    ended_at    timestamptz CHECK (date_trunc('milliseconds', ended_at) = ended_at
                                   AND ended_at >= created_at),
    -- A root has no creator and depth 0; every other session has both a creator and depth > 0.
    CHECK ((origin = 'root') = (created_by IS NULL)),
    CHECK ((created_by IS NULL) = (depth = 0))
);
COMMENT ON TABLE sessions IS
    'session-ledger: one row per session the ledger has seen, ended or not; never deleted, ids never reused';

-- Children of a session, in creation order: the walks down the tree (subtrees, cascades,
-- previews) and the per-creator creation-rate window.
CREATE INDEX sessions_by_creator ON sessions (created_by, created_at);

-- Only the live created children: counting a creator's live children (rule S2, on every
-- create) reads at most that many entries, and from the index alone.
CREATE INDEX sessions_live_children ON sessions (created_by, origin, ended_at)
 WHERE origin = 'created' AND ended_at IS NULL;

CREATE FUNCTION sessions_depth_follows_creator() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.depth IS DISTINCT FROM (SELECT depth + 1 FROM sessions WHERE id = NEW.created_by) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: a session must be one level below an existing creator';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER sessions_depth_follows_creator
BEFORE INSERT ON sessions
FOR EACH ROW WHEN (NEW.created_by IS NOT NULL)
EXECUTE FUNCTION sessions_depth_follows_creator();
COMMENT ON TRIGGER sessions_depth_follows_creator ON sessions IS
    'session-ledger: a new session names an existing creator and sits exactly one level below it';

-- The primary key refuses a second row with an id too; this refuses it with the ledger's
-- message, and before an ON CONFLICT clause could turn the insert into an update.
CREATE FUNCTION sessions_ids_never_reused() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: session ids are never reused';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER sessions_ids_never_reused
BEFORE INSERT ON sessions
FOR EACH ROW EXECUTE FUNCTION sessions_ids_never_reused();
COMMENT ON TRIGGER sessions_ids_never_reused ON sessions IS
    'session-ledger: an id already recorded is never recorded again, not even through INSERT ... ON CONFLICT';

CREATE TRIGGER sessions_lineage_is_immutable
BEFORE UPDATE ON sessions
FOR EACH ROW WHEN (NEW.seq IS DISTINCT FROM OLD.seq
                OR NEW.id IS DISTINCT FROM OLD.id
                OR NEW.created_by IS DISTINCT FROM OLD.created_by
                OR NEW.depth IS DISTINCT FROM OLD.depth
                OR NEW.origin IS DISTINCT FROM OLD.origin
                OR NEW.created_at IS DISTINCT FROM OLD.created_at)
EXECUTE FUNCTION ledger_refuse('session-ledger: a session''s lineage is immutable');
COMMENT ON TRIGGER sessions_lineage_is_immutable ON sessions IS
    'session-ledger: who created whom, when and how (seq, id, created_by, depth, origin, created_at) never changes';

-- Any update that changes a set ended_at, whichever columns it names.
CREATE TRIGGER sessions_end_once
BEFORE UPDATE ON sessions
FOR EACH ROW WHEN (OLD.ended_at IS NOT NULL AND NEW.ended_at IS DISTINCT FROM OLD.ended_at)
EXECUTE FUNCTION ledger_refuse('session-ledger: an ended session stays ended');
COMMENT ON TRIGGER sessions_end_once ON sessions IS
    'session-ledger: an ended session stays ended, with the time it ended';

CREATE TRIGGER sessions_never_deleted
BEFORE DELETE ON sessions
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: sessions are never deleted; end them instead');
COMMENT ON TRIGGER sessions_never_deleted ON sessions IS
    'session-ledger: sessions are tombstoned by ending them, never deleted';

-- TRUNCATE removes rows without firing row triggers: it has a statement trigger of its own.
CREATE TRIGGER sessions_never_truncated
BEFORE TRUNCATE ON sessions
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: sessions are never deleted; end them instead');
COMMENT ON TRIGGER sessions_never_truncated ON sessions IS
    'session-ledger: sessions are never deleted, not even all at once by TRUNCATE';

-------------------------------------------------------------------------------------------------
-- labels: the information-flow label of each *materialized* session. A session without a row
-- here is not materialized yet: its label is its nearest materialized ancestor's, written on
-- first read (rule L2).
-------------------------------------------------------------------------------------------------
CREATE TABLE labels (
    -- The labelled session.
    session_id       text COLLATE "C" PRIMARY KEY REFERENCES sessions (id),
    -- The taint class, on the ordered lattice public < private < secret.
    taint            text COLLATE "C" NOT NULL CHECK (taint IN ('public', 'private', 'secret')),
    -- true once the session has read untrusted data; never returns to false.
    untrusted        boolean NOT NULL,
    -- When the label was first written.
    materialized_at  timestamptz NOT NULL
                     CHECK (date_trunc('milliseconds', materialized_at) = materialized_at),
    -- How it was first written:
    --   'born'      a root, written with the default (private, trusted) when it was opened;
    --   'inherited' copied from the nearest materialized ancestor on first read or first raise.
    materialized_how text COLLATE "C" NOT NULL CHECK (materialized_how IN ('born', 'inherited')),
    -- For 'inherited': the ancestor whose label was copied. NULL for 'born'.
    inherited_from   text COLLATE "C" REFERENCES sessions (id),
    -- When the label was last raised; NULL if it never was.
    raised_at        timestamptz CHECK (date_trunc('milliseconds', raised_at) = raised_at),
    CHECK ((materialized_how = 'inherited') = (inherited_from IS NOT NULL))
);
COMMENT ON TABLE labels IS
    'session-ledger: the label of each materialized session; written once, only raised, never deleted';

-- Rule L1. A class outside the lattice cannot be written; as the old value (which the CHECK
-- keeps out) it would count as the top.
CREATE TRIGGER labels_never_lower
BEFORE UPDATE ON labels
FOR EACH ROW WHEN (taint_rank(NEW.taint) IS NULL
                OR NEW.untrusted IS NULL
                OR taint_rank(NEW.taint) < coalesce(taint_rank(OLD.taint), 2)
                OR NEW.untrusted < OLD.untrusted)
EXECUTE FUNCTION ledger_refuse('session-ledger: labels only rise, within the lattice (rule L1)');
COMMENT ON TRIGGER labels_never_lower ON labels IS
    'session-ledger: rule L1, a label never goes down: the class only rises on public < private < secret, untrusted never returns to false';

CREATE TRIGGER labels_provenance_is_immutable
BEFORE UPDATE ON labels
FOR EACH ROW WHEN (NEW.session_id IS DISTINCT FROM OLD.session_id
                OR NEW.materialized_at IS DISTINCT FROM OLD.materialized_at
                OR NEW.materialized_how IS DISTINCT FROM OLD.materialized_how
                OR NEW.inherited_from IS DISTINCT FROM OLD.inherited_from)
EXECUTE FUNCTION ledger_refuse('session-ledger: a label''s provenance is immutable');
COMMENT ON TRIGGER labels_provenance_is_immutable ON labels IS
    'session-ledger: where a label came from (session_id, materialized_at, materialized_how, inherited_from) never changes';

CREATE FUNCTION labels_written_once() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM labels WHERE session_id = NEW.session_id) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: a label is materialized once; raise it instead';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER labels_written_once
BEFORE INSERT ON labels
FOR EACH ROW EXECUTE FUNCTION labels_written_once();
COMMENT ON TRIGGER labels_written_once ON labels IS
    'session-ledger: a label is written once and then only raised, not even replaced through INSERT ... ON CONFLICT';

CREATE FUNCTION labels_born_with_the_default() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF (SELECT origin FROM sessions WHERE id = NEW.session_id) IS DISTINCT FROM 'root'
       OR NEW.taint IS DISTINCT FROM 'private'
       OR NEW.untrusted IS DISTINCT FROM false THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: only a root is born with a label, and with the default (private, trusted)';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER labels_born_with_the_default
BEFORE INSERT ON labels
FOR EACH ROW WHEN (NEW.materialized_how = 'born')
EXECUTE FUNCTION labels_born_with_the_default();
COMMENT ON TRIGGER labels_born_with_the_default ON labels IS
    'session-ledger: only a recorded root is born with a label, and with the default (private, trusted)';

-- Rule L2: the creator is materialized first, so a first label is never below what its
-- session inherits.
CREATE FUNCTION labels_inherit_faithfully() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    creator text;
BEGIN
    SELECT created_by INTO creator FROM sessions WHERE id = NEW.session_id;
    IF NOT EXISTS (SELECT 1 FROM labels WHERE session_id = NEW.inherited_from)
       OR NOT EXISTS (SELECT 1 FROM labels WHERE session_id = creator)
       OR EXISTS (SELECT 1 FROM labels AS above
                   WHERE above.session_id IN (NEW.inherited_from, creator)
                     AND (taint_rank(NEW.taint) < taint_rank(above.taint)
                          OR NEW.untrusted < above.untrusted)) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: an inherited label cannot be lower than its source or its creator (rule L2)';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER labels_inherit_faithfully
BEFORE INSERT ON labels
FOR EACH ROW WHEN (NEW.materialized_how = 'inherited')
EXECUTE FUNCTION labels_inherit_faithfully();
COMMENT ON TRIGGER labels_inherit_faithfully ON labels IS
    'session-ledger: rule L2, an inherited label needs its source and its creator materialized, and is no lower than either';

-- The table's CHECKs on the label's values, as a trigger of the SQLite ledger's name: there
-- they guard against CHECKs switched off, which PostgreSQL cannot do; here they give the
-- refusal the ledger's message.
CREATE TRIGGER labels_written_within_the_lattice
BEFORE INSERT ON labels
FOR EACH ROW WHEN (taint_rank(NEW.taint) IS NULL
                OR NEW.untrusted IS NULL
                OR NEW.materialized_how IS NULL
                OR NEW.materialized_how NOT IN ('born', 'inherited'))
EXECUTE FUNCTION ledger_refuse('session-ledger: a label is written within the lattice, as born or inherited (rule L1)');
COMMENT ON TRIGGER labels_written_within_the_lattice ON labels IS
    'session-ledger: rule L1, a label is written with a class of the lattice, a flag, and as born or inherited';

CREATE TRIGGER labels_never_deleted
BEFORE DELETE ON labels
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: labels are never deleted (rule L1)');
COMMENT ON TRIGGER labels_never_deleted ON labels IS
    'session-ledger: rule L1, a deleted label would fall back to inheriting or the default, which could be lower';

CREATE TRIGGER labels_never_truncated
BEFORE TRUNCATE ON labels
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: labels are never deleted (rule L1)');
COMMENT ON TRIGGER labels_never_truncated ON labels IS
    'session-ledger: rule L1, labels are never deleted, not even all at once by TRUNCATE';

-------------------------------------------------------------------------------------------------
-- epochs: one row per run of the embedding dashboard (rule P5). The current epoch is the
-- highest.
-------------------------------------------------------------------------------------------------
CREATE TABLE epochs (
    -- 0 is the epoch a ledger starts in; each start adds one.
    epoch       bigint PRIMARY KEY CHECK (epoch >= 0),
    -- When it started.
    started_at  timestamptz NOT NULL CHECK (date_trunc('milliseconds', started_at) = started_at),
    -- Who started it ('migration' for epoch 0).
    started_by  text NOT NULL CHECK (char_length(started_by) BETWEEN 1 AND 64),
    -- true when the postures of the previous epoch were carried into this one (durable
    -- postures), false when they lapsed.
    durable     boolean NOT NULL
);
COMMENT ON TABLE epochs IS
    'session-ledger: posture epochs (rule P5), the current one the highest; history, never changed';

-- Epoch 0, started by the migration at the database's clock.
INSERT INTO epochs (epoch, started_at, started_by, durable)
VALUES (0, date_trunc('milliseconds', now()), 'migration', false);

CREATE TRIGGER epochs_are_history_update
BEFORE UPDATE ON epochs
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: epochs are history');
COMMENT ON TRIGGER epochs_are_history_update ON epochs IS
    'session-ledger: an epoch, once started, never changes';

CREATE TRIGGER epochs_are_history_delete
BEFORE DELETE ON epochs
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: epochs are history');
COMMENT ON TRIGGER epochs_are_history_delete ON epochs IS
    'session-ledger: an epoch, once started, is never deleted';

CREATE TRIGGER epochs_are_history_truncate
BEFORE TRUNCATE ON epochs
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: epochs are history');
COMMENT ON TRIGGER epochs_are_history_truncate ON epochs IS
    'session-ledger: epochs are never deleted, not even all at once by TRUNCATE';

-------------------------------------------------------------------------------------------------
-- postures: the posture each session holds, with where it came from. No row: no posture.
-- A revocation deletes the row; the audit trail keeps the history.
-------------------------------------------------------------------------------------------------
CREATE TABLE postures (
    -- The session holding the posture.
    session_id      text COLLATE "C" PRIMARY KEY REFERENCES sessions (id),
    -- 'trust': every tool call is approved; 'trust_reads': read-only commands are.
    posture         text COLLATE "C" NOT NULL CHECK (posture IN ('trust', 'trust_reads')),
    -- 'granted' by an operator on this session, or 'inherited' from its creator.
    source          text COLLATE "C" NOT NULL CHECK (source IN ('granted', 'inherited')),
    -- The operator whose grant this posture traces back to.
    granted_by      text NOT NULL CHECK (char_length(granted_by) BETWEEN 1 AND 64),
    -- When that operator granted it.
    granted_at      timestamptz NOT NULL CHECK (date_trunc('milliseconds', granted_at) = granted_at),
    -- The session the operator granted it on (this session itself when 'granted').
    granted_on      text COLLATE "C" NOT NULL REFERENCES sessions (id),
    -- For 'inherited': the creator it was copied from, at this session's allocation.
    inherited_from  text COLLATE "C" REFERENCES sessions (id),
    -- When this session came to hold it: the grant, or the allocation that copied it.
    allocated_at    timestamptz NOT NULL
                    CHECK (date_trunc('milliseconds', allocated_at) = allocated_at),
    -- The delegation chain as a JSON array of ids: granted_on first, this session last. Not
    -- hashed, so stored as jsonb; `chain ? id` asks whether an id is on it.
    chain           jsonb NOT NULL CHECK (jsonb_typeof(chain) = 'array'),
    -- The epoch it belongs to; it counts only while this is the current (highest) epoch.
    epoch           bigint NOT NULL REFERENCES epochs (epoch),
    CHECK ((source = 'granted') = (inherited_from IS NULL)),
    CHECK (source = 'inherited' OR granted_on = session_id)
);
COMMENT ON TABLE postures IS
    'session-ledger: the posture each session holds and where it came from; no row, no posture';

-- A different level, source or chain is a new grant or a revocation, each with its audit row:
-- a grant that replaces a posture deletes the old row and inserts the new one.
CREATE TRIGGER postures_change_only_by_epoch
BEFORE UPDATE ON postures
FOR EACH ROW WHEN (NEW.session_id IS DISTINCT FROM OLD.session_id
                OR NEW.posture IS DISTINCT FROM OLD.posture
                OR NEW.source IS DISTINCT FROM OLD.source
                OR NEW.granted_by IS DISTINCT FROM OLD.granted_by
                OR NEW.granted_at IS DISTINCT FROM OLD.granted_at
                OR NEW.granted_on IS DISTINCT FROM OLD.granted_on
                OR NEW.inherited_from IS DISTINCT FROM OLD.inherited_from
                OR NEW.allocated_at IS DISTINCT FROM OLD.allocated_at
                OR NEW.chain IS DISTINCT FROM OLD.chain
                OR NEW.epoch < OLD.epoch)
EXECUTE FUNCTION ledger_refuse('session-ledger: a posture only moves into a later epoch; grant or revoke instead');
COMMENT ON TRIGGER postures_change_only_by_epoch ON postures IS
    'session-ledger: a posture row never changes except to move into a later epoch (durable postures)';

-- Rules P1 and P2.
CREATE FUNCTION postures_inherit_only_what_the_creator_holds() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.inherited_from IS DISTINCT FROM (SELECT created_by FROM sessions WHERE id = NEW.session_id)
       OR NOT EXISTS (SELECT 1 FROM postures AS c
                       WHERE c.session_id = NEW.inherited_from
                         AND c.posture = NEW.posture
                         AND c.epoch = NEW.epoch) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: an inherited posture must be the creator''s own (rules P1, P2)';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER postures_inherit_only_what_the_creator_holds
BEFORE INSERT ON postures
FOR EACH ROW WHEN (NEW.source = 'inherited')
EXECUTE FUNCTION postures_inherit_only_what_the_creator_holds();
COMMENT ON TRIGGER postures_inherit_only_what_the_creator_holds ON postures IS
    'session-ledger: rules P1 and P2, an inherited posture comes from the session''s own creator, which holds the same posture in the same epoch';

-------------------------------------------------------------------------------------------------
-- command_patterns: "this command is fine for this session". Never inherited (rule P4).
-------------------------------------------------------------------------------------------------
CREATE TABLE command_patterns (
    -- The session the operator judged.
    session_id  text COLLATE "C" NOT NULL REFERENCES sessions (id),
    -- The pattern as the operator typed it (docs/patterns.md). 1 to 1024 characters, as in
    -- SQLite (the library also limits it to 1024 bytes); at most 2048 bytes, so that the key
    -- always fits a B-tree entry. A text holds no NUL character in PostgreSQL.
    pattern     text COLLATE "C" NOT NULL
                CHECK (char_length(pattern) BETWEEN 1 AND 1024 AND octet_length(pattern) <= 2048),
    -- Who added it, and when.
    added_by    text NOT NULL CHECK (char_length(added_by) BETWEEN 1 AND 64),
    added_at    timestamptz NOT NULL CHECK (date_trunc('milliseconds', added_at) = added_at),
    PRIMARY KEY (session_id, pattern)
);
COMMENT ON TABLE command_patterns IS
    'session-ledger: command patterns an operator allowed for one session; never inherited (rule P4)';

-------------------------------------------------------------------------------------------------
-- override_scopes: named, TTL-bounded grants, re-checked against the clock at every decision.
-- Never inherited and never turned into a posture (rule P4).
-------------------------------------------------------------------------------------------------
CREATE TABLE override_scopes (
    -- The session it was granted to.
    session_id  text COLLATE "C" NOT NULL REFERENCES sessions (id),
    -- Its name: 1 to 64 characters from [A-Za-z0-9._:-], starting with a letter or digit.
    name        text COLLATE "C" NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$'),
    -- Who granted it, and when.
    granted_by  text NOT NULL CHECK (char_length(granted_by) BETWEEN 1 AND 64),
    granted_at  timestamptz NOT NULL CHECK (date_trunc('milliseconds', granted_at) = granted_at),
    -- When it stops admitting anything.
    expires_at  timestamptz NOT NULL CHECK (date_trunc('milliseconds', expires_at) = expires_at
                                            AND expires_at > granted_at),
    -- When and by whom it was revoked before expiring; NULL otherwise.
    revoked_at  timestamptz CHECK (date_trunc('milliseconds', revoked_at) = revoked_at),
    revoked_by  text CHECK (char_length(revoked_by) BETWEEN 1 AND 64),
    CHECK ((revoked_at IS NULL) = (revoked_by IS NULL)),
    PRIMARY KEY (session_id, name)
);
COMMENT ON TABLE override_scopes IS
    'session-ledger: named override scopes with an expiry, re-checked at every decision; never inherited (rule P4)';

-------------------------------------------------------------------------------------------------
-- audit_kinds: what each value of audit.kind means. Later versions add rows here.
-------------------------------------------------------------------------------------------------
CREATE TABLE audit_kinds (
    -- The kind, '<subject>.<event>'.
    kind     text COLLATE "C" PRIMARY KEY CHECK (kind ~ '^[a-z][a-z_]*\.[a-z_]+$'),
    -- One line on what a row of this kind records and what its detail holds.
    meaning  text NOT NULL
);
COMMENT ON TABLE audit_kinds IS
    'session-ledger: the kinds of audit row and what each records; fixed by migrations';

-- The kinds and meanings of the SQLite ledger's version 8.
INSERT INTO audit_kinds (kind, meaning) VALUES
    ('session.root',           'an operator opened a root session; detail: {}'),
    ('session.create',         'a live session created a child; detail: {"creator", "depth", "inherited_trust", "inherited_trust_reads"}'),
    ('session.create_refused', 'a create was refused by a bound (rule S2); detail: {"creator", "reason", "limit", ..., "inherited_trust": false, "inherited_trust_reads": false}'),
    ('session.spawn',          'a spawned sub-agent id was first seen and recorded; detail: {"created_by", "depth", "inherited_trust", "inherited_trust_reads", "ended"}'),
    ('session.end',            'a session was ended and stays as a tombstone; detail: {} or, for a spawned sub-agent ended with its session, {"ended_with"}'),
    ('label.inherit',          'a label was materialized from the nearest materialized ancestor (rule L2/L3); detail: {"from", "taint", "untrusted"}'),
    ('label.raise',            'a label was raised (rule L1); detail: {"before": {...}, "after": {...}}'),
    ('posture.grant',          'an operator granted a posture; detail: {"posture", "previous"}'),
    ('posture.revoke',         'a posture was revoked; detail: {"propagation": local|cascade|global, "revocation", "root", "posture", "source", "granted_on", "current"}'),
    ('epoch.start',            'a new posture epoch started; detail: {"epoch", "durable", "lapsed", "carried"}'),
    ('pattern.add',            'an operator allowed a command pattern for one session; detail: {"pattern"}'),
    ('pattern.remove',         'a command pattern was removed; detail: {"pattern"}'),
    ('scope.grant',            'an operator granted an override scope; detail: {"scope", "expires_at"}'),
    ('scope.revoke',           'an override scope was revoked before it expired; detail: {"scope", "expires_at"}');

CREATE TRIGGER audit_kinds_are_fixed_update
BEFORE UPDATE ON audit_kinds
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: audit kinds are fixed by migrations');
COMMENT ON TRIGGER audit_kinds_are_fixed_update ON audit_kinds IS
    'session-ledger: what an audit kind means is fixed by migrations';

CREATE TRIGGER audit_kinds_are_fixed_delete
BEFORE DELETE ON audit_kinds
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: audit kinds are fixed by migrations');
COMMENT ON TRIGGER audit_kinds_are_fixed_delete ON audit_kinds IS
    'session-ledger: an audit kind is never deleted';

CREATE TRIGGER audit_kinds_are_fixed_truncate
BEFORE TRUNCATE ON audit_kinds
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: audit kinds are fixed by migrations');
COMMENT ON TRIGGER audit_kinds_are_fixed_truncate ON audit_kinds IS
    'session-ledger: audit kinds are never deleted, not even all at once by TRUNCATE';

-------------------------------------------------------------------------------------------------
-- audit: append-only record of every change, written in the same transaction as the change,
-- and a SHA3-256 hash chain over it (rule A3, docs/audit.md).
-------------------------------------------------------------------------------------------------
CREATE TABLE audit (
    -- Position in the trail: 1 for the first row, then each row the next number. Written by
    -- the library as the head's seq + 1, not drawn from a sequence: a rolled-back transaction
    -- must leave no gap in the chain, and two writers that read the same head both try the
    -- same seq, so the key lets one of them commit and refuses the other.
    seq         bigint PRIMARY KEY CHECK (seq >= 1),
    -- The operation's time: the later of the clock and the newest row's time, so times never go
    -- back along seq (audit_time_never_goes_back). It is hashed as the UTC text
    -- YYYY-MM-DDTHH:MM:SS.sssZ, so a year has four digits.
    at          timestamptz NOT NULL
                CHECK (date_trunc('milliseconds', at) = at
                       AND at >= '0001-01-01 00:00:00+00' AND at < '10000-01-01 00:00:00+00'),
    -- Who made the change: an operator's name, or 'ledger' for writes the ledger makes itself
    -- (materializing a label on first read, recording a spawned sub-agent).
    actor       text NOT NULL CHECK (char_length(actor) BETWEEN 1 AND 64),
    -- What happened; one of audit_kinds.kind.
    kind        text COLLATE "C" NOT NULL REFERENCES audit_kinds (kind),
    -- Which session it happened to. For a refused create, the id that was refused (no row
    -- exists, so no foreign key). NULL for rows about no session (epoch.start).
    session_id  text COLLATE "C" CHECK (session_id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
    -- Everything else, as a JSON object; the keys per kind are in audit_kinds.meaning. Stored as
    -- text, byte for byte as the library wrote and hashed it (jsonb would reorder and respace it).
    detail      text NOT NULL CHECK (json_typeof(detail::json) = 'object'),
    -- The previous row's hash; 64 zeros for the first row.
    prev_hash   text COLLATE "C" NOT NULL CHECK (prev_hash ~ '^[0-9a-f]{64}$'),
    -- SHA3-256 of prev_hash and this row's canonical encoding, as 64 lower-case hex digits.
    hash        text COLLATE "C" NOT NULL CHECK (hash ~ '^[0-9a-f]{64}$')
);
COMMENT ON TABLE audit IS
    'session-ledger: the append-only, hash-chained record of every change (rule A3); verify it with docs/postgres-verify.sql';

-- The history of one session or one subtree, a range of seq within it.
CREATE INDEX audit_by_session ON audit (session_id, seq);

CREATE FUNCTION audit_kind_is_known() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM audit_kinds WHERE kind = NEW.kind) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: unknown audit kind';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER audit_kind_is_known
BEFORE INSERT ON audit
FOR EACH ROW EXECUTE FUNCTION audit_kind_is_known();
COMMENT ON TRIGGER audit_kind_is_known ON audit IS
    'session-ledger: an audit row''s kind is one of audit_kinds';

CREATE FUNCTION audit_is_append_only_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM audit WHERE seq = NEW.seq) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: the audit trail is append-only';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER audit_is_append_only_insert
BEFORE INSERT ON audit
FOR EACH ROW EXECUTE FUNCTION audit_is_append_only_insert();
COMMENT ON TRIGGER audit_is_append_only_insert ON audit IS
    'session-ledger: rule A3, a row is never replaced, not even through INSERT ... ON CONFLICT';

CREATE TRIGGER audit_is_append_only_update
BEFORE UPDATE ON audit
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: the audit trail is append-only');
COMMENT ON TRIGGER audit_is_append_only_update ON audit IS
    'session-ledger: rule A3, an audit row is never updated';

CREATE TRIGGER audit_is_append_only_delete
BEFORE DELETE ON audit
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: the audit trail is append-only');
COMMENT ON TRIGGER audit_is_append_only_delete ON audit IS
    'session-ledger: rule A3, an audit row is never deleted';

CREATE TRIGGER audit_is_append_only_truncate
BEFORE TRUNCATE ON audit
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: the audit trail is append-only');
COMMENT ON TRIGGER audit_is_append_only_truncate ON audit IS
    'session-ledger: rule A3, the audit trail is never emptied by TRUNCATE';

-- The head is the last entry of the key's index, one descent. Whether the hash is right is for
-- the verifiers (session-ledger verify, docs/postgres-verify.sql).
CREATE FUNCTION audit_extends_the_chain() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    head_seq  bigint;
    head_hash text;
BEGIN
    SELECT seq, hash INTO head_seq, head_hash FROM audit ORDER BY seq DESC LIMIT 1;
    IF NEW.seq IS DISTINCT FROM coalesce(head_seq, 0) + 1
       OR NEW.prev_hash IS DISTINCT FROM coalesce(head_hash, repeat('0', 64))
       OR NEW.hash IS NULL
       OR NEW.hash !~ '^[0-9a-f]{64}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: an audit row must extend the hash chain';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER audit_extends_the_chain
BEFORE INSERT ON audit
FOR EACH ROW EXECUTE FUNCTION audit_extends_the_chain();
COMMENT ON TRIGGER audit_extends_the_chain ON audit IS
    'session-ledger: rule A3, a new row has the next seq, the head''s hash as prev_hash (64 zeros for the first) and a hash of 64 lower-case hex digits';

CREATE FUNCTION audit_time_never_goes_back() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.at < (SELECT at FROM audit WHERE seq = NEW.seq - 1) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: an audit row''s time cannot be before the previous row''s';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER audit_time_never_goes_back
BEFORE INSERT ON audit
FOR EACH ROW EXECUTE FUNCTION audit_time_never_goes_back();
COMMENT ON TRIGGER audit_time_never_goes_back ON audit IS
    'session-ledger: a new audit row''s time is not before the previous row''s, so a listing by time can search seq';

-------------------------------------------------------------------------------------------------
-- audit_time_order: one row, from which seq the trail's times are known to be in order.
-------------------------------------------------------------------------------------------------
CREATE TABLE audit_time_order (
    -- Always 1: the table has exactly one row.
    id            integer PRIMARY KEY CHECK (id = 1),
    -- No audit row after this seq has a time before its predecessor's. A ledger created on
    -- PostgreSQL has had audit_time_never_goes_back from its first row, so this is 1.
    ordered_from  bigint NOT NULL CHECK (ordered_from >= 1)
);
COMMENT ON TABLE audit_time_order IS
    'session-ledger: from which audit seq times are known to be in order; one row, fixed by migrations';

INSERT INTO audit_time_order (id, ordered_from) VALUES (1, 1);

CREATE TRIGGER audit_time_order_is_fixed_insert
BEFORE INSERT ON audit_time_order
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: audit_time_order is fixed by migrations');
COMMENT ON TRIGGER audit_time_order_is_fixed_insert ON audit_time_order IS
    'session-ledger: audit_time_order has the one row the migration wrote';

CREATE TRIGGER audit_time_order_is_fixed_update
BEFORE UPDATE ON audit_time_order
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: audit_time_order is fixed by migrations');
COMMENT ON TRIGGER audit_time_order_is_fixed_update ON audit_time_order IS
    'session-ledger: audit_time_order''s row never changes';

CREATE TRIGGER audit_time_order_is_fixed_delete
BEFORE DELETE ON audit_time_order
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: audit_time_order is fixed by migrations');
COMMENT ON TRIGGER audit_time_order_is_fixed_delete ON audit_time_order IS
    'session-ledger: audit_time_order''s row is never deleted';

CREATE TRIGGER audit_time_order_is_fixed_truncate
BEFORE TRUNCATE ON audit_time_order
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: audit_time_order is fixed by migrations');
COMMENT ON TRIGGER audit_time_order_is_fixed_truncate ON audit_time_order IS
    'session-ledger: audit_time_order''s row is never removed by TRUNCATE';

-------------------------------------------------------------------------------------------------
-- Views for people reading the ledger (docs/audit.md).
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
COMMENT ON VIEW session_tree IS
    'session-ledger: every session with its path from its root and its stored label';

-- Sessions that have not ended.
CREATE VIEW live_sessions AS
SELECT id, created_by, depth, origin, created_at
  FROM sessions
 WHERE ended_at IS NULL;
COMMENT ON VIEW live_sessions IS 'session-ledger: the sessions that have not ended';

-- Live sessions holding a posture that counts now (current epoch), with the operator's grant
-- it traces back to and the delegation chain.
CREATE VIEW trusted_now AS
SELECT p.session_id, p.posture, p.source, p.granted_by, p.granted_at, p.granted_on,
       p.inherited_from, p.allocated_at, p.chain, p.epoch
  FROM postures AS p
  JOIN sessions AS s ON s.id = p.session_id
 WHERE s.ended_at IS NULL
   AND p.epoch = (SELECT max(epoch) FROM epochs);
COMMENT ON VIEW trusted_now IS
    'session-ledger: live sessions holding a posture of the current epoch, with the grant behind it';

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
COMMENT ON VIEW session_state IS
    'session-ledger: each session''s stored label and the posture that counts now';

-- Every posture revocation: which session lost what, in which propagation, from which root,
-- by whom and when, and which revocation event removed it (`revocation`: the seq of the
-- event's first row, which the library writes into each row's detail). A row without it in
-- its detail gets the first seq of its run, the consecutive posture.revoke rows with the same
-- time, actor, propagation and root (seq minus the row's rank in that group is constant along
-- a run), as in the SQLite ledger's view. A "revocation" that is not a whole number counts as
-- missing.
CREATE VIEW revocations AS
WITH revokes AS (
    SELECT seq, at, actor, session_id, detail::jsonb AS d
      FROM audit
     WHERE kind = 'posture.revoke'
),
unpacked AS (
    SELECT seq, at, actor, session_id, d,
           CASE WHEN d ->> 'revocation' ~ '^[0-9]{1,18}$'
                THEN (d ->> 'revocation')::bigint END AS recorded,
           d ->> 'propagation' AS propagation,
           d ->> 'root' AS root
      FROM revokes
),
runs AS (
    SELECT unpacked.*,
           seq - row_number() OVER (PARTITION BY at, actor, propagation, root ORDER BY seq) AS run
      FROM unpacked
)
SELECT seq, at, actor, session_id, propagation, root,
       d ->> 'posture' AS posture,
       d ->> 'source' AS source,
       d ->> 'granted_on' AS granted_on,
       coalesce(recorded,
                min(seq) OVER (PARTITION BY at, actor, propagation, root, run)) AS revocation
  FROM runs;
COMMENT ON VIEW revocations IS
    'session-ledger: every posture revocation with its detail unpacked and the revocation event it belongs to';

-- Every create refused by a bound (rule S2): who tried, under which creator, and why.
CREATE VIEW refused_creations AS
SELECT seq, at, actor, session_id,
       d ->> 'creator' AS creator,
       d ->> 'reason' AS reason,
       CASE WHEN jsonb_typeof(d -> 'limit') = 'number' THEN (d ->> 'limit')::numeric END AS "limit"
  FROM (SELECT seq, at, actor, session_id, detail::jsonb AS d
          FROM audit
         WHERE kind = 'session.create_refused') AS refused;
COMMENT ON VIEW refused_creations IS
    'session-ledger: every create refused by a bound (rule S2), with creator, reason and limit';
