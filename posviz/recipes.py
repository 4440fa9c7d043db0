"""Views made again from a model and their settings: what a figure's sidecar (:mod:`posviz.sidecar`) names.

A :class:`Recipe` is a view id (:attr:`posviz.views.View.id`) and the settings the page or the export
command gave it, JSON values only (numbers, text, true/false, lists, null). :func:`build` computes the
view from the model with the library's own functions, as the app's pages and the standard set
(:mod:`posviz.standard_set`) compute it; so a figure downloaded or exported with a recipe is the
figure ``build`` makes again, for the same model and versions.

The views that have a recipe are the keys of :data:`BUILDERS`: the standard set's and every view of the
Position similarity, Projection, Input representation, Model, Attention, Probes, Properties and Word
order pages, with the settings that make them there (the Attention page's: the stack, the tokens read
and generated, hidden special tokens, the block summary, the zoom's window, attention by offset of the
input or of the corpus). What is random is seeded by a setting (the probes' ``seed``; UMAP's seed is
fixed), a word order is kept as the order itself (a shuffle's seed is not needed to make it again).
Example::

    view = build(lm, recipe("q-profile", component="", metric="dot", q=128, head=None))
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from posviz.analysis.attention import STACKS, attention
from posviz.analysis.attention_budget import WINDOW_CELLS, Window, stack_heads, stack_layers
from posviz.analysis.attention_offsets import scheme_by_offset, stack_encoding
from posviz.analysis.attention_reading import (
    CORPUS_TOKENS, CORPUS_WINDOWS, attention_size, corpus_offsets, read_attention,
)
from posviz.analysis.generation import greedy_continuation
from posviz.analysis.identical_words import identical_word_attention
from posviz.analysis.input_representation import input_representation
from posviz.analysis.layer_probe import BUILTIN_TEXT, layer_position_probe
from posviz.analysis.locality import head_scores, position_only_attention
from posviz.analysis.probes import REGRESSIONS
from posviz.analysis.word_order import STAGES, compare_orders, removal_refused
from posviz.hub import CheckpointError
from posviz.loading import LoadedModel
from posviz.positions import sinusoidal
from posviz.positions.base import METRICS, PositionEncoding
from posviz.views import attention as attention_views
from posviz.views import attention_offsets as offset_views
from posviz.views import input as input_views
from posviz.views import patch_grid, positions
from posviz.views import probes as probe_views
from posviz.views import properties as property_views
from posviz.views import word_order as word_order_views
from posviz.views.limits import MAX_POSITIONS
from posviz.views.view import View


@dataclass(frozen=True)
class Recipe:
    """A view and the settings that make it (see the module's description).

    Attributes
    ----------
    view : str
        The view's id (:attr:`posviz.views.View.id`), a key of :data:`BUILDERS`.
    settings : dict of str to JSON values
        The keyword arguments of its builder, as :func:`recipe` made them plain.
    """

    view: str
    settings: dict[str, Any] = field(default_factory=dict)


def _plain(value):
    """A numpy scalar or array as the Python value JSON holds (for :func:`json.dumps`)."""
    if isinstance(value, (np.generic, np.ndarray)):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not a setting a sidecar can hold")


def recipe(view: str, **settings) -> Recipe:
    """The recipe of ``view`` with ``settings``, each made the plain JSON value a sidecar holds
    (tuples become lists, numpy numbers Python numbers), so that what is built now is what a
    sidecar's reader builds again.

    Raises
    ------
    TypeError
        For a setting that is not a JSON value (nor a numpy number or array).
    """
    return Recipe(view, json.loads(json.dumps(settings, default=_plain)))


# ---------------------------------------------------------------- checks shared by the builders


def _encoding(lm: LoadedModel, component: str) -> PositionEncoding:
    try:
        return lm.encoding(component)
    except KeyError as exc:
        raise ValueError(exc.args[0]) from exc


def _rows(encoding: PositionEncoding, first: int, last: int, model: str) -> None:
    n = encoding.num_positions
    if not 0 <= first <= last <= n - 1:
        raise ValueError(f"range {first} {last} does not fit: {model} has {n} {encoding.axis_label}s (0 to {n - 1}).")


def _matrix_encoding(lm: LoadedModel, component: str, metric: str) -> PositionEncoding:
    encoding = _encoding(lm, component)
    if not (encoding.has_vectors or encoding.has_bias):
        raise ValueError(f"{lm.short_name} has no position vectors or bias to compare: {encoding.describe()}")
    if metric not in METRICS:
        raise ValueError(f"metric {metric!r} is not one of {', '.join(METRICS)}.")
    return encoding


def _text(lm: LoadedModel, sentence: str) -> None:
    if not lm.reads_text:
        raise ValueError(f"{lm.short_name} reads no text (its input is {lm.input_kind}): it has no sentence views.")
    if not sentence or not sentence.strip():
        raise ValueError("Give a sentence: the input representation and attention figures need one.")


def encoder_attention(lm: LoadedModel, sentence: str, layer: int = 0, head: int = 0, text_pair: str | None = None
                      ) -> tuple[np.ndarray, list[str], list[str], str | None]:
    """The self-attention of ``sentence`` (and ``text_pair``) in the model's (encoder's) layers, checked
    against ``layer`` and ``head``.

    Returns
    -------
    patterns : np.ndarray
        float32 [layers, heads, n, n] (:func:`posviz.analysis.attention.attention`, its ``"encoder"`` stack).
    rows, cols : list of str
        The tokens.
    stack : str or None
        ``"encoder"`` for an encoder-decoder model (the figures' titles say so), else None.

    Raises
    ------
    ValueError
        A model that reads no text, an empty sentence, a layer or head the model does not have (one
        sentence naming what it has).
    """
    _text(lm, sentence)
    model = lm.short_name
    stack = "encoder" if lm.config.is_encoder_decoder else None
    patterns, rows, cols = attention(lm, sentence, text_pair).stack("encoder")
    layers, heads = patterns.shape[:2]
    if not 0 <= layer < layers:
        kind = "encoder layers" if stack else "layers"
        raise ValueError(f"layer {layer} does not exist: {model} has {layers} {kind} (0 to {layers - 1}).")
    if not 0 <= head < heads:
        raise ValueError(f"head {head} does not exist: {model} has {heads} heads per layer (0 to {heads - 1}).")
    return patterns, rows, cols, stack


# ---------------------------------------------------------------- the builders, one per view id


def _position_similarity(lm: LoadedModel, *, component: str = "", metric: str = "dot", first: int, last: int,
                         normalize: bool = False, clip: bool = True, head: int | None = None) -> View:
    encoding = _matrix_encoding(lm, component, metric)
    _rows(encoding, first, last, lm.short_name)
    return positions.position_similarity(positions.matrix(encoding, metric, first, last), normalize=normalize,
                                         clip=clip, head=head)


def _q_profile(lm: LoadedModel, *, component: str = "", metric: str = "dot", q: int,
               head: int | None = None) -> View:
    encoding = _matrix_encoding(lm, component, metric)
    n = encoding.num_positions
    if not 0 <= q <= n - 1:
        raise ValueError(f"q = {q} does not exist: {lm.short_name} has {n} {encoding.axis_label}s "
                         f"(q from 0 to {n - 1}).")
    return positions.q_profile(positions.matrix(encoding, metric, 0, n - 1), q, head=head)


def _projection(lm: LoadedModel, *, component: str = "", method: str = "pca", dims: int = 2, first: int = 0,
                last: int | None = None, boundaries: list[int] = (), path: bool = False,
                colour: str = "range") -> View:
    encoding = _encoding(lm, component)
    if not encoding.has_vectors:
        raise ValueError(f"{lm.short_name} has no position vectors to project: {encoding.describe()}")
    _rows(encoding, first, encoding.num_positions - 1 if last is None else last, lm.short_name)
    coords, rows = positions.projection_coordinates(encoding, method, dims, first, last)
    return positions.projection(coords, rows, encoding.vector_name, method=method, boundaries=list(boundaries),
                                path=path, grid=encoding.grid, colour=colour)


def _position_vectors(lm: LoadedModel, *, component: str = "", first: int, last: int) -> View:
    encoding = _encoding(lm, component)
    _rows(encoding, first, last, lm.short_name)
    return positions.vectors(encoding, first, last)


def _kernel_bands(lm: LoadedModel, *, component: str = "", span: int) -> View:
    return positions.kernel_bands(_encoding(lm, component), span)


def _grid_encoding(lm: LoadedModel, component: str) -> PositionEncoding:
    encoding = _encoding(lm, component)
    if encoding.grid is None:
        raise ValueError(f"The positions of {lm.short_name} are not a grid of image patches.")
    return encoding


def _patch_grid(lm: LoadedModel, *, component: str = "") -> View:
    return patch_grid.patch_grid(_grid_encoding(lm, component))


def _patch_grid_special(lm: LoadedModel, *, component: str = "") -> View:
    view = patch_grid.special_rows(_grid_encoding(lm, component))
    if view is None:
        raise ValueError(f"{lm.short_name} has no token before its patches (a CLS token) to map.")
    return view


def _signature(lm: LoadedModel, *, component: str = "") -> View:
    view = positions.signature(_encoding(lm, component))
    if view is None:
        raise ValueError(f"{lm.short_name} has no signature figure: {_encoding(lm, component).describe()}")
    return view


def _layer_strip(lm: LoadedModel) -> View:
    if not lm.layer_strip:
        raise ValueError(f"The layers of {lm.short_name} all have the same positional scheme: no layer strip.")
    return positions.layer_strip(lm.layer_strip)


def _input(lm: LoadedModel, sentence: str, text_pair: str | None):
    _text(lm, sentence)
    if not lm.family.token:
        raise ValueError(f"posviz does not know where {lm.model_type} keeps its token embeddings.")
    return input_representation(lm, sentence, text_pair)


def _input_norms(lm: LoadedModel, *, sentence: str, text_pair: str | None = None) -> View:
    return input_views.part_norms(_input(lm, sentence, text_pair))


def _input_vectors(lm: LoadedModel, *, sentence: str, text_pair: str | None = None, part: str) -> View:
    emb = _input(lm, sentence, text_pair)
    if part not in emb.parts:
        raise ValueError(f"part {part!r} is not one of {', '.join(emb.parts)}.")
    return input_views.part_vectors(emb, part)


def _input_similarity(lm: LoadedModel, *, sentence: str, text_pair: str | None = None) -> View:
    return input_views.input_similarity(_input(lm, sentence, text_pair))


def _runs(lm: LoadedModel, sentence: str | None = None) -> None:
    """Refuse a model whose layers cannot run: no text input, only its positions loaded; and an empty sentence."""
    if sentence is not None:
        _text(lm, sentence)
    elif not lm.reads_text:
        raise ValueError(f"{lm.short_name} reads no text (its input is {lm.input_kind}): it has no such view.")
    if lm.positions_only:
        raise ValueError(f"Only the positions of {lm.short_name} were loaded: this view runs the model, load it "
                         "whole.")


def _continuation(lm: LoadedModel, sentence: str, text_pair: str | None, limit: int | None,
                  generate: int) -> tuple[int, ...]:
    """The greedy continuation the Attention page reads after the sentence (``generate`` tokens; none for 0)."""
    if not generate:
        return ()
    try:
        return tuple(greedy_continuation(lm, sentence, generate, text_pair=text_pair, limit=limit))
    except CheckpointError as exc:
        raise ValueError(f"{lm.short_name} cannot generate: its output head cannot be read ({exc}).") from exc


def _stack(lm: LoadedModel, stack: str, layer: int, head: int) -> None:
    """Refuse a stack, layer or head the model does not have, in one sentence naming what it has."""
    model = lm.short_name
    if stack not in STACKS:
        raise ValueError(f"stack {stack!r} is not one of {', '.join(STACKS)}.")
    if stack != "encoder" and not lm.config.is_encoder_decoder:
        raise ValueError(f"{model} has no {stack} stack: it is not an encoder-decoder model.")
    layers, heads = stack_layers(lm, stack), stack_heads(lm, stack)
    kind = f"{stack} layers" if lm.config.is_encoder_decoder else "layers"
    if not 0 <= layer < layers:
        raise ValueError(f"layer {layer} does not exist: {model} has {layers} {kind} (0 to {layers - 1}).")
    if not 0 <= head < heads:
        raise ValueError(f"head {head} does not exist: {model} has {heads} heads per layer (0 to {heads - 1}).")


def _prepared(lm: LoadedModel, *, sentence: str, text_pair: str | None, stack: str, limit: int | None,
              generate: int, layer: int, head: int) -> tuple[int, ...]:
    """Check the input and the stack's layer and head; the continuation read after the sentence."""
    _runs(lm, sentence)
    _stack(lm, stack, layer, head)
    return _continuation(lm, sentence, text_pair, limit, generate)


def _layer_view(which: int) -> Callable[..., View]:
    """The builder of one of the three views of :func:`posviz.views.attention.layer_views`."""
    def build_layer(lm: LoadedModel, *, sentence: str, text_pair: str | None = None, target: str | None = None,
                    stack: str = "encoder", limit: int | None = None, generate: int = 0, layer: int, head: int = 0,
                    hide_special: bool = False, blocks: str = "mean", clip: bool = False) -> View:
        if blocks not in ("mean", "max"):
            raise ValueError(f"blocks {blocks!r} is not one of mean, max.")
        generated = _prepared(lm, sentence=sentence, text_pair=text_pair, stack=stack, limit=limit,
                              generate=generate, layer=layer, head=head)
        found = read_attention(lm, sentence, text_pair, target=target, stack=stack, layers=[layer], limit=limit,
                               continuation=generated)
        special = set(lm.tokenizer.all_special_tokens) if hide_special else None
        return attention_views.layer_views(found, layer, head, encoder_decoder=bool(lm.config.is_encoder_decoder),
                                           generated=len(generated), reduction=blocks, special=special,
                                           clip=clip)[which]
    return build_layer


def _attention_window(lm: LoadedModel, *, sentence: str, text_pair: str | None = None, target: str | None = None,
                      stack: str = "encoder", limit: int | None = None, generate: int = 0, layer: int, head: int,
                      zoom: list[int], clip: bool = False) -> View:
    generated = _prepared(lm, sentence=sentence, text_pair=text_pair, stack=stack, limit=limit, generate=generate,
                          layer=layer, head=head)
    queries, keys = attention_size(lm, sentence, text_pair, target=target, stack=stack, limit=limit,
                                   generated=len(generated))
    window = Window(*zoom)
    if window.clipped(queries, keys, WINDOW_CELLS) != window:
        raise ValueError(f"zoom {' '.join(map(str, zoom))} does not fit: the pattern has {queries} queries and "
                         f"{keys} keys, a window at most {WINDOW_CELLS} a side (queries q0 to q1 - 1, keys k0 to "
                         "k1 - 1).")
    found = read_attention(lm, sentence, text_pair, target=target, stack=stack, layers=[layer], window=window,
                           limit=limit, continuation=generated)
    return attention_views.window_view(found, layer, head, window, generated=len(generated),
                                       encoder_decoder=bool(lm.config.is_encoder_decoder), clip=clip)


def _profile(lm: LoadedModel, *, sentence: str, text_pair: str | None, target: str | None, stack: str,
             limit: int | None, generate: int, over: str, layer: int = 0, head: int = 0):
    """The offset profile the Attention page reads by offset: of its input (every layer of ``stack``), or
    of the probes' text (``over="corpus"``, :func:`posviz.analysis.attention_reading.corpus_offsets`)."""
    if stack == "cross":
        raise ValueError("Offsets j - i compare positions in one sequence: the cross stack has none.")
    if over not in ("input", "corpus"):
        raise ValueError(f"over {over!r} is not one of input, corpus.")
    if over == "corpus" and stack != "encoder":
        raise ValueError("The corpus profile is of the encoder stack only.")
    generated = _prepared(lm, sentence=sentence, text_pair=text_pair, stack=stack, limit=limit,
                          generate=generate if over == "input" else 0, layer=layer, head=head)
    if over == "corpus":
        return corpus_offsets(lm, BUILTIN_TEXT, tokens=CORPUS_TOKENS, windows=CORPUS_WINDOWS)
    return read_attention(lm, sentence, text_pair, target=target, stack=stack, layers=[], limit=limit,
                          continuation=generated).offsets


def _offset_grid(lm: LoadedModel, *, sentence: str, text_pair: str | None = None, target: str | None = None,
                 stack: str = "encoder", limit: int | None = None, generate: int = 0, over: str = "input",
                 max_offset: int = offset_views.MAX_OFFSET) -> View:
    profile = _profile(lm, sentence=sentence, text_pair=text_pair, target=target, stack=stack, limit=limit,
                       generate=generate, over=over)
    return offset_views.offset_grid(profile, max_offset=max_offset,
                                    stack=offset_views.stack_name(stack, bool(lm.config.is_encoder_decoder)),
                                    layer_tags=offset_views.layer_tags(lm.layer_strip, stack))


def _sink_grid(lm: LoadedModel, *, sentence: str, text_pair: str | None = None, target: str | None = None,
               stack: str = "encoder", limit: int | None = None, generate: int = 0, over: str = "input") -> View:
    profile = _profile(lm, sentence=sentence, text_pair=text_pair, target=target, stack=stack, limit=limit,
                       generate=generate, over=over)
    return offset_views.sink_grid(profile, stack=offset_views.stack_name(stack, bool(lm.config.is_encoder_decoder)),
                                  layer_tags=offset_views.layer_tags(lm.layer_strip, stack))


def _head_offsets(lm: LoadedModel, *, sentence: str, text_pair: str | None = None, target: str | None = None,
                  stack: str = "encoder", limit: int | None = None, generate: int = 0, over: str = "input",
                  layer: int, head: int, max_offset: int = offset_views.MAX_OFFSET) -> View:
    profile = _profile(lm, sentence=sentence, text_pair=text_pair, target=target, stack=stack, limit=limit,
                       generate=generate, over=over, layer=layer, head=head)
    encoding = stack_encoding(lm, stack, layer)
    return offset_views.head_offsets(profile, scheme_by_offset(encoding, profile.tokens), layer=layer, head=head,
                                     scheme=encoding.label, score=encoding.metric_label("dot"), max_offset=max_offset)


def _shares_by_query(lm: LoadedModel, *, sentence: str, text_pair: str | None = None, target: str | None = None,
                     stack: str = "encoder", limit: int | None = None, generate: int = 0, over: str = "input",
                     layer: int, head: int) -> View:
    profile = _profile(lm, sentence=sentence, text_pair=text_pair, target=target, stack=stack, limit=limit,
                       generate=generate, over=over, layer=layer, head=head)
    return offset_views.shares_by_query(profile, layer=layer, head=head)


# ---------------------------------------------------------------- the Probes, Properties and Word order pages


def _vector_encoding(lm: LoadedModel, component: str) -> PositionEncoding:
    encoding = _encoding(lm, component)
    if not encoding.has_vectors:
        raise ValueError(f"{lm.short_name} has no position vectors: {encoding.describe()}")
    return encoding


def _probe_predictions(lm: LoadedModel, *, component: str = "", seed: int = 0, regression: str = "ridge") -> View:
    encoding = _vector_encoding(lm, component)
    if regression not in REGRESSIONS:
        raise ValueError(f"regression {regression!r} is not one of {', '.join(REGRESSIONS)}.")
    found = {source: probe_views.absolute_probe(encoding, source, seed, regression) for source in probe_views.SOURCES}
    return probe_views.probe_predictions(found, probe_views.source_names(lm.name, encoding, seed), encoding.axis_label)


def _layer_probe(lm: LoadedModel, *, sentence: str | None = None, seed: int = 0, regression: str = "ridge") -> View:
    _runs(lm, sentence)
    if regression not in REGRESSIONS:
        raise ValueError(f"regression {regression!r} is not one of {', '.join(REGRESSIONS)}.")
    found = layer_position_probe(lm, BUILTIN_TEXT if sentence is None else sentence, seed=seed, regression=regression)
    return probe_views.layer_probe(found, encoder_decoder=bool(lm.config.is_encoder_decoder), max_tokens=lm.max_tokens,
                                   hidden=_hidden(lm))


def _hidden(lm: LoadedModel) -> int:
    return int(lm.config.get_text_config().hidden_size)


def _properties(lm: LoadedModel, component: str, metric: str, count: int):
    """The page's two sets of properties (the model's, the sinusoid's), their names and the encoding."""
    encoding = _vector_encoding(lm, component)
    if metric not in METRICS:
        raise ValueError(f"metric {metric!r} is not one of {', '.join(METRICS)}.")
    top = min(encoding.num_positions, MAX_POSITIONS)
    if not 3 <= count <= top:
        raise ValueError(f"count {count} does not fit: {lm.short_name} shows 3 to {top} {encoding.axis_label}s.")
    return (property_views.encoding_properties(encoding, metric, count),
            property_views.sinusoid_properties(encoding.reference_width, metric, count),
            property_views.compared_names(lm.name, encoding), encoding)


def _monotonicity(lm: LoadedModel, *, component: str = "", metric: str = "dot", count: int) -> View:
    mine, ref, names, _ = _properties(lm, component, metric, count)
    return property_views.monotonicity_profile(mine, ref, names)


def _translation_invariance(lm: LoadedModel, *, component: str = "", metric: str = "dot", count: int) -> View:
    mine, ref, names, encoding = _properties(lm, component, metric, count)
    return property_views.translation_bands(mine, ref, names, encoding.metric_label(metric))


def _symmetry(lm: LoadedModel, *, component: str = "", metric: str = "dot", count: int) -> View:
    mine, ref, names, _ = _properties(lm, component, metric, count)
    return property_views.symmetry_profile(mine, ref, names)


def _identical_words(lm: LoadedModel, words: int, length: int, keep_special: bool):
    """The identical-word attention of layer 0 as the page shows it: (matrices, row 0's position, causal)."""
    _runs(lm)
    if lm.family.unread_attention:
        raise ValueError(f"posviz cannot read the attention of {lm.short_name}: {lm.family.unread_attention}")
    found = identical_word_attention(lm, words, length)
    return *found.shown(keep_special), found.causal


def _identical_word_attention(lm: LoadedModel, *, words: int = 16, length: int = 64,
                              keep_special: bool = False) -> View:
    matrices, first, causal = _identical_words(lm, words, length, keep_special)
    return property_views.identical_word_tiles(matrices, head_scores(matrices, causal), keep_special=keep_special,
                                               first=first)


def _identical_by_offset(lm: LoadedModel, *, component: str = "", words: int = 16, length: int = 64,
                         keep_special: bool = False) -> View:
    encoding = _encoding(lm, component)
    matrices, _, _ = _identical_words(lm, words, length, keep_special)
    width = encoding.reference_width if encoding.has_vectors else _hidden(lm)
    reference = position_only_attention(sinusoidal(matrices.shape[-1], width))
    return property_views.attention_by_offset(matrices, reference, width)


def _orders(lm: LoadedModel, sentence: str, order: list[int], without_positions: bool):
    """:func:`posviz.analysis.word_order.compare_orders`, the positions removed where asked (and possible)."""
    _runs(lm, sentence)
    if without_positions:
        refused = removal_refused(lm)
        if refused:
            raise ValueError(refused)
    return compare_orders(lm, sentence, order, without_positions)


def _word_order_difference(lm: LoadedModel, *, sentence: str, order: list[int]) -> View:
    kept = _orders(lm, sentence, order, False)
    return word_order_views.difference_bars(kept, None if removal_refused(lm) else _orders(lm, sentence, order, True))


def _word_order_vectors(lm: LoadedModel, *, sentence: str, order: list[int], without_positions: bool = False,
                        stage: str = "output") -> View:
    if stage not in STAGES:
        raise ValueError(f"stage {stage!r} is not one of {', '.join(STAGES)}.")
    return word_order_views.stage_vectors(_orders(lm, sentence, order, without_positions), stage)


#: View id -> the function that makes it from a model and the recipe's settings (keyword arguments).
BUILDERS: dict[str, Callable[..., View]] = {
    "position-similarity": _position_similarity,
    "q-profile": _q_profile,
    "projection": _projection,
    "position-vectors": _position_vectors,
    "kernel-bands": _kernel_bands,
    "patch-grid": _patch_grid,
    "patch-grid-special": _patch_grid_special,
    "signature": _signature,
    "layer-strip": _layer_strip,
    "input-norms": _input_norms,
    "input-vectors": _input_vectors,
    "input-similarity": _input_similarity,
    "attention-head": _layer_view(0),
    "attention-mean": _layer_view(1),
    "attention-grid": _layer_view(2),
    "attention-window": _attention_window,
    "offset-grid": _offset_grid,
    "sink-grid": _sink_grid,
    "head-offsets": _head_offsets,
    "shares-by-query": _shares_by_query,
    "probe-predictions": _probe_predictions,
    "layer-probe": _layer_probe,
    "monotonicity": _monotonicity,
    "translation-invariance": _translation_invariance,
    "symmetry": _symmetry,
    "identical-word-attention": _identical_word_attention,
    "attention-by-offset": _identical_by_offset,
    "word-order-difference": _word_order_difference,
    "word-order-vectors": _word_order_vectors,
}


def check(found: Recipe) -> None:
    """Refuse a recipe no builder takes, before any model is loaded.

    Raises
    ------
    ValueError
        For a view id not in :data:`BUILDERS`, or settings its builder does not take (an unknown
        name, a missing one), in one sentence.
    """
    builder = BUILDERS.get(found.view)
    if builder is None:
        raise ValueError(f"posviz cannot make the view {found.view!r} again; it can make "
                         f"{', '.join(sorted(BUILDERS))}.")
    try:
        inspect.signature(builder).bind(None, **found.settings)
    except TypeError as exc:
        raise ValueError(f"the settings of {found.view} do not fit it ({exc}).") from exc


def build(lm: LoadedModel, found: Recipe) -> View:
    """The view a recipe names, computed from ``lm``.

    Parameters
    ----------
    lm : LoadedModel
    found : Recipe

    Returns
    -------
    View
        Its :attr:`~posviz.views.View.id` is ``found.view``; its figure is not yet named after the
        model nor styled for a projector (:func:`posviz.views.style.name_model`,
        :func:`posviz.views.style.for_presentation` do that, as the app and the export do).

    Raises
    ------
    ValueError
        For a recipe :func:`check` refuses, or settings the model does not have (a component, a range,
        a layer or head, a sentence view of a model that reads no text), in one sentence.
    """
    check(found)
    return BUILDERS[found.view](lm, **found.settings)
