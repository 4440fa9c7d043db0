"""Word order: a sentence beside a permutation of its words, with and without positional information.

The issue's check on the bundled model: with the positions removed (forward hooks), the last layer's
vectors of a sentence and of a permutation of its words, put back in the original order, agree to
float precision (largest difference below 1e-5); with positions they do not (above 1e-2). The
same holds for the encoders of every scheme posviz can unhook (learned, sinusoidal, T5's and
MPNet's relative bias). For causal models (tiny Llama with RoPE, GPT-J, GPT-2) what holds is
narrower and tested as such: after the first layer, tokens whose prefix holds the same tokens
match without positions and not with them; deeper, only identical prefixes match.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import posviz
from posviz.analysis import permutations
from posviz.analysis.equivariance import structural_matches
from posviz.analysis.word_order import compare_orders
from posviz.app.widgets import DEFAULT_TEXT
from posviz.hooks import hooked
from posviz.positions import PositionRemovalError
from posviz.tokenization import split_words
from tests.support.apptest import apptest_like_browser  # noqa: F401  the autouse AppTest shims
from tests.support.apptest import arr, assert_clean, figures, open_page

TEXT = "The cat chased the dog and then it slept"  # 9 words, one token each in the BERT vocabulary
SWAP = permutations.swap_words(9, 1, 4)  # cat <-> dog


def own_output(lm, text=DEFAULT_TEXT) -> torch.Tensor:
    """A plain forward of the model, no posviz code in between."""
    batch = lm.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        return lm.model(**batch).last_hidden_state.clone()


def without_positions(lm):
    """The model without its positional information inside a ``with`` block, as the comparison runs it."""
    return hooked(patches=lm.family.removal(lm.model))


def cosine(comparison, stage: str = "output") -> np.ndarray:
    """float64 [tokens]: the cosine of each token's two vectors at a stage."""
    a, b, _ = comparison.stage(stage)
    a, b = a.astype(np.float64), b.astype(np.float64)
    return (a * b).sum(axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def hook_count(model: torch.nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


# ---------------------------------------------------------------- permutations


def test_permutation_helpers():
    perm = np.array([0, 3, 1, 2])
    items = ["a", "b", "c", "d"]
    assert permutations.permute(items, perm) == ["a", "d", "b", "c"]
    assert permutations.unpermute(permutations.permute(items, perm), perm) == items
    np.testing.assert_array_equal(permutations.inverse_permutation(perm), [0, 2, 3, 1])
    x = torch.arange(8).reshape(1, 4, 2)
    assert torch.equal(permutations.unpermute(permutations.permute(x, perm, axis=1), perm, axis=1), x)
    a = np.arange(8).reshape(4, 2)
    np.testing.assert_array_equal(permutations.permute(a, perm)[1], a[3])
    with pytest.raises(ValueError, match="Not a permutation"):
        permutations.inverse_permutation([0, 0, 1])


def test_presets_and_typed_orders():
    assert permutations.reverse_words(4) == [3, 2, 1, 0]
    assert permutations.swap_words(5, 1, 4) == [0, 4, 2, 3, 1]
    assert permutations.shuffle_words(6, 3) == permutations.shuffle_words(6, 3)
    assert sorted(permutations.shuffle_words(6, 3)) == list(range(6))
    assert permutations.parse_order("2, 0 1", 3) == [2, 0, 1]
    with pytest.raises(ValueError, match="missing \\[2\\]; repeated \\[0\\]"):
        permutations.parse_order("0 0 1", 3)
    with pytest.raises(ValueError, match="whole numbers"):
        permutations.parse_order("0 one 2", 3)
    with pytest.raises(ValueError, match="Word 5 does not exist"):
        permutations.swap_words(5, 1, 5)


def test_words_move_as_blocks_and_special_tokens_stay(bundled_lm):
    split = split_words(bundled_lm, "Unbelievably, the dog")
    assert split.tokens == ["[CLS]", "un", "##bel", "##ie", "##va", "##bly", ",", "the", "dog", "[SEP]"]
    assert split.words == ["Unbelievably", ",", "the", "dog"]
    perm = permutations.token_permutation(split.word_of, permutations.reverse_words(4))
    assert permutations.permute(split.tokens, perm) == ["[CLS]", "dog", "the", ",", "un", "##bel", "##ie", "##va", "##bly",
                                              "[SEP]"]
    with pytest.raises(ValueError, match="exactly once"):
        permutations.token_permutation(split.word_of, [0, 1, 2])


# ---------------------------------------------------------------- the check, bundled model


@pytest.mark.parametrize("order", [permutations.swap_words(5, 1, 4), permutations.reverse_words(5), permutations.shuffle_words(5, 0)],
                         ids=["swap", "reverse", "shuffle"])
def test_bundled_outputs_match_exactly_only_without_positions(bundled_lm, order):
    kept = compare_orders(bundled_lm, DEFAULT_TEXT, order, without_positions=False)
    removed = compare_orders(bundled_lm, DEFAULT_TEXT, order, without_positions=True)
    assert kept.tokens == removed.tokens == ["[CLS]", "the", "cat", "chased", "the", "dog", "[SEP]"]
    assert not kept.causal and not removed.causal
    assert removed.max_abs_difference < 1e-5, removed.max_abs_difference
    assert kept.max_abs_difference > 1e-2, kept.max_abs_difference
    # the input sums: identical without positions (token + segment only), not with them
    assert removed.max_abs_difference_input == 0
    assert kept.max_abs_difference_input > 1e-2
    assert removed.must_match.all() and not kept.must_match.any()
    assert removed.removed == ["`embeddings.position_embeddings` output set to 0 (no position vector added)"]
    # the permuted run really was permuted, and put back: the rows line up with the original tokens
    assert kept.permuted_tokens == permutations.permute(kept.tokens, kept.permutation)
    assert cosine(kept).min() < 0.999
    np.testing.assert_allclose(cosine(removed), 1, atol=1e-6)


def test_hooks_are_removed_and_act_only_inside(bundled_lm):
    before, hooks = own_output(bundled_lm), hook_count(bundled_lm.model)
    with without_positions(bundled_lm):
        assert len(bundled_lm.family.removal(bundled_lm.model)) == 1 and hook_count(bundled_lm.model) == hooks + 1
        inside = own_output(bundled_lm)
    assert hook_count(bundled_lm.model) == hooks
    after = own_output(bundled_lm)
    assert torch.equal(before, after)
    assert (inside - before).abs().max() > 1e-2
    with pytest.raises(RuntimeError, match="boom"):
        with without_positions(bundled_lm):
            raise RuntimeError("boom")
    assert hook_count(bundled_lm.model) == hooks
    assert torch.equal(own_output(bundled_lm), before)


def test_position_part_of_the_input_is_zero_inside(bundled_lm):
    outside = posviz.input_representation(bundled_lm, DEFAULT_TEXT)
    with without_positions(bundled_lm):
        inside = posviz.input_representation(bundled_lm, DEFAULT_TEXT)
    assert np.abs(outside.position).max() > 1e-2
    assert not inside.position.any()
    np.testing.assert_array_equal(inside.sum, inside.token + inside.segment)
    np.testing.assert_array_equal(inside.token, outside.token)


def test_other_threads_keep_their_positions(bundled_lm):
    """The app shares one model between sessions (threads): the hooks act on their own thread only."""
    before = own_output(bundled_lm)
    seen = {}
    with without_positions(bundled_lm):
        worker = threading.Thread(target=lambda: seen.setdefault("out", own_output(bundled_lm)))
        worker.start()
        worker.join()
    assert torch.equal(seen["out"], before)


# ---------------------------------------------------------------- bidirectional encoders of each scheme


@pytest.mark.parametrize("family", ["bert", "roberta", "bart", "t5", "marian", "mpnet"])
def test_encoders_match_without_positions(tiny_lm, family):
    lm = tiny_lm(family)
    kept = compare_orders(lm, TEXT, permutations.reverse_words(9), without_positions=False)
    removed = compare_orders(lm, TEXT, permutations.reverse_words(9), without_positions=True)
    assert not removed.causal
    assert removed.max_abs_difference < 1e-5, removed.max_abs_difference
    assert kept.max_abs_difference > 1e-2, kept.max_abs_difference
    assert removed.must_match.all()


def test_t5_relative_bias_is_zero_inside(tiny_lm):
    lm = tiny_lm("t5")
    attention = posviz.hooks.resolve(lm.model, "encoder.block.0.layer.0.SelfAttention")
    with without_positions(lm):
        assert not attention.compute_bias(5, 5).any()
    assert attention.compute_bias(5, 5).abs().max() > 0
    assert [patch.description for patch in lm.family.removal(lm.model)] == ["`encoder.block.0.layer.0.SelfAttention.relative_attention_bias` output set to 0 "
                       "(relative bias 0)",
                       "`decoder.block.0.layer.0.SelfAttention.relative_attention_bias` output set to 0 "
                       "(relative bias 0)"]


# ---------------------------------------------------------------- causal models: rotary, learned


@pytest.mark.parametrize("family", ["llama", "gptj"])
def test_rotary_module_gives_the_identity_inside(tiny_lm, family):
    lm = tiny_lm(family)
    module = posviz.hooks.resolve(lm.model, lm.family.positions[0].path)
    x, ids = torch.zeros(1, 3, 8), torch.arange(3)[None]
    with without_positions(lm):
        out = module(x, ids)
    first, second = (out[1], out[0]) if lm.family.positions[0].style == "interleaved" else out  # GPT-J: (sin, cos)
    assert torch.equal(first, torch.ones_like(first)) and not second.any()
    assert module(x, ids)[0].abs().max() > 0 and not torch.equal(module(x, ids)[0], out[0])


@pytest.mark.parametrize("family", ["llama", "gptj", "gpt2"])
def test_causal_models_first_layer(tiny_lm, family):
    """Causal masking: without positions, after the first layer a token matches when its prefix holds
    the same tokens in any order; with positions it does not."""
    lm = tiny_lm(family)
    kept = compare_orders(lm, TEXT, SWAP, without_positions=False)
    removed = compare_orders(lm, TEXT, SWAP, without_positions=True)
    assert kept.causal and removed.causal
    # [CLS] the | cat chased the dog (swapped span) | and then it slept [SEP]: tokens 6-10 see the same set
    np.testing.assert_array_equal(removed.must_match_first, [1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(kept.must_match_first, [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    after_swap = slice(6, 11)
    assert np.abs(removed.first_permuted - removed.first_original)[after_swap].max() < 1e-6
    assert np.abs(kept.first_permuted - kept.first_original)[after_swap].max() > 1e-5
    assert removed.max_difference("first", must_match_only=True) < 1e-6
    # tokens before the first change see the very same sequence: equal everywhere, with positions too
    assert kept.max_difference("output", must_match_only=True) == 0


@pytest.mark.parametrize("family", ["llama", "gpt2"])
def test_deeper_causal_layers_are_not_equivariant(tiny_lm, family):
    """Two layers: the tokens after the swap attend to tokens whose own prefixes differ, so even without
    positions their last-layer vectors differ; only the identical prefix must match."""
    lm = tiny_lm(family)
    removed = compare_orders(lm, TEXT, SWAP, without_positions=True)
    assert removed.num_layers == 2
    np.testing.assert_array_equal(removed.must_match, [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0])
    assert np.abs(removed.output_permuted - removed.output_original)[6:].max() > 1e-4
    assert removed.max_difference("output", must_match_only=True) < 1e-6


def test_one_layer_causal_model_matches_after_the_swap(tiny_lm):
    """GPT-J here has one layer: its output is its first layer, so the tokens after the swap match
    without the rotation (this also checks the (sin, cos) order of GPT-J's rotary module)."""
    lm = tiny_lm("gptj")
    removed = compare_orders(lm, TEXT, SWAP, without_positions=True)
    kept = compare_orders(lm, TEXT, SWAP, without_positions=False)
    assert removed.num_layers == 1
    assert np.abs(removed.output_permuted - removed.output_original)[6:].max() < 1e-6
    assert np.abs(kept.output_permuted - kept.output_original)[6:].max() > 1e-5


def test_gpt2_input_sums_match_without_positions(tiny_lm):
    lm = tiny_lm("gpt2")
    kept = compare_orders(lm, TEXT, permutations.reverse_words(9), without_positions=False)
    removed = compare_orders(lm, TEXT, permutations.reverse_words(9), without_positions=True)
    assert removed.max_abs_difference_input == 0 and kept.max_abs_difference_input > 1e-2
    assert removed.must_match_input.all()
    np.testing.assert_array_equal(kept.must_match_input, kept.permutation == np.arange(11))


def test_structural_matches():
    cols = [(t,) for t in "xabcy"]
    swap = [0, 3, 2, 1, 4]
    bidirectional = structural_matches(cols, swap, causal=False, positional=False, layers=3)
    assert bidirectional.all()
    assert not structural_matches(cols, swap, causal=False, positional=True, layers=1)[1].any()
    causal = structural_matches(cols, swap, causal=True, positional=False, layers=2)
    np.testing.assert_array_equal(causal, [[1, 1, 1, 1, 1], [1, 0, 0, 0, 1], [1, 0, 0, 0, 0]])
    # two equal tokens swapped: the same input, but each "a" is compared with itself, now elsewhere
    same = [(t,) for t in "xaay"]
    assert structural_matches(same, [0, 2, 1, 3], causal=False, positional=False, layers=2).all()
    for causal, positional in ((True, False), (True, True), (False, True)):
        np.testing.assert_array_equal(
            structural_matches(same, [0, 2, 1, 3], causal=causal, positional=positional, layers=2)[2], [1, 0, 0, 1])


# ---------------------------------------------------------------- schemes that cannot be unhooked


def test_alibi_is_refused_clearly(tiny_lm):
    lm = tiny_lm("bloom")
    hooks = hook_count(lm.model)
    with pytest.raises(PositionRemovalError, match="ALiBi.*no.*hook|ALiBi.*forward hook"):
        with without_positions(lm):
            pass
    assert hook_count(lm.model) == hooks
    kept = compare_orders(lm, TEXT, SWAP)
    assert kept.causal and kept.max_abs_difference > 0
    with pytest.raises(PositionRemovalError):
        compare_orders(lm, TEXT, SWAP, without_positions=True)


# ---------------------------------------------------------------- the page


def test_page_prints_the_library_values(bundled_lm):
    at = open_page("word_order")
    assert_clean(at, "word_order")
    assert at.text_input(key="text").value == DEFAULT_TEXT
    assert at.radio(key="permutation").value == "swap"
    order = permutations.swap_words(5, 1, 4)
    kept = compare_orders(bundled_lm, DEFAULT_TEXT, order, False)
    removed = compare_orders(bundled_lm, DEFAULT_TEXT, order, True)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Largest difference, last layer (with positions)"] == f"{kept.max_abs_difference:.2e}"
    assert metrics["Largest difference, last layer (without positions)"] == f"{removed.max_abs_difference:.2e}"
    assert any("**Permuted:** The dog chased the cat" in m.value for m in at.markdown)
    bars, heat = figures(at)
    by_name = {t["name"]: arr(t["y"]) for t in bars["data"]}
    np.testing.assert_allclose(by_name["with positions"], kept.l2("output"), rtol=1e-5)
    np.testing.assert_allclose(arr(heat["data"][2]["z"]), kept.output_permuted - kept.output_original, atol=1e-6)

    at.toggle(key="without_positions").set_value(True).run()
    assert_clean(at, "word_order")
    (first, *_) = at.metric
    assert first.label == "Largest difference, last layer (without positions)"
    assert first.value == f"{removed.max_abs_difference:.2e}"
    assert float(first.value) < 1e-5
    assert any("same vector for every token" in s.value for s in at.success)

    at.radio(key="permutation").set_value("custom").run()
    at.text_input(key="order").input("4 3 2 1 0").run()
    assert_clean(at, "word_order")
    reverse = compare_orders(bundled_lm, DEFAULT_TEXT, [4, 3, 2, 1, 0], True)
    assert at.metric[0].value == f"{reverse.max_abs_difference:.2e}"
    at.text_input(key="order").input("0 0 1").run()
    assert not at.exception and "exactly once" in at.warning[0].value


def test_a_new_sentence_gets_its_own_default_swap(monkeypatch):
    """… set as the boxes' value, with no default beside it (Streamlit warned of both in the server's log)."""
    from streamlit.elements.lib import policies

    warned = []
    monkeypatch.setattr(policies._LOGGER, "warning", lambda message, *args, **kwargs: warned.append(message % args))
    at = open_page("word_order")
    assert (at.selectbox(key="swap_i").value, at.selectbox(key="swap_j").value) == (1, 4)
    at.text_input(key="text").input("one two three four five six seven").run()
    assert_clean(at, "word_order")
    assert (at.selectbox(key="swap_i").value, at.selectbox(key="swap_j").value) == (1, 6)
    assert any("Swapping **two** and **seven**." in c.value for c in at.caption)
    at.text_input(key="text").input("one two").run()
    assert (at.selectbox(key="swap_i").value, at.selectbox(key="swap_j").value) == (0, 1)
    assert not [i.value for i in at.info if "nothing to compare" in i.value]
    assert not warned, warned


def test_a_long_sentence_keeps_its_word_lists_in_collapsed_sections():
    """A sentence of more words than the page writes out (``INLINE_WORDS``) has its words, both orders and
    the tokens read in two collapsed sections; a short one has them on the page."""
    at = open_page("word_order")
    assert not at.expander and any("**Permuted:**" in m.value for m in at.main.markdown)
    long = " ".join(f"word{k % 10}" for k in range(60))
    at.text_input(key="text").input(long).run()
    assert_clean(at, "word_order")
    assert [e.label for e in at.expander] == ["Words (the tokenizer's), 60, with their indices",
                                              "Both orders, and the tokens the model reads"]
    assert any(c.value.startswith("Words (the tokenizer's): **0** word0") for c in at.expander[0].caption)
    assert any("**Permuted:**" in m.value for m in at.expander[1].markdown)
    assert len(figures(at)) == 2


def test_page_on_alibi_says_why_there_is_no_switch(tiny_path):
    at = open_page("word_order", query_params={"model": str(tiny_path("bloom"))})
    assert_clean(at, "word_order")
    assert at.toggle(key="without_positions").disabled
    assert any("ALiBi" in i.value for i in at.info)
    assert at.metric[0].label == "Largest difference, last layer (with positions)"
