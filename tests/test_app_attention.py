"""The Attention page at any length (AppTest): block summaries and the zoom against the model's own
weights, attention by offset against the diagonals, the budget's message and its way forward."""

from __future__ import annotations

import numpy as np
import pytest

import posviz
from posviz.analysis import attention_budget as budget
from posviz.analysis import attention_reading as reading
from posviz.analysis.layer_probe import BUILTIN_TEXT
from posviz.analysis.properties import proximity_by_offset
from posviz.app import caches
from posviz.views import attention as views
from posviz.views import attention_offsets as offset_views
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page, title_text
from tests.support.tiny_models import LONG_TEXT

ATOL = 1e-5


@pytest.fixture
def fresh_readings():
    """No reading kept from another test (they are cached by their inputs, not by the limits patched here)."""
    caches.attention_reading.clear()
    caches.attention_size.clear()
    yield
    caches.attention_reading.clear()
    caches.attention_size.clear()


def _blocks(matrix: np.ndarray, b: int, reduce) -> np.ndarray:
    edges = np.arange(0, matrix.shape[-1], b)
    return reduce.reduceat(reduce.reduceat(matrix, edges, axis=-2), edges, axis=-1)


def test_long_input_is_summarised_with_an_exact_zoom(bundled_lm, monkeypatch, fresh_readings):
    monkeypatch.setattr(budget, "WHOLE_TOKENS", 128)  # the bundled model's 512 tokens become a long input
    at = open_page("attention", text=LONG_TEXT, text_pair="", layer=2, head=7)
    assert_clean(at, "attention")
    full = posviz.attention(bundled_lm, LONG_TEXT).patterns[2]
    head, mean, grid = figures(at)[:3]
    np.testing.assert_allclose(arr(head["data"][0]["z"]), _blocks(full[7], 2, np.add) / 4, atol=ATOL)
    assert "means of 2×2 blocks" in title_text(head)
    np.testing.assert_allclose(arr(mean["data"][0]["z"]), (_blocks(full, 2, np.add) / 4).mean(0), atol=ATOL)
    assert not [t for t in at.toggle if t.key == "hide_special"]  # the block summary takes its place

    at.radio(key="blocks").set_value("max").run()
    head = figures(at)[0]
    np.testing.assert_allclose(arr(head["data"][0]["z"]), _blocks(full[7], 2, np.maximum), atol=ATOL)
    assert "maxima of 2×2 blocks" in title_text(head)

    at.slider(key="zoom_q").set_value((100, 139))
    at.slider(key="zoom_k").set_value((90, 149)).run()
    assert_clean(at, "attention")
    zoom = next(f for f in figures(at) if "queries 100–139, keys 90–149" in title_text(f))
    np.testing.assert_allclose(arr(zoom["data"][0]["z"]), full[7, 100:140, 90:150], atol=ATOL)
    tokens = posviz.attention(bundled_lm, LONG_TEXT).tokens
    assert arr(zoom["layout"]["yaxis"]["tickvals"])[0] == 100
    assert zoom["layout"]["yaxis"]["ticktext"][0] == tokens[100]

    at.slider(key="zoom_q").set_value((0, 511))
    at.slider(key="zoom_k").set_value((0, 511)).run()
    assert any("at most 256 × 256 weights: queries 0–255, keys 0–255" in c.value for c in at.caption)


def test_attention_by_offset_is_the_diagonals(bundled_lm):
    at = open_page("attention", layer=1, head=3)
    assert_clean(at, "attention")
    full = posviz.attention(bundled_lm, "The cat chased the dog", "The dog chased the cat").patterns
    grid = next(f for f in figures(at) if title_text(f).startswith("Attention by offset, every layer"))
    z = arr(grid["data"][0]["z"])  # [layers × heads, offsets], log10 of the mean weight
    n = full.shape[-1]
    assert z.shape == (6 * 12, 2 * n - 1)
    for layer, head in ((0, 0), (1, 3), (5, 11)):
        _, mean, _, _ = proximity_by_offset(full[layer, head], signed=True)
        np.testing.assert_allclose(z[layer * 12 + head], np.log10(np.maximum(mean, offset_views.FLOOR)), atol=1e-5)
    sinks = next(f for f in figures(at) if title_text(f).startswith("Attention on the first and on the previous"))
    np.testing.assert_allclose(arr(sinks["data"][0]["z"]), full[..., 0].mean(-1), atol=ATOL)
    one = next(f for f in figures(at) if title_text(f).startswith("Layer 1, head 3: attention by offset"))
    _, mean, _, _ = proximity_by_offset(full[1, 3], signed=True)
    np.testing.assert_allclose(arr(one["data"][0]["y"]), mean, atol=ATOL)
    P = bundled_lm.encoding().vectors(np.arange(n)).double().numpy()
    _, kernel, _, _ = proximity_by_offset(P @ P.T, signed=True)
    np.testing.assert_allclose(arr(one["data"][1]["y"]), kernel, rtol=1e-5)

    at.radio(key="offsets_over").set_value("corpus").run()
    assert_clean(at, "attention")
    sinks = next(f for f in figures(at) if title_text(f).startswith("Attention on the first and on the previous"))
    count = reading.corpus_offsets(bundled_lm, BUILTIN_TEXT, tokens=128, windows=16).inputs
    assert 4 <= count <= 16 and f"mean over {count} windows of 128 tokens" in title_text(sinks)


