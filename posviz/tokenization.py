"""Tokenization: a sentence (and an optional second one) as the model's input, truncated to fit, and its words."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from posviz.loading import LoadedModel
from posviz.hooks import resolve


@dataclass
class EncodedInput:
    """A tokenized input of one sequence, on the model's device.

    Attributes
    ----------
    tokens : list of str
        The tokens as the tokenizer writes them, special tokens included.
    model_inputs : dict of str to torch.Tensor
        Keyword arguments for the model's forward, each [1, num_tokens].
    truncated : int
        Tokens dropped so the input fits :attr:`LoadedModel.max_tokens`.
    """

    tokens: list[str]
    model_inputs: dict[str, torch.Tensor]
    truncated: int


def check_text(text: str, what: str = "sentence") -> None:
    """Raise a readable ValueError when ``text`` is not Unicode text a tokenizer can read.

    A Python string may hold lone surrogates (U+D800 to U+DFFF), which are not characters:
    ``sys.argv`` and ``os.fsdecode`` turn every byte that is not UTF-8 into one
    (``surrogateescape``, e.g. ``python -m posviz export --sentence $'caf\\xe9'``). The Rust
    tokenizers refuse such a string with an unrelated ``TypeError``
    ("TextEncodeInput must be Union[...]"), so it is caught here first.

    Parameters
    ----------
    text : str
    what : str
        What the text is, for the message ("sentence", "second sentence", "target sentence").

    Raises
    ------
    ValueError
        When ``text`` holds a lone surrogate; the message names the first one and its position
        (1-based, in characters).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"The {what} is not valid Unicode text: character {exc.start + 1} is a lone surrogate "
            f"(U+{ord(text[exc.start]):04X}), usually a byte that is not UTF-8. Re-type it or save it as UTF-8."
        ) from None


def longest_first(n1: int, n2: int | None, budget: int) -> tuple[int, int | None]:
    """How many tokens of each segment the tokenizers' ``longest_first`` truncation keeps.

    The rule of the Rust ``tokenizers`` library (``truncation=True`` in transformers), which
    decides from the two lengths alone: nothing is cut when both fit; else a shorter segment
    of at most half the budget is kept whole and the longer one gets the rest; else both are
    cut, the shorter to ``budget // 2`` and the longer to the rest (on equal lengths ``text``
    counts as the shorter). ``tests/test_fuzz.py`` checks this against the tokenizer itself.

    Parameters
    ----------
    n1, n2 : int
        Tokens of segment A and B, special tokens not counted; ``n2`` None without segment B.
    budget : int
        Tokens the two may have together: the model's limit less the special tokens.

    Returns
    -------
    k1, k2 : int
        Tokens kept of segment A and B (``k2`` None without segment B).
    """
    if n2 is None:
        return min(n1, budget), None
    if n1 + n2 <= budget:
        return n1, n2
    shorter = min(n1, n2)
    if 2 * shorter <= budget:
        keep_short, keep_long = shorter, budget - shorter
    else:
        keep_short, keep_long = budget // 2, budget - budget // 2
    return (keep_long, keep_short) if n1 > n2 else (keep_short, keep_long)


def fewest_tokens(lm: LoadedModel) -> int:
    """The smallest ``limit`` of :func:`encode` that reads any input of ``lm``: the special tokens its
    tokenizer adds to a pair of sentences (``num_special_tokens_to_add(pair=True)``: 3 for BERT's
    ``[CLS] A [SEP] B [SEP]``, 0 for GPT-2) and one token of each sentence. A lower limit raises
    ValueError in :func:`encode` where the input has the special tokens of a pair.

    Returns
    -------
    int
        Tokens, at least 2 and at most :attr:`LoadedModel.max_tokens`.
    """
    return min(lm.max_tokens, lm.tokenizer.num_special_tokens_to_add(pair=True) + 2)


def _kept_positions(segment: list[int | None], kept: tuple[int, int | None], from_end: bool) -> list[int]:
    """Positions that survive truncation: every special token (segment None), and the first
    ``kept[s]`` tokens of segment ``s`` (the last ones where the tokenizer truncates on the left)."""
    order = range(len(segment) - 1, -1, -1) if from_end else range(len(segment))
    seen = [0, 0]
    positions = []
    for i in order:
        s = segment[i]
        if s is None or seen[s] < kept[s]:
            positions.append(i)
        if s is not None:
            seen[s] += 1
    return sorted(positions)


