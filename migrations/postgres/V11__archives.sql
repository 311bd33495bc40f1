-- session-ledger schema on PostgreSQL, version 11: archives, as SQLite's version 15
-- (docs/operations.md, "Archiving"; contract C42, and C3, C9, C19, C36 to C39 as they now
-- read; rule K1). The same tables, columns, view and trigger names.
--
-- An archive moves what is over out of the live ledger into a file of its own (a SQLite file,
-- whatever the live engine), which verifies alone. Two kinds of rows leave: the trail's oldest
-- rows, up to the size of a signed checkpoint (the archive's boundary), with the checkpoints
-- they record, the decision log's batches they name and those batches' records, and the audit
-- tree's nodes that no proof past the boundary needs; and ended trees, every session of a tree
-- whose sessions have all ended, with their labels, postures, patterns and scopes.
--
-- What stays: `archives`, one row per archive, with its boundary (where `verify` now starts
-- the chain); `archived_sessions`, one compact row per archived session, so that its id is
-- never used again (C2); and the audit tree's frontier at the boundary.
--
-- Rows leave only through the triggers below, each of which checks the `archives` row or the
-- `archived_sessions` row that an archive commits before it removes anything. The trail's
-- tables are checked a statement at a time (the rows a statement removed, as a transition
-- table), the sessions' tables a row at a time. TRUNCATE stays refused everywhere. Archiving
-- deletes, which the application role of docs/postgres-roles.sql may not: it runs as the
-- tables' owner, as `init` does.
--
-- This file has shipped once it is released: never edit it, add V12__*.sql instead.

INSERT INTO audit_kinds (kind, meaning) VALUES
    ('archive.make', 'ended trees and the trail up to a signed checkpoint were written to an archive file, which verified, and now leave the live ledger; detail: {"archive", "file", "sha256", "trail_size", "trees", "sessions"}: its number, the file as named, the SHA-256 of its bytes, the boundary, and how many trees and sessions it took (docs/operations.md, "Archiving")');

CREATE TABLE archives (
    -- The archive's number: 1, 2, 3, ... in the order they were made.
    archive     bigint PRIMARY KEY CHECK (archive >= 1),
    -- The file, by its absolute path when it was written.
    file        text NOT NULL CHECK (length(file) BETWEEN 1 AND 4096),
    -- SHA-256 of the file's bytes, 64 lower-case hex digits.
    sha256      text COLLATE "C" NOT NULL CHECK (octet_length(sha256) = 64 AND sha256 !~ '[^0-9a-f]'),
    -- The boundary: the trail's rows 1 to trail_size are in this archive and those before it.
    trail_size  bigint NOT NULL CHECK (trail_size >= 0),
    -- The chain hash of row trail_size (the genesis hash for 0): the anchor `verify` starts from.
    trail_hash  text COLLATE "C" NOT NULL
                CHECK (octet_length(trail_hash) = 64 AND trail_hash !~ '[^0-9a-f]'),
    -- The decision log's last position in batches up to the boundary: positions 1 to log_size
    -- are in this archive and those before it, and the log goes on from the next.
    log_size    bigint NOT NULL CHECK (log_size >= 0),
    -- How many trees and sessions the file holds (see `archived_sessions`).
    trees       bigint NOT NULL CHECK (trees >= 0),
    sessions    bigint NOT NULL CHECK (sessions >= trees),
    -- When the archive was made, and by whom.
    made_at     timestamptz NOT NULL CHECK (date_trunc('milliseconds', made_at) = made_at),
    made_by     text NOT NULL CHECK (length(made_by) BETWEEN 1 AND 64)
);
COMMENT ON TABLE archives IS
    'session-ledger: every archive made, with its file and the boundary the live trail starts after; history';

CREATE TRIGGER archives_are_history_update
BEFORE UPDATE ON archives
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: archives are history');
COMMENT ON TRIGGER archives_are_history_update ON archives IS
    'session-ledger: C42, an archive row never changes';

CREATE TRIGGER archives_are_history_delete
BEFORE DELETE ON archives
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: archives are history');
COMMENT ON TRIGGER archives_are_history_delete ON archives IS
    'session-ledger: C42, an archive row is never deleted';

CREATE TRIGGER archives_are_history_truncate
BEFORE TRUNCATE ON archives
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: archives are history');
COMMENT ON TRIGGER archives_are_history_truncate ON archives IS
    'session-ledger: C42, the archives are never emptied by TRUNCATE';

-- The next number; a boundary that does not go back, and that is either the previous one
-- again or the size of a recorded checkpoint, whose last row's hash it holds.
CREATE FUNCTION archives_follow_a_checkpoint() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    last archives%ROWTYPE;
BEGIN
    SELECT * INTO last FROM archives ORDER BY archive DESC LIMIT 1;
    IF NEW.archive IS DISTINCT FROM coalesce(last.archive, 0) + 1
       OR NEW.log_size IS DISTINCT FROM coalesce(
            (SELECT max(seq) FROM decision_log WHERE batch <= NEW.trail_size), last.log_size, 0)
       OR NOT (
            (last.archive IS NOT NULL AND NEW.trail_size = last.trail_size
             AND NEW.trail_hash = last.trail_hash)
         OR (last.archive IS NULL AND NEW.trail_size = 0
             AND NEW.trail_hash = '0000000000000000000000000000000000000000000000000000000000000000')
         OR (NEW.trail_size > coalesce(last.trail_size, 0)
             AND EXISTS (SELECT 1 FROM checkpoints WHERE tree_size = NEW.trail_size)
             AND NEW.trail_hash IS NOT DISTINCT FROM
                 (SELECT hash FROM audit WHERE seq = NEW.trail_size))) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: an archive''s boundary must be a signed checkpoint''s size, with its row''s hash, and never go back';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER archives_follow_a_checkpoint
BEFORE INSERT ON archives
FOR EACH ROW EXECUTE FUNCTION archives_follow_a_checkpoint();
COMMENT ON TRIGGER archives_follow_a_checkpoint ON archives IS
    'session-ledger: C42, archives are numbered in order, each at a signed checkpoint''s size or the previous boundary';

CREATE TABLE archived_sessions (
    -- The archived session's id: never used again (C2).
    id       text COLLATE "C" PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
    -- The root of its tree.
    tree     text COLLATE "C" NOT NULL CHECK (length(tree) BETWEEN 1 AND 128),
    -- The archive that holds its rows.
    archive  bigint NOT NULL REFERENCES archives (archive)
);
COMMENT ON TABLE archived_sessions IS
    'session-ledger: one row per archived session: its tree and its archive; its id is never used again';

-- An archive's sessions: how many of them have left, while a run finishes one.
CREATE INDEX archived_sessions_by_archive ON archived_sessions (archive);

CREATE TRIGGER archived_sessions_are_history_update
BEFORE UPDATE ON archived_sessions
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: archived sessions are history');
COMMENT ON TRIGGER archived_sessions_are_history_update ON archived_sessions IS
    'session-ledger: C42, an archived session''s row never changes';

CREATE TRIGGER archived_sessions_are_history_delete
BEFORE DELETE ON archived_sessions
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: archived sessions are history');
COMMENT ON TRIGGER archived_sessions_are_history_delete ON archived_sessions IS
    'session-ledger: C42, an archived session''s row is never deleted';

CREATE TRIGGER archived_sessions_are_history_truncate
BEFORE TRUNCATE ON archived_sessions
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: archived sessions are history');
COMMENT ON TRIGGER archived_sessions_are_history_truncate ON archived_sessions IS
    'session-ledger: C42, the archived sessions are never emptied by TRUNCATE';

-- Only a session that has ended is archived (the key refuses it twice).
CREATE FUNCTION archived_sessions_have_ended() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id AND ended_at IS NOT NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: only a session that has ended is archived, once';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER archived_sessions_have_ended
BEFORE INSERT ON archived_sessions
FOR EACH ROW EXECUTE FUNCTION archived_sessions_have_ended();
COMMENT ON TRIGGER archived_sessions_have_ended ON archived_sessions IS
    'session-ledger: C42, only a session that has ended is archived';

-- A label names the session it was copied from (`inherited_from`): removing a session looks
-- for labels that still name it (the key's check), by this index, not by reading every label.
CREATE INDEX labels_by_source ON labels (inherited_from) WHERE inherited_from IS NOT NULL;

-- C2 now looks in both places an id can be.
CREATE OR REPLACE FUNCTION sessions_ids_never_reused() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id)
       OR EXISTS (SELECT 1 FROM archived_sessions WHERE id = NEW.id) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: session ids are never reused';
    END IF;
    RETURN NEW;
END
$$;

-- The row of a session, or of its label, leaves only once its archived_sessions row is in.
CREATE FUNCTION sessions_leave_only_into_an_archive() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM archived_sessions WHERE id = OLD.id) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001', MESSAGE = TG_ARGV[0];
    END IF;
    RETURN OLD;
