"""Slide mode: a view full screen (no sidebar, no widgets, a large title and caption, the model named),
and lectures stepped through with the keyboard.

The URL says what is shown: ``slide=<view id>`` (several, comma-separated, side by side) shows those
views of the current page; ``lecture=<name>&step=<k>`` shows slide k (0-based) of a lecture
(:mod:`posviz.app.lectures`), on its page with its settings. ← / → and PageUp / PageDown (what
presentation clickers send) step through a lecture; Esc leaves slide mode. The page runs as usual
(its widgets take their values from the URL, hidden); :func:`posviz.app.downloads.show` hands its
views to the slide instead of drawing them, and :func:`draw` draws the chosen ones at the end of
the run into the slot :func:`begin` made at the top of the page.
"""

from __future__ import annotations

import html
from contextlib import nullcontext
from dataclasses import dataclass, field

import plotly.graph_objects as go
import streamlit as st

from posviz import export, settings
from posviz.app import layout
from posviz.app.lectures import Lecture, LectureError, read
from posviz.app.urls import PARAMS, settable
from posviz.app.widgets import release_bound_params
from posviz.views.figures import fit_tiles
from posviz.views.style import aspect_of, for_slide
from posviz.views.view import View

#: The query parameters of slide mode (not bound to widgets).
SLIDE_PARAMS = ("lecture", "step", "slide")
#: Width ÷ height of a slide's chart area, its heading, caption and footer taken out (some 960 × 510
#: pixels in a 1024 × 768 window, 1870 × 885 in 1920 × 1080): small multiples take the columns that give
#: their tiles the most room in it (:func:`posviz.views.figures.fit_tiles`).
SLIDE_AREA = 1.8

CSS = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="stHeader"] { display: none; }
.stMainBlockContainer { padding: 1rem 2rem 0.5rem !important; max-width: 100% !important; }
.stMainBlockContainer > [data-testid="stVerticalBlock"] > :not(:has(.st-key-posviz-slide)) { display: none; }
[data-testid="stVerticalBlock"]:has(> [data-testid="stLayoutWrapper"] > .st-key-posviz-slide)
  > :not(:has(> .st-key-posviz-slide)) { display: none; }
