"""End-to-end: start the Streamlit app and drive every page with a real Chromium.

The app runs as a subprocess (``python -m streamlit run app.py``) on a free port, on the bundled
model and offline (``HF_HUB_OFFLINE=1``); one visit opens a tiny rotary model (a Llama saved to a
temporary folder) through ``?model=<folder>``. Each page must draw at least one Plotly chart and show
no Streamlit exception or error box; a full-page screenshot of each is saved under
``artifacts/screenshots/`` for a person to look at.

Chromium comes from the system (Debian's ``chromium``; ``POSVIZ_CHROMIUM`` names another binary),
not from ``playwright install``. Without one the test is skipped, except under CI (``CI=true``),
where it fails: ``.ci/run`` installs it.
"""

from __future__ import annotations

import base64
import re
import time
import urllib.parse

import pytest

from posviz.app import layout
from tests.support.browser import browser  # noqa: F401  the module's Chromium (a fixture)
from tests.support.browser import (CHART, IDLE, ROOT, assert_no_errors, full_screenshot, log_tail, new_page,
                                   open_page, running_app)

pytestmark = pytest.mark.browser

LOG = ROOT / "artifacts" / "streamlit-browser-test.log"


# name -> (url path, heading the page must show)
PAGES = {
    "model": ("/", "Model"),
    "similarity": ("/similarity", "Position similarity"),
    "projection": ("/projection", "Projection of the position vectors"),
    "input": ("/input", "Input representation"),
    "attention": ("/attention", "Attention"),
    "compare": ("/compare", "Compare"),
}


