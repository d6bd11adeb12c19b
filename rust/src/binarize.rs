//! Sign binarization: bit = 1 where `x - center > 0`, packed MSB-first (NumPy `packbits` order).

use std::thread;

use crate::error::{value_error, CoreResult};
use crate::parallel::{split, threads_for};

/// Below this many bytes of input per thread, another thread costs more than it saves.
const MIN_BYTES_PER_THREAD: usize = 8 << 20;

/// Packed bytes per row of `dims` bits.
pub fn packed_width(dims: usize) -> usize {
    dims.div_ceil(8)
}

/// Binarizes `rows` rows of `dims` floats into `out` (`rows * packed_width(dims)` bytes).
/// `x > c` is the same test as `x - c > 0` for floats (no finite difference rounds to zero).
/// `threads == 0` picks a thread count from the size of the input.
pub fn binarize(
    x: &[f32],
    rows: usize,
    dims: usize,
    center: Option<&[f32]>,
    out: &mut [u8],
    threads: usize,
) -> CoreResult<()> {
    let width = packed_width(dims);
    if x.len() != rows * dims || out.len() != rows * width {
        return value_error("binarize buffers do not match the given dims");
    }
    if center.is_some_and(|c| c.len() != dims) {
        return value_error("center must have one value per dimension");
    }
    let zeros;
    let center = match center {
        Some(c) => c,
        None => {
            zeros = vec![0.0f32; dims];
            &zeros
        }
    };
    let threads = match threads {
        0 => threads_for(x.len() * 4, MIN_BYTES_PER_THREAD),
        n => n,
    }
    .min(rows.max(1));
    let nan = if threads == 1 {
        pack_rows(x, center, dims, out)
    } else {
        thread::scope(|s| {
            let mut rest = out;
            let mut parts = Vec::with_capacity(threads);
            for range in split(rows, threads) {
                let (mine, tail) = rest.split_at_mut(range.len() * width);
                rest = tail;
                let x = &x[range.start * dims..range.end * dims];
                parts.push(s.spawn(move || pack_rows(x, center, dims, mine)));
            }
            parts.into_iter().fold(false, |nan, part| {
                nan | part.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
            })
        })
    };
    if nan {
        return value_error("binarize input contains NaN");
    }
    if center.iter().any(|c| c.is_nan()) {
        return value_error("binarize center contains NaN");
    }
    Ok(())
}

/// Packs every row with the fastest packer this CPU can run; returns whether `x` holds a NaN.
fn pack_rows(x: &[f32], center: &[f32], dims: usize, out: &mut [u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if is_x86_feature_detected!("avx512f") {
            // SAFETY: AVX-512F was detected.
            return unsafe { x86::pack_rows_avx512(x, center, dims, out) };
        }
        if is_x86_feature_detected!("avx2") {
            // SAFETY: AVX2 was detected.
            return unsafe { x86::pack_rows_avx2(x, center, dims, out) };
        }
    }
    pack_rows_with(pack_row, x, center, dims, out)
}

/// Runs `pack` over every row; the SIMD packers inline it into their own loop.
#[inline(always)]
fn pack_rows_with(
    pack: impl Fn(&[f32], &[f32], &mut [u8]) -> bool,
    x: &[f32],
    center: &[f32],
    dims: usize,
    out: &mut [u8],
) -> bool {
    let width = packed_width(dims);
    let mut nan = false;
    for (row, packed) in x
        .chunks_exact(dims.max(1))
        .zip(out.chunks_exact_mut(width.max(1)))
    {
        nan |= pack(row, center, packed);
    }
    nan
}

/// The portable reference: packs one row; returns whether it holds a NaN.
fn pack_row(row: &[f32], center: &[f32], out: &mut [u8]) -> bool {
    let mut nan = false;
    for (i, (&v, &c)) in row.iter().zip(center).enumerate() {
        if i % 8 == 0 {
            out[i / 8] = 0;
        }
        out[i / 8] |= u8::from(v > c) << (7 - i % 8);
        nan |= v.is_nan();
    }
    nan
}

/// Reverses the bits of each byte: SIMD compares put float 0 in bit 0, `packbits` wants it in
/// bit 7.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn msb_first(m: u64) -> u64 {
    let m = ((m >> 1) & 0x5555_5555_5555_5555) | ((m & 0x5555_5555_5555_5555) << 1);
    let m = ((m >> 2) & 0x3333_3333_3333_3333) | ((m & 0x3333_3333_3333_3333) << 2);
    ((m >> 4) & 0x0F0F_0F0F_0F0F_0F0F) | ((m & 0x0F0F_0F0F_0F0F_0F0F) << 4)
}

