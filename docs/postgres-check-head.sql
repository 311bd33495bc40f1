-- name: check-head (PostgreSQL)
--
-- Checks a head saved earlier (`session-ledger audit head` prints SEQ:HASH) against a ledger on
-- PostgreSQL, with psql alone: `ok`, `truncated` (its row is gone) or `head_mismatch` (its row
-- was replaced). The same query as `check-head` in docs/audit.md for SQLite.
--
--   psql "$URL" -X -v ON_ERROR_STOP=1 -v seq=SEQ -v hash=HASH -f docs/postgres-check-head.sql

SELECT CASE
         WHEN NOT EXISTS (SELECT 1 FROM audit WHERE seq = CAST(:'seq' AS bigint)) THEN 'truncated'
         WHEN (SELECT hash FROM audit WHERE seq = CAST(:'seq' AS bigint)) <> :'hash'
           THEN 'head_mismatch'
         ELSE 'ok'
       END AS head;
