//! Exact Hamming top-k over packed sign bits.
//!
//! One pass over `db` serves a whole batch of queries: rows are scanned in blocks small enough
//! to stay in L2, and every query is compared against a block before the next block is read,
//! so a 16-query batch costs little more memory traffic than one query. On AVX-512 a batch
//! holds its queries side by side in SIMD lanes, so each row word is loaded once for 16
//! queries and no horizontal sums are needed. A top-k takes a row only when it beats the
//! query's current threshold, into a buffer that is cut back to the k best when it fills.
//! Large scans are split across threads by row range; each thread keeps its own top-k, merged
//! at the end. The row filter is applied inside the scan, so a filtered search still returns
//! `min(k, allowed)` hits. Ties are broken by the lower row index, which makes the result
//! independent of the kernel and of the thread count.

use std::thread;

use crate::error::{value_error, CoreResult};
use crate::parallel::{split, threads_for};

/// Rows scanned per block: small enough to stay in L2 while every query of a batch passes.
const BLOCK_BYTES: usize = 128 * 1024;
/// Distances held per step across a batch of queries (1 MB of u32).
const MAX_BATCH_DISTANCES: usize = 1 << 18;
/// Batches of at least this many queries scan with queries side by side in SIMD lanes.
#[cfg(target_arch = "x86_64")]
const LANE_MIN_QUERIES: usize = 4;
/// Rows per block of a lane-wise scan of more than 16 queries: small enough to stay in L1
/// while every pass of 16 queries reads them.
#[cfg(target_arch = "x86_64")]
const LANE_BLOCK_BYTES: usize = 16 * 1024;
/// Rows between top-k updates in a lane-wise scan.
#[cfg(target_arch = "x86_64")]
const EVENT_BLOCK: usize = 64;
/// Below this many bytes of scanning per thread, another thread costs more than it saves.
const MIN_BYTES_PER_THREAD: usize = 4 << 20;

/// Which rows of `db` may be returned.
#[derive(Clone, Copy, Debug)]
pub enum Filter<'a> {
    All,
    /// One flag per db row.
    Mask(&'a [bool]),
    /// Row ids, sorted ascending, without duplicates, each `< n`.
    Ids(&'a [usize]),
}

/// A popcount implementation this CPU can run. The type is opaque: only `available`, `best`,
/// `from_name` and `SCALAR` make one, so holding a `Kernel` proves that its CPU features were
/// detected, which is what makes the dispatch to `#[target_feature]` code sound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kernel(Isa);

/// The instruction sets behind `Kernel`; `Scalar` is the portable reference the others are
/// tested against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Popcnt,
    #[cfg(target_arch = "x86_64")]
    Avx2,
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "aarch64")]
    Neon,
}

impl Kernel {
    /// The portable kernel, which every CPU runs.
    pub const SCALAR: Kernel = Kernel(Isa::Scalar);

