-- session-ledger schema on PostgreSQL, version 7: every decision on the record, as SQLite's
-- version 12 (docs/audit.md, "Decision records"; docs/storage-contract.md, C38 to C40; rules D1
-- and D2). The same tables, columns, triggers and view by the same names, with a TRUNCATE
-- trigger for each table.
--
-- An append is one INSERT into `decisions`, in a transaction of its own that takes no lock
-- another writer holds: not the ledger's write lock (the audit chain's), and no row lock. A
-- statement trigger puts the new ids in `decision_queue`. Identity values are drawn before
-- commit, so two appenders may commit out of id order; that is why nothing here reads "the
-- records after id N". Integration, under the ledger's write lock, takes what the queue holds
-- (only committed rows are visible to it), gives each record the next position of
-- `decision_log`, takes it out of the queue, and appends one `decisions.integrate` audit row
-- with the batch's Merkle root. A record that commits after a later id was integrated is still
-- queued and gets the next position at the next integration: nothing is skipped.
--
-- Run docs/postgres-roles.sql again after this upgrade: it grants the new tables and view to
-- the application and auditor roles.
--
-- This file has shipped once it is released: never edit it, add V8__*.sql instead.

INSERT INTO audit_kinds (kind, meaning) VALUES
    ('decisions.integrate', 'a batch of decision records was given positions in the decision log; detail: {"first", "count", "root"}: the first position, how many, and the RFC 6962 root over their leaves (docs/audit.md, "Decision records")');

-- The root of a session's tree: `created_by` walked up, a key lookup per level; the id itself
-- when the ledger has no row for it. What an append records as a record's tree. PL/pgSQL, so
-- that a connection plans the walk once: a SQL function's body is planned again at every
-- statement that calls it (about 110 µs of each append, docs/performance.md).
CREATE FUNCTION session_tree_root(session text) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN coalesce((
        WITH RECURSIVE up (id, created_by) AS (
            SELECT s.id, s.created_by FROM sessions AS s WHERE s.id = session
            UNION ALL
            SELECT s.id, s.created_by FROM up JOIN sessions AS s ON s.id = up.created_by
        )
        SELECT up.id FROM up WHERE up.created_by IS NULL), session);
END
$$;
COMMENT ON FUNCTION session_tree_root(text) IS
    'session-ledger: the root of a session''s tree (the id itself when no session has it)';

CREATE TABLE decisions (
    -- The order records were appended in, drawn before commit: not a position in the log.
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The record's own id, which the caller gets back and can quote: 32 lower-case hex digits,
    -- the first 12 the milliseconds of its time (so new ids sort together), the rest random.
    record        text COLLATE "C" NOT NULL UNIQUE CHECK (record ~ '^[0-9a-f]{32}$'),
    -- When the decision was made. Hashed as the UTC text YYYY-MM-DDTHH:MM:SS.sssZ.
    at            timestamptz NOT NULL
                  CHECK (date_trunc('milliseconds', at) = at
                         AND at >= '0001-01-01 00:00:00+00' AND at < '10000-01-01 00:00:00+00'),
    -- The session asked about. No foreign key: an id the ledger does not know is recorded too
    -- (it asks), and a session may later be archived out of `sessions`.
    session_id    text COLLATE "C" NOT NULL CHECK (char_length(session_id) BETWEEN 1 AND 128),
    -- The root of the session's tree when the decision was made (the session itself for a root
    -- or an unknown id): what a retention step archives by.
    tree          text COLLATE "C" NOT NULL CHECK (char_length(tree) BETWEEN 1 AND 128),
    -- The tool asked about: NULL for a shell command line, its name otherwise.
    tool          text COLLATE "C" CHECK (tool IS NULL OR char_length(tool) BETWEEN 1 AND 128),
    -- The command line, or the tool call's path or URL ('' for none), cut at 4096 bytes on a
    -- character boundary.
    input         text NOT NULL CHECK (octet_length(input) <= 4096),
    -- The whole input's length in bytes, cut or not.
    input_bytes   bigint NOT NULL CHECK (input_bytes >= octet_length(input)),
    -- SHA-256 of the whole input, 64 lower-case hex digits, when it was cut; NULL otherwise.
    input_sha256  text COLLATE "C" CHECK (input_sha256 IS NULL OR input_sha256 ~ '^[0-9a-f]{64}$'),
    -- The answer.
    verdict       text COLLATE "C" NOT NULL CHECK (verdict IN ('approve', 'ask', 'deny')),
    -- What decided, the reason's kind.
    authority     text COLLATE "C" NOT NULL
                  CHECK (authority IN ('trust', 'trust_reads', 'pattern', 'tool_rule', 'scope',
                                       'nothing', 'session_ended', 'unknown_session')),
    -- The reason as a JSON object. Stored as text, byte for byte as the library wrote it and
    -- hashes it (jsonb would reorder and respace it).
    reason        text NOT NULL CHECK (json_typeof(reason::json) = 'object'),
    -- Who asked: an operator's or a program's name, as an audit row's actor.
    asked_by      text NOT NULL CHECK (char_length(asked_by) BETWEEN 1 AND 64),
    -- The agent's id for the tool call, when it gave one (Claude Code's tool_use_id).
    tool_use_id   text CHECK (tool_use_id IS NULL OR char_length(tool_use_id) BETWEEN 1 AND 128),
    CHECK ((input_sha256 IS NULL) = (input_bytes = octet_length(input)))
);
COMMENT ON TABLE decisions IS
    'session-ledger: every decision a caller asked to record (rule D1); append-only';

