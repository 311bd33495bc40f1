-- name: verify-chain (PostgreSQL)
--
-- Verifies a ledger's audit hash chain on PostgreSQL with psql alone, without the library: the
-- same walk as `session-ledger verify` and as the query `verify-chain` of docs/audit.md for
-- SQLite. It recomputes each row's SHA3-256 hash (pgcrypto's digest) over exactly the bytes
-- the library hashes, and prints the first row that does not verify and why, or no row when
-- every row verifies:
--
--   gap             a row before it is missing
--   broken_link     its prev_hash is not the previous row's hash (the previous row was edited
--                   and re-hashed, or rows were reordered)
--   hash_mismatch   the row was edited
--   time_goes_back  its time is before the previous row's, after audit_time_order.ordered_from
--
-- The encoding (docs/audit.md, "The hash chain"):
--
--   hash = sha3_256( prev_hash "|" seq "|" F(at) F(actor) F(kind) F(session_id) F(detail) )
--   F(x) = byte_length(x) ":" x "|"          F(NULL) = "-|"
--
-- with `at` as the UTC text YYYY-MM-DDTHH:MM:SS.sssZ, and every text as its UTF-8 bytes (a
-- ledger's database is UTF8). The first row's prev_hash is 64 zeros.
--
-- Run it with a role that may read the ledger, in the ledger's database, with pgcrypto's
-- digest() on the search_path:
--
--   psql "$URL" -X -v ON_ERROR_STOP=1 -f docs/postgres-verify.sql
--
-- A routine check reads only the rows since a head saved earlier (`session-ledger audit head`
-- prints SEQ:HASH): pass its SEQ as the variable `from`,
--
--   psql "$URL" -X -v ON_ERROR_STOP=1 -v from=SEQ -f docs/postgres-verify.sql
--
-- and check that row SEQ still has HASH (`SELECT hash FROM audit WHERE seq = SEQ`). Row SEQ is
-- then checked against its own prev_hash, the rows after it against their predecessors, and
-- only rows from SEQ on are read, by the table's key. A row changed before SEQ is not found:
-- run the whole walk from time to time as well.

\if :{?from}
\else
\set from 1
\endif

WITH rows AS (
    SELECT seq, prev_hash, hash, at, actor, kind, session_id, detail,
           to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at_text
      FROM audit
     WHERE seq >= CAST(:'from' AS bigint)
),
checked AS (
    SELECT seq,
           lag(seq, 1, CAST(:'from' AS bigint) - 1) OVER (ORDER BY seq) AS previous_seq,
           prev_hash,
           lag(hash, 1, CASE WHEN CAST(:'from' AS bigint) <= 1 THEN repeat('0', 64) ELSE prev_hash END)
               OVER (ORDER BY seq) AS previous_hash,
           hash,
           encode(digest(convert_to(
               prev_hash || '|' || seq || '|'
               || octet_length(at_text) || ':' || at_text || '|'
               || octet_length(actor) || ':' || actor || '|'
               || octet_length(kind) || ':' || kind || '|'
               || coalesce(octet_length(session_id) || ':' || session_id, '-') || '|'
               || octet_length(detail) || ':' || detail || '|',
               'UTF8'), 'sha3-256'), 'hex') AS recomputed,
           at,
           lag(at) OVER (ORDER BY seq) AS previous_at
      FROM rows
)
SELECT seq,
       CASE WHEN seq <> previous_seq + 1 THEN 'gap'
            WHEN prev_hash <> previous_hash THEN 'broken_link'
            WHEN hash <> recomputed THEN 'hash_mismatch'
            ELSE 'time_goes_back' END AS problem
  FROM checked
 WHERE seq <> previous_seq + 1 OR prev_hash <> previous_hash OR hash <> recomputed
    OR (at < previous_at AND seq > (SELECT ordered_from FROM audit_time_order))
 ORDER BY seq
 LIMIT 1;
