//! The in-memory rank index of one leaderboard period: every owner's
//! (score, subscore) in the board's order, ties broken by owner id as
//! Nakama's listings break them (descending boards: owner id descending).
//!
//! It is an order-statistic list: sorted blocks of at most [`MAX_BLOCK`]
//! keys with a Fenwick tree over the block lengths. Finding a key's block is
//! a binary search over the blocks, its rank a Fenwick prefix sum, the n-th
//! key a Fenwick descent: O(log n) each. An insert or removal moves at most
//! one block's keys; a block that grows past the limit splits, which
//! rebuilds the Fenwick tree (O(n / block), once per half a block of inserts).
//! Each owner's key carries the record's version (`num_score`), so updates
//! that reach the index out of order cannot undo a newer one.

use std::cmp::Ordering;
use std::collections::HashMap;

use uuid::Uuid;

use crate::leaderboard::SortOrder;

const MAX_BLOCK: usize = 1024;

/// A key in ascending index order: descending boards store negated values
/// and the owner's bits inverted, so one comparison serves both orders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Key {
    score: i64,
    subscore: i64,
    owner: u128,
}

/// An owner's place in a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranked {
    pub owner: Uuid,
    pub score: i64,
    pub subscore: i64,
    /// 1-based.
    pub rank: u64,
}

#[derive(Debug)]
pub struct RankIndex {
    order: SortOrder,
    blocks: Vec<Vec<Key>>,
    /// Fenwick tree over `blocks[i].len()`, 1-based.
    fenwick: Vec<usize>,
    owners: HashMap<Uuid, (Key, i32)>,
}

impl RankIndex {
    pub fn new(order: SortOrder) -> RankIndex {
        RankIndex {
            order,
            blocks: Vec::new(),
            fenwick: vec![0],
            owners: HashMap::new(),
        }
    }

    /// Builds an index from `(owner, score, subscore, version)` in one sort
    /// (O(n log n)), instead of n inserts that each shift half a block; a
    /// repeated owner keeps its highest version.
    pub fn build(
        order: SortOrder,
        entries: impl IntoIterator<Item = (Uuid, i64, i64, i32)>,
    ) -> RankIndex {
        let mut index = RankIndex::new(order);
        for (owner, score, subscore, version) in entries {
            let key = index.key(owner, score, subscore);
            match index.owners.get(&owner) {
                Some(&(_, v)) if v > version => {}
                _ => {
                    index.owners.insert(owner, (key, version));
                }
            }
        }
        let mut keys: Vec<Key> = index.owners.values().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        index.blocks = keys.chunks(MAX_BLOCK / 2).map(<[Key]>::to_vec).collect();
        index.rebuild();
        index
    }