@pytest.fixture(scope="module")
def app_url():
    """The app on a free port, offline on the bundled model; its base URL."""
    with running_app(LOG, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1") as (base, _process):
        yield base


@pytest.fixture
def page(browser):
    with new_page(browser) as p:
        yield p


def widget_value(page, label: str) -> str:
    """The current value of the widget labelled ``label`` (text, number, select box or slider)."""
    name = re.compile(rf"^\s*{re.escape(label)}\s*$")
    box = page.locator('[data-testid="stElementContainer"]').filter(
        has=page.locator('[data-testid="stWidgetLabel"]', has_text=name))
    assert box.count() >= 1, f"no widget labelled {label!r}"
    return box.first.locator("input, textarea").first.input_value()


@pytest.mark.parametrize("name", list(PAGES))
def test_page_renders(app_url, page, name):
    path, heading = PAGES[name]
    url = app_url + path
    start = time.perf_counter()
    open_page(page, url, name, LOG)
    elapsed = time.perf_counter() - start
    title = page.locator('[data-testid="stMain"] h1').first
    assert title.inner_text().strip() == heading
    if name == "model":
        assert page.get_by_text("all-MiniLM-L6-v2").first.is_visible()
        # the tab's icon is posviz's, handed over as a data: URL (not a file Streamlit encodes again)
        icon = page.eval_on_selector("link[rel='shortcut icon']", "e => e.getAttribute('href')")
        assert icon == layout.icon_url() and base64.b64decode(icon.split(",", 1)[1]) == layout.ICON.read_bytes()
    full_screenshot(page, name)
    print(f"{name}: rendered in {elapsed:.1f} s")


def test_query_params_restore_widgets(app_url, page):
    url = app_url + "/attention?layer=3&head=5&text=Hello+world"
    open_page(page, url, "query-params", LOG)
    assert widget_value(page, "Layer") == "3"
    assert widget_value(page, "Head") == "5"
    assert widget_value(page, "Sentence (segment A)") == "Hello world"


def test_attention_sliders_rerun_the_patterns_alone(app_url, page):
    """On the Attention page the layer slider reruns the page below its inputs alone (a fragment:
    ``posviz.app.navigation.page_fragment``): the charts show the new layer and the link holds it, and that
    run sends neither the navigation nor the sidebar; the charts' Download menus open after it, and a
    chart's Slide button, in the fragment too, opens slide mode (a run of the whole page)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(f)))
    open_page(page, app_url + "/attention", "attention-fragment", LOG)
    frames.clear()
    titles = "() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(g => g.layout.title.text)"
    page.locator('[data-testid="stSlider"]').filter(has_text="Layer").get_by_role("slider").first.press("ArrowRight")
    page.wait_for_function(f"() => ({titles})().includes('Layer 1, head 0')")
    page.locator(IDLE).wait_for(state="attached")
    assert "layer=1" in page.url
    assert page.evaluate(titles)[:3] == ["Layer 1, head 0", "Layer 1, mean over heads",
                                         "Layer 1: every head (rows = queries, columns = keys)"]
    kinds, sidebar = set(), 0
    for frame in frames:
        msg = ForwardMsg()
        msg.ParseFromString(frame if isinstance(frame, bytes) else frame.encode())
        kinds.add(msg.WhichOneof("type"))
        sidebar += msg.WhichOneof("type") == "delta" and msg.metadata.delta_path[0] == 1
    assert "delta" in kinds and "script_finished" in kinds
    assert "navigation" not in kinds and sidebar == 0, kinds
    page.locator("[data-testid=stPopover] button").first.click()
    page.get_by_role("button", name="NPZ").first.wait_for()
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Slide").first.click()  # slide mode is the whole page's: a full run
    page.wait_for_function("() => new URLSearchParams(location.search).get('slide') === 'attention-head'")
    page.locator(IDLE).wait_for(state="attached")
    slide_title = page.locator(".posviz-slide-title")
    slide_title.wait_for()
    assert slide_title.inner_text().startswith("Layer 1, head 0 · ")
    assert page.locator(".js-plotly-plot").count() == 1
    assert page.locator('[data-testid="stSidebarNav"]').count() == 0
    assert_no_errors(page, page.url, "attention-fragment", LOG)


def test_clip_colours_turned_off_after_another_change_stays_off_in_the_link(app_url, page):
    """Turning "Clip colours" off after another change writes ``clip=false`` to the link, and the link opens
    unclipped (the toggle's default, on, was once given on the first run only: after another change "off"
    was its default and was left out of the link)."""
    open_page(page, app_url + "/attention", "clip-off", LOG)
    page.locator('[data-testid="stSlider"]').filter(has_text="Layer").get_by_role("slider").first.press("ArrowRight")
    page.wait_for_function("() => new URLSearchParams(location.search).get('layer') === '1'")
    page.locator(IDLE).wait_for(state="attached")
    page.get_by_text("Clip colours").click()
    page.wait_for_function("() => new URLSearchParams(location.search).get('clip') === 'false'")
    page.locator(IDLE).wait_for(state="attached")
    page.reload()
    open_page(page, page.url, "clip-off", LOG)
    assert not page.get_by_role("switch", name="Clip colours").is_checked()
    subtitle = "() => document.querySelector('.js-plotly-plot').layout.title.subtitle.text"
    assert "clipped" not in page.evaluate(subtitle)


def _link_holds(page, name: str, value: str | None) -> None:
    """Wait until the page's URL gives parameter ``name`` the value ``value`` (None: not there), then for the
    script run to end; fail naming the URL where it does not within 15 s."""
    try:
        page.wait_for_function("([name, value]) => new URLSearchParams(location.search).get(name) === value",
                               arg=[name, value], timeout=15_000)
    except Exception as exc:
        raise AssertionError(f"the link does not hold {name}={value}: {page.url}") from exc
    page.locator(IDLE).wait_for(state="attached")


def _slide_and_back(page) -> None:
    """Open the page's first chart as a slide, and leave slide mode with Esc."""
    page.locator('[data-testid="stButton"] button', has_text="Slide").first.click()
    page.locator(".posviz-slide-title").wait_for()
    page.locator(IDLE).wait_for(state="attached")
    page.keyboard.press("Escape")
    page.locator(".posviz-slide-title").wait_for(state="detached")
    page.locator(IDLE).wait_for(state="attached")


@pytest.mark.parametrize("path, switch, name", [("/similarity", "÷ maximum", "normalize"),
                                                ("/attention", "Hide special tokens", "hide_special")])
def test_the_link_follows_the_controls_after_slide_mode(app_url, page, path, switch, name):
    """After slide mode is left with Esc, a switch of a row of controls still writes the link, on and off again.

    Where elements above a row of columns went away between two runs (slide mode's slot), Streamlit 1.67's
    browser side dropped the row's old copy after drawing the moved one, and with it the URL binding of its
    widgets (``posviz.app.navigation.main``)."""
    open_page(page, app_url + path, f"slide-and-back{path.replace('/', '-')}", LOG)
    _slide_and_back(page)
    toggle = page.locator('[data-testid="stCheckbox"]').filter(has_text=switch)
    toggle.click()
    _link_holds(page, name, "true")
    toggle.click()
    _link_holds(page, name, None)


def test_the_link_follows_the_controls_after_a_model_with_fewer_inputs(app_url, page, tiny_path):
    """T5 (two components: a radio above the controls), then the bundled model picked in the sidebar: the
    controls' switch still writes the link."""
    folder = urllib.parse.quote(str(tiny_path("t5")), safe="")
    open_page(page, f"{app_url}/similarity?model={folder}", "t5-then-bundled", LOG)
    assert page.get_by_role("radiogroup", name="Component").count() == 1
    page.locator('[data-testid="stSidebar"] [data-testid="stSelectbox"]').first.click()
    page.get_by_role("option", name="all-MiniLM-L6-v2 (bundled)").click()
    _link_holds(page, "model", None)
    page.get_by_role("radiogroup", name="Component").wait_for(state="detached")
    page.locator('[data-testid="stCheckbox"]').filter(has_text="÷ maximum").click()
    _link_holds(page, "normalize", "true")


def test_the_link_follows_the_layer_after_a_long_text(app_url, page):
    """A text longer than a link carries, then a short one: the layer slider below still writes the link (the
    long text's notice, drawn in the page between the sentences and the sliders, moved them when it went)."""
    open_page(page, app_url + "/attention", "long-then-short", LOG)
    field = page.get_by_role("textbox", name="Sentence (segment A)")
    field.fill("word " * 400)
    field.press("Enter")
    page.get_by_text("longer than a link carries").wait_for()
    page.locator(IDLE).wait_for(state="attached")
    field.fill("A short sentence again")
    field.press("Enter")
    _link_holds(page, "text", "A short sentence again")
    page.locator('[data-testid="stSlider"]').filter(has_text="Layer").get_by_role("slider").first.press("ArrowRight")
    _link_holds(page, "layer", "1")


def _open_from_sidebar(page, label: str, heading: str) -> None:
    """Click the sidebar's link ``label``; wait for the page titled ``heading`` to finish its run."""
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=label).first.click()
    page.locator('[data-testid="stMain"] h1', has_text=heading).wait_for()
    page.locator(IDLE).wait_for(state="attached")


