//! How many threads a job gets: one for small jobs, every core for large ones.

use std::num::NonZeroUsize;
use std::thread;

/// Threads for `work` units when each thread should get at least `min_per_thread` of them.
pub fn threads_for(work: usize, min_per_thread: usize) -> usize {
    let cores = thread::available_parallelism().map_or(1, NonZeroUsize::get);
    (work / min_per_thread.max(1)).clamp(1, cores)
}

/// Splits `0..len` into `parts` contiguous ranges of near-equal size.
pub fn split(len: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let parts = parts.max(1);
    (0..parts)
        .map(|p| (len * p / parts)..(len * (p + 1) / parts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_covers_the_range_once() {
        for len in [0, 1, 7, 100] {
            for parts in 1..5 {
                let ranges = split(len, parts);
                assert_eq!(ranges.len(), parts);
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges[parts - 1].end, len);
                assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
            }
        }
    }

    #[test]
    fn threads_grow_with_the_work_up_to_the_cores() {
        let cores = thread::available_parallelism().map_or(1, NonZeroUsize::get);
        assert_eq!(threads_for(10, 1000), 1);
        assert_eq!(threads_for(0, 1000), 1);
        assert_eq!(threads_for(2, 1), 2.min(cores));
        assert_eq!(
            threads_for(5, 0),
            5.min(cores),
            "a zero minimum counts as one"
        );
        assert_eq!(threads_for(1_000_000, 1), cores);
    }
}
