"""What a stored vector row can be: the checks every row taken from elsewhere (the shared index)
passes before it is stored, and that ``kenning doctor`` and ``kenning index --full`` apply to
the rows an index holds.

A row is written by ``kernels.binarize`` and ``kernels.quantize_int8`` from an L2-normalised
embedding, so it has a finite positive scale, an int8 row whose largest magnitude is exactly 127
(the scale is that of the largest element, and -128 never occurs), sign bits that agree with the
int8 signs wherever those are not 0 (bit = 1 where the value is > 0; rows of a model whose bits
are centred on the index's mean are exempt), and a dequantized norm near 1. A row that fails
any of these was not made by an embedder. A row that passes can still be another text's vector:
``disagreeing`` compares rows with this machine's embedding of their texts.
"""

from __future__ import annotations

import numpy as np

from kenning.store.vectors import VectorRows

# int8 rounding moves a unit vector's norm by far less than this; a forged scale moves it more
NORM_BOUNDS = (0.8, 1.2)
# the cosine of a row and this machine's float embedding of the same text: int8 rounding and
# batch effects keep it above 0.999; another text's vector is far below
AGREEMENT = 0.98
SAMPLE = 8  # rows drawn to be embedded again and compared: a fetch's, doctor's
_BLOCK = 16_384  # rows checked at once: bounded memory over an index of millions


def implausible(rows: VectorRows, *, centred: bool) -> np.ndarray:
    """bool[n]: the rows that no embedding of a text can have made (see the module)."""
    bad = np.zeros(len(rows.scales), bool)
    for start in range(0, len(bad), _BLOCK):
        part = slice(start, start + _BLOCK)
        bad[part] = _implausible(rows.bits[part], rows.int8[part], rows.scales[part], centred)
    return bad


def _implausible(bits: np.ndarray, int8: np.ndarray, scales: np.ndarray,
                 centred: bool) -> np.ndarray:
    scales = np.asarray(scales, np.float64)
    codes = np.asarray(int8, np.int8).astype(np.int16)
    with np.errstate(over="ignore", invalid="ignore"):
        bad = ~np.isfinite(scales) | ~(scales > 0)
        bad |= np.abs(codes).max(axis=1) != 127
        norms = np.sqrt((codes.astype(np.int32) ** 2).sum(axis=1)) * scales
        bad |= ~((norms >= NORM_BOUNDS[0]) & (norms <= NORM_BOUNDS[1]))
    if not centred:
        signs = np.unpackbits(np.asarray(bits, np.uint8), axis=1)[:, :codes.shape[1]] > 0
        bad |= ((codes > 0) & ~signs).any(axis=1) | ((codes < 0) & signs).any(axis=1)
    return np.asarray(bad, bool)


def disagreeing(rows: VectorRows, embedded: np.ndarray) -> np.ndarray:
    """bool[n]: the rows whose int8 vector is not the float ``embedded`` row of the same text
    (cosine below ``AGREEMENT``)."""
    codes = np.asarray(rows.int8, np.int8).astype(np.float64)
    floats = np.asarray(embedded, np.float64)
    dots = (codes * floats).sum(axis=1)
    norms = np.linalg.norm(codes, axis=1) * np.linalg.norm(floats, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cosines = dots / norms
    return np.asarray(~(cosines >= AGREEMENT), bool)
