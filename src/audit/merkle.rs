//! The Merkle tree over the audit trail (RFC 6962, SHA-256): the hash of a leaf and of a node,
//! the root of a tree of any size, inclusion and consistency proofs, and their verification.
//!
//! The tree's leaves are the trail's rows in `seq` order: leaf `i` is row `i + 1`. A *node*
//! `(level, index)` is the root of the complete subtree over leaves `index << level` to
//! `((index + 1) << level) - 1`; a tree of `n` leaves holds node `(level, index)` once
//! `(index + 1) << level <= n`, and from then on it never changes. Every value this module
//! computes (a root at any size, a proof) needs only such nodes: at most two per level, so
//! O(log n) of them, which it asks a [`Nodes`] for in one batch. Where the nodes come from (the
//! stored tree, or rows hashed in memory) is the caller's business.
//!
//! Proofs are built by the recursive definitions of RFC 6962 §2.1.1 and §2.1.2 and checked by
//! the iterative algorithms of RFC 9162 §2.1.3.2 and §2.1.4.2, two readings of one spec that
//! the tests also hold against the RFC's test vectors and an independent implementation.

use std::collections::HashMap;

use sha2::{Digest, Sha256};

use crate::error::Result;

/// A SHA-256 hash: a leaf, a node or a root.
pub type Hash = [u8; 32];

/// The coordinates of a node: its level (0 for a leaf) and its index within the level.
pub(crate) type Coord = (u8, u64);

/// The hash of a leaf whose data is `data`: `SHA-256(0x00 || data)` (the audit tree's leaves
/// are hashed by `tree::leaf_of`, which streams a row's bytes instead; a decision record's by
/// `decision_log::leaf_of`).
pub(crate) fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}

/// The hash of an interior node: `SHA-256(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The root of the empty tree: SHA-256 of nothing.
pub fn empty_root() -> Hash {
    Sha256::digest([]).into()
}

/// Where the nodes of a tree come from.
pub(crate) trait Nodes {
    /// The hashes of `coords`, in their order. Each is a node of the tree asked about: complete
    /// within its size.
    fn nodes(&mut self, coords: &[Coord]) -> Result<Vec<Hash>>;
}