[data-testid="stLayoutWrapper"]:has(> .st-key-posviz-slide) { height: calc(100vh - 1.5rem); }
.posviz-slide-title { font-size: 2.2rem; font-weight: 700; line-height: 1.2; }
.st-key-posviz-slide [data-testid="stCaptionContainer"] p { font-size: 1.35rem; color: #222; }
.st-key-posviz-slide > * { flex-shrink: 0; }
.st-key-posviz-slide > [data-testid="stLayoutWrapper"]:has(> .st-key-posviz-slide-charts) {
  flex: 1 1 auto; min-height: 0; container-type: size; }
.st-key-posviz-slide-charts > [data-testid="stLayoutWrapper"] { height: 100%; }
.st-key-posviz-slide-charts [data-testid="stHorizontalBlock"], .st-key-posviz-slide-charts [data-testid="stColumn"],
.st-key-posviz-slide-charts [data-testid="stColumn"] > [data-testid="stVerticalBlock"] { height: 100%; }
.st-key-posviz-slide-charts [data-testid="stElementContainer"]:has([data-testid="stPlotlyChart"]) {
  flex: 1 1 auto; min-height: 0; }
.st-key-posviz-slide-charts [data-testid="stLayoutWrapper"]:has(> [class*="st-key-posviz-aspect"]) {
  max-height: 100%; min-height: 0; max-width: 100%; }
.st-key-posviz-slide-charts [class*="st-key-posviz-aspect"] { height: 100%; }
.st-key-posviz-key-pageup, .st-key-posviz-key-pagedown { display: none; }
</style>"""


@dataclass
class SlideRun:
    """What slide mode shows in one script run.

    Attributes
    ----------
    lecture : Lecture or None
        The lecture stepped through; None for a single slide of the current page (``slide=``).
    step : int
        0-based slide of the lecture.
    views : tuple of str
        The ids of the views shown; empty: the page's first view.
    note : str
        What the slide says about the link where it could not be followed (a step past the end).
    offered : list of View
        The views the page offered, in order (filled by :meth:`offer`).
    """

    lecture: Lecture | None
    step: int
    views: tuple[str, ...]
    note: str = ""
    offered: list[View] = field(default_factory=list)
    slot: object = None

    def offer(self, view: View) -> None:
        """Take a view the page shows (instead of drawing it in place)."""
        self.offered.append(view)

    @property
    def chosen(self) -> list[View]:
        """The views shown: those of :attr:`views` the page offered, in that order; the page's first
        view where it offered none of them."""
        chosen = [view for wanted in self.views for view in self.offered if view.id == wanted]
        return chosen or self.offered[:1]

    @property
    def missing(self) -> list[str]:
        """The ids of :attr:`views` the page did not offer."""
        return [wanted for wanted in self.views if not any(view.id == wanted for view in self.offered)]

    @property
    def title(self) -> str:
        """The slide's title (the lecture's, or the first view's shown)."""
        if self.lecture is not None:
            return self.lecture.slides[self.step].title
        return self.chosen[0].title.replace("<br>", " ") if self.chosen else ""


def _lecture(name: str) -> Lecture:
    """A lecture uploaded in this session, or :func:`posviz.app.lectures.read`'s."""
    uploaded = st.session_state.get("posviz_lectures", {})
    return uploaded[name] if name in uploaded else read(name, hosted=settings.hosted())


def from_url() -> SlideRun | None:
    """Slide mode as the URL asks for it, or None. A lecture that cannot be read gets a notice and
    the page shows as usual."""
    params = st.query_params
    if "lecture" in params:
        try:
            lecture = _lecture(params["lecture"])
        except LectureError as exc:
            st.warning(str(exc), icon=":material/slideshow:")
            return None
        asked, last = params.get("step", "0"), len(lecture.slides) - 1
        try:
            step = min(max(int(asked), 0), last)
        except ValueError:
            step = 0
        note = "" if asked == str(step) or "step" not in params else (
            f"The link asks for step {asked}; this lecture's steps are 0 to {last}, so slide {step + 1} is shown.")
        return SlideRun(lecture, step, lecture.slides[step].views, note or st.session_state.pop("posviz_note", ""))
    if "slide" in params:
        return SlideRun(None, 0, tuple(v for v in params["slide"].split(",") if v))
    return None


def _go(step: int) -> None:
    st.session_state["posviz_goto"] = step


def _leave() -> None:
    for name in SLIDE_PARAMS:
        st.query_params.pop(name, None)


def present(lecture: Lecture, step: int = 0) -> None:
    """Open slide ``step`` of a lecture (a callback of a button: the next run goes there)."""
    st.session_state.setdefault("posviz_lectures", {})
    if lecture.name not in st.session_state["posviz_lectures"]:
        st.session_state["posviz_lectures"][lecture.name] = lecture
    st.session_state["posviz_goto"] = (lecture.name, step)


def follow(run: SlideRun | None) -> None:
    """Go where the lecture says: to the slide a button asked for, or to the slide of the URL the first
    time this session meets it (``st.switch_page`` to its page with its settings). On the run that
    arrives there, the page's widgets drop what they held, so that each takes the slide's setting
    from the URL or its default: nothing leaks from the slide before (or from the page as it was
    before the lecture). Returns where nothing needs to move."""
    goto = st.session_state.pop("posviz_goto", None)
    if isinstance(goto, tuple):
        lecture, step = _lecture(goto[0]), goto[1]
    elif goto is not None and run is not None and run.lecture is not None:
        lecture, step = run.lecture, min(max(goto, 0), len(run.lecture.slides) - 1)
    elif run is not None and run.lecture is not None and st.session_state.get("posviz_arrived") != (
            run.lecture.name, run.step):
        lecture, step = run.lecture, run.step
    else:
        if run is not None and run.lecture is not None and st.session_state.pop("posviz_settle", False):
            _settle(run.lecture.slides[run.step])
        return
    st.session_state["posviz_arrived"] = (lecture.name, step)
    st.session_state["posviz_settle"] = True
    if run is not None and run.note:  # said on the slide the switch opens
        st.session_state["posviz_note"] = run.note
    slide = lecture.slides[step]
    keep = {name: st.query_params[name] for name in ("present",) if name in st.query_params}
    release_bound_params()
    st.switch_page(f"pages/{slide.page}.py",
                   query_params={**slide.params, **keep, "lecture": lecture.name, "step": str(step)})


def _settle(slide) -> None:
    """Before any widget of the slide's page is drawn, set each (all but ``present``) to the slide's
    setting, or drop its value: it then takes the setting from the URL, or its default.

    A value set here (texts, switches, choices: :func:`posviz.app.urls.settable`) also reaches the
    browser's copy of the widget, which a value merely dropped does not, so the model, the sentence
    and the switches of one slide never come back on the next, nor when Esc leaves slide mode. This
    runs on the run that arrives at the slide, not before the switch: Streamlit keeps the values of
    bound widgets it unmounts at the end of the run that leaves a page, so a value dropped then
    would come back."""
    for name, param in PARAMS.items():
        if slide.page in param.pages and param.widget and name != "present":
            st.session_state.pop(name, None)
            ok, value = settable(name, slide.params[name]) if name in slide.params else (False, None)
            if ok:
                st.session_state[name] = value


def begin(run: SlideRun, above) -> None:
    """Hide everything but the slide, and make its slot in ``above``, the container at the top of the page."""
    st.html(CSS)
    run.slot = above.container(key="posviz-slide")


def _footer(run: SlideRun) -> None:
    row = st.container(horizontal=True, vertical_alignment="center", gap="medium")
    if run.lecture is not None:
        last = len(run.lecture.slides) - 1
        row.button("Previous", icon=":material/arrow_back:", shortcut="Left", on_click=_go, args=(run.step - 1,),
                   disabled=run.step == 0, key="posviz-key-left")
        row.button("PageUp", shortcut="PageUp", on_click=_go, args=(run.step - 1,), key="posviz-key-pageup")
        row.markdown(f"**{run.step + 1} / {last + 1}** · {run.lecture.title}")
        row.button("Next", icon=":material/arrow_forward:", shortcut="Right", on_click=_go, args=(run.step + 1,),
                   disabled=run.step == last, key="posviz-key-right")
        row.button("PageDown", shortcut="PageDown", on_click=_go, args=(run.step + 1,), key="posviz-key-pagedown")
    row.button("Exit", icon=":material/close:", shortcut="Esc", on_click=_leave, key="posviz-key-esc",
               help="Leave slide mode (Esc).")


def draw(run: SlideRun, model: str, full_name: str, failure: str = "") -> None:
    """Draw the slide into its slot: the title with the model's short name, the chosen views side by
    side at the height of the screen, the caption, the lecture's step and its keys.

    Parameters
    ----------
    run : SlideRun
    model, full_name : str
        The model shown: its short name (in the title) and its full name (in the caption).
    failure : str
        Why the model asked for is not the one shown, or empty.
    """
    chosen, missing = run.chosen, run.missing
    slide = run.lecture.slides[run.step] if run.lecture is not None else None
    with run.slot:
        st.html(f'<div class="posviz-slide-title">{html.escape(run.title)} · {html.escape(model)}</div>')
        if failure:
            st.warning(f"Showing **{full_name}**, not the model this slide asks for: {failure}",
                       icon=":material/swap_horiz:")
        if run.note:
            st.info(run.note, icon=":material/info:")
        if missing:
            st.info(f"This page has no view {', '.join(missing)} for {model}; showing "
                    f"{', '.join(v.id for v in chosen) or 'nothing'}. Its views here: "
                    f"{', '.join(v.id for v in run.offered) or 'none'} (README, Teaching).", icon=":material/info:")
        with st.container(key="posviz-slide-charts"):
            places = st.columns(len(chosen)) if len(chosen) > 1 else [nullcontext()]
            for place, view in zip(places, chosen):
                # on a copy (a cached view is every session's); the heading names the model
                fig = for_slide(fit_tiles(go.Figure(view.figure), SLIDE_AREA / len(chosen)), len(chosen),
                                heading=run.title)
                with place, (layout.proportional(aspect_of(fig)) if aspect_of(fig) else nullcontext()):
                    st.plotly_chart(fig, theme=None, height="stretch",
                                    config={**export.plotly_config(export.file_stem(model, view.stem)),
                                            "displayModeBar": False})  # no toolbar over a slide's titles
        caption = (slide.caption if slide is not None and slide.caption else
                   " ".join(view.caption for view in chosen if view.caption))
        if caption and not caption.endswith((".", "!", "?")):
            caption += "."  # a lecture's caption without a full stop, before the next sentence
        st.caption(" ".join(filter(None, (caption, f"Model: {full_name}."))))
        _footer(run)
