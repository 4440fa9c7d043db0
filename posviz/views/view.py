"""What a view is: a figure, the arrays behind it, its title and its caption."""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import plotly.graph_objects as go


def slug(text: str, default: str = "figure", max_length: int = 60) -> str:
    """A file-name stem from a title: lower-case words joined by ``-``; ``<sup>`` subtitles and
    other tags are dropped.

    Examples
    --------
    >>> slug("P·Pᵀ, positions 0–511<br><sup>colours clipped</sup>")
    'ppt-positions-0-511'
    """
    text = re.sub(r"<sup>.*?</sup>", " ", str(text or ""), flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", text)).lower()
    text = text.replace("·", "").replace("ᵀ", "t")
    words = re.findall(r"[a-z0-9]+", text)
    return "-".join(words)[:max_length].strip("-") or default


@dataclass
class View:
    """One view of the product, built by a pure function of a model's arrays and the view's settings.

    The pages draw it (chart, caption, download buttons), the export command writes it to files,
    a notebook displays its figure (a view as the last line of a cell shows as its figure).

    Attributes
    ----------
    figure : plotly.graph_objects.Figure
        Its layout title is :attr:`title` (with the figure's own notes as a subtitle).
    title : str
        The view's title, without notes.
    arrays : dict of str to np.ndarray
        The numbers the figure shows, by name, the matrix first (its CSV), with their labels
        (positions, tokens); empty where the figure holds nothing worth a download.
    caption : str
        What to read in the figure, in a sentence or two (Markdown), or empty.
    id : str
        Which view it is ("q-profile", "attention-head" …): the name a lecture's slide and the app's
        ``slide`` parameter give it; set by :func:`view_id`.
    """

    figure: go.Figure
    title: str
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    caption: str = ""
    id: str = ""

    @property
    def stem(self) -> str:
        """A file-name stem from the title (:func:`slug`)."""
        return slug(self.title)

    def _ipython_display_(self) -> None:
        """In a notebook (IPython's display hook): the figure, as plotly displays it (:mod:`posviz.notebook`)."""
        self.figure._ipython_display_()


def view_id(name: str) -> Callable:
    """Decorate a view function: the views it returns carry ``name`` as their :attr:`View.id`, and the
    function itself as ``view_id`` (the README lists them)."""
    def decorate(function: Callable) -> Callable:
        @functools.wraps(function)
        def named(*args, **kwargs):
            found = function(*args, **kwargs)
            if found is not None:
                found.id = name
            return found

        named.view_id = name
        return named
    return decorate
