"""The Streamlit app driven headless with ``streamlit.testing.v1.AppTest``, on the bundled model.

Each test opens ``app.py`` (which draws the shared sidebar and runs the page through
``st.navigation``), switches to one page, moves its widgets and checks the numbers in the Plotly
figures the page sends (``chart.proto.spec`` is the figure JSON) against posviz computed here.

AppTest is made to behave like the browser by the shims of tests/support/apptest.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

import posviz
from posviz.app.lectures import read
from posviz.views import attention as views
from posviz.app.widgets import DEFAULT_TEXT, DEFAULT_TEXT_PAIR
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import TITLES, arr, assert_clean, figures, open_page

DEFAULT_TOKENS = ["[CLS]", "the", "cat", "chased", "the", "dog", "[SEP]",
                  "the", "dog", "chased", "the", "cat", "[SEP]"]
BAD_FOLDER = "./no/such/folder"


@pytest.fixture(scope="module")
def matrix(bundled_lm):
    return bundled_lm.encodings[0].matrix


# ---------------------------------------------------------------- every page


@pytest.mark.parametrize("page", list(TITLES))
def test_every_page_runs_clean(page):
    at = open_page(page, method="PCA") if page == "projection" else open_page(page)
    assert_clean(at, page)
    if page == "gallery":  # links to ready-made views, no chart of its own
        assert len(at.get("page_link")) == 2 * len(read("gallery").slides) == 24  # as a page, and as a slide
    else:
        assert at.get("plotly_chart"), "no chart"
    assert [s.key for s in at.sidebar.selectbox] == ["model", "device"]
    assert at.sidebar.selectbox(key="model").value == posviz.BUNDLED_NAME
    assert not at.sidebar.error


# ---------------------------------------------------------------- Model


def test_model_page_facts_and_norms(matrix):
    at = open_page("model")
    assert_clean(at, "model")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Max tokens"] == "512"
    assert metrics["Width"] == "384"
    assert metrics["Layers"] == "6"
    assert metrics["Heads"] == "12"
    (fig,) = figures(at)
    (line,) = fig["data"]
    assert line["type"] == "scatter"
    y = arr(line["y"])
    assert y.shape == (512,)
    np.testing.assert_allclose(y, np.linalg.norm(matrix, axis=1), rtol=1e-5)
    assert y[0] == pytest.approx(np.linalg.norm(matrix[0]), rel=1e-5)
    assert 2.3 < y[0] < 2.42


# ---------------------------------------------------------------- Similarity


def test_similarity_dot_heatmap_profile_and_table(matrix):
    at = open_page("similarity")
    assert_clean(at, "similarity")
    heat, profile, table = figures(at)
    g = posviz.similarity(matrix, "dot")

    (h,) = heat["data"]
    assert h["type"] == "heatmap"
    z = arr(h["z"])
    assert z.shape == (512, 512)
    for i, j in [(0, 0), (0, 511), (128, 3), (300, 301), (511, 511)]:
        assert z[i, j] == pytest.approx(g[i, j], abs=1e-5, rel=1e-5)
    np.testing.assert_allclose(z, g, rtol=1e-5, atol=1e-5)
    assert arr(h["x"])[0] == 0 and arr(h["x"])[-1] == 511

    assert at.number_input(key="q").value == 128
    (p,) = profile["data"]
    assert p["type"] == "scatter"
    y = arr(p["y"])
    assert y.shape == (512,)
    assert y.max() == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(y, g[128] / g[128].max(), rtol=1e-5, atol=1e-6)

    (t,) = table["data"]
    assert t["type"] == "heatmap"
    tz = arr(t["z"])
    assert tz.shape == (512, 384)
    np.testing.assert_allclose(tz, matrix, rtol=1e-6, atol=1e-7)


def test_similarity_cosine_range_and_q(matrix):
    at = open_page("similarity")
    at.radio(key="metric").set_value("cosine").run()
    assert_clean(at, "similarity")
    z = arr(figures(at)[0]["data"][0]["z"])
    assert z.shape == (512, 512)
    np.testing.assert_allclose(np.diag(z), 1.0, atol=1e-5)
    np.testing.assert_allclose(z, posviz.similarity(matrix, "cosine"), atol=1e-5)

    at.radio(key="metric").set_value("dot")
    at.slider(key="range").set_value((100, 199)).run()
    assert_clean(at, "similarity")
    heat, profile, table = figures(at)
    h = heat["data"][0]
    z = arr(h["z"])
    assert z.shape == (100, 100)
    x = arr(h["x"])
    assert x[0] == 100 and x[-1] == 199
    np.testing.assert_allclose(z, posviz.similarity(matrix[100:200], "dot"), rtol=1e-5, atol=1e-5)
    assert arr(table["data"][0]["z"]).shape == (100, 384)
    assert arr(table["data"][0]["y"])[0] == 100
    # the profile still covers every position
    assert arr(profile["data"][0]["y"]).shape == (512,)

    at.number_input(key="q").set_value(300).run()
    assert_clean(at, "similarity")
    g = posviz.similarity(matrix, "dot")
    np.testing.assert_allclose(arr(figures(at)[1]["data"][0]["y"]), g[300] / g[300].max(), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------- Projection


def _points(trace) -> np.ndarray:
    return np.stack([arr(trace[a]) for a in "xyz" if a in trace], axis=1)


def test_projection_pca_ranges_3d_path_and_bad_boundary(matrix):
    from sklearn.decomposition import PCA

    at = open_page("projection", method="PCA")
    assert_clean(at, "projection")
    assert at.radio(key="method").value == "PCA"
    assert at.text_input(key="boundaries").value == "128"
    (fig,) = figures(at)
    traces = fig["data"]
    assert [t["type"] for t in traces] == ["scatter", "scatter"]
    assert [len(arr(t["x"])) for t in traces] == [128, 384]
    # the legend below the plot, in 2-D as in 3-D: beside it, it narrowed the plot to some 270 px at 1024 px
    assert (fig["layout"]["legend"]["orientation"], fig["layout"]["legend"]["yref"]) == ("h", "container")
    coords = np.concatenate([_points(t) for t in traces])
    expected = PCA(n_components=2).fit_transform(matrix.astype(np.float64))
    for c in range(2):
        sign = np.sign(coords[:, c] @ expected[:, c])
        np.testing.assert_allclose(sign * coords[:, c], expected[:, c], atol=1e-3 * np.abs(expected).max())

    at.radio(key="dims").set_value(3).run()
    assert_clean(at, "projection")
    traces = figures(at)[0]["data"]
    assert [t["type"] for t in traces] == ["scatter3d", "scatter3d"]
    assert [_points(t).shape for t in traces] == [(128, 3), (384, 3)]
    layout = figures(at)[0]["layout"]
    assert [layout["scene"][f"{a}axis"]["title"]["text"] for a in "xyz"] == ["PC 1", "PC 2", "PC 3"]
    # the legend below the scene: beside it, it narrowed the scene and the z axis fell outside at 1024 px
    assert (layout["legend"]["orientation"], layout["legend"]["yref"]) == ("h", "container")
    assert layout["legend"]["itemsizing"] == "constant"  # legend markers as large as in 2-D, not the scene's 4 px

    at.toggle(key="path").set_value(True).run()
    assert_clean(at, "projection")
    traces = figures(at)[0]["data"]
    assert len(traces) == 3
    lines = [t for t in traces if t.get("mode") == "lines"]
    assert len(lines) == 1 and _points(lines[0]).shape == (512, 3)

    at.radio(key="dims").set_value(2)
    at.toggle(key="path").set_value(False)
    at.text_input(key="boundaries").set_value("abc").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("'abc' is not a whole number, so it is ignored. Type positions between 1 and 511" in w.value
               for w in at.warning), [w.value for w in at.warning]
    traces = figures(at)[0]["data"]
    assert [len(arr(t["x"])) for t in traces] == [512]
    at.text_input(key="boundaries").set_value("300, 900").run()
    assert any("'900' is not a position between 1 and 511, so it is ignored." in w.value for w in at.warning)
    assert [len(arr(t["x"])) for t in figures(at)[0]["data"]] == [300, 212]


# ---------------------------------------------------------------- Input representation


def test_input_default_sentences():
    at = open_page("input")
    assert_clean(at, "input")
    norms, vectors, cosine = figures(at)
    assert [t["name"] for t in norms["data"]] == ["token", "segment", "position", "sum", "after LayerNorm"]
    assert all(arr(t["y"]).shape == (13,) for t in norms["data"])
    assert list(norms["layout"]["xaxis"]["ticktext"]) == DEFAULT_TOKENS
    z = arr(cosine["data"][0]["z"])
    assert z.shape == (13, 13)
    np.testing.assert_allclose(np.diag(z), 1.0, atol=1e-5)
    assert list(cosine["layout"]["xaxis"]["ticktext"]) == DEFAULT_TOKENS
    assert arr(vectors["data"][0]["z"]).shape == (13, 384)


@pytest.mark.parametrize("page, state, charts", [("input", {}, 3), ("attention", {}, 7), ("word_order", {}, 2),
                                                 ("probes", {"probe_text": "sentence"}, 1)])
def test_an_emptied_sentence_gets_a_way_back_to_the_example(page, state, charts):
    """An emptied sentence: a prompt and none of the sentence's charts (the probes of the position table,
    above the sentence, stay); "Use the example sentence" brings the page's own sentence back, into the
    field, the ``charts`` of the sentence (its tokens) and the link."""
    at = open_page(page, **state)
    at.text_input(key="text").set_value("").run()
    assert not at.exception, [e.value for e in at.exception]
    assert [i.value for i in at.main.info][0].startswith("Type a sentence above")
    before = len(at.get("plotly_chart"))
    assert at.query_params["text"] == ""
    [b for b in at.button if b.label == "Use the example sentence"][0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_input(key="text").value == DEFAULT_TEXT
    assert at.query_params["text"] == DEFAULT_TEXT
    assert not at.main.info
    assert len(at.get("plotly_chart")) == before + charts
    assert any("cat" in str(fig) for fig in figures(at)[before:])  # drawn from the example's tokens


def test_input_long_sentence_warns_truncation(bundled_lm):
    text = "word " * 1000
    full = len(bundled_lm.tokenizer(text, DEFAULT_TEXT_PAIR, truncation=False, verbose=False)["input_ids"])
    dropped = full - 512
    assert dropped > 0
    at = open_page("input")
    at.text_input(key="text").set_value(text).run()
    assert not at.exception, [e.value for e in at.exception]
    warnings = [w.value for w in at.warning]
    assert any(f"{dropped} tokens" in w for w in warnings), (dropped, warnings)
    assert arr(figures(at)[0]["data"][0]["y"]).shape == (512,)


# ---------------------------------------------------------------- Attention


def test_attention_layer_head_grid_and_hide_special(bundled_lm):
    at = open_page("attention")
    assert_clean(at, "attention")
    assert at.slider(key="layer").max == 5
    assert at.slider(key="head").max == 11
    at.slider(key="layer").set_value(3)
    at.slider(key="head").set_value(5).run()
    assert_clean(at, "attention")
    expected = posviz.attention(bundled_lm, DEFAULT_TEXT, DEFAULT_TEXT_PAIR).patterns[3]
    head, mean, grid = figures(at)[:3]  # then attention by offset
    assert head["layout"]["title"]["text"] == "Layer 3, head 5"
    z = arr(head["data"][0]["z"])
    assert z.shape == (13, 13)
    np.testing.assert_allclose(z, expected[5], atol=1e-5)
    assert list(head["layout"]["xaxis"]["ticktext"]) == DEFAULT_TOKENS
    np.testing.assert_allclose(arr(mean["data"][0]["z"]), expected.mean(axis=0), atol=1e-5)
    assert [t["type"] for t in grid["data"]] == ["heatmap"] * 12
    for h, trace in enumerate(grid["data"]):
        np.testing.assert_allclose(arr(trace["z"]), expected[h], atol=1e-5)

    at.slider(key="head").set_value(4)
    at.toggle(key="hide_special").set_value(True).run()  # layer 3, head 4 puts most of 6 rows on [CLS] / [SEP]
    assert_clean(at, "attention")
    head = figures(at)[0]
    tokens = list(head["layout"]["xaxis"]["ticktext"])
    words = [i for i, t in enumerate(DEFAULT_TOKENS) if t not in ("[CLS]", "[SEP]")]
    assert tokens == [DEFAULT_TOKENS[i] for i in words]
    traces = {t["name"]: t for t in head["data"]}
    z = arr(traces["weight"]["z"])
    assert z.shape == (10, 10)
    # the share of each row hidden with the special tokens, shown beside the pattern
    kept = expected[4][np.ix_(words, words)].sum(axis=1)
    np.testing.assert_allclose(arr(traces["hidden"]["z"]).ravel(), 1 - kept, atol=1e-5)
    greyed = kept < views.VISIBLE_AT_LEAST
    assert greyed.sum() == 6
    assert np.isnan(z[greyed]).all()  # not rescaled into strong attention
    np.testing.assert_allclose(z[~greyed].sum(axis=1), 1.0, atol=1e-5)
    labels = list(head["layout"]["yaxis"]["ticktext"])
    assert [label.startswith("⊘ ") for label in labels] == list(greyed)
    assert "under 10% of their attention" in head["layout"]["title"]["subtitle"]["text"].replace("<br>", " ")


# ---------------------------------------------------------------- bad model id


def _assert_bundled_kept(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.sidebar.error]
    assert len(errors) == 1 and BAD_FOLDER in errors[0], errors
    assert any(posviz.BUNDLED_NAME in c.value for c in at.sidebar.caption), [c.value for c in at.sidebar.caption]
    # and over the charts, for a room that does not see the sidebar
    banners = [w.value for w in at.main.warning if w.value.startswith("Showing")]
    assert banners and banners[0].startswith(f"Showing **{posviz.BUNDLED_NAME}** instead of **{BAD_FOLDER}**: "), banners


def test_bad_model_folder_typed_in_sidebar():
    at = open_page("model")
    at.sidebar.selectbox(key="model").set_value(BAD_FOLDER).run()
    _assert_bundled_kept(at)
    assert at.sidebar.selectbox(key="model").value == BAD_FOLDER  # what was typed stays
    assert_clean(at, "model")
    assert any(posviz.BUNDLED_NAME in m.value for m in at.markdown)
    assert {m.label: m.value for m in at.metric}["Max tokens"] == "512"

    for page in ("similarity", "projection", "input", "attention"):
        if page == "projection":
            at.session_state["method"] = "PCA"
        at.switch_page(f"pages/{page}.py").run()
        _assert_bundled_kept(at)
        assert_clean(at, page)
        assert at.get("plotly_chart")
    # the attention page still shows the bundled model: 6 layers x 12 heads
    assert at.slider(key="layer").max == 5 and len(figures(at)[2]["data"]) == 12


def test_bad_model_folder_from_url():
    at = open_page("similarity", query_params={"model": BAD_FOLDER})
    _assert_bundled_kept(at)
    assert_clean(at, "similarity")
    assert arr(figures(at)[0]["data"][0]["z"]).shape == (512, 512)


# ---------------------------------------------------------------- UMAP (slow when cold: last)


def test_projection_umap_default():
    at = open_page("projection")
    assert_clean(at, "projection")
    assert at.radio(key="method").value == "UMAP"
    traces = figures(at)[0]["data"]
    assert [t["type"] for t in traces] == ["scatter", "scatter"]
    points = [_points(t) for t in traces]
    assert [p.shape for p in points] == [(128, 2), (384, 2)]
    assert all(np.isfinite(p).all() for p in points)
