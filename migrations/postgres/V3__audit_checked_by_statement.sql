-- session-ledger schema on PostgreSQL, version 3: the audit table checks a batch of rows once
-- per statement instead of once per row, with the same rules (docs/storage-contract.md, C19,
-- C20, C22, C23).
--
-- A cascade over a subtree appends one audit row per session, in statements of many rows
-- (src/storage/postgres/audit.rs). Version 1 checked each of them with four row triggers, each a
-- PL/pgSQL call and a query, and with regular expressions of counted repetitions, which
-- PostgreSQL's regex engine runs slowly: most of a large cascade's time went there
-- (docs/performance.md, "Both engines"). Here:
--   * the chain, the time order and the kind are checked by AFTER INSERT ... FOR EACH STATEMENT
--     triggers over the statement's new rows (REFERENCING NEW TABLE), each reading the rows
--     in seq order and, for the first, its predecessor by the key: cost in proportion to the
--     batch, never to the trail;
--   * the hex and id forms are checked without counted repetitions, with the same meaning;
--   * audit_is_append_only_insert is dropped: the key on seq refuses an insert of an existing
--     seq, and INSERT ... ON CONFLICT DO UPDATE is an update, which audit_is_append_only_update
--     refuses (and the application role may not update at all).
-- A statement trigger runs after the statement's rows are in, at the end of the statement, so a
-- refused row still refuses the whole statement and leaves nothing behind; but a row that also
-- breaks a CHECK or the key is refused by that first, with PostgreSQL's own message.
--
-- This file has shipped once it is released: never edit it, add V4__*.sql instead.

-------------------------------------------------------------------------------------------------
-- The forms, without counted repetitions.
-------------------------------------------------------------------------------------------------

ALTER TABLE audit
    DROP CONSTRAINT audit_prev_hash_check,
    DROP CONSTRAINT audit_hash_check,
    DROP CONSTRAINT audit_session_id_check,
    -- 64 lower-case hex digits: 64 bytes, none outside [0-9a-f].
    ADD CONSTRAINT audit_prev_hash_is_64_hex
        CHECK (octet_length(prev_hash) = 64 AND prev_hash !~ '[^0-9a-f]'),
    ADD CONSTRAINT audit_hash_is_64_hex
        CHECK (octet_length(hash) = 64 AND hash !~ '[^0-9a-f]'),
    -- The id form of C1: 1 to 128 characters from [A-Za-z0-9._:-], the first a letter or digit.
    ADD CONSTRAINT audit_session_id_is_an_id
        CHECK (char_length(session_id) BETWEEN 1 AND 128
               AND session_id !~ '[^A-Za-z0-9._:-]'
               AND session_id ~ '^[A-Za-z0-9]');

COMMENT ON CONSTRAINT audit_prev_hash_is_64_hex ON audit IS
    'session-ledger: C20, prev_hash is 64 lower-case hex digits';
COMMENT ON CONSTRAINT audit_hash_is_64_hex ON audit IS
    'session-ledger: C20, hash is 64 lower-case hex digits';
COMMENT ON CONSTRAINT audit_session_id_is_an_id ON audit IS
    'session-ledger: C23, session_id is NULL or a session id of the form of C1';

-------------------------------------------------------------------------------------------------
-- The row triggers give way to statement triggers of the same names.
-------------------------------------------------------------------------------------------------

DROP TRIGGER audit_is_append_only_insert ON audit;
DROP FUNCTION audit_is_append_only_insert();
DROP TRIGGER audit_extends_the_chain ON audit;
DROP FUNCTION audit_extends_the_chain();
DROP TRIGGER audit_time_never_goes_back ON audit;
DROP FUNCTION audit_time_never_goes_back();
DROP TRIGGER audit_kind_is_known ON audit;
DROP FUNCTION audit_kind_is_known();

-- The statement's rows in seq order follow one another without a gap, each row's prev_hash is
-- the hash before it, and the first row's is its predecessor's: the row of the key's seq - 1,
-- or 64 zeros when it is seq 1. With the key on seq, that makes the statement's rows the next
-- rows after the head, whoever wrote the head. Whether each hash is right is for the verifiers
-- (session-ledger verify, docs/postgres-verify.sql).
CREATE FUNCTION audit_extends_the_chain() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1
          FROM (SELECT seq, prev_hash,
                       lag(seq) OVER by_seq AS before_seq,
                       lag(hash) OVER by_seq AS before_hash
                  FROM new_rows
                WINDOW by_seq AS (ORDER BY seq)) AS n
         WHERE CASE
                   WHEN n.before_seq IS NOT NULL
                       THEN n.seq <> n.before_seq + 1 OR n.prev_hash <> n.before_hash
                   WHEN n.seq = 1
                       THEN n.prev_hash <> repeat('0', 64)
                   ELSE n.prev_hash IS DISTINCT FROM
                            (SELECT a.hash FROM audit AS a WHERE a.seq = n.seq - 1)
               END
    ) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: an audit row must extend the hash chain';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER audit_extends_the_chain
AFTER INSERT ON audit
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION audit_extends_the_chain();
COMMENT ON TRIGGER audit_extends_the_chain ON audit IS
    'session-ledger: C20, rule A3, a statement''s new rows have the next seqs, each the hash before it as prev_hash (64 zeros for seq 1)';

-- Each new row's time is not before the row before it: the statement's previous row, or, for
-- the first, its predecessor by the key.
CREATE FUNCTION audit_time_never_goes_back() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1
          FROM (SELECT seq, at,
                       lag(seq) OVER by_seq AS before_seq,
                       lag(at) OVER by_seq AS before_at
                  FROM new_rows
                WINDOW by_seq AS (ORDER BY seq)) AS n
         WHERE CASE
                   WHEN n.before_seq = n.seq - 1 THEN n.at < n.before_at
                   ELSE n.at < (SELECT a.at FROM audit AS a WHERE a.seq = n.seq - 1)
               END
    ) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: an audit row''s time cannot be before the previous row''s';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER audit_time_never_goes_back
AFTER INSERT ON audit
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION audit_time_never_goes_back();
COMMENT ON TRIGGER audit_time_never_goes_back ON audit IS
    'session-ledger: C22, a statement''s new rows have times not before the row before each, so a listing by time can search seq';

-- Every new row's kind is one of audit_kinds, as the foreign key on kind says too.
CREATE FUNCTION audit_kind_is_known() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_rows AS n
         WHERE NOT EXISTS (SELECT 1 FROM audit_kinds AS k WHERE k.kind = n.kind)
    ) THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: unknown audit kind';
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER audit_kind_is_known
AFTER INSERT ON audit
REFERENCING NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION audit_kind_is_known();
COMMENT ON TRIGGER audit_kind_is_known ON audit IS
    'session-ledger: C23, a statement''s new rows have kinds of audit_kinds';