    pub fn name(self) -> &'static str {
        match self.0 {
            Isa::Scalar => "scalar",
            #[cfg(target_arch = "x86_64")]
            Isa::Popcnt => "popcnt",
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => "avx2",
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => "avx512",
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => "neon",
        }
    }

    /// The kernels this CPU can run, best first.
    pub fn available() -> Vec<Kernel> {
        let mut kernels = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f")
                && is_x86_feature_detected!("avx512bw")
                && is_x86_feature_detected!("avx512vpopcntdq")
            {
                kernels.push(Kernel(Isa::Avx512));
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("popcnt") {
                kernels.push(Kernel(Isa::Avx2));
            }
            if is_x86_feature_detected!("popcnt") {
                kernels.push(Kernel(Isa::Popcnt));
            }
        }
        #[cfg(target_arch = "aarch64")]
        if std::arch::is_aarch64_feature_detected!("neon") {
            kernels.push(Kernel(Isa::Neon));
        }
        kernels.push(Kernel(Isa::Scalar));
        kernels
    }

    /// The fastest kernel this CPU can run.
    pub fn best() -> Kernel {
        Kernel::available()[0]
    }

    pub fn from_name(name: &str) -> CoreResult<Kernel> {
        match Kernel::available().into_iter().find(|k| k.name() == name) {
            Some(kernel) => Ok(kernel),
            None => value_error(format!(
                "popcount kernel {name:?} is not available on this CPU (available: {})",
                Kernel::available()
                    .iter()
                    .map(|k| k.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }

    /// `out[i]` = distance from `query` to row `i` of `rows` (`out.len()` rows of `width` bytes).
    fn distances(self, query: &[u8], rows: &[u8], width: usize, out: &mut [u32]) {
        // the SIMD kernels read through raw pointers: this check makes that sound
        assert!(rows.len() >= out.len() * width && query.len() == width);
        match self.0 {
            Isa::Scalar => distances_with(dist_scalar, query, rows, width, out),
            // SAFETY: a `Kernel` is only made for an instruction set this CPU was found to run.
            #[cfg(target_arch = "x86_64")]
            Isa::Popcnt => unsafe { x86::distances_popcnt(query, rows, width, out) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { x86::distances_avx2(query, rows, width, out) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { x86::distances_avx512(query, rows, width, out) },
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => unsafe { arm::distances_neon(query, rows, width, out) },
        }
    }

    /// `out[q * n + i]` = distance from query `q` to row `i`, for `n` rows and all queries: one
    /// pass over the rows serves every query.
    fn distances_batch(self, queries: &[u8], rows: &[u8], shape: Shape, out: &mut [u32]) {
        let Shape {
            queries: nq,
            rows: n,
            width,
        } = shape;
        // the SIMD kernels read through raw pointers: this check makes that sound
        assert!(rows.len() >= n * width && queries.len() == nq * width && out.len() == nq * n);
        match self.0 {
            // SAFETY: a `Kernel` is only made for an instruction set this CPU was found to run.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { x86::distances_batch_avx512(queries, rows, shape, out) },
            _ => {
                for (q, out) in out.chunks_exact_mut(n.max(1)).enumerate().take(nq) {
                    self.distances(&queries[q * width..(q + 1) * width], rows, width, out);
                }
            }
        }
    }

    /// `out[j]` = distance from `query` to row `ids[j]` of `db`.
    fn distances_at(self, query: &[u8], db: &[u8], width: usize, ids: &[usize], out: &mut [u32]) {
        // the SIMD kernels read `query.len()` bytes of each row through raw pointers, and each
        // row is a bounds-checked slice of `width` bytes: this check makes that sound
        assert!(query.len() <= width);
        match self.0 {
            Isa::Scalar => distances_at_with(dist_scalar, query, db, width, ids, out),
            // SAFETY: as in `distances`.
            #[cfg(target_arch = "x86_64")]
            Isa::Popcnt => unsafe { x86::distances_at_popcnt(query, db, width, ids, out) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { x86::distances_at_avx2(query, db, width, ids, out) },
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { x86::distances_at_avx512(query, db, width, ids, out) },
            #[cfg(target_arch = "aarch64")]
            Isa::Neon => unsafe { arm::distances_at_neon(query, db, width, ids, out) },
        }
    }
}

#[inline(always)]
fn distances_with(
    dist: impl Fn(&[u8], &[u8]) -> u32,
    query: &[u8],
    rows: &[u8],
    width: usize,
    out: &mut [u32],
) {
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = dist(query, &rows[i * width..(i + 1) * width]);
    }
}

#[inline(always)]
fn distances_at_with(
    dist: impl Fn(&[u8], &[u8]) -> u32,
    query: &[u8],
    db: &[u8],
    width: usize,
    ids: &[usize],
    out: &mut [u32],
) {
    for (&id, slot) in ids.iter().zip(out.iter_mut()) {
        *slot = dist(query, &db[id * width..(id + 1) * width]);
    }
}

/// The reference: one byte at a time.
pub fn dist_reference(a: &[u8], b: &[u8]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Portable: 64-bit words, then the tail bytes.
#[inline(always)]
fn dist_scalar(a: &[u8], b: &[u8]) -> u32 {
    let mut total = 0;
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail = dist_reference(a_words.remainder(), b_words.remainder());
    for (x, y) in a_words.zip(b_words) {
        let x = u64::from_ne_bytes(x.try_into().expect("chunks of 8"));
        let y = u64::from_ne_bytes(y.try_into().expect("chunks of 8"));
        total += (x ^ y).count_ones();
    }
    total + tail
}

/// The row loop (`$distances`) and the by-id loop (`$distances_at`) of one instruction set, each
/// compiled with its target features so that `$dist` inlines into it. Every SIMD kernel takes
/// its two entry points from here, so none can differ from the others in contract or shape.
macro_rules! kernel_loops {
    ($features:literal, $cpu:literal, $dist:ident, $distances:ident, $distances_at:ident) => {
        kernel_loops!($features, $cpu, $dist, $distances_at);

        /// # Safety
        ///
        #[doc = concat!("The CPU must support ", $cpu, ", and `q` must be no longer than `w`:")]
        /// the kernel reads `q.len()` bytes of each `w`-byte row through raw pointers.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $distances(q: &[u8], rows: &[u8], w: usize, out: &mut [u32]) {
            // SAFETY: the caller upholds this function's contract (see `# Safety`).
            unsafe { distances_with(|a, b| $dist(a, b), q, rows, w, out) }
        }
    };
    ($features:literal, $cpu:literal, $dist:ident, $distances_at:ident) => {
        /// # Safety
        ///
        #[doc = concat!("The CPU must support ", $cpu, ", and `q` must be no longer than `w`:")]
        /// the kernel reads `q.len()` bytes of each `w`-byte row of `db` through raw pointers.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $distances_at(
            q: &[u8],
            db: &[u8],
            w: usize,
            ids: &[usize],
            out: &mut [u32],
        ) {
            // SAFETY: the caller upholds this function's contract (see `# Safety`).
            unsafe { distances_at_with(|a, b| $dist(a, b), q, db, w, ids, out) }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{dist_scalar, distances_at_with, distances_with, Shape, TopK, EVENT_BLOCK};
    use std::arch::x86_64::*;

    /// The portable word loop, compiled for POPCNT.
    ///
    /// # Safety
    ///
    /// The CPU must support POPCNT.
    #[target_feature(enable = "popcnt")]
    #[inline]
    unsafe fn dist_popcnt(a: &[u8], b: &[u8]) -> u32 {
        dist_scalar(a, b)
    }

    kernel_loops!(
        "popcnt",
        "POPCNT",
        dist_popcnt,
        distances_popcnt,
        distances_at_popcnt
    );

    /// Nibble lookup (pshufb) popcount, bytes summed with `sad_epu8` (Mula et al.).
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2 and POPCNT, and `b` must be at least as long as `a`.
    #[target_feature(enable = "avx2,popcnt")]
    #[inline]
    unsafe fn dist_avx2(a: &[u8], b: &[u8]) -> u32 {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            let lut = _mm256_setr_epi8(
                0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3,
                2, 3, 3, 4,
            );
            let nibble = _mm256_set1_epi8(0x0f);
            let zero = _mm256_setzero_si256();
            let vectors = a.len() / 32;
            let mut sums = zero;
            let mut i = 0;
            while i < vectors {
                // at most 31 vectors of per-byte counts (<= 8 each) fit in a u8 lane
                let end = vectors.min(i + 31);
                let mut counts = zero;
                while i < end {
                    let x = _mm256_xor_si256(
                        _mm256_loadu_si256(a.as_ptr().add(32 * i).cast()),
                        _mm256_loadu_si256(b.as_ptr().add(32 * i).cast()),
                    );
                    let lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(x, nibble));
                    let hi =
                        _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(x, 4), nibble));
                    counts = _mm256_add_epi8(counts, _mm256_add_epi8(lo, hi));
                    i += 1;
                }
                sums = _mm256_add_epi64(sums, _mm256_sad_epu8(counts, zero));
            }
            let mut lanes = [0u64; 4];
            _mm256_storeu_si256(lanes.as_mut_ptr().cast(), sums);
            let done = vectors * 32;
            lanes.iter().sum::<u64>() as u32 + dist_scalar(&a[done..], &b[done..])
        }
    }

    kernel_loops!(
        "avx2,popcnt",
        "AVX2 and POPCNT",
        dist_avx2,
        distances_avx2,
        distances_at_avx2
    );

    /// Lane sums of VPOPCNTQ over `a ^ b`: `vectors` 64-byte vectors, then `rest` bytes by a
    /// masked load. `VECTORS > 0` fixes the count at compile time so the loop unrolls.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512 VPOPCNTDQ, and `a` and `b` must each
    /// be valid for reads of `64 * vectors` bytes plus the bytes set in `rest`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq")]
    #[inline]
    unsafe fn xor_popcnt_lanes<const VECTORS: usize>(
        a: *const u8,
        b: *const u8,
        vectors: usize,
        rest: __mmask64,
    ) -> __m512i {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            let vectors = if VECTORS > 0 { VECTORS } else { vectors };
            let mut sums = _mm512_setzero_si512();
            for i in 0..vectors {
                let x = _mm512_xor_si512(
                    _mm512_loadu_si512(a.add(64 * i).cast()),
                    _mm512_loadu_si512(b.add(64 * i).cast()),
                );
                sums = _mm512_add_epi64(sums, _mm512_popcnt_epi64(x));
            }
            if rest != 0 {
                let x = _mm512_xor_si512(
                    _mm512_maskz_loadu_epi8(rest, a.add(64 * vectors).cast()),
                    _mm512_maskz_loadu_epi8(rest, b.add(64 * vectors).cast()),
                );
                sums = _mm512_add_epi64(sums, _mm512_popcnt_epi64(x));
            }
            sums
        }
    }

    /// The masked-load mask of the bytes after the last whole 64-byte vector.
    fn tail_mask(width: usize) -> __mmask64 {
        (1u64 << (width % 64)) - 1
    }

    /// # Safety
    ///
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512 VPOPCNTDQ, and `b` must be at least as
    /// long as `a`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq")]
    #[inline]
    unsafe fn dist_avx512(a: &[u8], b: &[u8]) -> u32 {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            let lanes =
                xor_popcnt_lanes::<0>(a.as_ptr(), b.as_ptr(), a.len() / 64, tail_mask(a.len()));
            _mm512_reduce_add_epi64(lanes) as u32
        }
    }

    /// Horizontal sums of 8 vectors at once (a transpose-and-add tree: 21 instructions where 8
    /// separate reductions take 56), as 8 u32.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn reduce8(v: [__m512i; 8]) -> __m256i {
        let pair =
            |a, b| _mm512_add_epi64(_mm512_unpacklo_epi64(a, b), _mm512_unpackhi_epi64(a, b));
        let (t0, t1, t2, t3) = (
            pair(v[0], v[1]),
            pair(v[2], v[3]),
            pair(v[4], v[5]),
            pair(v[6], v[7]),
        );
        let fold = |a, b| {
            _mm512_add_epi64(
                _mm512_shuffle_i64x2::<0x88>(a, b),
                _mm512_shuffle_i64x2::<0xDD>(a, b),
            )
        };
        _mm512_cvtepi64_epi32(fold(fold(t0, t1), fold(t2, t3)))
    }

    /// Eight rows per step, reduced together by `reduce8`.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512 VPOPCNTDQ; `q` holds `w` bytes and
    /// `rows` at least `out.len() * w`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq")]
    unsafe fn distances_fixed<const VECTORS: usize>(
        q: &[u8],
        rows: &[u8],
        w: usize,
        out: &mut [u32],
    ) {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            let (vectors, rest) = (w / 64, tail_mask(w));
            let groups = out.len() / 8;
            for g in 0..groups {
                let base = rows.as_ptr().add(8 * g * w);
                let mut lanes = [_mm512_setzero_si512(); 8];
                for (r, lane) in lanes.iter_mut().enumerate() {
                    *lane = xor_popcnt_lanes::<VECTORS>(q.as_ptr(), base.add(r * w), vectors, rest);
                }
                _mm256_storeu_si256(out.as_mut_ptr().add(8 * g).cast(), reduce8(lanes));
            }
            let done = groups * 8;
            distances_with(
                |a, b| dist_avx512(a, b),
                q,
                &rows[done * w..],
                w,
                &mut out[done..],
            )
        }
    }

    /// Groups of 8 rows are loaded once (into L1) and compared with every query before the
    /// next group, so a batch of queries costs compute, not memory bandwidth.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512 VPOPCNTDQ; `queries`, `rows` and `out`
    /// hold whole rows of `shape` (`out` is `queries x rows`).
    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq")]
    unsafe fn batch_fixed<const VECTORS: usize>(
        queries: &[u8],
        rows: &[u8],
        shape: Shape,
        out: &mut [u32],
    ) {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            let Shape {
                queries: nq,
                rows: n,
                width: w,
            } = shape;
            let (vectors, rest) = (w / 64, tail_mask(w));
            let groups = n / 8;
            for g in 0..groups {
                let base = rows.as_ptr().add(8 * g * w);
                for q in 0..nq {
                    let query = queries.as_ptr().add(q * w);
                    let mut lanes = [_mm512_setzero_si512(); 8];
                    for (r, lane) in lanes.iter_mut().enumerate() {
                        *lane = xor_popcnt_lanes::<VECTORS>(query, base.add(r * w), vectors, rest);
                    }
                    _mm256_storeu_si256(out.as_mut_ptr().add(q * n + 8 * g).cast(), reduce8(lanes));
                }
            }
            for q in 0..nq {
                let query = &queries[q * w..(q + 1) * w];
                for r in groups * 8..n {
                    out[q * n + r] = dist_avx512(query, &rows[r * w..(r + 1) * w]);
                }
            }
        }
    }

    /// # Safety
    ///
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512 VPOPCNTDQ; `queries`, `rows` and `out`
    /// hold whole rows of `shape` (`out` is `queries x rows`).
    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq")]
    pub(super) unsafe fn distances_batch_avx512(
        queries: &[u8],
        rows: &[u8],
        shape: Shape,
        out: &mut [u32],
    ) {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            match shape.width / 64 {
                1 => batch_fixed::<1>(queries, rows, shape, out),
                2 => batch_fixed::<2>(queries, rows, shape, out),
                3 => batch_fixed::<3>(queries, rows, shape, out),
                4 => batch_fixed::<4>(queries, rows, shape, out),
                5 => batch_fixed::<5>(queries, rows, shape, out),
                6 => batch_fixed::<6>(queries, rows, shape, out),
                8 => batch_fixed::<8>(queries, rows, shape, out),
                _ => batch_fixed::<0>(queries, rows, shape, out),
            }
        }
    }

    /// Common widths (up to 4096 bits) get a fully unrolled loop.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F, AVX-512BW and AVX-512 VPOPCNTDQ; `q` holds `w` bytes and
    /// `rows` at least `out.len() * w`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vpopcntdq")]
    pub(super) unsafe fn distances_avx512(q: &[u8], rows: &[u8], w: usize, out: &mut [u32]) {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            match w / 64 {
                1 => distances_fixed::<1>(q, rows, w, out),
                2 => distances_fixed::<2>(q, rows, w, out),
                3 => distances_fixed::<3>(q, rows, w, out),
                4 => distances_fixed::<4>(q, rows, w, out),
                5 => distances_fixed::<5>(q, rows, w, out),
                6 => distances_fixed::<6>(q, rows, w, out),
                8 => distances_fixed::<8>(q, rows, w, out),
                _ => distances_fixed::<0>(q, rows, w, out),
            }
        }
    }

    /// Queries side by side, eight to a vector: word `j` of query `8 * g + l` (little-endian,
    /// the last word zero-padded) at `[(g * words + j) * 8 + l]`; lanes past the last query
    /// are zero.
    pub(super) fn query_lanes(queries: &[u8], width: usize) -> Vec<u64> {
        let words = width.div_ceil(8);
        let count = queries.len() / width;
        let mut lanes = vec![0u64; count.div_ceil(8) * words * 8];
        for (q, query) in queries.chunks_exact(width).enumerate() {
            let (g, l) = (q / 8, q % 8);
            for j in 0..words {
                lanes[(g * words + j) * 8 + l] = word(query, j);
            }
        }
        lanes
    }

    /// Word `j` of a row, zero-padded past its end.
    #[inline(always)]
    fn word(row: &[u8], j: usize) -> u64 {
        let bytes = &row[8 * j..row.len().min(8 * j + 8)];
        let mut padded = [0u8; 8];
        padded[..bytes.len()].copy_from_slice(bytes);
        u64::from_le_bytes(padded)
    }

    /// Rows `row_at(0..count)` (db row ids, ascending) against `8 * G` queries held
    /// lane-wise (`query_lanes`): one row word is broadcast against the same word of every
    /// query, so a row costs `G * words` XOR + VPOPCNTQ + add for `8 * G` distances, with no
    /// horizontal sums. A row that beats some query's current worst is noted without a branch
    /// (`Events`) and reaches the top-k after its block, so the scan loop never leaves its
    /// registers. `WORDS > 0` fixes the whole words per row.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F and AVX-512 VPOPCNTDQ, and `row_at(i)` must be a row of `db`
    /// for every `i < count` (the lanes and events are checked here).
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    unsafe fn scan_lanes<const WORDS: usize, const G: usize>(
        lanes: &[u64],
        db: &[u8],
        width: usize,
        count: usize,
        row_at: impl Fn(usize) -> usize,
        mask: Option<&[bool]>,
        tops: &mut [TopK],
        events: &mut Events,
    ) {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            let full = if WORDS > 0 { WORDS } else { width / 8 };
            let words = width.div_ceil(8);
            let tail = words > full;
            // the raw accesses below stay inside `lanes`, each row of `db` and `events`
            assert!(width > 0 && lanes.len() == G * words * 8 && tops.len() <= 8 * G);
            events.reserve(G);
            let lane = |g: usize, j: usize| {
                _mm512_loadu_si512(lanes.as_ptr().add((g * words + j) * 8).cast())
            };
            let mut worst = [_mm512_setzero_si512(); G];
            let mut start = 0;
            while start < count {
                let end = count.min(start + EVENT_BLOCK);
                for (g, worst) in worst.iter_mut().enumerate() {
                    *worst = thresholds(tops, g);
                }
                let mut noted = 0;
                for i in start..end {
                    let row = row_at(i);
                    let bytes = &db[row * width..(row + 1) * width];
                    let at = |j: usize| {
                        _mm512_set1_epi64(bytes.as_ptr().add(8 * j).cast::<i64>().read_unaligned())
                    };
                    let mut acc = [_mm512_setzero_si512(); G];
                    for j in 0..full {
                        let w = at(j);
                        for (g, acc) in acc.iter_mut().enumerate() {
                            let x = _mm512_xor_si512(w, lane(g, j));
                            *acc = _mm512_add_epi64(*acc, _mm512_popcnt_epi64(x));
                        }
                    }
                    if tail {
                        let w = _mm512_set1_epi64(word(bytes, full) as i64);
                        for (g, acc) in acc.iter_mut().enumerate() {
                            let x = _mm512_xor_si512(w, lane(g, full));
                            *acc = _mm512_add_epi64(*acc, _mm512_popcnt_epi64(x));
                        }
                    }
                    // written at slot `noted` every time; kept only when some lane improved
                    let mut any = 0;
                    for (g, acc) in acc.iter().enumerate() {
                        let better = _mm512_cmplt_epu64_mask(*acc, worst[g]);
                        let slot = noted * G + g;
                        _mm512_storeu_si512(events.dists.as_mut_ptr().add(8 * slot).cast(), *acc);
                        *events.better.as_mut_ptr().add(slot) = better;
                        any |= better;
                    }
                    *events.rows.as_mut_ptr().add(noted) = row;
                    noted += usize::from(any != 0);
                }
                events.push_to(noted, G, mask, tops);
                start = end;
            }
        }
    }

    /// The current worst kept distance of queries `8 * g..8 * g + 8`, lane-wise; 0 (nothing
    /// passes) past the last query.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn thresholds(tops: &[TopK], g: usize) -> __m512i {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            let mut worst = [0u64; 8];
            for (w, top) in worst.iter_mut().zip(tops.iter().skip(8 * g)) {
                *w = u64::from(top.worst);
            }
            _mm512_loadu_si512(worst.as_ptr().cast())
        }
    }

    /// Rows noted by `scan_lanes` in one block: their distances to every query of the pass
    /// and which queries they improve on.
    #[derive(Default)]
    pub(super) struct Events {
        dists: Vec<u64>,
        better: Vec<u8>,
        rows: Vec<usize>,
    }

    impl Events {
        /// Room for a block of rows against `groups` groups of eight queries.
        fn reserve(&mut self, groups: usize) {
            self.dists.resize(EVENT_BLOCK * groups * 8, 0);
            self.better.resize(EVENT_BLOCK * groups, 0);
            self.rows.resize(EVENT_BLOCK, 0);
        }

        /// Offers the first `noted` rows to the top-k of the queries they improved on.
        fn push_to(&self, noted: usize, groups: usize, mask: Option<&[bool]>, tops: &mut [TopK]) {
            for (e, &row) in self.rows[..noted].iter().enumerate() {
                if mask.is_some_and(|m| !m[row]) {
                    continue;
                }
                for (g, tops) in tops.chunks_mut(8).enumerate().take(groups) {
                    let mut better = self.better[e * groups + g];
                    let dists = &self.dists[(e * groups + g) * 8..][..8];
                    while better != 0 {
                        let l = better.trailing_zeros() as usize;
                        let (top, dist) = (&mut tops[l], dists[l] as u32);
                        // the block's thresholds may have dropped since the row was noted
                        if top.wants(dist) {
                            top.push(dist, row);
                        }
                        better &= better - 1;
                    }
                }
            }
        }
    }

    /// `scan_lanes` for up to 16 queries, with the common widths (384 to 2560 bits) unrolled.
    ///
    /// # Safety
    ///
    /// As for `scan_lanes`: the CPU must support AVX-512F and AVX-512 VPOPCNTDQ, and `row_at(i)`
    /// must be a row of `db` for every `i < count`.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx512f,avx512vpopcntdq")]
    pub(super) unsafe fn scan_group(
        lanes: &[u64],
        db: &[u8],
        width: usize,
        count: usize,
        row_at: impl Fn(usize) -> usize,
        mask: Option<&[bool]>,
        tops: &mut [TopK],
        events: &mut Events,
    ) {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            macro_rules! widths {
                ($g:literal) => {
                    match width / 8 {
                        6 => {
                            scan_lanes::<6, $g>(lanes, db, width, count, row_at, mask, tops, events)
                        }
                        8 => {
                            scan_lanes::<8, $g>(lanes, db, width, count, row_at, mask, tops, events)
                        }
                        12 => scan_lanes::<12, $g>(
                            lanes, db, width, count, row_at, mask, tops, events,
                        ),
                        16 => scan_lanes::<16, $g>(
                            lanes, db, width, count, row_at, mask, tops, events,
                        ),
                        32 => scan_lanes::<32, $g>(
                            lanes, db, width, count, row_at, mask, tops, events,
                        ),
                        40 => scan_lanes::<40, $g>(
                            lanes, db, width, count, row_at, mask, tops, events,
                        ),
                        _ => {
                            scan_lanes::<0, $g>(lanes, db, width, count, row_at, mask, tops, events)
                        }
                    }
                };
            }
            if tops.len() > 8 {
                widths!(2)
            } else {
                widths!(1)
            }
        }
    }

    // the row loop of AVX-512 is `distances_avx512`, unrolled for common widths
    kernel_loops!(
        "avx512f,avx512bw,avx512vpopcntdq",
        "AVX-512F, AVX-512BW and AVX-512 VPOPCNTDQ",
        dist_avx512,
        distances_at_avx512
    );
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::{dist_reference, distances_at_with, distances_with};
    use std::arch::aarch64::*;

    /// CNT per byte, summed across up to 31 vectors before the lanes are added up.
    ///
    /// # Safety
    ///
    /// The CPU must support NEON, and `b` must be at least as long as `a`.
    #[target_feature(enable = "neon")]
    #[inline]
    unsafe fn dist_neon(a: &[u8], b: &[u8]) -> u32 {
        let vectors = a.len() / 16;
        let mut total = 0u32;
        let mut i = 0;
        while i < vectors {
            // at most 31 vectors of per-byte counts (<= 8 each) fit in a u8 lane
            let end = vectors.min(i + 31);
            // SAFETY: the caller upholds this function's contract (see `# Safety`): NEON runs,
            // and both slices hold the `16 * vectors` bytes read.
            unsafe {
                let mut counts = vdupq_n_u8(0);
                while i < end {
                    let x = veorq_u8(
                        vld1q_u8(a.as_ptr().add(16 * i)),
                        vld1q_u8(b.as_ptr().add(16 * i)),
                    );
                    counts = vaddq_u8(counts, vcntq_u8(x));
                    i += 1;
                }
                total += u32::from(vaddlvq_u8(counts));
            }
        }
        let done = vectors * 16;
        total + dist_reference(&a[done..], &b[done..])
    }

    kernel_loops!("neon", "NEON", dist_neon, distances_neon, distances_at_neon);
}

