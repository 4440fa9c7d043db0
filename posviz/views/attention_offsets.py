"""Views of attention read positionally: the weight by offset j − i of every layer and head, the share on
the first token (sink) and on the previous token, and one head beside what its positional scheme predicts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from posviz.analysis.attention import STACKS
from posviz.analysis.attention_offsets import OffsetProfile
from posviz.views import figures, style
from posviz.views.view import View, view_id

#: Offsets shown each side of 0 by default: where a head's positional preference lives.
MAX_OFFSET = 64
#: Most offsets each side a view offers (a column each in :func:`offset_grid`: about its width in pixels).
MOST_OFFSETS = 512
#: The smallest weight the log colour scale of :func:`offset_grid` shows (smaller ones share its colour).
FLOOR = 1e-6


def stack_name(stack: str, encoder_decoder: bool) -> str:
    """What the views' titles call a stack: its words (:data:`posviz.analysis.attention.STACKS`) for an
    encoder-decoder model, nothing for a model with one stack."""
    return STACKS[stack] if encoder_decoder else ""


def layer_tags(layer_strip: Sequence, stack: str) -> tuple[str, ...]:
    """Each layer's positional components joined ("rotary + window"), where the model mixes them layer
    by layer (:attr:`posviz.LoadedModel.layer_strip`, of its encoder stack); empty otherwise."""
    return tuple(" + ".join(scheme.components) for scheme in layer_strip) if stack == "encoder" else ()


def causal(profile: OffsetProfile) -> bool:
    """Whether no query put any weight on a later key (a decoder): only offsets ≤ 0 are shown then."""
    return not profile.sums[..., profile.tokens:].any()


def shown_offsets(profile: OffsetProfile, max_offset: int = MAX_OFFSET) -> np.ndarray:
    """bool [2n − 1]: the offsets a view shows, −K … K (… 0 for a causal model), K = min(max_offset, n − 1)."""
    k = min(max_offset, profile.tokens - 1)
    offsets = profile.offsets
    return (offsets >= -k) & (offsets <= (0 if causal(profile) else k))


def _source(profile: OffsetProfile) -> str:
    """Which input(s) a profile averages, in words."""
    if profile.inputs == 1:
        return f"one input of {profile.tokens:,} tokens"
    return f"mean over {profile.inputs} windows of {profile.tokens:,} tokens"


def _layer_names(layers: int, tags: Sequence[str], short: bool = False) -> list[str]:
    """"layer 3" (``short``: "L3"), with the layer's positional scheme where ``tags`` gives one ("· NoPE")."""
    word = "L" if short else "layer "
    return [f"{word}{layer}" + (f" · {tags[layer]}" if tags else "") for layer in range(layers)]


@view_id("offset-grid")
def offset_grid(profile: OffsetProfile, *, max_offset: int = MAX_OFFSET, stack: str = "",
                layer_tags: Sequence[str] = ()) -> View:
    """Mean attention weight by offset j − i for every layer and head: one row per (layer, head).

    The colour is log₁₀ of the weight (weights span decades: the previous token, a sink far away);
    hover gives the weight itself.

    Parameters
    ----------
    profile : OffsetProfile
    max_offset : int
        Offsets shown each side of 0.
    stack : str
        The stack's name in words, for the title (empty for a model with one stack).
    layer_tags : sequence of str
        Per layer, its positional scheme in a word or two, where the model mixes them layer by layer
        (:attr:`posviz.LoadedModel.layer_strip`): shown in the row labels. Empty: none.

    Returns
    -------
    View
        Arrays: ``mean_weight`` float64 [layers, heads, shown offsets], ``offsets``.
    """
    keep = shown_offsets(profile, max_offset)
    mean = profile.mean[..., keep]
    layers, heads, _ = mean.shape
    rows = mean.reshape(layers * heads, -1)
    labels = [f"{name} H{head}" for name in _layer_names(layers, layer_tags, short=True) for head in range(heads)]
    title = f"Attention by offset, every layer and head{f' · {stack}' if stack else ''}"
    fig = figures.grid_heatmaps({"": np.log10(np.maximum(rows, FLOOR))}, profile.offsets[keep], labels, title,
                                "offset j − i", "layer, head", "log₁₀ weight", zmin=np.log10(FLOOR), zmax=0,
                                values={"": rows}, value_name="mean weight",
                                notes=[_source(profile), f"offsets {profile.offsets[keep][0]} to "
                                       f"{profile.offsets[keep][-1]}; negative: keys before the query"])
    caption = ("Each row is one head: how much a query gives, on average, to the key j − i tokens away. A bright "
               "column at −1 is a previous-token head; one at 0 looks at itself; a slow fade is a local head.")
    return View(fig, title, {"mean_weight": mean, "offsets": profile.offsets[keep]}, caption)


