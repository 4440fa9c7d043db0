"""Export figures and arrays for slides and papers (no Streamlit).

* Figures: a self-contained HTML file that works offline (plotly.js inside the file, no CDN),
  and PNG and SVG images rendered by kaleido 1.x, which drives a headless Chrome or Chromium
  (:func:`find_browser`; ``BROWSER_PATH`` names one explicitly).
* Arrays: NPZ (``numpy.savez_compressed``, every array by name) and CSV (one 1-D or 2-D array).

:func:`export_standard_set` writes the standard set of figures and arrays of one model and
sentence; ``python -m posviz export`` (:mod:`posviz.cli`) is its command line.
"""

from __future__ import annotations

import asyncio
import html
import io
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import plotly.graph_objects as go

import posviz
from posviz import figures
from posviz.analysis import sample_positions

#: PNG images are rendered at this multiple of the layout size (sharp on slides and HiDPI screens).
PNG_SCALE = 2
#: Most positions per side of a position-position matrix (a stride beyond), as on the app's pages.
MAX_POSITIONS = 2048
#: The same for per-head biases, which hold one matrix per head.
MAX_POSITIONS_BIAS = 512
#: The row of the "position q against all" profile.
PROFILE_Q = 128
#: The sentence exported when none is given (the app's default).
DEFAULT_SENTENCE = "The cat chased the dog"

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


def slug(fig_or_text, default: str = "figure", max_length: int = 60) -> str:
    """A file-name stem from a figure's title (or a text): lower-case words joined by ``-``;
    ``<sup>`` subtitles and other tags are dropped."""
    text = fig_or_text
    if isinstance(fig_or_text, go.Figure):
        text = fig_or_text.layout.title.text or ""
    text = re.sub(r"<sup>.*?</sup>", " ", str(text or ""), flags=re.S)
    text = html.unescape(re.sub(r"<[^>]+>", " ", text)).lower()
    text = text.replace("·", "").replace("ᵀ", "t")
    words = re.findall(r"[a-z0-9]+", text)
    out = "-".join(words)[:max_length].strip("-")
    return out or default


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


# ---------------------------------------------------------------- the standard set


@dataclass
class Export:
    """One exported view: its figure (HTML, PNG, SVG) and arrays (NPZ; CSV of the first)."""

    stem: str
    figure: go.Figure | None = None
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def files(self, out_dir: Path, images: bool = True) -> list[Path]:
        exts = ([".html"] + [".png", ".svg"] * images) if self.figure is not None else []
        exts += [".npz"] * bool(self.arrays) + [".csv"] * bool(self.arrays and csv_array(self.arrays))
        return [out_dir / f"{self.stem}{ext}" for ext in exts]


