"""posviz benchmark: each figure against its goal and against the obvious alternative.

Run from the repository root::

    python -m bench [--repeat 3] [--json bench/results.json] [--only browser,hub,library,load,attention]
    python bench/run.py     (the same: it runs python -m bench)

Everything runs offline on the bundled all-MiniLM-L6-v2 (BERT, 512 positions x 384, 6 layers x 12
heads). Each case runs ``--repeat`` times (servers, processes and browser visits included) and
the table shows the median, min and max; ``1st call`` is an extra first call of an in-process
case (imports, lazy initialisation), not counted in the median. Times are wall-clock seconds,
sizes bytes (MB = 10^6 B). Sections, numbered as in the issue:

1. Cold start: ``streamlit run app.py`` (through ``bench/serve.py``, which only adds counters) on a
   free port, until Chromium draws the first chart of ``/``: a server's first start ever (an empty
   cache folder), then its restart, which finds the first chart the first start stored
   (``posviz.app.first_paint``; the goal is the restart's); then every page, from its navigation
   to its first chart (a new session each; the browser's cache warm). Beside it, in the same run,
   the floor: a bare Streamlit page with one plotly chart (``bench.browser.FLOOR_SCRIPT``), from
   ``streamlit run`` to its chart, and page loads of its warm server (``bench.browser.SAMPLES`` a
   run, each in a new tab); and the first visit of ``/`` on a posviz server that has been up 30 s.
   Also, per fresh process: ``import posviz`` and ``load_model()``.
2. Payload: the websocket frames the browser receives (one Streamlit message each) for the
   similarity page's 512 x 512 heatmap and for the attention page of a 512-token sentence; and,
   built in this process as the app builds them, the same figures against the naive alternative
   (the heatmap from Python lists) and against every layer and head at once.
3. Positions without weights: ``load_model(repo, positions_only=True)`` against
   ``AutoModel.from_pretrained(repo)`` through a local Hub, time and bytes (``bench/hub.py``).
4. UMAP of the 512 positions: in this process, after a first UMAP (64 x 8: the import, and numba's
   code from its disk cache); in the app, ``/projection`` opened as the first visit of it on a
   server that has been up 30 s (the app's warm-up computed its default projection), then again
   by the sidebar (warm: cached), by a reload, and in 3-D (computed anew); and by the sidebar
   30 s after a first visit of ``/``.
5. Reruns: the server's time for one rerun (``bench/serve.py``: until the browser is told the run
   has finished) after one ArrowRight on the attention page's layer slider and after typing q on
   the similarity page (``bench.browser.SAMPLES`` of each a run), the browser's time for the same
   (key press until the charts changed and the script finished), and the forward passes those
   reruns ran (the app's read_attention, attention, input_representation and similarity calls,
   :data:`bench.serve.COUNTED`).
6. Compute on cpu, and on cuda against cpu where a GPU is present ("no GPU" otherwise); a
   randomly initialised Llama-style model with 32,768 positions (rotary), on each device.
7. Attention at any length: the Attention page's computations at 512, 2 048 and 8 192 tokens of a
   SmolLM2-135M-shaped model, time and memory growth, beside ``output_attentions`` (``bench/attention.py``).

The goals are the issue's; every goal is judged in one place (``bench/report.py``) and listed
after the figures, last. The exit status is 1 when a goal is missed (a skipped goal, e.g. without
a GPU or Chromium, is no miss). Times are only as good as an idle machine: the header shows the
1-minute load average before and after. Progress goes to stderr, the table to stdout; ``--json``
also writes every single measurement.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # python bench/run.py: becomes python -m bench (both from the repository root)
    os.execv(sys.executable, [sys.executable, "-m", "bench", *sys.argv[1:]])

# Quiet progress bars and chatter, here and in the children (they inherit os.environ).
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from bench import attention, browser, hub, library, load  # noqa: E402
from bench.report import Results, evaluate, log, print_table  # noqa: E402

PARTS = ("hub", "library", "browser", "load", "attention")
GOALS = dict(cold_start_s=8.0, cold_vs_floor=1.3, up_vs_floor=1.2, heatmap_bytes=1.5e6, attention_page_bytes=1.5e6,
             umap_first_s=2.0, umap_warm_s=1.0, rerun_s=0.15)


def _median(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _heatmap_bytes(visit: dict) -> int:
    """The similarity page's position heatmap among a visit's charts (title "P·Pᵀ, positions …")."""
    return max(size for title, size in visit["charts"].items() if title.startswith("P·Pᵀ, positions"))


def browser_rows(res: Results, floors: list[dict], firsts: list[dict], cold: list[dict], idle: list[dict]) -> None:
    """Rows and goals of the browser runs (sections 1, 2, 4, 5)."""
    def add(section: str, case: str, values: list, unit: str = "s", note: str = "") -> dict:
        return res.add(section, case, [v for v in values if v is not None], unit=unit, note=note)

    sec = "1 cold start"
    stored = sum(c["first_paint"] for c in cold)
    row = add(sec, "streamlit run → first chart of / drawn", [c["first_chart_s"] for c in cold],
              note=f"a restart: the stored first chart came first in {stored} of {len(cold)}")
    bare = add(sec, "the floor: streamlit run → its one chart drawn", [f["first_chart_s"] for f in floors],
               note="a bare page, one plotly chart")
    ever = add(sec, "first start ever (nothing stored) → first chart of /", [f["first_chart_s"] for f in firsts],
               note=f"{sum(f['stored'] for f in firsts)} of {len(firsts)} stored a first chart for the restart")
    add(sec, "  first start ever ÷ the floor", [ever["median"] / bare["median"]], unit="x")
    res.goal(sec, "first chart within 8 s of streamlit run", row["median"], GOALS["cold_start_s"], "s")
    res.goal(sec, "streamlit run → first chart ÷ the floor's", row["median"] / bare["median"], GOALS["cold_vs_floor"],
             "x")
    up = add(sec, "server up 30 s: 1st visit of / → first chart", [i["first_visit"]["chart_s"] for i in idle])
    warm = add(sec, "the floor: a page load of its warm server", [s for f in floors for s in f["warm_chart_s"]],
               note=f"{browser.SAMPLES} a run, each in a new tab")
    res.goal(sec, "server up 30 s: first chart ÷ the floor's warm page load", up["median"] / warm["median"],
             GOALS["up_vs_floor"], "x")
    add(sec, "  of which: until the server answers /_stcore/health", [c["healthy_s"] for c in cold])
    add(sec, "  of which: until its first script run starts", [c["run_start_s"] for c in cold],
        note="the browser has loaded the frontend")
    add(sec, "  the first script run (first paint, import posviz, load, draw /)", [c["run_s"] for c in cold])
    add(sec, "  the first chart drawn, from that run's start", [c["first_chart_s"] - c["run_start_s"] for c in cold],
        note="the stored chart (the first paint) where it came first; the browser loads plotly.js, draws")
    for name in browser.PAGES:
        visits = [c["pages"][name] for c in cold]
        row = add(sec, f"page {name}: navigation → first chart", [v["chart_s"] for v in visits],
                  note=f"script done {_median([v['idle_s'] for v in visits]):.2f} s, "
                       f"{_median([v['ws_bytes'] for v in visits]) / 1e6:.2f} MB sent")
        res.goal(sec, f"page {name}: first chart within 8 s", row["median"], GOALS["cold_start_s"], "s")

    sec = "2 payload"
    heat = add(sec, "wire: similarity heatmap 512x512 (its message)",
               [_heatmap_bytes(c["pages"]["similarity"]) for c in cold], unit="B")
    add(sec, "wire: similarity page, all messages", [c["pages"]["similarity"]["ws_bytes"] for c in cold], unit="B")
    long = [c["pages"]["attention, 512 tokens"] for c in cold]
    page = add(sec, "wire: attention page, 512 tokens, all messages", [v["ws_bytes"] for v in long], unit="B")
    for title in long[0]["charts"]:
        add(sec, f"  chart '{title[:40]}'", [v["charts"].get(title) for v in long], unit="B")
    add(sec, "wire: attention 512 tokens, one layer-slider rerun",
        [a["ws_bytes"] for i in idle for a in i["layer_slider_512"]], unit="B")
    res.goal(sec, "similarity heatmap on the wire", heat["median"], GOALS["heatmap_bytes"], "B")
    res.goal(sec, "attention page (512 tokens) on the wire", page["median"], GOALS["attention_page_bytes"], "B")

    sec = "4 umap"
    first = add(sec, "app: 1st UMAP of a server up 30 s, by the sidebar", [i["umap_first"]["chart_s"] for i in idle],
                note="after the 1st visit of /")
    add(sec, "app: /projection by its link, a new tab", [i["umap_link"]["chart_s"] for i in idle],
        note="a page load in a fresh browser context (the floor's: section 1)")
    warm = add(sec, "app: UMAP again, by the sidebar from the model page", [i["umap_again"]["chart_s"] for i in idle],
               note="cached")
    add(sec, "app: UMAP again, page reload", [i["umap_reload"]["chart_s"] for i in idle], note="cached; a new session")
    add(sec, "app: /projection?dims=3 after it", [i["umap_3d"]["chart_s"] for i in idle], note="computed, a new session")
    after = add(sec, "app: UMAP by the sidebar, 30 s after a 1st visit of /",
                [c["umap_after_visit"]["chart_s"] for c in cold], note="that visit started the app's warm-up")
    res.goal(sec, "UMAP page, 1st chart on a server up 30 s", first["median"], GOALS["umap_first_s"], "s")
    res.goal(sec, "UMAP page, 1st chart 30 s after a 1st visit", after["median"], GOALS["umap_first_s"], "s")
    res.goal(sec, "UMAP page, 1st chart warm", warm["median"], GOALS["umap_warm_s"], "s")

    sec = "5 reruns"
    calls = 0
    for key, what, goal in (("layer_slider", "attention: layer slider +1", True),
                            ("layer_slider_512", "attention 512 tokens: layer slider +1", True),
                            ("similarity_q", "similarity: q = 200, 300, 400", True)):
        acts = [a for i in idle for a in i[key]]
        server = add(sec, f"{what}, server", [a["server_s"] for a in acts],
                     note=f"{_median([a['runs'] for a in acts]):g} run(s)")
        add(sec, f"{what}, server incl. the clean-up after the run", [a["server_total_s"] for a in acts])
        add(sec, f"{what}, browser (key → idle)", [a["browser_s"] for a in acts])
        calls += sum(len(a["calls"]) for a in acts)
        if goal:
            res.goal(sec, f"{what}: server time", server["median"], GOALS["rerun_s"], "s",
                     skip_reason="no server times logged")
    res.add(sec, "forward passes run by those reruns", [calls], unit="n")
    res.goal(sec, "no forward pass repeated on a rerun", calls, 0, "n")


def library_rows(res: Results, payload: dict, long: dict, gpu: str | None) -> None:
    """The goals of the library's figures (sections 2 and 6) where the browser gave none."""
    if not any(g.section == "2 payload" for g in res.goals):
        res.goal("2 payload", "similarity heatmap (library, no browser)", payload["heatmap"], GOALS["heatmap_bytes"], "B")
        res.goal("2 payload", "attention page 512 tokens (library, no browser)", payload["attention"],
                 GOALS["attention_page_bytes"], "B")
    full = library.RANGES[-1]
    ratio = long[full, "cpu"] / long[full, "cuda"] if gpu else None
    res.goal("6 long context", f"32k Llama, matrix {full}: cpu ÷ cuda", ratio, 1.0, "x", ">=",
             skip_reason="" if gpu else "no GPU")


