//! The tree's hashes and proofs, against RFC 6962's test vectors and against an independent
//! implementation (the `ct-merkle` crate) over trees of random sizes.

use ct_merkle::mem_backed_tree::MemoryBackedTree;
use proptest::prelude::*;
use sha2::Sha256;

use super::*;

/// Every node of a tree of the given leaves, kept in memory.
struct InMemory(Vec<Vec<Hash>>);

impl InMemory {
    fn of(leaves: &[Vec<u8>]) -> InMemory {
        let mut levels = vec![leaves.iter().map(|l| leaf_hash(l)).collect::<Vec<_>>()];
        while levels.last().is_some_and(|l| l.len() > 1) {
            let below = levels.last().expect("a level");
            let above = below
                .chunks_exact(2)
                .map(|pair| node_hash(&pair[0], &pair[1]))
                .collect();
            levels.push(above);
        }
        InMemory(levels)
    }
}

impl Nodes for InMemory {
    fn nodes(&mut self, coords: &[Coord]) -> Result<Vec<Hash>> {
        Ok(coords
            .iter()
            .map(|(level, index)| self.0[*level as usize][*index as usize])
            .collect())
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn hashes(s: &str) -> Vec<Hash> {
    hex(&s.split_whitespace().collect::<String>())
        .chunks(32)
        .map(|c| c.try_into().expect("32 bytes"))
        .collect()
}

// The test vectors of the transparency-dev/merkle project (testonly/constants.go and
// testonly/reference_test.go), RFC 6962's tree over these eight leaf inputs.
const LEAVES: [&str; 8] = [
    "",
    "00",
    "10",
    "2021",
    "3031",
    "40414243",
    "5051525354555657",
    "606162636465666768696a6b6c6d6e6f",
];

const ROOTS: [&str; 9] = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
];

/// `(size, index, proof)`.
const INCLUSION: [(u64, u64, &str); 7] = [
    (1, 0, ""),
    (
        2,
        0,
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
    ),
    (
        2,
        1,
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    ),
    (
        3,
        2,
        "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    ),
    (
        5,
        1,
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d
         5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e
         bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ),
    (
        8,
        0,
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7
         5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e
         6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ),
    (
        8,
        5,
        "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b
         ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0
         d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ),
];

/// `(old size, new size, proof)`.
const CONSISTENCY: [(u64, u64, &str); 4] = [
    (1, 1, ""),
    (
        1,
        8,
        "96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7
         5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e
         6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4",
    ),
    (
        2,
        5,
        "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e
         bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
    ),
    (
        6,
        8,
        "0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a
         ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0
         d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    ),
];

fn vector_leaves(n: usize) -> Vec<Vec<u8>> {
    LEAVES.iter().take(n).map(|l| hex(l)).collect()
}

#[test]
fn the_roots_of_the_reference_trees_are_the_rfc_6962_vectors() -> Result<()> {
    for (size, want) in ROOTS.iter().enumerate() {
        let leaves = vector_leaves(size);
        let want = hashes(want)[0];
        assert_eq!(
            root(&mut InMemory::of(&leaves), size as u64)?,
            want,
            "{size}"
        );
        let mut built = Builder::default();
        for leaf in &leaves {
            built.push(leaf_hash(leaf), &mut |_, _| {});
        }
        assert_eq!(built.root(), want, "built leaf by leaf: {size}");
    }
    Ok(())
}

#[test]
fn inclusion_and_consistency_proofs_are_the_rfc_6962_vectors_and_verify() -> Result<()> {
    let all = vector_leaves(8);
    for (size, index, want) in INCLUSION {
        let mut tree = InMemory::of(&all[..size as usize]);
        let proof = inclusion_proof(&mut tree, index, size)?;
        assert_eq!(proof, hashes(want), "inclusion of {index} in {size}");
        let root = hashes(ROOTS[size as usize])[0];
        let leaf = leaf_hash(&all[index as usize]);
        assert!(verify_inclusion(index, size, &leaf, &proof, &root));
    }
    for (old, new, want) in CONSISTENCY {
        let mut tree = InMemory::of(&all[..new as usize]);
        let proof = consistency_proof(&mut tree, old, new)?;
        assert_eq!(proof, hashes(want), "consistency of {old} and {new}");
        let (old_root, new_root) = (
            hashes(ROOTS[old as usize])[0],
            hashes(ROOTS[new as usize])[0],
        );
        assert!(verify_consistency(old, new, &old_root, &new_root, &proof));
    }
    Ok(())
}

#[test]
fn a_proof_with_any_bit_flipped_or_a_hash_missing_does_not_verify() -> Result<()> {
    let all = vector_leaves(8);
    let mut tree = InMemory::of(&all[..7]);
    let root7 = root(&mut tree, 7)?;
    let proof = inclusion_proof(&mut tree, 3, 7)?;
    let leaf = leaf_hash(&all[3]);
    assert!(verify_inclusion(3, 7, &leaf, &proof, &root7));
    let root3 = root(&mut tree, 3)?;
    let consistency = consistency_proof(&mut tree, 3, 7)?;
    assert!(verify_consistency(3, 7, &root3, &root7, &consistency));
    for i in 0..proof.len() * 256 {
        let mut bad = proof.clone();
        bad[i / 256][(i % 256) / 8] ^= 1 << (i % 8);
        assert!(!verify_inclusion(3, 7, &leaf, &bad, &root7), "bit {i}");
    }
    for i in 0..consistency.len() * 256 {
        let mut bad = consistency.clone();
        bad[i / 256][(i % 256) / 8] ^= 1 << (i % 8);
        assert!(!verify_consistency(3, 7, &root3, &root7, &bad), "bit {i}");
    }
    assert!(!verify_inclusion(3, 7, &leaf, &proof[1..], &root7));
    assert!(!verify_consistency(3, 7, &root3, &root7, &consistency[1..]));
    assert!(!verify_inclusion(4, 7, &leaf, &proof, &root7));
    assert!(!verify_consistency(4, 7, &root3, &root7, &consistency));
    Ok(())
}

#[test]
fn the_frontier_of_a_tree_resumes_a_builder_at_its_size() {
    let leaves: Vec<Hash> = (0u32..37).map(|i| leaf_hash(&i.to_be_bytes())).collect();
    let mut full = Builder::default();
    let mut nodes: HashMap<Coord, Hash> = HashMap::new();
    for (i, leaf) in leaves.iter().enumerate() {
        full.push(*leaf, &mut |c, h| {
            nodes.insert(c, *h);
        });
        let size = i as u64 + 1;
        let stack = frontier(size).iter().map(|c| nodes[c]).collect();
        let resumed = Builder::resume(size, stack);
        assert_eq!(resumed.root(), full.root(), "{size}");
        assert_eq!(resumed.size(), size);
    }
}

/// The oracle's tree of `n` leaves, each its index as 4 bytes.
fn oracle(n: u64) -> MemoryBackedTree<Sha256, Vec<u8>> {
    let mut t = MemoryBackedTree::new();
    for i in 0..n {
        t.push((i as u32).to_be_bytes().to_vec());
    }
    t
}

fn ours(n: u64) -> InMemory {
    let leaves: Vec<Vec<u8>> = (0..n).map(|i| (i as u32).to_be_bytes().to_vec()).collect();
    InMemory::of(&leaves)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn roots_and_proofs_agree_with_an_independent_implementation(
        n in 1u64..600, pick in any::<u64>(), old_pick in any::<u64>()
    ) {
        let reference = oracle(n);
        let mut tree = ours(n);
        let our_root = root(&mut tree, n).expect("root");
        let their_root = reference.root();
        prop_assert_eq!(&our_root[..], &their_root.as_bytes()[..]);

        let index = pick % n;
        let proof = inclusion_proof(&mut tree, index, n).expect("inclusion");
        let flat: Vec<u8> = proof.iter().flatten().copied().collect();
        let theirs = reference.prove_inclusion(index as usize);
        prop_assert_eq!(&flat[..], theirs.as_bytes());
        let leaf = leaf_hash(&(index as u32).to_be_bytes());
        prop_assert!(verify_inclusion(index, n, &leaf, &proof, &our_root));

        let old = 1 + old_pick % n;
        let consistency = consistency_proof(&mut tree, old, n).expect("consistency");
        let flat: Vec<u8> = consistency.iter().flatten().copied().collect();
        let theirs = reference.prove_consistency((n - old) as usize);
        prop_assert_eq!(&flat[..], theirs.as_bytes());
        let old_root = root(&mut tree, old).expect("old root");
        prop_assert!(verify_consistency(old, n, &old_root, &our_root, &consistency));
        if old < n {
            prop_assert!(!verify_consistency(old, n, &our_root, &our_root, &consistency));
        }
    }
}
