"""Attention read by blocks of queries (posviz.analysis.attention_reading) against output_attentions, its
summaries against the full matrix's blocks, the offset profile against the diagonals, and the budget."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import posviz
from posviz.analysis import attention_budget as budget
from posviz.analysis import attention_reading as reading
from posviz.analysis.attention_offsets import OffsetProfile, diagonal_sums, scheme_by_offset
from posviz.analysis.properties import proximity_by_offset
from posviz.tokenization import encode
from tests.support.tiny_models import ALL, LONG_TEXT, SENTENCE

ATOL = 1e-5
#: Families read from output_attentions (no AttentionInterface), and ones read by blocks, beyond ALL.
MORE = ["falcon-alibi", "mpt", "deberta-v2", "gpt_neox", "phi", "marian"]


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 3 query rows at most (a 12-token sentence takes 4 blocks), summaries of 4 cells a side."""
    monkeypatch.setattr(budget, "BLOCK_BYTES", 3 * 4 * 4 * 4)
    monkeypatch.setattr(budget, "WHOLE_TOKENS", 4)
    monkeypatch.setattr(budget, "SUMMARY_CELLS", 4)


def _full(lm, stack="encoder"):
    """The reference: every layer of ``stack`` from output_attentions, [layers, heads, q, k]."""
    return posviz.attention(lm, SENTENCE).stack(stack)[0]


@pytest.mark.parametrize("family", ALL + MORE)
def test_reading_by_blocks_matches_output_attentions(family, tiny_lm, monkeypatch):
    monkeypatch.setattr(budget, "BLOCK_BYTES", 3 * 4 * 40 * 4)  # 3 rows of 4 heads × 40 keys
    lm = tiny_lm(family)
    full = _full(lm)
    got = reading.read_attention(lm, SENTENCE)
    assert sorted(got.layers) == list(range(full.shape[0]))
    for layer in range(full.shape[0]):
        kept = got.layer(layer)
        assert kept.block == 1 and kept.patterns.shape == full[layer].shape
        np.testing.assert_allclose(kept.patterns, full[layer], atol=ATOL)
    assert got.query_tokens == posviz.attention(lm, SENTENCE).tokens
    assert budget.readable(lm.model) == (family not in ("bloom", "falcon-alibi", "mpt", "deberta-v2"))


@pytest.mark.parametrize("family", ["t5", "bart", "marian"])
@pytest.mark.parametrize("stack", ["decoder", "cross"])
def test_reading_decoder_stacks(family, stack, tiny_lm, small_blocks):
    lm = tiny_lm(family)
    full = posviz.attention(lm, SENTENCE, target="Ein Satz.").stack(stack)[0]
    last = full.shape[0] - 1
    got = reading.read_attention(lm, SENTENCE, target="Ein Satz.", stack=stack, layers=[last],
                                 window=budget.Window(0, 99, 0, 99))
    kept = got.layer(last)
    np.testing.assert_allclose(kept.window_patterns if kept.block > 1 else kept.patterns, full[last], atol=ATOL)
    assert (got.offsets is None) == (stack == "cross")


