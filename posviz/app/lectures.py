"""Lectures: an ordered list of views (a page, its settings, the view to show), stepped through in slide mode.

A lecture is a small TOML (or JSON) file::

    title = "How transformers know word order"

    [[slides]]
    title = "BERT's 128 boundary"
    page = "model"
    view = "signature"
    caption = "The length of each position embedding jumps at position 127."
    params = { model = "all-MiniLM-L6-v2 (bundled)" }

``page`` is a page of the app (the stems of ``pages/*.py``), ``params`` its settings as the URL
contract names them (:mod:`posviz.app.urls`), ``view`` the id of a view on that page (or a list of
ids, shown side by side; the page's first view where it is left out). The Gallery is the built-in
lecture ``gallery``. No Streamlit here: a lecture is read and checked as plain data.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from posviz.app.urls import EVERY_PAGE, PARAMS
from posviz.loading import BUNDLED_NAME

#: The built-in lectures: name -> file.
BUILTIN = {"gallery": Path(__file__).resolve().parents[1] / "data" / "lectures" / "gallery.toml"}
#: The pages a slide can show: every page with views (the Gallery's cards are links, no view).
SLIDE_PAGES = tuple(page for page in EVERY_PAGE if page != "gallery")
#: What the lecture itself writes into a slide's URL, not its ``params``.
LECTURE_PARAMS = ("lecture", "step", "slide")


class LectureError(ValueError):
    """A lecture file that cannot be used; the message says where and what to write instead."""


@dataclass(frozen=True)
class Slide:
    """One step of a lecture.

    Attributes
    ----------
    title : str
    page : str
        The page's stem (``"similarity"``).
    views : tuple of str
        The ids of the views shown (``View.id``), side by side; empty: the page's first view.
    params : dict of str to str or list of str
        The page's settings, by their URL names (a list for ``range``); ``model`` is always set (the
        bundled model where the file leaves it out), so every slide shows the model it was written for.
    caption : str
        What the room should see in it (Markdown), or empty (then the view's own caption).
    """

    title: str
    page: str
    views: tuple[str, ...] = ()
    params: dict[str, str | list[str]] = field(default_factory=dict)
    caption: str = ""


@dataclass(frozen=True)
class Lecture:
    """A titled list of slides.

    Attributes
    ----------
    name : str
        What the URL calls it (``lecture=gallery``).
    title : str
    slides : tuple of Slide
    """

    name: str
    title: str
    slides: tuple[Slide, ...]


def _slide(number: int, entry: dict) -> Slide:
    where = f"slide {number}"
    if not isinstance(entry, dict):
        raise LectureError(f"{where} is not a table of keys (title, page, view, caption, params).")
    unknown = set(entry) - {"title", "page", "view", "caption", "params"}
    if unknown:
        raise LectureError(f"{where}: unknown key(s) {sorted(unknown)}; a slide has title, page, view, caption, params.")
    page = str(entry.get("page", ""))
    if page not in SLIDE_PAGES:
        raise LectureError(f"{where}: page {page!r} is not a page of posviz with a view for a slide; use one of "
                           f"{', '.join(SLIDE_PAGES)}.")
    params = entry.get("params", {})
    if not isinstance(params, dict):
        raise LectureError(f"{where}: params must be a table of URL parameters, e.g. params = {{ q = 128 }}.")
    settable = [name for name, param in PARAMS.items() if page in param.pages and name not in LECTURE_PARAMS]
    for name in params:
        if name not in settable:
            raise LectureError(f"{where}: {name!r} is not a parameter of the {page} page; use one of "
                               f"{', '.join(settable)} (README, URL parameters).")
    views = entry.get("view", ())
    views = (views,) if isinstance(views, str) else tuple(views)
    return Slide(title=str(entry.get("title", f"Slide {number}")), page=page, views=tuple(map(str, views)),
                 params={"model": BUNDLED_NAME, **{name: _url_value(value) for name, value in params.items()}},
                 caption=str(entry.get("caption", "")))


def _url_value(value) -> str | list[str]:
    """A lecture's value as the URL writes it (``true``, ``128``, ``text``; a list for ``range``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return [item for v in value for item in [_url_value(v)]]
    return str(value)


def parse(text: str, name: str, fmt: str = "toml") -> Lecture:
    """A lecture from the text of its file.

    Parameters
    ----------
    text : str
    name : str
        What the URL will call it.
    fmt : {"toml", "json"}

    Returns
    -------
    Lecture

    Raises
    ------
    LectureError
        For text that is not TOML or JSON, no slides, an unknown page or parameter, or a slide that
        is not a table; the message names the slide, and every slide that has a problem (the first
        problem of each).
    """
    try:
        data = json.loads(text) if fmt == "json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LectureError(f"The lecture is not valid {fmt.upper()}: {exc}.") from None
    slides = data.get("slides") if isinstance(data, dict) else None
    if not slides or not isinstance(slides, list):
        raise LectureError("The lecture has no slides: write one [[slides]] table per slide (README, Teaching).")
    slides_read, problems = [], []
    for number, entry in enumerate(slides, 1):  # every slide's problem at once: one round of fixing
        try:
            slides_read.append(_slide(number, entry))
        except LectureError as exc:
            problems.append(str(exc))
    if problems:
        raise LectureError(problems[0] if len(problems) == 1 else
                           f"{len(problems)} slides need a fix. " + " ".join(f"({i}) {p}" for i, p in
                                                                         enumerate(problems, 1)))
    return Lecture(name, str(data.get("title", name)), tuple(slides_read))


def read(source: str, hosted: bool = False) -> Lecture:
    """A built-in lecture by name, or (not in hosted mode) a lecture file by its path.

    Raises
    ------
    LectureError
        For a name that is no built-in lecture in hosted mode (visitors cannot name the server's
        files), a file that does not exist, or one :func:`parse` refuses.
    """
    if source in BUILTIN:
        return parse(BUILTIN[source].read_text(encoding="utf-8"), source)
    if hosted:
        raise LectureError(f"No built-in lecture {source!r} ({', '.join(BUILTIN)}); this hosted demo opens no "
                           "files of its server, so upload your lecture file on the Gallery page.")
    path = Path(source).expanduser()
    if not path.is_file():
        raise LectureError(f"No lecture {source!r}: neither a built-in one ({', '.join(BUILTIN)}) nor a file. "
                           "A lecture uploaded on the Gallery page lives in the browser tab that uploaded it: "
                           "upload it again there.")
    return parse(path.read_text(encoding="utf-8"), source, "json" if path.suffix.lower() == ".json" else "toml")
