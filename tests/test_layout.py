"""Layouts that hold in front of a room: every page at 1024 × 768 (a projector) and 1920 × 1080,
with and without presentation mode, and every slide of the built-in lecture, in a real Chromium.

Each is checked from the page as drawn (:data:`tests.support.layout.LAYOUT_PROBLEMS`): no clipped
text, no chart title outside its chart, heatmaps at least half their column wide (or half the
screen high on a slide), colour bars as high as their heatmap, no overlapping tick labels, no
error box. A full-page screenshot of each is saved under ``artifacts/screenshots/layout-*.png``
for a person to look at. The built-in lecture is then stepped through with the keys a lecturer
(or a presentation clicker) presses.
"""

from __future__ import annotations

import re

import pytest

from posviz.app.lectures import read
from posviz.app.urls import EVERY_PAGE
from posviz.loading import short_name
from posviz.views.figures import TILE_MAX_PX
from tests.support.browser import browser  # noqa: F401  the module's Chromium (a fixture)
from tests.support.browser import CHART, IDLE, ROOT, full_screenshot, new_page, open_page, running_app
from tests.support.layout import LAYOUT_PROBLEMS

pytestmark = pytest.mark.browser

LOG = ROOT / "artifacts" / "streamlit-layout-test.log"
SIZES = {"1024x768": (1024, 768), "1920x1080": (1920, 1080)}
GALLERY = read("gallery")
SLIDE_TITLE = ".posviz-slide-title"


@pytest.fixture(scope="module")
def app_url():
    """The app on a free port, offline on the bundled model; its base URL."""
    with running_app(LOG, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1") as (base, _process):
        yield base


def _path(stem: str) -> str:
    return "/" if stem == "model" else f"/{stem}"


def _looked_at(page, url: str, name: str, slide: bool = False, chart: bool = True) -> list[str]:
    """Open ``url``, save its screenshot as ``layout-<name>``, and return its layout problems."""
    open_page(page, url, f"layout-{name}", LOG, chart=chart)
    page.wait_for_timeout(1_000)  # square heatmaps settle their height after their first draw
    problems = page.evaluate(LAYOUT_PROBLEMS, slide)
    full_screenshot(page, f"layout-{name}")
    return problems


@pytest.mark.parametrize("present", [False, True], ids=["screen", "present"])
@pytest.mark.parametrize("size", SIZES)
def test_every_page_holds(app_url, browser, size, present):
    found = {}
    with new_page(browser, *SIZES[size]) as page:
        for stem in EVERY_PAGE:
            url = app_url + _path(stem) + ("?present=true" if present else "")
            problems = _looked_at(page, url, f"{stem}-{size}" + ("-present" if present else ""),
                                  chart=stem != "gallery")
            if problems:
                found[stem] = problems
    assert not found, found


@pytest.mark.parametrize("size", SIZES)
def test_every_gallery_slide_holds(app_url, browser, size):
    found = {}
    with new_page(browser, *SIZES[size]) as page:
        for step, slide in enumerate(GALLERY.slides):
            problems = _looked_at(page, f"{app_url}/?lecture=gallery&step={step}", f"slide{step}-{size}", slide=True)
            heading = page.locator(SLIDE_TITLE).inner_text()
            if not heading.startswith(slide.title):
                problems.append(f"heading {heading!r}")
            if problems:
                found[step] = problems
    assert not found, found


#: The top and height (px) of each card of the Gallery: a column's bordered container (its first layout wrapper).
CARDS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stColumn"]')].map(column =>
    [column.getBoundingClientRect().top, column.querySelector('[data-testid="stLayoutWrapper"]').getBoundingClientRect().height])"""


@pytest.mark.parametrize("size", SIZES)
def test_gallery_cards_of_a_row_are_one_height(app_url, browser, size):
    with new_page(browser, *SIZES[size]) as page:
        open_page(page, f"{app_url}/gallery", f"gallery-cards-{size}", LOG, chart=False)
        cards = page.evaluate(CARDS_JS)
    assert len(cards) == len(GALLERY.slides)
    rows: dict[int, set[int]] = {}
    for top, height in cards:
        rows.setdefault(round(top), set()).add(round(height))
    assert len(rows) == len(GALLERY.slides) // 2 and all(len(heights) == 1 for heights in rows.values()), rows


#: Of each chart of small multiples on the page (a second row of tiles): the side of a tile and the
#: room between two rows of tiles (their titles'), pixels.
TILES_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map(plot => plot._fullLayout)
    .filter(layout => layout.yaxis4 && layout.yaxis.scaleanchor)
    .map(layout => [layout.yaxis._length, layout.yaxis4._offset - layout.yaxis._offset - layout.yaxis._length])"""


