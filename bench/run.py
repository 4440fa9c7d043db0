"""posviz benchmark: how long each page's data takes, and how many bytes its figures send.

Run from the repository root::

    python bench/run.py [--repeat 5] [--fresh-repeat 3] [--json bench/results.json]
    python -m bench     (the same)

Everything runs on the bundled all-MiniLM-L6-v2 (``posviz.load_model()``, offline; BERT, 512
positions x 384, 6 layers x 12 heads). Times are wall-clock ``time.perf_counter()`` seconds.

What it measures
----------------
1. Model load. *fresh*: ``posviz.load_model()`` in a new Python process (``subprocess``); the
   child times the call itself and prints its figures as JSON, and the parent also times the
   whole child (interpreter start, ``import posviz``, load, UMAP below, exit). *warm*: further
   ``load_model()`` calls in this process, after a first one.
2. Page data, in this process on the model's own device: ``position_embeddings``, ``similarity``
   (dot and cosine, 512 x 512), ``row_profile`` (q = 128), ``project`` PCA 2-D, ``input_embeddings``
   and ``attention`` of the app's default sentence pair, and ``attention`` of a 512-token input.
3. UMAP 2-D of the 512 position vectors (``project(..., "umap")``). *fresh*: the first call in the
   child process of 1, numba compilation included. *warm*: the child's second call, and calls in
   this process after the app's own warm-up (``app_state.warm_up`` runs UMAP on a 64 x 8 array).
4. Bytes a figure sends to the browser: ``len(plotly.io.to_json(fig, validate=False).encode())``
   on ``plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True)``, which is
   what ``st.plotly_chart`` puts in its message (streamlit/elements/plotly_chart.py; the script
   checks that the plain ``to_json(fig)`` gives the same bytes). The 512 x 512 dot-product
   heatmap of the similarity page (``figures.position_heatmap``) is sent as built (numpy float32,
   base64 typed arrays) and with its x, y and z replaced by Python lists (``matrix.tolist()``);
   then the attention page's three figures for a 512-token input (layer 0, head 0: the head's
   heatmap, the mean over heads, the 12-head grid). The time to build each figure
   (``posviz.figures``) and to serialize it as Streamlit does is reported too, and how many of
   the bytes are plotly's escaping of "/" as ``\\u002f`` inside the base64 data.
5. Where ``torch.cuda.is_available()``: the cases of 2 again with the model on cuda (each call
   followed by ``torch.cuda.synchronize()``), beside the cpu figures; otherwise "no GPU".
6. The similarity page of a long-context model: a randomly initialised Llama-style config with
   131,072 positions (rotary), saved and loaded like a user's folder, beside the bundled model:
   the time to compute the page's position-position matrix and the bytes of its heatmap, for the
   default range and for the full range (shown every k-th position, at most 2,048 per side).

Each in-process case is called once first (timed on its own: the "1st call" column, which holds
imports and lazy initialisation) and then ``--repeat`` times; the table gives the median, min and
max of those repeats. Fresh-process cases run ``--fresh-repeat`` children (default 3, each about
20 s on 2 cores, mostly numba compiling UMAP), one after another so they never share the CPU.
Times are only as good as an idle machine: the script warns on stderr when the load average is
high, and the table's header shows the 1-minute load average before and after. The table is
printed last, on stdout; progress goes to stderr. ``--json PATH`` also writes every figure (each
single measurement included) as JSON; without it nothing is written.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# Quiet third-party progress bars and chatter, here and in the children (they inherit os.environ).
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

TEXT = "The cat chased the dog"            # posviz.app_state.DEFAULT_TEXT
TEXT_PAIR = "The dog chased the cat"       # posviz.app_state.DEFAULT_TEXT_PAIR
LONG_TEXT = " ".join([TEXT + "."] * 120)   # ~720 tokens, truncated by posviz to the model's 512


def log(msg: str) -> None:
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def _quiet() -> None:
    warnings.simplefilter("ignore")
    try:
        import transformers

        transformers.utils.logging.set_verbosity_error()
        transformers.utils.logging.disable_progress_bar()
    except Exception:  # noqa: BLE001  (cosmetic only)
        pass


# ----------------------------------------------------------------------------- fresh-process child

def child_main() -> None:
    """Fresh process: import posviz, load the model, run UMAP twice; print the times as JSON."""
    t0 = time.perf_counter()
    import posviz

    t1 = time.perf_counter()
    _quiet()
    t2 = time.perf_counter()
    lm = posviz.load_model()
    t3 = time.perf_counter()
    pe = posviz.position_embeddings(lm)
    t4 = time.perf_counter()
    posviz.project(pe.tensor, "umap")
    t5 = time.perf_counter()
    posviz.project(pe.tensor, "umap")
    t6 = time.perf_counter()
    print(json.dumps(dict(import_s=t1 - t0, load_s=t3 - t2, load_seconds_attr=lm.load_seconds,
                          device=str(lm.device), umap_cold_s=t5 - t4, umap_warm_s=t6 - t5)))


def run_children(n: int) -> list[dict]:
    out = []
    for i in range(n):
        log(f"fresh process {i + 1}/{n}: import posviz, load_model(), UMAP x2 …")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child"],
                              cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-4000:])
            raise SystemExit(f"fresh-process child failed with exit status {proc.returncode}")
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        result["child_wall_s"] = wall
        out.append(result)
    return out


# ----------------------------------------------------------------------------- measurement helpers

class Results:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def add(self, section: str, case: str, values: list[float], unit: str = "s",
            first: float | None = None, note: str = "") -> dict:
        row = dict(section=section, case=case, unit=unit, n=len(values), values=values,
                   median=statistics.median(values), min=min(values), max=max(values),
                   first=first, note=note)
        self.rows.append(row)
        return row

    def add_note(self, section: str, case: str, note: str) -> None:
        self.rows.append(dict(section=section, case=case, unit="", n=0, values=[], median=None,
                              min=None, max=None, first=None, note=note))


def timed(fn, repeat: int, sync=None) -> tuple[float, list[float]]:
    """(first call, [repeat further calls]) in seconds; ``sync`` runs inside each timing."""
    def once() -> float:
        start = time.perf_counter()
        fn()
        if sync:
            sync()
        return time.perf_counter() - start

    first = once()
    return first, [once() for _ in range(repeat)]


def compute_cases(lm, repeat: int, res: Results, section: str, sync=None) -> dict[str, dict]:
    """Section 2: the data of each page on ``lm``'s device. Returns the rows by case name."""
    import posviz

    pe = posviz.position_embeddings(lm)
    full = posviz.similarity(pe.tensor, "dot")
    cases = {
        "position_embeddings": lambda: posviz.position_embeddings(lm),
        "similarity dot 512x512": lambda: posviz.similarity(pe.tensor, "dot"),
        "similarity cosine 512x512": lambda: posviz.similarity(pe.tensor, "cosine"),
        "row_profile q=128": lambda: posviz.row_profile(full, 128, normalize="max"),
        "project pca 2-D (512x384)": lambda: posviz.project(pe.tensor, "pca", 2),
        "input_embeddings default pair": lambda: posviz.input_embeddings(lm, TEXT, TEXT_PAIR),
        "attention default pair": lambda: posviz.attention(lm, TEXT, TEXT_PAIR),
        "attention 512 tokens": lambda: posviz.attention(lm, LONG_TEXT),
    }
    rows = {}
    for name, fn in cases.items():
        log(f"{section}: {name}")
        first, values = timed(fn, repeat, sync)
        rows[name] = res.add(section, name, values, first=first)
    return rows


