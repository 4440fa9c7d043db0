"""ALiBi: a linear, per-head bias on the attention score (Press et al., 2022)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from posviz.positions.base import PositionEncoding


@dataclass
class AlibiBias(PositionEncoding):
    """The per-head slopes of ALiBi and the bias they add.

    The score of query m and key n ≤ m gets ``−slope_h · (m − n)`` (Press, Smith & Lewis, "Train
    Short, Test Long", ICLR 2022); keys after the query are masked (NaN here). The slopes are read
    from the model's own builder (BLOOM's ``build_alibi_tensor``, MPT's
    ``build_mpt_alibi_tensor``, Falcon's), which adds ``slope_h · n`` instead: the same scores up to
    a constant per row, which softmax removes.

    Attributes
    ----------
    slopes : np.ndarray
        float64 [heads].
    """

    slopes: np.ndarray = None

    kind = "bias"

    formula = r"\mathrm{score}_h(m, n) = q_m \cdot k_n - \mathrm{slope}_h\,(m - n),\quad n \le m"

    def bias(self, positions: np.ndarray) -> np.ndarray:
        positions = np.asarray(positions)
        offset = positions[:, None] - positions[None, :]  # m - n
        out = -self.slopes[:, None, None] * offset[None]
        out[:, offset < 0] = np.nan
        return out.astype(np.float32)

    def describe(self) -> str:
        shown = ", ".join(f"{s:.4g}" for s in self.slopes[:8]) + (" …" if len(self.slopes) > 8 else "")
        return (f"ALiBi (Press et al., ICLR 2022): no position vector at all; each head h subtracts "
                f"slope_h × (m − n) from the score of query m and key n, a penalty growing linearly with "
                f"distance. {len(self.slopes)} heads, slopes {shown} (from `{self.source}`). "
                "Heads with small slopes look far, heads with large slopes look near.")
