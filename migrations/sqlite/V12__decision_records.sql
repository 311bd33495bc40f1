-- V12: every decision on the record (docs/audit.md, "Decision records"; docs/storage-contract.md,
-- C38 to C40; rules D1 and D2).
--
-- A decision the caller asks to record is one row of `decisions`, appended in a transaction of
-- its own that writes nothing else by hand: it never touches the audit chain, so it needs none
-- of the chain's order. (On SQLite every write still takes the file's one write lock for the
-- length of its commit; on PostgreSQL an append takes no lock another writer holds.) A trigger
-- puts each new record's id in `decision_queue`, the records not yet integrated.
--
-- Integration is the serialized step, in batches, inside an ordinary write transaction (which
-- holds the ledger's write lock): it takes the queued records in id order, gives each the next
-- position of `decision_log` (1, 2, 3, ... with no gap), takes them out of the queue, and
-- appends one `decisions.integrate` audit row whose detail holds the batch's first position,
-- its count, and the RFC 6962 Merkle root over the batch's leaves. That row is a leaf of the
-- audit tree, so the signed checkpoints cover every record integrated before them. A record
-- whose transaction commits late (its id allocated before another's that committed first) is
-- still in the queue at the next integration and takes a later position: nothing is skipped,
-- and positions follow integration, not ids.
--
-- This file has shipped once it is released: never edit it, add V13__*.sql instead.

INSERT INTO audit_kinds (kind, meaning) VALUES
    ('decisions.integrate', 'a batch of decision records was given positions in the decision log; detail: {"first", "count", "root"}: the first position, how many, and the RFC 6962 root over their leaves (docs/audit.md, "Decision records")');

CREATE TABLE decisions (
    -- The order records were appended in on this ledger. Not a position in the log: on an
    -- engine whose transactions commit out of id order, a later id can be integrated first.
    id            INTEGER PRIMARY KEY NOT NULL,
    -- The record's own id, which the caller gets back and can quote: 32 lower-case hex digits,
    -- the first 12 the milliseconds of its time (so new ids sort together), the rest random.
    record        TEXT NOT NULL UNIQUE
                  CHECK (length(record) = 32 AND record NOT GLOB '*[^0-9a-f]*'),
    -- When the decision was made, UTC.
    at            TEXT NOT NULL
                  CHECK (at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    -- The session asked about. No foreign key: an id the ledger does not know is recorded too
    -- (it asks), and a session may later be archived out of `sessions`.
    session_id    TEXT NOT NULL CHECK (length(session_id) BETWEEN 1 AND 128),
    -- The root of the session's tree when the decision was made (the session itself for a root
    -- or an unknown id): what a retention step archives by.
    tree          TEXT NOT NULL CHECK (length(tree) BETWEEN 1 AND 128),
    -- The tool asked about: NULL for a shell command line, its name otherwise (Read, WebFetch,
    -- mcp__github__get_issue).
    tool          TEXT CHECK (tool IS NULL OR length(tool) BETWEEN 1 AND 128),
    -- The command line, or the tool call's path or URL ('' for none), cut at 4096 bytes on a
    -- character boundary.
    input         TEXT NOT NULL CHECK (length(CAST(input AS BLOB)) <= 4096),
    -- The whole input's length in bytes, cut or not.
    input_bytes   INTEGER NOT NULL CHECK (input_bytes >= length(CAST(input AS BLOB))),
    -- SHA-256 of the whole input, 64 lower-case hex digits, when it was cut; NULL otherwise.
    input_sha256  TEXT CHECK (input_sha256 IS NULL
                              OR (length(input_sha256) = 64 AND input_sha256 NOT GLOB '*[^0-9a-f]*')),
    -- The answer.
    verdict       TEXT NOT NULL CHECK (verdict IN ('approve', 'ask', 'deny')),
    -- What decided, the reason's kind: a posture ('trust', 'trust_reads'), a grant ('pattern',
    -- 'tool_rule', 'scope'), or why nothing approved ('nothing', 'session_ended',
    -- 'unknown_session').
    authority     TEXT NOT NULL
                  CHECK (authority IN ('trust', 'trust_reads', 'pattern', 'tool_rule', 'scope',
                                       'nothing', 'session_ended', 'unknown_session')),
    -- The reason as a JSON object, byte for byte as the library wrote it: the posture and its
    -- chain to the grant, the pattern of each part, the scope, the classifier's verdict, or what
    -- asked (docs/audit.md lists the keys).
    reason        TEXT NOT NULL CHECK (json_valid(reason) AND json_type(reason) = 'object'),
    -- Who asked: an operator's or a program's name, as an audit row's actor.
    asked_by      TEXT NOT NULL CHECK (length(asked_by) BETWEEN 1 AND 64),
    -- The agent's id for the tool call, when it gave one (Claude Code's tool_use_id).
    tool_use_id   TEXT CHECK (tool_use_id IS NULL OR length(tool_use_id) BETWEEN 1 AND 128),
    CHECK ((input_sha256 IS NULL) = (input_bytes = length(CAST(input AS BLOB))))
) STRICT;