/// The k best (distance, row) pairs seen so far; rows arrive in ascending order. Candidates
/// that beat the current threshold are appended and cut back to the k best when the buffer
/// fills: an append is a store, where a heap would sift on every early hit.
struct TopK {
    k: usize,
    /// Candidates, in ascending row order.
    hits: Vec<(u32, usize)>,
    /// The k-th best distance at the last cut: a later row must beat it strictly (an equal
    /// distance loses on the row index). `u32::MAX` until the first cut.
    worst: u32,
    /// The distances of `hits`, reordered by a cut.
    scratch: Vec<u32>,
}

impl TopK {
    fn new(k: usize) -> TopK {
        TopK {
            k,
            hits: Vec::with_capacity(Self::capacity(k).min(1024)),
            worst: u32::MAX,
            scratch: Vec::new(),
        }
    }

    /// Candidates held before a cut: twice k keeps the cuts linear in the number of hits.
    fn capacity(k: usize) -> usize {
        2 * k + 64
    }

    #[inline(always)]
    fn wants(&self, dist: u32) -> bool {
        dist < self.worst
    }

    /// Adds a candidate the caller checked with `wants`.
    #[inline]
    fn push(&mut self, dist: u32, row: usize) {
        self.hits.push((dist, row));
        if self.hits.len() >= Self::capacity(self.k) {
            self.cut();
        }
    }