END
$$;
CREATE FUNCTION labels_leave_only_into_an_archive() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM archived_sessions WHERE id = OLD.session_id) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001', MESSAGE = TG_ARGV[0];
    END IF;
    RETURN OLD;
END
$$;

DROP TRIGGER sessions_never_deleted ON sessions;
CREATE TRIGGER sessions_leave_only_into_an_archive
BEFORE DELETE ON sessions
FOR EACH ROW EXECUTE FUNCTION sessions_leave_only_into_an_archive('session-ledger: sessions are never deleted; end them instead (an archive moves ended trees out)');
COMMENT ON TRIGGER sessions_leave_only_into_an_archive ON sessions IS
    'session-ledger: C3, sessions are tombstoned by ending them; they leave only into an archive';

DROP TRIGGER labels_never_deleted ON labels;
CREATE TRIGGER labels_leave_only_into_an_archive
BEFORE DELETE ON labels
FOR EACH ROW EXECUTE FUNCTION labels_leave_only_into_an_archive('session-ledger: labels are never deleted (rule L1)');
COMMENT ON TRIGGER labels_leave_only_into_an_archive ON labels IS
    'session-ledger: rule L1, a deleted label would fall back to inheriting or the default; labels leave only into an archive';

-- The trail's tables: the rows a statement removed, none past the boundary. The argument
-- names the column that places a row on the trail.
CREATE FUNCTION ledger_leaves_only_up_to_the_boundary() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    boundary bigint := coalesce((SELECT max(trail_size) FROM archives), 0);
    past boolean;
