"""Views of the position properties: Wang et al.'s monotonicity, translation invariance and symmetry
of a proximity beside the sinusoid's, and first-layer attention on identical words with Chen et
al.'s scores."""

from __future__ import annotations

import numpy as np

from posviz.analysis.locality import ATTENTION_SCORES
from posviz.analysis.properties import PositionProperties, position_properties, proximity_by_offset
from posviz.positions import PositionEncoding
from posviz.positions.sinusoid import reference_sinusoid
from posviz.views import figures, positions
from posviz.views.view import View, view_id


def _per_unit(p: PositionProperties, values: np.ndarray) -> np.ndarray:
    """Divided by ḡ(0) (the mean of φ(x, x)) where that is positive."""
    return values / p.diagonal_mean if p.diagonal_mean > 0 else values


def encoding_properties(encoding: PositionEncoding, metric: str, count: int) -> PositionProperties:
    """:func:`posviz.analysis.properties.position_properties` of the proximity φ (``metric``) of the rows
    0 … count − 1 of a positional component (:func:`posviz.views.positions.matrix`).

    Raises
    ------
    TypeError
        For an encoding with neither vectors nor a bias.
    """
    return position_properties(positions.matrix(encoding, metric, 0, count - 1).values)


def sinusoid_properties(width: int, metric: str, count: int) -> PositionProperties:
    """The same for the interleaved sinusoid of ``width`` (:func:`posviz.positions.sinusoid.reference_sinusoid`),
    the reference the properties are set beside."""
    return encoding_properties(reference_sinusoid(count, width, "interleaved"), metric, count)


def compared_names(model_name: str, encoding: PositionEncoding) -> tuple[str, str]:
    """The names of the two matrices compared: the model (with its component, where named) and the
    sinusoid of the component's width (:attr:`PositionEncoding.reference_width`)."""
    return (model_name + (f" ({encoding.component})" if encoding.component else ""),
            f"sinusoid, width {encoding.reference_width}")


@view_id("monotonicity")
def monotonicity_profile(mine: PositionProperties, ref: PositionProperties, names: tuple[str, str]) -> View:
    """Mean proximity ḡ(k) against the offset k, each curve divided by its own ḡ(0).

    Parameters
    ----------
    mine, ref : PositionProperties
        The model's and the reference sinusoid's (same positions).
    names : (str, str)
        Their legend names.
    """
    title = "Mean proximity against offset, ÷ ḡ(0)"
    series = {names[0]: _per_unit(mine, mine.mean), names[1]: _per_unit(ref, ref.mean)}
    return View(figures.line_figure(series, title, "offset k", "ḡ(k) ÷ ḡ(0)", x=mine.offsets), title,
                {"offset": mine.offsets, "model": series[names[0]], "sinusoid": series[names[1]]},
                "Each curve is divided by its own ḡ(0), the mean of φ(x, x), so that widths compare; ρ does not "
                "change under that scaling.")


@view_id("translation-invariance")
def translation_bands(mine: PositionProperties, ref: PositionProperties, names: tuple[str, str], phi: str) -> View:
    """φ(x, x + k) against the offset: its mean and its min–max band over start positions, one panel each.

    Parameters
    ----------
    phi : str
        What φ is ("P·Pᵀ", "K", "cosine"), for the y axis.
    """
    title = "φ(x, x + k) against the offset k: mean and min–max over start positions x"
    fig = figures.offset_band_figure({names[0]: (mine.offsets, mine.mean, mine.low, mine.high),
                                      names[1]: (ref.offsets, ref.mean, ref.low, ref.high)}, title, "offset k", phi)
    return View(fig, title, {"offset": mine.offsets, "model_mean": mine.mean, "model_low": mine.low,
                             "model_high": mine.high, "sinusoid_mean": ref.mean, "sinusoid_low": ref.low,
                             "sinusoid_high": ref.high},
                "The band runs from the smallest to the largest φ(x, x + k) over x = 0 … N − 1 − k; a "
                "translation-invariant φ has no band. ḡ is the mean over all pairs x ≠ y.")


