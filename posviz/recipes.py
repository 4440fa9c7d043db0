"""Views made again from a model and their settings: what a figure's sidecar (:mod:`posviz.sidecar`) names.

A :class:`Recipe` is a view id (:attr:`posviz.views.View.id`) and the settings the page or the export
command gave it, JSON values only (numbers, text, true/false, lists, null). :func:`build` computes the
view from the model with the library's own functions, as the app's pages and the standard set
(:mod:`posviz.standard_set`) compute it; so a figure downloaded or exported with a recipe is the
figure ``build`` makes again, for the same model and versions.

The views that have a recipe are the keys of :data:`BUILDERS` (the standard set's, the other views of
the Position similarity, Projection, Input representation and Model pages, and the Attention page's
layer views of a whole encoder input). Example::

    view = build(lm, recipe("q-profile", component="", metric="dot", q=128, head=None))
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from posviz.analysis.attention import attention
from posviz.analysis.attention_reading import read_attention
from posviz.analysis.input_representation import input_representation
from posviz.loading import LoadedModel
from posviz.positions.base import METRICS, PositionEncoding
from posviz.views import attention as attention_views
from posviz.views import attention_offsets as offset_views
from posviz.views import input as input_views
from posviz.views import patch_grid, positions
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


def _attention_head(lm: LoadedModel, *, sentence: str, text_pair: str | None = None, layer: int, head: int) -> View:
    patterns, rows, cols, stack = encoder_attention(lm, sentence, layer, head, text_pair)
    return attention_views.attention_head(patterns[layer], rows, cols, layer=layer, head=head, stack=stack)


def _attention_mean(lm: LoadedModel, *, sentence: str, text_pair: str | None = None, layer: int) -> View:
    patterns, rows, cols, stack = encoder_attention(lm, sentence, layer, text_pair=text_pair)
    return attention_views.attention_mean(patterns[layer], rows, cols, layer=layer, stack=stack)


def _attention_grid(lm: LoadedModel, *, sentence: str, text_pair: str | None = None, layer: int) -> View:
    patterns, rows, cols, stack = encoder_attention(lm, sentence, layer, text_pair=text_pair)
    return attention_views.attention_grid(patterns[layer], rows, cols, layer=layer, stack=stack)


def _offset_grid(lm: LoadedModel, *, sentence: str) -> View:
    _text(lm, sentence)
    return offset_views.offset_grid(read_attention(lm, sentence, layers=[]).offsets)  # the encoder's offsets


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
    "attention-head": _attention_head,
    "attention-mean": _attention_mean,
    "attention-grid": _attention_grid,
    "offset-grid": _offset_grid,
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