@view_id("sink-grid")
def sink_grid(profile: OffsetProfile, *, stack: str = "", layer_tags: Sequence[str] = ()) -> View:
    """The share of attention on the first token (the attention sink) and on the previous token, per
    layer and head; ``layer_tags`` as for :func:`offset_grid`.

    Returns
    -------
    View
        Arrays: ``first_token`` and ``previous_token`` float64 [layers, heads] (shares, 0 … 1), ``layer``
        (0 … layers − 1: the CSV's rows; its columns ``first_token_<head>``, ``previous_token_<head>``).
    """
    layers, heads = profile.sink.shape
    title = f"Attention on the first and on the previous token{f' · {stack}' if stack else ''}"
    panels = {"on the first token (sink)": profile.sink, "on the previous token": profile.previous_share}
    fig = figures.grid_heatmaps(panels, np.arange(heads), _layer_names(layers, layer_tags), title,
                                "head", "layer", "share", zmin=0, zmax=1, value_name="share",
                                notes=[_source(profile)])
    caption = ("Mean share of each query's attention. A head near 1 on the first token parks its attention there "
               "(an attention sink, Xiao et al. 2024); near 1 on the previous token, it copies the last position.")
    arrays = {"first_token": profile.sink, "previous_token": profile.previous_share, "layer": np.arange(layers)}
    return View(fig, title, arrays, caption)


@view_id("head-offsets")
def head_offsets(profile: OffsetProfile, prediction: tuple[np.ndarray, np.ndarray] | None, *, layer: int, head: int,
                 scheme: str, score: str = "score", max_offset: int = MAX_OFFSET) -> View:
    """One head's mean weight by offset beside what the positional scheme alone gives those offsets.

    Parameters
    ----------
    profile : OffsetProfile
    prediction : (offsets, values) or None
        :func:`posviz.analysis.attention_offsets.scheme_by_offset`: values [heads or 1, offsets]; None
        for a model without positions (the left panel alone).
    layer, head : int
    scheme : str
        The scheme's name in words (the right panel's title).
    score : str
        What its score is called (``PositionEncoding.metric_label("dot")``: "P·Pᵀ", "K(m, n)", "bias").
    max_offset : int

    Returns
    -------
    View
        Arrays: ``offsets``, ``mean_weight``; with a prediction ``scheme_offsets``, ``scheme_score``.
    """
    keep = shown_offsets(profile, max_offset)
    offsets, weight = profile.offsets[keep], profile.mean[layer, head, keep]
    title = f"Layer {layer}, head {head}: attention by offset, and the positional scheme alone"
    panels = {"attention (model)": (offsets, {f"L{layer} H{head} mean weight": weight})}
    arrays = {"offsets": offsets, "mean_weight": weight}
    ylabels = ["mean weight"]
    if prediction is not None:
        at, values = prediction
        row = values[head] if values.shape[0] > 1 else values[0]
        inside = (at >= offsets.min()) & (at <= offsets.max())
        panels[f"{scheme} alone"] = (at[inside], {"score of positions alone": row[inside]})
        arrays |= {"scheme_offsets": at[inside], "scheme_score": row[inside]}
        ylabels.append(score)
    fig = figures.line_panels(panels, title, "offset j − i", ylabels, notes=[_source(profile)])
    caption = ("Left, what the trained head does; right, the score its positional scheme gives each offset with "
               "content removed (rotary: the kernel; ALiBi: −slope·|offset|; a learned table: P·Pᵀ by offset). "
               "Where the two share a shape, position drives the head." if prediction is not None else
               f"What the trained head does. Its layer's scheme ({scheme}) gives no score by offset, so there is "
               "nothing to set beside it: any shape here comes from content and from what earlier layers wrote.")
    return View(fig, title, arrays, caption)


@view_id("shares-by-query")
def shares_by_query(profile: OffsetProfile, *, layer: int, head: int) -> View:
    """One head's share on the first token and on the previous token at each query position (a causal
    query i sees i + 1 tokens: how the shares change with the input's length).

    Returns
    -------
    View
        Arrays: ``query``, ``first_token``, ``previous_token`` float64 [n].
    """
    sink, previous = profile.by_query("sink")[layer, head], profile.by_query("previous")[layer, head]
    title = f"Layer {layer}, head {head}: first and previous token, by query"
    fig = figures.line_figure({"on the first token (sink)": sink, "on the previous token": previous}, title,
                              "query position i", "share of attention")
    style.set_subtitle(fig, _source(profile))
    query = np.arange(profile.tokens)
    return View(fig, title, {"query": query, "first_token": sink, "previous_token": previous})
