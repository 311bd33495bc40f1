-- session-ledger schema on PostgreSQL, version 4: the audit trail's Merkle tree and the
-- checkpoints signed over it, as SQLite's version 10 (docs/audit.md, "Checkpoints";
-- docs/storage-contract.md, C36 and C37). The same tables, columns and triggers by the same
-- names, with a TRUNCATE trigger for each table that never loses rows.
--
-- The library brings the tree up to the trail's head in batches, inside the transaction that
-- signs a checkpoint, never in the transaction of a create or any other change: those keep
-- their statements and round trips. Whether each hash is right is for the verifiers, which
-- recompute it from the rows (session-ledger verify --checkpoint, docs/postgres-verify-tree.sql).
--
-- This file has shipped once it is released: never edit it, add V5__*.sql instead.

INSERT INTO audit_kinds (kind, meaning) VALUES
    ('checkpoint.sign', 'a checkpoint of the audit tree was signed; detail: {"origin", "size", "root", "key"}');

CREATE TABLE audit_tree (
    -- 0 for a leaf (the hash of one audit row), one more for each level up.
    level  smallint NOT NULL CHECK (level BETWEEN 0 AND 62),
    -- The node's place within its level, from 0 on the left.
    idx    bigint NOT NULL CHECK (idx >= 0),
    -- The RFC 6962 hash: SHA-256(0x00 || row) for a leaf, SHA-256(0x01 || left || right) above.
    hash   bytea NOT NULL CHECK (octet_length(hash) = 32),
    PRIMARY KEY (level, idx)
);
COMMENT ON TABLE audit_tree IS
    'session-ledger: the roots of the complete subtrees of the RFC 6962 Merkle tree over the audit trail, by level and index; append-only';

CREATE TRIGGER audit_tree_is_append_only_update
BEFORE UPDATE ON audit_tree
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: the audit tree is append-only');
COMMENT ON TRIGGER audit_tree_is_append_only_update ON audit_tree IS
    'session-ledger: C36, a stored tree node never changes (an upsert''s DO UPDATE included)';

CREATE TRIGGER audit_tree_is_append_only_delete
BEFORE DELETE ON audit_tree
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: the audit tree is append-only');
COMMENT ON TRIGGER audit_tree_is_append_only_delete ON audit_tree IS
    'session-ledger: C36, a stored tree node is never deleted';

CREATE TRIGGER audit_tree_is_append_only_truncate
BEFORE TRUNCATE ON audit_tree
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: the audit tree is append-only');
COMMENT ON TRIGGER audit_tree_is_append_only_truncate ON audit_tree IS
    'session-ledger: C36, the audit tree is never emptied by TRUNCATE';

-- A statement's new nodes, after they are in: each leaf follows the leaf before it, each node
-- above the leaves has both its children, and no node covers a row the trail does not have.
-- The key refuses a node written twice. Reads by the key only: cost in proportion to the batch.
CREATE FUNCTION audit_tree_grows_in_order() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    rows bigint := coalesce((SELECT max(seq) FROM audit), 0);
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_nodes AS n
         WHERE (n.level = 0 AND n.idx > 0
                AND NOT EXISTS (SELECT 1 FROM audit_tree AS t
                                 WHERE t.level = 0 AND t.idx = n.idx - 1))
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
CREATE TRIGGER audit_tree_grows_in_order
AFTER INSERT ON audit_tree
REFERENCING NEW TABLE AS new_nodes
FOR EACH STATEMENT EXECUTE FUNCTION audit_tree_grows_in_order();
COMMENT ON TRIGGER audit_tree_grows_in_order ON audit_tree IS
    'session-ledger: C36, a statement''s new nodes extend the tree in order, over rows the trail has';

CREATE TABLE checkpoints (
    -- The checkpoint.sign audit row that records the signing.
    seq        bigint PRIMARY KEY REFERENCES audit (seq),
    -- How many audit rows, from the first, the checkpoint covers: its tree's size.
    tree_size  bigint NOT NULL CHECK (tree_size >= 0 AND tree_size < seq),
    -- The tree's root at that size, as 64 lower-case hex digits (the note has it in base64).
    root_hash  text COLLATE "C" NOT NULL
               CHECK (octet_length(root_hash) = 64 AND root_hash !~ '[^0-9a-f]'),
    -- The log's name, the note's first line.
    origin     text NOT NULL CHECK (octet_length(origin) BETWEEN 1 AND 255),
    -- The signing key's name and id (8 hex digits), as its signature line names it.
    key_name   text NOT NULL CHECK (octet_length(key_name) BETWEEN 1 AND 255),
    key_id     text COLLATE "C" NOT NULL CHECK (octet_length(key_id) = 8 AND key_id !~ '[^0-9a-f]'),
    -- The signed note, exactly as it was handed out.
    note       text NOT NULL CHECK (octet_length(note) > 0),
    -- When it was signed.
    signed_at  timestamptz NOT NULL
               CHECK (date_trunc('milliseconds', signed_at) = signed_at)
               CONSTRAINT checkpoints_signed_at_in_range
               CHECK (signed_at >= '0001-01-01 00:00:00+00' AND signed_at < '10000-01-01 00:00:00+00')
);
COMMENT ON TABLE checkpoints IS
    'session-ledger: every checkpoint of the audit tree the ledger signed, with its checkpoint.sign audit row; history';

CREATE TRIGGER checkpoints_are_history_update
BEFORE UPDATE ON checkpoints
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: checkpoints are history');
COMMENT ON TRIGGER checkpoints_are_history_update ON checkpoints IS
    'session-ledger: C37, a recorded checkpoint never changes (an upsert''s DO UPDATE included)';

CREATE TRIGGER checkpoints_are_history_delete
BEFORE DELETE ON checkpoints
FOR EACH ROW EXECUTE FUNCTION ledger_refuse('session-ledger: checkpoints are history');
COMMENT ON TRIGGER checkpoints_are_history_delete ON checkpoints IS
    'session-ledger: C37, a recorded checkpoint is never deleted';

CREATE TRIGGER checkpoints_are_history_truncate
BEFORE TRUNCATE ON checkpoints
FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse('session-ledger: checkpoints are history');
COMMENT ON TRIGGER checkpoints_are_history_truncate ON checkpoints IS
    'session-ledger: C37, the checkpoints are never emptied by TRUNCATE';

CREATE FUNCTION checkpoints_follow_the_tree() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM audit WHERE seq = NEW.seq AND kind = 'checkpoint.sign')
       OR (NEW.tree_size > 0
           AND NOT EXISTS (SELECT 1 FROM audit_tree WHERE level = 0 AND idx = NEW.tree_size - 1))
       OR NEW.tree_size <= (SELECT max(tree_size) FROM checkpoints)
    THEN
        RAISE EXCEPTION USING ERRCODE = 'SL001',
            MESSAGE = 'session-ledger: a checkpoint must cover the audit tree and follow the checkpoints before it';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER checkpoints_follow_the_tree
BEFORE INSERT ON checkpoints
FOR EACH ROW EXECUTE FUNCTION checkpoints_follow_the_tree();
COMMENT ON TRIGGER checkpoints_follow_the_tree ON checkpoints IS
    'session-ledger: C37, a checkpoint has its own checkpoint.sign row, covers the stored tree, and is larger than every one before it';
