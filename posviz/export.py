"""File formats of figures and arrays, for slides and papers.

* Figures: a self-contained HTML file that works offline (plotly.js inside the file, no CDN),
  and PNG and SVG images rendered by kaleido 1.x, which drives a headless Chrome or Chromium
  (:func:`find_browser`; ``BROWSER_PATH`` names one explicitly).
* Arrays: NPZ (``numpy.savez_compressed``, every array by name) and CSV (one 1-D or 2-D array).

The app's download buttons and :mod:`posviz.standard_set` (``python -m posviz export``) write
with these.
"""

from __future__ import annotations

import asyncio
import io
import os
import threading
from pathlib import Path
from typing import Callable

import numpy as np
import plotly.graph_objects as go

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


# ---------------------------------------------------------------- arrays


def _array(values) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype == object:  # lists of tokens: a plain unicode array loads without pickle
        a = np.asarray([str(v) for v in a.ravel()]).reshape(a.shape)
    return a


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """``numpy.savez_compressed`` of ``arrays`` (token lists become unicode arrays: no pickle
    needed to load them)."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **{name: _array(value) for name, value in arrays.items()})
    return buf.getvalue()


def csv_text(values) -> str:
    """A 2-D array as CSV rows (a 1-D array as one column): numbers with 9 significant digits,
    enough to give float32 back exactly (``numpy.loadtxt(..., delimiter=",")``); NaN as ``nan``.

    Raises
    ------
    ValueError
        For arrays of more than two axes (use NPZ).
    """
    a = _array(values)
    if a.ndim > 2:
        raise ValueError(f"CSV holds 1-D or 2-D arrays, not {a.ndim}-D ones; use NPZ.")
    a = a.reshape(-1, 1) if a.ndim < 2 else a
    buf = io.StringIO()
    np.savetxt(buf, a, delimiter=",", fmt="%s" if a.dtype.kind in "USb" else "%.9g")
    return buf.getvalue()


def csv_array(arrays: dict[str, np.ndarray]) -> str | None:
    """The name of the array a CSV holds: the first, where it has one or two axes."""
    for name, value in arrays.items():
        return name if _array(value).ndim <= 2 else None
    return None


# ---------------------------------------------------------------- figures


def figure_html(fig: go.Figure, filename: str = "figure") -> str:
    """A complete HTML page with the interactive figure and plotly.js inside (works offline)."""
    return fig.to_html(include_plotlyjs=True, full_html=True, config=plotly_config(filename))


def image_size(fig: go.Figure) -> tuple[int, int]:
    """Width and height in layout pixels of an exported image: the figure's own, or (charts are
    drawn at the page's width) a width that suits its height."""
    height = int(fig.layout.height or 500)
    width = int(fig.layout.width or (900 if height <= 460 else min(1400, round(1.25 * height))))
    return width, height


def find_browser() -> str | None:
    """The Chrome or Chromium kaleido will use: ``BROWSER_PATH`` where set (None if it is not an
    executable), else the one choreographer finds (its own download, then the PATH)."""
    wanted = os.environ.get("BROWSER_PATH")
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
    spec = {"fig": fig.to_dict(), "opts": {"format": fmt, "width": width, "height": height,
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
