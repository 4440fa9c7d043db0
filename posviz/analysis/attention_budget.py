"""What a reading of attention will cost, before it runs: its memory and time against a budget.

The sizes a reading works with (how long a layer is kept whole, the blocks of its summaries and of its
queries) are set here, with :func:`estimate`, which :func:`posviz.analysis.attention_reading.read_attention`
checks first and the Attention page shows; the reading itself is :mod:`posviz.analysis.attention_reading`.
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass

import torch

from posviz import settings
from posviz.analysis.attention_offsets import OffsetProfile
from posviz.loading import LoadedModel

#: Most tokens a side of a layer kept whole (every weight, exact): a screen's width of cells.
WHOLE_TOKENS = 512
#: Cells a side of the block summaries of a longer layer (the width of one of two columns, in pixels).
SUMMARY_CELLS = 256
#: Most cells a side of a window kept at full resolution.
WINDOW_CELLS = 256
#: Most bytes of kept layers for every layer to be kept (else only the asked ones are).
KEEP_BYTES = 256 * 2**20
#: Most bytes of one block of weights (float32 [heads, rows, keys]); the rows of a block follow from it.
BLOCK_BYTES = 16 * 2**20
#: Blocks between two hand-backs of freed heap memory (``posviz.analysis.attention_reading._release_freed``):
#: also the blocks' worth of freed memory the estimate counts the C heap as holding on to.
RELEASE_EVERY = 16
#: Working copies of a block eager attention makes at once (scores, weights, the mask added).
BLOCK_COPIES = 3
#: A real model's blocked reading per cell against :func:`cell_seconds`' calibration block: its copies
#: (grouped keys repeated, dtype casts) and longer rows. Measured on a 2-core CPU with a 30-layer,
#: 9-head Llama: 1.9 at 2 048 tokens, 1.4 at 8 192 (bench/attention.py).
EAGER_OVERHEAD = 1.6
class AttentionBudgetError(ValueError):
    """A reading that would need more memory than the budget: its estimate says how much, and what fits.

    Attributes
    ----------
    estimate : ReadingEstimate
    """

    def __init__(self, message: str, estimate: "ReadingEstimate"):
        super().__init__(message)
        self.estimate = estimate


@dataclass(frozen=True)
class Window:
    """Query rows ``q0 .. q1 - 1`` and key columns ``k0 .. k1 - 1`` (token indices, end excluded)."""

    q0: int
    q1: int
    k0: int
    k1: int

    def clipped(self, queries: int, keys: int, most: int | None = None) -> "Window":
        """The window inside a [queries, keys] pattern, at least one cell and at most ``most`` each way."""
        most = most or max(queries, keys)
        q0, k0 = min(max(self.q0, 0), queries - 1), min(max(self.k0, 0), keys - 1)
        return Window(q0, min(max(self.q1, q0 + 1), queries, q0 + most), k0, min(max(self.k1, k0 + 1), keys, k0 + most))


@dataclass(frozen=True)
class ReadingEstimate:
    """What a reading will cost, before it runs.

    Attributes
    ----------
    tokens : int
        Query tokens (the longest stack).
    peak_bytes : int
        Memory the reading adds at its peak, bytes.
    seconds : float
        Expected wall time of the attention: its cells (layers × heads × queries × keys) times this
        device's measured time per cell (:func:`cell_seconds`) times :data:`EAGER_OVERHEAD`; the rest of
        the forward pass is not counted.
    budget : int
        :func:`posviz.settings.attention_budget`, bytes.
    fitting_tokens : int
        The most tokens whose reading fits the budget.
    blocked : bool
        Read by blocks of queries (False: from ``output_attentions``, every layer at once).
    """

    tokens: int
    peak_bytes: int
    seconds: float
    budget: int
    fitting_tokens: int
    blocked: bool

    @property
    def fits(self) -> bool:
        """Whether the peak fits the budget."""
        return self.peak_bytes <= self.budget

    def describe(self) -> str:
        """The estimate in words, for messages."""
        took = "under a second" if self.seconds < 1 else f"{self.seconds:,.0f} s"
        return (f"{self.tokens:,} tokens need about {settings.human_bytes(self.peak_bytes)} and "
                f"{took}; the budget is {settings.human_bytes(self.budget)} "
                f"({settings.attention_budget_source()}), enough for {self.fitting_tokens:,} tokens.")


def readable(model: torch.nn.Module) -> bool:
    """Whether ``model``'s attention modules call the ``AttentionInterface`` (every module of a
    ``modeling_*.py`` that defines ``eager_attention_forward`` and uses it)."""
    return any(getattr(sys.modules[type(m).__module__], "ALL_ATTENTION_FUNCTIONS", None) is not None
               and hasattr(sys.modules[type(m).__module__], "eager_attention_forward")
               for m in model.modules() if type(m).__name__.endswith("Attention"))


def summary_block(queries: int, keys: int) -> int:
    """Tokens per side of a summary cell: 1 up to :data:`WHOLE_TOKENS`, else enough for :data:`SUMMARY_CELLS`."""
    longest = max(queries, keys)
    return 1 if longest <= WHOLE_TOKENS else -(-longest // SUMMARY_CELLS)


def kept_bytes(heads: int, queries: int, keys: int, window: Window | None = None) -> int:
    """Bytes one kept layer takes (:class:`LayerAttention`): whole, or two summaries and a window."""
    b = summary_block(queries, keys)
    if b == 1:
        return heads * queries * keys * 4
    cells = (window.q1 - window.q0) * (window.k1 - window.k0) if window else 0
    return heads * (2 * -(-queries // b) * -(-keys // b) + cells) * 4


def estimate(lm: LoadedModel, tokens: int, *, keys: int | None = None, stack: str = "encoder",
             kept: int = 1, window: Window | None = None) -> ReadingEstimate:
    """Memory and time of reading the attention of ``tokens`` query tokens, before running it.

    Blocked reading: the eager mask (float32 [queries, keys], and the boolean one it is made from),
    :data:`BLOCK_COPIES` blocks of at most :data:`BLOCK_BYTES`, the heap's slack between two hand-backs
    of freed memory (:data:`RELEASE_EVERY` blocks), the offset profile
    (float64 [layers, heads, 2n − 1] plus two [layers, heads, n]), the kept layers (:func:`kept_bytes`) and
    the activations (the feed-forward's three [n, intermediate] and about 8 [n, width], float32). Read
    from ``output_attentions``: every layer's [heads, n, n] twice (the model's tuple and its float32 copy)
    instead of the blocks. The bench (``bench/attention.py``) checks the estimate against the measured
    growth.

    Parameters
    ----------
    lm : LoadedModel
    tokens : int
        Query tokens.
    keys : int, optional
        Key tokens where they are other tokens (cross attention); ``tokens`` by default.
    stack : str
        The stack read (its layers and heads).
    kept : int
        Layers kept.
    window : Window, optional
        The window each summarised kept layer keeps.

    Returns
    -------
    ReadingEstimate
    """
    layers, heads = stack_layers(lm, stack), stack_heads(lm, stack)
    text_config = lm.config.get_text_config()
    width = text_config.hidden_size
    inner = getattr(text_config, "intermediate_size", None) or 4 * width
    blocked = readable(lm.model)

    def peak(n: int) -> int:
        k = keys or n
        common = n * k * 5 + kept * kept_bytes(heads, n, k, window) + max(n, k) * (3 * inner + 8 * width) * 4
        common += 3 * layers * heads * (2 * n - 1) * 8 if keys is None else 0
        if blocked:
            block = min(BLOCK_BYTES, heads * n * k * 4)
            return common + (BLOCK_COPIES + RELEASE_EVERY) * block
        return common + 2 * layers * heads * n * k * 4

    budget = settings.attention_budget(lm.device)
    low, high = 1, max(tokens, 1)
    while low < high:  # the most tokens that fit: the peak grows with n
        mid = (low + high + 1) // 2
        low, high = (mid, high) if peak(mid) <= budget else (low, mid - 1)
    seconds = layers * heads * tokens * (keys or tokens) * cell_seconds(lm.device.type) * EAGER_OVERHEAD
    return ReadingEstimate(tokens, peak(tokens), seconds, budget, low, blocked)


def every_layer_fits(lm: LoadedModel, queries: int, keys: int, stack: str = "encoder",
                     window: Window | None = None) -> bool:
    """Whether every layer of ``stack`` can be kept (:data:`KEEP_BYTES`), so that choosing another layer
    needs no second forward pass."""
    return stack_layers(lm, stack) * kept_bytes(stack_heads(lm, stack), queries, keys, window) <= KEEP_BYTES


@functools.cache
def cell_seconds(device: str) -> float:
    """Seconds per attention weight (one query-key cell of one head) of a blocked reading on ``device``,
    measured once per process on a [4 heads, 256 queries, 2 048 keys] block of head width 64: the
    scores' product, scaling, mask, softmax and the product with the values, as eager attention does
    them, then the offset profile's skew and sums and a block summary, as a reading adds them."""
    heads, rows, keys, dim = 4, 256, 2048, 64
    q, k = torch.randn(heads, rows, dim, device=device), torch.randn(heads, keys, dim, device=device)
    mask = torch.zeros(rows, keys, device=device)
    profile = OffsetProfile.empty(1, heads, keys)

    def block() -> None:
        weights = torch.softmax(q @ k.transpose(1, 2) * 0.125 + mask, dim=-1)
        weights @ k
        profile.add(0, keys - rows, weights)
        weights.view(heads, rows, keys // 8, 8).sum(-1)

    block()
    if device == "cuda":
        torch.cuda.synchronize()
    began = time.perf_counter()
    block()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - began) / (heads * rows * keys)


def stack_layers(lm: LoadedModel, stack: str) -> int:
    """Layers of ``stack`` ("encoder": the only stack of a model without a decoder); from the config."""
    if stack == "encoder":
        return lm.num_layers
    return lm._config_int("num_decoder_layers", "decoder_layers") or lm.num_layers


def stack_heads(lm: LoadedModel, stack: str) -> int:
    """Heads per layer of ``stack``; from the config."""
    if stack == "encoder":
        return lm.num_heads
    return lm._config_int("num_decoder_heads", "decoder_attention_heads") or lm.num_heads
