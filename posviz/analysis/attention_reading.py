"""Attention of an input of any length, read with bounded memory: one layer at a time, by blocks of queries.

``output_attentions=True`` keeps every layer's weights, float32 [layers, heads, n, n]: 72 GB for 8 192
tokens of a 30-layer, 9-head model. Here the model's own eager attention function (the
``eager_attention_forward`` of its ``modeling_*.py``, which ``transformers``' ``AttentionInterface``
calls for ``attn_implementation="eager"``) runs on blocks of query rows instead of all at once. Each
block's weights, float32 [heads, rows, keys], go to the reading (:class:`AttentionReading`) and are
dropped: the chosen layer is kept whole where it fits on screen, else as block means and maxima plus a
window at full resolution; every layer adds to the offset profile (:mod:`posviz.analysis.attention_offsets`).
Softmax is taken per query row, so the blocks' rows are the same numbers as the whole call's.

Models whose attention does not go through the ``AttentionInterface`` (BLOOM, MPT, Falcon, DeBERTa-v2,
XLNet …) are read from ``output_attentions`` layer after layer into the same reading: their memory is
that of every layer at once, which :func:`estimate` counts.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import re
import sys
import threading
import time
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

from posviz.analysis import attention_budget as budget
from posviz.analysis.attention import STACKS, decoder_input
from posviz.analysis.attention_budget import (
    AttentionBudgetError, Window, estimate, readable, stack_heads, stack_layers, summary_block,
)
from posviz.analysis.attention_offsets import OffsetProfile
from posviz.loading import LoadedModel
from posviz.tokenization import encode

#: Names of cross-attention modules (queries of the decoder, keys of the encoder), by family.
_CROSS = re.compile(r"EncDecAttention|encoder_attn|crossattention|cross_attn", re.IGNORECASE)

#: The corpus an offset profile can average instead of one input (:func:`corpus_offsets`): tokens per
#: window, and the most windows read.
CORPUS_TOKENS, CORPUS_WINDOWS = 128, 16

_local = threading.local()


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, musl, Windows)."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        return ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    return None


def _release_freed() -> None:
    """Hand the C heap's free memory back to the system (``malloc_trim(0)``, where glibc has it).

    A reading allocates and frees blocks of some 16 MB over and over (scores, weights, repeated keys);
    glibc keeps freed blocks under its mmap threshold in the heap, and the heap grew by 1.2 GB within one
    layer of 8 192 tokens (a 30-layer, 9-head model, measured on Linux) though the live data stayed small.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@dataclass
class LayerAttention:
    """One layer's attention patterns as kept by a reading.

    Attributes
    ----------
    block : int
        Tokens per side of a summary cell: 1 where ``patterns`` holds the layer whole.
    patterns : np.ndarray or None
        float32 [heads, queries, keys], every weight; None where ``block`` > 1.
    block_mean, block_max : np.ndarray or None
        float32 [heads, ceil(queries / block), ceil(keys / block)]: the mean and the maximum of the
        weights of each block of ``block`` × ``block`` cells (the last row and column of blocks may be
        smaller); None where ``block`` is 1.
    window_patterns : np.ndarray or None
        float32 [heads, q1 − q0, k1 − k0]: the weights in the reading's window, exact; None without a
        window or where ``block`` is 1 (``patterns`` holds them).
    """

    block: int
    patterns: np.ndarray | None = None
    block_mean: np.ndarray | None = None
    block_max: np.ndarray | None = None
    window_patterns: np.ndarray | None = None

    def summary(self, reduction: str = "mean") -> np.ndarray:
        """The layer as drawn, [heads, rows, columns]: ``patterns``, or the block summary of
        ``reduction`` ("mean" or "max")."""
        if self.patterns is not None:
            return self.patterns
        return self.block_max if reduction == "max" else self.block_mean


