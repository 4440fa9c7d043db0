"""Views of the word-order comparison: the per-token difference of two orders, and their vectors."""

from __future__ import annotations

import numpy as np

from posviz.analysis.word_order import STAGES, WordOrderComparison
from posviz.views import figures
from posviz.views.view import View, view_id


@view_id("word-order-difference")
def difference_bars(kept: WordOrderComparison, removed: WordOrderComparison | None) -> View:
    """‖permuted − original‖ per token at the last layer, with positions and (where they can be
    removed) without, on a log scale.

    Returns
    -------
    View
        Arrays: each series [tokens] by name, ``tokens``.
    """
    series = {"with positions": kept.l2("output")}
    if removed is not None:
        series["without positions"] = removed.l2("output")
    title = "‖permuted − original‖ per token, last layer (log scale)"
    fig = figures.token_bars(series, kept.tokens, title, "L2 norm")  # the title says of what
    return View(fig, title, {**series, "tokens": np.array(kept.tokens)})


@view_id("word-order-vectors")
def stage_vectors(shown: WordOrderComparison, stage: str) -> View:
    """Both runs' vectors at one stage (tokens × dimensions) and their difference, on one colour scale.

    Parameters
    ----------
    shown : WordOrderComparison
    stage : {"input", "first", "output"}

    Raises
    ------
    ValueError
        For another stage.
    """
    original, permuted, _ = shown.stage(stage)
    setting = "without positions" if shown.without_positions else "with positions"
    title = f"{STAGES[stage]}, {setting} (tokens × dimensions)"
    # panel titles of a few words a line: a third of a 1024-pixel projector's column holds some 13 of its characters
    fig = figures.vector_heatmaps({"original<br>order": original, "permuted,<br>put back": permuted,
                                   "difference": permuted - original}, title, shown.tokens)
    return View(fig, title, {"original": original, "permuted_back": permuted, "difference": permuted - original,
                             "tokens": np.array(shown.tokens)},
                "permuted, put back: the vectors of the permuted sentence, each token's in its row of the original "
                "order.")