def streamlit_spec(fig) -> str:
    """The JSON ``st.plotly_chart`` puts in its message (streamlit/elements/plotly_chart.py)."""
    import plotly.io as pio
    from plotly.tools import return_figure_from_figure_or_data

    return pio.to_json(return_figure_from_figure_or_data(fig, validate_figure=True), validate=False)


def figure_bytes(fig) -> tuple[int, int]:
    """(bytes as Streamlit sends them, bytes of a plain ``to_json(fig, validate=False)``)."""
    import plotly.io as pio

    return len(streamlit_spec(fig).encode()), len(pio.to_json(fig, validate=False).encode())


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


# ----------------------------------------------------------------------------- main

def fmt_time(v: float | None) -> str:
    if v is None:
        return ""
    return f"{v * 1e3:.2f} ms" if v < 1 else f"{v:.2f} s"


def fmt(v, unit: str) -> str:
    if v is None:
        return ""
    if unit == "B":
        return f"{int(v):,} B"
    if unit == "x":
        return f"{v:.2f}x"
    return fmt_time(v)


def print_table(res: Results, meta: dict) -> None:
    head = ["section", "case", "median", "min", "max", "n", "1st call", "note"]
    body = [[r["section"], r["case"], fmt(r["median"], r["unit"]), fmt(r["min"], r["unit"]),
             fmt(r["max"], r["unit"]), str(r["n"]) if r["n"] else "", fmt_time(r["first"]), r["note"]]
            for r in res.rows]
    widths = [max(len(row[i]) for row in [head] + body) for i in range(len(head))]
    right = {2, 3, 4, 5, 6}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    print()
    print(f"posviz bench · {meta['model']} · torch {meta['torch']} ({meta['torch_threads']} threads) · "
          f"plotly {meta['plotly']} (json engine: {meta['plotly_json_engine']}) · {meta['cpu_count']} CPUs · "
          f"python {meta['python']} · total {meta['total_s']:.0f} s · load avg "
          f"{meta['loadavg_1min_start']:.1f} → {meta['loadavg_1min_end']:.1f}")
    print(line(head))
    print(line(["-" * w for w in widths]))
    last = None
    for r, cells in zip(res.rows, body):
        if last is not None and r["section"] != last:
            print()
        last = r["section"]
        print(line(cells))
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="timed calls per in-process case (default 5)")
    parser.add_argument("--fresh-repeat", type=int, default=3,
                        help="fresh child processes for load/UMAP cold (default 3, ~30 s each)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON to PATH")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _quiet()
        child_main()
        return
    if args.repeat < 1 or args.fresh_repeat < 1:
        parser.error("--repeat and --fresh-repeat must be at least 1")

    t_start = time.perf_counter()
    load_before = os.getloadavg()[0]
    if load_before > 0.5 * (os.cpu_count() or 1):
        log(f"warning: load average {load_before:.1f} on {os.cpu_count()} CPUs: other processes will skew the times")
    res = Results()

    # 1 + 3, fresh processes first, before this process takes memory and CPU caches.
    children = run_children(args.fresh_repeat)

    log("import posviz in this process …")
    import numpy as np
    import plotly
    import plotly.graph_objects as go
    import plotly.io as pio
    import torch

    import posviz
    from posviz import figures
    from posviz.analysis import sample_positions
    _quiet()

    res.add("1 load", "load_model() fresh process (child's own timing)", [c["load_s"] for c in children],
            note=f"device {children[0]['device']}")
    res.add("1 load", "import posviz fresh process", [c["import_s"] for c in children])
    res.add("1 load", "whole child (start, import, load, UMAP x2, exit)", [c["child_wall_s"] for c in children])
    log("load_model() warm …")
    first_load, warm_loads = timed(lambda: posviz.load_model(), args.repeat)
    res.add("1 load", "load_model() warm (same process)", warm_loads, first=first_load)
    lm = posviz.load_model()

    # 2: page data on the default device.
    cpu_rows = compute_cases(lm, args.repeat, res, f"2 data ({lm.device})")

    # 3: UMAP.
    pe = posviz.position_embeddings(lm)
    res.add("3 umap", "project umap 2-D fresh process (numba compile incl.)", [c["umap_cold_s"] for c in children])
    res.add("3 umap", "project umap 2-D, 2nd call in the fresh process", [c["umap_warm_s"] for c in children])
    log("UMAP: the app's warm-up (64 x 8), then the 512 positions …")
    start = time.perf_counter()
    posviz.project(np.random.default_rng(0).normal(size=(64, 8)), "umap")  # = app_state.warm_up()
    warm_up = time.perf_counter() - start
    res.add("3 umap", "app_state.warm_up() equivalent (UMAP 64x8, 1st in process)", [warm_up])
    first_umap, warm_umap = timed(lambda: posviz.project(pe.tensor, "umap"), args.repeat)
    res.add("3 umap", "project umap 2-D after warm-up (same process)", warm_umap, first=first_umap)

    # 4: bytes to the browser.
    log("figure bytes …")
    sec = "4 bytes"
    full = posviz.similarity(pe.tensor, "dot")
    n = full.shape[0]
    title = f"P·Pᵀ between positions 0–{n - 1}"

    def build_np():
        return figures.position_heatmap(full, 0, title, "P·Pᵀ", clip=True)

    def build_lists():
        # A new trace from lists: updating z of the built trace would keep it a float32 array.
        fig = figures.position_heatmap(full, 0, title, "P·Pᵀ", clip=True)
        spec = fig.data[0].to_plotly_json()
        spec.update(z=full.tolist(), x=list(range(n)), y=list(range(n)))
        return go.Figure(data=[go.Heatmap(spec)], layout=fig.layout)

    same = []

    def measure_figure(label: str, build) -> int:
        """Rows for one figure: bytes sent, build time, Streamlit's serialization time."""
        t_build, builds = timed(build, args.repeat)
        fig = build()
        spec = streamlit_spec(fig)
        sent, plain = figure_bytes(fig)
        same.append(sent == plain)
        escapes = 5 * spec.count("\\u002f")
        res.add(sec, label, [sent], unit="B", note=_mb(sent) + (
            f", of which {escapes:,} B are '/' escaped as \\u002f" if escapes > 1000 else ""))
        res.add(sec, "  build (posviz.figures)", builds, first=t_build)
        t_ser, ser = timed(lambda: streamlit_spec(fig), args.repeat)
        res.add(sec, "  serialize (to_dict + to_json)", ser, first=t_ser)
        return sent

    np_b = measure_figure(f"similarity heatmap {n}x{n} (numpy float32, as built)", build_np)
    li_b = measure_figure(f"similarity heatmap {n}x{n} (z, x, y as Python lists)", build_lists)
    res.add(sec, "  lists / numpy", [li_b / np_b], unit="x")
    raw = full.astype(np.float32).nbytes
    res.add(sec, f"  (raw float32 z: {raw:,} B; base64 of it)", [4 * -(-raw // 3)], unit="B")

    att = posviz.attention(lm, LONG_TEXT)
    layer, head = 0, 0
    patterns = att.patterns[layer]
    tokens = att.tokens
    k = len(tokens)
    att_figs = {
        f"attention {k} tok: head heatmap": lambda: figures.token_heatmap(
            patterns[head], tokens, f"Layer {layer}, head {head}", "weight", "query", "key", zmin=0),
        f"attention {k} tok: mean over heads": lambda: figures.token_heatmap(
            patterns.mean(axis=0), tokens, f"Layer {layer}, mean over heads", "weight", "query", "key", zmin=0),
        f"attention {k} tok: {patterns.shape[0]}-head grid": lambda: figures.heads_grid(
            patterns, f"Layer {layer}: every head (rows = queries, columns = keys)"),
    }
    total = sum(measure_figure(label, build) for label, build in att_figs.items())
    res.add(sec, f"attention {k} tok: page total (3 figures)", [total], unit="B", note=_mb(total))
    res.add_note(sec, "Streamlit path == plain to_json bytes", "yes" if all(same) else "NO (differs)")

    # 6: the similarity page of a long-context rotary model (a tiny Llama with 131,072 positions)
    # against the bundled model: compute time and bytes sent. Nothing over all positions is n x n:
    # the page shows at most 2,048 positions per side (a stride over wider ranges).
    sec = "6 long context"
    for label, lm_case in (("bundled (512 positions)", lm), ("Llama, 131,072 positions", long_context_model())):
        enc = posviz.position_embeddings(lm_case)
        n = enc.num_positions
        default = min(n, 2048)
        for name, (lo, hi) in {f"default range 0-{default - 1}": (0, default - 1),
                               f"full range 0-{n - 1}": (0, n - 1)}.items():
            positions, step = sample_positions(lo, hi, 2048)
            t_first, times = timed(lambda: posviz.similarity(enc.vectors(positions), "dot"), args.repeat)
            res.add(sec, f"{label}: matrix, {name}", times, first=t_first,
                    note=f"{len(positions)}x{len(positions)}, stride {step}")
            matrix = posviz.similarity(enc.vectors(positions), "dot")
            sent, _ = figure_bytes(figures.position_heatmap(matrix, lo, "bench", "dot", step=step))
            res.add(sec, f"{label}: heatmap bytes, {name}", [sent], unit="B", note=_mb(sent))

    # 5: GPU.
    gpu = None
    if torch.cuda.is_available():
        log("cuda …")
        lm_gpu = posviz.load_model(device="cuda")
        gpu_rows = compute_cases(lm_gpu, args.repeat, res, "5 data (cuda)", sync=torch.cuda.synchronize)
        for name, row in gpu_rows.items():
            res.add("5 cpu/cuda", name, [cpu_rows[name]["median"] / row["median"]], unit="x",
                    note="median cpu ÷ median cuda")
        gpu = torch.cuda.get_device_name(0)
    else:
        res.add_note("5 gpu", "cuda vs cpu", "no GPU (torch.cuda.is_available() is False): skipped")

    meta = dict(
        model=lm.name, device=str(lm.device), torch=torch.__version__, torch_threads=torch.get_num_threads(),
        plotly=plotly.__version__, plotly_json_engine=pio.json.config.default_engine
        + (" -> orjson" if pio.json.config.default_engine == "auto" and _has("orjson") else ""),
        cpu_count=os.cpu_count(), python=platform.python_version(), gpu=gpu,
        repeat=args.repeat, fresh_repeat=args.fresh_repeat, total_s=time.perf_counter() - t_start,
        loadavg_1min_start=load_before, loadavg_1min_end=os.getloadavg()[0],
        attention_512_shape=list(att.patterns.shape),
    )
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dict(meta=meta, children=children, rows=res.rows), indent=2, ensure_ascii=False))
        log(f"wrote {path}")
    print_table(res, meta)


def long_context_model():
    """A randomly initialised Llama-style model with 131,072 positions, saved and loaded as a user's."""
    import tempfile

    import posviz
    from transformers import AutoModel, AutoTokenizer, LlamaConfig

    folder = Path(tempfile.mkdtemp(prefix="posviz-bench-llama-"))
    config = LlamaConfig(vocab_size=30522, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=131072)
    AutoModel.from_config(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(posviz.loading.bundled_model_path()).save_pretrained(folder)
    return posviz.load_model(str(folder))


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


if __name__ == "__main__":
    main()