BEGIN
    CASE TG_TABLE_NAME
    WHEN 'decision_log' THEN
        past := EXISTS (SELECT 1 FROM gone WHERE batch > boundary);
    ELSE
        past := EXISTS (SELECT 1 FROM gone WHERE seq > boundary);
    END CASE;
    IF past THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001', MESSAGE = TG_ARGV[0];
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER audit_is_append_only_delete ON audit;
CREATE TRIGGER audit_is_append_only_delete
AFTER DELETE ON audit
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT EXECUTE FUNCTION ledger_leaves_only_up_to_the_boundary('session-ledger: the audit trail is append-only');
COMMENT ON TRIGGER audit_is_append_only_delete ON audit IS
    'session-ledger: rule A3, an audit row is never deleted, but for the rows up to an archive''s boundary';

DROP TRIGGER checkpoints_are_history_delete ON checkpoints;
CREATE TRIGGER checkpoints_are_history_delete
AFTER DELETE ON checkpoints
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT EXECUTE FUNCTION ledger_leaves_only_up_to_the_boundary('session-ledger: checkpoints are history');
COMMENT ON TRIGGER checkpoints_are_history_delete ON checkpoints IS
    'session-ledger: C37, a recorded checkpoint is never deleted, but for those recorded up to an archive''s boundary';

DROP TRIGGER decision_log_is_append_only_delete ON decision_log;
CREATE TRIGGER decision_log_is_append_only_delete
AFTER DELETE ON decision_log
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT EXECUTE FUNCTION ledger_leaves_only_up_to_the_boundary('session-ledger: the decision log is append-only');
COMMENT ON TRIGGER decision_log_is_append_only_delete ON decision_log IS
    'session-ledger: C39, a position is never deleted, but for the batches up to an archive''s boundary';

