-- session-ledger on PostgreSQL: what the application role may do (docs/postgres.md).
--
-- The ledger's schema belongs to the owner role, which creates it (`session-ledger init`) and
-- upgrades it. The dashboard connects as the application role, which may read the ledger and
-- make exactly the changes the library makes, and nothing more: it cannot update, delete or
-- truncate audit rows, change a session's lineage, rewrite a posture, drop or disable a
-- trigger, or create objects that could stand in for the ledger's tables. The triggers refuse
-- those changes from any role; these privileges refuse them before the triggers are reached,
-- and the owner alone can switch a trigger off.
--
-- Run it as the owner role, in the ledger's database, after `session-ledger init` and again
-- after every upgrade of the schema (a new version's tables get their privileges here):
--
--   psql "$OWNER_URL" -X -v ON_ERROR_STOP=1 -1 -f docs/postgres-roles.sql
--
-- It grants to the roles session_ledger_app and, if it exists, session_ledger_auditor (read
-- only). Create them first (as a role with CREATEROLE), for example:
--
--   CREATE ROLE session_ledger_app LOGIN PASSWORD '...';
--   CREATE ROLE session_ledger_auditor LOGIN PASSWORD '...';
--
-- To use other role names, grant these roles to yours (GRANT session_ledger_app TO dashboard).
-- Running it again changes nothing.

-- Only the roles named here connect, and nobody but the owner creates anything in the
-- database or the ledger's schema: no temporary table can shadow a ledger table for a trigger
-- that reads it, and no other role's object can be mistaken for the ledger's.
DO $$
BEGIN
    EXECUTE format('REVOKE ALL ON DATABASE %I FROM PUBLIC', current_database());
    EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC', current_schema());
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO session_ledger_app', current_database());
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO session_ledger_app', current_schema());
END
$$;

-- Every table and view may be read: the library reads them all, and refinery's bookkeeping
-- table tells it which version the schema is at.
GRANT SELECT ON sessions, labels, epochs, postures, command_patterns, override_scopes,
                audit_kinds, audit, audit_time_order, audit_tree, checkpoints,
                refinery_schema_history, session_tree, live_sessions, trusted_now, session_state,
                revocations, refused_creations, live_authority, decisions, decision_queue,
                decision_log, decision_records, ledger_options, archives, archived_sessions,
                archived
   TO session_ledger_app;

-- What the library writes, table by table.
-- sessions: recorded, and ended. No other column of a session ever changes.
GRANT INSERT ON sessions TO session_ledger_app;
GRANT UPDATE (ended_at) ON sessions TO session_ledger_app;
-- labels: materialized, and raised.
GRANT INSERT ON labels TO session_ledger_app;
GRANT UPDATE (taint, untrusted, raised_at) ON labels TO session_ledger_app;
-- epochs: started.
GRANT INSERT ON epochs TO session_ledger_app;
-- postures: granted or inherited, carried into a new epoch, revoked.
GRANT INSERT, DELETE ON postures TO session_ledger_app;
GRANT UPDATE (epoch) ON postures TO session_ledger_app;
-- command_patterns: added and removed.
GRANT INSERT, DELETE ON command_patterns TO session_ledger_app;
-- override_scopes: granted (a grant under a name already used replaces that row), and revoked.
GRANT INSERT ON override_scopes TO session_ledger_app;
GRANT UPDATE (granted_by, granted_at, expires_at, revoked_at, revoked_by) ON override_scopes
   TO session_ledger_app;
-- audit: appended to, and nothing else.
GRANT INSERT ON audit TO session_ledger_app;
-- The audit tree and the checkpoints signed over it are appended to, never changed (C36, C37).
GRANT INSERT ON audit_tree, checkpoints TO session_ledger_app;
-- Decision records are appended (their trigger queues them), and integrated: a position in the
-- log, and the queue's row taken out (C38 to C40).
GRANT INSERT ON decisions, decision_queue, decision_log TO session_ledger_app;
GRANT DELETE ON decision_queue TO session_ledger_app;
-- ledger_options: set, and set again.
GRANT INSERT, UPDATE ON ledger_options TO session_ledger_app;
-- archives and archived_sessions: read only. Archiving deletes rows, which this role may not:
-- it runs as the owner (docs/operations.md, "Archiving").

-- An auditor reads everything and changes nothing.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'session_ledger_auditor') THEN
        EXECUTE format('GRANT CONNECT ON DATABASE %I TO session_ledger_auditor', current_database());
        EXECUTE format('GRANT USAGE ON SCHEMA %I TO session_ledger_auditor', current_schema());
        GRANT SELECT ON sessions, labels, epochs, postures, command_patterns, override_scopes,
                        audit_kinds, audit, audit_time_order, audit_tree, checkpoints,
                        refinery_schema_history, session_tree, live_sessions, trusted_now,
                        session_state, revocations, refused_creations, live_authority,
                        decisions, decision_queue, decision_log, decision_records,
                        ledger_options, archives, archived_sessions, archived
           TO session_ledger_auditor;
    END IF;
END
$$;
