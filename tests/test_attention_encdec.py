"""Encoder-decoder attention (T5, BART): encoder self-, decoder self- and cross attention.

posviz.attention runs the full model with decoder_input_ids prepared from a target sentence;
the three stacks are compared with the model's own output_attentions=True forward (loaded
independently with plain transformers) given the same decoder_input_ids, built here with the
model's own shift-right code. The AppTest part picks a tiny T5 folder in the sidebar and checks
each stack's heatmaps on the Attention page against the library.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformers.models.bart.modeling_bart import shift_tokens_right

import posviz
from posviz.analysis.attention import without_tokens
from posviz.app.widgets import DEFAULT_TEXT, DEFAULT_TEXT_PAIR
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page
from tests.support.reference import encode, stacked
from tests.support.tiny_models import LONG_TEXT, PAIR, SENTENCE, build_tiny, tiny_config

ATOL = 1e-5
TARGET = "Der schnelle braune Fuchs springt."
ENCDEC = ["t5", "bart"]


def own_decoder_input_ids(family: str, model, tok, target: str) -> torch.Tensor:
    """decoder_input_ids as the model's own seq2seq code builds them from labels."""
    labels = tok(text_target=target, return_tensors="pt")["input_ids"]
    if family == "t5":
        return model._shift_right(labels)
    return shift_tokens_right(labels, model.config.pad_token_id, model.config.decoder_start_token_id)


def own_stacks(model, batch, decoder_input_ids=None) -> dict[str, np.ndarray]:
    kw = {} if decoder_input_ids is None else {"decoder_input_ids": decoder_input_ids}
    with torch.no_grad():
        out = model(**batch, **kw, output_attentions=True, use_cache=False)
    return {"encoder": stacked(out.encoder_attentions), "decoder": stacked(out.decoder_attentions),
            "cross": stacked(out.cross_attentions)}


def assert_rows_sum_to_one(p: np.ndarray) -> None:
    assert (p >= 0).all()
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-4)


def assert_causal(p: np.ndarray) -> None:
    n = p.shape[-1]
    assert p.shape[-2] == n
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert np.abs(p[..., upper]).max() < 1e-6
    np.testing.assert_allclose(p[:, :, 0, 0], 1.0, atol=1e-5)  # the start token sees only itself


# ---------------------------------------------------------------- library


@pytest.mark.parametrize("family", ENCDEC)
def test_three_stacks_match_model(family, tiny_lm, reference):
    model, tok = reference(family)
    lm = tiny_lm(family)
    att = posviz.attention(lm, SENTENCE, target=TARGET)
    batch = encode(tok, SENTENCE)
    dec_ids = own_decoder_input_ids(family, model, tok, TARGET)
    want = own_stacks(model, batch, dec_ids)

    src = tok.convert_ids_to_tokens(batch["input_ids"][0].tolist())
    tgt = tok.convert_ids_to_tokens(dec_ids[0].tolist())
    assert att.is_encoder_decoder
    assert att.tokens == src and att.decoder_tokens == tgt
    assert dec_ids[0, 0].item() == model.config.decoder_start_token_id
    # shifted right: the decoder reads the start token, then the labels but the last one
    labels = tok(text_target=TARGET)["input_ids"]
    assert dec_ids[0, 1:].tolist() == labels[:-1]
    S, T = len(src), len(tgt)
    assert att.patterns.shape == (2, 4, S, S)
    assert att.decoder_patterns.shape == (2, 4, T, T)
    assert att.cross_patterns.shape == (2, 4, T, S)
    assert S != T  # so that a swapped axis would show
    for name, got in (("encoder", att.patterns), ("decoder", att.decoder_patterns), ("cross", att.cross_patterns)):
        assert got.dtype == np.float32
        assert got.shape == want[name].shape, name
        np.testing.assert_allclose(got, want[name], atol=ATOL, rtol=1e-4, err_msg=name)
        assert_rows_sum_to_one(got)
    assert_causal(att.decoder_patterns)
    assert att.truncated == 0 and att.decoder_truncated == 0


