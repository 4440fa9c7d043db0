"""Fuzzing the input path: any text through ``posviz.input_representation`` and ``posviz.attention``.

Hypothesis generates text of every Unicode category (control characters, NUL, combining marks,
right-to-left scripts, emoji, private-use and unassigned code points, lone whitespace; lone
surrogates in a test of their own) plus explicit hard cases (empty, only whitespace, only
control characters, 100 000 characters, 100 000 emoji, 1000 NULs, mixed line endings).
Every call must either return a result or raise ValueError with a readable message, and the
result must hold up:

- ValueError exactly for empty / whitespace-only text (``str.strip``, as
  :func:`posviz.tokenization.encode` checks) and for lone surrogates, which are not text;
- truncation is reported: ``truncated == max(0, n - lm.max_tokens)`` and
  ``len(tokens) == min(n, lm.max_tokens)``, ``n`` the tokenizer's own untruncated count;
- shapes agree with the tokens, every attention row sums to 1, nothing is NaN or infinite.

Models: the bundled all-MiniLM-L6-v2 (its real WordPiece tokenizer, 512 tokens), a tiny GPT-2
with a byte-level BPE tokenizer trained here (every byte is a token, so emoji cost 4 tokens
and nothing is ever [UNK] or dropped; no special tokens, 96 positions), and the encoder-decoder
tiny T5 (relative bias, 512 tokens) and BART (72 positions) of conftest.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import posviz
from posviz.tokenization import encode, fewest_tokens, longest_first
from tests.support.tiny_models import LONG_TEXT, PAIR, SENTENCE, build_tiny

# ------------------------------------------------------------------ models


def _byte_level_bpe(folder):
    """A GPT-2-style byte-level BPE tokenizer (256 byte symbols + a few merges, no special tokens
    added around the text), trained here on a few sentences and saved in ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import GPT2TokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([SENTENCE, PAIR, LONG_TEXT, "héllo wörld 😀 مرحبا שלום 中文"], trainer)
    end = "<|endoftext|>"
    GPT2TokenizerFast(tokenizer_object=tok, bos_token=end, eos_token=end, unk_token=end).save_pretrained(folder)


@pytest.fixture(scope="module")
def gpt2_bpe_lm(tmp_path_factory):
    folder = build_tiny("gpt2", tmp_path_factory.mktemp("tiny-gpt2-bpe"), with_tokenizer=False)
    _byte_level_bpe(folder)
    lm = posviz.load_model(str(folder))
    assert lm.max_tokens == 96
    # byte-level: a 4-byte emoji is 4 tokens, and no special tokens are added
    assert len(lm.tokenizer("😀")["input_ids"]) == 4
    return lm


@pytest.fixture(scope="module")
def lms(bundled_lm, gpt2_bpe_lm, tiny_lm):
    return {"bundled": bundled_lm, "gpt2-bpe": gpt2_bpe_lm, "t5": tiny_lm("t5"), "bart": tiny_lm("bart")}


MODELS = ["bundled", "gpt2-bpe", "t5", "bart"]
ENCODER_DECODER = ["t5", "bart"]

# ------------------------------------------------------------------ inputs

# Characters the uniform draw rarely hits, mixed in so that every run meets them.
SPECIAL = [
    "\x00", "\x01", "\x07", "\x1b", "\x7f", "\x85", "\x1c", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", " ",
    "\xa0", "\u3000", "\u2028", "\u2029", "\u200b", "\u200d", "\ufeff", "\ufffd", "\uffff", "\ue000",
    "\u0301", "\u0308", "\u20dd",  # combining marks (Mn, Me)
    "\u05e9", "\u05dc", "\u0645", "\u0631", "\u200f", "\u202e", "\u2067",  # Hebrew, Arabic, RLM, RLO, RLI
    "😀", "👩\u200d👩\u200d👧", "🇫🇷", "\U000e0041", "\U0010ffff",  # emoji, ZWJ, flag, tag, last code point
    "a", "Z", "9", ".", "中", "ß", "İ",
]
any_text = st.text()  # every category but Cs (surrogates cannot be UTF-8)
special_text = st.lists(st.sampled_from(SPECIAL), max_size=40).map("".join)
repeated = st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=4), st.integers(1, 150))
texts = st.one_of(any_text, special_text, repeated, st.text(st.characters(), max_size=600))

HUNDRED_K = ("Positional encodings tell a model where each word is. " * 2000)[:100_000]
EMOJI = "😀" * 100_000
CRLF = "first line\r\nsecond line\rthird\n\r\nfourth\r\n\r\n  \t"


def _expected_length(lm, text, text_pair):
    """The tokenizer's own untruncated token count; a blank pair is no pair (see ``encode``)."""
    pair = text_pair if text_pair and text_pair.strip() else None
    return len(lm.tokenizer(text, pair, truncation=False, verbose=False)["input_ids"])


def _target_length(lm, target):
    return len(lm.tokenizer(text_target=target, truncation=False, verbose=False)["input_ids"])