/// The row loop of one SIMD packer: `$pack_rows` runs `$pack_row` over every row, compiled with
/// its target features so that the packer inlines into it. Every SIMD packer takes its entry
/// point from here, so none can differ from the others in contract or shape.
#[cfg(target_arch = "x86_64")]
macro_rules! packer_loop {
    ($features:literal, $cpu:literal, $pack_row:ident, $pack_rows:ident) => {
        /// # Safety
        ///
        #[doc = concat!("The CPU must support ", $cpu, "; `x` holds whole rows of `dims` floats,")]
        /// `c` holds `dims` floats and `out` a packed row per row of `x`.
        #[target_feature(enable = $features)]
        pub(super) unsafe fn $pack_rows(x: &[f32], c: &[f32], dims: usize, out: &mut [u8]) -> bool {
            // SAFETY: the caller upholds this function's contract (see `# Safety`).
            unsafe { pack_rows_with(|row, c, out| $pack_row(row, c, out), x, c, dims, out) }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{msb_first, pack_row, pack_rows_with};
    use std::arch::x86_64::*;

    packer_loop!("avx512f", "AVX-512F", pack_row_avx512, pack_rows_avx512);
    packer_loop!("avx2", "AVX2", pack_row_avx2, pack_rows_avx2);

    /// Sixteen floats per compare into a mask register; 64 bits are gathered into one word
    /// before their bytes are bit-reversed and stored. The last partial vector is a masked load.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX-512F, and `center` must be at least as long as `row`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn pack_row_avx512(row: &[f32], center: &[f32], out: &mut [u8]) -> bool {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            let (n, v, c) = (row.len(), row.as_ptr(), center.as_ptr());
            let mut unordered: __mmask16 = 0;
            let mut i = 0;
            while i + 64 <= n {
                let mut bits = 0u64;
                for part in 0..4 {
                    let x = _mm512_loadu_ps(v.add(i + 16 * part));
                    let gt =
                        _mm512_cmp_ps_mask::<_CMP_GT_OQ>(x, _mm512_loadu_ps(c.add(i + 16 * part)));
                    unordered |= _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(x, x);
                    bits |= u64::from(gt) << (16 * part);
                }
                out[i / 8..i / 8 + 8].copy_from_slice(&msb_first(bits).to_le_bytes());
                i += 64;
            }
            while i < n {
                let take = (n - i).min(16);
                let lanes: __mmask16 = ((1u32 << take) - 1) as u16;
                let x = _mm512_maskz_loadu_ps(lanes, v.add(i));
                let gt = _mm512_mask_cmp_ps_mask::<_CMP_GT_OQ>(
                    lanes,
                    x,
                    _mm512_maskz_loadu_ps(lanes, c.add(i)),
                );
                unordered |= _mm512_mask_cmp_ps_mask::<_CMP_UNORD_Q>(lanes, x, x);
                let bytes = msb_first(u64::from(gt)).to_le_bytes();
                let len = take.div_ceil(8);
                out[i / 8..i / 8 + len].copy_from_slice(&bytes[..len]);
                i += 16;
            }
            unordered != 0
        }
    }

    /// Eight floats per compare, `movemask` to eight bits, eight of them gathered into one word
    /// before their bytes are bit-reversed and stored.
    ///
    /// # Safety
    ///
    /// The CPU must support AVX2, and `center` must be at least as long as `row`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn pack_row_avx2(row: &[f32], center: &[f32], out: &mut [u8]) -> bool {
        // SAFETY: the caller upholds this function's contract (see `# Safety`).
        unsafe {
            let (n, v, c) = (row.len(), row.as_ptr(), center.as_ptr());
            let mut unordered = _mm256_setzero_ps();
            let mut i = 0;
            while i + 64 <= n {
                let mut bits = 0u64;
                for part in 0..8 {
                    let x = _mm256_loadu_ps(v.add(i + 8 * part));
                    let gt = _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_loadu_ps(c.add(i + 8 * part)));
                    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps::<_CMP_UNORD_Q>(x, x));
                    bits |= u64::from(_mm256_movemask_ps(gt) as u8) << (8 * part);
                }
                out[i / 8..i / 8 + 8].copy_from_slice(&msb_first(bits).to_le_bytes());
                i += 64;
            }
            let tail = pack_row(&row[i..], &center[i..], &mut out[i / 8..]);
            _mm256_movemask_ps(unordered) != 0 || tail
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(x: &[f32], dims: usize, center: &[f32]) -> Vec<u8> {
        let width = packed_width(dims);
        let mut out = vec![0u8; x.len() / dims * width];
        for (i, &v) in x.iter().enumerate() {
            let (r, d) = (i / dims, i % dims);
            if v - center[d] > 0.0 {
                out[r * width + d / 8] |= 0x80 >> (d % 8);
            }
        }
        out
    }

    #[test]
    fn matches_the_bitwise_reference_for_odd_dims() {
        for dims in [1, 7, 8, 9, 15, 16, 63, 64, 65, 384] {
            let x: Vec<f32> = (0..dims * 5)
                .map(|i| ((i * 7919) % 13) as f32 - 6.0)
                .collect();
            let center: Vec<f32> = (0..dims).map(|d| (d % 3) as f32 - 1.0).collect();
            let mut out = vec![0u8; 5 * packed_width(dims)];
            binarize(&x, 5, dims, Some(&center), &mut out, 0).unwrap();
            assert_eq!(out, reference(&x, dims, &center), "dims {dims}");
            binarize(&x, 5, dims, None, &mut out, 0).unwrap();
            assert_eq!(out, reference(&x, dims, &vec![0.0; dims]), "dims {dims}");
        }
    }

    #[test]
    fn simd_and_portable_packers_agree() {
        for dims in [1, 7, 8, 15, 16, 17, 63, 64, 65, 77, 128, 130, 384, 400] {
            let rows = 3;
            let x: Vec<f32> = (0..rows * dims)
                .map(|i| ((i * 31) % 17) as f32 - 8.0)
                .collect();
            let center: Vec<f32> = (0..dims).map(|i| (i % 5) as f32 - 2.0).collect();
            let width = packed_width(dims);
            let mut want = vec![0u8; rows * width];
            assert!(!pack_rows_with(pack_row, &x, &center, dims, &mut want));
            for (name, pack) in packers() {
                let mut got = vec![0xAAu8; rows * width];
                assert!(!pack(&x, &center, dims, &mut got));
                assert_eq!(got, want, "{name} dims {dims}");
                for at in [0, dims / 2, dims - 1, rows * dims - 1] {
                    let mut nan = x.clone();
                    nan[at] = f32::NAN;
                    assert!(
                        pack(&nan, &center, dims, &mut got),
                        "{name} dims {dims} NaN {at}"
                    );
                }
            }
        }
    }

    type Packer = fn(&[f32], &[f32], usize, &mut [u8]) -> bool;

    /// Every row packer this CPU can run, the portable reference first.
    fn packers() -> Vec<(&'static str, Packer)> {
        // only x86 has SIMD packers to add
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut all: Vec<(&'static str, Packer)> = vec![
            ("scalar", |x, c, dims, out| {
                pack_rows_with(pack_row, x, c, dims, out)
            }),
            ("best", pack_rows),
        ];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 was detected.
                all.push(("avx2", |x, c, dims, out| unsafe {
                    x86::pack_rows_avx2(x, c, dims, out)
                }));
            }
            if is_x86_feature_detected!("avx512f") {
                // SAFETY: AVX-512F was detected.
                all.push(("avx512", |x, c, dims, out| unsafe {
                    x86::pack_rows_avx512(x, c, dims, out)
                }));
            }
        }
        all
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn msb_first_reverses_each_byte() {
        let m = 0x0102_0408_1020_4080_u64;
        assert_eq!(msb_first(m), 0x8040_2010_0804_0201);
        assert_eq!(msb_first(0xF0), 0x0F);
    }

    #[test]
    fn every_thread_count_gives_the_same_bits_and_finds_nan() {
        let (rows, dims) = (37, 100);
        let x: Vec<f32> = (0..rows * dims)
            .map(|i| ((i * 13) % 7) as f32 - 3.0)
            .collect();
        let mut want = vec![0u8; rows * packed_width(dims)];
        binarize(&x, rows, dims, None, &mut want, 1).unwrap();
        for threads in [2, 3, 64] {
            let mut got = vec![0u8; want.len()];
            binarize(&x, rows, dims, None, &mut got, threads).unwrap();
            assert_eq!(got, want, "{threads} threads");
            let mut nan = x.clone();
            nan[rows * dims - 1] = f32::NAN;
            assert!(binarize(&nan, rows, dims, None, &mut got, threads).is_err());
        }
    }

    #[test]
    fn zero_and_negative_zero_are_not_positive() {
        let mut out = [0u8];
        binarize(&[0.0, -0.0, 1e-40, -1.0], 1, 4, None, &mut out, 0).unwrap();
        assert_eq!(out, [0b0010_0000]);
    }

    #[test]
    fn nan_is_an_error() {
        let mut out = [0u8];
        let err = binarize(&[f32::NAN], 1, 1, None, &mut out, 0).unwrap_err();
        assert_eq!(err.to_string(), "binarize input contains NaN");
        let err = binarize(&[1.0], 1, 1, Some(&[f32::NAN]), &mut out, 0).unwrap_err();
        assert_eq!(err.to_string(), "binarize center contains NaN");
    }

    #[test]
    fn mismatched_buffers_are_an_error() {
        assert!(binarize(&[1.0; 3], 2, 2, None, &mut [0u8; 2], 0).is_err());
        assert!(binarize(&[1.0; 4], 2, 2, None, &mut [0u8; 1], 0).is_err());
        assert!(binarize(&[1.0; 4], 2, 2, Some(&[0.0]), &mut [0u8; 2], 0).is_err());
        assert!(binarize(&[], 3, 0, None, &mut [], 0).is_ok());
    }
}
