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
    let mut nan = false;
    for r in 0..rows {
        let row = &x[r * dims..(r + 1) * dims];
        let packed = &mut out[r * width..(r + 1) * width];
        let (full_x, tail_x) = row.split_at(dims / 8 * 8);
        let (full_c, tail_c) = center.split_at(dims / 8 * 8);
        for ((byte, xs), cs) in packed
            .iter_mut()
            .zip(full_x.chunks_exact(8))
            .zip(full_c.chunks_exact(8))
        {
            let mut bits = 0u8;
            for t in 0..8 {
                bits |= u8::from(xs[t] > cs[t]) << (7 - t);
                nan |= xs[t].is_nan();
            }
            *byte = bits;
        }
        if !tail_x.is_empty() {
            let mut bits = 0u8;
            for (t, (&v, &c)) in tail_x.iter().zip(tail_c).enumerate() {
                bits |= u8::from(v > c) << (7 - t);
                nan |= v.is_nan();
            }
            packed[width - 1] = bits;
        }
    }
    if nan {
        return value_error("binarize input contains NaN");
    }
    if center.iter().any(|c| c.is_nan()) {
        return value_error("binarize center contains NaN");
    }
    Ok(())
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
