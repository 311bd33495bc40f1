-- V10: the audit trail's Merkle tree and the checkpoints signed over it (docs/audit.md,
-- "Checkpoints"; docs/storage-contract.md, C36 and C37).
--
-- The SHA3 chain shows an edited row, but not a trail rewritten whole and re-hashed by whoever
-- can write the database. An RFC 6962 Merkle tree over the rows lets an auditor keep a small
-- signed checkpoint (the tree's size and root) and check later, with a consistency proof, that
-- the trail since was only appended to; an inclusion proof shows one row against a checkpoint.
--
-- audit_tree keeps the roots of the tree's complete subtrees, by level and index: leaf i is row
-- i + 1, and node (level, idx) covers leaves idx * 2^level to (idx + 1) * 2^level - 1. With
-- them the root at any size, an inclusion proof and a consistency proof each read O(log n)
-- rows by this table's key. A complete subtree never changes, so the table is append-only.
-- The library brings the tree up to the trail's head in batches, inside the transaction that
-- signs a checkpoint, not in every write: rows after the tree's last leaf are hashed from the
-- rows themselves by whoever reads past it. The triggers keep the tree's shape; whether each
-- hash is right is for the verifiers, which recompute it from the rows.
--
-- checkpoints records every checkpoint the ledger signed, with its own audit row
-- (checkpoint.sign). The signing key never enters the database: a row holds the signed note,
-- which carries the signature and the key's name and id only.
--
-- This file has shipped once it is released: never edit it, add V11__*.sql instead.

INSERT INTO audit_kinds (kind, meaning) VALUES
    ('checkpoint.sign', 'a checkpoint of the audit tree was signed; detail: {"origin", "size", "root", "key"}');

CREATE TABLE audit_tree (
    -- 0 for a leaf (the hash of one audit row), one more for each level up.
    level  INTEGER NOT NULL CHECK (level BETWEEN 0 AND 62),
    -- The node's place within its level, from 0 on the left.
    idx    INTEGER NOT NULL CHECK (idx >= 0),
    -- The RFC 6962 hash: SHA-256(0x00 || row) for a leaf, SHA-256(0x01 || left || right) above.
    hash   BLOB NOT NULL CHECK (length(hash) = 32),
    PRIMARY KEY (level, idx)
) STRICT, WITHOUT ROWID;

CREATE TRIGGER audit_tree_is_append_only_update
BEFORE UPDATE ON audit_tree
BEGIN
    -- contract C36: the audit tree only grows
    SELECT RAISE(ABORT, 'session-ledger: the audit tree is append-only');
END;

CREATE TRIGGER audit_tree_is_append_only_delete
BEFORE DELETE ON audit_tree
BEGIN
    -- contract C36: the audit tree only grows
    SELECT RAISE(ABORT, 'session-ledger: the audit tree is append-only');
END;

-- A node is written once; a leaf after the leaf before it; a node above the leaves only once
-- both its children are there; and no node covers a row the trail does not have.
CREATE TRIGGER audit_tree_grows_in_order
BEFORE INSERT ON audit_tree
WHEN EXISTS (SELECT 1 FROM audit_tree WHERE level = NEW.level AND idx = NEW.idx)
  OR (NEW.level = 0 AND NEW.idx > 0
      AND NOT EXISTS (SELECT 1 FROM audit_tree WHERE level = 0 AND idx = NEW.idx - 1))
  OR (NEW.level > 0
      AND (SELECT count(*) FROM audit_tree
            WHERE level = NEW.level - 1 AND idx IN (2 * NEW.idx, 2 * NEW.idx + 1)) < 2)
  OR NEW.idx + 1 > ((SELECT coalesce(max(seq), 0) FROM audit) >> NEW.level)
BEGIN
    -- contract C36: the audit tree only grows
    SELECT RAISE(ABORT, 'session-ledger: a tree node must extend the audit tree in order');
END;

CREATE TABLE checkpoints (
    -- The checkpoint.sign audit row that records the signing.
    seq        INTEGER PRIMARY KEY NOT NULL REFERENCES audit (seq),
    -- How many audit rows, from the first, the checkpoint covers: its tree's size.
    tree_size  INTEGER NOT NULL CHECK (tree_size >= 0 AND tree_size < seq),
    -- The tree's root at that size, as 64 lower-case hex digits (the note has it in base64).
    root_hash  TEXT NOT NULL CHECK (length(root_hash) = 64 AND root_hash NOT GLOB '*[^0-9a-f]*'),
    -- The log's name, the note's first line.
    origin     TEXT NOT NULL CHECK (length(origin) BETWEEN 1 AND 255),
    -- The signing key's name and id (8 hex digits), as its signature line names it.
    key_name   TEXT NOT NULL CHECK (length(key_name) BETWEEN 1 AND 255),
    key_id     TEXT NOT NULL CHECK (length(key_id) = 8 AND key_id NOT GLOB '*[^0-9a-f]*'),
    -- The signed note, exactly as it was handed out.
    note       TEXT NOT NULL CHECK (length(note) > 0),
    -- When it was signed, UTC.
    signed_at  TEXT NOT NULL CHECK (signed_at GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z')
) STRICT;

CREATE TRIGGER checkpoints_are_history_update
BEFORE UPDATE ON checkpoints
BEGIN
    -- contract C37: checkpoints are history
    SELECT RAISE(ABORT, 'session-ledger: checkpoints are history');
END;

CREATE TRIGGER checkpoints_are_history_delete
BEFORE DELETE ON checkpoints
BEGIN
    -- contract C37: checkpoints are history
    SELECT RAISE(ABORT, 'session-ledger: checkpoints are history');
END;

-- A checkpoint is recorded once, by its own checkpoint.sign row, over a tree the ledger holds,
-- and larger than every checkpoint before it.
CREATE TRIGGER checkpoints_follow_the_tree
BEFORE INSERT ON checkpoints
WHEN EXISTS (SELECT 1 FROM checkpoints WHERE seq = NEW.seq)
  OR NOT EXISTS (SELECT 1 FROM audit WHERE seq = NEW.seq AND kind = 'checkpoint.sign')
  OR (NEW.tree_size > 0
      AND NOT EXISTS (SELECT 1 FROM audit_tree WHERE level = 0 AND idx = NEW.tree_size - 1))
  OR NEW.tree_size <= (SELECT max(tree_size) FROM checkpoints)
BEGIN
    -- contract C37: checkpoints are history
    SELECT RAISE(ABORT, 'session-ledger: a checkpoint must cover the audit tree and follow the checkpoints before it');
END;
