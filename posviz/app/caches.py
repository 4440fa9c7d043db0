"""The app's caches: one model store per process, and every heavy result keyed by plain values.

Results are cached by the model's :class:`~posviz.store.ModelKey` and the view's settings, never by
tensors, so moving a slider does not repeat a forward pass. Each function here is the cached form of
one library computation; the pages call these, then a view of :mod:`posviz.views`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

import numpy as np
import streamlit as st

from posviz.analysis import identical_words as iw
from posviz.analysis.attention import attention
from posviz.analysis.attention_budget import Window
from posviz.analysis.attention_offsets import OffsetProfile, scheme_by_offset
from posviz.analysis.attention_reading import AttentionReading, corpus_offsets, read_attention
from posviz.analysis.attention_reading import attention_size as reading_size
from posviz.analysis.generation import greedy_continuation, is_causal
from posviz.analysis.input_representation import InputRepresentation, input_representation
from posviz.analysis.layer_probe import BUILTIN_TEXT, LayerProbeResult, layer_position_probe
from posviz.analysis.locality import attention_scores, head_scores, position_only_attention
from posviz.analysis.probes import ProbeResult
from posviz.analysis.properties import PositionProperties
from posviz.analysis.similarity import PositionMatrix
from posviz.analysis.word_order import WordOrderComparison, compare_orders
from posviz.app import gates
from posviz.loading import LoadedModel
from posviz.model_table import ModelTable, Progress, compare_models
from posviz.positions import PositionEncoding, sinusoidal
from posviz.positions.sinusoid import reference_sinusoid
from posviz.store import BUNDLED, ModelKey, ModelStore
from posviz.tokenization import SentenceWords, split_words
from posviz.views import attention as attention_views
from posviz.views import attention_offsets as offset_views
from posviz.views import positions, probes
from posviz.views import properties as property_views
from posviz.views.view import View


@st.cache_resource(show_spinner=False)
def model_store() -> ModelStore:
    """The process's :class:`~posviz.store.ModelStore`, shared by every session."""
    return ModelStore()


def loaded_model(key: ModelKey, progress: Callable[[str], None] | None = None) -> LoadedModel:
    """The model for ``key``, loaded once per process and shared by every session.

    ``progress`` is called with each loading step when the model is not loaded yet (Streamlit's
    ``st.cache_resource`` would forbid that callback from writing to the sidebar).

    Raises
    ------
    posviz.ModelLoadError
    """
    return model_store().get(key, progress)


def encoding(key: ModelKey, component: str) -> PositionEncoding:
    """The model's positional component of that name (:meth:`posviz.LoadedModel.encoding`)."""
    return loaded_model(key).encoding(component)


@st.cache_data(show_spinner=False, max_entries=32)
def position_matrix(key: ModelKey, component: str, metric: str, first: int, last: int) -> PositionMatrix:
    """:func:`posviz.views.positions.matrix` of a component over rows ``first .. last``."""
    return positions.matrix(encoding(key, component), metric, first, last)


@st.cache_data(show_spinner=False, max_entries=8)
def sinusoid_matrix(width: int, layout: str, metric: str, first: int, last: int) -> PositionMatrix:
    """The same for the fixed sinusoid of ``width`` (:func:`posviz.positions.sinusoid.reference_sinusoid`)."""
    return positions.matrix(reference_sinusoid(last + 1, width, layout), metric, first, last)