def test_the_layer_and_head_sliders_run_no_forward_pass_again(monkeypatch, fresh_readings):
    at = open_page("attention", layer=0, head=0)
    assert_clean(at, "attention")
    reads = []
    original = caches.read_attention
    monkeypatch.setattr(caches, "read_attention", lambda *a, **k: reads.append(a[1]) or original(*a, **k))
    at.slider(key="layer").set_value(4).run()
    at.slider(key="head").set_value(9).run()
    assert_clean(at, "attention")
    assert title_text(figures(at)[0]).startswith("Layer 4, head 9")
    assert reads == []


def test_over_budget_says_so_and_reads_what_fits(bundled_lm, monkeypatch, fresh_readings):
    monkeypatch.setenv("POSVIZ_ATTENTION_BYTES", "30MB")
    at = open_page("attention", text=LONG_TEXT, text_pair="")
    assert not at.exception
    cost = budget.estimate(bundled_lm, 512, kept=6)
    warning = next(w.value for w in at.warning if "over the memory budget" in w.value)
    assert "512 tokens need about" in warning and "30 MB" in warning and "POSVIZ_ATTENTION_BYTES" in warning
    assert not figures(at)
    assert "zoom_q" not in [s.key for s in at.slider]  # nothing to zoom into
    button = next(b for b in at.button if b.label.startswith("Read the first"))
    assert button.label == f"Read the first {cost.fitting_tokens:,} tokens"
    button.click().run()
    assert_clean(at, "attention")
    assert at.number_input(key="limit").value == cost.fitting_tokens
    assert at.text_input(key="text").value == LONG_TEXT  # nothing typed is lost
    assert any(f"the {cost.fitting_tokens:,} tokens read" in w.value and "raise “Read at most” there" in w.value
               for w in at.warning)
    head = figures(at)[0]
    assert arr(head["data"][0]["z"]).shape[0] == cost.fitting_tokens


def test_the_limit_reads_at_least_the_special_tokens_and_a_token_of_each_sentence(bundled_lm):
    """The field's minimum is the tokenizer's special tokens of a pair and one token of each sentence
    (5 for BERT); a smaller value, kept in the session (from a model without special tokens) or
    given by a link, is not used (the field has its default, the model's limit): no failure, and the
    link's value is named."""
    at = open_page("attention", limit=5)
    assert_clean(at, "attention")
    assert at.number_input(key="limit").min == 5
    head = figures(at)[0]
    assert list(head["layout"]["xaxis"]["ticktext"]) == ["[CLS]", "the", "[SEP]", "the", "[SEP]"]
    at = open_page("attention", limit=1)
    assert_clean(at, "attention")
    assert at.number_input(key="limit").value == bundled_lm.max_tokens
    at = open_page("attention", query_params={"limit": "1"})
    assert_clean(at, "attention")
    assert at.number_input(key="limit").value == bundled_lm.max_tokens
    assert any("limit = 1, which this page cannot use" in i.value for i in at.info)


@pytest.mark.parametrize("raised, said", [
    (RuntimeError("boom"), "This view failed for the current model and input (RuntimeError: boom). Your inputs are kept"),
    (ImportError("cannot import name 'x' from 'posviz.tokenization'"), "If posviz was updated while the app was running, "
                                                                      "restart the app"),
])
def test_a_failing_view_says_what_to_do_and_keeps_the_inputs(raised, said, monkeypatch):
    """The page's last net: an error in words (an ImportError: restart the app, whose library is older than
    the page's file), no traceback, the sentence kept, the sidebar usable."""
    def fails(*args, **kwargs):
        raise raised

    monkeypatch.setattr(caches, "attention_size", fails)
    at = open_page("attention", text="Ducks swim north")
    assert not at.exception
    assert [said in e.value for e in at.main.error] == [True], [e.value for e in at.main.error]
    assert at.text_input(key="text").value == "Ducks swim north"
    assert at.sidebar.selectbox(key="model").value