def encode(lm: LoadedModel, text: str, text_pair: str | None = None, *, limit: int | None = None) -> EncodedInput:
    """Tokenize ``text`` (segment A) and ``text_pair`` (segment B), truncated to the model's length.

    A ``text_pair`` that is None, empty or only whitespace is no second segment (the tokenizer
    is called without one). Truncation is the tokenizer's own ``truncation=True``
    (``longest_first``, on its ``truncation_side``) to :attr:`LoadedModel.max_tokens`, so
    ``len(tokens) == min(n, lm.max_tokens)`` and ``truncated == max(0, n - lm.max_tokens)``,
    with ``n`` the tokens of the untruncated input. ``limit`` truncates to fewer tokens than the
    model's (a reading of attention that must fit a memory budget), by the same rule.

    A fast tokenizer is called once, untruncated, and the tokens that truncation would drop are
    then taken out of that encoding (:func:`longest_first`, special tokens kept where the
    tokenizer put them): asking the Rust tokenizer to truncate a *pair* of long segments makes
    it build every combination of their overflowing pieces, gigabytes for two 100 000-character
    sentences (huggingface/tokenizers#2035). A Python tokenizer truncates itself.

    Segment ids are passed to the model only where its family has a segment table, so a model
    that would reuse another table for them (GPT-2 feeds ``token_type_ids`` through ``wte``) is
    not given them; and only where the table has a row for each id (RoBERTa's has one row:
    its own tokenizer sends none, a BERT tokenizer would send 1 for segment B), so the model
    falls back to its default, segment 0 everywhere.

    Raises
    ------
    ValueError
        When ``text`` is empty or only whitespace, ``text`` or ``text_pair`` holds a lone
        surrogate (:func:`check_text`), or the model's limit is below the tokenizer's special
        tokens.
    """
    if not text or not text.strip():
        raise ValueError("Type a sentence to see its tokens.")
    check_text(text)
    pair = text_pair if text_pair and text_pair.strip() else None
    if pair is not None:
        check_text(pair, "second sentence")
    tok = lm.tokenizer
    most = min(lm.max_tokens, limit) if limit else lm.max_tokens
    full = tok(text, pair, truncation=False, verbose=False)
    n = len(full["input_ids"])
    if n <= most:
        enc = dict(full)
    elif not tok.is_fast:
        enc = tok(text, pair, truncation=True, max_length=most)
    else:
        segment = full.sequence_ids()  # per token: 0 (text), 1 (pair), None (special token)
        lengths = [segment.count(0), segment.count(1) if pair is not None else None]
        budget = most - segment.count(None)
        if budget < 0:
            raise ValueError(f"{lm.name} takes {most} tokens, fewer than its tokenizer's special tokens.")
        kept_at = _kept_positions(segment, longest_first(*lengths, budget), from_end=tok.truncation_side == "left")
        enc = {key: [values[i] for i in kept_at] for key, values in full.items()}
    keep = ["input_ids", "attention_mask"]
    segment_table = resolve(lm.model, lm.family.segment) if lm.family.segment else None
    if (segment_table is not None and "token_type_ids" in enc
            and max(enc["token_type_ids"]) < segment_table.num_embeddings):
        keep.append("token_type_ids")
    model_inputs = {k: torch.tensor([enc[k]], dtype=torch.long, device=lm.device) for k in keep if k in enc}
    ids = list(enc["input_ids"])
    return EncodedInput(
        tokens=tok.convert_ids_to_tokens(ids),
        model_inputs=model_inputs,
        truncated=n - len(ids),
    )


@dataclass
class SentenceWords:
    """A sentence as the model reads it, with the word of each token.

    Attributes
    ----------
    tokens : list of str
        The tokens, special tokens included (as :func:`encode` gives them).
    word_of : list of int or None
        For each token, the index of its word (0-based, in order of appearance); None for a
        special token.
    words : list of str
        The text of each word as it appears in the sentence (from the tokenizer's offsets), or
        its tokens joined back into a string.
    truncated : int
        Tokens dropped so the input fits the model.
    """

    tokens: list[str]
    word_of: list[int | None]
    words: list[str]
    truncated: int


def split_words(lm: LoadedModel, text: str) -> SentenceWords:
    """The words of ``text`` as the model's tokenizer splits them.

    Words are the tokenizer's own pre-tokenized words (``BatchEncoding.word_ids()``; BERT's splits
    punctuation off: "dog." is two words). A slow tokenizer has no word ids: each content token
    is then a word of its own.

    Raises
    ------
    ValueError
        When ``text`` is empty.
    """
    encoded = encode(lm, text)
    tok = lm.tokenizer
    ids = encoded.model_inputs["input_ids"][0].tolist()
    enc = tok(text, truncation=True, max_length=lm.max_tokens, return_special_tokens_mask=True,
              return_offsets_mapping=bool(tok.is_fast))
    special = enc["special_tokens_mask"]
    assert enc["input_ids"] == ids, "tokenizer gave different ids on a second call"
    raw = enc.word_ids() if tok.is_fast else [None if s else i for i, s in enumerate(special)]
    renumber: dict[int, int] = {}
    word_of: list[int | None] = []
    for w, s in zip(raw, special):
        word_of.append(None if w is None or s else renumber.setdefault(w, len(renumber)))
    words = []
    for w in range(len(renumber)):
        where = [i for i, k in enumerate(word_of) if k == w]
        if tok.is_fast:
            spans = [enc["offset_mapping"][i] for i in where]
            words.append(text[min(a for a, _ in spans):max(b for _, b in spans)].strip())
        else:
            words.append(tok.convert_tokens_to_string([encoded.tokens[i] for i in where]).strip())
    return SentenceWords(tokens=encoded.tokens, word_of=word_of, words=words, truncated=encoded.truncated)


@dataclass(frozen=True)
class TypedSpecialToken:
    """A tokenizer's special token typed into a sentence, and how the tokenizer took it.

    Attributes
    ----------
    text : str
        What was typed ("[SEP]", "<s>").
    special : bool
        True: the tokenizer read it as its special token (the model sees that token there);
        False: as plain text, in the pieces of ``pieces``.
    pieces : list of str
        The tokens it became.
    """

    text: str
    special: bool
    pieces: list[str]


def typed_special_tokens(lm: LoadedModel, text: str) -> list[TypedSpecialToken]:
    """The tokenizer's special tokens ("[CLS]", "[SEP]", "<s>", "</s>" …) that ``text`` contains,
    each with how the tokenizer read it (a Rust tokenizer reads them as the special token; some
    tokenizers split them into characters).

    Parameters
    ----------
    lm : LoadedModel
    text : str

    Returns
    -------
    list of TypedSpecialToken
        In the order of the tokenizer's special tokens; empty for most sentences.
    """
    tok = lm.tokenizer
    if tok is None or not text:
        return []
    found = []
    for special in dict.fromkeys(tok.all_special_tokens):
        if len(special) > 1 and special in text:
            pieces = tok.tokenize(special)
            found.append(TypedSpecialToken(special, pieces == [special], pieces))
    return found