@pytest.mark.parametrize("family", ENCDEC)
def test_stack_accessor(family, tiny_lm):
    att = posviz.attention(tiny_lm(family), SENTENCE, target=TARGET)
    p, rows, cols = att.stack("encoder")
    assert p is att.patterns and rows == cols == att.tokens
    p, rows, cols = att.stack("decoder")
    assert p is att.decoder_patterns and rows == cols == att.decoder_tokens
    p, rows, cols = att.stack("cross")
    assert p is att.cross_patterns and rows == att.decoder_tokens and cols == att.tokens
    with pytest.raises(ValueError):
        att.stack("self")


@pytest.mark.parametrize("family", ENCDEC)
def test_pair_goes_to_the_encoder(family, tiny_lm, reference):
    model, tok = reference(family)
    att = posviz.attention(tiny_lm(family), SENTENCE, PAIR, target=TARGET)
    batch = encode(tok, SENTENCE, PAIR)
    want = own_stacks(model, batch, own_decoder_input_ids(family, model, tok, TARGET))
    assert att.tokens == tok.convert_ids_to_tokens(batch["input_ids"][0].tolist())
    for name, got in (("encoder", att.patterns), ("decoder", att.decoder_patterns), ("cross", att.cross_patterns)):
        np.testing.assert_allclose(got, want[name], atol=ATOL, rtol=1e-4, err_msg=name)


@pytest.mark.parametrize("family", ENCDEC)
@pytest.mark.parametrize("empty", [None, "", "   "])
def test_default_target_is_the_source_sentence(family, empty, tiny_lm):
    lm = tiny_lm(family)
    default = posviz.attention(lm, SENTENCE, PAIR, target=empty)
    explicit = posviz.attention(lm, SENTENCE, PAIR, target=SENTENCE)
    assert default.decoder_tokens == explicit.decoder_tokens
    np.testing.assert_array_equal(default.decoder_patterns, explicit.decoder_patterns)
    np.testing.assert_array_equal(default.cross_patterns, explicit.cross_patterns)


def test_bart_default_target_is_bart_own_default(tiny_lm, reference):
    """BartModel given no decoder input shifts the source ids itself: the same decoder input."""
    model, tok = reference("bart")
    att = posviz.attention(tiny_lm("bart"), SENTENCE)
    want = own_stacks(model, encode(tok, SENTENCE))
    for name, got in (("encoder", att.patterns), ("decoder", att.decoder_patterns), ("cross", att.cross_patterns)):
        np.testing.assert_allclose(got, want[name], atol=ATOL, rtol=1e-4, err_msg=name)


@pytest.mark.parametrize("family", ["bart", "t5"])
def test_without_decoder_start_token_starts_with_last_label(family, tiny_lm, monkeypatch):
    """mBART's convention (no decoder_start_token_id): the last label (its language code) starts; the
    same where the config lacks the attribute (transformers 5's ``T5Config()`` has none)."""
    lm = tiny_lm(family)
    if family == "t5":
        monkeypatch.delattr(lm.config, "decoder_start_token_id")
        assert not hasattr(lm.config, "decoder_start_token_id")
    else:
        monkeypatch.setattr(lm.config, "decoder_start_token_id", None)
    att = posviz.attention(lm, SENTENCE, target=TARGET)
    labels = lm.tokenizer.convert_ids_to_tokens(lm.tokenizer(text_target=TARGET)["input_ids"])
    assert att.decoder_tokens == [labels[-1]] + labels[:-1]
    assert_causal(att.decoder_patterns)


