//! The whole-object BLAKE3 of a migrated read (`--verify`, [`crate::ContentCheck::WholeObject`])
//! computed as BLAKE3 subtrees: each column thread hashes the data fragments it reads, right
//! after their crc32c, as the subtrees of the object's hash tree that they are, and the hand-on
//! merges the subtrees' chaining values in object order into the root. Why: hashing the
//! stream on the consumer's thread ran at one core's BLAKE3 speed (~4 GB/s, 0.22–0.27 s of CPU
//! per GiB) behind everything else; spread over the column threads it runs on as many cores as
//! the read has columns, while the fragments are still in cache (docs/BENCHMARKS.md,
//! "Migrated GET against dd (issue 32, 2026-11-30)").
//!
//! The tree: BLAKE3 splits its input into 1 KiB chunks and builds a left-complete binary tree
//! over them. A run of `2^n` chunks that starts at a multiple of `2^n` chunks is one subtree,
//! and so is the input's last, shorter run from such a start (BLAKE3's `hazmat` docs: fixed
//! power-of-two slices, the last one possibly short). So when the read covers the whole object
//! and the object starts at a multiple of the fragment size in its blob, and the fragment size
//! is a power of two of at least a chunk, every data fragment's part of the object is one
//! subtree ([`SubtreePlan::for_read`]); otherwise the read hashes as before, on the consumer.
//!
//! Invariants:
//! - the root covers exactly the bytes handed on, in the order handed on: [`WholeHash`] takes
//!   every piece the hand-on sends, in order; a piece comes with a column thread's chaining
//!   value only when that value was computed over this very piece (same offset and length, and
//!   the piece is a slice of the same immutable buffer), otherwise the hand-on hashes the
//!   piece's bytes itself (decoded stripes, a fragment read again on its own);
//! - a subtree's chaining value is merged only once the next subtree is known to follow, and
//!   the last one closes the tree with the root flag, so the result equals `blake3::hash` of
//!   the object (tested against it for sizes around every boundary).

use blake3::Hasher;
use blake3::hazmat::{
    ChainingValue, HasherExt, Mode, merge_subtrees_non_root, merge_subtrees_root,
};
use bytes::Bytes;
use std::ops::Range;

/// A data fragment's chaining value, as the subtree of the object's hash tree at `offset`
/// (object bytes) of `length` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Subtree {
    pub offset: u64,
    pub length: u64,
    pub chaining_value: ChainingValue,
}

/// A fragment a column thread read and checked (its crc already stripped), with its subtree
/// when the read hashes the object in subtrees and the fragment is a data fragment inside it.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    pub bytes: Bytes,
    pub subtree: Option<Subtree>,
}

impl Checked {
    pub(crate) fn plain(bytes: Bytes) -> Checked {
        Checked {
            bytes,
            subtree: None,
        }
    }
}

/// Where a read's subtrees lie: the object's bytes in the blob, and the subtree size (the
/// fragment size).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SubtreePlan {
    /// The object's bytes in the blob (the read covers them all).
    object: Range<u64>,
    fragment_bytes: u64,
    data_columns: u64,
}

impl SubtreePlan {
    /// The plan for reading blob bytes `object` (the whole object) when a fragment's part of
    /// it is a subtree (module docs); `None` when not, and the consumer hashes instead. An
    /// object of at most one fragment is one subtree, whose root only a plain hasher gives.
    pub(crate) fn for_read(
        object: Range<u64>,
        fragment_bytes: usize,
        data_columns: usize,
    ) -> Option<SubtreePlan> {
        let fragment_bytes = fragment_bytes as u64;
        let aligned = fragment_bytes.is_power_of_two()
            && fragment_bytes >= blake3::CHUNK_LEN as u64
            && object.start.is_multiple_of(fragment_bytes);
        let several = object.end.saturating_sub(object.start) > fragment_bytes;
        (aligned && several).then_some(SubtreePlan {
            object,
            fragment_bytes,
            data_columns: data_columns as u64,
        })
    }

    /// The object's length in bytes.
    pub(crate) fn object_bytes(&self) -> u64 {
        self.object.end - self.object.start
    }

    /// The subtree of column `column`'s fragment of stripe `stripe` (its bytes without the
    /// crc): `None` for a parity column or a fragment outside the object.
    pub(crate) fn subtree(&self, stripe: u64, column: usize, fragment: &[u8]) -> Option<Subtree> {
        let column = column as u64;
        if column >= self.data_columns {
            return None;
        }
        let blob_offset = (stripe * self.data_columns + column).checked_mul(self.fragment_bytes)?;
        if blob_offset < self.object.start || blob_offset >= self.object.end {
            return None;
        }
        let length = (self.object.end - blob_offset).min(self.fragment_bytes);
        let offset = blob_offset - self.object.start;
        let bytes = fragment.get(..length as usize)?;
        let mut hasher = Hasher::new();
        hasher.set_input_offset(offset);
        hasher.update(bytes);
        Some(Subtree {
            offset,
            length,
            chaining_value: hasher.finalize_non_root(),
        })
    }
}

