-- V9: every trigger names the item of the storage contract it enforces.
--
-- docs/storage-contract.md lists the invariants every storage engine enforces inside the
-- database itself, each under a stable id (C1, C2, ...) with the rule it serves, how this engine
-- enforces it and the test that proves it. Someone reading the schema in the sqlite3 shell
-- (`.schema`) sees what a trigger refuses but not which invariant it is there for, nor what a
-- second engine must enforce in its place. SQLite stores a comment inside CREATE TRIGGER as part
-- of the definition (a comment above it is not kept), so this migration drops every trigger and
-- creates it again with one line after BEGIN, `-- contract C<n>: <short words>`, naming its item.
--
-- Nothing else changes. Each definition is the one a version 8 ledger stores in sqlite_schema,
-- copied as it is there, and no row is read or written; tests/storage_contract.rs compares the
-- definitions with a version 8 ledger's, the comment line removed. The migration runs in one
-- transaction that holds the write lock, so no write can come between a trigger's DROP and its
-- CREATE. A trigger that a hand edit dropped from an older ledger is created again (IF EXISTS),
-- rather than leaving that ledger unable to upgrade.
--
-- This file has shipped once it is released: never edit it, add V10__*.sql instead.

-------------------------------------------------------------------------------------------------
-- sessions
-------------------------------------------------------------------------------------------------

DROP TRIGGER IF EXISTS sessions_depth_follows_creator;
CREATE TRIGGER sessions_depth_follows_creator
BEFORE INSERT ON sessions
WHEN NEW.created_by IS NOT NULL
 AND NEW.depth IS NOT (SELECT depth + 1 FROM sessions WHERE id = NEW.created_by)
BEGIN
    -- contract C6: a session sits one level below an existing creator
    SELECT RAISE(ABORT, 'session-ledger: a session must be one level below an existing creator');
END;

DROP TRIGGER IF EXISTS sessions_ids_never_reused;
CREATE TRIGGER sessions_ids_never_reused
BEFORE INSERT ON sessions
WHEN EXISTS (SELECT 1 FROM sessions WHERE id = NEW.id)
BEGIN
    -- contract C2: session ids are never reused
    SELECT RAISE(ABORT, 'session-ledger: session ids are never reused');
END;

DROP TRIGGER IF EXISTS sessions_lineage_is_immutable;
CREATE TRIGGER sessions_lineage_is_immutable
BEFORE UPDATE ON sessions
WHEN NEW.seq IS NOT OLD.seq
  OR NEW.id IS NOT OLD.id
  OR NEW.created_by IS NOT OLD.created_by
  OR NEW.depth IS NOT OLD.depth
  OR NEW.origin IS NOT OLD.origin
  OR NEW.created_at IS NOT OLD.created_at
BEGIN
    -- contract C7: lineage is immutable
    SELECT RAISE(ABORT, 'session-ledger: a session''s lineage is immutable');
END;

DROP TRIGGER IF EXISTS sessions_end_once;
CREATE TRIGGER sessions_end_once
BEFORE UPDATE OF ended_at ON sessions
WHEN OLD.ended_at IS NOT NULL AND NEW.ended_at IS NOT OLD.ended_at
BEGIN
    -- contract C4: an ended session stays ended
    SELECT RAISE(ABORT, 'session-ledger: an ended session stays ended');
END;

DROP TRIGGER IF EXISTS sessions_never_deleted;
CREATE TRIGGER sessions_never_deleted
BEFORE DELETE ON sessions
BEGIN
    -- contract C3: sessions are never deleted
    SELECT RAISE(ABORT, 'session-ledger: sessions are never deleted; end them instead');
END;

-------------------------------------------------------------------------------------------------
-- labels
-------------------------------------------------------------------------------------------------

DROP TRIGGER IF EXISTS labels_never_lower;
CREATE TRIGGER labels_never_lower
BEFORE UPDATE ON labels
WHEN NEW.taint IS NOT 'public' AND NEW.taint IS NOT 'private' AND NEW.taint IS NOT 'secret'
  OR NEW.untrusted IS NOT 0 AND NEW.untrusted IS NOT 1
  OR (CASE NEW.taint WHEN 'public' THEN 0 WHEN 'private' THEN 1 WHEN 'secret' THEN 2 END)
   < coalesce(CASE OLD.taint WHEN 'public' THEN 0 WHEN 'private' THEN 1 WHEN 'secret' THEN 2 END, 2)
  OR NEW.untrusted < OLD.untrusted
BEGIN
    -- contract C8: labels only rise
    SELECT RAISE(ABORT, 'session-ledger: labels only rise, within the lattice (rule L1)');
END;

DROP TRIGGER IF EXISTS labels_written_within_the_lattice;
CREATE TRIGGER labels_written_within_the_lattice
BEFORE INSERT ON labels
WHEN NEW.taint IS NOT 'public' AND NEW.taint IS NOT 'private' AND NEW.taint IS NOT 'secret'
  OR NEW.untrusted IS NOT 0 AND NEW.untrusted IS NOT 1
  OR NEW.materialized_how IS NOT 'born' AND NEW.materialized_how IS NOT 'inherited'
