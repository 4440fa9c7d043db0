"""What a lecturer shows: the shipped configs of the offline Gallery, lecture files, slide mode, and
the figures that must never mislead a room (log ticks, line colours, notices, small projections).

Pages are driven headless with AppTest (tests/support/apptest.py); values are checked against the
formulas' reference values and against posviz computed here.
"""

from __future__ import annotations

import json
import logging
import warnings

import numpy as np
import pytest
import streamlit.elements.lib.policies

import posviz
from posviz.analysis.projection import ProjectionFallback
from posviz.app.lectures import LectureError, parse, read
from posviz.app.widgets import URL_TEXT_LIMIT
from posviz.views import style
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page, title_text

LLAMA, BLOOM, MARIAN = "Llama 3.1 8B (config only)", "BLOOM 560M (config only)", "opus-mt-en-de (config only)"


# ---------------------------------------------------------------- the shipped configs: public values


def _llama3_inverse_frequencies(dim=128, theta=500000.0, factor=8.0, low=1.0, high=4.0, original=8192):
    """Meta's Llama 3.1 frequency scaling (``apply_scaling`` of its reference code): wavelengths
    above original/low divided by ``factor``, below original/high kept, smoothly blended between."""
    inv = 1.0 / theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    wavelength = 2 * np.pi / inv
    smooth = (original / wavelength - low) / (high - low)
    blended = (1 - smooth) * inv / factor + smooth * inv
    return np.where(wavelength < original / high, inv, np.where(wavelength > original / low, inv / factor, blended))


def test_llama_31_rotary_is_its_public_config():
    encoding = posviz.load_model(LLAMA).encodings[0]
    assert (encoding.theta, encoding.rope_type, encoding.head_dim, encoding.num_positions) == (
        500000.0, "llama3", 128, 131072)
    expected = _llama3_inverse_frequencies()
    assert expected[0] == 1.0 and expected[-1] == pytest.approx(1 / 500000 ** (126 / 128) / 8)
    # the rotation features of position 1 are [cos θ_i, sin θ_i]: the module's frequencies
    cos, sin = np.split(np.asarray(encoding.vectors(np.array([1])))[0], 2)
    np.testing.assert_allclose(np.arctan2(sin, cos), expected, rtol=1e-5, atol=1e-7)
    assert "500000" in encoding.describe() and "llama3" in encoding.describe()


def test_bloom_560m_alibi_slopes_for_its_16_heads():
    encoding = posviz.load_model(BLOOM).encodings[0]
    # Press et al. (2022): 2^(-8k/n), k = 1 .. n, for n = 16 heads (a power of two)
    np.testing.assert_allclose(encoding.slopes, 2.0 ** (-8 * np.arange(1, 17) / 16), rtol=1e-6)


def test_marian_sinusoid_is_the_transformers_one():
    encoding = posviz.load_model(MARIAN).encodings[0]
    assert encoding.num_positions == 512
    p, half = np.arange(300)[:, None], 256
    angle = p / 10000 ** (2 * np.arange(half) / 512)  # Vaswani et al. (2017); Marian: all sines, then cosines
    np.testing.assert_allclose(encoding.vectors(np.arange(300)), np.concatenate([np.sin(angle), np.cos(angle)], 1),
                               atol=2e-5)


# ---------------------------------------------------------------- lecture files

LECTURE = """
title = "Rotary in ten minutes"

[[slides]]
title = "The kernel"
page = "similarity"
view = "position-similarity"
caption = "K(m, n) depends on m − n only."
params = { model = "Llama 3.1 8B (config only)", range = [0, 255], metric = "dot" }

[[slides]]
page = "compare"
view = ["compare-model", "compare-reference"]
params = { against = "sinusoid", positions_only = true }
"""


def test_lecture_file_parsed_as_urls_write_it():
    lecture = parse(LECTURE, "mine")
    assert (lecture.name, lecture.title, len(lecture.slides)) == ("mine", "Rotary in ten minutes", 2)
    first, second = lecture.slides
    assert (first.page, first.views, first.caption) == ("similarity", ("position-similarity",),
                                                         "K(m, n) depends on m − n only.")
    assert first.params == {"model": LLAMA, "range": ["0", "255"], "metric": "dot"}
    # untitled: "Slide 2"; no model: the bundled one; booleans as the URL writes them
    assert second.title == "Slide 2" and second.views == ("compare-model", "compare-reference")
    assert second.params == {"model": posviz.BUNDLED_NAME, "against": "sinusoid", "positions_only": "true"}
    as_json = json.dumps({"title": "Rotary in ten minutes", "slides": [
        {"title": "The kernel", "page": "similarity", "view": "position-similarity",
         "caption": "K(m, n) depends on m − n only.", "params": {"model": LLAMA, "range": [0, 255], "metric": "dot"}},
        {"page": "compare", "view": ["compare-model", "compare-reference"],
         "params": {"against": "sinusoid", "positions_only": True}}]})
    assert parse(as_json, "mine", "json") == lecture


