"""Views of a sentence's input representation: the norm of each part, the vectors, the same word
at two positions."""

from __future__ import annotations

import numpy as np

from posviz.analysis.input_representation import InputRepresentation
from posviz.analysis.similarity import similarity
from posviz.views import figures
from posviz.views.view import View, view_id


def _array_name(part: str) -> str:
    return part.replace(" ", "_").lower()


@view_id("input-norms")
def part_norms(emb: InputRepresentation) -> View:
    """The L2 norm of each part (token, segment, position, sum, after LayerNorm) per token, log scale.

    Returns
    -------
    View
        Arrays: ``norms`` [parts, tokens], ``parts``, ``tokens``, and each part's vectors
        [tokens, width] under its name (``after_layernorm`` …).
    """
    parts = emb.parts
    norms = np.stack([np.linalg.norm(value, axis=1) for value in parts.values()])
    title = "Norm of each part, per token (log scale)"
    fig = figures.line_figure(dict(zip(parts, norms)), title, "token", "L2 norm", x_labels=emb.tokens, log_y=True)
    return View(fig, title, {"norms": norms, "parts": list(parts), "tokens": emb.tokens,
                             **{_array_name(part): value for part, value in parts.items()}})


@view_id("input-vectors")
def part_vectors(emb: InputRepresentation, part: str) -> View:
    """One part's vectors, tokens × dimensions.

    Parameters
    ----------
    part : str
        A key of ``emb.parts``.

    Raises
    ------
    KeyError
        For a part the model does not have.
    """
    title = f"{part} vectors (tokens × dimensions)"
    fig = figures.vector_heatmap(emb.parts[part], title, "token", row_labels=emb.tokens)
    return View(fig, title, {"vectors": emb.parts[part], "tokens": emb.tokens})


@view_id("input-similarity")
def input_similarity(emb: InputRepresentation) -> View:
    """The cosine similarity of the input sums, token against token.

    Returns
    -------
    View
        Arrays: ``cosine`` [tokens, tokens], ``tokens``.
    """
    sums = similarity(emb.sum, "cosine")
    title = "Cosine similarity of the input sums"
    return View(figures.token_heatmap(sums, emb.tokens, title, "cosine"), title, {"cosine": sums, "tokens": emb.tokens})


def repeated_words(emb: InputRepresentation, special: set[str]) -> dict[str, list]:
    """The first two occurrences of each word that occurs twice, with the cosine of their token
    embeddings and of their input sums: a table (column -> values; empty lists where no word repeats).

    Parameters
    ----------
    special : set of str
        Tokens left out ([CLS], [SEP] …).
    """
    sums, tokens_alike = similarity(emb.sum, "cosine"), similarity(emb.token, "cosine")
    seen: dict[str, list[int]] = {}
    for i, token in enumerate(emb.tokens):
        seen.setdefault(token, []).append(i)
    repeats = [(token, where[0], where[1]) for token, where in seen.items() if len(where) > 1 and token not in special]
    return {
        "word": [t for t, _, _ in repeats],
        "positions": [f"{i} and {j}" for _, i, j in repeats],
        "cos(token)": [round(float(tokens_alike[i, j]), 4) for _, i, j in repeats],
        "cos(input sum)": [round(float(sums[i, j]), 4) for _, i, j in repeats],
    }
