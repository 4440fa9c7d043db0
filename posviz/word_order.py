"""Word order: a sentence beside a permutation of its words, with and without positional information.

A transformer without positional information sees its input as a multiset of tokens: self-attention
and the feed-forward layers treat every token alike, so permuting the input only permutes the
output (the encoder is *permutation-equivariant*). Positions are what break this symmetry. This
module runs a model on a sentence and on a permutation of its words, puts the permuted run's
vectors back in the original order, and measures how far they are from the original run's, with
the model's positions in place or removed by forward hooks (:func:`remove_positions`).

Only the content tokens are permuted: special tokens ([CLS], [SEP], <s>, </s> …) stay where the
tokenizer put them, and the tokens of one word keep their order (a word moves as a block). The
model reads the permuted *token ids* (not the permuted text tokenized again), so both runs hold
exactly the same tokens.

Causal (decoder-only) models are not permutation-equivariant even without positions: token i sees
tokens 0 .. i only, and permuting changes that prefix. What holds there is narrower, and
:attr:`WordOrderComparison.must_match` says which tokens it covers.
"""

from __future__ import annotations

import threading
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch
from torch import nn

from posviz.embeddings import input_sum, run_with_parts
from posviz.encoding import encode
from posviz.loading import LoadedModel
from posviz.schemes import ALIBI, NONE, RELATIVE_EMBEDDINGS, UNKNOWN, resolve

#: The preset permutations of the words, for the UI.
PRESETS = {
    "reverse": "reverse the words",
    "swap": "swap two words",
    "shuffle": "a random shuffle (seeded)",
    "custom": "your own order",
}


class PositionRemovalError(ValueError):
    """The model's positional information cannot be removed by a forward hook; the message says why."""


# ---------------------------------------------------------------- permutations


def inverse_permutation(permutation: Sequence[int]) -> np.ndarray:
    """The permutation that undoes ``permutation``.

    Parameters
    ----------
    permutation : sequence of int
        A permutation of ``0 .. n - 1``.

    Returns
    -------
    np.ndarray
        int64 [n], ``inverse[permutation[i]] = i``.

    Raises
    ------
    ValueError
        When ``permutation`` is not a permutation of ``0 .. n - 1``.
    """
    perm = np.asarray(permutation, dtype=np.int64)
    if perm.ndim != 1 or not np.array_equal(np.sort(perm), np.arange(len(perm))):
        raise ValueError(f"Not a permutation of 0 .. {len(perm) - 1}: {perm.tolist()}")
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(len(perm))
    return inverse


def permute(items, permutation: Sequence[int], axis: int = 0):
    """Reorder ``items`` so that place i holds ``items[permutation[i]]``.

    Parameters
    ----------
    items : list, tuple, np.ndarray or torch.Tensor
        Tokens, ids or vectors; arrays and tensors are reordered along ``axis`` (use ``axis=1``
        for the [1, n] tensors a tokenizer returns).
    permutation : sequence of int
        A permutation of ``0 .. n - 1`` (n = length of ``items`` along ``axis``).
    axis : int

    Returns
    -------
    Same type as ``items`` (a list for a list or tuple).
    """
    perm = np.asarray(permutation, dtype=np.int64)
    if isinstance(items, torch.Tensor):
        return items.index_select(axis, torch.as_tensor(perm, device=items.device))
    if isinstance(items, np.ndarray):
        return np.take(items, perm, axis=axis)
    return [items[i] for i in perm]


def unpermute(items, permutation: Sequence[int], axis: int = 0):
    """Undo :func:`permute`: ``unpermute(permute(x, p), p) == x``.

    For the vectors of a permuted run, row j of the result is what original token j became.
    """
    return permute(items, inverse_permutation(permutation), axis=axis)


def reverse_words(num_words: int) -> list[int]:
    """The words back to front: ``[n - 1, …, 1, 0]``."""
    return list(range(num_words - 1, -1, -1))


