-- session-ledger schema on PostgreSQL, version 8: `session_tree_root` walks up by one primary
-- key lookup per level, whatever the planner knows of `sessions`.
--
-- Version 7's function ran the walk as a recursive query. PL/pgSQL keeps a statement's plan
-- for the connection, and after five calls may keep a generic one, planned for no particular
-- session with the table's statistics as they stood. On a ledger whose statistics say
-- `sessions` is small (a new one, or one that grew since `ANALYZE`), that plan joined each
-- level by a hash join over a sequential scan of `sessions`: every append read the whole table,
-- about 400 µs a record at 3,000 sessions (docs/performance.md, "Decision records"). A lookup
-- of one row by its primary key has one plan, the key's index, whatever the statistics.
--
-- The answer is the same as version 7's: the root of the session's tree (the session with no
-- creator that `created_by` leads to); the id itself when the ledger has no row for it, or when
-- the walk meets a creator that has no row (nothing in the schema removes one; an archive step
-- might). A walk longer than any depth the ledger allows (a cycle made by hand, which the
-- triggers on `sessions` refuse) stops with an error rather than running for ever.
--
-- This file has shipped once it is released: never edit it, add V9__*.sql instead.

CREATE OR REPLACE FUNCTION session_tree_root(session text) RETURNS text
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    here    text := session;
    creator text;
BEGIN
    FOR level IN 0..100000 LOOP
        SELECT s.created_by INTO creator FROM sessions AS s WHERE s.id = here;
        IF NOT FOUND THEN
            RETURN session;
        END IF;
        IF creator IS NULL THEN
            RETURN here;
        END IF;
        here := creator;
    END LOOP;
    RAISE EXCEPTION 'session-ledger: the tree of % is deeper than 100000 levels', session;
END
$$;
COMMENT ON FUNCTION session_tree_root(text) IS
    'session-ledger: the root of a session''s tree (the id itself when no session has it), one key lookup a level';