@view_id("symmetry")
def symmetry_profile(mine: PositionProperties, ref: PositionProperties, names: tuple[str, str]) -> View:
    """Mean proximity against the signed offset k = y − x, each curve divided by its own ḡ(0)."""
    title = "Mean proximity against the signed offset k = y − x, ÷ ḡ(0)"
    series = {names[0]: _per_unit(mine, mine.signed_mean), names[1]: _per_unit(ref, ref.signed_mean)}
    return View(figures.line_figure(series, title, "signed offset k", "ḡ(k) ÷ ḡ(0)", x=mine.signed_offsets), title,
                {"signed_offset": mine.signed_offsets, "model": series[names[0]], "sinusoid": series[names[1]]},
                "A symmetric φ gives a curve that is its own mirror image about k = 0.")


def score_rows(scores: dict[str, np.ndarray], reference: dict[str, np.ndarray], width: int) -> dict[str, list]:
    """The attention scores table: a row per head, the mean of the heads' attention, and the sinusoid.

    Parameters
    ----------
    scores : dict of str to np.ndarray
        :func:`posviz.analysis.locality.attention_scores` of every head and, last, of their mean.
    reference : dict of str to np.ndarray
        The same of the sinusoid's position-only attention (0-d arrays).
    width : int
        The sinusoid's width, for its row name.

    Returns
    -------
    dict of str to list
        Column -> values: ``attention`` (row names), then one column per score of
        :data:`~posviz.analysis.locality.ATTENTION_SCORES` (by its table name).
    """
    heads = len(next(iter(scores.values()))) - 1
    rows = [f"head {h}" for h in range(heads)] + ["mean of the heads' attention",
                                                  f"sinusoid, width {width}"]  # its formula: the page's text
    return {"attention": rows, **{label: list(np.concatenate([scores[name], [reference[name]]]))
                                  for name, label in ATTENTION_SCORES.items()}}


@view_id("identical-word-attention")
def identical_word_tiles(matrices: np.ndarray, scores: dict[str, np.ndarray], *, keep_special: bool,
                         first: int) -> View:
    """Every head's layer-0 attention on identical words, titled with its locality and symmetry.

    Parameters
    ----------
    matrices : np.ndarray
        float32 [heads, L, L].
    scores : dict of str to np.ndarray
        :func:`posviz.analysis.locality.attention_scores` (at least one value per head).
    keep_special : bool
        Whether the special tokens are in (says so in the title).
    first : int
        The position of row 0 (the first word token when the special tokens are out).
    """
    heads = matrices.shape[0]
    titles = [f"head {h}<br>loc {scores['locality'][h]:.2f}<br>sym {scores['attention_symmetry'][h]:.2f}"
              for h in range(heads)]
    title = (f"Layer 0 attention on identical words ({'with' if keep_special else 'without'} special tokens), "
             "rows = queries, columns = keys")
    fig = figures.small_multiples(matrices, titles, title, zmin=0, names=("query", "key"), first=first,
                                  columns=min(3, heads))
    return View(fig, title, {"attention": np.asarray(matrices)},
                "Tile titles: Chen et al.'s locality (loc) and symmetry (sym) of each head. One colour scale from "
                "0 to the largest weight.")


@view_id("attention-by-offset")
def attention_by_offset(matrices: np.ndarray, reference: np.ndarray, width: int) -> View:
    """Mean attention against the offset k = key − query, one line per head and the sinusoid's.

    Parameters
    ----------
    matrices : np.ndarray
        float32 [heads, L, L].
    reference : np.ndarray
        [L, L]: the sinusoid's position-only attention.
    width : int
        The sinusoid's width, for its name.
    """
    profiles = {f"head {h}": proximity_by_offset(matrices[h], signed=True)[1] for h in range(matrices.shape[0])}
    offsets, ref_profile, _, _ = proximity_by_offset(reference, signed=True)
    profiles["sinusoid"] = ref_profile  # a short name: 13 or 17 lines keep their legend beside the plot
    title = "Mean attention against the offset k = key − query (mean over queries)"
    fig = figures.line_figure(profiles, title, "offset k = key − query", "mean weight", x=offsets,
                              references=("sinusoid",))
    return View(fig, title, {"offsets": offsets, "mean_attention": np.stack(list(profiles.values()))},
                f"sinusoid: the sinusoid of width {width} attending by position alone, softmax(P·Pᵀ/√d). "
                "A local head peaks at k = 0 or ±1; a symmetric one is its own mirror image about k = 0; a "
                "translation-invariant one has the same weight at every query for a given k. Click a legend entry "
                "to hide it.")