@pytest.mark.parametrize("size", SIZES)
def test_rows_of_tiles_leave_room_for_their_titles_only(app_url, browser, size):
    """The identical-word tiles of Properties (3 × 4, three lines of title each): at 1920 px no larger
    than TILE_MAX_PX, so the rows of titles between them stay no taller than a few lines."""
    with new_page(browser, *SIZES[size]) as page:
        open_page(page, f"{app_url}/properties", f"tiles-{size}", LOG)
        page.wait_for_timeout(1_000)
        ((tile, gap),) = page.evaluate(TILES_JS)
    assert 100 <= tile <= TILE_MAX_PX + 1, tile
    assert 50 <= gap <= 160, gap  # three 13-pixel lines and their margins; 268 px at 1920 before the cap


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("url", ["/properties?slide=identical-word-attention", "/attention?slide=attention-grid"])
def test_small_multiples_on_a_slide_fill_it(app_url, browser, size, url):
    """Tiles on a landscape slide take as many columns as make them largest: the identical-word tiles (twelve,
    three lines of title each) were three columns of 60-pixel tiles at 1024 × 768, their titles over the tiles
    above and the first row's cut at the top."""
    with new_page(browser, *SIZES[size]) as page:
        problems = _looked_at(page, app_url + url, f"tiles-slide-{url.rsplit('=', 1)[1]}-{size}", slide=True)
        tile = page.evaluate("() => document.querySelector('.js-plotly-plot')._fullLayout.yaxis._length")
    assert not problems, problems
    assert tile >= 100, tile


#: Of the chart whose title starts with the text given: the pixels between its left edge and its plot
#: area's, and the plot area's width.
BAND_JS = """start => {
  const chart = [...document.querySelectorAll('.js-plotly-plot')]
    .find(c => (c.querySelector('.gtitle') || {}).textContent?.startsWith(start));
  const plot = chart.querySelector('.nsewdrag').getBoundingClientRect();
  return [plot.left - chart.getBoundingClientRect().left, plot.width];
}"""


@pytest.mark.parametrize("size", SIZES)
def test_a_square_heatmap_of_the_whole_width_stands_beside_its_labels(app_url, browser, size):
    """The Attention page's zoom (a long input), one square heatmap across the main column: at
    1920 × 1080 its height was held to the window and the square sat 550 pixels right of its title,
    a blank band between; the chart is now no wider than its height allows."""
    text = " ".join(["The cat chased the dog."] * 120)
    with new_page(browser, *SIZES[size]) as page:
        open_page(page, f"{app_url}/attention?text={text}&text_pair=", f"zoom-{size}", LOG)
        page.wait_for_timeout(1_000)
        band, width = page.evaluate(BAND_JS, "Layer 0, head 0: queries 0–31")
    assert width >= 300, width
    assert band <= 150, band  # the token labels' room, no more


#: The top of each metric's value on the page, pixels.
METRIC_TOPS_JS = """() => [...document.querySelectorAll('[data-testid="stMetricValue"]')]
    .map(value => value.getBoundingClientRect().top)"""


@pytest.mark.parametrize("size", SIZES)
def test_scores_side_by_side_stand_in_line(app_url, browser, size):
    """Properties' scores, the model's beside the sinusoid's, three pairs: at 1024 px the model's label
    wraps to two lines and the sinusoid's does not; each pair's values still stand on one line."""
    with new_page(browser, *SIZES[size]) as page:
        open_page(page, f"{app_url}/properties", f"scores-{size}", LOG)
        tops = page.evaluate(METRIC_TOPS_JS)
    assert len(tops) == 6, tops
    assert all(abs(a - b) < 1 for a, b in zip(tops[::2], tops[1::2])), tops


def _arrive(page, step: int) -> None:
    """Wait until slide ``step`` of the Gallery is drawn, and check its URL and its charts."""
    slide = GALLERY.slides[step]
    page.wait_for_function("step => new URLSearchParams(location.search).get('step') === step", arg=str(step))
    page.locator(SLIDE_TITLE, has_text=slide.title).wait_for()
    page.locator(IDLE).wait_for(state="attached")
    page.locator(CHART).first.wait_for(state="visible")
    assert f"/{slide.page}" in page.url or (slide.page == "model" and "/?" in page.url), page.url
    charts = page.locator('[data-testid="stPlotlyChart"]')
    assert charts.count() == max(1, len(slide.views)), (step, charts.count())
    if "text" not in slide.params:  # nothing leaks from the slide before
        assert "text=" not in page.url, (step, page.url)
    heading = page.locator(SLIDE_TITLE).inner_text()
    assert heading == f"{slide.title} · {short_name(slide.params['model'])}", (step, heading)  # the model shown


def test_lecture_stepped_with_the_keyboard(app_url, browser):
    with new_page(browser, *SIZES["1024x768"]) as page:
        open_page(page, f"{app_url}/?lecture=gallery&step=0", "lecture-keys", LOG)
        _arrive(page, 0)
        for step in range(1, len(GALLERY.slides)):  # → and a clicker's PageDown, in turn
            page.keyboard.press("ArrowRight" if step % 2 else "PageDown")
            _arrive(page, step)
        page.keyboard.press("ArrowRight")  # past the last slide: it stays
        page.wait_for_timeout(1_000)
        assert re.search(r"[?&]step=11(&|$)", page.url)
        page.keyboard.press("ArrowLeft")
        _arrive(page, 10)
        page.keyboard.press("PageUp")
        _arrive(page, 9)
        page.keyboard.press("Escape")  # leaves slide mode: the page of the slide, with its controls
        page.locator(SLIDE_TITLE).wait_for(state="detached")
        page.locator('[data-testid="stSidebar"]').wait_for(state="visible")
        assert page.locator('[data-testid="stMain"] h1').first.inner_text().strip() == "Position similarity"
        assert "lecture=" not in page.url and "step=" not in page.url
        assert "BLOOM" in page.url  # the slide's settings stay: the room can go on from there
        page.locator('[data-testid="stSidebar"]', has_text="Showing BLOOM 560M (config only)").wait_for()
        assert "BLOOM 560M" in page.locator(f"{CHART} .gtitle-subtitle").first.text_content()  # named in the chart
