"""Figure builders: what reaches the browser is what is on screen, and the numbers survive."""

import numpy as np
import plotly.io as pio

from posviz.views import figures
from posviz.analysis.similarity import block_mean


def test_block_mean_values_and_ragged_edge():
    a = np.arange(25, dtype=np.float32).reshape(5, 5)
    reduced, f = block_mean(a, 3)
    assert f == 2
    # full block [[0, 1], [5, 6]] -> 3; edge block [[4], [9]] -> 6.5; corner [24] -> 24
    np.testing.assert_allclose(reduced, [[3, 5, 6.5], [13, 15, 16.5], [20.5, 22.5, 24]])


def test_block_mean_leaves_small_matrices_alone():
    a = np.random.default_rng(0).random((3, 40, 40))
    reduced, f = block_mean(a, 96)
    assert f == 1 and reduced is a


def test_heads_grid_of_a_long_input_sends_block_means():
    rng = np.random.default_rng(0)
    patterns = rng.random((12, 512, 512)).astype(np.float32)
    fig = figures.heads_grid(patterns, "Layer 0")
    assert "means of 6×6 blocks" in fig.layout.title.subtitle.text
    assert all(trace.z.shape == (86, 86) for trace in fig.data)
    np.testing.assert_allclose(fig.data[3].z[0, 0], patterns[3, :6, :6].mean(), rtol=1e-6)
    assert len(pio.to_json(fig, validate=False)) < 1_000_000  # 17.7 MB when every cell was sent


def test_position_heatmap_sends_float32_binary_and_true_values():
    m = np.random.default_rng(1).normal(size=(512, 512)).astype(np.float32)
    fig = figures.position_heatmap(m, 0, "t", "dot")
    # binary float32 (base64, plus plotly's escaping of "/"): about 1.4-1.8 x the raw bytes;
    # JSON lists of decimals would be about 5 x
    assert len(pio.to_json(fig, validate=False)) < 2 * m.nbytes
    np.testing.assert_array_equal(fig.data[0].z, m)
    low, high = np.percentile(m, [1, 99])
    assert fig.data[0].zmin == low and fig.data[0].zmax == high


def test_token_heatmap_keeps_repeated_tokens_apart():
    tokens = ["[CLS]", "the", "cat", "the", "[SEP]"]
    fig = figures.token_heatmap(np.eye(5), tokens, "t", "w")
    assert fig.data[0].z.shape == (5, 5)
    assert list(fig.layout.yaxis.ticktext) == tokens and list(fig.layout.yaxis.tickvals) == [0, 1, 2, 3, 4]