@dataclass
class AttentionReading:
    """What was read of one input's attention: some layers' patterns, and every layer's offset profile.

    Attributes
    ----------
    query_tokens, key_tokens : list of str
        Row and column labels of the read stack.
    stack : str
        One of :data:`posviz.analysis.attention.STACKS`.
    layers : dict of int to LayerAttention
        The layers kept, by index.
    window : Window or None
        The cells every summarised layer keeps at full resolution.
    offsets : OffsetProfile or None
        Every layer of a self-attention stack, by offset j − i; None for cross attention or where not asked.
    truncated : int
        Tokens dropped so the input fits the model (or the reading's limit).
    seconds : float
        Wall time of the forward pass.
    """

    query_tokens: list[str]
    key_tokens: list[str]
    stack: str
    layers: dict[int, LayerAttention]
    window: Window | None = None
    offsets: OffsetProfile | None = None
    truncated: int = 0
    seconds: float = 0.0

    def layer(self, index: int) -> LayerAttention:
        """The kept layer ``index``.

        Raises
        ------
        ValueError
            When that layer was not kept.
        """
        if index not in self.layers:
            raise ValueError(f"Layer {index} was not kept by this reading (kept: {sorted(self.layers)}).")
        return self.layers[index]


def _module_eager(module: torch.nn.Module):
    """The eager attention function of ``module``'s modeling file (``eager_attention_forward``).

    Raises
    ------
    TypeError
        When its module defines none.
    """
    found = getattr(sys.modules[type(module).__module__], "eager_attention_forward", None)
    if found is None or found is _eager_in_blocks:
        raise TypeError(f"{type(module).__name__} has no eager_attention_forward to read by blocks")
    return found


def _rows(value, start: int, stop: int, queries: int):
    """``value`` restricted to query rows ``start:stop`` where it has a query axis (dim -2 of a mask
    or a position bias [batch, heads or 1, queries, keys]); other values unchanged."""
    if isinstance(value, torch.Tensor) and value.dim() >= 2 and value.shape[-2] == queries and queries > 1:
        return value[..., start:stop, :]
    return value