def _assert_same_as_tokenizer(lm, text, text_pair):
    """``encode`` keeps the very tokens (ids, segment ids) the tokenizer's own truncation keeps."""
    pair = text_pair if text_pair and text_pair.strip() else None
    own = lm.tokenizer(text, pair, truncation=True, max_length=lm.max_tokens, verbose=False)
    encoded = encode(lm, text, text_pair)
    assert encoded.model_inputs["input_ids"][0].tolist() == own["input_ids"]
    if "token_type_ids" in encoded.model_inputs:
        assert encoded.model_inputs["token_type_ids"][0].tolist() == own["token_type_ids"]


def _assert_rows(patterns, queries, keys, causal=False):
    assert patterns.dtype == np.float32
    assert patterns.ndim == 4 and patterns.shape[2:] == (queries, keys)
    assert np.isfinite(patterns).all()
    assert (patterns >= 0).all()
    np.testing.assert_allclose(patterns.sum(axis=-1), 1.0, atol=1e-4)
    if causal:
        assert np.abs(np.triu(patterns, k=1)).max(initial=0.0) == 0.0


def _check(lm, text, text_pair=None, target=None):
    """Both entry points on one input, with every property of the module docstring."""
    if not text.strip():
        for call in (lambda: posviz.input_representation(lm, text, text_pair),
                     lambda: posviz.attention(lm, text, text_pair, target=target)):
            with pytest.raises(ValueError, match="Type a sentence"):
                call()
        return

    n = _expected_length(lm, text, text_pair)
    kept = min(n, lm.max_tokens)
    truncated = max(0, n - lm.max_tokens)

    if n <= 4 * lm.max_tokens:  # small enough for the tokenizer's own truncation of a pair
        _assert_same_as_tokenizer(lm, text, text_pair)

    emb = posviz.input_representation(lm, text, text_pair)
    assert len(emb.tokens) == kept and kept <= lm.max_tokens
    assert emb.truncated == truncated
    width = lm.config.get_text_config().hidden_size
    for name in ("token", "segment", "position", "sum", "normalized"):
        arr = getattr(emb, name)
        if arr is not None:
            assert arr.shape == (kept, width), name
            assert np.isfinite(arr).all(), name
    assert emb.position is not None or lm.scheme != "learned_absolute"

    att = posviz.attention(lm, text, text_pair, target=target)
    assert att.tokens == emb.tokens and att.truncated == truncated
    assert att.patterns.shape[:2] == (lm.num_layers, lm.num_heads)
    _assert_rows(att.patterns, kept, kept, causal=lm.model_type == "gpt2")

    if lm.config.is_encoder_decoder:
        used = target if target and target.strip() else text
        m = _target_length(lm, used)
        assert att.decoder_truncated == max(0, m - lm.max_tokens)
        assert len(att.decoder_tokens) == min(m, lm.max_tokens)
        _assert_rows(att.decoder_patterns, len(att.decoder_tokens), len(att.decoder_tokens), causal=True)
        _assert_rows(att.cross_patterns, len(att.decoder_tokens), kept)
    else:
        assert att.decoder_patterns is None and att.decoder_truncated == 0


# ------------------------------------------------------------------ tests

FUZZ = settings(max_examples=25, deadline=None, derandomize=True, database=None)


@pytest.mark.parametrize("name", MODELS)
@FUZZ
@given(text=texts, text_pair=st.none() | texts)
@example(text="", text_pair=None)
@example(text=" \t\n\r\u3000\xa0\u2028\x85", text_pair=None)
@example(text="\x01\x02\x1b\x7f", text_pair=None)  # only control characters: no word, only specials
@example(text="\x00" * 1000, text_pair=None)
@example(text=CRLF, text_pair="one\rtwo\r\nthree\n")
@example(text=HUNDRED_K, text_pair=None)
@example(text=EMOJI, text_pair=None)
@example(text="a", text_pair=HUNDRED_K)  # the pair is the longer, it loses the tokens
@example(text=HUNDRED_K, text_pair=EMOJI)  # both long: >20 GB in the tokenizer's own pair truncation (gpt2-bpe)
@example(text=SENTENCE, text_pair="   ")  # a blank pair is no pair
def test_any_text(lms, name, text, text_pair):
    """Any sentence and second sentence: a result with the properties of ``_check``, or ValueError."""
    _check(lms[name], text, text_pair)


@pytest.mark.parametrize("name", ENCODER_DECODER)
@settings(FUZZ, max_examples=20)
@given(text=texts, target=st.none() | texts)
@example(text="\x00", target="\x00")  # source and target of no words
@example(text=SENTENCE, target=HUNDRED_K)  # the decoder input is truncated, the source is not
@example(text=EMOJI, target=CRLF)
@example(text=HUNDRED_K, target=" \t")  # a blank target falls back to the source
def test_any_target(lms, name, text, target):
    """Any source and target sentence of an encoder-decoder model: also the decoder and cross stacks."""
    _check(lms[name], text, None, target=target)


surrogate_text = st.builds(lambda a, s, b: a + s + b, texts, st.characters(categories=["Cs"]), texts)


