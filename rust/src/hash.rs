//! Content hashes: BLAKE3 truncated to 16 bytes, in batches spread over the cores.

use std::path::Path;
use std::thread;

use blake3::platform::Platform;
use blake3::IncrementCounter;

use crate::parallel::{split, threads_for};
use crate::platform::open_root;
use crate::walk::read_in;

pub const DIGEST_LEN: usize = 16;
pub type Digest = [u8; DIGEST_LEN];

/// Below this many bytes per thread, hashing on one thread is faster.
const MIN_BYTES_PER_THREAD: usize = 1 << 20;
const MIN_FILES_PER_THREAD: usize = 32;

/// The first 16 bytes of the BLAKE3 hash (BLAKE3 output is an XOF: a prefix is a valid digest).
pub fn digest(data: &[u8]) -> Digest {
    let mut out = [0u8; DIGEST_LEN];
    out.copy_from_slice(&blake3::hash(data).as_bytes()[..DIGEST_LEN]);
    out
}

/// Digests of every item, in order.
pub fn digest_many(items: &[&[u8]]) -> Vec<Digest> {
    let total: usize = items.iter().map(|item| item.len()).sum();
    let threads = threads_for(total, MIN_BYTES_PER_THREAD).min(items.len().max(1));
    let mut out = vec![[0u8; DIGEST_LEN]; items.len()];
    if threads <= 1 {
        digest_batch(items, &mut out);
        return out;
    }
    thread::scope(|s| {
        let mut rest = out.as_mut_slice();
        for range in split(items.len(), threads) {
            let (mine, others) = rest.split_at_mut(range.len());
            rest = others;
            let items = &items[range];
            s.spawn(move || digest_batch(items, mine));
        }
    });
    out
}

// BLAKE3 constants (the spec's IV and domain flags), for the batched single-chunk path.
const IV: [u32; 8] = [
    0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19,
];
const CHUNK_START: u8 = 1;
const CHUNK_END: u8 = 2;
const ROOT: u8 = 8;
const BLOCK: usize = blake3::BLOCK_LEN;

/// Digests of many small items at once. An item of one chunk (<= 1 KB, typical for code
/// chunks) is hashed block by block, which one SIMD lane cannot speed up; so the full blocks
/// before each item's last block go through BLAKE3's multi-lane `hash_many` (8 or 16 items
/// side by side, grouped by block count), and only the last block is compressed alone.
/// Larger items take the ordinary tree hash. Tested against `blake3::hash` at every length.
fn digest_batch(items: &[&[u8]], out: &mut [Digest]) {
    let platform = Platform::detect();
    // a few hundred items at a time keep their blocks and chaining values in cache
    for (items, out) in items.chunks(BATCH).zip(out.chunks_mut(BATCH)) {
        digest_small(platform, items, out);
    }
}

const BATCH: usize = 256;

fn digest_small(platform: Platform, items: &[&[u8]], out: &mut [Digest]) {
    let mut cvs = vec![IV; items.len()];
    let mut by_blocks: Vec<Vec<usize>> = vec![Vec::new(); blake3::CHUNK_LEN / BLOCK];
    for (i, item) in items.iter().enumerate() {
        if item.len() > blake3::CHUNK_LEN {
            out[i] = digest(item);
        } else if item.len() > BLOCK {
            by_blocks[(item.len() - 1) / BLOCK].push(i);
        }
    }
    for (full, group) in by_blocks.iter().enumerate().filter(|(_, g)| !g.is_empty()) {
        match full {
            1 => prefix_cvs::<{ BLOCK }>(platform, items, group, &mut cvs),
            2 => prefix_cvs::<{ 2 * BLOCK }>(platform, items, group, &mut cvs),
            3 => prefix_cvs::<{ 3 * BLOCK }>(platform, items, group, &mut cvs),
            4 => prefix_cvs::<{ 4 * BLOCK }>(platform, items, group, &mut cvs),
            5 => prefix_cvs::<{ 5 * BLOCK }>(platform, items, group, &mut cvs),
            6 => prefix_cvs::<{ 6 * BLOCK }>(platform, items, group, &mut cvs),
            7 => prefix_cvs::<{ 7 * BLOCK }>(platform, items, group, &mut cvs),
            8 => prefix_cvs::<{ 8 * BLOCK }>(platform, items, group, &mut cvs),
            9 => prefix_cvs::<{ 9 * BLOCK }>(platform, items, group, &mut cvs),
            10 => prefix_cvs::<{ 10 * BLOCK }>(platform, items, group, &mut cvs),
            11 => prefix_cvs::<{ 11 * BLOCK }>(platform, items, group, &mut cvs),
            12 => prefix_cvs::<{ 12 * BLOCK }>(platform, items, group, &mut cvs),
            13 => prefix_cvs::<{ 13 * BLOCK }>(platform, items, group, &mut cvs),
            14 => prefix_cvs::<{ 14 * BLOCK }>(platform, items, group, &mut cvs),
            15 => prefix_cvs::<{ 15 * BLOCK }>(platform, items, group, &mut cvs),
            _ => unreachable!("a chunk has 16 blocks"),
        }
    }
    for ((item, cv), slot) in items.iter().zip(cvs.iter_mut()).zip(out.iter_mut()) {
        if item.len() > blake3::CHUNK_LEN {
            continue;
        }
        let start = item.len().saturating_sub(1) / BLOCK * BLOCK;
        let mut block = [0u8; BLOCK];
        block[..item.len() - start].copy_from_slice(&item[start..]);
        let first = if start == 0 { CHUNK_START } else { 0 };
        let flags = first | CHUNK_END | ROOT;
        platform.compress_in_place(cv, &block, (item.len() - start) as u8, 0, flags);
        for (bytes, word) in slot.chunks_exact_mut(4).zip(cv.iter()) {
            bytes.copy_from_slice(&word.to_le_bytes());
        }
    }
}