def _eager_in_blocks(module, query, key, value, attention_mask, *args, **kwargs):
    """transformers' eager attention, registered as ``"eager"``: the module's own function, by blocks of
    query rows where a reading is active on this thread (the weights go to it; None is returned for
    them), whole otherwise.

    ``query`` is [batch, heads, queries, head_dim]; the output [batch, queries, heads, head_dim], as
    ``transformers.models.llama.modeling_llama.eager_attention_forward`` returns it.
    """
    eager = _module_eager(module)
    reading = getattr(_local, "reading", None)
    if reading is None:
        return eager(module, query, key, value, attention_mask, *args, **kwargs)
    queries, keys, heads = query.shape[-2], key.shape[-2], query.shape[1]
    rows = max(1, min(queries, budget.BLOCK_BYTES // (heads * keys * 4)))
    outputs = []
    for start in range(0, queries, rows):
        stop = min(queries, start + rows)
        out, weights = eager(module, query[:, :, start:stop], key, value, _rows(attention_mask, start, stop, queries),
                             *args, **{k: _rows(v, start, stop, queries) for k, v in kwargs.items()})
        reading.take(reading.stacks[id(module)], start, weights[0])
        outputs.append(out)
        del weights
        if (start // rows) % budget.RELEASE_EVERY == budget.RELEASE_EVERY - 1:
            _release_freed()
    return torch.cat(outputs, dim=1), None


ALL_ATTENTION_FUNCTIONS.register("eager", _eager_in_blocks)


def _stack_of(name: str, encoder_decoder: bool) -> str:
    """The stack an attention module at ``name`` in the model belongs to ("decoder.block.2.layer.1.EncDecAttention"
    -> "cross")."""
    if _CROSS.search(name):
        return "cross"
    if encoder_decoder and name.split(".")[0] == "decoder":
        return "decoder"
    return "encoder"


class _Collector:
    """Folds blocks of weights into an :class:`AttentionReading` as the forward pass produces them."""

    def __init__(self, model, encoder_decoder: bool, stack: str, layers: set[int], queries: int, keys: int,
                 window: Window | None, offsets: OffsetProfile | None):
        self.stacks = {id(m): _stack_of(name, encoder_decoder) for name, m in model.named_modules()}
        self.calls = dict.fromkeys(STACKS, 0)
        self.stack, self.queries, self.keys = stack, queries, keys
        self.block = summary_block(queries, keys)
        self.window, self.offsets = window, offsets
        self.kept = {index: _Kept() for index in layers}
        self.scratch = {}  # the offset profile's buffers, dropped with the collector

    def take(self, stack: str, start: int, weights: torch.Tensor) -> None:
        """Take the weights of query rows ``start ..`` of an attention call of ``stack``: float [heads,
        rows, keys]. The layer is the call's rank in its stack (a call's blocks come in order from row 0;
        ALBERT calls one shared module for every layer)."""
        if start == 0:
            self.calls[stack] += 1
        layer = self.calls[stack] - 1
        if stack != self.stack:
            return
        weights = weights.float()
        if self.offsets is not None:
            self.offsets.add(layer, start, weights, self.scratch)
        if layer in self.kept:
            self.kept[layer].take(self, start, weights)

    def reading(self, query_tokens, key_tokens, truncated: int, seconds: float) -> AttentionReading:
        """The reading, once the forward pass is done."""
        layers = {index: kept.result(self) for index, kept in sorted(self.kept.items())}
        return AttentionReading(query_tokens, key_tokens, self.stack, layers, self.window if self.block > 1 else None,
                                self.offsets, truncated, seconds)


class _Kept:
    """What one kept layer has gathered so far."""

    def __init__(self):
        self.patterns = self.sums = self.maxima = self.window = None

    def take(self, c: _Collector, start: int, weights: torch.Tensor) -> None:
        heads, rows, keys = weights.shape
        stop = start + rows
        if c.block == 1:
            if self.patterns is None:
                self.patterns = np.zeros((heads, c.queries, keys), dtype=np.float32)
            self.patterns[:, start:stop] = weights.cpu().numpy()
            return
        b = c.block
        key_blocks, query_blocks = -(-keys // b), -(-c.queries // b)
        if self.sums is None:
            self.sums = torch.zeros((heads, query_blocks, key_blocks), dtype=torch.float64, device=weights.device)
            self.maxima = torch.zeros((heads, query_blocks, key_blocks), dtype=torch.float32, device=weights.device)
        cut = key_blocks * b - keys  # a last block cut by the edge: zeros change neither its sum nor its maximum
        padded = (torch.nn.functional.pad(weights, (0, cut)) if cut else weights).view(heads, rows, key_blocks, b)
        which = torch.arange(start, stop, device=weights.device) // b
        self.sums.index_add_(1, which, padded.sum(-1, dtype=torch.float64))
        self.maxima.scatter_reduce_(1, which.view(1, -1, 1).expand(heads, rows, key_blocks), padded.amax(-1),
                                    reduce="amax")
        w = c.window
        if w is not None and start < w.q1 and stop > w.q0:
            if self.window is None:
                self.window = np.zeros((heads, w.q1 - w.q0, w.k1 - w.k0), dtype=np.float32)
            lo, hi = max(start, w.q0), min(stop, w.q1)
            self.window[:, lo - w.q0:hi - w.q0] = weights[:, lo - start:hi - start, w.k0:w.k1].cpu().numpy()

    def result(self, c: _Collector) -> LayerAttention:
        if c.block == 1:
            return LayerAttention(1, patterns=self.patterns)
        b = c.block
        rows = np.minimum(b, c.queries - b * np.arange(self.sums.shape[1]))
        cols = np.minimum(b, c.keys - b * np.arange(self.sums.shape[2]))
        mean = (self.sums.cpu().numpy() / (rows[:, None] * cols[None, :])).astype(np.float32)
        return LayerAttention(b, block_mean=mean, block_max=self.maxima.cpu().numpy(), window_patterns=self.window)


def attention_size(lm: LoadedModel, text: str, text_pair: str | None = None, *, target: str | None = None,
                   stack: str = "encoder", limit: int | None = None, generated: int = 0) -> tuple[int, int]:
    """(queries, keys) of the attention :func:`read_attention` reads: the tokens of the input, counted
    before any model runs.

    Parameters
    ----------
    lm : LoadedModel
    text, text_pair, target, stack, limit
        As for :func:`read_attention`.
    generated : int
        Tokens of a continuation read after the input (its ``continuation``, a decoder model's).

    Returns
    -------
    (int, int)
        Query rows and key columns of one layer's pattern of ``stack``.
    """
    source = len(encode(lm, text, text_pair, limit=limit).tokens) + generated
    if stack == "encoder":
        return source, source
    decoder = len(decoder_input(lm, target or text)[0][0])
    return decoder, decoder if stack == "decoder" else source


def read_attention(lm: LoadedModel, text: str, text_pair: str | None = None, *, target: str | None = None,
                   stack: str = "encoder", layers: Sequence[int] | None = None, window: Window | None = None,
                   offsets: bool = True, limit: int | None = None, continuation: Sequence[int] = (),
                   check_budget: bool = True) -> AttentionReading:
    """Read the attention of ``text`` with bounded memory: the ``layers`` of ``stack`` kept, every layer's offsets.

    The input is prepared as :func:`posviz.analysis.attention.attention` prepares it (the same tokens,
    and for an encoder-decoder model the same decoder input from ``target``), and the model runs once.

    Parameters
    ----------
    lm : LoadedModel
    text, text_pair, target : str
        As for :func:`posviz.analysis.attention.attention`.
    stack : {"encoder", "decoder", "cross"}
        The stack whose layers are kept ("encoder" is the only stack of a model without a decoder).
    layers : sequence of int, optional
        The layers kept: whole up to :data:`~posviz.analysis.attention_budget.WHOLE_TOKENS` tokens, else as block summaries and ``window``.
        Every layer by default.
    window : Window, optional
        Cells to keep at full resolution where a layer is summarised (clipped to the pattern and to
        :data:`~posviz.analysis.attention_budget.WINDOW_CELLS` a side).
    offsets : bool
        Also fold every layer of ``stack`` into an :class:`OffsetProfile` (not for "cross").
    limit : int, optional
        Read at most this many tokens (the first ones, as the model's own limit truncates).
    continuation : sequence of int
        Token ids appended after the input (a decoder model's own greedy continuation,
        :func:`posviz.analysis.generation.greedy_continuation`); not for encoder-decoder models.
    check_budget : bool
        Refuse a reading whose :func:`estimate` exceeds the budget.

    Returns
    -------
    AttentionReading
        Weights are probabilities (each row sums to 1).

    Raises
    ------
    AttentionBudgetError
        When ``check_budget`` and the estimate exceeds :func:`posviz.settings.attention_budget`.
    ValueError
        When ``text`` is empty, ``stack`` is unknown or is a decoder stack of a model without a decoder,
        or a layer is out of range.

    """
    if stack not in STACKS:
        raise ValueError(f"Unknown attention stack {stack!r}; expected one of {', '.join(STACKS)}.")
    encoder_decoder = bool(lm.config.is_encoder_decoder)
    if stack != "encoder" and not encoder_decoder:
        raise ValueError(f"The {stack} stack exists only for encoder-decoder models.")
    encoded = encode(lm, text, text_pair, limit=limit)
    inputs = dict(encoded.model_inputs)
    query_tokens = key_tokens = encoded.tokens
    if continuation:
        if encoder_decoder:
            raise ValueError("A continuation is read only by decoder-only models.")
        more = torch.tensor([list(continuation)], dtype=torch.long, device=lm.device)
        inputs = {"input_ids": torch.cat([inputs["input_ids"], more], dim=1),
                  "attention_mask": torch.cat([inputs["attention_mask"], torch.ones_like(more)], dim=1)}
        query_tokens = key_tokens = encoded.tokens + lm.tokenizer.convert_ids_to_tokens(list(continuation))
    if encoder_decoder:
        ids, _ = decoder_input(lm, target if target and target.strip() else text)
        inputs["decoder_input_ids"] = ids
        decoder_tokens = lm.tokenizer.convert_ids_to_tokens(ids[0].tolist())
        query_tokens = decoder_tokens if stack != "encoder" else encoded.tokens
        key_tokens = decoder_tokens if stack == "decoder" else encoded.tokens
    count = stack_layers(lm, stack)
    kept = set(range(count)) if layers is None else set(layers)
    if not kept <= set(range(count)):
        raise ValueError(f"Layer {max(kept)} does not exist: the {stack} stack has layers 0 … {count - 1}.")
    queries, keys = len(query_tokens), len(key_tokens)
    if window is not None:
        window = window.clipped(queries, keys, budget.WINDOW_CELLS)
    if check_budget:
        cost = estimate(lm, queries, keys=keys if stack == "cross" else None, stack=stack, kept=len(kept),
                        window=window)
        if not cost.fits:
            raise AttentionBudgetError(f"This attention is too large to read: {cost.describe()}", cost)
    profile = OffsetProfile.empty(count, stack_heads(lm, stack), queries) if offsets and stack != "cross" else None
    collector = _Collector(lm.model, encoder_decoder, stack, kept, queries, keys, window, profile)
    seconds = _run(lm, inputs, collector)
    return collector.reading(query_tokens, key_tokens, encoded.truncated if stack != "decoder" else 0, seconds)


def _run(lm: LoadedModel, inputs: dict, collector: _Collector) -> float:
    """One forward pass whose attention goes to ``collector``; its wall time, seconds."""
    encoder_decoder = bool(lm.config.is_encoder_decoder)
    module = lm.model if encoder_decoder else lm.forward_module
    extra = {"use_cache": False} if encoder_decoder else {}
    began = time.perf_counter()
    with torch.no_grad():
        if readable(lm.model):
            _local.reading = collector
            try:
                module(**inputs, **extra)
            finally:
                _local.reading = None
        else:
            out = module(**inputs, output_attentions=True, **extra)
            found = {"encoder": out.encoder_attentions if encoder_decoder else out.attentions,
                     "decoder": getattr(out, "decoder_attentions", None),
                     "cross": getattr(out, "cross_attentions", None)}[collector.stack]
            for weights in found:
                collector.take(collector.stack, 0, weights[0])
    return time.perf_counter() - began


def corpus_offsets(lm: LoadedModel, text: str, *, tokens: int = 128, windows: int = 16) -> OffsetProfile:
    """The offset profile of every layer and head averaged over windows of a text: not one sentence's.

    The text is tokenized once without special tokens and cut into consecutive windows of ``tokens``
    tokens, special tokens included (those the tokenizer puts around one sequence); each window
    is one forward pass (an encoder-decoder model: its encoder). The profile of window w adds to the
    sum, so :attr:`OffsetProfile.inputs` says how many were averaged.

    Parameters
    ----------
    lm : LoadedModel
    text : str
        E.g. :data:`posviz.analysis.layer_probe.BUILTIN_TEXT`, the text of the probes.
    tokens : int
        Tokens per window, special tokens included (at most the model's limit).
    windows : int
        Most windows read; fewer where the text is shorter.

    Returns
    -------
    OffsetProfile

    Raises
    ------
    ValueError
        When the text holds less than one window.
    """
    tok = lm.tokenizer
    tokens = min(tokens, lm.max_tokens)
    before, after = _special_tokens(tok)
    ids = tok(text, add_special_tokens=False, verbose=False)["input_ids"]
    step = tokens - len(before) - len(after)
    chunks = [ids[i:i + step] for i in range(0, len(ids) - step + 1, step)][:windows]
    if not chunks or step < 1:
        raise ValueError(f"The text holds fewer than {tokens} tokens: no window to read.")
    total = None
    for chunk in chunks:
        window_ids = torch.tensor([before + chunk + after], device=lm.device)
        inputs = {"input_ids": window_ids, "attention_mask": torch.ones_like(window_ids)}
        if lm.config.is_encoder_decoder:
            start = getattr(lm.config, "decoder_start_token_id", None)
            inputs["decoder_input_ids"] = torch.tensor([[start if start is not None else 0]], device=lm.device)
        profile = OffsetProfile.empty(lm.num_layers, lm.num_heads, window_ids.shape[1])
        _run(lm, inputs, _Collector(lm.model, bool(lm.config.is_encoder_decoder), "encoder", set(),
                                    window_ids.shape[1], window_ids.shape[1], None, profile))
        total = profile if total is None else total + profile
    return total


def _special_tokens(tok) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after one sequence ([CLS] and [SEP] for BERT; none for GPT-2)."""
    core = tok("a", add_special_tokens=False)["input_ids"]
    full = tok("a")["input_ids"]
    at = next(i for i in range(len(full) - len(core) + 1) if full[i:i + len(core)] == core)
    return full[:at], full[at + len(core):]
