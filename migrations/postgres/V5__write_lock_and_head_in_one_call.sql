-- session-ledger schema on PostgreSQL, version 5: a write transaction's first step as one call
-- (docs/performance.md, "Failover and round trips").
--
-- Every write takes the ledger's write lock first, then reads the trail's head, which it
-- extends. Sent as statements of a simple query, the head's read was parsed and planned anew
-- for every write, under the lock that every other writer waits on. In a PL/pgSQL function
-- the server plans it once per connection and keeps the plan. The function holds no rule of
-- the ledger: it locks, and it reads.
--
-- A VOLATILE function's statements each take a fresh snapshot under READ COMMITTED, the
-- isolation every write transaction runs in, so the head is read after the lock is held: it is
-- the head the writer before left, as when the two were statements of one batch.
--
-- The lock is the one every other transaction that writes takes (src/storage/postgres/mod.rs,
-- write_lock!): an advisory transaction lock on (1818584167, the oid of this schema's audit
-- table), so two ledgers in two schemas of one database do not wait on each other.
--
-- This file has shipped once it is released: never edit it, add V6__*.sql instead.

CREATE FUNCTION ledger_write_lock_and_head()
RETURNS TABLE (seq bigint, hash text, at_ms bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    PERFORM pg_advisory_xact_lock(1818584167, 'audit'::regclass::oid::int4);
    RETURN QUERY
        SELECT seq, hash, (extract(epoch FROM at) * 1000)::bigint AS at_ms
          FROM audit WHERE seq = (SELECT max(seq) FROM audit);
END
$$;
COMMENT ON FUNCTION ledger_write_lock_and_head() IS
    'session-ledger: a write''s first step: takes the ledger''s write lock, then returns the audit trail''s head (seq, hash, time in ms since 1970); no row for an empty trail';