/// Chaining values after the first `N` bytes (whole blocks) of each item in `group`.
fn prefix_cvs<const N: usize>(
    platform: Platform,
    items: &[&[u8]],
    group: &[usize],
    cvs: &mut [[u32; 8]],
) {
    let inputs: Vec<&[u8; N]> = group
        .iter()
        .map(|&i| items[i][..N].try_into().expect("grouped by length"))
        .collect();
    let mut out = vec![0u8; 32 * group.len()];
    platform.hash_many(
        &inputs,
        &IV,
        0,
        IncrementCounter::No,
        0,
        CHUNK_START,
        0,
        &mut out,
    );
    for (&i, bytes) in group.iter().zip(out.chunks_exact(32)) {
        for (word, le) in cvs[i].iter_mut().zip(bytes.chunks_exact(4)) {
            *word = u32::from_le_bytes(le.try_into().expect("4 bytes"));
        }
    }
}

/// Digests of the files at the relative paths `rels` under `root`, in order; `None` for each
/// one that `walk::read_in` refuses (a symlink on the way, not a regular file, over `limit`
/// bytes) or cannot read.
pub fn digest_files<P: AsRef<[u8]> + Sync>(
    root: &Path,
    rels: &[P],
    limit: u64,
) -> Vec<Option<Digest>> {
    let Ok(root) = open_root(root) else {
        return vec![None; rels.len()];
    };
    let threads = threads_for(rels.len(), MIN_FILES_PER_THREAD);
    map_parallel(rels, threads, |rel| {
        read_in(&root, rel.as_ref(), limit)
            .ok()
            .map(|data| digest(&data))
    })
}

/// `items.map(f)` in order, on `threads` threads over contiguous ranges.
fn map_parallel<T: Sync, R: Send + Copy + Default>(
    items: &[T],
    threads: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    if threads <= 1 {
        return items.iter().map(f).collect();
    }
    let mut out = vec![R::default(); items.len()];
    thread::scope(|s| {
        let mut rest = out.as_mut_slice();
        for range in split(items.len(), threads) {
            let (mine, others) = rest.split_at_mut(range.len());
            rest = others;
            let (f, items) = (&f, &items[range]);
            s.spawn(move || {
                for (slot, item) in mine.iter_mut().zip(items) {
                    *slot = f(item);
                }
            });
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Write;

    fn hex(d: &Digest) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn known_answer_is_the_blake3_prefix() {
        // BLAKE3("") = af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262
        assert_eq!(hex(&digest(b"")), "af1349b9f5f9a1a6a0404dea36dcc949");
    }

    #[test]
    fn batches_match_blake3_at_every_length() {
        // every length up to past two chunks, with content that differs per byte and item
        let data: Vec<Vec<u8>> = (0..2100)
            .map(|len| (0..len).map(|j| (j * 131 + len * 7) as u8).collect())
            .collect();
        let items: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let want: Vec<Digest> = items.iter().map(|item| digest(item)).collect();
        let mut got = vec![[0u8; DIGEST_LEN]; items.len()];
        digest_batch(&items, &mut got);
        assert_eq!(got, want);
        let reversed: Vec<&[u8]> = items.iter().rev().copied().collect();
        let mut got = vec![[0u8; DIGEST_LEN]; items.len()];
        digest_batch(&reversed, &mut got);
        assert!(got.iter().rev().eq(want.iter()));
    }

    #[test]
    fn many_matches_one_by_one_on_any_thread_count() {
        let data: Vec<Vec<u8>> = (0..3000).map(|i| vec![(i % 251) as u8; i % 2000]).collect();
        let items: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let want: Vec<Digest> = items.iter().map(|item| digest(item)).collect();
        assert_eq!(digest_many(&items), want);
        assert!(digest_many(&[]).is_empty());
    }

    #[test]
    fn files_hash_like_their_bytes_and_refused_ones_are_none() {
        let dir = std::env::temp_dir().join(format!("kenning-hash-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big");
        let content: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        File::create(&path).unwrap().write_all(&content).unwrap();
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        crate::platform::symlink(&path, &dir.join("link")).unwrap();
        let rels = ["big", "missing", "sub", "link", "../big"];
        let got = digest_files(&dir, &rels, 1 << 20);
        assert_eq!(got, vec![Some(digest(&content)), None, None, None, None]);
        assert_eq!(digest_files(&dir, &["big"], 1000), vec![None]); // over the limit
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