    /// Keeps the k best hits: all nearer than the k-th best distance, then the earliest rows
    /// at that distance. Selecting on the bare distances is much cheaper than on pairs.
    fn cut(&mut self) {
        self.scratch.clear();
        self.scratch.extend(self.hits.iter().map(|&(dist, _)| dist));
        let (nearer, &mut kth, _) = self.scratch.select_nth_unstable(self.k - 1);
        let mut ties = self.k - nearer.iter().filter(|&&d| d < kth).count();
        self.hits.retain(|&(dist, _)| {
            let keep = dist < kth || (dist == kth && ties > 0);
            ties -= usize::from(dist == kth && keep);
            keep
        });
        self.worst = kth;
    }
}

/// The result of a search: `ids` and `dists` are `queries x k` row-major, where `k` is the
/// number of hits per query (`min(k, allowed rows)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopKResult {
    pub k: usize,
    pub ids: Vec<i64>,
    pub dists: Vec<u32>,
}

/// The shape of a search: `queries` rows and `db` rows of `width` bytes each.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub queries: usize,
    pub rows: usize,
    pub width: usize,
}

/// Exact top-`k` rows of `db` for each query. `threads == 0` picks a thread count from the
/// size of the scan.
pub fn topk(
    queries: &[u8],
    db: &[u8],
    shape: Shape,
    k: usize,
    filter: Filter<'_>,
    kernel: Kernel,
    threads: usize,
) -> CoreResult<TopKResult> {
    let Shape {
        queries: q,
        rows: n,
        width,
    } = shape;
    if queries.len() != q * width || db.len() != n * width {
        return value_error("queries and db must hold whole rows of the given width");
    }
    let owned_ids;
    let filter = match filter {
        Filter::Mask(mask) if mask.len() != n => {
            return value_error(format!(
                "allowed mask has {} entries but db has {n} rows",
                mask.len()
            ))
        }
        // a sparse mask is cheaper to scan as a list of rows
        Filter::Mask(mask) if mask.iter().filter(|&&m| m).count() * 8 < n => {
            owned_ids = (0..n).filter(|&i| mask[i]).collect::<Vec<_>>();
            Filter::Ids(&owned_ids)
        }
        Filter::Ids(ids) => {
            if ids.windows(2).any(|w| w[0] >= w[1]) {
                return value_error("allowed row ids must be sorted and unique");
            }
            if let Some(&bad) = ids.iter().find(|&&id| id >= n) {
                return value_error(format!("allowed row id {bad} is out of range for {n} rows"));
            }
            filter
        }
        other => other,
    };
    let candidates = match filter {
        Filter::All => n,
        Filter::Mask(mask) => mask.iter().filter(|&&m| m).count(),
        Filter::Ids(ids) => ids.len(),
    };
    let k = k.min(candidates);
    if k == 0 || q == 0 {
        return Ok(TopKResult {
            k,
            ids: Vec::new(),
            dists: Vec::new(),
        });
    }
    let span = match filter {
        Filter::Ids(ids) => ids.len(),
        _ => n,
    };
    let threads = if threads == 0 {
        threads_for(span * width.max(1) * q, MIN_BYTES_PER_THREAD)
    } else {
        threads.min(span.max(1))
    };
    let scan = |range: std::ops::Range<usize>| scan(queries, db, shape, k, filter, kernel, range);
    let partials: Vec<Vec<TopK>> = if threads == 1 {
        vec![scan(0..span)]
    } else {
        thread::scope(|s| {
            let handles: Vec<_> = split(span, threads)
                .into_iter()
                .map(|range| s.spawn(move || scan(range)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    };
    let mut result = TopKResult {
        k,
        ids: Vec::with_capacity(q * k),
        dists: Vec::with_capacity(q * k),
    };
    for query in 0..q {
        let mut hits: Vec<(u32, usize)> = partials
            .iter()
            .flat_map(|part| part[query].hits.iter().copied())
            .collect();
        hits.sort_unstable();
        for &(dist, row) in &hits[..k] {
            result.ids.push(row as i64);
            result.dists.push(dist);
        }
    }
    Ok(result)
}

/// One thread's share: rows `range` of db (or of the id list), every query, one top-k each.
fn scan(
    queries: &[u8],
    db: &[u8],
    shape: Shape,
    k: usize,
    filter: Filter<'_>,
    kernel: Kernel,
    range: std::ops::Range<usize>,
) -> Vec<TopK> {
    let (width, nq) = (shape.width, shape.queries);
    let mut tops: Vec<TopK> = (0..nq).map(|_| TopK::new(k)).collect();
    #[cfg(target_arch = "x86_64")]
    if kernel.0 == Isa::Avx512 && nq >= LANE_MIN_QUERIES && width > 0 {
        scan_lanes(queries, db, width, filter, range, &mut tops);
        return tops;
    }
    // rows per step: L2-sized, and few enough that the distances of all queries stay small
    let block = (BLOCK_BYTES / width.max(1))
        .min(MAX_BATCH_DISTANCES / nq.max(1))
        .max(16);
    let mut dists = vec![0u32; block * nq.max(1)];
    let mut start = range.start;
    while start < range.end {
        let end = range.end.min(start + block);
        let m = end - start;
        match filter {
            Filter::Ids(ids) => {
                let ids = &ids[start..end];
                for (q, top) in tops.iter_mut().enumerate() {
                    let query = &queries[q * width..(q + 1) * width];
                    kernel.distances_at(query, db, width, ids, &mut dists[..m]);
                    for (&dist, &row) in dists.iter().zip(ids) {
                        if top.wants(dist) {
                            top.push(dist, row);
                        }
                    }
                }
            }
            Filter::All | Filter::Mask(_) => {
                let rows = &db[start * width..end * width];
                let block_shape = Shape {
                    queries: nq,
                    rows: m,
                    width,
                };
                kernel.distances_batch(queries, rows, block_shape, &mut dists[..nq * m]);
                for (top, dists) in tops.iter_mut().zip(dists.chunks_exact(m)) {
                    for (offset, &dist) in dists.iter().enumerate() {
                        let row = start + offset;
                        let allowed = match filter {
                            Filter::Mask(mask) => mask[row],
                            _ => true,
                        };
                        if top.wants(dist) && allowed {
                            top.push(dist, row);
                        }
                    }
                }
            }
        }
        start = end;
    }
    tops
}

/// A batch on AVX-512: queries side by side in SIMD lanes (`x86::scan_lanes`), sixteen per
/// pass; a larger batch takes several passes over blocks of rows that stay in L1 meanwhile.
#[cfg(target_arch = "x86_64")]
fn scan_lanes(
    queries: &[u8],
    db: &[u8],
    width: usize,
    filter: Filter<'_>,
    range: std::ops::Range<usize>,
    tops: &mut [TopK],
) {
    let passes: Vec<Vec<u64>> = queries
        .chunks(16 * width)
        .map(|pass| x86::query_lanes(pass, width))
        .collect();
    let block = if passes.len() == 1 {
        range.len()
    } else {
        (LANE_BLOCK_BYTES / width).max(1)
    };
    let mut events = x86::Events::default();
    let mut start = range.start;
    while start < range.end {
        let end = range.end.min(start + block);
        for (lanes, tops) in passes.iter().zip(tops.chunks_mut(16)) {
            let (count, events) = (end - start, &mut events);
            // SAFETY: the caller checked that this CPU runs the AVX-512 kernel.
            unsafe {
                match filter {
                    Filter::Ids(ids) => {
                        let at = |i| ids[start + i];
                        x86::scan_group(lanes, db, width, count, at, None, tops, events)
                    }
                    Filter::Mask(mask) => {
                        let at = |i| start + i;
                        x86::scan_group(lanes, db, width, count, at, Some(mask), tops, events)
                    }
                    Filter::All => {
                        let at = |i| start + i;
                        x86::scan_group(lanes, db, width, count, at, None, tops, events)
                    }
                }
            }
        }
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random bytes (xorshift), so tests need no dependency.
    fn bytes(len: usize, seed: u64) -> Vec<u8> {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 24) as u8
            })
            .collect()
    }

    /// Brute force: every allowed row's distance, sorted by (distance, row).
    fn brute(queries: &[u8], db: &[u8], width: usize, k: usize, allowed: &[bool]) -> TopKResult {
        let n = db.len() / width;
        let mut result = TopKResult {
            k: k.min(allowed.iter().filter(|&&a| a).count()),
            ids: vec![],
            dists: vec![],
        };
        for query in queries.chunks_exact(width) {
            let mut all: Vec<(u32, usize)> = (0..n)
                .filter(|&i| allowed[i])
                .map(|i| (dist_reference(query, &db[i * width..(i + 1) * width]), i))
                .collect();
            all.sort_unstable();
            for &(d, i) in &all[..result.k] {
                result.ids.push(i as i64);
                result.dists.push(d);
            }
        }
        result
    }

    #[test]
    fn every_kernel_matches_the_reference_distance() {
        for kernel in Kernel::available() {
            for width in [
                0, 1, 7, 8, 31, 32, 33, 48, 63, 64, 65, 127, 200, 320, 384, 512, 1000, 2049,
            ] {
                let rows = 13;
                let (query, db) = (bytes(width, 1), bytes(width * rows, width as u64));
                let mut out = vec![0; rows];
                kernel.distances(&query, &db, width, &mut out);
                let ids: Vec<usize> = (0..rows).rev().collect();
                let mut out_at = vec![0; rows];
                kernel.distances_at(&query, &db, width, &ids, &mut out_at);
                for i in 0..rows {
                    let expected = dist_reference(&query, &db[i * width..(i + 1) * width]);
                    assert_eq!(out[i], expected, "{kernel:?} width {width} row {i}");
                    assert_eq!(out_at[rows - 1 - i], expected, "{kernel:?} by id");
                }
            }
        }
    }

    #[test]
    fn batched_distances_match_the_reference() {
        for kernel in Kernel::available() {
            for width in [0, 5, 48, 64, 320, 1000] {
                let (nq, n) = (3, 21);
                let (queries, rows) = (bytes(width * nq, 5), bytes(width * n, 6));
                let mut out = vec![0; nq * n];
                let shape = Shape {
                    queries: nq,
                    rows: n,
                    width,
                };
                kernel.distances_batch(&queries, &rows, shape, &mut out);
                for q in 0..nq {
                    for r in 0..n {
                        let want = dist_reference(
                            &queries[q * width..(q + 1) * width],
                            &rows[r * width..(r + 1) * width],
                        );
                        assert_eq!(out[q * n + r], want, "{kernel:?} width {width}");
                    }
                }
            }
        }
    }

    /// NEON is part of every aarch64 CPU: the tests above must have compared it with the
    /// reference, not only the portable kernel.
    #[cfg(target_arch = "aarch64")]
    #[test]
    fn neon_is_among_the_kernels_tested() {
        assert_eq!(Kernel::best().name(), "neon");
    }

    #[test]
    fn all_ones_against_zeros_counts_every_bit() {
        for kernel in Kernel::available() {
            let width = 2049;
            let mut out = [0];
            kernel.distances(&vec![0xff; width], &vec![0; width], width, &mut out);
            assert_eq!(out[0], 8 * width as u32, "{kernel:?}");
        }
    }

    #[test]
    fn topk_matches_brute_force_for_every_kernel_filter_and_thread_count() {
        let width = 40;
        let n = 3000;
        // few distinct rows, so there are many ties
        let distinct = bytes(width * 50, 7);
        let db: Vec<u8> = (0..n)
            .flat_map(|i| distinct[(i * 31 % 50) * width..][..width].to_vec())
            .collect();
        let queries = bytes(width * 5, 9);
        let mask: Vec<bool> = (0..n).map(|i| i % 3 != 0).collect();
        let sparse: Vec<bool> = (0..n).map(|i| i % 97 == 5).collect();
        let ids: Vec<usize> = (0..n).filter(|&i| sparse[i]).collect();
        for kernel in Kernel::available() {
            for threads in [1, 3] {
                for k in [0, 1, 10, 64, n + 5] {
                    let all = vec![true; n];
                    let cases = [
                        (Filter::All, &all),
                        (Filter::Mask(&mask), &mask),
                        (Filter::Mask(&sparse), &sparse),
                        (Filter::Ids(&ids), &sparse),
                    ];
                    for (filter, allowed) in cases {
                        let shape = Shape {
                            queries: 5,
                            rows: n,
                            width,
                        };
                        let got = topk(&queries, &db, shape, k, filter, kernel, threads).unwrap();
                        let mut want = brute(&queries, &db, width, k, allowed);
                        if want.k == 0 {
                            want.ids.clear();
                            want.dists.clear();
                        }
                        assert_eq!(got, want, "{kernel:?} threads {threads} k {k} {filter:?}");
                    }
                }
            }
        }
    }

    /// Batch sizes around the SIMD lane groups (8 queries) and passes (16 queries), at widths
    /// of every unrolled case, their neighbours and ones with a partial last word.
    #[test]
    fn batches_of_every_size_and_width_match_brute_force() {
        let n = 250;
        for width in [1, 5, 8, 47, 48, 52, 64, 96, 128, 256, 320, 328] {
            // two byte values make many ties
            let db: Vec<u8> = bytes(width * n, 3).iter().map(|b| b & 0x81).collect();
            let mask: Vec<bool> = (0..n).map(|i| i % 5 != 2).collect();
            let ids: Vec<usize> = (0..n).filter(|i| i % 7 == 3).collect();
            let by_id: Vec<bool> = (0..n).map(|i| i % 7 == 3).collect();
            for nq in [2, 3, 4, 8, 9, 16, 17, 33] {
                let queries: Vec<u8> = bytes(width * nq, 4).iter().map(|b| b & 0x81).collect();
                let shape = Shape {
                    queries: nq,
                    rows: n,
                    width,
                };
                let all = vec![true; n];
                for (filter, allowed) in [
                    (Filter::All, &all),
                    (Filter::Mask(&mask), &mask),
                    (Filter::Ids(&ids), &by_id),
                ] {
                    for k in [1, 30] {
                        let want = brute(&queries, &db, width, k, allowed);
                        for kernel in [Kernel::best(), Kernel::SCALAR] {
                            let got = topk(&queries, &db, shape, k, filter, kernel, 1).unwrap();
                            assert_eq!(got, want, "{kernel:?} width {width} nq {nq} k {k}");
                        }
                    }
                }
            }
        }
    }

    const ONE_BY_TEN: Shape = Shape {
        queries: 1,
        rows: 10,
        width: 64,
    };

    #[test]
    fn nothing_allowed_gives_no_hits() {
        let db = bytes(64 * 10, 3);
        let none = vec![false; 10];
        let (q, best) = (&db[..64], Kernel::best());
        let got = topk(q, &db, ONE_BY_TEN, 5, Filter::Mask(&none), best, 0).unwrap();
        assert_eq!((got.k, got.ids.len()), (0, 0));
        let got = topk(q, &db, ONE_BY_TEN, 5, Filter::Ids(&[]), best, 0).unwrap();
        assert_eq!(got.k, 0);
    }

    #[test]
    fn rows_of_zero_bytes_are_all_at_distance_zero() {
        let shape = Shape {
            queries: 2,
            rows: 4,
            width: 0,
        };
        let got = topk(&[], &[], shape, 3, Filter::All, Kernel::best(), 0).unwrap();
        assert_eq!(got.ids, vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(got.dists, vec![0; 6]);
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let db = bytes(64 * 10, 3);
        let (q, scalar) = (&db[..64], Kernel::SCALAR);
        assert!(topk(&db[..10], &db, ONE_BY_TEN, 5, Filter::All, scalar, 1).is_err());
        assert!(topk(q, &db[..70], ONE_BY_TEN, 5, Filter::All, scalar, 1).is_err());
        assert!(topk(q, &db, ONE_BY_TEN, 5, Filter::Mask(&[true]), scalar, 1).is_err());
        assert!(topk(q, &db, ONE_BY_TEN, 5, Filter::Ids(&[10]), scalar, 1).is_err());
        assert!(topk(q, &db, ONE_BY_TEN, 5, Filter::Ids(&[2, 1]), scalar, 1).is_err());
        assert!(Kernel::from_name("no-such-kernel").is_err());
    }
}
