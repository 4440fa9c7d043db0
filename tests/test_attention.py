"""posviz.attention against the model's own output_attentions=True result."""

from __future__ import annotations

import numpy as np
import pytest

import posviz
from tests.support.reference import encode, own_attention
from tests.support.tiny_models import ALL, FAMILIES, LONG_TEXT, PAIR, SENTENCE

ATOL = 1e-5


def _check(att, model, tok, spec_encdec, text, text_pair=None, **enc_kw):
    batch = encode(tok, text, text_pair, **enc_kw)
    tokens = tok.convert_ids_to_tokens(batch["input_ids"][0].tolist())
    want = own_attention(model, batch, encoder_decoder=spec_encdec)
    n = len(tokens)
    assert list(att.tokens) == tokens
    assert isinstance(att.patterns, np.ndarray)
    assert att.patterns.shape == want.shape
    assert att.patterns.shape[2:] == (n, n)
    np.testing.assert_allclose(att.patterns, want, atol=ATOL, rtol=1e-4)
    np.testing.assert_allclose(att.patterns.sum(-1), 1.0, atol=1e-4)
    assert (att.patterns >= 0).all()


@pytest.mark.parametrize("family", ALL)
def test_attention_matches_model(family, tiny_lm, reference):
    spec = FAMILIES[family]
    model, tok = reference(family)
    lm = tiny_lm(family)
    att = posviz.attention(lm, SENTENCE)
    assert (lm.num_layers, lm.num_heads) == (2, 2 if family == "xlm-roberta" else 4)
    assert att.patterns.shape[:2] == (lm.num_layers, lm.num_heads)
    _check(att, model, tok, spec.encoder_decoder, SENTENCE)
    assert att.truncated == 0


@pytest.mark.parametrize("family", ["bert", "roberta", "bart", "t5", "llama"])
def test_attention_pair_matches_model(family, tiny_lm, reference):
    spec = FAMILIES[family]
    model, tok = reference(family)
    att = posviz.attention(tiny_lm(family), SENTENCE, text_pair=PAIR)
    _check(att, model, tok, spec.encoder_decoder, SENTENCE, PAIR)


@pytest.mark.parametrize("family", ["llama", "bloom", "gpt2", "opt"])
def test_causal_models_are_lower_triangular(family, tiny_lm):
    p = posviz.attention(tiny_lm(family), SENTENCE).patterns
    n = p.shape[-1]
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    assert np.abs(p[..., upper]).max() < 1e-6
    # row 0 of a causal model attends only to itself
    np.testing.assert_allclose(p[:, :, 0, 0], 1.0, atol=1e-5)


def test_bundled_attention(bundled_lm, bundled_reference):
    model, tok = bundled_reference
    att = posviz.attention(bundled_lm, SENTENCE, text_pair=PAIR)
    assert att.patterns.shape[:2] == (6, 12)
    _check(att, model, tok, False, SENTENCE, PAIR)


def test_bundled_attention_truncation(bundled_lm, bundled_reference):
    model, tok = bundled_reference
    full = len(tok(LONG_TEXT)["input_ids"])
    att = posviz.attention(bundled_lm, LONG_TEXT)
    assert att.patterns.shape == (6, 12, 512, 512)
    assert att.truncated == full - 512 > 0
    _check(att, model, tok, False, LONG_TEXT, truncation=True, max_length=512)


@pytest.mark.parametrize("family", ["bert", "llama", "t5"])
def test_tiny_attention_truncation(family, tiny_lm, reference):
    _, tok = reference(family)
    lm = tiny_lm(family)
    full = len(tok(LONG_TEXT)["input_ids"])
    att = posviz.attention(lm, LONG_TEXT)
    n = len(att.tokens)
    assert n == lm.max_tokens
    assert att.patterns.shape[2:] == (n, n)
    assert att.truncated == full - n > 0


@pytest.mark.parametrize("text", ["", "  \n "])
def test_empty_text_raises(text, tiny_lm):
    with pytest.raises(ValueError):
        posviz.attention(tiny_lm("bert"), text)
