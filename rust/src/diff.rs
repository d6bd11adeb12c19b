//! Manifest diffing (files or clusters, key -> digest) for incremental re-indexing.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash};

use rustc_hash::FxHasher;

/// Positions of keys: `unchanged`, `changed` and `added` index into `new`, `removed` into `old`;
/// each in its manifest's order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Diff {
    pub unchanged: Vec<usize>,
    pub changed: Vec<usize>,
    pub added: Vec<usize>,
    pub removed: Vec<usize>,
}

/// Compares two manifests of unique keys.
pub fn diff<K: Hash + Eq, V: PartialEq>(old: &[(K, V)], new: &[(K, V)]) -> Diff {
    let mut position: HashMap<&K, usize, BuildHasherDefault<FxHasher>> =
        HashMap::with_capacity_and_hasher(old.len(), Default::default());
    position.extend(old.iter().enumerate().map(|(i, (key, _))| (key, i)));
    let mut seen = vec![false; old.len()];
    let mut out = Diff::default();
    for (i, (key, value)) in new.iter().enumerate() {
        match position.get(key) {
            None => out.added.push(i),
            Some(&j) => {
                seen[j] = true;
                if old[j].1 == *value {
                    out.unchanged.push(i);
                } else {
                    out.changed.push(i);
                }
            }
        }
    }
    out.removed = (0..old.len()).filter(|&j| !seen[j]).collect();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_keys_into_the_four_groups_in_manifest_order() {
        let old = [("a", 1), ("b", 2), ("c", 3), ("z", 0)];
        let new = [("d", 4), ("c", 3), ("b", 9), ("a", 1)];
        let got = diff(&old, &new);
        assert_eq!(got.unchanged, vec![1, 3]);
        assert_eq!(got.changed, vec![2]);
        assert_eq!(got.added, vec![0]);
        assert_eq!(got.removed, vec![3]);
    }

    #[test]
    fn empty_manifests() {
        let none: [(&str, u8); 0] = [];
        assert_eq!(diff(&none, &none), Diff::default());
        assert_eq!(diff(&[("a", 1)], &none).removed, vec![0]);
        assert_eq!(diff(&none, &[("a", 1)]).added, vec![0]);
    }
}