def swap_words(num_words: int, i: int, j: int) -> list[int]:
    """Words ``i`` and ``j`` (0-based) swapped, the others in place.

    Raises
    ------
    ValueError
        When ``i`` or ``j`` is not a word index.
    """
    for k in (i, j):
        if not 0 <= k < num_words:
            raise ValueError(f"Word {k} does not exist: the sentence has words 0 to {num_words - 1}.")
    order = list(range(num_words))
    order[i], order[j] = order[j], order[i]
    return order


def shuffle_words(num_words: int, seed: int = 0) -> list[int]:
    """A random order of the words, ``numpy.random.default_rng(seed).permutation``: the same seed
    gives the same order. It may leave some words in place (for two words, half the seeds do)."""
    return [int(k) for k in np.random.default_rng(seed).permutation(num_words)]


def parse_order(text: str, num_words: int) -> list[int]:
    """A user-typed order: 0-based word indices separated by spaces or commas, e.g. ``"4 1 2 3 0"``.

    Returns
    -------
    list of int
        ``order[k]`` = the original word placed k-th.

    Raises
    ------
    ValueError
        When the text holds something other than integers, or is not a permutation of
        ``0 .. num_words - 1`` (each index exactly once); the message says what is wrong.
    """
    parts = text.replace(",", " ").split()
    try:
        order = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"Give word indices as whole numbers separated by spaces, e.g. "
                         f"{' '.join(map(str, reverse_words(num_words)))}.") from None
    if sorted(order) != list(range(num_words)):
        missing = sorted(set(range(num_words)) - set(order))
        repeated = sorted(k for k, c in Counter(order).items() if c > 1)
        wrong = sorted(k for k in set(order) if not 0 <= k < num_words)
        problems = ([f"missing {missing}"] if missing else []) + ([f"repeated {repeated}"] if repeated else []) + (
            [f"no such word {wrong}"] if wrong else [])
        raise ValueError(f"The order must name each word 0 to {num_words - 1} exactly once ({'; '.join(problems)}).")
    return order


# ---------------------------------------------------------------- words of a sentence


