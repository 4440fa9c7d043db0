"""The fixed sinusoid of Vaswani et al. (2017), in the three layouts found in real code."""

from __future__ import annotations

import numpy as np

LAYOUTS = ("interleaved", "halves", "t2t")


def sinusoidal(num_positions: int, width: int, layout: str = "interleaved") -> np.ndarray:
    """Sinusoidal position embeddings, computed in float64 and returned as float32.

    ``PE(p, 2i) = sin(p / 10000^(2i/d))``, ``PE(p, 2i+1) = cos(p / 10000^(2i/d))`` (Vaswani et al.,
    "Attention Is All You Need", 2017), d = ``width``, i = 0 .. d/2 - 1.

    Parameters
    ----------
    num_positions : int
        Rows (positions 0 .. num_positions - 1).
    width : int
        Columns d; must be even.
    layout : {"interleaved", "halves", "t2t"}
        ``"interleaved"``: sin and cos alternate, as in the paper (XLM, DistilBERT's
        ``sinusoidal_pos_embds``). ``"halves"``: the same frequencies, all sines then all cosines
        (Marian, Pegasus). ``"t2t"``: tensor2tensor spacing ``inv_i = exp(-i ln(10000) / (d/2 - 1))``,
        sines then cosines (M2M100, NLLB, Whisper's encoder).

    Returns
    -------
    np.ndarray
        float32 [num_positions, width]. Every layout has ``PE_i · PE_j = Σ_k cos((i - j) w_k)``.

    Raises
    ------
    ValueError
        For an odd width or an unknown layout.
    """
    if width % 2:
        raise ValueError(f"width must be even, not {width}")
    half = width // 2
    if layout == "t2t":
        inv = np.exp(-np.arange(half) * np.log(10000.0) / (half - 1))
    elif layout in ("interleaved", "halves"):
        inv = 1.0 / 10000.0 ** (2 * np.arange(half) / width)
    else:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    angles = np.arange(num_positions)[:, None] * inv[None, :]
    out = np.empty((num_positions, width))
    if layout == "interleaved":
        out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    else:
        out[:, :half], out[:, half:] = np.sin(angles), np.cos(angles)
    return out.astype(np.float32)