-- A session's decisions, newest first, a page at a time: the cost of a page, at any size.
CREATE INDEX decisions_by_session ON decisions (session_id, id);
-- A tree's decisions (the subtree of a root, and what a retention step takes).
CREATE INDEX decisions_by_tree ON decisions (tree, id);
-- Decisions in a time range.
CREATE INDEX decisions_by_time ON decisions (at);

CREATE TRIGGER decisions_are_append_only_update
BEFORE UPDATE ON decisions
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: decision records are append-only');
COMMENT ON TRIGGER decisions_are_append_only_update ON decisions IS
    'session-ledger: C38, a decision record never changes (an upsert''s DO UPDATE included)';

CREATE TRIGGER decisions_are_append_only_delete
BEFORE DELETE ON decisions
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: decision records are append-only');
COMMENT ON TRIGGER decisions_are_append_only_delete ON decisions IS
    'session-ledger: C38, a decision record is never deleted';

CREATE TRIGGER decisions_are_append_only_truncate
BEFORE TRUNCATE ON decisions
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: decision records are append-only');
COMMENT ON TRIGGER decisions_are_append_only_truncate ON decisions IS
    'session-ledger: C38, decision records are never emptied by TRUNCATE';

-- The records appended and not yet integrated, by id. The only table here that loses rows:
-- integration takes them out, and only once they are in the log.
CREATE TABLE decision_queue (
    id  bigint PRIMARY KEY REFERENCES decisions (id)
);
COMMENT ON TABLE decision_queue IS
    'session-ledger: the decision records not yet integrated into the decision log';

CREATE FUNCTION decisions_are_queued() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO decision_queue (id) SELECT id FROM new_records;
    RETURN NULL;
END
$$;
CREATE TRIGGER decisions_are_queued
AFTER INSERT ON decisions
REFERENCING NEW TABLE AS new_records
FOR EACH STATEMENT EXECUTE FUNCTION decisions_are_queued();
COMMENT ON TRIGGER decisions_are_queued ON decisions IS
    'session-ledger: C40, every new decision record waits in the queue until it is integrated';

-- Only a record the log does not hold yet waits: a queue row for a logged record would stop
-- every later integration on the log's key. A statement trigger over the new ids, which it
-- reads by key: it costs what the statement inserts.
CREATE FUNCTION decision_queue_takes_only_what_is_not_logged() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM new_ids AS n JOIN decision_log AS l ON l.decision = n.id) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: a decision record already in the log does not wait in the queue';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER decision_queue_takes_only_what_is_not_logged
AFTER INSERT ON decision_queue
REFERENCING NEW TABLE AS new_ids
FOR EACH STATEMENT EXECUTE FUNCTION decision_queue_takes_only_what_is_not_logged();
COMMENT ON TRIGGER decision_queue_takes_only_what_is_not_logged ON decision_queue IS
    'session-ledger: C40, a record the log holds is not queued again';

CREATE FUNCTION decision_queue_keeps_what_is_not_integrated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM decision_log WHERE decision = OLD.id) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: a decision record leaves the queue only once it is in the log';
    END IF;
    RETURN OLD;
END
$$;
CREATE TRIGGER decision_queue_keeps_what_is_not_integrated
BEFORE DELETE ON decision_queue
FOR EACH ROW EXECUTE FUNCTION decision_queue_keeps_what_is_not_integrated();
COMMENT ON TRIGGER decision_queue_keeps_what_is_not_integrated ON decision_queue IS
    'session-ledger: C40, a record leaves the queue only once the log holds it';

