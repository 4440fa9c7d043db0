"""Figure builders: what reaches the browser is what is on screen, and the numbers survive."""

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from posviz.views import figures
from posviz.analysis.similarity import block_mean


def test_block_mean_values_and_ragged_edge():
    a = np.arange(25, dtype=np.float32).reshape(5, 5)
    reduced, f = block_mean(a, 3)
    assert f == 2
    # full block [[0, 1], [5, 6]] -> 3; edge block [[4], [9]] -> 6.5; corner [24] -> 24
    np.testing.assert_allclose(reduced, [[3, 5, 6.5], [13, 15, 16.5], [20.5, 22.5, 24]])


def test_block_mean_is_each_blocks_mean_over_its_cells_nan_left_out():
    rng = np.random.default_rng(3)
    a = rng.random((2, 3, 50, 47)).astype(np.float32)
    a[0, 1, :7, :] = np.nan  # a row of blocks of NaN alone, and a block with one NaN cell
    a[1, 2, 10, 3] = np.nan
    reduced, f = block_mean(a, 8)
    assert f == 7 and reduced.shape == (2, 3, 8, 7) and reduced.dtype == np.float32
    assert np.isnan(reduced[0, 1, 0]).all() and np.isfinite(reduced[1, 2, 1, 0])
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        expected = [[np.nanmean(a[..., 7 * i:7 * i + 7, 7 * j:7 * j + 7], axis=(-2, -1)) for j in range(7)]
                    for i in range(8)]
    np.testing.assert_allclose(reduced, np.moveaxis(np.array(expected), (0, 1), (-2, -1)), rtol=1e-6)


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


def test_attention_views_of_512_tokens_send_block_means_and_keep_every_weight():
    from posviz.views import attention

    rng = np.random.default_rng(2)
    patterns = rng.random((4, 511, 511)).astype(np.float32)
    tokens = [f"t{i}" for i in range(511)]
    head = attention.attention_head(patterns, tokens, tokens, layer=0, head=1)
    z = head.figure.data[0].z
    assert z.shape == (256, 256) and "means of 2×2 blocks" in head.figure.layout.title.subtitle.text
    np.testing.assert_allclose(z[10, 20], patterns[1, 20:22, 40:42].mean(), rtol=1e-6)
    np.testing.assert_allclose(z[255, 0], patterns[1, 510, 0:2].mean(), rtol=1e-6)  # the cut edge: its one row
    assert list(head.figure.data[0].y[:3]) == [0, 2, 4]  # each block at its first token's index
    assert "2×2 block mean" in head.figure.data[0].hovertemplate
    np.testing.assert_array_equal(head.arrays["attention"], patterns[1])  # the downloads: every weight
    mean = attention.attention_mean(patterns, tokens, tokens, layer=0)
    np.testing.assert_allclose(mean.figure.data[0].z[0, 0], patterns[:, :2, :2].mean(), rtol=1e-6)
    assert len(pio.to_json(head.figure, validate=False)) < 500_000  # 1.9 MB with every cell


def test_attention_block_means_leave_greyed_rows_out():
    from posviz.views import attention

    patterns = np.full((1, 300, 300), 1 / 300, dtype=np.float32)
    hidden = np.zeros((1, 300), dtype=np.float32)
    hidden[0, :2] = 0.95  # rows 0 and 1 (one block): under 10 % left, greyed
    hidden[0, 2] = 0.95   # row 2 greyed, row 3 not: the block is drawn, from row 3 alone
    patterns[0, 3] = 2 / 300
    tokens = [f"t{i}" for i in range(300)]
    fig = attention.attention_head(patterns, tokens, tokens, layer=0, head=0, hidden=hidden).figure
    greyed, shares, main = fig.data
    assert main.z.shape == (150, 150)
    assert np.isnan(main.z[0]).all() and greyed.z[0, 0] == 1.0
    np.testing.assert_allclose(main.z[1, 0], 2 / 300, rtol=1e-6) and np.isnan(greyed.z[1, 0])
    np.testing.assert_allclose(shares.z[:2, 0], [0.95, 0.475], rtol=1e-6)


