"""A lecture hall: many students at once against one app server, each in a session of their own.

Each student does what a student in a lecture does, an action every few seconds (a pause of
``THINK_S`` before each), until the time is up: open a page by its URL (the attention, input or
similarity page, with their model and their own sentence), then click around: move the layer or the
head slider, type a new sentence, switch between the attention, input and similarity pages, set q
on the similarity page, and now and then open the URL again (every ``REOPEN``-th action: a new
session, as reloading a browser tab starts one). Each student takes the actions of the page they
are on in their own order (student ``n``'s ``i``-th action is the ``(n // 3 + i)``-th of
``ACTIONS[page]``), so that together they do every action in their first two. Most students are
:class:`~tests.support.streamlit_client.StreamlitSession` s (Streamlit's websocket protocol, no
browser: an interaction is timed from the BackMsg sent, or the websocket's opening, to the run's
``script_finished``, its charts received); some drive a real Chromium (each its own browser
context: an interaction is timed from the key press, click or navigation to the updated chart drawn
and the script idle).

After every interaction the student checks what came back: no exception, no error box, no
JavaScript error, no disconnect (*errors*); the sidebar says ``Showing <their model> ·`` and the
tokens of the first chart (the input and attention pages: the tokens of the sentence) are those
of their own sentence, which holds their number (*crossed*: another session's model or
sentence); the charts are the updated ones: titles naming their layer and head, or their q, and
the last word of their sentence among the tokens (*stale*).
The sentence the URL gave is theirs until they type another, on every page they switch to.

The server's memory (RSS) is sampled every second where its process is known. Times are
``time.perf_counter()`` seconds, sizes bytes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import statistics
import time
import urllib.parse
from dataclasses import dataclass, field

from tests.support.browser import CHROMIUM_ARGS, ERROR_BOX, EXCEPTION, chromium
from tests.support.streamlit_client import StreamlitSession

OPEN = "open a page"
#: What can go wrong in an interaction (see the module docstring).
CATEGORIES = ("error", "crossed", "stale")
#: The actions a student can take on each page (besides opening the URL again).
ACTIONS = {
    "attention": ("layer slider", "head slider", "type a sentence", "switch to input", "switch to similarity"),
    "input": ("type a sentence", "switch to attention", "switch to similarity"),
    "similarity": ("set q", "switch to attention", "switch to input"),
}
#: The pages the students are given links to (student ``n`` opens ``HOMES[n % 3]``).
HOMES = tuple(ACTIONS)
#: Every action, the opening first.
PLAN = (OPEN, *dict.fromkeys(a for page in ACTIONS.values() for a in page))
#: Every REOPEN-th action opens the URL again.
REOPEN = 8
#: The pause before each action, seconds (drawn uniformly).
THINK_S = (2.0, 5.0)
#: The model cache's budget of a hall (``POSVIZ_CACHE_BYTES``): one bundled model (91 MB) and tiny
#: ones fit, not two bundled ones.
BUDGET = 120 * 10**6
#: Memory on top of ``BUDGET`` a hall may grow by: per-session script state and widgets, forward-pass
#: activations, figures and messages on their way to 24 sessions, and a model the cache dropped
#: while a run still held it (one copy at most: the store takes it back rather than load another).
#: Measured peak growth over the warm server, cache included: 110-145 MB with 24 sessions taking
#: turns on two bundled models (the test), 140-240 MB in the bench's 3 minutes.
MARGIN = 300 * 10**6
#: A Chromium student waits this long for the updated chart.
BROWSER_TIMEOUT_MS = 90_000
#: The last word of a student's sentence, one per sentence typed (each a single WordPiece token).
WORDS = ("hello", "order", "position", "attention", "token", "layer", "model", "window", "sentence", "word")
KINDS = ("websocket", "chromium")
#: The sidebar's links to the pages.
LINKS = {"attention": "Attention", "input": "Input representation", "similarity": "Position similarity"}
# True once a Chromium page shows the script idle, every expected title and (if any given) one of
# the words among the first chart's x-axis labels.
_UPDATED_JS = """([titles, words]) => {
    const app = document.querySelector('[data-testid="stApp"]');
    if (!app || app.dataset.testScriptState !== 'notRunning') return false;
    const shown = Array.from(document.querySelectorAll('.js-plotly-plot .gtitle'), e => e.textContent);
    if (!titles.every(t => shown.some(s => s.includes(t)))) return false;
    const first = document.querySelector('.js-plotly-plot');
    const tokens = first ? Array.from(first.querySelectorAll('.xtick text'), e => e.textContent) : [];
    return !words.length || words.some(w => tokens.includes(w));
}"""
_SHOWN_JS = """() => {
    const first = document.querySelector('.js-plotly-plot');
    return {titles: Array.from(document.querySelectorAll('.js-plotly-plot .gtitle'), e => e.textContent),
            tokens: first ? Array.from(first.querySelectorAll('.xtick text'), e => e.textContent) : [],
            sidebar: document.querySelector('[data-testid="stSidebar"]')?.innerText ?? ''};
}"""


@dataclass(frozen=True)
class Student:
    """One student: their number (in their sentences), the model they look at, and their client
    (one of ``KINDS``)."""

    number: int
    model: str
    kind: str


def students(count: int, browsers: int, models: list[str]) -> list[Student]:
    """``count`` students numbered from 1, the first ``browsers`` of them in Chromium, the models
    taken in turn."""
    return [Student(n, models[(n - 1) % len(models)], KINDS[n <= browsers]) for n in range(1, count + 1)]


@dataclass
class Interaction:
    """One action of one student and what came of it.

    Attributes
    ----------
    seconds : float or None
        Action to updated chart (None: it never came).
    category : str
        "" (as expected), or one of ``CATEGORIES`` (see the module docstring).
    """

    student: Student
    action: str
    seconds: float | None
    category: str = ""
    problem: str = ""


@dataclass
class Hall:
    """Everything one lecture hall measured.

    Attributes
    ----------
    memory : list of (float, int)
        The server's RSS, (seconds since the start, bytes); empty where its process is unknown.
    load : tuple of float
        The 1-minute load average at the start and at the end.
    """

    students: list[Student]
    seconds: float = 0.0
    interactions: list[Interaction] = field(default_factory=list)
    memory: list[tuple[float, int]] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)

    def times(self, action: str | None = None, kind: str | None = None) -> list[float]:
        """The times of the interactions that got their chart (of one action, one kind of client)."""
        return [i.seconds for i in self.interactions if i.seconds is not None and i.action == (action or i.action)
                and i.student.kind == (kind or i.student.kind)]

    def failed(self, category: str) -> list[Interaction]:
        """The interactions of one of ``CATEGORIES``."""
        return [i for i in self.interactions if i.category == category]

    def by_kind(self) -> dict[str, int]:
        """How many students of each kind of client."""
        return {kind: sum(s.kind == kind for s in self.students) for kind in KINDS}

    def summary(self) -> str:
        """A few lines: sessions, interactions, their times, failures, memory, load."""
        times = self.times()
        kinds = ", ".join(f"{n} {k}" for k, n in self.by_kind().items())
        lines = [(f"{len(self.students)} sessions ({kinds}), {self.seconds:.0f} s, {len(self.interactions)} "
                  f"interactions; load average {self.load[0]:.1f} → {self.load[1]:.1f}")]
        if times:
            lines.append(f"interaction → updated chart: p50 {percentile(times, 50):.2f} s, "
                         f"p95 {percentile(times, 95):.2f} s, max {max(times):.2f} s")
        for action in PLAN:
            if self.times(action):
                lines.append(f"  {action}: p50 {percentile(self.times(action), 50):.2f} s, "
                             f"p95 {percentile(self.times(action), 95):.2f} s (n={len(self.times(action))})")
        lines.append("failures: " + ", ".join(f"{c} {len(self.failed(c))}" for c in CATEGORIES))
        lines += [f"  student {i.student.number} ({i.student.kind}), {i.action}: {i.category}: {i.problem}"
                  for i in self.interactions if i.category][:20]
        if self.memory:
            lines.append("server RSS: " + " · ".join(f"{t:.0f} s {rss / 1e6:.0f} MB" for t, rss in self.memory[::30]))
        return "\n".join(lines)


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile of ``values``, ``p`` from 1 to 99 (the inclusive method)."""
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1] if len(values) > 1 else values[0]