def machine() -> dict:
    """CPU model, cores, RAM (GB), Python and the date, from /proc where there is one."""
    cpu, ram = platform.processor() or platform.machine(), None
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    with contextlib.suppress(OSError, StopIteration):
        ram = round(next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal")) / 1e6, 1)
    return dict(cpu=cpu, cores=os.cpu_count(), ram_gb=ram, python=platform.python_version(),
                date=datetime.date.today().isoformat())


def header(meta: dict) -> str:
    """The table's first line: what ran where."""
    versions = " · ".join(f"{k} {meta[k]}" for k in ("torch", "streamlit", "plotly") if meta.get(k))
    return (f"posviz bench · {meta['cores']} cores ({meta['cpu']}) · {meta['ram_gb']} GB RAM · "
            f"{meta.get('gpu') or 'no GPU'} · {versions} · python {meta['python']} · {meta['date']} · "
            f"repeat {meta['repeat']} · total {meta['total_s']:.0f} s · load avg {meta['load_start']:.1f} → "
            f"{meta['load_end']:.1f}")


def main(argv: list[str] | None = None) -> int:
    """Run the bench; print the table last; return the exit status (1: a goal missed)."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each case (default 3; the median is shown)")
    parser.add_argument("--json", metavar="PATH", help="also write every figure as JSON to PATH")
    parser.add_argument("--only", default=",".join(PARTS),
                        help=f"comma-separated parts to run, of {', '.join(PARTS)} (default all)")
    args = parser.parse_args(argv)
    parts = set(args.only.split(","))
    if args.repeat < 1 or not parts <= set(PARTS):
        parser.error(f"--repeat must be at least 1; --only takes {', '.join(PARTS)}")

    import plotly
    import streamlit

    start = time.perf_counter()
    meta = dict(machine(), repeat=args.repeat, load_start=os.getloadavg()[0], streamlit=streamlit.__version__,
                plotly=plotly.__version__)
    if meta["load_start"] > 0.5 * (os.cpu_count() or 1):
        log(f"warning: load average {meta['load_start']:.1f} on {os.cpu_count()} CPUs: other work will skew the times")
    res, raw = Results(), {}
    with tempfile.TemporaryDirectory(prefix="posviz-bench-") as tmp:
        workdir = Path(tmp)
        if "hub" in parts:
            hub.run(res, args.repeat, workdir)
        if "library" in parts:
            raw["children"] = library.fresh_processes(res, args.repeat)
        if "browser" in parts:
            try:
                with browser.chromium_browser() as chromium:
                    raw["floor"], raw["first"], raw["cold"], raw["idle"] = [], [], [], []
                    for i in range(args.repeat):
                        log(f"cold start {i + 1}/{args.repeat}: the floor, posviz's first start (nothing stored), "
                            "then posviz restarted: every page, UMAP after 30 s …")
                        raw["floor"].append(browser.floor(chromium, workdir))
                        cache = workdir / f"cache-{i}"
                        raw["first"].append(browser.first_start(chromium, workdir, cache))
                        raw["cold"].append(browser.cold_start(chromium, workdir, cache))
                    for i in range(args.repeat):
                        log(f"server left alone 30 s {i + 1}/{args.repeat}: UMAP, reruns …")
                        raw["idle"].append(browser.idle_server(chromium, workdir))
                browser_rows(res, raw["floor"], raw["first"], raw["cold"], raw["idle"])
            except browser.NoBrowser as exc:
                res.note("1 cold start", "browser cases", f"skipped: {exc}")
                for section, name in (("1 cold start", "first chart within 8 s"), ("4 umap", "UMAP page in the app"),
                                      ("5 reruns", "rerun server time")):
                    res.goal(section, name, None, 0, "s", skip_reason="no Chromium")
        if "library" in parts:
            lib = library.run(res, args.repeat, workdir)
            library_rows(res, lib["payload"], lib["long"], lib["gpu"])
            meta.update(torch=lib["torch"], torch_threads=lib["threads"], gpu=lib["gpu"])
        if "load" in parts:
            load.run(res, workdir)
        if "attention" in parts:
            attention.run(res, workdir)
    meta.update(total_s=time.perf_counter() - start, load_end=os.getloadavg()[0])
    res.rows.sort(key=lambda r: r["section"].split()[0])  # by section, in the order measured within each
    res.goals.sort(key=lambda g: g.section.split()[0])
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dict(meta=meta, **res.as_json(), raw=raw), indent=1, ensure_ascii=False,
                                   default=str))
        log(f"wrote {path}")
    print_table(res, header(meta))
    return evaluate(res.goals)


if __name__ == "__main__":
    sys.exit(main())
