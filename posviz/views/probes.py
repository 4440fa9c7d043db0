"""Views of the probes (Wang & Chen, EMNLP 2020): the position vectors beside the sinusoid and a
random matrix, and the absolute probe on every layer."""

from __future__ import annotations

import numpy as np

from posviz.analysis.layer_probe import LayerProbeResult
from posviz.analysis.probes import ProbeResult, absolute_position_probe, middle_guess_mae, relative_order_probe
from posviz.positions import PositionEncoding, sinusoidal
from posviz.views import figures
from posviz.views.limits import MAX_PROBED
from posviz.views.view import View, view_id

#: The matrices probed side by side.
SOURCES = ("model", "sinusoid", "random")
#: Fewer tokens than this: the layer probe still runs, with a warning that it says little.
FEW_TOKENS = 32


def probed_positions(encoding: PositionEncoding) -> int:
    """How many rows the table probes read: the first :data:`~posviz.views.limits.MAX_PROBED`."""
    return min(encoding.num_positions, MAX_PROBED)


def source_width(encoding: PositionEncoding, source: str) -> int:
    """The width of a probed matrix: the encoding's (its sinusoid's, made even, for ``"sinusoid"``)."""
    width = encoding.reference_width
    return width + width % 2 if source == "sinusoid" else width


def probe_matrix(encoding: PositionEncoding, source: str, seed: int) -> np.ndarray:
    """The rows a probe reads: the model's first position vectors, the interleaved sinusoid of their
    width, or a standard Gaussian matrix of their shape drawn with ``seed``.

    Returns
    -------
    np.ndarray
        float32 [:func:`probed_positions`, :func:`source_width`].

    Raises
    ------
    ValueError
        For a source not in :data:`SOURCES`.
    """
    n, width = probed_positions(encoding), source_width(encoding, source)
    if source == "model":
        return encoding.vectors(np.arange(n)).cpu().numpy()
    if source == "sinusoid":
        return sinusoidal(n, width)
    if source == "random":
        return np.random.default_rng(seed).standard_normal((n, width)).astype(np.float32)
    raise ValueError(f"source must be one of {SOURCES}, not {source!r}")


def absolute_probe(encoding: PositionEncoding, source: str, seed: int, regression: str) -> ProbeResult:
    """:func:`posviz.analysis.probes.absolute_position_probe` of one probed matrix (:func:`probe_matrix`),
    its folds shuffled with ``seed``, the matrix's random rows drawn with it too."""
    return absolute_position_probe(probe_matrix(encoding, source, seed), seed=seed, regression=regression)


def relative_probe(encoding: PositionEncoding, source: str, seed: int, pairs: int) -> ProbeResult:
    """:func:`posviz.analysis.probes.relative_order_probe` of one probed matrix, ``pairs`` pairs drawn and
    folds shuffled with ``seed``."""
    return relative_order_probe(probe_matrix(encoding, source, seed), pairs=pairs, seed=seed)


def source_names(model_name: str, encoding: PositionEncoding, seed: int) -> dict[str, str]:
    """The name of each probed matrix, for tables and legends."""
    return {"model": model_name, "sinusoid": f"sinusoid, width {source_width(encoding, 'sinusoid')} (interleaved)",
            "random": f"random Gaussian, seed {seed}"}


def probe_table(found: dict[str, tuple[ProbeResult, ProbeResult]], names: dict[str, str], encoding: PositionEncoding,
                pairs: int) -> list[dict]:
    """One row per probed matrix: its name, positions, width, the absolute MAE and the relative error rate.

    Parameters
    ----------
    found : dict of str to (ProbeResult, ProbeResult)
        Source -> (absolute, relative) probe results.
    """
    n = probed_positions(encoding)
    return [{"matrix": names[s], "positions": n, "width": source_width(encoding, s),
             "absolute MAE (positions)": a.score, "relative error rate": r.score, "pairs": pairs}
            for s, (a, r) in found.items()]


def probe_caption(encoding: PositionEncoding, seed: int, pairs: int) -> str:
    """What the table probes read, and what guessing scores."""
    n = probed_positions(encoding)
    first_n = (f" The first {n} of {encoding.num_positions} {encoding.axis_label}s are probed."
               if n < encoding.num_positions else "")
    return (f"Rows of `{encoding.source}`" + (f" ({encoding.axis_label}s from {encoding.first_label})"
                                              if encoding.first_label else "")
            + f"; always guessing the middle position scores MAE {middle_guess_mae(n):.1f}.{first_n} "
            f"Seed {seed}, {pairs} pairs, 5 folds; the random matrix is standard normal.")


@view_id("probe-predictions")
def probe_predictions(found: dict[str, ProbeResult], names: dict[str, str], axis_label: str) -> View:
    """The absolute probe's held-out prediction against the true position, one series per matrix.

    Parameters
    ----------
    found : dict of str to ProbeResult
        Source -> absolute probe result.

    Returns
    -------
    View
        Arrays: each matrix's predictions [n] by its name.
    """
    title = f"Absolute probe: held-out prediction against the true {axis_label}"
    fig = figures.probe_predictions_figure({f"{names[s]} (MAE {a.score:.2f})": a.predictions for s, a in found.items()},
                                           title)
    return View(fig, title, {names[s]: a.predictions for s, a in found.items()})


@view_id("layer-probe")
def layer_probe(result: LayerProbeResult, *, encoder_decoder: bool, max_tokens: int, hidden: int) -> View:
    """The absolute probe's MAE on each layer's hidden states, with the MAE of guessing the middle.

    Parameters
    ----------
    result : LayerProbeResult
    encoder_decoder : bool
        The layers are an encoder's (says so in the title).
    max_tokens, hidden : int
        The model's length limit and width, for the caption.

    Returns
    -------
    View
        Arrays: ``mae_per_layer``.
    """
    count = len(result.tokens)
    baseline = middle_guess_mae(count)
    stack = "encoder " if encoder_decoder else ""
    title = f"Absolute probe on each {stack}layer's hidden states, {count} tokens"
    fig = figures.layer_probe_figure(result.mae, title, baseline=baseline)
    dropped = (f" ({result.truncated} more tokens of the text did not fit the model's {max_tokens} positions)"
               if result.truncated else "")
    method = "least squares as in the paper" if result.regression == "linear" else "ridge"
    caption = (f"Token t of the text is at position t (special tokens included): {count} tokens{dropped}. Layer 0 "
               f"is the embedding output, layer l the output of {stack}layer l (`output_hidden_states=True`). One "
               f"probe per layer ({method}), 5 folds, seed {result.seed}; the dashed line is the MAE of always "
               f"guessing the middle position ({baseline:.1f}). Schemes that add no vector at the input (rotary, "
               "ALiBi, relative bias) hold no position at layer 0.")
    if result.regression == "linear" and (result.mae > baseline).any():
        caption += (f"\n\nPoints above the dashed line: least squares did worse than a guess. Fitted on "
                    f"{count * 4 // 5} tokens with about as many or more dimensions ({hidden}), it overfits; ridge "
                    "(Regression, above) keeps what is linearly readable.")
    return View(fig, title, {"mae_per_layer": np.asarray(result.mae)}, caption)