@pytest.mark.parametrize("family", ALL + MORE)
def test_block_summaries_are_the_blocks_mean_and_max(family, tiny_lm, small_blocks):
    lm = tiny_lm(family)
    every = _full(lm)
    last = every.shape[0] - 1
    full = every[last]
    n = full.shape[-1]
    got = reading.read_attention(lm, SENTENCE, layers=[last], window=budget.Window(2, 7, 1, 11)).layer(last)
    b = got.block
    assert b == -(-n // 4) > 1 and got.patterns is None
    edges = np.arange(0, n, b)
    mean = np.add.reduceat(np.add.reduceat(full, edges, axis=1), edges, axis=2)
    sizes = np.minimum(b, n - edges)
    np.testing.assert_allclose(got.block_mean, mean / (sizes[:, None] * sizes[None, :]), atol=ATOL)
    maxima = np.maximum.reduceat(np.maximum.reduceat(full, edges, axis=1), edges, axis=2)
    np.testing.assert_allclose(got.block_max, maxima, atol=ATOL)
    np.testing.assert_allclose(got.window_patterns, full[:, 2:7, 1:11], atol=ATOL)
    assert got.summary("max") is got.block_max and got.summary() is got.block_mean


@pytest.mark.parametrize("family", ["bert", "llama", "bloom", "t5", "albert", "deberta-v2"])
def test_offset_profile_is_the_diagonals(family, tiny_lm, small_blocks):
    lm = tiny_lm(family)
    full = _full(lm)
    profile = reading.read_attention(lm, SENTENCE).offsets
    n = full.shape[-1]
    np.testing.assert_array_equal(profile.offsets, np.arange(-(n - 1), n))
    for layer in range(full.shape[0]):
        for head in range(full.shape[1]):
            offsets, mean, _, _ = proximity_by_offset(full[layer, head], signed=True)
            np.testing.assert_allclose(profile.mean[layer, head], mean, atol=ATOL)
    np.testing.assert_allclose(profile.sink, full[..., 0].mean(-1), atol=ATOL)
    previous = np.diagonal(full, offset=-1, axis1=2, axis2=3)
    np.testing.assert_allclose(profile.previous_share, previous.mean(-1), atol=ATOL)
    np.testing.assert_allclose(profile.by_query("sink"), full[..., 0], atol=ATOL)
    doubled = profile + profile
    assert doubled.inputs == 2
    np.testing.assert_allclose(doubled.mean, profile.mean)


def test_diagonal_sums_of_a_block():
    w = torch.arange(2 * 3 * 6, dtype=torch.float32).reshape(2, 3, 6)  # queries 2, 3, 4 of 6
    got, scratch = diagonal_sums(w, 2, 6)
    again, _ = diagonal_sums(w + 1, 2, 6, scratch)  # the buffer reused: its unwritten cells stay zero
    got = got.numpy()
    want = np.zeros((2, 11))
    for h in range(2):
        for r in range(3):
            for j in range(6):
                want[h, j - (2 + r) + 5] += w[h, r, j].item()
    np.testing.assert_array_equal(got, want)
    counts = np.array([[sum(1 for r in range(3) for j in range(6) if j - (2 + r) == d) for d in range(-5, 6)]] * 2)
    np.testing.assert_array_equal(again.numpy(), want + counts)


def test_alibi_profile_is_the_slopes_where_content_is_removed(tiny_lm, tiny_path, small_blocks):
    """With queries and keys zeroed, a BLOOM head's scores are its ALiBi bias alone, so the weight of
    query i on key j ≤ i is exp(−s·(i − j)) / Σ_k≤i exp(−s·(i − k)): the profile by offset is that, exactly."""
    lm = posviz.load_model(str(tiny_path("bloom")))
    with torch.no_grad():
        for block in lm.model.h:
            qkv = block.self_attention.query_key_value
            heads, dim = lm.num_heads, qkv.out_features // (3 * lm.num_heads)
            w = qkv.weight.view(heads, 3, dim, -1)
            b = qkv.bias.view(heads, 3, dim)
            w[:, :2].zero_()
            b[:, :2].zero_()
    profile = reading.read_attention(lm, SENTENCE).offsets
    slopes = lm.encoding().slopes
    n = profile.tokens
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    for head, s in enumerate(slopes):
        scores = np.where(j <= i, -s * (i - j), -np.inf)
        weights = np.exp(scores - scores.max(1, keepdims=True))
        weights /= weights.sum(1, keepdims=True)
        _, want, _, _ = proximity_by_offset(weights, signed=True)
        np.testing.assert_allclose(profile.mean[0, head], want, atol=ATOL)
        before = profile.mean[0, head, :n - 1]  # offsets −(n−1) … −1: falling with distance, as the slope says
        assert np.all(np.diff(before) > 0)
    offsets, predicted = scheme_by_offset(lm.encoding(), n)
    np.testing.assert_allclose(predicted[:, offsets < 0], -slopes[:, None] * np.abs(offsets[offsets < 0]), rtol=1e-6)
    assert np.isnan(predicted[:, offsets > 0]).all()


def test_scheme_prediction_of_rotary_is_its_kernel(tiny_lm):
    encoding = tiny_lm("llama").encoding()
    offsets, predicted = scheme_by_offset(encoding, 40)
    np.testing.assert_allclose(predicted[0], encoding.kernel_by_offset(offsets), rtol=1e-5, atol=1e-4)


def test_scheme_prediction_of_a_learned_table_is_pp_by_offset(bundled_lm):
    encoding = bundled_lm.encoding()
    offsets, predicted = scheme_by_offset(encoding, 20)
    P = encoding.vectors(np.arange(20)).double().numpy()
    _, want, _, _ = proximity_by_offset(P @ P.T, signed=True)
    np.testing.assert_allclose(predicted[0], want)
    assert scheme_by_offset(bundled_lm.encoding(), 1) is None


def test_estimate_refuses_an_over_budget_reading_with_its_figures(bundled_lm, monkeypatch):
    monkeypatch.setenv("POSVIZ_ATTENTION_BYTES", "2MB")
    cost = budget.estimate(bundled_lm, 512, kept=6)  # the reading keeps every layer
    assert not cost.fits and cost.budget == 2_000_000 and cost.blocked
    assert 1 <= cost.fitting_tokens < 512 and budget.estimate(bundled_lm, cost.fitting_tokens, kept=6).fits
    with pytest.raises(budget.AttentionBudgetError) as raised:
        reading.read_attention(bundled_lm, LONG_TEXT)
    message = str(raised.value)
    assert "512 tokens need about" in message and "2 MB" in message and "POSVIZ_ATTENTION_BYTES" in message
    assert raised.value.estimate.fitting_tokens == cost.fitting_tokens
    monkeypatch.setenv("POSVIZ_ATTENTION_BYTES", "1GB")
    assert budget.estimate(bundled_lm, 512).fits


def test_reading_a_long_input_summarises_it(bundled_lm, monkeypatch):
    """512 tokens of the bundled model, summarised beyond 256: 2 × 2 blocks, the window exact, the
    limit honoured."""
    monkeypatch.setattr(budget, "WHOLE_TOKENS", 256)
    full = posviz.attention(bundled_lm, LONG_TEXT).patterns
    got = reading.read_attention(bundled_lm, LONG_TEXT, window=budget.Window(100, 140, 90, 150))
    assert sorted(got.layers) == list(range(6)) and got.window == budget.Window(100, 140, 90, 150)
    kept = got.layer(3)
    assert kept.block == 2 and kept.block_mean.shape == (12, 256, 256) and kept.patterns is None
    np.testing.assert_allclose(kept.window_patterns, full[3, :, 100:140, 90:150], atol=ATOL)
    np.testing.assert_allclose(kept.block_mean.mean(), full[3].mean(), rtol=1e-5)
    np.testing.assert_allclose(got.offsets.sink, full[..., 0].mean(-1), atol=ATOL)
    short = reading.read_attention(bundled_lm, LONG_TEXT, layers=[0], limit=100)
    assert len(short.query_tokens) == 100 and short.truncated == got.truncated + 412
    inputs = encode(bundled_lm, LONG_TEXT, limit=100).model_inputs
    with torch.no_grad():
        own = bundled_lm.model(**inputs, output_attentions=True).attentions[0][0].numpy()
    np.testing.assert_allclose(short.layer(0).patterns, own, atol=ATOL)
    with pytest.raises(ValueError, match="not kept"):
        short.layer(1)


def test_corpus_profile_averages_windows(bundled_lm):
    from posviz.analysis.layer_probe import BUILTIN_TEXT

    profile = reading.corpus_offsets(bundled_lm, BUILTIN_TEXT, tokens=64, windows=5)
    assert profile.inputs == 5 and profile.tokens == 64
    tok = bundled_lm.tokenizer
    ids = tok(BUILTIN_TEXT, add_special_tokens=False)["input_ids"]
    sinks = []
    for w in range(5):
        text = tok.decode(ids[w * 62:(w + 1) * 62])
        one = reading.read_attention(bundled_lm, text, layers=[]).offsets
        if one.tokens == 64:
            sinks.append(one.sink)
    np.testing.assert_allclose(profile.sink, np.mean(sinks, axis=0), atol=1e-3)
    with pytest.raises(ValueError, match="fewer than"):
        reading.corpus_offsets(bundled_lm, "Too short.", tokens=64)


def test_bad_requests_say_what_exists(bundled_lm, tiny_lm):
    with pytest.raises(ValueError, match="layers 0 … 5"):
        reading.read_attention(bundled_lm, SENTENCE, layers=[6])
    with pytest.raises(ValueError, match="only for encoder-decoder"):
        reading.read_attention(bundled_lm, SENTENCE, stack="cross")
    with pytest.raises(ValueError, match="Type a sentence"):
        reading.read_attention(bundled_lm, "  ")
    assert budget.Window(-5, 900, 3, 2).clipped(10, 10) == budget.Window(0, 10, 3, 4)
    assert budget.Window(0, 900, 0, 900).clipped(1000, 1000, 256) == budget.Window(0, 256, 0, 256)
    empty = OffsetProfile.empty(2, 3, 4)
    np.testing.assert_array_equal(empty.offsets, np.arange(-3, 4))
    assert empty.sums.shape == (2, 3, 7) and empty.inputs == 1 and empty.tokens == 4


def _generated(folder, text, count):
    from transformers import AutoModelForCausalLM

    full = AutoModelForCausalLM.from_pretrained(folder).eval()
    lm = posviz.load_model(str(folder))
    inputs = encode(lm, text).model_inputs
    with torch.no_grad():
        out = full.generate(**inputs, max_new_tokens=count, do_sample=False, pad_token_id=0)
    return lm, out[0, inputs["input_ids"].shape[1]:].tolist()


def test_greedy_continuation_is_transformers_generate(tiny_lm, tiny_path, tmp_path):
    """The continuation equals generate(do_sample=False) of the model with its head: an untied head read
    from the checkpoint (a Llama saved with its head), a tied one (GPT-2); its attention is read over prompt
    and generation as one input."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from posviz.analysis.generation import greedy_continuation, is_causal
    from tests.support.tiny_models import bundled_path, tiny_config

    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(tiny_config("llama")).save_pretrained(tmp_path)
    AutoTokenizer.from_pretrained(bundled_path(), model_input_names=["input_ids", "attention_mask"]
                                  ).save_pretrained(tmp_path)
    for folder in (tmp_path, tiny_path("gpt2")):
        lm, want = _generated(folder, SENTENCE, 5)
        assert greedy_continuation(lm, SENTENCE, 5) == want
    lm = posviz.load_model(str(tmp_path))
    assert is_causal(lm) and not is_causal(tiny_lm("bert")) and not is_causal(tiny_lm("t5"))
    got = greedy_continuation(lm, SENTENCE, 5)
    att = reading.read_attention(lm, SENTENCE, continuation=got)
    inputs = encode(lm, SENTENCE).model_inputs
    n = inputs["input_ids"].shape[1]
    assert len(att.query_tokens) == n + 5 and att.query_tokens[n:] == lm.tokenizer.convert_ids_to_tokens(got)
    ids = torch.cat([inputs["input_ids"], torch.tensor([got])], dim=1)
    with torch.no_grad():
        own = lm.model(input_ids=ids, output_attentions=True).attentions[1][0].numpy()
    np.testing.assert_allclose(att.layer(1).patterns, own, atol=ATOL)
    with pytest.raises(ValueError, match="1 … 64"):
        greedy_continuation(lm, SENTENCE, 0)


def test_the_colour_scale_of_every_layer_is_found_at_once_as_each_layers_views_find_it(tiny_lm):
    from posviz.views import attention as views

    lm = tiny_lm("bert")
    got = reading.read_attention(lm, SENTENCE)
    special = set(lm.tokenizer.all_special_tokens)
    for clip, hidden in ((True, None), (False, None), (True, special)):
        tops = views.layer_tops(got, clip=clip, special=hidden)
        assert sorted(tops) == sorted(got.layers)
        for layer, top in tops.items():
            head = views.layer_views(got, layer, 0, clip=clip, special=hidden)[0].figure.data[-1]
            assert head.zmax == top  # what the layer's own views find without it
    weights = got.layer(1).patterns
    assert views.layer_tops(got, clip=True)[1] == pytest.approx(np.percentile(weights, views.CLIP_PERCENTILE,
                                                                             method="lower"))
    assert views.layer_tops(got)[1] == weights.max()
    given = views.layer_views(got, 1, 0, clip=True, top=0.25)
    assert all(v.figure.data[-1].zmax == 0.25 for v in given[:2]) and given[2].figure.layout.coloraxis.cmax == 0.25
