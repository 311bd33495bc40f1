-- V15: archives (docs/operations.md, "Archiving"; contract C42, and C3, C9, C19, C36 to C39 as
-- they now read; rule K1).
--
-- An archive moves what is over out of the live ledger into a file of its own, which verifies
-- alone. Two kinds of rows leave:
--   * the trail's oldest rows, up to the size of a signed checkpoint (the archive's
--     boundary): audit rows, the checkpoints they record, the decision log's batches they
--     name with those batches' records, and the audit tree's nodes that no proof past the
--     boundary needs;
--   * ended trees: every session of a tree whose sessions have all ended, with their labels,
--     postures, patterns and scopes.
--
-- What stays is what keeps the ledger correct:
--   * `archives`, one row per archive: its file, the file's SHA-256, and the boundary (the
--     size and the chain hash of its last row), where `verify` now starts the chain;
--   * `archived_sessions`, one compact row per archived session, so that its id is never used
--     again (C2) and `state` can say where it went;
--   * the audit tree's frontier at the boundary, from which it grows and proves on.
--
-- Rows leave only through the triggers below, each of which checks the `archives` row or the
-- `archived_sessions` row that an archive commits before it removes anything: an archive row
-- is written only once its file is written, synced and verified (the library does that), and
-- nothing past the boundary, nor any session that has not ended, can be removed. Removal runs
-- in batches after the archive row commits; a crash between two batches leaves rows that the
-- next archive run removes, each tree whole.
--
-- This file has shipped once it is released: never edit it, add V16__*.sql instead.

INSERT INTO audit_kinds (kind, meaning) VALUES
    ('archive.make', 'ended trees and the trail up to a signed checkpoint were written to an archive file, which verified, and now leave the live ledger; detail: {"archive", "file", "sha256", "trail_size", "trees", "sessions"}: its number, the file as named, the SHA-256 of its bytes, the boundary, and how many trees and sessions it took (docs/operations.md, "Archiving")');

CREATE TABLE archives (
    -- The archive's number: 1, 2, 3, ... in the order they were made.
    archive     INTEGER PRIMARY KEY NOT NULL CHECK (archive >= 1),
    -- The file, by its absolute path when it was written.
    file        TEXT NOT NULL CHECK (length(file) BETWEEN 1 AND 4096),
    -- SHA-256 of the file's bytes, 64 lower-case hex digits.
    sha256      TEXT NOT NULL CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    -- The boundary: the trail's rows 1 to trail_size are in this archive and those before it.
    -- The size of a signed checkpoint, or the previous archive's boundary when this one took
    -- trees only.
    trail_size  INTEGER NOT NULL CHECK (trail_size >= 0),
    -- The chain hash of row trail_size (the genesis hash for 0): the anchor `verify` starts from.
    trail_hash  TEXT NOT NULL CHECK (length(trail_hash) = 64 AND trail_hash NOT GLOB '*[^0-9a-f]*'),
    -- The decision log's last position in batches up to the boundary: positions 1 to log_size
    -- are in this archive and those before it, and the log goes on from the next.
    log_size    INTEGER NOT NULL CHECK (log_size >= 0),
    -- How many trees and sessions the file holds. Each tree leaves the live ledger whole, in a
    -- batch of its own; while `archived_sessions` counts fewer sessions for this archive, a
    -- run was stopped between two batches, and the next run finishes it.
    trees       INTEGER NOT NULL CHECK (trees >= 0),
    sessions    INTEGER NOT NULL CHECK (sessions >= trees),
    -- When the archive was made, UTC, and by whom.
    made_at     TEXT NOT NULL
                CHECK (made_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'),
    made_by     TEXT NOT NULL CHECK (length(made_by) BETWEEN 1 AND 64)
) STRICT;

CREATE TRIGGER archives_are_history_update
BEFORE UPDATE ON archives
BEGIN
    -- contract C42: an archive moves, and says where
    SELECT RAISE(ABORT, 'session-ledger: archives are history');
END;

CREATE TRIGGER archives_are_history_delete
BEFORE DELETE ON archives
BEGIN
    -- contract C42: an archive moves, and says where
    SELECT RAISE(ABORT, 'session-ledger: archives are history');
END;

-- The next number; a boundary that does not go back, and that is either the previous one
-- again or the size of a recorded checkpoint, whose last row's hash it holds; and the decision
-- log's last position in the batches up to it.
CREATE TRIGGER archives_follow_a_checkpoint
BEFORE INSERT ON archives
WHEN NEW.archive IS NOT coalesce((SELECT max(archive) FROM archives), 0) + 1
  OR NEW.log_size IS NOT coalesce(
       (SELECT max(seq) FROM decision_log WHERE batch <= NEW.trail_size),
       (SELECT log_size FROM archives WHERE archive = NEW.archive - 1), 0)
  OR NOT (
       (NEW.trail_size, NEW.trail_hash) IS
           (SELECT trail_size, trail_hash FROM archives WHERE archive = NEW.archive - 1)
    OR (NOT EXISTS (SELECT 1 FROM archives) AND NEW.trail_size = 0
        AND NEW.trail_hash = '0000000000000000000000000000000000000000000000000000000000000000')
    OR (NEW.trail_size > coalesce((SELECT max(trail_size) FROM archives), 0)
        AND EXISTS (SELECT 1 FROM checkpoints WHERE tree_size = NEW.trail_size)
        AND NEW.trail_hash IS (SELECT hash FROM audit WHERE seq = NEW.trail_size)))
BEGIN
    -- contract C42: an archive moves, and says where
    SELECT RAISE(ABORT, 'session-ledger: an archive''s boundary must be a signed checkpoint''s size, with its row''s hash, and never go back');
END;

CREATE TABLE archived_sessions (
    -- The archived session's id: never used again (C2).
    id       TEXT PRIMARY KEY NOT NULL
             CHECK (length(id) BETWEEN 1 AND 128
                    AND id GLOB '[A-Za-z0-9]*'
                    AND id NOT GLOB '*[^A-Za-z0-9._:-]*'),
    -- The root of its tree.
    tree     TEXT NOT NULL CHECK (length(tree) BETWEEN 1 AND 128),
    -- The archive that holds its rows.
    archive  INTEGER NOT NULL REFERENCES archives (archive)
) STRICT, WITHOUT ROWID;

-- An archive's sessions: how many of them have left, while a run finishes one.
CREATE INDEX archived_sessions_by_archive ON archived_sessions (archive);

CREATE TRIGGER archived_sessions_are_history_update
BEFORE UPDATE ON archived_sessions
BEGIN
    -- contract C42: an archive moves, and says where
    SELECT RAISE(ABORT, 'session-ledger: archived sessions are history');
END;

CREATE TRIGGER archived_sessions_are_history_delete
BEFORE DELETE ON archived_sessions
BEGIN
    -- contract C42: an archive moves, and says where
    SELECT RAISE(ABORT, 'session-ledger: archived sessions are history');
END;

-- Only a session that has ended is archived, once.
CREATE TRIGGER archived_sessions_have_ended
BEFORE INSERT ON archived_sessions
WHEN EXISTS (SELECT 1 FROM archived_sessions WHERE id = NEW.id)
  OR NOT EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id AND ended_at IS NOT NULL)