def test_gallery_is_the_builtin_lecture():
    gallery = read("gallery")
    assert len(gallery.slides) == 12
    models = {s.params["model"] for s in gallery.slides}
    assert models == {posviz.BUNDLED_NAME, LLAMA, BLOOM, MARIAN}  # offline: the bundled model and shipped configs


@pytest.mark.parametrize("text, message", [
    ("title = [", "not valid TOML"),
    ("title = 'x'", "has no slides"),
    ("[[slides]]\npage = 'nowhere'", "slide 1: page 'nowhere' is not a page of posviz"),
    ("[[slides]]\npage = 'gallery'", "slide 1: page 'gallery' is not a page of posviz with a view for a slide; "
     "use one of model, similarity,"),
    ("[[slides]]\npage = 'model'\n[[slides]]\npage = 'similarity'\nparams = { layer = 3 }",
     "slide 2: 'layer' is not a parameter of the similarity page; use one of model, revision, device, "),
    ("[[slides]]\npage = 'model'\nparams = { step = 3 }", "'step' is not a parameter of the model page"),
    ("[[slides]]\npage = 'model'\nviews = 'signature'", "unknown key(s) ['views']"),
    ("[[slides]]\npage = 'model'\nparams = 3", "params must be a table"),
])
def test_lecture_errors_name_the_slide_and_the_fix(text, message):
    with pytest.raises(LectureError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        parse(text, "mine")


def test_every_slide_with_a_problem_is_named_at_once():
    text = ("[[slides]]\npage = 'model'\n[[slides]]\npage = 'nowhere'\n"
            "[[slides]]\npage = 'similarity'\nparams = { layer = 3 }")
    with pytest.raises(LectureError) as raised:
        parse(text, "mine")
    message = str(raised.value)
    assert message.startswith("2 slides need a fix. (1) slide 2: page 'nowhere' is not a page of posviz")
    assert "(2) slide 3: 'layer' is not a parameter of the similarity page" in message


def test_hosted_mode_reads_no_server_path(tmp_path):
    path = tmp_path / "lecture.toml"
    path.write_text(LECTURE, encoding="utf-8")
    assert read(str(path)).title == "Rotary in ten minutes"  # locally, a path is fine
    with pytest.raises(LectureError, match="upload your lecture file on the Gallery page"):
        read(str(path), hosted=True)
    with pytest.raises(LectureError, match="neither a built-in one"):
        read(str(tmp_path / "missing.toml"))


# ---------------------------------------------------------------- slide mode


def _slide_heading(at) -> str:
    return " ".join(h.proto.body for h in at.get("html") if "posviz-slide-title" in h.proto.body)


def test_lecture_step_opens_its_slide(bundled_lm):
    at = open_page("model", {"lecture": "gallery", "step": "3"})
    assert not at.exception, [e.value for e in at.exception]
    assert "Position 128 against all" in _slide_heading(at)
    (profile,) = figures(at)  # the one view of the slide, no other chart
    matrix = bundled_lm.encodings[0].matrix
    assert title_text(profile) == "cosine, row q = 128 ÷ its max"  # the heading names the model
    np.testing.assert_allclose(arr(profile["data"][0]["y"]),
                               posviz.row_profile(posviz.similarity(matrix, "cosine"), 128), rtol=1e-5, atol=1e-6)
    assert at.query_params["step"] == "3" and at.query_params["lecture"] == "gallery"


def test_slide_of_a_page_shows_the_views_named():
    at = open_page("similarity", {"slide": "q-profile,position-similarity"})
    assert not at.exception, [e.value for e in at.exception]
    titles = [title_text(f) for f in figures(at)]
    assert len(titles) == 2 and "positions 0–511" in titles[1]
    # the heading is the first view's title and the model: the first figure repeats neither
    assert _slide_heading(at).count("P·Pᵀ, row q = 128 ÷ its max · all-MiniLM-L6-v2") == 1
    assert titles[0] == ""
    # the caption: the views' sentences, then the model's, as sentences (no separator after a full stop)
    (caption,) = [c.value for c in at.caption if "Model: " in c.value]
    assert caption.endswith("positions. Model: all-MiniLM-L6-v2 (bundled)."), caption


def test_lecture_caption_without_a_full_stop_gets_one(tmp_path):
    path = tmp_path / "short.toml"
    path.write_text('[[slides]]\npage = "model"\ncaption = "Look at position 127"\n', encoding="utf-8")
    at = open_page("model", {"lecture": str(path)})
    assert not at.exception, [e.value for e in at.exception]
    (caption,) = [c.value for c in at.caption if "Model: " in c.value]
    assert caption == "Look at position 127. Model: all-MiniLM-L6-v2 (bundled).", caption


def test_slide_sets_its_sentences_without_streamlit_warning(bundled_lm, monkeypatch):
    """The attention slide sets both sentences (the second one empty): the fields show them, the link keeps
    the emptied second one, and Streamlit logs no "default value ... set via the Session State API" warning."""
    monkeypatch.setattr(streamlit.elements.lib.policies, "_shown_default_value_warning", False)  # said once a process
    said = []
    catch = logging.Handler(logging.WARNING)
    catch.emit = lambda record: said.append(record.getMessage())
    policies = logging.getLogger("streamlit.elements.lib.policies")
    policies.addHandler(catch)
    try:
        at = open_page("model", {"lecture": "gallery", "step": "5"})
    finally:
        policies.removeHandler(catch)
    assert not at.exception, [e.value for e in at.exception]
    assert "The previous-token head" in _slide_heading(at)
    assert at.text_input(key="text").value == "The quick brown fox jumps over the lazy dog because it was bored"
    assert at.text_input(key="text_pair").value == ""
    assert at.query_params["text_pair"] == ""
    assert not [m for m in said if "Session State API" in m], said


OWN = b"""title = "Mine"

[[slides]]
title = "Norms"
page = "model"
caption = "Look at position 127"

[[slides]]
page = "similarity"
"""


def test_own_lecture_uploaded_on_the_gallery_is_presented(bundled_lm):
    at = open_page("gallery")
    assert not at.sidebar.get("file_uploader")  # the sidebar of every page stays light: lectures are the Gallery's
    at.file_uploader(key="lecture_file").set_value(("mine.toml", OWN, "application/toml")).run()
    (present,) = [b for b in at.button if b.label.startswith("Present “Mine”")]
    assert present.label == "Present “Mine” (2 slides)"
    at.file_uploader(key="lecture_file").set_value(("one.toml", OWN.split(b"[[slides]]\npage = \"similarity\"")[0],
                                                    "application/toml")).run()
    assert [b.label for b in at.button if b.label.startswith("Present “Mine”")] == ["Present “Mine” (1 slide)"]
    at.file_uploader(key="lecture_file").set_value(("mine.toml", OWN, "application/toml")).run()
    (present,) = [b for b in at.button if b.label.startswith("Present “Mine”")]
    present.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "Norms" in _slide_heading(at)
    (caption,) = [c.value for c in at.caption if "Model: " in c.value]
    assert caption == "Look at position 127. Model: all-MiniLM-L6-v2 (bundled).", caption
    assert at.query_params["lecture"] == "mine" and at.query_params["step"] == "0"


def test_own_lecture_that_cannot_be_used_says_what_to_write():
    at = open_page("gallery")
    at.file_uploader(key="lecture_file").set_value(("bad.toml", b'[[slides]]\npage = "nowhere"\n',
                                                    "application/toml")).run()
    assert not at.exception, [e.value for e in at.exception]
    (error,) = [e.value for e in at.main.error]
    assert error.startswith("bad.toml: ") and "nowhere" in error, error
    assert not [b for b in at.button if b.label.startswith("Present “")]


def test_lecture_step_past_the_end_says_so():
    at = open_page("model", {"lecture": "gallery", "step": "40"})
    assert not at.exception
    shown = " ".join(e.value for e in [*at.warning, *at.info, *at.error])
    assert "The link asks for step 40; this lecture's steps are 0 to 11, so slide 12 is shown." in shown, shown
    assert "lecture =" not in shown  # slide mode's own parameters are no unusable widget values


# ---------------------------------------------------------------- figures that never mislead


def test_log_ticks_are_plain_numbers_in_the_data_range():
    fig = style.new_figure("norms")
    style.log_ticks(fig, [np.array([0.31, 0.9, 4.2, 7.7])])
    assert fig.layout.yaxis.type == "log"
    assert list(fig.layout.yaxis.ticktext) == ["0.5", "1", "2", "5", "10"]  # within 1.5 times the data's range
    assert list(fig.layout.yaxis.tickvals) == [0.5, 1, 2, 5, 10]
    wide = style.new_figure("wide")
    style.log_ticks(wide, [np.array([1e-6, 0.0, np.nan, 40.0])])  # zero and NaN left out; powers of ten only
    assert list(wide.layout.yaxis.ticktext) == ["10⁻⁶", "10⁻⁵", "0.0001", "0.001", "0.01", "0.1", "1", "10"]


@pytest.mark.parametrize("n, shown, size", [(12, 12, 22), (13, 13, 20), (17, 17, 15), (18, 9, 22), (40, 10, 22)])
def test_presentation_names_every_token_where_a_smaller_type_fits(n, shown, size):
    """On a projector a heatmap of 13 tokens names all 13 in 20 px type (it named every other one), down
    to the screen's 15 px; with more, every k-th token in the projector's 22 px (12 fit its room)."""
    tokens = [f"w{i}" for i in range(n)]
    fig = style.new_figure("attention", height=None, aspect=1)
    style.token_ticks(fig, "x", tokens)
    style.token_ticks(fig, "y", tokens)
    style.for_presentation(fig)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert len(axis.ticktext) == shown and axis.tickfont.size == size
        assert list(axis.ticktext) == tokens[::n // shown]
        assert size * len(axis.ticktext) <= style.PRESENT_FONT * style.PRESENT_TICK_LABELS  # as much room as 12 at 22 px


def test_input_norms_log_axis_labels_what_a_student_reads():
    at = open_page("input")
    assert_clean(at, "input")
    norms = next(f for f in figures(at) if f["layout"].get("yaxis", {}).get("type") == "log")
    axis = norms["layout"]["yaxis"]
    values = np.concatenate([arr(t["y"]) for t in norms["data"]])
    assert [float(t) for t in axis["ticktext"]] == pytest.approx(axis["tickvals"])
    assert values.min() / 1.5 <= min(axis["tickvals"]) and max(axis["tickvals"]) <= values.max() * 1.5
    assert all(t.lstrip("0.")[0] in "125" for t in axis["ticktext"])  # 1, 2, 5 × 10^k


@pytest.mark.parametrize("count", [3, 8, 12, 16])
def test_line_colours_distinct(count):
    colours = style.line_colours(count)
    assert len(colours) == count == len(set(colours))


def test_attention_by_offset_every_head_its_own_colour():
    at = open_page("properties")
    assert_clean(at, "properties")
    fig = next(f for f in figures(at) if f["layout"]["xaxis"].get("title", {}).get("text", "").startswith("offset k = key"))
    heads = [t for t in fig["data"] if t["name"].startswith("head")]
    assert len(heads) == 12
    colours = [t["line"]["color"] for t in heads]
    assert len(set(colours)) == 12
    assert colours == style.line_colours(12)  # Viridis in head order, as the heads alone
    (sinusoid,) = [t for t in fig["data"] if not t["name"].startswith("head")]
    # the reference line black and dashed: the 13th Viridis sample, as yellow as head 11's, was too close
    assert sinusoid["name"] == "sinusoid" and sinusoid["line"] == style.REFERENCE


def test_typed_special_token_gets_a_notice():
    at = open_page("input", text="the cat [SEP] the dog")
    assert_clean(at, "input")
    notices = [i.value for i in at.info if "[SEP]" in i.value]
    assert len(notices) == 1 and "reads it as its special token `[SEP]`" in notices[0], notices


@pytest.mark.parametrize("page, params, said", [
    ("attention", {"layer": "99"}, "layer = 99"),
    ("similarity", {"metric": "banana"}, "metric = banana"),
])
def test_unusable_url_value_is_named(page, params, said):
    at = open_page(page, params)
    assert_clean(at, page)
    notices = [i.value for i in at.info if said in i.value]
    assert len(notices) == 1 and "instead" in notices[0], [i.value for i in at.info]


def test_values_the_page_has_no_choice_for_share_one_notice():
    """The zoom's two ranges of a long text's link, opened on a short sentence (the text itself stays out of
    a link): one notice names both."""
    at = open_page("attention", {"zoom_q": ["0", "127"], "zoom_k": ["10", "20"], "layer": "99"})
    assert_clean(at, "attention")
    notices = [i.value for i in at.info if "The link asks for" in i.value]
    assert notices == [
        "The link asks for layer = 99, which this page cannot use here: showing layer = 0 instead.",
        "The link asks for zoom_q = 0,127 and zoom_k = 10,20, which this page cannot use here: it offers no such "
        "choices for this model and input, so they are ignored."], notices


def test_a_range_the_other_way_round_is_put_in_order():
    """range=5&range=2: the slider, the link and the notice say 2–5, and the matrix has a tick on each of its
    four positions (not plotly's halves)."""
    at = open_page("similarity", {"range": ["5", "2"]})
    assert_clean(at, "similarity")
    assert at.slider(key="range").value == (2, 5)
    assert at.query_params["range"] == ["2", "5"]
    assert "The link asks for range = 5,2, which this page cannot use here: showing range = 2,5 instead." in [
        i.value for i in at.info]
    matrix = next(f for f in figures(at) if title_text(f).startswith("P·Pᵀ"))
    assert arr(matrix["data"][0]["y"]).tolist() == [2, 3, 4, 5]
    assert matrix["layout"]["yaxis"]["tick0"] == 2 and matrix["layout"]["yaxis"]["dtick"] == 1


def test_long_sentence_stays_out_of_the_link():
    long = "the cat chased the dog " * (URL_TEXT_LIMIT // 20)
    at = open_page("input", text=long)
    at.run()
    assert_clean(at, "input")
    assert at.text_input(key="text").value == long  # nothing typed is lost
    assert "text" not in at.query_params
    assert any("link does not hold it" in c.value for c in at.caption)


def test_long_sentence_the_link_gave_is_taken_out_of_it():
    """As the browser writes a bound field's text to the URL (after an emptied field, the field is bound
    when the long text is pasted): the next run takes it out and says so."""
    long = "the cat chased the dog " * (URL_TEXT_LIMIT // 20)
    at = open_page("attention", {"text": long})
    at.run()
    assert_clean(at, "attention")
    assert at.text_input(key="text").value == long
    assert "text" not in at.query_params
    assert any("link does not hold it" in c.value for c in at.caption)


def test_umap_on_too_few_points_falls_back_to_pca():
    vectors = np.random.default_rng(0).standard_normal((3, 16)).astype(np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        coords = posviz.project(vectors, "umap")
    assert coords.shape == (3, 2)
    reasons = [str(w.message) for w in caught if issubclass(w.category, ProjectionFallback)]
    assert reasons == ["UMAP cannot embed 3 positions in 2 dimensions (it needs at least 4), so PCA is shown."]
    with pytest.raises(ValueError, match="needs at least 2 positions; 1 is too few"):
        posviz.project(vectors[:1], "pca")


def test_projection_page_range_reaches_small_projections():
    at = open_page("projection", range=(10, 12))
    assert_clean(at, "projection")
    (fig,) = figures(at)
    points = np.concatenate([arr(t["x"]) for t in fig["data"] if t.get("mode") == "markers"])
    assert points.shape == (3,)
    assert any("UMAP cannot embed 3 positions" in c.value for c in at.caption)
    at.slider(key="range").set_value((20, 20)).run()
    assert not at.exception
    assert any("needs at least 2 positions; 1 is too few" in i.value for i in at.info)


def test_the_readme_lecture_opens(tmp_path):
    """The lecture file the README shows parses, and opens at its rotary slide from its path."""
    from tests.support.apptest import ROOT

    readme = (ROOT / "README.md").read_text()
    teaching = readme[readme.index("## Teaching"):]
    start = teaching.index("```toml\n") + len("```toml\n")
    text = teaching[start:teaching.index("```", start)]
    assert [s.page for s in parse(text, "readme").slides] == ["projection", "similarity", "compare"]
    path = tmp_path / "rotary.toml"
    path.write_text(text, encoding="utf-8")
    at = open_page("model", {"lecture": str(path), "step": "1"})
    assert not at.exception, [e.value for e in at.exception]
    assert "The rotary kernel · Llama 3.1 8B" in _slide_heading(at)
    (heatmap,) = figures(at)
    assert arr(heatmap["data"][0]["z"]).shape == (256, 256)


def test_presentation_from_the_link_scales_the_first_page():
    """A shared link with present=true opens large at once: the page's style (drawn before the
    sidebar's toggle) reads the URL, and every chart is drawn for the projector."""
    at = open_page("model", {"present": "true"})
    assert_clean(at, "model")
    assert any("html { font-size: 21px; }" in h.proto.body for h in at.get("html"))
    assert figures(at)[0]["layout"]["font"]["size"] == style.PRESENT_FONT
    at.sidebar.toggle(key="present").set_value(False).run()
    assert not any("html { font-size: 21px; }" in h.proto.body for h in at.get("html"))


def test_reversed_range_in_a_link_is_put_in_order():
    at = open_page("similarity", {"range": ["400", "10"]})
    assert_clean(at, "similarity")
    assert arr(figures(at)[0]["data"][0]["z"]).shape == (391, 391)
    assert "positions 10–400" in title_text(figures(at)[0])