/// The root of the object's hash tree, built from its pieces in order (module docs).
pub(crate) struct WholeHash {
    subtree_bytes: u64,
    total_bytes: u64,
    /// Object bytes taken so far.
    position: u64,
    /// The subtree being hashed from bytes, when `position` is inside one.
    partial: Option<Hasher>,
    /// Chaining values of the complete subtrees not yet merged, left to right.
    stack: Vec<ChainingValue>,
    /// Complete subtrees taken so far.
    subtrees: u64,
    root: Option<[u8; 32]>,
}

impl WholeHash {
    pub(crate) fn new(plan: &SubtreePlan) -> WholeHash {
        WholeHash {
            subtree_bytes: plan.fragment_bytes,
            total_bytes: plan.object_bytes(),
            position: 0,
            partial: None,
            stack: Vec::new(),
            subtrees: 0,
            root: None,
        }
    }

    /// Takes the next piece handed on, with the subtree a column thread computed for its
    /// fragment, if any: used only when it is this piece's subtree, else the piece is hashed.
    pub(crate) fn piece(&mut self, bytes: &[u8], subtree: Option<&Subtree>) {
        let length = bytes.len() as u64;
        let matches = subtree.is_some_and(|subtree| {
            subtree.offset == self.position
                && subtree.length == length
                && self.partial.is_none()
                && self.position.is_multiple_of(self.subtree_bytes)
        });
        match subtree {
            Some(subtree) if matches => {
                self.position += length;
                self.close_subtree(subtree.chaining_value);
            }
            _ => self.bytes(bytes),
        }
    }