def test_clipped_attention_colours_end_at_the_99th_percentile_of_the_rows_shown():
    from posviz.views import attention

    rng = np.random.default_rng(3)
    patterns = rng.random((2, 30, 30)).astype(np.float32) / 30
    patterns[:, :4, 0] = 0.9  # a sink: the first key of rows 0-3
    hidden = np.zeros((2, 30), dtype=np.float32)
    hidden[:, 5] = 0.95  # row 5 greyed in both heads: left out of the scale
    patterns[:, 5] = 5.0
    tokens = [f"t{i}" for i in range(30)]
    shown = np.delete(patterns, 5, axis=1)
    top = np.percentile(shown, attention.CLIP_PERCENTILE, method="lower")
    assert top < 0.9
    head = attention.attention_head(patterns, tokens, tokens, layer=0, head=1, hidden=hidden, clip=True).figure
    main = head.data[-1]
    assert (main.zmin, main.zmax) == (0, pytest.approx(top))
    assert attention.CLIPPED in head.layout.title.subtitle.text
    np.testing.assert_allclose(main.z[1, 0], 0.9, rtol=1e-6)  # the cell keeps its weight: hover says it
    assert main.colorbar.ticktext[-1] == f"≥ {top:.2g}" and main.colorbar.tickvals[-1] == pytest.approx(top)
    grid = attention.attention_grid(patterns, tokens, tokens, layer=0, hidden=hidden, clip=True).figure
    assert grid.layout.coloraxis.cmax == pytest.approx(top) and attention.CLIPPED in grid.layout.title.subtitle.text
    assert grid.layout.coloraxis.colorbar.ticktext[-1] == f"≥ {top:.2g}"
    whole = attention.attention_mean(patterns, tokens, tokens, layer=0, hidden=hidden).figure
    assert whole.data[-1].zmax == pytest.approx(0.9) and attention.CLIPPED not in whole.layout.title.subtitle.text
    assert whole.data[-1].colorbar.ticktext is None  # plotly's own ticks
    from posviz.analysis.attention_budget import Window
    corner = attention.attention_window(np.zeros((2, 4, 4), np.float32), tokens, tokens, Window(0, 4, 10, 14),
                                        layer=0, head=0, clip=True).figure  # a causal pattern's upper corner
    assert (corner.data[0].zmin, corner.data[0].zmax) == (0, 1.0)


def test_figures_carry_posviz_template_set_without_validation_and_unshared():
    from posviz.views.style import TEMPLATE, new_figure

    fig = new_figure("a")
    sent = fig.to_dict()["layout"]["template"]
    assert sent == TEMPLATE.to_plotly_json()
    assert fig.layout.template.layout.paper_bgcolor == TEMPLATE.layout.paper_bgcolor  # read back as an object
    fig.layout.template.layout.font.size = 99  # a change to one figure's template stays in that figure
    assert new_figure("b").layout.template.layout.font.size == TEMPLATE.layout.font.size
    fig.layout.xaxis.title = "still validated"  # the figure validates what is set later
    try:
        fig.layout.xaxis.nonsense = 1
    except (ValueError, AttributeError):
        pass
    else:
        raise AssertionError("an unknown property was accepted")


def test_small_multiples_share_no_layout_between_figures():
    tiles = np.random.default_rng(2).random((4, 8, 8))
    first = figures.small_multiples(tiles, [f"t{i}" for i in range(4)], "first")
    first.layout.xaxis2.showticklabels = True
    first.layout.annotations[0].text = "changed"
    second = figures.small_multiples(tiles, [f"t{i}" for i in range(4)], "second")
    assert second.layout.xaxis2.showticklabels is False
    assert [a.text for a in second.layout.annotations][:4] == ["t0", "t1", "t2", "t3"]
    assert second.layout.template.to_plotly_json() == first.layout.template.to_plotly_json()


def test_tiles_fit_a_landscape_slide_in_more_columns_with_the_same_tiles():
    """Twelve tiles with three lines of title, in three columns on the page, take six on a slide's area (1.8 times
    as wide as high): tile i in row i // 6 and column i % 6, its title above it, the same data, title and colours."""
    tiles = np.random.default_rng(3).random((12, 8, 8))
    titles = [f"head {h}<br>loc 0.{h}<br>sym 0.{h}" for h in range(12)]
    page = figures.small_multiples(tiles, titles, "Identical words", zmin=0, columns=3)
    assert figures.columns_for_area(12, 3, 1.8) == 6 and figures.columns_for_area(12, 1, 1.8) == 4
    slide = figures.fit_tiles(page, 1.8)
    assert slide is not page and page.layout.meta["tile_grid"]["columns"] == 3  # the page's figure is left as it is
    assert json.loads(slide.to_json())["data"] == json.loads(page.to_json())["data"]
    assert slide.layout.title.text == page.layout.title.text and slide.layout.coloraxis == page.layout.coloraxis
    assert slide.layout.meta["aspect"] > 1 > page.layout.meta["aspect"]  # wider than high, as the slide
    layout = slide.layout.to_plotly_json()
    assert not any(axis.get("zeroline", True) for name, axis in layout.items() if name.startswith(("xaxis", "yaxis")))
    for i, (trace, title) in enumerate(zip(slide.data, slide.layout.annotations)):
        x, y = layout[trace.xaxis.replace("x", "xaxis")]["domain"], layout[trace.yaxis.replace("y", "yaxis")]["domain"]
        width = layout["xaxis"]["domain"][1] - layout["xaxis"]["domain"][0]  # tile 0's
        assert x[0] == pytest.approx(i % 6 * (width + figures._TILE_SPACING), abs=1e-3)
        assert (y[1] if i < 6 else y[0]) == pytest.approx(1 if i < 6 else 0, abs=1e-3)  # two rows, filling the height
        assert title.text == titles[i] and title.x == pytest.approx((x[0] + x[1]) / 2) and title.y >= y[1]
    assert figures.fit_tiles(figures.small_multiples(tiles, [f"t{i}" for i in range(12)], "one line"), 1.8).layout \
        .meta["tile_grid"]["columns"] == 4  # already in the columns that fit
    heatmap = go.Figure(go.Heatmap(z=[[1]]))
    assert figures.fit_tiles(heatmap, 1.8) is heatmap