def sentence(number: int, typed: int) -> str:
    """Student ``number``'s sentence after ``typed`` sentences typed: their number and a word."""
    return f"student {number} says {WORDS[typed % len(WORDS)]}"


@dataclass
class _Seen:
    """What an interaction showed: the charts' titles, the first chart's x labels, the sidebar's
    text, the errors shown."""

    titles: list[str]
    tokens: list[str]
    sidebar: str
    problems: list[str]


def _judge(student: Student, seen: _Seen, titles: list[str], words: list[str]) -> tuple[str, str]:
    """(category, problem) of what an interaction showed against what it should show."""
    if seen.problems:
        return "error", "; ".join(seen.problems)[:300]
    if f"Showing {student.model} ·" not in seen.sidebar:
        return "crossed", f"the sidebar shows {seen.sidebar[:120]!r}"
    if words and {t for t in seen.tokens if t.isdigit()} - {str(student.number)}:  # a page of tokens
        return "crossed", f"the tokens are {seen.tokens}"
    missing = [t for t in titles if not any(t in shown for shown in seen.titles)]
    if missing or (words and not set(words) & set(seen.tokens)):
        return "stale", f"no chart {missing} / words {words}: titles {seen.titles}, tokens {seen.tokens}"
    if words and str(student.number) not in seen.tokens:
        return "stale", f"not the student's sentence: tokens {seen.tokens}"
    return "", ""


