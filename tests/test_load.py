"""A lecture hall, short: 24 sessions at once against one app server, every interaction answered
with its own updated chart, no error, no session shown another's model or sentence, and the
server's memory within the model cache's budget plus a stated margin.

The students of :mod:`tests.support.load` (22 speaking Streamlit's websocket protocol, 2 in
Chromium) work for ``HALL_S`` seconds, every few seconds an action: open the attention page by its
URL, move a slider, type a sentence, switch page, set q (a sentence that came with the URL and is
dropped by a page switch, a known behaviour of Streamlit 1.67's URL-bound widgets, is counted and
printed, not failed). Their models are the bundled model by name
and as a folder, which cannot both stay within the cache's ``BUDGET`` (the cache must drop one to
load the other while other sessions draw theirs), and tiny models of three schemes. The times are
printed, not asserted (the bench's ``load`` part has the 3-minute version and the goal on them).
(AppTest cannot stand in for sessions here: it swaps one process-wide Runtime in and out per run,
so instances in threads break each other.)

With ``POSVIZ_LOAD_URL`` set (``http://127.0.0.1:PORT`` of a server started elsewhere, e.g. a
container) the students work on that server, on the bundled model only, and its memory is not
measured. Marker ``load`` (and ``browser``, for the Chromium it needs); ``python3 -m pytest`` runs it.
"""

from __future__ import annotations

import contextlib
import os

import pytest

import posviz
from tests.support.browser import ROOT, log_tail, running_app
from tests.support.load import BUDGET, MARGIN, PLAN, lecture_hall, students, warm_up
from tests.support.tiny_models import bundled_path

pytestmark = [pytest.mark.browser, pytest.mark.load]

LOG = ROOT / "artifacts" / "streamlit-load-test.log"
SESSIONS = 24
BROWSERS = 2
HALL_S = 35.0
FAMILIES = ["bert", "gpt2", "llama"]


@contextlib.contextmanager
def _server(**env: str):
    """(base URL, process id or None): ``POSVIZ_LOAD_URL``'s server, else the app started here."""
    if os.environ.get("POSVIZ_LOAD_URL"):
        yield os.environ["POSVIZ_LOAD_URL"].rstrip("/"), None
        return
    with running_app(LOG, **env) as (base, process):
        yield base, process.pid


def test_lecture_hall(tiny_path):
    elsewhere = bool(os.environ.get("POSVIZ_LOAD_URL"))
    models = [posviz.BUNDLED_NAME]
    if not elsewhere:
        models += [str(bundled_path())] + [str(tiny_path(f)) for f in FAMILIES]
    with _server(HF_HUB_OFFLINE="1", POSVIZ_CACHE_BYTES=str(BUDGET)) as (base, pid):
        problems = warm_up(base, models)  # libraries imported, models loaded once
        assert not problems, "\n".join(problems) + "\n" + log_tail(LOG)
        hall = lecture_hall(base, students(SESSIONS, BROWSERS, models), HALL_S, pid)
    print("\n" + hall.summary())
    failed = [i for i in hall.interactions if i.category]
    assert not failed, "\n".join(f"student {i.student.number} ({i.student.kind}), {i.action}: {i.category}: "
                                 f"{i.problem}" for i in failed) + "\n" + log_tail(LOG)
    assert {s.number for s in hall.students} == {i.student.number for i in hall.interactions}  # everyone worked
    assert set(PLAN) <= {i.action for i in hall.interactions}  # and every action was done
    if pid is not None:
        growth = max(rss for _, rss in hall.memory) - hall.memory[0][1]
        print(f"server memory: {hall.memory[0][1] / 1e6:.0f} MB warm, peak growth {growth / 1e6:.0f} MB "
              f"(budget {BUDGET / 1e6:.0f} MB + margin {MARGIN / 1e6:.0f} MB)")
        assert growth <= BUDGET + MARGIN