/// The largest power of two smaller than `n` (`n >= 2`): where RFC 6962 splits a tree.
fn split(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

/// A computation over node hashes that runs twice: once to learn which nodes it needs, then,
/// with those read in one batch, to compute. The nodes a computation needs never depend on
/// their values, so the two runs ask for the same ones.
struct Batch {
    known: HashMap<Coord, Hash>,
    wanted: Vec<Coord>,
}

impl Batch {
    fn node(&mut self, coord: Coord) -> Hash {
        match self.known.get(&coord) {
            Some(hash) => *hash,
            None => {
                self.wanted.push(coord);
                [0; 32]
            }
        }
    }

    /// MTH of the `len >= 1` leaves from `start`: a node when the range is one, else split as
    /// RFC 6962 splits it. Every range the proofs ask for starts at a multiple of its split, so
    /// each step reads one node and recurses once: O(log n) nodes.
    fn range(&mut self, start: u64, len: u64) -> Hash {
        if len.is_power_of_two() && start % len == 0 {
            return self.node((len.trailing_zeros() as u8, start / len));
        }
        let k = split(len);
        let left = self.range(start, k);
        let right = self.range(start + k, len - k);
        node_hash(&left, &right)
    }

    /// RFC 6962 §2.1.1 `PATH(m, D[start:start+n])`.
    fn path(&mut self, m: u64, start: u64, n: u64, out: &mut Vec<Hash>) {
        if n <= 1 {
            return;
        }
        let k = split(n);
        if m < k {
            self.path(m, start, k, out);
            out.push(self.range(start + k, n - k));
        } else {
            self.path(m - k, start + k, n - k, out);
            out.push(self.range(start, k));
        }
    }

    /// RFC 6962 §2.1.2 `SUBPROOF(m, D[start:start+n], b)`.
    fn subproof(&mut self, m: u64, start: u64, n: u64, complete: bool, out: &mut Vec<Hash>) {
        if m == n {
            if !complete {
                out.push(self.range(start, m));
            }
            return;
        }
        let k = split(n);
        if m <= k {
            self.subproof(m, start, k, complete, out);
            out.push(self.range(start + k, n - k));
        } else {
            self.subproof(m - k, start + k, n - k, false, out);
            out.push(self.range(start, k));
        }
    }
}

/// Runs `f` over the nodes of `nodes`, reading the ones it needs in one batch.
fn batched<T>(nodes: &mut dyn Nodes, f: impl Fn(&mut Batch) -> T) -> Result<T> {
    let mut batch = Batch {
        known: HashMap::new(),
        wanted: Vec::new(),
    };
    f(&mut batch);
    if batch.wanted.is_empty() {
        return Ok(f(&mut batch));
    }
    let mut wanted = std::mem::take(&mut batch.wanted);
    wanted.sort_unstable();
    wanted.dedup();
    let hashes = nodes.nodes(&wanted)?;
    batch.known = wanted.into_iter().zip(hashes).collect();
    Ok(f(&mut batch))
}

/// The root of the tree of the first `size` leaves.
pub(crate) fn root(nodes: &mut dyn Nodes, size: u64) -> Result<Hash> {
    if size == 0 {
        return Ok(empty_root());
    }
    batched(nodes, |b| b.range(0, size))
}

/// The inclusion proof of leaf `index` in the tree of `size` leaves (`index < size`), from the
/// leaf's sibling up to the root's child.
pub(crate) fn inclusion_proof(nodes: &mut dyn Nodes, index: u64, size: u64) -> Result<Vec<Hash>> {
    batched(nodes, |b| {
        let mut out = Vec::new();
        b.path(index, 0, size, &mut out);
        out
    })
}

/// The consistency proof from the tree of `old` leaves to the tree of `new` (`old <= new`):
/// empty when `old` is 0 or `new`.
pub(crate) fn consistency_proof(nodes: &mut dyn Nodes, old: u64, new: u64) -> Result<Vec<Hash>> {
    if old == 0 || old >= new {
        return Ok(Vec::new());
    }
    batched(nodes, |b| {
        let mut out = Vec::new();
        b.subproof(old, 0, new, true, &mut out);
        out
    })
}

/// True when `proof` shows that `leaf` is leaf `index` of the tree of `size` leaves whose root
/// is `root` (RFC 9162 §2.1.3.2).
pub fn verify_inclusion(index: u64, size: u64, leaf: &Hash, proof: &[Hash], root: &Hash) -> bool {
    if index >= size {
        return false;
    }
    let (mut f, mut s) = (index, size - 1);
    let mut r = *leaf;
    for p in proof {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            r = node_hash(p, &r);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        f >>= 1;
        s >>= 1;
    }
    s == 0 && &r == root
}

/// True when `proof` shows that the tree of `old` leaves with root `old_root` is a prefix of the
/// tree of `new` leaves with root `new_root` (RFC 9162 §2.1.4.2). The empty tree is a prefix of
/// every tree; a tree is consistent with itself only when the roots are equal.
pub fn verify_consistency(
    old: u64,
    new: u64,
    old_root: &Hash,
    new_root: &Hash,
    proof: &[Hash],
) -> bool {
    if old > new {
        return false;
    }
    if old == new {
        return proof.is_empty() && old_root == new_root;
    }
    if old == 0 {
        return proof.is_empty();
    }
    let mut path: Vec<&Hash> = Vec::with_capacity(proof.len() + 1);
    if old.is_power_of_two() {
        path.push(old_root);
    }
    path.extend(proof);
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    let (mut f, mut s) = (old - 1, new - 1);
    while f & 1 == 1 {
        f >>= 1;
        s >>= 1;
    }
    let (mut fr, mut sr) = (**first, **first);
    for c in rest {
        if s == 0 {
            return false;
        }
        if f & 1 == 1 || f == s {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while f & 1 == 0 && f != 0 {
                f >>= 1;
                s >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        f >>= 1;
        s >>= 1;
    }
    &fr == old_root && &sr == new_root && s == 0
}

/// A tree built leaf by leaf in memory, keeping only the roots of its largest complete subtrees
/// (at most one per level): the root at any size it passes, in O(log n) memory. Each node it
/// completes is handed to the caller, to be stored or compared with what is stored.
#[derive(Debug, Clone, Default)]
pub(crate) struct Builder {
    /// The complete subtrees, largest (leftmost) first: `(level, index, hash)`.
    stack: Vec<(u8, u64, Hash)>,
    size: u64,
}

impl Builder {
    /// A tree whose first `size` leaves are summed up by `stack`: the nodes of
    /// [`Builder::frontier`]`(size)`, in that order.
    pub(crate) fn resume(size: u64, stack: Vec<Hash>) -> Builder {
        let coords = frontier(size);
        Builder {
            stack: coords
                .into_iter()
                .zip(stack)
                .map(|((level, index), hash)| (level, index, hash))
                .collect(),
            size,
        }
    }

    /// How many leaves it holds.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Adds the next leaf; calls `done` on it and on every node it completes, lowest first.
    pub(crate) fn push(&mut self, leaf: Hash, done: &mut dyn FnMut(Coord, &Hash)) {
        let index = self.size;
        done((0, index), &leaf);
        self.stack.push((0, index, leaf));
        self.size += 1;
        while let [.., (l1, _, left), (l2, i2, right)] = self.stack.as_slice() {
            if l1 != l2 {
                break;
            }
            let (level, index) = (l2 + 1, i2 / 2);
            let hash = node_hash(left, right);
            self.stack.truncate(self.stack.len() - 2);
            done((level, index), &hash);
            self.stack.push((level, index, hash));
        }
    }

    /// The root of the tree of the leaves pushed so far.
    pub(crate) fn root(&self) -> Hash {
        let mut nodes = self.stack.iter().rev();
        let Some((_, _, last)) = nodes.next() else {
            return empty_root();
        };
        nodes.fold(*last, |right, (_, _, left)| node_hash(left, &right))
    }
}

/// The largest complete subtrees of a tree of `size` leaves, left to right: one per bit set in
/// `size`. Their hashes fold into its root, and the next leaf extends it.
pub(crate) fn frontier(size: u64) -> Vec<Coord> {
    let mut out = Vec::new();
    let mut start = 0;
    for level in (0..64u8).rev() {
        if size & (1 << level) != 0 {
            out.push((level, start >> level));
            start += 1 << level;
        }
    }
    out
}

#[cfg(test)]
#[path = "tests/merkle.rs"]
mod tests;
