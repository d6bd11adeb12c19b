//! Content hashes: BLAKE3 truncated to 16 bytes, in batches spread over the cores.

use std::fs::File;
use std::path::Path;
use std::thread;

use crate::parallel::{split, threads_for};

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
    map_parallel(items, threads, |item| digest(item))
}

/// The digest of a file's content, streamed; `None` if it cannot be opened or read.
pub fn digest_file(path: &Path) -> Option<Digest> {
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(File::open(path).ok()?).ok()?;
    let mut out = [0u8; DIGEST_LEN];
    hasher.finalize_xof().fill(&mut out);
    Some(out)
}

/// Digests of every file, in order; `None` for each one that cannot be read.
pub fn digest_files<P: AsRef<Path> + Sync>(paths: &[P]) -> Vec<Option<Digest>> {
    let threads = threads_for(paths.len(), MIN_FILES_PER_THREAD);
    map_parallel(paths, threads, |path| digest_file(path.as_ref()))
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
    fn many_matches_one_by_one_on_any_thread_count() {
        let data: Vec<Vec<u8>> = (0..3000).map(|i| vec![(i % 251) as u8; i % 2000]).collect();
        let items: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        let want: Vec<Digest> = items.iter().map(|item| digest(item)).collect();
        assert_eq!(digest_many(&items), want);
        assert_eq!(map_parallel(&items, 3, |item| digest(item)), want);
        assert!(digest_many(&[]).is_empty());
    }

    #[test]
    fn files_hash_like_their_bytes_and_unreadable_ones_are_none() {
        let dir = std::env::temp_dir().join(format!("kenning-hash-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("big");
        let content: Vec<u8> = (0..300_000u32).map(|i| (i % 253) as u8).collect();
        File::create(&path).unwrap().write_all(&content).unwrap();
        let got = digest_files(&[path.clone(), dir.join("missing"), dir.clone()]);
        assert_eq!(got, vec![Some(digest(&content)), None, None]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