    /// Hashes `bytes` at the current position, closing subtrees at their boundaries.
    fn bytes(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            if self.position >= self.total_bytes {
                // More bytes than the object: leave them out of the tree, so `root` says the
                // pieces did not add up.
                self.position = u64::MAX;
                return;
            }
            let within = self.position % self.subtree_bytes;
            let room = (self.subtree_bytes - within).min(self.total_bytes - self.position);
            let take = room.min(bytes.len() as u64) as usize;
            let position = self.position;
            let hasher = self.partial.get_or_insert_with(|| {
                let mut hasher = Hasher::new();
                hasher.set_input_offset(position);
                hasher
            });
            hasher.update(&bytes[..take]);
            self.position += take as u64;
            bytes = &bytes[take..];
            let boundary = self.position.is_multiple_of(self.subtree_bytes)
                || self.position == self.total_bytes;
            if boundary && let Some(hasher) = self.partial.take() {
                self.close_subtree(hasher.finalize_non_root());
            }
        }
    }

    /// A complete subtree ends at `position`: merges it in, or closes the tree if it is the
    /// last.
    fn close_subtree(&mut self, chaining_value: ChainingValue) {
        self.subtrees += 1;
        if self.position < self.total_bytes {
            // More follows: merge as BLAKE3's own hasher does once it knows more input comes.
            let mut merged = chaining_value;
            let mut count = self.subtrees;
            while count & 1 == 0 {
                let left = self.stack.pop().expect("a left sibling for an even count");
                merged = merge_subtrees_non_root(&left, &merged, Mode::Hash);
                count >>= 1;
            }
            self.stack.push(merged);
            return;
        }
        let mut right = chaining_value;
        while let Some(left) = self.stack.pop() {
            if self.stack.is_empty() {
                self.root = Some(*merge_subtrees_root(&left, &right, Mode::Hash).as_bytes());
                return;
            }
            right = merge_subtrees_non_root(&left, &right, Mode::Hash);
        }
        // One subtree only: `SubtreePlan::for_read` never plans that, so no root.
    }

    /// The object's BLAKE3, once every byte of it (and nothing more) was taken; `None` when
    /// the pieces did not add up to the object (the caller reports a mismatch).
    pub(crate) fn root(&self) -> Option<[u8; 32]> {
        (self.position == self.total_bytes)
            .then_some(self.root)
            .flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic bytes that differ from chunk to chunk.
    fn object(length: usize) -> Vec<u8> {
        (0..length)
            .map(|i| (i as u64).wrapping_mul(2_654_435_761).to_le_bytes()[3])
            .collect()
    }

    /// Hashes `data` as a read with `fragment` bytes per fragment and `k` data columns would,
    /// each data fragment through its column's subtree; `with_subtrees` decides per fragment
    /// whether the column's chaining value comes along (else the bytes are hashed).
    fn hash_as_read(
        data: &[u8],
        start: u64,
        fragment: usize,
        k: usize,
        with_subtrees: impl Fn(usize) -> bool,
    ) -> Option<[u8; 32]> {
        let end = start + data.len() as u64;
        let plan = SubtreePlan::for_read(start..end, fragment, k)?;
        let mut whole = WholeHash::new(&plan);
        for (i, piece) in data.chunks(fragment).enumerate() {
            let blob_fragment = start / fragment as u64 + i as u64;
            let (stripe, column) = (
                blob_fragment / k as u64,
                (blob_fragment % k as u64) as usize,
            );
            // A column thread sees the whole fragment (padding past the object's end too).
            let mut framed = piece.to_vec();
            framed.resize(fragment, 0xAA);
            let subtree = plan.subtree(stripe, column, &framed);
            assert!(subtree.is_some(), "a data fragment inside the object");
            let given = with_subtrees(i).then_some(subtree).flatten();
            whole.piece(piece, given.as_ref());
        }
        whole.root()
    }

    #[test]
    fn subtrees_merge_to_the_objects_blake3_at_every_boundary() {
        let fragment = 4 * blake3::CHUNK_LEN;
        for length in [
            fragment + 1,
            2 * fragment - 1,
            2 * fragment,
            2 * fragment + 1,
            3 * fragment,
            3 * fragment + 7,
            4 * fragment,
            5 * fragment - 1024,
            7 * fragment + 1,
            8 * fragment,
            17 * fragment + 513,
        ] {
            let data = object(length);
            let expected = *blake3::hash(&data).as_bytes();
            for start_fragment in [0, 1, 5] {
                let start = (start_fragment * fragment) as u64;
                for k in [1, 3, 15] {
                    let all = hash_as_read(&data, start, fragment, k, |_| true);
                    let none = hash_as_read(&data, start, fragment, k, |_| false);
                    let some = hash_as_read(&data, start, fragment, k, |i| i % 3 != 1);
                    assert_eq!(all, Some(expected), "length {length} start {start} k {k}");
                    assert_eq!(none, Some(expected), "length {length} (hashed bytes)");
                    assert_eq!(some, Some(expected), "length {length} (mixed)");
                }
            }
        }
    }

    #[test]
    fn pieces_of_any_size_hash_like_the_object() {
        let fragment = 2 * blake3::CHUNK_LEN;
        let data = object(11 * fragment + 100);
        let plan = SubtreePlan::for_read(0..data.len() as u64, fragment, 3).unwrap();
        for piece_bytes in [1, 100, 1024, 3000, fragment, 5 * fragment + 3] {
            let mut whole = WholeHash::new(&plan);
            for piece in data.chunks(piece_bytes) {
                whole.piece(piece, None);
            }
            assert_eq!(whole.root(), Some(*blake3::hash(&data).as_bytes()));
        }
    }

    #[test]
    fn a_subtree_for_other_bytes_is_not_used_and_wrong_bytes_do_not_match() {
        let fragment = blake3::CHUNK_LEN;
        let data = object(3 * fragment);
        let plan = SubtreePlan::for_read(0..data.len() as u64, fragment, 3).unwrap();
        let expected = *blake3::hash(&data).as_bytes();
        // A subtree offered for the wrong offset is ignored: the bytes are hashed instead.
        let stale = plan.subtree(0, 1, &data[fragment..]).unwrap();
        let mut whole = WholeHash::new(&plan);
        whole.piece(&data[..fragment], Some(&stale));
        whole.piece(&data[fragment..], None);
        assert_eq!(whole.root(), Some(expected));
        // Bytes that differ from the object give another root; too few or too many give none.
        let mut changed = data.clone();
        changed[fragment + 5] ^= 1;
        let mut whole = WholeHash::new(&plan);
        whole.piece(&changed, None);
        assert_ne!(whole.root(), Some(expected));
        let mut short = WholeHash::new(&plan);
        short.piece(&data[..2 * fragment], None);
        assert_eq!(short.root(), None);
        let mut long = WholeHash::new(&plan);
        long.piece(&data, None);
        long.piece(b"x", None);
        assert_eq!(long.root(), None);
    }

    #[test]
    fn only_aligned_objects_of_several_fragments_are_hashed_in_subtrees() {
        let fragment = 128 << 10;
        assert!(SubtreePlan::for_read(0..(fragment as u64) + 1, fragment, 3).is_some());
        assert!(SubtreePlan::for_read(0..fragment as u64, fragment, 3).is_none());
        assert!(SubtreePlan::for_read(4096..(3 * fragment as u64), fragment, 3).is_none());
        assert!(SubtreePlan::for_read(0..10 * 3000, 3000, 3).is_none());
        assert!(SubtreePlan::for_read(0..10 * 512, 512, 3).is_none());
    }
}