@pytest.mark.parametrize("name", ["bundled", "t5"])
@settings(FUZZ, max_examples=10)
@given(text=surrogate_text)
@example(text="caf\udce9 au lait")  # what sys.argv makes of the Latin-1 byte 0xE9
def test_lone_surrogates_are_a_value_error(lms, name, text):
    """A lone surrogate (a byte that is not UTF-8, decoded with ``surrogateescape``) is named in
    a ValueError wherever it is: sentence, second sentence or target - not the Rust
    tokenizer's TypeError."""
    lm = lms[name]
    where = text.index(next(c for c in text if "\ud800" <= c <= "\udfff"))
    calls = [lambda: posviz.input_representation(lm, text), lambda: posviz.attention(lm, text),
             lambda: posviz.attention(lm, SENTENCE, text)]
    if lm.config.is_encoder_decoder:
        calls.append(lambda: posviz.attention(lm, SENTENCE, target=text))
    for call in calls:
        with pytest.raises(ValueError, match=rf"character {where + 1} is a lone surrogate \(U\+D[89A-F]"):
            call()


# ------------------------------------------------------------------ truncation of a pair

# one token each: a word for WordPiece, a byte the BPE never merged
UNITS = {"bundled": ("a ", "b "), "gpt2-bpe": ("\x01", "\x02")}


@pytest.mark.parametrize("name", ["bundled", "gpt2-bpe"])
@pytest.mark.parametrize("side", ["right", "left"])
def test_longest_first_is_the_tokenizers_rule(lms, name, side):
    """:func:`posviz.tokenization.longest_first` against the tokenizer's own ``truncation=True`` for
    every pair of segment lengths 1 to 11, with an odd and an even budget, on either side."""
    tok = lms[name].tokenizer
    saved = tok.truncation_side
    tok.truncation_side = side
    seen = set()
    try:
        for max_length in (7, 8):
            for r1 in range(1, 12):
                for r2 in range(1, 12):
                    text, pair = UNITS[name][0] * r1, UNITS[name][1] * r2
                    full = tok(text, pair).sequence_ids()
                    n1, n2 = full.count(0), full.count(1)
                    own = tok(text, pair, truncation=True, max_length=max_length).sequence_ids()
                    budget = max_length - full.count(None)
                    assert longest_first(n1, n2, budget) == (own.count(0), own.count(1)), (max_length, n1, n2)
                    seen.add((max_length, n1, n2))
    finally:
        tok.truncation_side = saved
    assert len(seen) == 2 * 11 * 11  # every combination of lengths was met


#: :func:`posviz.tokenization.fewest_tokens` of each model: its tokenizer's special tokens of a pair, and 2.
FEWEST = {"bundled": 5, "gpt2-bpe": 2, "t5": 5, "bart": 5}


@pytest.mark.parametrize("name", MODELS)
def test_fewest_tokens_reads_a_token_of_each_sentence(lms, name):
    """A pair read at :func:`posviz.tokenization.fewest_tokens` keeps the tokenizer's special tokens
    and the first token of each sentence; with fewer tokens than the special ones it is a ValueError."""
    lm = lms[name]
    tok = lm.tokenizer
    fewest = fewest_tokens(lm)
    assert fewest == FEWEST[name]
    first = [tok.convert_ids_to_tokens(tok(s, add_special_tokens=False)["input_ids"][:1]) for s in (SENTENCE, PAIR)]
    got = encode(lm, SENTENCE, PAIR, limit=fewest).tokens
    assert len(got) == fewest
    assert [t for t in got if t not in tok.all_special_tokens] == first[0] + first[1]
    if fewest > 2:
        with pytest.raises(ValueError, match="fewer than its tokenizer's special tokens"):
            encode(lm, SENTENCE, PAIR, limit=fewest - 3)


def test_left_truncation_keeps_the_end(lms):
    """A tokenizer that truncates on the left (``truncation_side="left"``) keeps the end of each
    segment in ``encode`` too, as its own truncation does."""
    lm = lms["bundled"]
    saved = lm.tokenizer.truncation_side
    lm.tokenizer.truncation_side = "left"
    try:
        text, pair = LONG_TEXT, " ".join(f"other{i}" for i in range(300))
        own = lm.tokenizer(text, pair, truncation=True, max_length=lm.max_tokens)
        encoded = encode(lm, text, pair)
        assert encoded.model_inputs["input_ids"][0].tolist() == own["input_ids"]
        assert encoded.model_inputs["token_type_ids"][0].tolist() == own["token_type_ids"]
        a, b = lm.tokenizer.tokenize(text), lm.tokenizer.tokenize(pair)
        k1, k2 = longest_first(len(a), len(b), lm.max_tokens - 3)
        assert encoded.tokens == ["[CLS]"] + a[-k1:] + ["[SEP]"] + b[-k2:] + ["[SEP]"]
        assert encoded.truncated == len(a) + len(b) + 3 - lm.max_tokens > 0
    finally:
        lm.tokenizer.truncation_side = saved