class _Actor:
    """A student's client: does an action, says how long it took and what it showed, and keeps
    what the student has done so far (page, layer, head, q, sentence) to know what it should show."""

    def __init__(self, student: Student, base: str) -> None:
        self.student, self.base = student, base
        self.home = HOMES[student.number % len(HOMES)]
        self.page, self.layer, self.head, self.q, self.typed = self.home, 0, 0, None, 0

    @property
    def text(self) -> str:
        """The student's sentence (:func:`sentence`)."""
        return sentence(self.student.number, self.typed)

    def url(self) -> str:
        """The URL path and query of the student's page, as they are given it (their model and sentence)."""
        query = {"model": self.student.model, "text": self.text, "text_pair": ""}
        return f"/{self.home}?" + urllib.parse.urlencode(query)

    def did(self, action: str) -> None:
        """Note what ``action`` changes (before it is done: the client reads the new values)."""
        if action == OPEN:
            self.page, self.layer, self.head, self.q = self.home, 0, 0, None  # a new session
        elif action.startswith("switch to "):
            self.page = action.removeprefix("switch to ")
        elif action == "layer slider":
            self.layer = 1 - self.layer
        elif action == "head slider":
            self.head = 1 - self.head
        elif action == "type a sentence":
            self.typed += 1
        elif action == "set q":
            first = 3 + self.student.number % 20
            self.q = first if self.q != first else first + 1

    def expected(self) -> tuple[list[str], list[str]]:
        """Parts of the titles that the page should show now, and the words of which one should be
        among its tokens (the last of the student's sentence)."""
        if self.page == "similarity":
            return ["row q = " if self.q is None else f"row q = {self.q} "], []
        titles = [f"Layer {self.layer}, head {self.head}"] if self.page == "attention" else ["Norm of each part"]
        return titles, [self.text.split()[-1]]

    async def act(self, action: str) -> tuple[float, _Seen]:
        """Do ``action`` (after :meth:`did`); its time and what it showed."""
        raise NotImplementedError

    async def close(self) -> None:
        """Close the session or the browser context."""