BEGIN
    -- contract C10: a label is written within the lattice
    SELECT RAISE(ABORT, 'session-ledger: a label is written within the lattice, as born or inherited (rule L1)');
END;

DROP TRIGGER IF EXISTS labels_provenance_is_immutable;
CREATE TRIGGER labels_provenance_is_immutable
BEFORE UPDATE ON labels
WHEN NEW.session_id IS NOT OLD.session_id
  OR NEW.materialized_at IS NOT OLD.materialized_at
  OR NEW.materialized_how IS NOT OLD.materialized_how
  OR NEW.inherited_from IS NOT OLD.inherited_from
BEGIN
    -- contract C13: where a label came from is immutable
    SELECT RAISE(ABORT, 'session-ledger: a label''s provenance is immutable');
END;

DROP TRIGGER IF EXISTS labels_written_once;
CREATE TRIGGER labels_written_once
BEFORE INSERT ON labels
WHEN EXISTS (SELECT 1 FROM labels WHERE session_id = NEW.session_id)
BEGIN
    -- contract C9: a label is written once and never deleted
    SELECT RAISE(ABORT, 'session-ledger: a label is materialized once; raise it instead');
END;

DROP TRIGGER IF EXISTS labels_born_with_the_default;
CREATE TRIGGER labels_born_with_the_default
BEFORE INSERT ON labels
WHEN NEW.materialized_how = 'born'
 AND ((SELECT origin FROM sessions WHERE id = NEW.session_id) IS NOT 'root'
      OR NEW.taint IS NOT 'private' OR NEW.untrusted IS NOT 0)
BEGIN
    -- contract C11: only a root is born, with the default label
    SELECT RAISE(ABORT, 'session-ledger: only a root is born with a label, and with the default (private, trusted)');
END;

DROP TRIGGER IF EXISTS labels_inherit_faithfully;
CREATE TRIGGER labels_inherit_faithfully
BEFORE INSERT ON labels
WHEN NEW.materialized_how = 'inherited'
      AND (NOT EXISTS (SELECT 1 FROM labels WHERE session_id = NEW.inherited_from)
           OR NOT EXISTS (SELECT 1 FROM labels
                           WHERE session_id = (SELECT created_by FROM sessions
                                                WHERE id = NEW.session_id))
           OR EXISTS (SELECT 1 FROM labels AS above
                       WHERE above.session_id IN (NEW.inherited_from,
                                                  (SELECT created_by FROM sessions
                                                    WHERE id = NEW.session_id))
                         AND ((CASE NEW.taint WHEN 'public' THEN 0 WHEN 'private' THEN 1
                                              WHEN 'secret' THEN 2 END)
                              < (CASE above.taint WHEN 'public' THEN 0 WHEN 'private' THEN 1
                                                  WHEN 'secret' THEN 2 END)
                              OR NEW.untrusted < above.untrusted)))
BEGIN
    -- contract C12: an inherited label is no lower than its source or creator
    SELECT RAISE(ABORT, 'session-ledger: an inherited label cannot be lower than its source or its creator (rule L2)');
END;

DROP TRIGGER IF EXISTS labels_never_deleted;
CREATE TRIGGER labels_never_deleted
BEFORE DELETE ON labels
BEGIN
    -- contract C9: a label is written once and never deleted
    SELECT RAISE(ABORT, 'session-ledger: labels are never deleted (rule L1)');
END;

-------------------------------------------------------------------------------------------------
-- epochs
-------------------------------------------------------------------------------------------------

DROP TRIGGER IF EXISTS epochs_are_history_update;
CREATE TRIGGER epochs_are_history_update
BEFORE UPDATE ON epochs
BEGIN
    -- contract C17: epochs are history
    SELECT RAISE(ABORT, 'session-ledger: epochs are history');
END;

DROP TRIGGER IF EXISTS epochs_are_history_delete;
CREATE TRIGGER epochs_are_history_delete
BEFORE DELETE ON epochs
BEGIN
    -- contract C17: epochs are history
    SELECT RAISE(ABORT, 'session-ledger: epochs are history');
END;

-------------------------------------------------------------------------------------------------
-- postures
-------------------------------------------------------------------------------------------------

DROP TRIGGER IF EXISTS postures_change_only_by_epoch;
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
    -- contract C15: a posture only moves into a later epoch
    SELECT RAISE(ABORT, 'session-ledger: a posture only moves into a later epoch; grant or revoke instead');
END;

DROP TRIGGER IF EXISTS postures_inherit_only_what_the_creator_holds;
CREATE TRIGGER postures_inherit_only_what_the_creator_holds
BEFORE INSERT ON postures
WHEN NEW.source = 'inherited'
 AND (NEW.inherited_from IS NOT (SELECT created_by FROM sessions WHERE id = NEW.session_id)
      OR NOT EXISTS (SELECT 1 FROM postures AS c
                      WHERE c.session_id = NEW.inherited_from
                        AND c.posture = NEW.posture
                        AND c.epoch = NEW.epoch))