BEGIN
    -- contract C42: an archive moves, and says where
    SELECT RAISE(ABORT, 'session-ledger: only a session that has ended is archived, once');
END;

-- A label names the session it was copied from (`inherited_from`): removing a session looks
-- for labels that still name it, by this index, not by reading every label.
CREATE INDEX labels_by_source ON labels (inherited_from) WHERE inherited_from IS NOT NULL;

-- C2 now looks in both places an id can be.
DROP TRIGGER sessions_ids_never_reused;
CREATE TRIGGER sessions_ids_never_reused
BEFORE INSERT ON sessions
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id)
  OR EXISTS (SELECT 1 FROM archived_sessions WHERE id = NEW.id)
BEGIN
    -- contract C2: session ids are never reused
    SELECT RAISE(ABORT, 'session-ledger: session ids are never reused');
END;

DROP TRIGGER sessions_never_deleted;
CREATE TRIGGER sessions_leave_only_into_an_archive
BEFORE DELETE ON sessions
WHEN NOT EXISTS (SELECT 1 FROM archived_sessions WHERE id = OLD.id)
BEGIN
    -- contract C3: sessions leave only into an archive
    SELECT RAISE(ABORT, 'session-ledger: sessions are never deleted; end them instead (an archive moves ended trees out)');
END;

DROP TRIGGER labels_never_deleted;
CREATE TRIGGER labels_leave_only_into_an_archive
BEFORE DELETE ON labels
WHEN NOT EXISTS (SELECT 1 FROM archived_sessions WHERE id = OLD.session_id)
BEGIN
    -- contract C9: a label is written once and leaves only into an archive
    SELECT RAISE(ABORT, 'session-ledger: labels are never deleted (rule L1)');
END;

-- The trail's rows up to the boundary may leave; none after it.
DROP TRIGGER audit_is_append_only_delete;
CREATE TRIGGER audit_is_append_only_delete
BEFORE DELETE ON audit
WHEN OLD.seq > coalesce((SELECT max(trail_size) FROM archives), 0)
BEGIN
    -- contract C19: the audit trail is append-only
    SELECT RAISE(ABORT, 'session-ledger: the audit trail is append-only');