-- A record leaves once its position has left with its batch: one still queued, or still in
-- the log, stays. A row trigger, before the keys that refer to it are checked, so that the
-- refusal says so.
CREATE FUNCTION decisions_leave_once_logged_out() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM decision_queue WHERE id = OLD.id)
       OR EXISTS (SELECT 1 FROM decision_log WHERE decision = OLD.id) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: decision records are append-only';
    END IF;
    RETURN OLD;
END
$$;
DROP TRIGGER decisions_are_append_only_delete ON decisions;
CREATE TRIGGER decisions_are_append_only_delete
BEFORE DELETE ON decisions
FOR EACH ROW EXECUTE FUNCTION decisions_leave_once_logged_out();
COMMENT ON TRIGGER decisions_are_append_only_delete ON decisions IS
    'session-ledger: C38, a decision record is never deleted, but once its batch left with an archive';

-- A node leaves once its parent lies wholly within the boundary: no proof past the boundary
-- needs it. Level 62 never leaves.
CREATE FUNCTION audit_tree_leaves_only_behind_the_frontier() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    boundary bigint := coalesce((SELECT max(trail_size) FROM archives), 0);
BEGIN
    IF EXISTS (SELECT 1 FROM gone
                WHERE level >= 62 OR ((idx >> 1) + 1) << (level + 1) > boundary) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: the audit tree is append-only';
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER audit_tree_is_append_only_delete ON audit_tree;
CREATE TRIGGER audit_tree_is_append_only_delete
AFTER DELETE ON audit_tree
REFERENCING OLD TABLE AS gone
FOR EACH STATEMENT EXECUTE FUNCTION audit_tree_leaves_only_behind_the_frontier();
COMMENT ON TRIGGER audit_tree_is_append_only_delete ON audit_tree IS
    'session-ledger: C36, a stored tree node is never deleted, but behind an archive''s frontier';

-- The first leaf past the boundary follows the boundary, whose last leaf may have left.
CREATE OR REPLACE FUNCTION audit_tree_grows_in_order() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    rows bigint := coalesce((SELECT max(seq) FROM audit), 0);
    boundary bigint := (SELECT max(trail_size) FROM archives);
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_nodes AS n
         WHERE (n.level = 0 AND n.idx > 0
                AND NOT EXISTS (SELECT 1 FROM audit_tree AS t
                                 WHERE t.level = 0 AND t.idx = n.idx - 1)
                AND n.idx IS DISTINCT FROM boundary)
            OR (n.level > 0
                AND (SELECT count(*) FROM audit_tree AS t
                      WHERE t.level = n.level - 1 AND t.idx IN (2 * n.idx, 2 * n.idx + 1)) < 2)
            OR n.idx + 1 > (rows >> n.level)
    ) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: a tree node must extend the audit tree in order';
    END IF;
    RETURN NULL;
END
$$;

-- The log goes on from the newest archive's last position once the positions before it left.
CREATE OR REPLACE FUNCTION decision_log_grows_in_order() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    first bigint;
    last bigint;
    n bigint;
    archived bigint := coalesce((SELECT log_size FROM archives
                                  WHERE archive = (SELECT max(archive) FROM archives)), 0);
BEGIN
    SELECT min(seq), max(seq), count(*) INTO first, last, n FROM new_positions;
    IF last - first + 1 <> n
       OR coalesce((SELECT max(seq) FROM decision_log WHERE seq < first), archived) <> first - 1
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

-- Where each archived session went, for `psql`: the archive's file and when it was made.
CREATE VIEW archived AS
SELECT s.id, s.tree, a.archive, a.file, a.made_at
  FROM archived_sessions AS s JOIN archives AS a ON a.archive = s.archive;
COMMENT ON VIEW archived IS
    'session-ledger: each archived session with its tree, its archive''s number and file, and when it was made';