def test_generated_tokens_are_read_with_the_sentence_and_marked(tiny_path):
    """A decoder model's page offers a greedy continuation; the figures hold prompt and generation, the
    generated tokens marked; an encoder has no such field."""
    from posviz.analysis.generation import greedy_continuation

    at = open_page("attention")
    assert "generate" not in [n.key for n in at.number_input]  # BERT: not a decoder
    folder = str(tiny_path("gpt2"))
    at = open_page("attention", model=folder, generate=4)
    assert_clean(at, "attention")
    lm = posviz.load_model(folder)
    new = greedy_continuation(lm, "The cat chased the dog", 4, text_pair="The dog chased the cat")
    head = figures(at)[0]
    labels = list(head["layout"]["xaxis"]["ticktext"])
    tokens = lm.tokenizer.convert_ids_to_tokens(new)
    assert labels[-4:] == [f"⟨{t}⟩" for t in tokens]
    got = reading.read_attention(lm, "The cat chased the dog", "The dog chased the cat", continuation=new)
    np.testing.assert_allclose(arr(head["data"][0]["z"]), got.layer(0).patterns[0], atol=ATOL)


def test_a_model_whose_head_cannot_be_read_says_so_and_shows_the_sentence(tiny_path):
    """A decoder whose output head is neither tied to its embeddings nor in its checkpoint (the tiny Llama is
    saved without one): generation is refused in words, and the page shows the sentence's own patterns."""
    folder = str(tiny_path("llama"))
    at = open_page("attention", model=folder, generate=3)
    assert_clean(at, "attention")
    assert [w.value for w in at.main.warning] == [
        "No generation: the model's output head cannot be read (its checkpoint has no lm_head.weight and its "
        "head is not tied to the embeddings)."]
    lm = posviz.load_model(folder)
    want = reading.read_attention(lm, "The cat chased the dog", "The dog chased the cat")
    head = figures(at)[0]
    assert not any(label.startswith("⟨") for label in head["layout"]["xaxis"]["ticktext"])
    np.testing.assert_allclose(arr(head["data"][0]["z"]), want.layer(0).patterns[0], atol=ATOL)


def test_clipped_colours_show_a_long_inputs_pattern_and_the_toggle_gives_the_whole_range(bundled_lm):
    at = open_page("attention", {"text": LONG_TEXT, "text_pair": ""}, layer=1)
    assert_clean(at, "attention")
    assert at.toggle(key="clip").value  # on by default, as on the Similarity page
    full = posviz.attention(bundled_lm, LONG_TEXT).patterns[1]
    top = np.percentile(full, views.CLIP_PERCENTILE, method="lower")
    assert top < full.max() / 10  # at 512 tokens a few weights (the sinks) would take the whole scale
    head, mean, grid = figures(at)[:3]
    assert head["data"][0]["zmax"] == mean["data"][0]["zmax"] == grid["layout"]["coloraxis"]["cmax"]
    assert head["data"][0]["zmax"] == pytest.approx(top, rel=1e-6)
    assert all(views.CLIPPED in title_text(f).replace("<br>", " ") for f in (head, mean, grid))
    zoom = next(f for f in figures(at) if "queries 0–31, keys 0–31" in title_text(f))  # its own scale, clipped too
    assert zoom["data"][0]["zmax"] == pytest.approx(np.percentile(full[:, :32, :32], views.CLIP_PERCENTILE,
                                                                  method="lower"), rel=1e-6)
    assert zoom["data"][0]["colorbar"]["ticktext"][-1].startswith("≥ ")

    at.toggle(key="clip").set_value(False).run()
    assert_clean(at, "attention")
    head, mean, grid = figures(at)[:3]
    assert head["data"][0]["zmax"] == grid["layout"]["coloraxis"]["cmax"] == pytest.approx(full.max(), rel=1e-6)
    assert not any("clipped" in title_text(f) for f in figures(at))
    zoom = next(f for f in figures(at) if "queries 0–31, keys 0–31" in title_text(f))
    assert zoom["data"][0]["zmax"] == pytest.approx(full[:, :32, :32].max(), rel=1e-6)
