"""File formats of figures and arrays, for slides and papers.

* Figures: a self-contained HTML file that works offline (plotly.js inside the file, no CDN),
  and PNG and SVG images rendered by kaleido 1.x, which drives a headless Chrome or Chromium
  (:func:`find_browser`; ``BROWSER_PATH`` names one explicitly).
* Arrays: NPZ (``numpy.savez_compressed``, every array by name) and CSV (a view's arrays as one
  table with a header row and its labels, :func:`csv_table`).
* File names: :func:`file_stem` (the model's short name first, letters, digits, ``-``, ``.``, ``_``).

The app's download buttons and :mod:`posviz.standard_set` (``python -m posviz export``) write
with these.
"""

from __future__ import annotations

import asyncio
import csv
import functools
import io
import os
import re
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

#: PNG images are rendered at this multiple of the layout size (sharp on slides and HiDPI screens).
PNG_SCALE = 2

#: How to give kaleido a browser.
BROWSER_HINT = ("Install Chrome or Chromium (Debian/Ubuntu: `apt-get install chromium`; anywhere: "
                "`kaleido_get_chrome`), or set BROWSER_PATH to the browser's executable.")
BROWSER_FIX = ("PNG and SVG export renders the figures in a headless Chrome or Chromium (kaleido 1.x) and found "
               "none. " + BROWSER_HINT)


class ExportError(RuntimeError):
    """An export could not be made; the message says what to do."""


def plotly_config(filename: str = "figure") -> dict:
    """The plotly.js config of posviz charts: the toolbar's camera button saves ``filename.png``
    at :data:`PNG_SCALE` times the shown size."""
    return {"displaylogo": False,
            "toImageButtonOptions": {"format": "png", "scale": PNG_SCALE, "filename": filename}}


# ---------------------------------------------------------------- file names


def safe_name(text: str) -> str:
    """``text`` as part of a file name: letters and digits (accents dropped), ``-``, ``.`` and ``_``
    only; every other run of characters becomes one ``-``, and no dot or dash leads or trails.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        Possibly empty (for a text with no letter or digit).

    Examples
    --------
    >>> safe_name("all-MiniLM-L6-v2"), safe_name("my model (v2)"), safe_name("../modèle")
    ('all-MiniLM-L6-v2', 'my-model-v2', 'modele')
    """
    ascii_text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", ascii_text).strip("-._")


def file_stem(*parts: str) -> str:
    """A file name without its extension: the parts made safe (:func:`safe_name`) and joined by
    ``-``, empty parts left out.

    Parameters
    ----------
    *parts : str
        Usually the model's short name (:attr:`posviz.LoadedModel.short_name`), then the view's stem,
        then settings.

    Returns
    -------
    str
        ``"figure"`` where every part is empty.

    Examples
    --------
    >>> file_stem("all-MiniLM-L6-v2", "position-similarity"), file_stem("", "profile-q128")
    ('all-MiniLM-L6-v2-position-similarity', 'profile-q128')
    """
    return "-".join(filter(None, (safe_name(part) for part in parts))) or "figure"


# ---------------------------------------------------------------- arrays

#: Square arrays whose columns are labelled as their rows (position × position, token × token);
#: ``attention`` is query × key (its columns are ``key_tokens``, where the view has them).
PAIRWISE = ("similarity", "bias", "cosine", "attention")
#: Labels of columns only: the keys of a query × key matrix.
COLUMN_LABELS = ("key_tokens",)
#: Text arrays that name the rows of a [series, k] array (each row a series): its CSV columns' names.
SERIES_NAMES = ("parts", "models")
#: [series, k] arrays whose rows are series also where a label array would fit either axis.
SERIES_STACKS = ("kernel", "mean_attention", "profiles", "norms")
#: The label column of a table whose view has no labels of its rows: 0 … n − 1.
INDEX = "index"


def _array(values) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype == object:  # lists of tokens: a plain unicode array loads without pickle
        a = np.asarray([str(v) for v in a.ravel()]).reshape(a.shape)
    return a


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """Every array of a view in one NPZ file.

    Parameters
    ----------
    arrays : dict of str to array-like
        Any shapes; lists of tokens become unicode arrays, so no pickle is needed to load them.

    Returns
    -------
    bytes
        ``numpy.savez_compressed`` of ``arrays``, each under its name (``numpy.load(...)[name]``).
    """
    buf = io.BytesIO()
    np.savez_compressed(buf, **{name: _array(value) for name, value in arrays.items()})
    return buf.getvalue()


def _kinds(arrays: dict[str, np.ndarray]) -> tuple[str, str]:
    """(the dtype kinds of the values, those of the labels): floating-point values with integer or text
    labels where the view has floats; else integer values (counts) with text labels."""
    if any(a.dtype.kind == "f" for a in arrays.values()):
        return "f", "iuUS"
    return "iub", "US"


