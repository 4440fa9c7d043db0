"""How every figure looks: colours, fonts, titles that wrap, tick labels that never overlap, and the
same figure for a projector.

The builders of :mod:`posviz.views.figures` start each figure with :func:`new_figure`, which keeps
the figure's own words (its title, its token labels) in ``layout.meta``, so that
:func:`for_presentation` can set them again for larger fonts. The colour scales are colour-blind
safe throughout: Viridis (sequential), RdBu (diverging), Okabe & Ito's eight colours, and Viridis
samples where a chart has more lines than eight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import plotly.graph_objects as go
from plotly.colors import sample_colorscale

#: Sequential, colour-blind-safe scale for similarities and attention.
SEQUENTIAL = "Viridis"
#: Diverging scale (centred on 0) for raw vector components.
DIVERGING = "RdBu_r"
#: Colour-blind-safe qualitative colours (Okabe & Ito) for position ranges and parts; the two
#: blues are far apart so that five lines never show two alike.
QUALITATIVE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#F0E442"]
#: The colour and dash of a reference line (the sinusoid beside a model's heads).
REFERENCE = dict(color="#000000", dash="dash")
#: Grey of the cells a figure leaves out (masked, or hidden below a threshold).
MISSING = "#d0d0d0"

#: Font sizes (pixels) of figures as shown, and in presentation mode.
FONT, PRESENT_FONT = 15, 22
#: A title is wrapped after about this many characters (fewer for a projector's larger font): a
#: chart is at least about 560 pixels wide at 1024 × 768, 520 in presentation mode.
TITLE_CHARS, PRESENT_TITLE_CHARS = 54, 38
#: A slide's figure whose height follows its width is as wide as the slide's chart area is high
#: (about 545 pixels at 1024 × 768) times its aspect: its title wraps after this many characters per
#: unit of aspect (18-pixel text).
SLIDE_CHARS_PER_ASPECT = 56
#: Pixels between a figure's subtitle and its plot area, on a screen and in the larger type of a
#: projector and a slide: a heatmap's first row label is centred on the plot's top edge, half of it
#: above it (on a slide at 1024 × 768, 8 pixels left its "0" touching the subtitle; on a screen, the
#: "L0 H0" of the every-head-by-offset heatmap under a subtitle of two lines).
TITLE_GAP, PRESENT_TITLE_GAP = 12, 14
#: Font size of the titles of subplots (tiles of small multiples, panels side by side), and of every annotation in presentation mode.
TILE_TITLE_FONT, PRESENT_ANNOTATION_FONT = 13, 20
#: Most token labels on one axis of a heatmap (every k-th beyond; hover names every token). A label
#: needs about 1.4 times its font size; the smallest heatmap the app draws is about 520 pixels a
#: side, and about 380 in presentation mode and on a slide at 1024 × 768.
TICK_LABELS, PRESENT_TICK_LABELS = 24, 12
#: The same for a heatmap alone on a slide (about 500 pixels a side at 1024 × 768).
SLIDE_TICK_LABELS = 16

_MARGIN = dict(l=70, r=30, t=30, b=60)


def _template() -> go.layout.Template:
    """plotly's "plotly_white" template with the defaults of the trace types posviz draws only
    (heatmap, scatter, scatter3d, bar): the same look, at half the size. A template is copied into
    every figure and sent with it; the whole of plotly_white, with its defaults of 24 trace types,
    costs about 4 ms more per figure and 3.5 kB more on the wire."""
    import plotly.io as pio

    white = pio.templates["plotly_white"]
    return go.layout.Template(layout=white.layout, data={kind: white.data[kind]
                                                          for kind in ("heatmap", "scatter", "scatter3d", "bar")})


#: The template of every figure (:func:`new_figure`).
TEMPLATE = _template()


def wrap(text: str, width: int) -> str:
    """``text`` with ``<br>`` between words so that no line is longer than ``width`` characters
    (a longer word stays whole); existing ``<br>`` are kept.

    Examples
    --------
    >>> wrap("Layer 0, mean over heads · encoder self-attention", 30)
    'Layer 0, mean over heads ·<br>encoder self-attention'
    """
    lines = []
    for part in str(text).split("<br>"):
        line = ""
        for word in part.split(" "):
            if line and len(line) + 1 + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return "<br>".join(lines)


def new_figure(title: str, height: int | None = 560, notes: Sequence[str] = (), aspect: float | None = None,
               max_width: int | None = None) -> go.Figure:
    """An empty figure in posviz's look, its title wrapped and its notes as a subtitle.

    Parameters
    ----------
    title : str
        The figure's title (kept in ``layout.meta["title"]`` for :func:`for_presentation`).
    height : int or None
        Pixels; None for a figure whose width decides its height (``aspect``).
    notes : sequence of str
        What the reader must know to read it right ("colours clipped to the 1st–99th
        percentile"), joined as the subtitle.
    aspect : float or None
        Width ÷ height of a figure whose height follows its width in the app (a heatmap with square
        cells: 1; small multiples: their columns ÷ rows), kept in ``layout.meta["aspect"]`` for the
        app's layout and for exports (:func:`aspect_of`).
    max_width : int or None
        Pixels the app draws a figure whose height follows its width at most wide (small multiples:
        tiles no larger than their titles' room suits), kept in ``layout.meta["max_width"]``
        (:func:`max_width_of`); None: as wide as its column.
    """
    fig = go.Figure(layout=dict(font=dict(size=FONT), margin=_MARGIN, colorway=QUALITATIVE, height=height,
                                meta={"title": title, "subtitle": " · ".join(notes), "aspect": aspect,
                                      "max_width": max_width, "look": "screen"}))
    assign_validated(fig.layout, template=TEMPLATE)
    _place_title(fig)
    return fig


def assign_validated(obj, **props) -> None:
    """Assign properties to a plotly object (a figure's layout) that plotly has validated before
    (:data:`TEMPLATE`; a layout taken from a figure with ``to_plotly_json``), without validating them
    anew: plotly keeps them as given and builds their objects when they are read, as it does for
    its default template (``BaseFigure._initialize_layout_template``). Validating :data:`TEMPLATE`
    takes some 6 ms each time, a dozen subplots' axes and titles some 15 ms; this, well under 1 ms.

    The values are kept, not copied: pass values no one changes afterwards (``to_plotly_json``
    returns a copy).
    """
    validating, obj._validate = obj._validate, False
    try:
        for name, value in props.items():
            obj[name] = value
    finally:
        obj._validate = validating


@dataclass(frozen=True)
class _Look:
    """Font sizes (pixels) and wrapping widths (characters) of a figure's title, subtitle and the
    titles of its subplots, and the pixels between its subtitle and its plot area, for one way of
    showing it."""

    title_font: int
    title_chars: int
    subtitle_font: int
    subtitle_chars: int
    tile_font: int
    gap: int


#: On a screen, on a projector (:func:`for_presentation`), and on a slide (:func:`for_slide`: the
#: slide's heading names the view, so the figure's title and subtitle become one line of the
#: subtitle's size, wrapped for a full-width slide; a slide of ``k`` views side by side wraps at
#: 1 / ``k`` of that).
LOOKS = {"screen": _Look(18, TITLE_CHARS, 14, round(TITLE_CHARS * 1.3), TILE_TITLE_FONT, TITLE_GAP),
         "projector": _Look(26, PRESENT_TITLE_CHARS, 18, round(PRESENT_TITLE_CHARS * 1.4), PRESENT_ANNOTATION_FONT,
                            PRESENT_TITLE_GAP),
         "slide": _Look(20, 90, 18, 90, PRESENT_ANNOTATION_FONT, PRESENT_TITLE_GAP)}


def _place_title(fig: go.Figure) -> None:
    """Set the title and subtitle kept in ``layout.meta`` in the figure's look, above the plot area
    (``pad`` leaves room for the subtitle's lines, which plotly draws under the title, and for the
    titles of subplots), the top margin growing to hold them however many lines they wrap to."""
    meta = fig.layout.meta
    look = LOOKS[meta.get("look", "screen")]
    title, subtitle = meta.get("title", fig.layout.title.text or ""), meta.get("subtitle") or ""
    chars = look.title_chars // meta.get("columns", 1)
    if meta.get("look") == "slide":
        title, subtitle = " · ".join(t for t in (title, subtitle) if t), ""
        font = look.subtitle_font
        if meta.get("aspect"):  # as wide as the slide's height allows: about 60 characters per unit of aspect at 1024 × 768
            chars = min(chars, round(SLIDE_CHARS_PER_ASPECT * meta["aspect"]))
    else:
        font = look.title_font
    subtitle = wrap(subtitle, look.subtitle_chars) if subtitle else ""
    lines = subtitle.count("<br>") + 1 if subtitle else 0
    tile_lines = int(meta.get("tiles") or 0)
    pad = look.gap + round(lines * look.subtitle_font * 1.3) + (round((0.4 + 1.2 * tile_lines) * look.tile_font)
                                                                 if tile_lines else 0)
    # assigned whole (this function sets every property of the title): a tenth of update_layout's time
    fig.layout.title = dict(text=wrap(title, chars), x=0, xanchor="left", automargin=True, yref="paper", y=1,
                            yanchor="bottom", pad=dict(b=pad), font=dict(size=font),
                            subtitle=dict(text=subtitle or None, font=dict(size=look.subtitle_font)))
    if tile_lines and not title:  # no title pushes the plot down (a slide's, its heading): the margin holds them
        fig.layout.margin.t = max(fig.layout.margin.t or 0, pad)
    if meta.get("tiles") and fig.layout.annotations[0].font.size != look.tile_font:  # once per look: 6 ms for 12
        fig.update_annotations(font_size=look.tile_font)


def _remember(fig: go.Figure, **meta) -> go.Figure:
    """Keep ``meta`` in ``layout.meta`` and set the title again; returns the figure."""
    fig.layout.meta = {**(fig.layout.meta or {}), **meta}
    _place_title(fig)
    return fig


def leave_room_for_tile_titles(fig: go.Figure) -> None:
    """Set the titles of a figure's subplots (tiles of small multiples, panels side by side), which
    plotly draws just over the plot area, in the figure's look, and its title above them, as many
    lines as the longest tile title has (in place)."""
    lines = max((a.text.count("<br>") + 1 for a in fig.layout.annotations if a.text), default=1)
    _remember(fig, tiles=lines)


def legend_below(fig: go.Figure, **legend) -> None:
    """The figure's legend in rows at the bottom of the figure, under the x axis and its title
    (plotly makes room for both: ``yref="container"``), in place; ``legend`` adds to its settings."""
    fig.layout.legend = dict(orientation="h", x=0, xanchor="left", yref="container", y=0, yanchor="bottom", **legend)


def scene_3d(fig: go.Figure, titles: Sequence[str]) -> None:
    """Lay out a 3-D scatter's scene in place: its axes titled ``titles`` (x, y, z), a cube and a camera
    further out than plotly's default, so that no axis title leaves the scene. Put its legend below
    (:func:`legend_below`): beside the scene it takes a third of its width, and at 1024 px the z axis's
    title and ticks fell outside the narrower scene."""
    fig.update_layout(scene=dict(xaxis_title=titles[0], yaxis_title=titles[1], zaxis_title=titles[2],
                                 camera=dict(eye=dict(x=1.7, y=1.7, z=1.2)), aspectmode="cube"))


def set_title(fig: go.Figure, text: str) -> None:
    """Set the figure's title, wrapped and placed in its look (kept in ``layout.meta["title"]`` for
    :func:`for_presentation`)."""
    _remember(fig, title=text)


def set_subtitle(fig: go.Figure, text: str) -> None:
    """Set the figure's subtitle (its notes; the model it shows goes first, see :func:`name_model`),
    wrapped as the title is (kept in ``layout.meta["subtitle"]`` for :func:`for_presentation`)."""
    _remember(fig, subtitle=text)


def name_model(fig: go.Figure, name: str) -> go.Figure:
    """The figure with the model it shows named first in its subtitle (in place), once; returns it.
    A figure already named (``layout.meta["named"]``: a comparison names each side itself) is left
    as it is."""
    meta = fig.layout.meta or {}
    if not meta.get("named"):
        notes = meta.get("subtitle")
        _remember(fig, subtitle=name + (f" · {notes}" if notes else ""), named=True)
    return fig


def names_its_models(fig: go.Figure) -> go.Figure:
    """Mark a figure that names every model it shows itself (tile titles, a legend): :func:`name_model`
    leaves its subtitle as it is (in place); returns it."""
    fig.layout.meta = {**(fig.layout.meta or {}), "named": True}
    return fig


def colour_bar(title: str) -> dict:
    """A heatmap's colour bar titled ``title`` along its right side, so that the bar is as high
    as the plot area (a title on top would shorten it)."""
    return dict(title=dict(text=title, side="right"))


def clipped_colour_ticks(top: float, most: int = 5) -> dict:
    """The ticks of a colour bar from 0 whose scale a clipping ends at ``top``: round values below it
    (steps of 1, 2 or 5 × 10ᵏ, at most ``most`` of them) and ``top`` itself, labelled "≥ top" (the cells
    at the top colour hold that much or more); ``tickvals`` and ``ticktext`` for a ``colorbar``.

    Examples
    --------
    >>> clipped_colour_ticks(0.0126)["ticktext"]
    ['0', '0.005', '0.01', '≥ 0.013']
    >>> clipped_colour_ticks(0.98)["ticktext"]
    ['0', '0.2', '0.4', '0.6', '0.8', '≥ 0.98']
    """
    raw = top / most
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw * 0.999)
    values = [round(k * step, 12) for k in range(int(top / step) + 1) if k * step <= top - 0.5 * step]
    return dict(tickvals=[*values, top], ticktext=[f"{v:.3g}" for v in values] + [f"≥ {top:.2g}"])


def aspect_of(fig: go.Figure) -> float | None:
    """Width ÷ height of a figure whose height follows its width (:func:`new_figure`), or None."""
    meta = fig.layout.meta
    return meta.get("aspect") if isinstance(meta, dict) else None


def max_width_of(fig: go.Figure) -> int | None:
    """Pixels the app draws a figure at most wide (:func:`new_figure`), or None: its column's width."""
    meta = fig.layout.meta
    return meta.get("max_width") if isinstance(meta, dict) else None


def set_axes(fig: go.Figure, axis: str, col: int | None = None, **props) -> None:
    """Set ``props`` on the figure's ``axis`` axes ("x" or "y") by assignment: on every one, or with
    ``col`` on that of the ``col``-th panel of a one-row grid of subplots (``xaxis``, ``xaxis2`` …).

    What ``fig.update_xaxes(**props)`` (with ``row=1, col=col``) does, each property replaced whole
    rather than merged, in a fraction of its time: plotly's update methods go through its batch-update
    machinery, about 0.6 ms a call, a dozen calls a figure. Each axis is assigned whole (its properties
    so far and ``props``): set one at a time, each property went through plotly's relayout callbacks.
    """
    layout = fig.layout
    names = ([f"{axis}axis{col if col > 1 else ''}"] if col
             else [a.plotly_name for a in getattr(fig, f"select_{axis}axes")()])
    for name in names:
        layout[name] = {**layout[name].to_plotly_json(), **props}


#: Pixels between a token label and its heatmap: "[CLS]" and "[SEP]" otherwise touch the first cell.
TOKEN_STANDOFF = 5


def token_ticks(fig: go.Figure, axis: str, labels: Sequence[str], most: int = TICK_LABELS, first: int = 0) -> None:
    """Label a numeric token axis with its tokens, every k-th where there are more than ``most``,
    so that no two labels overlap; x labels stand upright (rotated 90°), each label
    :data:`TOKEN_STANDOFF` pixels off the heatmap. Hover still names every token. The labels are kept
    in ``layout.meta`` for :func:`for_presentation`. Of a figure with subplots, the first subplot's
    axis (``xaxis`` or ``yaxis``; shared axes show its labels).

    Parameters
    ----------
    axis : {"x", "y"}
    labels : sequence of str
        One per row (y) or column (x), in order.
    first : int
        The axis value of the first label (a window of a longer input starts there).
    """
    labels = list(labels)
    step = max(1, math.ceil(len(labels) / most))
    ticks = np.arange(0, len(labels), step)
    set_axes(fig, axis, 1, tickmode="array", tickvals=first + ticks, ticktext=[labels[i] for i in ticks],
             ticklabelstandoff=TOKEN_STANDOFF, **({"tickangle": -90} if axis == "x" else {}))
    fig.layout.meta = {**fig.layout.meta, f"{axis}_tokens": labels, f"{axis}_first": first}


def log_ticks(fig: go.Figure, values: Sequence[np.ndarray], axis: str = "y") -> None:
    """A log axis labelled in plain numbers a student reads right: 1, 2, 5 × 10ᵏ within the data's
    range (only the powers of ten where it spans more than three decades), written as decimals
    ("0.2", "5", "1000"; powers of ten beyond 0.0001 and 100 000: :func:`_plain`), never as the
    minor digits "9 8 7 6" plotly writes by default.

    Parameters
    ----------
    values : sequence of np.ndarray
        Every series on the axis; zeros, negatives and NaN are left out of the range.
    """
    finite = np.concatenate([np.ravel(np.asarray(v, dtype=np.float64)) for v in values])
    finite = finite[np.isfinite(finite) & (finite > 0)]
    if finite.size == 0:
        set_axes(fig, axis, type="log")
        return
    low, high = math.floor(math.log10(finite.min())), math.ceil(math.log10(finite.max()))
    steps = (1,) if high - low > 3 else (1, 2, 5)
    ticks = [m * 10.0 ** e for e in range(low, high + 1) for m in steps]
    ticks = [t for t in ticks if finite.min() / 1.5 <= t <= finite.max() * 1.5] or [10.0 ** low, 10.0 ** high]
    set_axes(fig, axis, type="log", tickmode="array", tickvals=ticks, ticktext=[_plain(t) for t in ticks])


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _plain(tick: float) -> str:
    """A tick of :func:`log_ticks` as a student reads it: a decimal from 0.0001 to 100 000
    ("0.002", "5", "1000"), a power of ten beyond ("10⁻⁶", "2×10⁻⁵"), never "1e-05".

    >>> [_plain(t) for t in (0.0002, 0.5, 20.0, 1e5, 1e-5, 2e-6, 5e7)]
    ['0.0002', '0.5', '20', '100000', '10⁻⁵', '2×10⁻⁶', '5×10⁷']
    """
    if 1e-4 <= tick <= 1e5:
        return f"{tick:.10f}".rstrip("0").rstrip(".")
    mantissa, exponent = f"{tick:.0e}".split("e")
    power = "10" + str(int(exponent)).translate(_SUPERSCRIPT)
    return power if mantissa == "1" else f"{mantissa}×{power}"


def line_colours(count: int) -> list[str]:
    """``count`` distinct colour-blind-safe line colours: Okabe & Ito's eight, or as many samples
    of Viridis (a chart of 12 or 16 heads: each its own colour, in head order)."""
    if count <= len(QUALITATIVE):
        return QUALITATIVE[:count]
    return sample_colorscale(SEQUENTIAL, [i / (count - 1) for i in range(count)])


def for_presentation(fig: go.Figure) -> go.Figure:
    """The same figure for a projector, in place: larger text, thicker lines and markers, black text
    on white, titles wrapped for the larger font, fewer token labels so that none overlap.

    Colour scales stay the colour-blind-safe ones of this module.
    """
    fig.update_layout(font=dict(size=PRESENT_FONT, color="black"), legend_font_size=20)
    fig.update_traces(line_width=4, selector=dict(type="scatter"))
    fig.update_traces(marker_size=10, selector=dict(type="scatter", mode="markers"))
    fig.update_annotations(font_size=PRESENT_ANNOTATION_FONT)
    meta = fig.layout.meta or {}
    if "title" in meta:
        _remember(fig, look="projector")
    _large_token_ticks(fig, PRESENT_TICK_LABELS, PRESENT_FONT)
    if fig.layout.height:
        fig.update_layout(height=int(fig.layout.height * 1.25))
    return fig


def _large_token_ticks(fig: go.Figure, most: int, size: int) -> None:
    """The token labels (:func:`token_ticks`) of a figure in large type, in place: up to ``most`` labels
    in ``size`` pixels, else every label in the smaller type that fits as many in the same room, down
    to :data:`FONT` (13 tokens on a projector: every one at 20 px, not every other one at 22 px), else
    every k-th label in ``size``."""
    meta = fig.layout.meta or {}
    for axis in ("x", "y"):
        if f"{axis}_tokens" not in meta:
            continue
        labels, first = meta[f"{axis}_tokens"], meta.get(f"{axis}_first", 0)
        fitting = size * most // max(len(labels), 1)  # the type in which every label fits
        if fitting >= FONT:
            token_ticks(fig, axis, labels, len(labels), first)
            set_axes(fig, axis, 1, tickfont=dict(size=min(size, fitting)))
        else:
            token_ticks(fig, axis, labels, most, first)
            set_axes(fig, axis, 1, tickfont=dict(size=size))


def for_slide(fig: go.Figure, columns: int = 1, heading: str = "") -> go.Figure:
    """The same figure on a slide, one of ``columns`` side by side, in place: as
    :func:`for_presentation`, its height left to the slide, and its title and subtitle one smaller
    line under the slide's heading (only the subtitle where the ``heading`` is the title itself; a
    figure whose height follows its width, 1.2 times as wide for its height, :func:`aspect_of`);
    alone, up to :data:`SLIDE_TICK_LABELS` token labels; side by side, its text a little smaller
    (:data:`FONT` + 3 pixels, colour bars thinner), so that the plot area keeps more than half of
    its column at 1024 × 768."""
    for_presentation(fig)
    fig.update_layout(height=None, font_size=PRESENT_FONT if columns == 1 else FONT + 3)
    if columns > 1:
        fig.update_traces(colorbar_thickness=20, selector=dict(type="heatmap"))
    meta = fig.layout.meta or {}
    if columns == 1:
        _large_token_ticks(fig, SLIDE_TICK_LABELS, PRESENT_FONT)
    else:
        _large_token_ticks(fig, PRESENT_TICK_LABELS, FONT + 3)
    if "title" in meta:  # one line of title: the same plot area in a wider figure
        shown = "" if heading and heading == meta["title"].replace("<br>", " ") else meta["title"]
        _remember(fig, look="slide", columns=columns, title=shown,
                  aspect=meta["aspect"] and round(meta["aspect"] * (1.2 if columns == 1 else 1.05), 3))
    return fig