def test_a_linked_sentence_stays_on_the_next_page(app_url, page):
    """A sentence the link gave, never typed, is the sentence of the page the sidebar opens next, in
    its field, its chart's tokens and its URL (Streamlit 1.67 alone drew the default sentence there)."""
    open_page(page, app_url + "/attention?text=Ducks+swim+north&layer=2", "linked-sentence", LOG)
    assert widget_value(page, "Sentence (segment A)") == "Ducks swim north"
    _open_from_sidebar(page, "Input representation", "Input representation")
    page.wait_for_function("() => new URLSearchParams(location.search).get('text') === 'Ducks swim north'")
    assert widget_value(page, "Sentence (segment A)") == "Ducks swim north"
    ticks = page.evaluate(f"() => document.querySelector('{CHART}').closest('.js-plotly-plot')"
                          ".layout.xaxis.ticktext")
    assert ticks[:5] == ["[CLS]", "ducks", "swim", "north", "[SEP]"], ticks
    assert_no_errors(page, page.url, "linked-sentence", LOG)


def test_a_linked_empty_second_sentence_stays_in_the_link(app_url, page):
    """A link's empty second sentence (``text_pair=``, no segment B) is still empty, in the field and in
    the URL, after a page with no sentence field: the page's link shares the input as shown (it once
    lost ``text_pair=``, and the link then opened with the default second sentence)."""
    open_page(page, app_url + "/attention?text=Ducks+swim+north&text_pair=", "linked-empty-pair", LOG)
    _open_from_sidebar(page, "Position similarity", "Position similarity")
    _open_from_sidebar(page, "Input representation", "Input representation")
    page.wait_for_function("() => new URLSearchParams(location.search).get('text') === 'Ducks swim north'")
    assert widget_value(page, "Second sentence (segment B, optional)") == ""
    assert urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query, keep_blank_values=True)["text_pair"] == [""]
    assert_no_errors(page, page.url, "linked-empty-pair", LOG)


