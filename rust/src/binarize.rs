//! Sign binarization: bit = 1 where `x - center > 0`, packed MSB-first (NumPy `packbits` order).

use crate::error::{value_error, CoreResult};

/// Packed bytes per row of `dims` bits.
pub fn packed_width(dims: usize) -> usize {
    dims.div_ceil(8)
}

/// Binarizes `rows` rows of `dims` floats into `out` (`rows * packed_width(dims)` bytes).
/// `x > c` is the same test as `x - c > 0` for floats (no finite difference rounds to zero).
pub fn binarize(
    x: &[f32],
    rows: usize,
    dims: usize,
    center: Option<&[f32]>,
    out: &mut [u8],
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
    let pack: fn(&[f32], &[f32], &mut [u8]) -> bool = pack_row_fn();
    let mut nan = false;
    for r in 0..rows {
        let row = &x[r * dims..(r + 1) * dims];
        nan |= pack(row, center, &mut out[r * width..(r + 1) * width]);
    }
    if nan {
        return value_error("binarize input contains NaN");
    }
    if center.iter().any(|c| c.is_nan()) {
        return value_error("binarize center contains NaN");
    }
    Ok(())
}

/// The fastest row packer this CPU can run.
fn pack_row_fn() -> fn(&[f32], &[f32], &mut [u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 was detected.
        return |row, center, out| unsafe { pack_row_avx2(row, center, out) };
    }
    pack_row
}

/// Packs one row; returns whether it holds a NaN.
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

/// Eight floats per compare; `movemask` puts float 0 in bit 0, so the byte is bit-reversed
/// into `packbits` order.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pack_row_avx2(row: &[f32], center: &[f32], out: &mut [u8]) -> bool {
    use std::arch::x86_64::*;
    let full = row.len() / 8;
    let mut unordered = _mm256_setzero_ps();
    for (j, byte) in out[..full].iter_mut().enumerate() {
        let v = _mm256_loadu_ps(row.as_ptr().add(8 * j));
        let c = _mm256_loadu_ps(center.as_ptr().add(8 * j));
        let gt = _mm256_cmp_ps::<_CMP_GT_OQ>(v, c);
        unordered = _mm256_or_ps(unordered, _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v));
        *byte = (_mm256_movemask_ps(gt) as u8).reverse_bits();
    }
    let tail = pack_row(&row[8 * full..], &center[8 * full..], &mut out[full..]);
    _mm256_movemask_ps(unordered) != 0 || tail
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
            binarize(&x, 5, dims, Some(&center), &mut out).unwrap();
            assert_eq!(out, reference(&x, dims, &center), "dims {dims}");
            binarize(&x, 5, dims, None, &mut out).unwrap();
            assert_eq!(out, reference(&x, dims, &vec![0.0; dims]), "dims {dims}");
        }
    }

    #[test]
    fn simd_and_portable_packers_agree() {
        let row: Vec<f32> = (0..77).map(|i| ((i * 31) % 17) as f32 - 8.0).collect();
        let center: Vec<f32> = (0..77).map(|i| (i % 5) as f32 - 2.0).collect();
        let (mut a, mut b) = ([0u8; 10], [0u8; 10]);
        assert!(!pack_row(&row, &center, &mut a));
        assert!(!pack_row_fn()(&row, &center, &mut b));
        assert_eq!(a, b);
        let mut nan_row = row.clone();
        nan_row[70] = f32::NAN;
        assert!(pack_row_fn()(&nan_row, &center, &mut b));
        nan_row[70] = 0.0;
        nan_row[3] = f32::NAN;
        assert!(pack_row_fn()(&nan_row, &center, &mut b));
    }

    #[test]
    fn zero_and_negative_zero_are_not_positive() {
        let mut out = [0u8];
        binarize(&[0.0, -0.0, 1e-40, -1.0], 1, 4, None, &mut out).unwrap();
        assert_eq!(out, [0b0010_0000]);
    }

    #[test]
    fn nan_is_an_error() {
        let mut out = [0u8];
        let err = binarize(&[f32::NAN], 1, 1, None, &mut out).unwrap_err();
        assert_eq!(err.to_string(), "binarize input contains NaN");
        let err = binarize(&[1.0], 1, 1, Some(&[f32::NAN]), &mut out).unwrap_err();
        assert_eq!(err.to_string(), "binarize center contains NaN");
    }

    #[test]
    fn mismatched_buffers_are_an_error() {
        assert!(binarize(&[1.0; 3], 2, 2, None, &mut [0u8; 2]).is_err());
        assert!(binarize(&[1.0; 4], 2, 2, None, &mut [0u8; 1]).is_err());
        assert!(binarize(&[1.0; 4], 2, 2, Some(&[0.0]), &mut [0u8; 2]).is_err());
        assert!(binarize(&[], 3, 0, None, &mut []).is_ok());
    }
}
