-- The audit tree of a PostgreSQL ledger, checked against its rows in psql (docs/audit.md,
-- "In SQL"): every stored leaf recomputed from its row, as the library computes it,
-- SHA-256(0x00 || the bytes the row's chain hash covers), and every stored node above the leaves
-- recomputed from its two children, SHA-256(0x01 || left || right). Prints the first ten that
-- differ (`leaf` and the row's seq, or `node` and its level and index), and nothing when every
-- stored hash matches; then the tree's size. Run it as any role that may read the ledger:
--
--   psql "$AUDITOR_URL" -X -v ON_ERROR_STOP=1 -f docs/postgres-verify-tree.sql
--
-- It reads the whole trail and the whole tree. What it cannot check: a checkpoint's Ed25519
-- signature (no engine has Ed25519): that is session-ledger verify --checkpoint's, or any C2SP
-- signed-note verifier's.

WITH leaves AS (
    SELECT t.idx + 1 AS seq, t.hash,
           sha256('\x00'::bytea || convert_to(
               a.prev_hash || '|' || a.seq || '|'
               || octet_length(a.at_text) || ':' || a.at_text || '|'
               || octet_length(a.actor) || ':' || a.actor || '|'
               || octet_length(a.kind) || ':' || a.kind || '|'
               || coalesce(octet_length(a.session_id) || ':' || a.session_id, '-') || '|'
               || octet_length(a.detail) || ':' || a.detail || '|',
               'UTF8')) AS recomputed
      FROM audit_tree AS t
      LEFT JOIN (SELECT *, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS at_text
                   FROM audit) AS a ON a.seq = t.idx + 1
     WHERE t.level = 0
),
nodes AS (
    SELECT p.level, p.idx, p.hash, sha256('\x01'::bytea || l.hash || r.hash) AS recomputed
      FROM audit_tree AS p
      LEFT JOIN audit_tree AS l ON l.level = p.level - 1 AND l.idx = 2 * p.idx
      LEFT JOIN audit_tree AS r ON r.level = p.level - 1 AND r.idx = 2 * p.idx + 1
     WHERE p.level > 0
)
SELECT 'leaf' AS what, 0 AS level, seq AS at
  FROM leaves WHERE recomputed IS DISTINCT FROM hash
UNION ALL
SELECT 'node', level, idx
  FROM nodes WHERE recomputed IS DISTINCT FROM hash
 ORDER BY 1, 2, 3
 LIMIT 10;

SELECT count(*) AS tree_size FROM audit_tree WHERE level = 0;