def test_emptying_the_sentence_keeps_the_tokens_read(app_url, page):
    """Emptying the sentence, then typing another, leaves "Read at most (tokens)" as it was (its default,
    the model's 512 positions, or the link's value) and reads the new sentence by it: the field, left
    out of the run that had no sentence, once came back at its minimum, and 5 tokens were read."""
    ticks_js = f"() => document.querySelector('{CHART}')?.closest('.js-plotly-plot').layout.xaxis.ticktext"
    for query, limit, ticks in (("layer=2", "512", 12), ("limit=7", "7", 7)):
        open_page(page, f"{app_url}/attention?{query}", f"emptied-sentence-{limit}", LOG)
        box = page.get_by_label("Sentence (segment A)")
        box.fill("")
        box.press("Enter")
        page.get_by_text("Type a sentence above to see its attention patterns.").wait_for()
        box.fill("Hello again my friend")
        box.press("Enter")
        page.wait_for_function(f"() => ({ticks_js})()?.includes('hello')")
        page.locator(IDLE).wait_for(state="attached")
        assert widget_value(page, "Read at most (tokens)") == limit
        assert len(page.evaluate(ticks_js)) == ticks
        assert_no_errors(page, page.url, f"emptied-sentence-{limit}", LOG)


def test_similarity_rotary_model(app_url, page, tiny_path):
    """The similarity page of a rotary model: the kernel K(m, n), its three charts and the formula."""
    folder = str(tiny_path("llama"))
    url = f"{app_url}/similarity?model={urllib.parse.quote(folder, safe='')}"
    open_page(page, url, "similarity-rotary", LOG)
    charts = page.locator('[data-testid="stPlotlyChart"]')
    try:  # heatmap, row profile, kernel by offset
        page.wait_for_function(f"document.querySelectorAll('{CHART}').length >= 3")
    except Exception as exc:
        shot = full_screenshot(page, "failed-similarity-rotary")
        raise AssertionError(f"{url}: {charts.count()} charts, not 3; see {shot}\n{log_tail(LOG)}") from exc
    assert_no_errors(page, url, "similarity-rotary", LOG)
    assert page.locator('[data-testid="stMain"] h1').first.inner_text().strip() == "Position similarity"
    assert page.get_by_text(folder).first.is_visible()  # the sidebar says which model is shown
    assert page.get_by_text("K(m, n)").first.is_visible()
    katex = page.locator('[data-testid="stMain"] .katex')
    assert katex.count() >= 1 and katex.first.is_visible(), "no KaTeX formula"
    tex = page.locator('[data-testid="stMain"] .katex annotation[encoding="application/x-tex"]').first.text_content()
    assert "K(m, n)" in tex and r"\theta_i" in tex, tex
    page.wait_for_timeout(500)
    full_screenshot(page, "similarity-rotary")


def test_gallery_view_offline(app_url, browser):
    """The gallery opens a view in one click, with every request to a host other than the app's
    blocked: the view still renders, and the page asked no other host (no CDN, no font service)."""
    app_host = app_url.split("/")[2]
    outside = []

    def only_the_app(route):
        url = route.request.url
        if url.split("/")[2] == app_host or url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    with new_page(browser) as page:
        page.route("**/*", only_the_app)
        page.goto(f"{app_url}/gallery")
        page.get_by_text("Sinusoid vs learned").click()
        page.locator(CHART).first.wait_for(state="visible")
        page.locator(IDLE).wait_for(state="attached")
        page.wait_for_timeout(500)
        assert "/compare" in page.url
        assert page.locator('[data-testid="stPlotlyChart"]').count() >= 3
        assert_no_errors(page, page.url, "gallery-compare", LOG)
        full_screenshot(page, "gallery-compare")
    assert outside == [], f"requests to other hosts: {outside}"

