//! int8 vectors for rescoring: a per-row symmetric scale, and dot products against a query.

use crate::error::{value_error, CoreResult};

/// Quantizes rows of `dims` floats: `q = round_half_even(x / scale)` with
/// `scale = max|row| / 127` (0 for an all-zero row, whose codes are all 0).
pub fn quantize(x: &[f32], dims: usize, codes: &mut [i8], scales: &mut [f32]) -> CoreResult<()> {
    if x.len() != codes.len() || x.len() != scales.len() * dims {
        return value_error("quantize_int8 buffers do not match the given dims");
    }
    for (r, scale) in scales.iter_mut().enumerate() {
        let row = &x[r * dims..(r + 1) * dims];
        if !row.iter().all(|v| v.is_finite()) {
            return value_error("quantize_int8 input contains NaN or infinity");
        }
        let amax = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        *scale = amax / 127.0;
        let divisor = if *scale > 0.0 { *scale } else { 1.0 };
        for (code, &v) in codes[r * dims..(r + 1) * dims].iter_mut().zip(row) {
            *code = round_half_even(v / divisor).clamp(-127.0, 127.0) as i8;
        }
    }
    Ok(())
}

/// Round half to even for |v| < 2^22 by adding and removing 1.5 * 2^23: the FPU's default
/// rounding does the work, and unlike `f32::round_ties_even` it vectorizes without SSE4.1.
#[inline(always)]
fn round_half_even(v: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    (v + MAGIC) - MAGIC
}

/// `out[i] = scales[i] * dot(rows[i], query)`: cosine similarity for normalised vectors.
pub fn rescore(query: &[f32], rows: &[i8], scales: &[f32], out: &mut [f32]) -> CoreResult<()> {
    let dims = query.len();
    if rows.len() != scales.len() * dims || out.len() != scales.len() {
        return value_error("rescore buffers do not match the query's dims");
    }
    for (i, (slot, &scale)) in out.iter_mut().zip(scales).enumerate() {
        *slot = scale * dot(query, &rows[i * dims..(i + 1) * dims]);
    }
    Ok(())
}

/// 16 independent partial sums, so the loop vectorizes.
fn dot(query: &[f32], row: &[i8]) -> f32 {
    let mut lanes = [0.0f32; 16];
    let (q_full, r_full) = (query.chunks_exact(16), row.chunks_exact(16));
    let tail: f32 = q_full
        .remainder()
        .iter()
        .zip(r_full.remainder())
        .map(|(&q, &r)| q * f32::from(r))
        .sum();
    for (qs, rs) in q_full.zip(r_full) {
        for t in 0..16 {
            lanes[t] += qs[t] * f32::from(rs[t]);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_is_close_and_the_peak_maps_to_127() {
        let x: Vec<f32> = (0..3 * 40)
            .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
            .collect();
        let (mut codes, mut scales) = (vec![0i8; x.len()], vec![0f32; 3]);
        quantize(&x, 40, &mut codes, &mut scales).unwrap();
        for r in 0..3 {
            let row = &codes[r * 40..(r + 1) * 40];
            assert_eq!(row.iter().map(|c| c.unsigned_abs()).max(), Some(127));
            for (c, v) in row.iter().zip(&x[r * 40..]) {
                assert!((f32::from(*c) * scales[r] - v).abs() <= scales[r] / 2.0 + 1e-6);
            }
        }
    }

    #[test]
    fn zero_rows_get_zero_scale_and_ties_round_to_even() {
        let (mut codes, mut scales) = (vec![0i8; 4], vec![0f32; 2]);
        quantize(&[0.0, 0.0, 127.0, 0.5], 2, &mut codes, &mut scales).unwrap();
        assert_eq!(scales, [0.0, 1.0]);
        assert_eq!(codes, [0, 0, 127, 0]);
    }

    #[test]
    fn magic_rounding_matches_round_ties_even() {
        for i in -300_000..300_000 {
            let v = i as f32 / 2000.0;
            assert_eq!(round_half_even(v), v.round_ties_even(), "{v}");
        }
    }

    #[test]
    fn non_finite_input_is_an_error() {
        let (mut codes, mut scales) = (vec![0i8; 2], vec![0f32; 1]);
        assert!(quantize(&[f32::NAN, 1.0], 2, &mut codes, &mut scales).is_err());
        assert!(quantize(&[f32::INFINITY, 1.0], 2, &mut codes, &mut scales).is_err());
    }

    #[test]
    fn rescore_is_the_scaled_dot_product() {
        let query: Vec<f32> = (0..37).map(|i| i as f32 / 37.0).collect();
        let rows: Vec<i8> = (0..2 * 37).map(|i| (i % 255) as i8).collect();
        let mut out = [0f32; 2];
        rescore(&query, &rows, &[0.5, 2.0], &mut out).unwrap();
        for (r, scale) in [0.5f32, 2.0].iter().enumerate() {
            let want: f32 = (0..37)
                .map(|j| query[j] * f32::from(rows[r * 37 + j]))
                .sum();
            assert!((out[r] - scale * want).abs() < 1e-3 * (1.0 + want.abs()));
        }
        assert!(rescore(&query, &rows[..10], &[1.0], &mut out[..1]).is_err());
    }
}
