"""``streamlit run`` with counters, for the bench only (the app itself is unchanged).

    python bench/serve.py run app.py [streamlit options]

does what ``python -m streamlit run app.py ...`` does. With ``POSVIZ_BENCH_EVENTS=<file>`` it
appends one JSON line to that file per event:

* ``{"event": "run", "start": <epoch s>, "seconds": <s>, "total": <s>, "page": <name>}`` for each
  script run (Streamlit's ``ScriptRunner._run_script``): ``seconds`` until the run tells the
  browser it has finished (the server's time for one rerun), ``total`` with the clean-up after
  it (Streamlit's ``gc.collect`` after every run where ``runner.postScriptGC`` is on; the app's
  config turns it off);
* ``{"event": "call", "fn": "read_attention" | "attention" | "input_representation", "seconds": <s>}``
  for each forward pass the app asks posviz for (the attention page reads through
  ``read_attention``; ``attention`` is the probes' previous-token head), and each ``similarity``
  (a position-position matrix).

With ``POSVIZ_BENCH_PROFILE=<folder>`` each script run is also profiled (``cProfile``), its
statistics written to ``<folder>/run-<n>.prof`` (for ``python -m pstats``).

posviz's counted functions are patched at the start of each script run once their modules are
imported (by the warm-up, or by the run before), never importing one itself: the server's start-up,
and its first paint (:mod:`posviz.app.first_paint`), cost what they cost without the wrapper. The
first runs of a fresh server are not counted; the reruns the bench counts come long after.
"""

from __future__ import annotations

import cProfile
import functools
import json
import os
import sys
import threading
import time

EVENTS = os.environ.get("POSVIZ_BENCH_EVENTS")
#: (module, function): where the app looks the counted functions up.
COUNTED = (("posviz.app.caches", "read_attention"), ("posviz.app.caches", "attention"),
           ("posviz.app.caches", "input_representation"),
           ("posviz.analysis.similarity", "similarity"))
PROFILE = os.environ.get("POSVIZ_BENCH_PROFILE")
_lock = threading.Lock()


def _event(**fields) -> None:
    if EVENTS:
        with _lock, open(EVENTS, "a") as out:
            out.write(json.dumps(fields) + "\n")


def _counting(name: str, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _event(event="call", fn=name, seconds=time.perf_counter() - start)

    wrapper.bench_counted = True
    return wrapper


def _patch_posviz() -> None:
    """Count the calls of :data:`COUNTED` where their modules are imported and define them so far
    (the warm-up may be importing one); the others are counted from a later run on. Nothing is
    imported here: a run waits for the warm-up's imports only where ``app.py`` makes it wait, after
    its first paint."""
    for module_name, name in COUNTED:
        fn = getattr(sys.modules.get(module_name), name, None)
        if fn is not None and not getattr(fn, "bench_counted", False):
            setattr(sys.modules[module_name], name, _counting(name, fn))


def _patch_streamlit() -> None:
    from streamlit.runtime.scriptrunner import script_runner

    original = script_runner.ScriptRunner._run_script
    finished = script_runner.ScriptRunner._on_script_finished

    def _on_script_finished(self, *args, **kwargs):
        self.bench_finished = time.perf_counter()
        return finished(self, *args, **kwargs)

    def _run_script(self, rerun_data):
        wall, start = time.time(), time.perf_counter()
        self.bench_finished = None
        from posviz.app import warmup

        _patch_posviz()  # (timed with the run)
        profile = cProfile.Profile() if PROFILE else None
        try:
            if profile is None:
                return original(self, rerun_data)
            return profile.runcall(original, self, rerun_data)
        finally:
            if profile is not None:
                with _lock:
                    profile.dump_stats(os.path.join(PROFILE, f"run-{len(os.listdir(PROFILE))}.prof"))
            end = time.perf_counter()
            _event(event="run", start=wall, seconds=(self.bench_finished or end) - start, total=end - start,
                   page=rerun_data.page_name,
                   warmup=dict(warmup.timings, started_at=warmup.started_at))

    script_runner.ScriptRunner._run_script = _run_script
    script_runner.ScriptRunner._on_script_finished = _on_script_finished


def read_events(path) -> list[dict]:
    """The events written so far to ``path`` (a missing file: none; a line still being written: not yet)."""
    try:
        with open(path) as handle:
            return [json.loads(line) for line in handle if line.endswith("\n")]
    except FileNotFoundError:
        return []


def main() -> None:
    """Patch, then hand the command line to Streamlit's CLI (``streamlit run ...``)."""
    from streamlit.web import cli

    _patch_streamlit()
    sys.argv = ["streamlit", *sys.argv[1:]]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