@dataclass
class _Table:
    """What a CSV holds: row labels, column names, and value blocks [rows, k] side by side."""

    label_name: str
    labels: np.ndarray
    columns: list
    blocks: list


def _row_labels(labels: dict[str, np.ndarray], n: int) -> tuple[str, np.ndarray]:
    """The first label array of length n that labels rows, or the index."""
    for name, a in labels.items():
        if len(a) == n and name not in COLUMN_LABELS and name not in SERIES_NAMES:
            return name, a
    return INDEX, np.arange(n)


def _series_table(name: str, stack: np.ndarray, labels: dict[str, np.ndarray]) -> _Table:
    """A [series, k] array as k rows, one column per series (named by a SERIES_NAMES array)."""
    series, k = stack.shape
    names = next((a for n, a in labels.items() if n in SERIES_NAMES and len(a) == series),
                 [f"{name}_{i}" for i in range(series)])
    label_name, row_labels = _row_labels(labels, k)
    return _Table(label_name, row_labels, list(names), [stack.T])


def _table(arrays: dict[str, np.ndarray]) -> _Table | None:
    """The layout of a view's CSV (see :func:`csv_table`), or None where nothing is tabular."""
    arrays = {name: _array(value) for name, value in arrays.items()}
    value_kinds, label_kinds = _kinds(arrays)
    labels = {name: a for name, a in arrays.items() if a.ndim == 1 and a.dtype.kind in label_kinds}
    numbers = {name: a for name, a in arrays.items() if a.dtype.kind in value_kinds and name not in labels}
    values = {name: a for name, a in numbers.items() if a.ndim <= 2}
    first = next(iter(numbers), None)
    if first is None or first not in values:  # no numbers, or the view's matrix has 3+ axes: NPZ only
        return None
    m = values[first]
    if m.ndim == 1:
        series = {name: a for name, a in values.items() if a.ndim == 1 and len(a) == len(m)}
        label_name, row_labels = _row_labels(labels, len(m))
        return _Table(label_name, row_labels, list(series), [a[:, None] for a in series.values()])
    rows, cols = m.shape
    fits_rows = any(len(a) == rows and n not in COLUMN_LABELS and n not in SERIES_NAMES for n, a in labels.items())
    fits_cols = any(len(a) == cols for a in labels.values())
    named_series = any(n in SERIES_NAMES and len(a) == rows for n, a in labels.items())
    if named_series or first in SERIES_STACKS or (fits_cols and not fits_rows):
        return _series_table(first, m, labels)
    label_name, row_labels = _row_labels(labels, rows)
    if first in PAIRWISE:
        keys = next((a for n, a in labels.items() if n in COLUMN_LABELS and len(a) == cols), None)
        if keys is None and rows == cols and label_name != INDEX:
            keys = row_labels
        if keys is not None:
            return _Table(label_name, row_labels, list(keys), [m])
    same = {name: a for name, a in values.items() if a.shape == m.shape}  # e.g. original, permuted, difference
    return _Table(label_name, row_labels, [f"{name}_{j}" for name in same for j in range(cols)], list(same.values()))


def has_table(arrays: dict[str, np.ndarray]) -> bool:
    """Whether :func:`csv_table` makes a table of these arrays (cheap: nothing is formatted).

    Parameters
    ----------
    arrays : dict of str to array-like
        A view's arrays (:attr:`posviz.views.View.arrays`).

    Returns
    -------
    bool
        False where the arrays hold no values (labels alone), or the first has 3 or more axes.
    """
    return _table(arrays) is not None


def _cells(cells) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(cells)
    return buf.getvalue()


def _number_format(a: np.ndarray) -> str:
    """Integers as they are; float32 and narrower: 9 significant digits (the float back exactly);
    float64: the shortest text that gives the float64 back (``repr``)."""
    if a.dtype.kind != "f":
        return "%d"
    return "%r" if a.dtype.itemsize > 4 else "%.9g"