END;

DROP TRIGGER checkpoints_are_history_delete;
CREATE TRIGGER checkpoints_are_history_delete
BEFORE DELETE ON checkpoints
WHEN OLD.seq > coalesce((SELECT max(trail_size) FROM archives), 0)
BEGIN
    -- contract C37: checkpoints are history
    SELECT RAISE(ABORT, 'session-ledger: checkpoints are history');
END;

DROP TRIGGER decision_log_is_append_only_delete;
CREATE TRIGGER decision_log_is_append_only_delete
BEFORE DELETE ON decision_log
WHEN OLD.batch > coalesce((SELECT max(trail_size) FROM archives), 0)
BEGIN
    -- contract C39: the decision log grows in order
    SELECT RAISE(ABORT, 'session-ledger: the decision log is append-only');
END;

-- A record leaves once its position has left with its batch: a record still queued, or still
-- in the log, stays. (A record is queued by the statement that appends it and leaves the queue
-- only for the log.)
DROP TRIGGER decisions_are_append_only_delete;
CREATE TRIGGER decisions_are_append_only_delete
BEFORE DELETE ON decisions
WHEN EXISTS (SELECT 1 FROM decision_queue WHERE id = OLD.id)
  OR EXISTS (SELECT 1 FROM decision_log WHERE decision = OLD.id)
BEGIN
    -- contract C38: decision records never change
    SELECT RAISE(ABORT, 'session-ledger: decision records are append-only');
END;

-- A node leaves once its parent lies wholly within the boundary: no proof past the boundary
-- needs it. What stays of the archived part is its frontier, the roots of the largest whole
-- subtrees left of the boundary (a node whose parent reaches past it). Level 62 never leaves.
DROP TRIGGER audit_tree_is_append_only_delete;
CREATE TRIGGER audit_tree_is_append_only_delete
BEFORE DELETE ON audit_tree
WHEN OLD.level >= 62
  OR ((OLD.idx >> 1) + 1) << (OLD.level + 1) > coalesce((SELECT max(trail_size) FROM archives), 0)
BEGIN
    -- contract C36: the audit tree only grows
    SELECT RAISE(ABORT, 'session-ledger: the audit tree is append-only');
END;

-- The first leaf past the boundary follows the boundary, whose last leaf may have left.
DROP TRIGGER audit_tree_grows_in_order;
CREATE TRIGGER audit_tree_grows_in_order
BEFORE INSERT ON audit_tree
WHEN EXISTS (SELECT 1 FROM audit_tree WHERE level = NEW.level AND idx = NEW.idx)
  OR (NEW.level = 0 AND NEW.idx > 0
      AND NOT EXISTS (SELECT 1 FROM audit_tree WHERE level = 0 AND idx = NEW.idx - 1)
      AND NEW.idx IS NOT (SELECT max(trail_size) FROM archives))
  OR (NEW.level > 0
      AND (SELECT count(*) FROM audit_tree
            WHERE level = NEW.level - 1 AND idx IN (2 * NEW.idx, 2 * NEW.idx + 1)) < 2)
  OR NEW.idx + 1 > ((SELECT coalesce(max(seq), 0) FROM audit) >> NEW.level)
BEGIN
    -- contract C36: the audit tree only grows
    SELECT RAISE(ABORT, 'session-ledger: a tree node must extend the audit tree in order');
END;

-- The log goes on from the newest archive's last position once the positions before it left.
DROP TRIGGER decision_log_grows_in_order;
CREATE TRIGGER decision_log_grows_in_order
BEFORE INSERT ON decision_log
WHEN NEW.seq <> coalesce((SELECT max(seq) FROM decision_log),
                         (SELECT log_size FROM archives
                           WHERE archive = (SELECT max(archive) FROM archives)), 0) + 1
  OR NOT EXISTS (SELECT 1 FROM decision_queue WHERE id = NEW.decision)
  OR NOT EXISTS (SELECT 1 FROM audit WHERE seq = NEW.batch AND kind = 'decisions.integrate')
BEGIN
    -- contract C39: the decision log grows in order
    SELECT RAISE(ABORT, 'session-ledger: a decision must take the next position of the log, from the queue, in an integration batch');
END;

-- Where each archived session went, for `sqlite3`: the archive's file and when it was made.
CREATE VIEW archived AS
SELECT s.id, s.tree, a.archive, a.file, a.made_at
  FROM archived_sessions AS s JOIN archives AS a ON a.archive = s.archive;