-- A session's decisions, newest first, a page at a time: the cost of a page, at any size.
CREATE INDEX decisions_by_session ON decisions (session_id, id);
-- A tree's decisions (the subtree of a root, and what a retention step takes).
CREATE INDEX decisions_by_tree ON decisions (tree, id);
-- Decisions in a time range.
CREATE INDEX decisions_by_time ON decisions (at);

-- A record is written once: an insert with the id or the record id of a stored record is
-- refused, `INSERT OR REPLACE` included, whose replace would otherwise delete the old row
-- without firing a delete trigger.
CREATE TRIGGER decisions_are_never_replaced
BEFORE INSERT ON decisions
WHEN EXISTS (SELECT 1 FROM decisions WHERE id = NEW.id)
  OR EXISTS (SELECT 1 FROM decisions WHERE record = NEW.record)
BEGIN
    -- contract C38: decision records never change
    SELECT RAISE(ABORT, 'session-ledger: decision records are append-only');
END;

CREATE TRIGGER decisions_are_append_only_update
BEFORE UPDATE ON decisions
BEGIN
    -- contract C38: decision records never change
    SELECT RAISE(ABORT, 'session-ledger: decision records are append-only');
END;

CREATE TRIGGER decisions_are_append_only_delete
BEFORE DELETE ON decisions
BEGIN
    -- contract C38: decision records never change
    SELECT RAISE(ABORT, 'session-ledger: decision records are append-only');
END;

-- The records appended and not yet integrated, by id. The only table here that loses rows:
-- integration takes them out, and only once they are in the log.
CREATE TABLE decision_queue (
    id  INTEGER PRIMARY KEY NOT NULL REFERENCES decisions (id)
) STRICT;

CREATE TRIGGER decisions_are_queued
AFTER INSERT ON decisions
BEGIN
    -- contract C40: every record is integrated
    INSERT INTO decision_queue (id) VALUES (NEW.id);
END;

-- Only a record the log does not hold yet waits: a queue row for a logged record would stop
-- every later integration on the log's key.
CREATE TRIGGER decision_queue_takes_only_what_is_not_logged
BEFORE INSERT ON decision_queue
WHEN EXISTS (SELECT 1 FROM decision_log WHERE decision = NEW.id)
BEGIN
    -- contract C40: every record is integrated
    SELECT RAISE(ABORT, 'session-ledger: a decision record already in the log does not wait in the queue');
END;

CREATE TRIGGER decision_queue_keeps_what_is_not_integrated
BEFORE DELETE ON decision_queue
WHEN NOT EXISTS (SELECT 1 FROM decision_log WHERE decision = OLD.id)
BEGIN
    -- contract C40: every record is integrated
    SELECT RAISE(ABORT, 'session-ledger: a decision record leaves the queue only once it is in the log');
END;

CREATE TRIGGER decision_queue_holds_new_records_only
BEFORE UPDATE ON decision_queue
BEGIN
    -- contract C40: every record is integrated
    SELECT RAISE(ABORT, 'session-ledger: the decision queue is changed only by appending and integrating');
END;

-- The decision log: each integrated record's position. Positions are 1, 2, 3, ... with no gap;
-- a batch's positions are consecutive and named by its decisions.integrate audit row.
CREATE TABLE decision_log (
    -- The record's position in the log, from 1.
    seq       INTEGER PRIMARY KEY NOT NULL CHECK (seq >= 1),
    -- The record.
    decision  INTEGER NOT NULL UNIQUE REFERENCES decisions (id),
    -- The decisions.integrate audit row of its batch.
    batch     INTEGER NOT NULL REFERENCES audit (seq)
) STRICT;

CREATE INDEX decision_log_by_batch ON decision_log (batch, seq);

CREATE TRIGGER decision_log_is_append_only_update
BEFORE UPDATE ON decision_log
BEGIN
    -- contract C39: the decision log grows in order
    SELECT RAISE(ABORT, 'session-ledger: the decision log is append-only');
END;

CREATE TRIGGER decision_log_is_append_only_delete
BEFORE DELETE ON decision_log
BEGIN
    -- contract C39: the decision log grows in order
    SELECT RAISE(ABORT, 'session-ledger: the decision log is append-only');
END;

-- The next position, of a record that is queued, in a batch that a decisions.integrate row
-- records.
CREATE TRIGGER decision_log_grows_in_order
BEFORE INSERT ON decision_log
WHEN NEW.seq <> coalesce((SELECT max(seq) FROM decision_log), 0) + 1
  OR NOT EXISTS (SELECT 1 FROM decision_queue WHERE id = NEW.decision)
  OR NOT EXISTS (SELECT 1 FROM audit WHERE seq = NEW.batch AND kind = 'decisions.integrate')
BEGIN
    -- contract C39: the decision log grows in order
    SELECT RAISE(ABORT, 'session-ledger: a decision must take the next position of the log, from the queue, in an integration batch');
END;

-- Every record with its position: `seq` and `batch` are NULL while it waits in the queue.
CREATE VIEW decision_records AS
SELECT d.id, d.record, d.at, d.session_id, d.tree, d.tool, d.input, d.input_bytes,
       d.input_sha256, d.verdict, d.authority, d.reason, d.asked_by, d.tool_use_id,
       l.seq, l.batch
  FROM decisions AS d
  LEFT JOIN decision_log AS l ON l.decision = d.id;