class _WebsocketActor(_Actor):
    session: StreamlitSession | None = None

    async def act(self, action: str) -> tuple[float, _Seen]:
        if action == OPEN:
            await self.close()
            start = time.perf_counter()
            self.session = await StreamlitSession(self.base).__aenter__()
            path, _, query = self.url().partition("?")
            run = await self.session.open(path.strip("/"), dict(urllib.parse.parse_qsl(query)))
            run.seconds = time.perf_counter() - start  # the opening included
        elif action.startswith("switch to "):
            run = await self.session.switch_page(self.page)
        else:
            key, value = {"layer slider": ("layer", self.layer), "head slider": ("head", self.head),
                          "type a sentence": ("text", self.text), "set q": ("q", self.q)}[action]
            run = await self.session.set_widget(key, value)
        return run.seconds, _Seen(run.titles, run.tokens, run.sidebar, run.problems)

    async def close(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            await session.__aexit__(None, None, None)


class _ChromiumActor(_Actor):
    def __init__(self, student: Student, base: str, browser) -> None:
        super().__init__(student, base)
        self.browser, self.tab, self.navigating, self.errors = browser, None, False, []

    async def _tab(self):
        if self.tab is None:
            context = await self.browser.new_context(viewport={"width": 1400, "height": 900})
            self.tab = await context.new_page()
            self.tab.set_default_timeout(BROWSER_TIMEOUT_MS)
            self.tab.on("pageerror", lambda exc: self.errors.append(f"JavaScript error: {exc}"))
            self.tab.on("websocket", lambda ws: ws.on("close", self._closed))
        return self.tab

    def _closed(self, _ws) -> None:
        if not self.navigating:
            self.errors.append("the websocket closed")

    async def act(self, action: str) -> tuple[float, _Seen]:
        tab = await self._tab()
        start = time.perf_counter()
        if action == OPEN:
            self.navigating = True
            await tab.goto(self.base + self.url())
            self.navigating = False
        elif action.startswith("switch to "):
            await tab.locator('[data-testid="stSidebarNav"] a', has_text=LINKS[self.page]).click()
        elif action in ("layer slider", "head slider"):
            await tab.get_by_role("slider").nth(int(action == "head slider")).focus()
            await tab.keyboard.press("ArrowRight" if (self.layer, self.head)[action == "head slider"] else "ArrowLeft")
        else:
            box = tab.get_by_label("Sentence", exact=False).first if action == "type a sentence" else \
                tab.get_by_label(re.compile(r"^q \("))  # "q (0–511)"
            await box.fill(self.text if action == "type a sentence" else str(self.q))
            await box.press("Enter")
        try:
            await tab.wait_for_function(_UPDATED_JS, arg=list(self.expected()), polling=100)
        except Exception as exc:  # no updated chart: say what the page shows
            shown = await tab.evaluate(_SHOWN_JS)
            raise TimeoutError(f"{self.expected()} not shown within {BROWSER_TIMEOUT_MS / 1e3:.0f} s: titles "
                               f"{shown['titles'][:3]}, tokens {shown['tokens']}") from exc
        seconds = time.perf_counter() - start
        shown = await tab.evaluate(_SHOWN_JS)
        problems = self.errors + [await tab.locator(s).first.inner_text() for s in (EXCEPTION, ERROR_BOX)
                                  if await tab.locator(s).count()]
        self.errors = []
        return seconds, _Seen(shown["titles"], shown["tokens"], shown["sidebar"], problems)

    async def close(self) -> None:
        if self.tab is not None:
            await self.tab.context.close()
            self.tab = None


async def _interact(actor: _Actor, action: str) -> Interaction:
    """Do one action and judge what it showed."""
    actor.did(action)
    try:
        seconds, seen = await actor.act(action)
        category, problem = _judge(actor.student, seen, *actor.expected())
    except Exception as exc:  # a disconnect, a timeout: reported with the others
        seconds, category, problem = None, "error", f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
    return Interaction(actor.student, action, seconds if category not in ("error", "stale") else None, category,
                       problem)


async def _student(actor: _Actor, deadline: float, record: list[Interaction]) -> None:
    """Action after action until ``deadline`` (see the module docstring); after a failed one, the
    student opens the URL again."""
    rng = random.Random(actor.student.number)
    step = 0
    await asyncio.sleep(rng.uniform(0, THINK_S[1]))  # students arrive within the first few seconds
    try:
        while time.perf_counter() < deadline:
            choices = ACTIONS[actor.page]
            action = OPEN if step % REOPEN == 0 else choices[(actor.student.number // len(HOMES) + step) % len(choices)]
            record.append(await _interact(actor, action))
            step = 0 if record[-1].category else step + 1
            await asyncio.sleep(rng.uniform(*THINK_S))
    finally:
        await actor.close()


async def _sample_memory(pid: int, start: float, memory: list[tuple[float, int]], stop: asyncio.Event) -> None:
    import psutil

    server = psutil.Process(pid)
    while not stop.is_set():
        memory.append((time.perf_counter() - start, server.memory_info().rss))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 1.0)


async def _hall(base: str, students_: list[Student], seconds: float, pid: int | None) -> Hall:
    hall = Hall(students_, load=(os.getloadavg()[0], 0.0))
    start = time.perf_counter()
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample_memory(pid, start, hall.memory, stop)) if pid else None
    browsers = [s for s in students_ if s.kind == "chromium"]
    try:
        if browsers:
            from playwright.async_api import async_playwright

            async with async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=chromium(), headless=True, args=CHROMIUM_ARGS)
                actors = [_ChromiumActor(s, base, browser) if s.kind == "chromium" else _WebsocketActor(s, base)
                          for s in students_]
                await asyncio.gather(*(_student(a, start + seconds, hall.interactions) for a in actors))
                await browser.close()
        else:
            await asyncio.gather(*(_student(_WebsocketActor(s, base), start + seconds, hall.interactions)
                                   for s in students_))
    finally:
        stop.set()
        if sampler:
            await sampler
    hall.seconds, hall.load = time.perf_counter() - start, (hall.load[0], os.getloadavg()[0])
    return hall


def lecture_hall(base: str, students_: list[Student], seconds: float, pid: int | None = None) -> Hall:
    """Let ``students_`` work on the app at ``base`` for ``seconds`` (each finishes the action under
    way); the server's memory is sampled where its process id ``pid`` is given."""
    return asyncio.run(_hall(base, students_, seconds, pid))


def warm_up(base: str, models: list[str]) -> list[str]:
    """Every action once per model, without pauses, in a websocket session (libraries imported,
    models loaded, caches filled: what a server has done before a lecture); the problems seen."""
    walk = (OPEN, "switch to attention", "layer slider", "head slider", "type a sentence", "switch to input",
            "switch to similarity", "set q")

    async def one_pass(actor: _Actor) -> list[str]:
        try:
            for action in walk:
                done = await _interact(actor, action)
                if done.category:  # the next actions depend on this one
                    return [f"{action}: {done.category}: {done.problem}"]
        finally:
            await actor.close()
        return []

    async def every_model() -> list[str]:
        return [p for n, model in enumerate(models, 1)
                for p in await one_pass(_WebsocketActor(Student(n, model, "websocket"), base))]

    return asyncio.run(every_model())