def standard_set(lm: posviz.LoadedModel, sentence: str = DEFAULT_SENTENCE) -> list[Export]:
    """The standard figures and arrays of a model and a sentence, computed but not written.

    Position similarity (P·Pᵀ, the rotary kernel, or the per-head bias), position q = 128 against
    all, the PCA projection of the position vectors, the norms of the input representation's
    parts, the attention of layer 0 head 0 with its token labels, every head of layer 0, and all
    attention patterns (NPZ only). Views the model's scheme does not have are left out.

    Raises
    ------
    ValueError
        For an empty sentence.
    """
    if not sentence or not sentence.strip():
        raise ValueError("Give a sentence: the input representation and attention figures need one.")
    out: list[Export] = []
    name = lm.name
    encoding = posviz.position_encodings(lm)[0]
    n = encoding.num_positions
    axis = encoding.axis_label
    if encoding.kind in ("vectors", "bias"):
        limit = MAX_POSITIONS if encoding.kind == "vectors" else MAX_POSITIONS_BIAS
        positions, step = sample_positions(0, n - 1, limit)
        labels = positions + encoding.first_label
        stride = f", every {step}th" if step > 1 else ""
        q_row = int(np.abs(positions - min(PROFILE_Q, n - 1)).argmin())
        q_label = int(labels[q_row])
        if encoding.kind == "vectors":
            label = "K(m, n)" if encoding.scheme == "rotary" else "P·Pᵀ"
            matrix = posviz.similarity(encoding.vectors(positions), "dot")
            title = f"{name}: {label}, {axis}s {labels[0]}–{labels[-1]}{stride}"
            out.append(Export("position-similarity", figures.position_heatmap(
                matrix, int(labels[0]), title, label, step=step, names=(axis, axis)),
                {"similarity": matrix, "positions": labels}))
            profile = posviz.row_profile(matrix, q_row, normalize="max")
            out.append(Export(f"profile-q{q_label}", figures.row_profile_figure(
                profile, q_label, f"{name}: {label}, row q = {q_label} ÷ its max", f"{label} ÷ max", x=labels),
                {"profile": profile, "positions": labels}))
            coords = posviz.project(encoding.vectors(positions), "pca", 2)
            out.append(Export("projection-pca", figures.projection_figure(
                coords, [128] if n > 128 else [], False, f"{name}: PCA of {len(positions)} {axis} vectors{stride}",
                axis_name="PC", positions=labels), {"coords": coords, "positions": labels}))
        else:
            bias = encoding.bias(positions)
            title = f"{name}: bias, {axis}s {labels[0]}–{labels[-1]}{stride} (rows = queries, columns = keys)"
            out.append(Export("position-bias", figures.small_multiples(
                bias, [f"head {h}" for h in range(bias.shape[0])], title, names=("query", "key"),
                first=int(labels[0])), {"bias": bias, "positions": labels}))
            profile = bias[0, q_row]
            out.append(Export(f"profile-q{q_label}", figures.row_profile_figure(
                profile, q_label, f"{name}: bias of head 0, query q = {q_label}", "bias", x=labels),
                {"profile": profile, "positions": labels}))

    if lm.layout.token:
        emb = posviz.input_embeddings(lm, sentence)
        parts = {"token": emb.token, "segment": emb.segment, "position": emb.position, "sum": emb.sum,
                 "after LayerNorm": emb.normalized}
        parts = {part: value for part, value in parts.items() if value is not None}
        norms = np.stack([np.linalg.norm(value, axis=1) for value in parts.values()])
        out.append(Export("input-norms", figures.line_figure(
            dict(zip(parts, norms)), f"{name}: norm of each part, per token (log scale)", "token", "L2 norm",
            x_labels=emb.tokens, log_y=True),
            {"norms": norms, "parts": list(parts), "tokens": emb.tokens,
             **{part.replace(" ", "_").lower(): value for part, value in parts.items()}}))

    att = posviz.attention(lm, sentence)
    patterns, rows, cols = att.stack("encoder")
    layer0 = patterns[0]
    top = float(layer0.max())
    out.append(Export("attention-layer0-head0", figures.token_heatmap(
        layer0[0], rows, f"{name}: attention, layer 0, head 0", "weight", "query", "key", zmin=0, zmax=top,
        col_tokens=cols), {"attention": layer0[0], "tokens": rows}))
    out.append(Export("attention-layer0-heads", figures.heads_grid(
        layer0, f"{name}: attention, layer 0, every head (rows = queries, columns = keys)", zmax=top),
        {"attention": layer0, "tokens": rows}))
    out.append(Export("attention-all-layers", None, {"attention": patterns, "tokens": rows}))
    return out


def export_standard_set(lm: posviz.LoadedModel, sentence: str, out_dir, progress: Callable | None = None,
                        images: bool = True) -> list[Path]:
    """Write the standard set (:func:`standard_set`) of ``lm`` and ``sentence`` into ``out_dir``.

    Each figure as ``.html`` (interactive, plotly.js inside: opens offline), ``.png`` (at
    :data:`PNG_SCALE`) and ``.svg``; each view's arrays as ``.npz`` and its first array as
    ``.csv`` (where 1-D or 2-D).

    Parameters
    ----------
    lm : posviz.LoadedModel
    sentence : str
    out_dir : str or Path
        Created where missing; files of the same names are replaced.
    progress : callable, optional
        ``progress(path, done, total)`` after each file written.
    images : bool
        False: HTML and arrays only (no browser needed).

    Returns
    -------
    list of Path
        The files written, in a stable order.

    Raises
    ------
    ExportError
        PNG/SVG asked for but no browser found (checked before anything is written), or an
        image failed to render.
    ValueError
        For an empty sentence.
    """
    out_dir = Path(out_dir)
    if images:
        require_browser()
    views = standard_set(lm, sentence)
    planned = [path for view in views for path in view.files(out_dir, images)]
    total, done = len(planned), 0
    out_dir.mkdir(parents=True, exist_ok=True)

    def wrote(path: Path) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(path, done, total)

    jobs = []
    for view in views:
        for path in view.files(out_dir, images):
            if path.suffix == ".html":
                path.write_text(figure_html(view.figure, view.stem), encoding="utf-8")
            elif path.suffix == ".npz":
                path.write_bytes(npz_bytes(view.arrays))
            elif path.suffix == ".csv":
                path.write_text(csv_text(view.arrays[csv_array(view.arrays)]), encoding="utf-8")
            else:
                jobs.append((view.figure, path))
                continue
            wrote(path)
    if jobs:
        write_images(jobs, done=wrote)
    return planned
