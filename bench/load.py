"""Part ``load`` of the bench: a lecture hall of ``SESSIONS`` students against one app server for
``HALL_S`` seconds (``python -m bench --only load``).

The students are those of :mod:`tests.support.load` (the test suite's short version runs the same
for 35 s): ``BROWSERS`` of them in Chromium, the others speaking Streamlit's websocket protocol, an
action every few seconds. The server is ``streamlit run app.py`` offline, its model cache limited to
``BUDGET`` bytes (``POSVIZ_CACHE_BYTES``); the models are the bundled one by name (most students)
and tiny models of three schemes, which fit in the budget together. The server is warmed up first
(every action once per model), and its memory is measured from there.

With ``POSVIZ_LOAD_URL=http://127.0.0.1:PORT`` the students work on that server instead (one
started elsewhere, e.g. a container), on the bundled model only; its memory is not measured.
"""

from __future__ import annotations

import os
from pathlib import Path

import posviz
from bench.report import Results, log
from tests.support.browser import log_tail, running_app
from tests.support.load import (BUDGET, CATEGORIES, MARGIN, PLAN, Hall, lecture_hall, percentile, students,
                                warm_up)
from tests.support.tiny_models import build_tiny

SECTION = "7 load"
SESSIONS = 24
BROWSERS = 2
HALL_S = 180.0
FAMILIES = ("bert", "gpt2", "llama")
GOAL_P95_S = 3.0
#: The memory row's note: the server's RSS every this many seconds.
EVERY_S = 30


def run(res: Results, workdir: Path) -> Hall | None:
    """Run the hall (see the module docstring), record its rows and goals in ``res``; the hall
    (None where the warm-up failed)."""
    url = os.environ.get("POSVIZ_LOAD_URL", "").rstrip("/")
    if url:
        return _hall(res, url, None, [posviz.BUNDLED_NAME], None)
    models = [posviz.BUNDLED_NAME] + [str(build_tiny(f, workdir / f"tiny-{f}")) for f in FAMILIES]
    # The bundled model for every other student, the tiny ones in turn for the rest.
    models = [m for tiny in models[1:] for m in (models[0], tiny)]
    log_path = workdir / "streamlit-load.log"
    with running_app(log_path, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", POSVIZ_CACHE_BYTES=str(BUDGET)) as (
            base, process):
        return _hall(res, base, process.pid, models, log_path)


def _hall(res: Results, base: str, pid: int | None, models: list[str], log_path: Path | None) -> Hall | None:
    log(f"load: warming up {base} (every action once per model) …")
    problems = warm_up(base, list(dict.fromkeys(models)))
    if problems:
        res.note(SECTION, "warm-up", "failed: " + "; ".join(problems)[:300])
        log("load: warm-up failed:\n" + "\n".join(problems) + ("\n" + log_tail(log_path) if log_path else ""))
        for name in (f"{SESSIONS} sessions: interaction → chart p95 ≤ 3 s", "errors = 0"):
            res.goal(SECTION, name, None, 0, "s", skip_reason="the warm-up failed")
        return None
    log(f"load: {SESSIONS} students ({BROWSERS} in Chromium) for {HALL_S:.0f} s …")
    hall = lecture_hall(base, students(SESSIONS, BROWSERS, models), HALL_S, pid)
    log("load:\n" + hall.summary())
    rows(res, hall, models)
    return hall


def rows(res: Results, hall: Hall, models: list[str]) -> None:
    """The hall's rows and goals."""
    kinds = ", ".join(f"{n} {kind}" for kind, n in hall.by_kind().items())
    res.note(SECTION, f"{len(hall.students)} sessions ({kinds}), {hall.seconds:.0f} s",
             f"{len(hall.interactions)} interactions; load avg {hall.load[0]:.1f} → {hall.load[1]:.1f}; "
             f"models {', '.join(Path(m).name for m in dict.fromkeys(models))}")

    def add(case: str, times: list[float]) -> dict:
        note = f"p95 {percentile(times, 95):.2f} s" if times else ""
        return res.add(SECTION, case, times, note=note)

    every = add("interaction → updated chart, all", hall.times())
    for kind in hall.by_kind():
        add(f"  {kind} sessions", hall.times(kind=kind))
    for action in PLAN:
        add(f"  {action}", hall.times(action))
    for category in CATEGORIES:
        failed = hall.failed(category)
        res.add(SECTION, f"interactions: {category}", [len(failed)], unit="n",
                note="; ".join(f"student {i.student.number}, {i.action}: {i.problem}" for i in failed[:3])[:200])
    p95 = percentile(every["values"], 95) if every["values"] else None
    res.goal(SECTION, f"{len(hall.students)} sessions: interaction → chart p95 ≤ 3 s", p95, GOAL_P95_S, "s",
             skip_reason="no interaction answered")
    res.goal(SECTION, "errors = 0", len(hall.failed("error")) + len(hall.failed("stale")), 0, "n")
    res.goal(SECTION, "no session shown another's model or sentence", len(hall.failed("crossed")), 0, "n")
    if not hall.memory:
        res.note(SECTION, "server RSS", "not measured: the server runs elsewhere")
        res.goal(SECTION, "memory growth ≤ cache budget + margin", None, BUDGET + MARGIN, "B",
                 skip_reason="the server runs elsewhere")
        return
    start = hall.memory[0][1]
    res.add(SECTION, "server RSS, sampled every second", [rss for _, rss in hall.memory], unit="B",
            note="over time: " + " · ".join(f"{t:.0f} s {rss / 1e6:.0f}" for t, rss in hall.memory[::EVERY_S]) + " MB")
    growth = max(rss for _, rss in hall.memory) - start
    res.add(SECTION, "server RSS growth, peak − warm", [growth], unit="B",
            note=f"warm {start / 1e6:.0f} MB; budget {BUDGET / 1e6:.0f} MB + margin {MARGIN / 1e6:.0f} MB")
    res.goal(SECTION, "memory growth ≤ cache budget + margin", growth, BUDGET + MARGIN, "B")