    pub fn len(&self) -> usize {
        self.owners.len()
    }

    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }

    fn key(&self, owner: Uuid, score: i64, subscore: i64) -> Key {
        let owner = owner.as_u128();
        match self.order {
            SortOrder::Ascending => Key {
                score,
                subscore,
                owner,
            },
            // Scores are never negative, so negation cannot overflow.
            SortOrder::Descending => Key {
                score: -score,
                subscore: -subscore,
                owner: !owner,
            },
        }
    }

    fn unkey(&self, k: Key) -> (Uuid, i64, i64) {
        match self.order {
            SortOrder::Ascending => (Uuid::from_u128(k.owner), k.score, k.subscore),
            SortOrder::Descending => (Uuid::from_u128(!k.owner), -k.score, -k.subscore),
        }
    }

    /// Sets an owner's scores unless the index already holds a newer
    /// version of the record. Returns whether it changed anything.
    pub fn upsert(&mut self, owner: Uuid, score: i64, subscore: i64, version: i32) -> bool {
        let key = self.key(owner, score, subscore);
        if let Some(&(old, old_version)) = self.owners.get(&owner) {
            if old_version > version {
                return false;
            }
            if old == key {
                self.owners.insert(owner, (key, version));
                return false;
            }
            self.remove_key(old);
        }
        self.owners.insert(owner, (key, version));
        self.insert_key(key);
        true
    }

    /// Forgets an owner; false when it was not there.
    pub fn remove(&mut self, owner: Uuid) -> bool {
        match self.owners.remove(&owner) {
            Some((key, _)) => {
                self.remove_key(key);
                true
            }
            None => false,
        }
    }

    /// The owner's 1-based rank.
    pub fn rank(&self, owner: Uuid) -> Option<u64> {
        let (key, _) = self.owners.get(&owner)?;
        Some(self.position(*key) as u64 + 1)
    }

    /// How many keys come before the position the given record would take
    /// (for cursors: the records strictly before it).
    pub fn position_of(&self, owner: Uuid, score: i64, subscore: i64) -> usize {
        self.position(self.key(owner, score, subscore))
    }

    /// Up to `count` records from 0-based position `start`, in order.
    pub fn range(&self, start: usize, count: usize) -> Vec<Ranked> {
        let mut out = Vec::with_capacity(count.min(self.len().saturating_sub(start)));
        if start >= self.len() || count == 0 {
            return out;
        }
        let (mut b, mut i) = self.locate(start);
        let mut rank = start as u64 + 1;
        while out.len() < count && b < self.blocks.len() {
            let block = &self.blocks[b];
            while i < block.len() && out.len() < count {
                let (owner, score, subscore) = self.unkey(block[i]);
                out.push(Ranked {
                    owner,
                    score,
                    subscore,
                    rank,
                });
                rank += 1;
                i += 1;
            }
            b += 1;
            i = 0;
        }
        out
    }

    /// Keys strictly before `key`.
    fn position(&self, key: Key) -> usize {
        let b = self.block_for(key);
        if b >= self.blocks.len() {
            return self.len();
        }
        self.prefix(b) + self.blocks[b].partition_point(|k| *k < key)
    }

    /// The first block whose last key is not below `key`; `blocks.len()`
    /// when every key is below it.
    fn block_for(&self, key: Key) -> usize {
        self.blocks
            .partition_point(|block| block.last().is_some_and(|last| *last < key))
    }

    fn insert_key(&mut self, key: Key) {
        if self.blocks.is_empty() {
            self.blocks.push(vec![key]);
            self.rebuild();
            return;
        }
        let b = self.block_for(key).min(self.blocks.len() - 1);
        let block = &mut self.blocks[b];
        let at = block.partition_point(|k| *k < key);
        block.insert(at, key);
        if block.len() > MAX_BLOCK {
            let tail = block.split_off(block.len() / 2);
            self.blocks.insert(b + 1, tail);
            self.rebuild();
        } else {
            self.add(b, 1);
        }
    }

    fn remove_key(&mut self, key: Key) {
        let b = self.block_for(key);
        let Some(block) = self.blocks.get_mut(b) else {
            return;
        };
        let Ok(at) = block.binary_search(&key) else {
            return;
        };
        block.remove(at);
        if block.is_empty() {
            self.blocks.remove(b);
            self.rebuild();
        } else {
            self.sub(b, 1);
        }
    }

    fn rebuild(&mut self) {
        let n = self.blocks.len();
        self.fenwick = vec![0; n + 1];
        for (i, block) in self.blocks.iter().enumerate() {
            self.fenwick[i + 1] += block.len();
            let parent = (i + 1) + ((i + 1) & (i + 1).wrapping_neg());
            if parent <= n {
                let v = self.fenwick[i + 1];
                self.fenwick[parent] += v;
            }
        }
    }

    fn add(&mut self, block: usize, n: usize) {
        let mut i = block + 1;
        while i < self.fenwick.len() {
            self.fenwick[i] += n;
            i += i & i.wrapping_neg();
        }
    }

    fn sub(&mut self, block: usize, n: usize) {
        let mut i = block + 1;
        while i < self.fenwick.len() {
            self.fenwick[i] -= n;
            i += i & i.wrapping_neg();
        }
    }

    /// Keys in the blocks before `block`.
    fn prefix(&self, block: usize) -> usize {
        let mut i = block;
        let mut sum = 0;
        while i > 0 {
            sum += self.fenwick[i];
            i &= i - 1;
        }
        sum
    }

    /// The block and offset of 0-based position `pos` (< len).
    fn locate(&self, pos: usize) -> (usize, usize) {
        let n = self.blocks.len();
        let mut step = n.next_power_of_two();
        let mut idx = 0;
        let mut rest = pos;
        while step > 0 {
            let next = idx + step;
            if next <= n && self.fenwick[next] <= rest {
                idx = next;
                rest -= self.fenwick[next];
            }
            step >>= 1;
        }
        (idx, rest)
    }
}