@st.cache_data(show_spinner=False, max_entries=16)
def projection(key: ModelKey, component: str, method: str, dims: int, first: int, last: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`posviz.views.positions.projection_coordinates` of a component over rows ``first .. last``:
    (coords, positions)."""
    gates.wait_for_libraries()  # umap-learn and scikit-learn imported by the warm-up, never beside it
    return positions.projection_coordinates(encoding(key, component), method, dims, first, last)


#: Most model tables kept (:func:`model_table`).
MODEL_TABLES = 8


@st.cache_resource(show_spinner=False)
def _model_tables() -> tuple[OrderedDict, threading.Lock]:
    """The model tables of the process, least recently used first, and the lock that guards them."""
    return OrderedDict(), threading.Lock()


def model_table(keys: tuple[ModelKey, ...], metric: str, seed: int,
                progress: Callable[[Progress], None] | None = None) -> ModelTable:
    """:func:`posviz.model_table.compare_models` of ``keys`` through the process's model store, kept for every
    session (the last :data:`MODEL_TABLES`) unless a model failed to load (a network that comes back, a folder
    made since). ``progress`` sees each model's steps where the table is computed now (not
    ``st.cache_data``: its callback draws on the page, which a cached function may not do).

    Raises
    ------
    ValueError
        As :func:`~posviz.model_table.compare_models` (no key, more than 8).
    """
    tables, lock = _model_tables()
    wanted = (keys, metric, seed)
    with lock:
        found = tables.get(wanted)
        if found is not None:
            tables.move_to_end(wanted)
            return found
    gates.wait_for_libraries()  # scikit-learn imported by the warm-up, never beside it
    found = compare_models(keys, store=model_store(), metric=metric, seed=seed, progress=progress)
    if not found.failed:
        with lock:
            tables[wanted] = found
            while len(tables) > MODEL_TABLES:
                tables.popitem(last=False)
    return found


@st.cache_data(show_spinner=False, max_entries=16)
def input_parts(key: ModelKey, text: str, text_pair: str | None) -> InputRepresentation:
    """:func:`posviz.input_representation` of a sentence (and a second one)."""
    return input_representation(loaded_model(key), text, text_pair)


def _read_only(*arrays: np.ndarray | None) -> None:
    for found in arrays:
        if found is not None:
            found.setflags(write=False)


@st.cache_resource(show_spinner=False, max_entries=8)
def attention_reading(key: ModelKey, text: str, text_pair: str | None, target: str | None, stack: str,
                      layers: tuple[int, ...] | None, window: Window | None, limit: int | None,
                      continuation: tuple[int, ...]) -> AttentionReading:
    """:func:`posviz.analysis.attention_reading.read_attention` (``target``: the decoder's sentence of an
    encoder-decoder model, None or empty for the source sentence; ignored by other models).

    Every argument is passed by every caller, in order, none left to a default: Streamlit's key is
    made from the arguments as passed, so a call that leaves one to its default has a key of its own
    (the warm-up's reading would not be the page's).

    Kept as one object shared by every run (``st.cache_resource``), its arrays read-only: a copy
    per run (``st.cache_data`` unpickles one) is 75 MB and some 60 ms at 512 tokens.

    Raises
    ------
    posviz.analysis.attention_budget.AttentionBudgetError
        When the reading would exceed the memory budget (the page estimates first and does not ask).
    """
    found = read_attention(loaded_model(key), text, text_pair, target=target or None, stack=stack,
                           layers=layers, window=window, limit=limit, continuation=continuation)
    for kept in found.layers.values():
        _read_only(kept.patterns, kept.block_mean, kept.block_max, kept.window_patterns)
    if found.offsets is not None:
        _read_only(found.offsets.sums, found.offsets.first, found.offsets.previous)
    return found


@st.cache_data(show_spinner=False, max_entries=32)
def attention_tops(key: ModelKey, text: str, text_pair: str | None, target: str | None, stack: str,
                   layers: tuple[int, ...] | None, window: Window | None, limit: int | None,
                   continuation: tuple[int, ...], reduction: str, hide_special: bool, clip: bool) -> dict[int, float]:
    """:func:`posviz.views.attention.layer_tops` of :func:`attention_reading` (its arguments first, as
    there): the colour scale of every layer kept, found once per reading and setting, not at each move
    of the layer slider (with ``hide_special``, the tokenizer's special tokens hidden)."""
    lm = loaded_model(key)
    reading = attention_reading(key, text, text_pair, target, stack, layers, window, limit, continuation)
    return attention_views.layer_tops(reading, generated=len(continuation), reduction=reduction, clip=clip,
                                      special=set(lm.tokenizer.all_special_tokens) if hide_special else None)


@st.cache_data(show_spinner=False, max_entries=32)
def attention_size(key: ModelKey, text: str, text_pair: str | None, target: str | None, stack: str,
                   limit: int | None, generated: int) -> tuple[int, int]:
    """:func:`posviz.analysis.attention_reading.attention_size`: (queries, keys) of the attention
    :func:`attention_reading` would read, counted before any model runs (every argument passed, as
    there)."""
    return reading_size(loaded_model(key), text, text_pair, target=target, stack=stack, limit=limit,
                        generated=generated)


@st.cache_data(show_spinner=False, max_entries=16)
def causal(key: ModelKey) -> bool:
    """:func:`posviz.analysis.generation.is_causal`: a decoder-only model."""
    return is_causal(loaded_model(key))


@st.cache_data(show_spinner=False, max_entries=16)
def continuation(key: ModelKey, text: str, text_pair: str | None, limit: int | None, tokens: int) -> tuple[int, ...]:
    """:func:`posviz.analysis.generation.greedy_continuation` of the sentence (and the second one)."""
    return tuple(greedy_continuation(loaded_model(key), text, tokens, text_pair=text_pair, limit=limit))


@st.cache_resource(show_spinner=False, max_entries=4)
def corpus_profile(key: ModelKey, tokens: int, windows: int) -> OffsetProfile:
    """:func:`posviz.analysis.attention_reading.corpus_offsets` over the probes' text
    (:data:`posviz.analysis.layer_probe.BUILTIN_TEXT`)."""
    return corpus_offsets(loaded_model(key), BUILTIN_TEXT, tokens=tokens, windows=windows)


@st.cache_resource(show_spinner=False, max_entries=16)
def offset_overview(source: tuple, _profile: OffsetProfile, max_offset: int, stack: str,
                    layer_tags: tuple[str, ...] = ()) -> tuple[View, View]:
    """The two views of every layer and head by offset (:func:`posviz.views.attention_offsets.offset_grid`,
    :func:`~posviz.views.attention_offsets.sink_grid`) of a cached profile, built once: moving the layer or
    head slider does not build them again (some 50 ms). ``source`` names the profile (the arguments of the
    cached reading or corpus it comes from); the profile itself is not hashed. ``layer_tags``: each layer's
    positional scheme where the model mixes them."""
    return (offset_views.offset_grid(_profile, max_offset=max_offset, stack=stack, layer_tags=layer_tags),
            offset_views.sink_grid(_profile, stack=stack, layer_tags=layer_tags))


@st.cache_data(show_spinner=False, max_entries=16)
def scheme_prediction(key: ModelKey, component: str, tokens: int) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`posviz.analysis.attention_offsets.scheme_by_offset` of a positional component."""
    return scheme_by_offset(encoding(key, component), tokens)


@st.cache_data(show_spinner=False, max_entries=8)
def previous_token_head(text: str) -> tuple[int, int, float]:
    """(layer, head, weight): the head of the bundled model that puts the most attention, on average,
    on the token just before the query (query i → key i − 1)."""
    patterns = attention(loaded_model(BUNDLED), text).patterns
    previous = np.diagonal(patterns, offset=-1, axis1=2, axis2=3).mean(axis=-1)  # [layers, heads]
    layer, head = np.unravel_index(previous.argmax(), previous.shape)
    return int(layer), int(head), float(previous[layer, head])


@st.cache_data(show_spinner=False, max_entries=32)
def absolute_probe(key: ModelKey, component: str, source: str, seed: int, regression: str) -> ProbeResult:
    """:func:`posviz.views.probes.absolute_probe` of one probed matrix (:data:`posviz.views.probes.SOURCES`)."""
    gates.wait_for_libraries()
    return probes.absolute_probe(encoding(key, component), source, seed, regression)


@st.cache_data(show_spinner=False, max_entries=32)
def relative_probe(key: ModelKey, component: str, source: str, seed: int, pairs: int) -> ProbeResult:
    """:func:`posviz.views.probes.relative_probe` of one probed matrix."""
    gates.wait_for_libraries()
    return probes.relative_probe(encoding(key, component), source, seed, pairs)


@st.cache_data(show_spinner=False, max_entries=8)
def layer_probe(key: ModelKey, text: str, seed: int, regression: str) -> LayerProbeResult:
    """:func:`posviz.analysis.layer_probe.layer_position_probe`, without the hidden states themselves."""
    gates.wait_for_libraries()
    found = layer_position_probe(loaded_model(key), text, seed=seed, regression=regression)
    return found.without_states()


@st.cache_data(show_spinner=False, max_entries=16)
def model_properties(key: ModelKey, component: str, metric: str, count: int) -> PositionProperties:
    """:func:`posviz.views.properties.encoding_properties` of a component over rows 0 … count − 1."""
    gates.wait_for_libraries()
    return property_views.encoding_properties(encoding(key, component), metric, count)


@st.cache_data(show_spinner=False, max_entries=16)
def sinusoid_properties(width: int, metric: str, count: int) -> PositionProperties:
    """:func:`posviz.views.properties.sinusoid_properties`: the same for the interleaved sinusoid of ``width``."""
    gates.wait_for_libraries()
    return property_views.sinusoid_properties(width, metric, count)


@st.cache_data(show_spinner=False, max_entries=8)
def identical_words(key: ModelKey, words: int, length: int) -> iw.IdenticalWordAttention:
    """:func:`posviz.analysis.identical_words.identical_word_attention` (layer 0)."""
    return iw.identical_word_attention(loaded_model(key), words, length)


@st.cache_data(show_spinner=False, max_entries=8)
def shown_identical_words(key: ModelKey, words: int, length: int, keep_special: bool
                          ) -> tuple[np.ndarray, int, dict]:
    """The identical-word attention shown, float32 [heads, L, L], the position of its row 0
    (:meth:`posviz.analysis.identical_words.IdenticalWordAttention.shown`), and
    :func:`posviz.analysis.locality.head_scores` of every head and, last, of the heads' mean."""
    att = identical_words(key, words, length)
    matrices, first = att.shown(keep_special)
    return matrices, first, head_scores(matrices, att.causal)


@st.cache_data(show_spinner=False, max_entries=8)
def sinusoid_attention(width: int, length: int) -> tuple[np.ndarray, dict]:
    """softmax(P·Pᵀ/√d) of the sinusoid over ``length`` positions, and its scores."""
    matrix = position_only_attention(sinusoidal(length, width))
    return matrix, attention_scores(matrix)


@st.cache_data(show_spinner=False, max_entries=32)
def sentence_words(key: ModelKey, text: str) -> SentenceWords:
    """:func:`posviz.tokenization.split_words` of a sentence."""
    return split_words(loaded_model(key), text)


@st.cache_data(show_spinner=False, max_entries=32)
def word_order(key: ModelKey, text: str, order: tuple[int, ...], without_positions: bool) -> WordOrderComparison:
    """:func:`posviz.analysis.word_order.compare_orders` (keyed by plain values)."""
    return compare_orders(loaded_model(key), text, list(order), without_positions)