BEGIN
    -- contract C14: an inherited posture is what the creator holds
    SELECT RAISE(ABORT, 'session-ledger: an inherited posture must be the creator''s own (rules P1, P2)');
END;

-------------------------------------------------------------------------------------------------
-- audit_kinds
-------------------------------------------------------------------------------------------------

DROP TRIGGER IF EXISTS audit_kinds_are_fixed_update;
CREATE TRIGGER audit_kinds_are_fixed_update
BEFORE UPDATE ON audit_kinds
BEGIN
    -- contract C24: audit kinds are fixed by migrations
    SELECT RAISE(ABORT, 'session-ledger: audit kinds are fixed by migrations');
END;

DROP TRIGGER IF EXISTS audit_kinds_are_fixed_delete;
CREATE TRIGGER audit_kinds_are_fixed_delete
BEFORE DELETE ON audit_kinds
BEGIN
    -- contract C24: audit kinds are fixed by migrations
    SELECT RAISE(ABORT, 'session-ledger: audit kinds are fixed by migrations');
END;

-------------------------------------------------------------------------------------------------
-- audit
-------------------------------------------------------------------------------------------------

DROP TRIGGER IF EXISTS audit_kind_is_known;
CREATE TRIGGER audit_kind_is_known
BEFORE INSERT ON audit
WHEN NOT EXISTS (SELECT 1 FROM audit_kinds WHERE kind = NEW.kind)
BEGIN
    -- contract C23: an audit row has a known kind
    SELECT RAISE(ABORT, 'session-ledger: unknown audit kind');
END;

DROP TRIGGER IF EXISTS audit_is_append_only_insert;
CREATE TRIGGER audit_is_append_only_insert
BEFORE INSERT ON audit
WHEN EXISTS (SELECT 1 FROM audit WHERE seq = NEW.seq)
BEGIN
    -- contract C19: the audit trail is append-only
    SELECT RAISE(ABORT, 'session-ledger: the audit trail is append-only');
END;

DROP TRIGGER IF EXISTS audit_is_append_only_update;
CREATE TRIGGER audit_is_append_only_update
BEFORE UPDATE ON audit
BEGIN
    -- contract C19: the audit trail is append-only
    SELECT RAISE(ABORT, 'session-ledger: the audit trail is append-only');
END;

DROP TRIGGER IF EXISTS audit_is_append_only_delete;
CREATE TRIGGER audit_is_append_only_delete
BEFORE DELETE ON audit
BEGIN
    -- contract C19: the audit trail is append-only
    SELECT RAISE(ABORT, 'session-ledger: the audit trail is append-only');
END;

DROP TRIGGER IF EXISTS audit_extends_the_chain;
CREATE TRIGGER audit_extends_the_chain
BEFORE INSERT ON audit
WHEN NEW.seq IS NOT coalesce((SELECT max(seq) FROM audit), 0) + 1
  OR NEW.prev_hash IS NOT coalesce((SELECT hash FROM audit WHERE seq = NEW.seq - 1), '0000000000000000000000000000000000000000000000000000000000000000')
  OR length(NEW.hash) != 64
  OR NEW.hash GLOB '*[^0-9a-f]*'
BEGIN
    -- contract C20: a new audit row extends the hash chain
    SELECT RAISE(ABORT, 'session-ledger: an audit row must extend the hash chain');
END;

DROP TRIGGER IF EXISTS audit_time_never_goes_back;
CREATE TRIGGER audit_time_never_goes_back
BEFORE INSERT ON audit
WHEN NEW.at NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z'
  OR NEW.at < (SELECT at FROM audit WHERE seq = NEW.seq - 1)
BEGIN
    -- contract C22: audit times never go back
    SELECT RAISE(ABORT, 'session-ledger: an audit row''s time cannot be before the previous row''s');
END;

-------------------------------------------------------------------------------------------------
-- audit_time_order
-------------------------------------------------------------------------------------------------

DROP TRIGGER IF EXISTS audit_time_order_is_fixed_insert;
CREATE TRIGGER audit_time_order_is_fixed_insert
BEFORE INSERT ON audit_time_order
BEGIN
    -- contract C25: audit_time_order is fixed by migrations
    SELECT RAISE(ABORT, 'session-ledger: audit_time_order is fixed by migrations');
END;

DROP TRIGGER IF EXISTS audit_time_order_is_fixed_update;
CREATE TRIGGER audit_time_order_is_fixed_update
BEFORE UPDATE ON audit_time_order
BEGIN
    -- contract C25: audit_time_order is fixed by migrations
    SELECT RAISE(ABORT, 'session-ledger: audit_time_order is fixed by migrations');
END;

DROP TRIGGER IF EXISTS audit_time_order_is_fixed_delete;
CREATE TRIGGER audit_time_order_is_fixed_delete
BEFORE DELETE ON audit_time_order
BEGIN
    -- contract C25: audit_time_order is fixed by migrations
    SELECT RAISE(ABORT, 'session-ledger: audit_time_order is fixed by migrations');
END;