def test_long_target_is_truncated(tiny_lm, reference):
    model, tok = reference("bart")
    lm = tiny_lm("bart")
    full = len(tok(text_target=LONG_TEXT)["input_ids"])
    att = posviz.attention(lm, SENTENCE, target=LONG_TEXT)
    assert len(att.decoder_tokens) == lm.max_tokens == 72
    assert att.decoder_truncated == full - 72 > 0
    assert att.cross_patterns.shape == (2, 4, 72, len(att.tokens))
    labels = tok(text_target=LONG_TEXT, truncation=True, max_length=72, return_tensors="pt")["input_ids"]
    dec_ids = shift_tokens_right(labels, model.config.pad_token_id, model.config.decoder_start_token_id)
    want = own_stacks(model, encode(tok, SENTENCE), dec_ids)
    np.testing.assert_allclose(att.cross_patterns, want["cross"], atol=ATOL, rtol=1e-4)


@pytest.mark.parametrize("family", ["bert", "gpt2"])
def test_other_models_have_no_decoder_stacks(family, tiny_lm):
    att = posviz.attention(tiny_lm(family), SENTENCE, target=TARGET)  # target ignored
    assert not att.is_encoder_decoder
    assert att.decoder_tokens is None and att.decoder_patterns is None and att.cross_patterns is None
    assert att.decoder_truncated == 0
    with pytest.raises(ValueError):
        att.stack("cross")


@pytest.mark.parametrize("text", ["", "  \n "])
def test_empty_source_raises(text, tiny_lm):
    with pytest.raises(ValueError):
        posviz.attention(tiny_lm("t5"), text, target=TARGET)


def test_without_tokens_rectangular():
    rng = np.random.default_rng(0)
    p = rng.random((3, 5, 7)).astype(np.float32)
    p /= p.sum(-1, keepdims=True)
    rows = np.array([0, 1, 1, 1, 0], dtype=bool)
    cols = np.array([0, 1, 1, 0, 1, 1, 0], dtype=bool)
    got = without_tokens(p, rows, cols)
    assert got.shape == (3, 3, 4)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-6)
    sub = p[:, 1:4][:, :, [1, 2, 4, 5]]
    np.testing.assert_allclose(got, sub / sub.sum(-1, keepdims=True), rtol=1e-6)


# ---------------------------------------------------------------- Attention page (AppTest)


@pytest.fixture(scope="module")
def deep_decoder_t5(tmp_path_factory):
    """A tiny T5 whose decoder has 3 layers (the encoder 2), with the bundled BERT tokenizer."""
    folder = tmp_path_factory.mktemp("tiny-t5-deep-decoder")
    config = tiny_config("t5")
    config.num_decoder_layers = 3
    return str(build_tiny("t5", folder, config=config))


def _heatmaps(at):
    """The layer's three figures (head, mean, every head); attention by offset follows them."""
    head, mean, grid = figures(at)[:3]
    return head, mean, grid


def _check_stack(at, expected: np.ndarray, rows: list[str], cols: list[str], layer: int, head_index: int):
    head, mean, grid = _heatmaps(at)
    z = arr(head["data"][0]["z"])
    assert z.shape == (len(rows), len(cols))
    np.testing.assert_allclose(z, expected[layer, head_index], atol=1e-5)
    assert list(head["layout"]["yaxis"]["ticktext"]) == rows
    assert list(head["layout"]["xaxis"]["ticktext"]) == cols
    np.testing.assert_allclose(arr(mean["data"][0]["z"]), expected[layer].mean(axis=0), atol=1e-5)
    assert list(mean["layout"]["yaxis"]["ticktext"]) == rows
    assert list(mean["layout"]["xaxis"]["ticktext"]) == cols
    assert len(grid["data"]) == expected.shape[1]
    for h, trace in enumerate(grid["data"]):
        np.testing.assert_allclose(arr(trace["z"]), expected[layer, h], atol=1e-5)