@pytest.mark.parametrize("grid", [dict(rows=1, cols=2, subplot_titles=["left", "right<br>panel"], horizontal_spacing=0.2),
                                  dict(rows=1, cols=2, column_widths=[0.9, 0.1], shared_yaxes=True,
                                       horizontal_spacing=0.02),
                                  dict(rows=2, cols=3, subplot_titles=list("abcdef"), vertical_spacing=0.1)])
def test_subplots_lays_out_what_make_subplots_does_and_panels_take_its_axes(grid):
    from plotly.subplots import make_subplots

    from posviz.views import figures
    from posviz.views.style import new_figure

    theirs = make_subplots(figure=new_figure("T", height=400), **grid)
    if theirs.layout.annotations:
        figures.leave_room_for_tile_titles(theirs)
    for _ in range(2):  # the second from the kept layout: the first figure's changes did not reach it
        mine = figures._subplots(new_figure("T", height=400), **grid)
        assert mine.to_dict()["layout"] == theirs.to_dict()["layout"]
        mine.layout.xaxis.title = "changed"
    count = grid["rows"] * grid["cols"]
    for i in range(count):
        theirs.add_trace(go.Scatter(y=[i]), row=i // grid["cols"] + 1, col=i % grid["cols"] + 1)
        mine.add_trace(go.Scatter(y=[i], **figures._panel(i)))
    assert [t.to_plotly_json() for t in mine.data] == [t.to_plotly_json() for t in theirs.data]


def test_set_axes_sets_one_panel_or_every_axis_as_update_axes_does():
    from plotly.subplots import make_subplots

    from posviz.views.style import set_axes

    mine, theirs = make_subplots(rows=1, cols=3), make_subplots(rows=1, cols=3)
    set_axes(mine, "x", 2, title="offset", showgrid=False)
    theirs.update_xaxes(title="offset", showgrid=False, row=1, col=2)
    set_axes(mine, "y", autorange="reversed")
    theirs.update_yaxes(autorange="reversed")
    assert mine.to_dict()["layout"] == theirs.to_dict()["layout"]
    assert mine.layout.xaxis2.title.text == "offset" and mine.layout.xaxis.title.text is None
    assert [mine.layout[f"yaxis{s}"].autorange for s in ("", "2", "3")] == ["reversed"] * 3


def test_block_hover_names_queries_and_keys_in_the_plural():
    """A long pattern's hover names the blocks' first query and key ("queries 6…, keys 12…"), and a grid's
    tiles sit at the blocks' first indices (placed by x0 and dx, no index arrays)."""
    rng = np.random.default_rng(0)
    patterns = rng.random((2, 600, 600)).astype(np.float32)
    tokens = [f"t{i}" for i in range(600)]
    heatmap = figures.token_heatmap(patterns[0], tokens, "Layer 0, head 0", "weight", "query (decoder)", "key",
                                    max_cells=256)
    assert heatmap.data[0].hovertemplate.startswith("queries (decoder) %{y}… · keys %{x}… (3×3 block mean)")
    grid = figures.heads_grid(patterns, "Layer 0: every head", zmax=1.0)
    tile = grid.data[1]
    assert tile.hovertemplate.startswith("head 1<br>queries %{y}…, keys %{x}… (7×7 block mean)")
    assert (tile.x0, tile.dx, tile.y0, tile.dy, tile.x, tile.y) == (0, 7, 0, 7, None, None)


@pytest.mark.parametrize("tokens, kind, note", [(figures.MOST_BARS, "bar", "no bar: exactly 0"),
                                                (figures.MOST_BARS + 1, "scatter", "gap: exactly 0")])
def test_many_tokens_are_lines_not_slivers_of_bars(tokens, kind, note):
    """Per-token values of a long input (510 tokens of a 3000-word sentence) were bars under a pixel wide, pale;
    beyond MOST_BARS tokens each series is a line, the same values, an exact 0 a gap."""
    rng = np.random.default_rng(4)
    series = {"with positions": rng.random(tokens) + 0.1, "without positions": np.r_[0.0, rng.random(tokens - 1)]}
    fig = figures.token_bars(series, [f"t{i}" for i in range(tokens)], "per token", "L2 norm")
    assert [t.type for t in fig.data] == [kind, kind]
    np.testing.assert_array_equal(fig.data[0].y, series["with positions"].astype(np.float32))
    assert np.isnan(fig.data[1].y[0]) and note in fig.layout.title.subtitle.text