@dataclass
class SentenceWords:
    """A sentence as the model reads it, with the word of each token.

    Attributes
    ----------
    tokens : list of str
        The tokens, special tokens included (as :func:`posviz.encoding.encode` gives them).
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


def token_permutation(word_of: Sequence[int | None], order: Sequence[int]) -> np.ndarray:
    """The permutation of the tokens that puts the words in ``order``; special tokens stay.

    Parameters
    ----------
    word_of : sequence of int or None
        Word index of each token (None: a special token, which keeps its place), as in
        :attr:`SentenceWords.word_of`; the tokens of a word are contiguous.
    order : sequence of int
        ``order[k]`` = the original word placed k-th; a permutation of the word indices.

    Returns
    -------
    np.ndarray
        int64 [num_tokens]: permuted place i holds original token ``permutation[i]`` (use with
        :func:`permute` and :func:`unpermute`).

    Raises
    ------
    ValueError
        When ``order`` is not a permutation of the word indices.
    """
    num_words = len({w for w in word_of if w is not None})
    if sorted(order) != list(range(num_words)):
        raise ValueError(f"The order must name each word 0 to {num_words - 1} exactly once, not {list(order)}.")
    groups: list[list[int]] = [[] for _ in range(num_words)]
    for i, w in enumerate(word_of):
        if w is not None:
            groups[w].append(i)
    content = iter(i for w in order for i in groups[w])
    return np.array([i if w is None else next(content) for i, w in enumerate(word_of)], dtype=np.int64)


# ---------------------------------------------------------------- removing positions


def _rotary_identity(style: str):
    """Forward hook: cos = 1, sin = 0, so ``q·cos + rotate(q)·sin = q`` (no rotation)."""

    def identity(cos, sin):
        return torch.ones_like(cos), torch.zeros_like(sin)

    if style == "interleaved":  # GPTJRotaryEmbedding returns (sin, cos)
        return lambda out: tuple(reversed(identity(out[1], out[0])))
    return lambda out: identity(out[0], out[1])  # LlamaRotaryEmbedding & co. return (cos, sin)


def removal_plan(lm: LoadedModel) -> list[tuple[str, nn.Module, object]]:
    """What :func:`remove_positions` hooks: ``(description, module, transform of its output)``.

    Learned and sinusoidal tables (``layout.position``): the module's output (the position vectors
    added to the tokens) becomes zero. Rotary (``layout.rotary``): the module's (cos, sin) become
    (1, 0), so the rotation of queries and keys is the identity in every layer (a YaRN-style
    ``attention_scaling`` folded into cos and sin goes with it). Bucketed relative bias (T5's
    ``relative_attention_bias``, MPNet's, below the paths of ``layout.relative_bias``): the
    embedding that ``compute_bias`` / ``compute_position_bias`` reads becomes zero, so the bias
    added to every score is 0. A model with no positional information gets no hook.

    Raises
    ------
    PositionRemovalError
        ALiBi (BLOOM, MPT, Falcon): the bias is built by a function (``build_alibi_tensor``) or in
        the model's own ``forward``, not by a submodule, so no forward hook can reach it. DeBERTa's
        relative embeddings are read as a weight (``get_rel_embedding()``), not through a module
        call, and enter two attention terms. A model posviz does not know: nothing to hook.
    """
    layout = lm.layout
    if layout.scheme == ALIBI:
        raise PositionRemovalError(
            f"{lm.family} uses ALiBi: its linear bias is built by a function (build_alibi_tensor) or inside the "
            "model's forward, not by a submodule, so a forward hook cannot remove it and posviz does not patch "
            "library code. Its word order can still be compared with positions.")
    if layout.scheme == RELATIVE_EMBEDDINGS:
        raise PositionRemovalError(
            f"{lm.family} reads its relative position embeddings as a weight (get_rel_embedding()), not through a "
            "module call, and uses them in two attention terms (c2p, p2c): no forward hook removes them cleanly. "
            "Its word order can still be compared with positions.")
    if layout.scheme == UNKNOWN:
        raise PositionRemovalError(
            f"posviz does not know where {lm.family} keeps its positional information, so it cannot remove it.")
    plan: list[tuple[str, nn.Module, object]] = []
    if layout.position and (module := resolve(lm.model, layout.position)) is not None:
        plan.append((f"`{layout.position}` output set to 0 (no position vector added)", module, torch.zeros_like))
    if layout.rotary and (module := resolve(lm.model, layout.rotary)) is not None:
        plan.append((f"`{layout.rotary}` returns cos = 1, sin = 0 (no rotation)", module,
                     _rotary_identity(layout.rotary_style)))
    for path in layout.relative_bias:
        module = resolve(lm.model, f"{path}.relative_attention_bias")
        if module is not None:
            plan.append((f"`{path}.relative_attention_bias` output set to 0 (relative bias 0)", module,
                         torch.zeros_like))
    if not plan and layout.scheme != NONE:
        raise PositionRemovalError(f"posviz found no positional module to hook in {lm.family}.")
    return plan


@contextmanager
def remove_positions(lm: LoadedModel) -> Iterator[list[str]]:
    """Make ``lm`` position-free inside a ``with`` block, through forward hooks on its own modules.

    The hooks (see :func:`removal_plan` for what each scheme gets) act only on forward passes run
    by the thread that entered the block: a model shared by several sessions of the app is left
    alone for the others. They are removed on leaving the block, also after an exception.

    Yields
    ------
    list of str
        One description per hook (empty for a model without positional information).

    Raises
    ------
    PositionRemovalError
        Before any hook is registered, where the scheme's positions cannot be hooked (ALiBi,
        DeBERTa, unknown families).
    """
    plan = removal_plan(lm)
    owner = threading.get_ident()

    def hook_for(transform):
        def hook(_module, _args, output):
            return transform(output) if threading.get_ident() == owner else None
        return hook

    handles = []
    try:
        for _, module, transform in plan:
            handles.append(module.register_forward_hook(hook_for(transform)))
        yield [description for description, _, _ in plan]
    finally:
        for handle in handles:
            handle.remove()


# ---------------------------------------------------------------- comparison

#: The three stages a comparison holds, for :meth:`WordOrderComparison.stage`.
STAGES = {
    "input": "input representation",
    "first": "first layer",
    "output": "last layer",
}


def structural_matches(columns: Sequence[tuple], permutation: Sequence[int], *, causal: bool, positional: bool,
                       layers: int) -> np.ndarray:
    """Which tokens a model must map to the same vector in both runs, layer by layer, from its
    structure alone (whatever its weights).

    A layer's output at one place is a function of what the place holds and of the multiset of
    what the places it attends to hold (every token for a bidirectional model, the places up to
    itself for a causal one); with positions, each place also carries its position, which makes
    that multiset a sequence. Two places whose inputs and contexts are equal, recursively through
    the layers, get equal vectors. This is computed exactly, by canonical numbering of each
    place's context, layer after layer.

    Consequences: without positions every token of a bidirectional model matches in every layer.
    In a causal model token j matches after the first layer when the first j + 1 places hold the
    same tokens (in any order) in both runs, but after two or more layers only when they hold
    them in the same order, because the places it attends to then carry their own, different,
    prefixes: a deeper causal model is not permutation-equivariant even without positions.

    Parameters
    ----------
    columns : sequence of tuple
        What the model is given at each place of the original run (token id, segment id, mask).
    permutation : sequence of int
        Permuted place i holds original place ``permutation[i]``.
    causal : bool
        Each place attends to itself and the places before it only.
    positional : bool
        The model knows the position of each place (absolute or relative: a sufficient condition
        either way).
    layers : int
        Layers to follow.

    Returns
    -------
    np.ndarray
        bool [layers + 1, num_tokens]: row l is after l layers (row 0: the input tokens), column j
        the original token j (compared with where it went in the permuted run). Rows never gain a
        True as l grows.
    """
    n = len(columns)
    where = inverse_permutation(permutation)
    numbers: dict = {}

    def canon(value) -> int:
        return numbers.setdefault(value, len(numbers))

    def start(cols):
        return [canon((c, i) if positional else (c,)) for i, c in enumerate(cols)]

    def step(sig: list[int]) -> list[int]:
        if not causal:
            whole = frozenset(Counter(sig).items())
            return [canon((s, whole)) for s in sig]
        seen: Counter = Counter()
        out = []
        for s in sig:
            seen[s] += 1
            out.append(canon((s, frozenset(seen.items()))))
        return out

    original, permuted = start(list(columns)), start(permute(list(columns), permutation))
    # Tokens whose whole visible context is the same sequence match in every layer (a floor)
    same = [columns[i] == columns[p] for i, p in enumerate(permutation)]
    if causal:
        prefix = np.cumprod(same).astype(bool)
        floor = np.array([prefix[j] for j in range(n)]) & (where == np.arange(n))
    else:
        floor = np.full(n, all(same))
    rows = [np.array([original[j] == permuted[where[j]] for j in range(n)])]
    for _ in range(layers):
        if np.array_equal(rows[-1], floor):  # nothing left that can change
            rows.append(rows[-1].copy())
            continue
        original, permuted = step(original), step(permuted)
        rows.append(np.array([original[j] == permuted[where[j]] for j in range(n)]))
    return np.array(rows, dtype=bool).reshape(layers + 1, n)


@dataclass
class WordOrderComparison:
    """A sentence and a permutation of its words, run through the model, token by token.

    Every ``*_permuted`` array is put back in the original order (:func:`unpermute`): row j is
    what original token j became in the permuted run, so it lines up with row j of the
    ``*_original`` array.

    Attributes
    ----------
    tokens : list of str
        Tokens in the original order, special tokens included.
    permuted_tokens : list of str
        Tokens in the order the model read them in the permuted run.
    words : list of str
        The words of the sentence (:func:`split_words`).
    order : list of int
        ``order[k]`` = the original word placed k-th.
    permutation : np.ndarray
        int64 [num_tokens]: permuted place i holds original token ``permutation[i]``; special
        tokens are fixed points.
    without_positions : bool
        Both runs had the positional information removed (:func:`remove_positions`).
    removed : list of str
        What was removed, one line per hook (empty with positions).
    input_original, input_permuted : np.ndarray
        float32 [num_tokens, width]: the input representation, token + segment + position
        embeddings summed, before any LayerNorm (the position part is 0 without positions; for
        rotary, ALiBi and relative-bias models there is no position part at all). For a family
        whose token module posviz does not know: the model's ``hidden_states[0]``.
    first_original, first_permuted : np.ndarray
        float32 [num_tokens, hidden]: the first layer's output (``hidden_states[1]``).
    output_original, output_permuted : np.ndarray
        float32 [num_tokens, hidden]: the last layer's hidden states (``last_hidden_state``; the
        encoder's for an encoder-decoder model, after its final norm where it has one).
    causal : bool
        The model's attention is causal (every weight above the diagonal of its first layer is
        exactly 0): token i sees tokens 0 .. i only.
    num_layers : int
        Layers the model ran (``len(hidden_states) - 1``).
    must_match_input, must_match_first, must_match : np.ndarray
        bool [num_tokens]: tokens whose vector must be the same in both runs by the model's
        structure alone, at the input, after the first layer and after the last
        (:func:`structural_matches`). Other tokens may still match by coincidence.
    truncated : int
        Tokens dropped so the input fits the model.
    """

    tokens: list[str]
    permuted_tokens: list[str]
    words: list[str]
    order: list[int]
    permutation: np.ndarray
    without_positions: bool
    removed: list[str]
    input_original: np.ndarray
    input_permuted: np.ndarray
    first_original: np.ndarray
    first_permuted: np.ndarray
    output_original: np.ndarray
    output_permuted: np.ndarray
    causal: bool
    num_layers: int
    must_match_input: np.ndarray
    must_match_first: np.ndarray
    must_match: np.ndarray
    truncated: int

    @property
    def permuted_words(self) -> list[str]:
        """The words in the permuted order."""
        return [self.words[k] for k in self.order]

    def stage(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(original, permuted, must_match)`` of one of :data:`STAGES` ("input", "first", "output").

        Raises
        ------
        ValueError
            For another name.
        """
        if name not in STAGES:
            raise ValueError(f"Unknown stage {name!r}; expected one of {', '.join(STAGES)}.")
        if name == "input":
            return self.input_original, self.input_permuted, self.must_match_input
        if name == "first":
            return self.first_original, self.first_permuted, self.must_match_first
        return self.output_original, self.output_permuted, self.must_match

    def cosine(self, name: str = "output") -> np.ndarray:
        """float64 [num_tokens]: cosine of each token's two vectors at a stage (1 = same direction;
        1 where both are zero)."""
        a, b, _ = self.stage(name)
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        norms = np.linalg.norm(a64, axis=1) * np.linalg.norm(b64, axis=1)
        dots = (a64 * b64).sum(axis=1)
        return np.divide(dots, norms, out=np.ones_like(dots), where=norms > 0)

    def l2(self, name: str = "output") -> np.ndarray:
        """float64 [num_tokens]: Euclidean norm of the difference of each token's two vectors at a
        stage (the model's units)."""
        a, b, _ = self.stage(name)
        return np.linalg.norm(b.astype(np.float64) - a, axis=1)

    def max_difference(self, name: str = "output", must_match_only: bool = False) -> float:
        """The largest |difference| of one component of one token's two vectors at a stage, over
        all tokens or over the ``must_match`` ones only (NaN where there is none)."""
        a, b, must = self.stage(name)
        diff = np.abs(b - a)
        if must_match_only:
            diff = diff[must]
        return float(diff.max()) if diff.size else float("nan")

    @property
    def max_abs_difference(self) -> float:
        """The largest |difference| of one component of one token's last-layer vector between the two
        runs, over all tokens (the model's units; float32 rounding leaves about 1e-7 × the values)."""
        return self.max_difference("output")

    @property
    def max_abs_difference_input(self) -> float:
        """The same for the input representation."""
        return self.max_difference("input")