def test_attention_page_encoder_decoder_stacks(deep_decoder_t5):
    at = open_page("attention")
    assert not at.get("radio") or "stack" not in [r.key for r in at.radio]  # bundled BERT: no stacks
    assert "target" not in [t.key for t in at.text_input]
    at.sidebar.selectbox(key="model").set_value(deep_decoder_t5).run()
    assert_clean(at, "attention")
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    assert any("t5" in c.value for c in at.sidebar.caption), [c.value for c in at.sidebar.caption]

    radio = at.radio(key="stack")
    assert list(radio.options) == ["encoder", "decoder", "cross"]
    assert radio.value == "encoder"
    target_input = at.text_input(key="target")
    assert target_input.label == "Target sentence (decoder input)"
    assert target_input.value == ""

    lm = posviz.load_model(deep_decoder_t5)
    default = posviz.attention(lm, DEFAULT_TEXT, DEFAULT_TEXT_PAIR)
    assert default.decoder_patterns.shape[:2] == (3, 4) and default.patterns.shape[:2] == (2, 4)
    # encoder stack with the default (empty) target
    assert at.slider(key="layer").max == 1 and at.slider(key="head").max == 3
    _check_stack(at, default.patterns, default.tokens, default.tokens, 0, 0)

    target = "Die Katze jagte den Hund"
    at.text_input(key="target").set_value(target).run()
    assert_clean(at, "attention")
    att = posviz.attention(lm, DEFAULT_TEXT, DEFAULT_TEXT_PAIR, target=target)
    assert len(att.decoder_tokens) != len(att.tokens)

    at.radio(key="stack").set_value("decoder").run()
    assert_clean(at, "attention")
    assert at.slider(key="layer").max == 2  # the decoder has 3 layers
    at.slider(key="layer").set_value(2)
    at.slider(key="head").set_value(1).run()
    assert_clean(at, "attention")
    _check_stack(at, att.decoder_patterns, att.decoder_tokens, att.decoder_tokens, 2, 1)
    head = figures(at)[0]
    assert head["layout"]["yaxis"]["title"]["text"] == "query (target)"
    assert head["layout"]["xaxis"]["title"]["text"] == "key (target)"

    at.radio(key="stack").set_value("cross").run()
    assert_clean(at, "attention")
    assert at.slider(key="layer").max == 2 and at.slider(key="layer").value == 2
    _check_stack(at, att.cross_patterns, att.decoder_tokens, att.tokens, 2, 1)
    head = figures(at)[0]
    assert head["layout"]["yaxis"]["title"]["text"] == "query (target)"
    assert head["layout"]["xaxis"]["title"]["text"] == "key (source)"

    # back to the encoder (2 layers): the layer slider follows, clamped to its last layer
    at.radio(key="stack").set_value("encoder").run()
    assert_clean(at, "attention")
    assert at.slider(key="layer").max == 1 and at.slider(key="layer").value == 1
    _check_stack(at, att.patterns, att.tokens, att.tokens, 1, 1)

    # hide special tokens on the cross stack: rows and columns filtered separately
    at.radio(key="stack").set_value("cross")
    at.toggle(key="hide_special").set_value(True).run()
    assert_clean(at, "attention")
    special = set(lm.tokenizer.all_special_tokens)
    keep_rows = np.array([t not in special for t in att.decoder_tokens])
    keep_cols = np.array([t not in special for t in att.tokens])
    head = figures(at)[0]
    assert list(head["layout"]["yaxis"]["ticktext"]) == [t for t in att.decoder_tokens if t not in special]
    assert list(head["layout"]["xaxis"]["ticktext"]) == [t for t in att.tokens if t not in special]
    (weights,) = [t for t in head["data"] if t["name"] == "weight"]
    np.testing.assert_allclose(arr(weights["z"]), without_tokens(att.cross_patterns[1], keep_rows, keep_cols)[1],
                               atol=1e-5)


def test_attention_page_stack_from_url(tiny_path, tiny_lm):
    path = str(tiny_path("t5"))
    at = open_page("attention", query_params={"model": path, "stack": "cross", "target": "Hallo Welt"})
    assert_clean(at, "attention")
    assert at.radio(key="stack").value == "cross"
    assert at.text_input(key="target").value == "Hallo Welt"
    att = posviz.attention(tiny_lm("t5"), DEFAULT_TEXT, DEFAULT_TEXT_PAIR, target="Hallo Welt")
    _check_stack(at, att.cross_patterns, att.decoder_tokens, att.tokens, 0, 0)