/// Nakama's listing order of two records of a board (for tests and for
/// sorting owner records).
pub fn compare(order: SortOrder, a: (i64, i64, Uuid), b: (i64, i64, Uuid)) -> Ordering {
    let asc = a.cmp(&b);
    match order {
        SortOrder::Ascending => asc,
        SortOrder::Descending => asc.reverse(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check_against_sort(index: &RankIndex, truth: &HashMap<Uuid, (i64, i64)>, order: SortOrder) {
        let mut sorted: Vec<(i64, i64, Uuid)> =
            truth.iter().map(|(o, (s, ss))| (*s, *ss, *o)).collect();
        sorted.sort_by(|a, b| compare(order, *a, *b));
        let listed = index.range(0, usize::MAX);
        assert_eq!(listed.len(), sorted.len());
        for (i, (r, (s, ss, o))) in listed.iter().zip(&sorted).enumerate() {
            assert_eq!((r.score, r.subscore, r.owner), (*s, *ss, *o));
            assert_eq!(r.rank, i as u64 + 1);
            assert_eq!(index.rank(*o), Some(i as u64 + 1));
        }
        // Every window agrees with the full listing.
        for start in [0, 1, sorted.len() / 2, sorted.len().saturating_sub(3)] {
            let page = index.range(start, 7);
            assert_eq!(
                page,
                listed[start.min(listed.len())..(start + 7).min(listed.len())]
            );
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn ranks_equal_a_sort(
            desc in any::<bool>(),
            ops in prop::collection::vec((0u8..40, 0i64..50, 0i64..3, any::<bool>()), 1..3000)
        ) {
            let order = if desc { SortOrder::Descending } else { SortOrder::Ascending };
            let mut index = RankIndex::new(order);
            let mut truth = HashMap::new();
            let mut version = 0;
            for (owner, score, subscore, delete) in ops {
                let owner = Uuid::from_u128(owner as u128 * 0x1234_5678_9abc);
                version += 1;
                if delete && owner.as_u128().is_multiple_of(3) {
                    index.remove(owner);
                    truth.remove(&owner);
                } else {
                    index.upsert(owner, score, subscore, version);
                    truth.insert(owner, (score, subscore));
                }
            }
            check_against_sort(&index, &truth, order);
            // Built in one go from the same final state: the same index.
            let built = RankIndex::build(
                order,
                truth.iter().map(|(o, (s, ss))| (*o, *s, *ss, 1)),
            );
            check_against_sort(&built, &truth, order);
        }
    }

    #[test]
    fn large_index_splits_blocks_and_keeps_order() {
        let mut index = RankIndex::new(SortOrder::Descending);
        let mut truth = HashMap::new();
        for i in 0..20_000u128 {
            let owner = Uuid::from_u128(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            let score = ((i * 7919) % 5000) as i64;
            index.upsert(owner, score, 0, 1);
            truth.insert(owner, (score, 0));
        }
        for i in (0..20_000u128).step_by(3) {
            let owner = Uuid::from_u128(i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            index.remove(owner);
            truth.remove(&owner);
        }
        assert!(index.blocks.len() > 10);
        check_against_sort(&index, &truth, SortOrder::Descending);
    }

    #[test]
    fn a_built_index_takes_later_changes() {
        let mut truth = HashMap::new();
        for i in 0..5_000u128 {
            truth.insert(Uuid::from_u128(i * 31 + 7), (((i * 97) % 1000) as i64, 0));
        }
        let mut index = RankIndex::build(
            SortOrder::Ascending,
            truth.iter().map(|(o, (s, ss))| (*o, *s, *ss, 1)),
        );
        for i in 0..3_000u128 {
            let owner = Uuid::from_u128(i * 31 + 7);
            if i % 3 == 0 {
                index.remove(owner);
                truth.remove(&owner);
            } else {
                index.upsert(owner, (i % 50) as i64, 1, 2);
                truth.insert(owner, ((i % 50) as i64, 1));
            }
        }
        check_against_sort(&index, &truth, SortOrder::Ascending);
    }

    #[test]
    fn an_older_version_does_not_undo_a_newer_one() {
        let mut index = RankIndex::new(SortOrder::Descending);
        let owner = Uuid::from_u128(1);
        index.upsert(owner, 10, 0, 2);
        assert!(!index.upsert(owner, 5, 0, 1));
        assert_eq!(index.range(0, 1)[0].score, 10);
    }
}