def csv_table(arrays: dict[str, np.ndarray]) -> str:
    """A view's arrays as one CSV table with a header row, its first column the row labels.

    1-D arrays of integers or text are labels (``positions``, ``tokens``, ``query_tokens`` and
    ``key_tokens``, ``offsets``, ``parts``, ``models`` …), floating-point arrays are values, and the
    first of these is the view's matrix (:class:`posviz.views.View` puts it first). Arrays that hold
    no floats at all are integer values with text labels. The layout:

    * **matrix with labelled rows and columns** (a square array named in :data:`PAIRWISE`:
      position × position similarity or bias, token × token cosine; ``attention`` query × key):
      the header is the row label's name, then the column labels (``key_tokens`` where the arrays
      have them, else the row labels); each line is a row label, then that row.
    * **matrix × dimensions** (any other [rows, k] array, e.g. ``vectors``, ``coords``): the header
      is the row label's name, then ``<name>_0`` … ``<name>_<k-1>``; arrays of the same shape
      follow side by side (``original_0`` …, ``permuted_back_0`` …, ``difference_0`` …).
    * **series**: every 1-D floating-point array of the first one's length is a column under its
      own name (``profile``; ``model``, ``sinusoid``; ``with positions`` …); a [series, k] array
      (rows named by an array in :data:`SERIES_NAMES`, named in :data:`SERIES_STACKS`, or with a
      label that fits its k columns but not its rows) is k lines with a column per series, named
      by that text array (``parts``, ``models``) or ``<name>_0`` ….

    The label column is the first label array that fits the rows (``key_tokens`` label columns
    only; ``parts`` and ``models`` name series), or ``index`` (0 … n − 1) where none fits.

    Parameters
    ----------
    arrays : dict of str to array-like
        A view's arrays, by name.

    Returns
    -------
    str
        CSV text written with :mod:`csv` (``\\n`` line ends; a text cell with a comma, a quote or a
        line break is quoted, its quotes doubled). Numbers: float32 with 9 significant digits, float64
        with as many as give it back (``repr``), NaN as ``nan``; labels as written. It loads back with
        ``csv.reader`` (every table) or, where every label is a number,
        ``numpy.genfromtxt(path, delimiter=",", names=True)``, giving the arrays' values exactly.

    Raises
    ------
    ValueError
        Where there is nothing tabular (:func:`has_table` is False): no values, or a first one of 3
        or more axes (use NPZ).

    Examples
    --------
    >>> print(csv_table({"profile": np.float32([1, 0.5]), "positions": np.arange(2)}), end="")
    positions,profile
    0,1
    1,0.5
    """
    table = _table(arrays)
    if table is None:
        shapes = ", ".join(f"{name} {list(_array(a).shape)}" for name, a in arrays.items()) or "none"
        raise ValueError(f"CSV holds tables of 1-D or 2-D arrays of numbers (these arrays: {shapes}); use NPZ.")
    formats = ",".join(_number_format(block) for block in table.blocks for _ in range(block.shape[1]))
    values = np.concatenate([block.astype(np.float64 if block.dtype.kind == "f" else np.int64)
                             for block in table.blocks], axis=1).tolist()  # one kind: floats or integers
    labels = table.labels.tolist()
    lines = [_cells([table.label_name, *table.columns])]
    lines += [f"{_cells([label])},{formats % tuple(row)}" for label, row in zip(labels, values)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- figures


#: Pixels above a title's first line, and between its last line and what its ``pad`` holds.
TITLE_GAPS = 16


def _title_room(fig: go.Figure) -> int:
    """Pixels above the plot area that the figure's title takes: its lines at 1.3 × its font size, its
    ``pad.b`` (where posviz's figures keep the subtitle and the subplots' titles) and
    :data:`TITLE_GAPS`; 0 without a title."""
    title = fig.layout.title
    if not title.text:
        return 0
    lines = title.text.count("<br>") + 1
    return int(title.pad.b or 0) + round(lines * (title.font.size or 15) * 1.3) + TITLE_GAPS


def framed(fig: go.Figure) -> dict:
    """The figure as a file holds it (``fig.to_dict()``), the room above its plot area for the title made
    explicit (the top margin at least :func:`_title_room`), which plotly.js's ``automargin`` alone does
    not give a figure of subplots drawn in a page of its own or as an image (its title and the subplots'
    titles would land on the first row, seen in the exported heads grid). The figure is left as it is."""
    figure = fig.to_dict()
    room = _title_room(fig)
    margin = figure["layout"].setdefault("margin", {})
    if room > margin.get("t", 0):
        margin["t"] = room
    return figure


def figure_html(fig: go.Figure, filename: str = "figure") -> str:
    """A complete HTML page with the interactive figure (:func:`framed`) and plotly.js inside (works
    offline); the figure's element is named after ``filename`` (not a random id), so that the same
    figure gives the same file byte for byte."""
    return pio.to_html(framed(fig), include_plotlyjs=True, full_html=True, config=plotly_config(filename),
                       validate=False, div_id=f"posviz-{safe_name(filename) or 'figure'}")


#: Layout height of an exported figure whose height follows its width in the app (``layout.meta["aspect"]``).
SQUARE_HEIGHT = 800


def image_size(fig: go.Figure) -> tuple[int, int]:
    """Width and height in layout pixels of an exported image.

    Parameters
    ----------
    fig : plotly.graph_objects.Figure

    Returns
    -------
    (int, int)
        The figure's own width and height where it has them; else (charts are drawn at the page's
        width) a width that suits its height, the height being 500; a figure whose height follows its
        width in the app (``layout.meta["aspect"]``: width ÷ height, 1 for a heatmap with square
        cells) gets :data:`SQUARE_HEIGHT` and a width of that aspect (at most 1 600).
    """
    aspect = fig.layout.meta.get("aspect") if isinstance(fig.layout.meta, dict) else None
    if aspect and not fig.layout.height:
        width = int(fig.layout.width or min(1600, round(SQUARE_HEIGHT * aspect * 1.1)))
        return width, int(round(width / aspect / 1.1))
    height = int(fig.layout.height or 500)
    width = int(fig.layout.width or (900 if height <= 460 else min(1400, round(1.25 * height))))
    return width, height


def find_browser() -> str | None:
    """The Chrome or Chromium kaleido will use: ``BROWSER_PATH`` where set (None if it is not an
    executable), else the one choreographer finds (its own download, then the PATH). Looked up once
    per value of ``BROWSER_PATH`` and ``PATH`` (the app asks for every chart of every run: some 150
    file checks each)."""
    return _find_browser(os.environ.get("BROWSER_PATH"), os.environ.get("PATH"))


@functools.lru_cache(maxsize=8)
def _find_browser(wanted: str | None, _path: str | None) -> str | None:
    if wanted:
        return wanted if os.access(wanted, os.X_OK) else None
    from choreographer.browsers.chromium import Chromium

    return Chromium.find_browser(skip_local=False)


def require_browser() -> str:
    """The browser's path (:func:`find_browser`); :class:`ExportError` naming the fix where there is none."""
    path = find_browser()
    if path is None:
        wanted = os.environ.get("BROWSER_PATH")
        raise ExportError((f"BROWSER_PATH={wanted!r} is not an executable. " if wanted else "") + BROWSER_FIX)
    return path


def _run(coroutine):
    """Run a coroutine to completion, also from a thread that already runs an event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    box: dict = {}

    def target():
        try:
            box["value"] = asyncio.run(coroutine)
        except BaseException as exc:  # noqa: BLE001  re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name="posviz-kaleido")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _spec(fig: go.Figure, fmt: str, path: Path | None = None) -> dict:
    width, height = image_size(fig)
    spec = {"fig": framed(fig), "opts": {"format": fmt, "width": width, "height": height,
                                           "scale": PNG_SCALE if fmt == "png" else 1}}
    if path is not None:
        spec["path"] = path
    return spec


def write_images(jobs: list[tuple[go.Figure, Path]], done: Callable[[Path], None] | None = None,
                 tabs: int = 2) -> None:
    """Render figures to image files (format from each path's suffix: .png, .svg, .pdf, .jpg,
    .webp) in one headless browser with ``tabs`` tabs; ``done(path)`` after each file.

    Raises
    ------
    ExportError
        When no browser is found (the message names the fix), or a figure fails to render.
    """
    browser = require_browser()
    import kaleido

    async def render() -> None:
        async with kaleido.Kaleido(n=max(1, min(tabs, len(jobs))), mathjax=False, path=browser) as k:
            async def one(fig: go.Figure, path: Path) -> Path:
                await k.write_fig_from_object(_spec(fig, path.suffix.lstrip(".").lower(), path),
                                              cancel_on_error=True)
                return path

            for finished in asyncio.as_completed([one(fig, Path(path)) for fig, path in jobs]):
                path = await finished
                if done:
                    done(path)

    try:
        _run(render())
    except ExportError:
        raise
    except Exception as exc:  # kaleido, choreographer: a browser that does not start or a render timeout
        raise ExportError(f"Rendering the images in {browser} failed ({type(exc).__name__}: {exc}). "
                          + BROWSER_HINT) from exc


def figure_image(fig: go.Figure, fmt: str = "svg") -> bytes:
    """One figure as image bytes (``"svg"``, ``"png"`` at :data:`PNG_SCALE`, ``"pdf"``); starts a
    headless browser for it (a few seconds).

    Raises
    ------
    ExportError
        When no browser is found or the render fails.
    """
    browser = require_browser()
    import kaleido

    async def render() -> bytes:
        async with kaleido.Kaleido(n=1, mathjax=False, path=browser) as k:
            spec = _spec(fig, fmt)
            return await k.calc_fig(spec["fig"], opts=spec["opts"])

    try:
        return _run(render())
    except Exception as exc:
        raise ExportError(f"Rendering the {fmt.upper()} in {browser} failed ({type(exc).__name__}: {exc}).") from exc