CREATE TRIGGER decision_queue_holds_new_records_only
BEFORE UPDATE ON decision_queue
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: the decision queue is changed only by appending and integrating');
COMMENT ON TRIGGER decision_queue_holds_new_records_only ON decision_queue IS
    'session-ledger: C40, a queued id never changes';

CREATE TRIGGER decision_queue_is_never_truncated
BEFORE TRUNCATE ON decision_queue
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: a decision record leaves the queue only once it is in the log');
COMMENT ON TRIGGER decision_queue_is_never_truncated ON decision_queue IS
    'session-ledger: C40, the queue is never emptied by TRUNCATE';

-- The decision log: each integrated record's position. Positions are 1, 2, 3, ... with no gap;
-- a batch's positions are consecutive and named by its decisions.integrate audit row.
CREATE TABLE decision_log (
    -- The record's position in the log, from 1.
    seq       bigint PRIMARY KEY CHECK (seq >= 1),
    -- The record.
    decision  bigint NOT NULL UNIQUE REFERENCES decisions (id),
    -- The decisions.integrate audit row of its batch.
    batch     bigint NOT NULL REFERENCES audit (seq)
);
COMMENT ON TABLE decision_log IS
    'session-ledger: the position of every integrated decision record; append-only, without gaps';

CREATE INDEX decision_log_by_batch ON decision_log (batch, seq);

CREATE TRIGGER decision_log_is_append_only_update
BEFORE UPDATE ON decision_log
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: the decision log is append-only');
COMMENT ON TRIGGER decision_log_is_append_only_update ON decision_log IS
    'session-ledger: C39, a position never changes (an upsert''s DO UPDATE included)';

CREATE TRIGGER decision_log_is_append_only_delete
BEFORE DELETE ON decision_log
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: the decision log is append-only');
COMMENT ON TRIGGER decision_log_is_append_only_delete ON decision_log IS
    'session-ledger: C39, a position is never deleted';

CREATE TRIGGER decision_log_is_append_only_truncate
BEFORE TRUNCATE ON decision_log
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: the decision log is append-only');
COMMENT ON TRIGGER decision_log_is_append_only_truncate ON decision_log IS
    'session-ledger: C39, the decision log is never emptied by TRUNCATE';

-- A statement's new positions, after they are in: they follow the positions before them with
-- no gap, each of a record that is still queued, each in a batch that a decisions.integrate
-- row records. Reads by keys only: cost in proportion to the batch.
CREATE FUNCTION decision_log_grows_in_order() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    first bigint;
    last bigint;
    n bigint;
BEGIN
    SELECT min(seq), max(seq), count(*) INTO first, last, n FROM new_positions;
    IF last - first + 1 <> n
       OR coalesce((SELECT max(seq) FROM decision_log WHERE seq < first), 0) <> first - 1
       OR (SELECT max(seq) FROM decision_log) <> last
       OR EXISTS (SELECT 1 FROM new_positions AS p
                   WHERE NOT EXISTS (SELECT 1 FROM decision_queue AS q WHERE q.id = p.decision)
                      OR NOT EXISTS (SELECT 1 FROM audit AS a
                                      WHERE a.seq = p.batch AND a.kind = 'decisions.integrate'))
    THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: a decision must take the next position of the log, from the queue, in an integration batch';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER decision_log_grows_in_order
AFTER INSERT ON decision_log
REFERENCING NEW TABLE AS new_positions
FOR EACH STATEMENT EXECUTE FUNCTION decision_log_grows_in_order();
COMMENT ON TRIGGER decision_log_grows_in_order ON decision_log IS
    'session-ledger: C39, a statement''s new positions extend the log without a gap, from the queue, in a batch';

-- Every record with its position: `seq` and `batch` are NULL while it waits in the queue.
CREATE VIEW decision_records AS
SELECT d.id, d.record, d.at, d.session_id, d.tree, d.tool, d.input, d.input_bytes,
       d.input_sha256, d.verdict, d.authority, d.reason, d.asked_by, d.tool_use_id,
       l.seq, l.batch
  FROM decisions AS d
  LEFT JOIN decision_log AS l ON l.decision = d.id;
COMMENT ON VIEW decision_records IS
    'session-ledger: every decision record with its position in the decision log (NULL while queued)';