def _run(lm: LoadedModel, inputs: dict[str, torch.Tensor]) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, int]:
    """One forward pass: (input representation [n, width], first layer [n, hidden], last hidden
    state [n, hidden], causal, layers)."""
    captured, out = run_with_parts(lm, inputs, output_attentions=True, output_hidden_states=True)

    def rows(t: torch.Tensor) -> torch.Tensor:  # [1, n, d] or [n, d] (Marian's positions) -> [n, d]
        return (t[0] if t.dim() == 3 else t).to(torch.float32)

    total = rows(input_sum(lm, captured) if "token" in captured else out.hidden_states[0])
    first = out.attentions[0] if out.attentions else None
    causal = bool(first is not None and first.shape[-1] > 1 and (torch.triu(first[0], 1) == 0).all())
    return (total.cpu().numpy(), rows(out.hidden_states[1]).cpu().numpy(), rows(out.last_hidden_state).cpu().numpy(),
            causal, len(out.hidden_states) - 1)


def compare_orders(lm: LoadedModel, text: str, order: Sequence[int], without_positions: bool = False
                   ) -> WordOrderComparison:
    """Run ``text`` and its words in ``order`` through the model and line the results up token by token.

    The permuted run gets the original run's inputs (token ids, segment ids, attention mask)
    reordered by :func:`token_permutation` (special tokens stay; a word's tokens move together),
    so both runs hold the same tokens. Its vectors are then put back in the original order.
    With ``without_positions`` both runs are made inside :func:`remove_positions`.

    A bidirectional model (BERT, the encoder of T5 or BART …) is then permutation-equivariant:
    BERT's segment embedding is the same for every token of one sentence, so the only difference
    between the runs is the order of the tokens, and each token's vectors must be equal up to
    float rounding (``max_abs_difference`` ≈ 2e-6 for all-MiniLM-L6-v2), while with positions
    they differ (≈ 1). A causal model matches without positions only where
    :attr:`WordOrderComparison.must_match_first` / ``must_match`` say (see
    :func:`structural_matches`).

    Parameters
    ----------
    lm : LoadedModel
    text : str
        One sentence (no second segment).
    order : sequence of int
        ``order[k]`` = the original word placed k-th, a permutation of ``0 .. num_words - 1``
        (:func:`reverse_words`, :func:`swap_words`, :func:`shuffle_words`, :func:`parse_order`;
        words as :func:`split_words` gives them).
    without_positions : bool
        Remove the positional information in both runs.

    Returns
    -------
    WordOrderComparison

    Raises
    ------
    ValueError
        When ``text`` is empty or ``order`` is not a permutation of its words.
    PositionRemovalError
        With ``without_positions``, for a model whose positions cannot be hooked
        (:func:`removal_plan`).
    """
    split = split_words(lm, text)
    permutation = token_permutation(split.word_of, order)
    inputs = encode(lm, text).model_inputs
    permuted_inputs = {k: permute(v, permutation, axis=1) for k, v in inputs.items()}
    removed: list[str] = []
    if without_positions:
        with remove_positions(lm) as removed:
            first, second = _run(lm, inputs), _run(lm, permuted_inputs)
    else:
        first, second = _run(lm, inputs), _run(lm, permuted_inputs)
    (input_a, first_a, output_a, causal, layers), (input_b, first_b, output_b, _, _) = first, second
    columns = list(zip(*(v[0].tolist() for v in inputs.values())))
    positional = not without_positions and lm.scheme != NONE
    matches = structural_matches(columns, permutation, causal=causal, positional=positional, layers=layers)
    input_has_position = positional and lm.layout.position is not None
    return WordOrderComparison(
        tokens=split.tokens,
        permuted_tokens=permute(split.tokens, permutation),
        words=split.words,
        order=[int(k) for k in order],
        permutation=permutation,
        without_positions=without_positions,
        removed=list(removed),
        input_original=input_a,
        input_permuted=unpermute(input_b, permutation),
        first_original=first_a,
        first_permuted=unpermute(first_b, permutation),
        output_original=output_a,
        output_permuted=unpermute(output_b, permutation),
        causal=causal,
        num_layers=layers,
        must_match_input=(permutation == np.arange(len(permutation))) if input_has_position
        else np.ones(len(permutation), dtype=bool),
        must_match_first=matches[min(1, layers)],
        must_match=matches[-1],
        truncated=split.truncated,
    )
