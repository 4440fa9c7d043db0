"""The library's figures, in processes of their own and in this one (no server, no browser).

* Fresh processes (``python -m bench.library``, one after another): ``import posviz``,
  ``load_model()``, UMAP of the 512 positions twice (the first call compiles umap-learn's numba
  code). The child times each step itself; the parent also times the whole child.
* In this process: ``load_model()`` warm; the data of each page (similarity, PCA, forward passes)
  on cpu, and on cuda where present; UMAP after the app's warm-up; the bytes of the similarity
  heatmap and of the attention page's figures (built as the app builds them, serialized as
  ``st.plotly_chart`` does) against the naive alternatives; a long-context Llama (32k positions).

Everything runs on the bundled all-MiniLM-L6-v2 (offline). Times are ``time.perf_counter()``
seconds, sizes bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

from bench import LONG_TEXT, ROOT, TEXT, TEXT_PAIR
from bench.report import Results, log, timed

LONG_CONTEXT = 32768                         # positions of the long-context Llama
#: The similarity page's ranges of it: the default (2,048 positions) and all (every 16th).
RANGES = ("0-2047", f"0-{LONG_CONTEXT - 1}")


def quiet() -> None:
    """Silence warnings and transformers' logging in this process."""
    warnings.simplefilter("ignore")
    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()


def child_main() -> None:
    """A fresh process: import posviz, load the model, UMAP twice; print the seconds as JSON."""
    t0 = time.perf_counter()
    import posviz

    t1 = time.perf_counter()
    quiet()
    t2 = time.perf_counter()
    lm = posviz.load_model()
    t3 = time.perf_counter()
    vectors = lm.encodings[0].tensor
    t4 = time.perf_counter()
    posviz.project(vectors, "umap")
    t5 = time.perf_counter()
    posviz.project(vectors, "umap")
    t6 = time.perf_counter()
    print(json.dumps(dict(import_s=t1 - t0, load_s=t3 - t2, umap_cold_s=t5 - t4, umap_warm_s=t6 - t5,
                          device=str(lm.device))))


def fresh_processes(res: Results, repeat: int) -> list[dict]:
    """Run ``repeat`` fresh children (:func:`child_main`) one after another; add their rows
    (sections 1 and 4); return each child's seconds (``child_wall_s``: the whole child, as timed here)."""
    children = []
    for i in range(repeat):
        log(f"fresh process {i + 1}/{repeat}: import posviz, load_model(), UMAP x2 …")
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "bench.library"], cwd=ROOT, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"fresh-process child failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
        children.append(dict(json.loads(proc.stdout.strip().splitlines()[-1]), child_wall_s=time.perf_counter() - start))
    col = {k: [c[k] for c in children] for k in children[0]}
    res.add("1 cold start", "import posviz, fresh process", col["import_s"])
    res.add("1 cold start", "load_model() bundled, fresh process", col["load_s"], note=f"device {children[0]['device']}")
    res.add("1 cold start", "whole child (start, import, load, UMAP x2, exit)", col["child_wall_s"])
    res.add("4 umap", "library: UMAP 512 positions, fresh process", col["umap_cold_s"], note="numba compiles")
    res.add("4 umap", "library: UMAP, 2nd call in that process", col["umap_warm_s"])
    return children


def compute_cases(lm, repeat: int, res: Results, section: str, sync=None) -> dict[str, dict]:
    """Time the data of each page on ``lm``'s device, in seconds (``sync`` runs inside each
    timing); return the rows by case."""
    import posviz

    vectors = lm.encodings[0].tensor
    full = posviz.similarity(vectors, "dot")
    cases = {
        "similarity dot 512x512": lambda: posviz.similarity(vectors, "dot"),
        "similarity cosine 512x512": lambda: posviz.similarity(vectors, "cosine"),
        "row_profile q=128": lambda: posviz.row_profile(full, 128, normalize="max"),
        "PCA 2-D of 512 positions": lambda: posviz.project(vectors, "pca", 2),
        "input_representation, default pair": lambda: posviz.input_representation(lm, TEXT, TEXT_PAIR),
        "attention, default pair": lambda: posviz.attention(lm, TEXT, TEXT_PAIR),
        "attention, 512 tokens": lambda: posviz.attention(lm, LONG_TEXT),
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


def figure_case(res: Results, repeat: int, label: str, build) -> int:
    """Rows for one figure: the bytes ``st.plotly_chart`` sends for ``build()``, the time to build
    it and to serialize it; returns the bytes."""
    t_build, builds = timed(build, repeat)
    fig = build()
    spec = streamlit_spec(fig)
    sent = len(spec.encode())
    escapes = 5 * spec.count("\\u002f")
    res.add("2 payload", label, [sent], unit="B",
            note=f"{escapes / 1e6:.2f} MB of it '/' escaped as \\u002f" if escapes > 10_000 else "")
    res.add("2 payload", "  build (posviz.views.figures)", builds, first=t_build)
    t_ser, sers = timed(lambda: streamlit_spec(fig), repeat)
    res.add("2 payload", "  serialize (as st.plotly_chart)", sers, first=t_ser)
    return sent


def payload_cases(lm, repeat: int, res: Results) -> dict[str, int]:
    """Bytes of the similarity heatmap (numpy as built, and from Python lists) and of the
    attention page at 512 tokens (its seven figures, and every layer and head at once)."""
    import numpy as np
    import plotly.graph_objects as go

    import posviz
    from posviz.analysis.attention_offsets import scheme_by_offset
    from posviz.analysis.attention_budget import Window
    from posviz.analysis.attention_reading import read_attention
    from posviz.views import attention as attention_views, attention_offsets as offset_views, figures

    full = posviz.similarity(lm.encodings[0].tensor, "dot")
    n = full.shape[0]
    title = f"P·Pᵀ, positions 0–{n - 1}"

    def as_lists():
        fig = figures.position_heatmap(full, 0, title, "P·Pᵀ", clip=True)
        spec = fig.data[0].to_plotly_json()
        spec.update(z=full.tolist(), x=list(range(n)), y=list(range(n)))
        return go.Figure(data=[go.Heatmap(spec)], layout=fig.layout)

    out = dict(heatmap=figure_case(res, repeat, f"library: heatmap {n}x{n}, float32 as built",
                                   lambda: figures.position_heatmap(full, 0, title, "P·Pᵀ", clip=True)))
    out["heatmap_lists"] = figure_case(res, repeat, "library: the same from Python lists (naive)", as_lists)
    res.add("2 payload", "  lists ÷ float32", [out["heatmap_lists"] / out["heatmap"]], unit="x")

    patterns = posviz.attention(lm, LONG_TEXT).patterns  # [layers, heads, 512, 512]
    layer, tokens = patterns[0], posviz.attention(lm, LONG_TEXT).tokens
    k = len(tokens)
    profile = read_attention(lm, LONG_TEXT, layers=[]).offsets
    encoding = lm.encodings[0]
    page = {  # as pages/attention.py draws them
        "head": lambda: attention_views.attention_head(layer, tokens, tokens, layer=0, head=0).figure,
        "mean over heads": lambda: attention_views.attention_mean(layer, tokens, tokens, layer=0).figure,
        "every head": lambda: attention_views.attention_grid(layer, tokens, tokens, layer=0).figure,
        "zoom": lambda: attention_views.attention_window(layer[:, :32, :32], tokens, tokens,
                                                         Window(0, 32, 0, 32), layer=0, head=0).figure,
        "by offset": lambda: offset_views.offset_grid(profile).figure,
        "sinks": lambda: offset_views.sink_grid(profile).figure,
        "one head by offset": lambda: offset_views.head_offsets(profile, scheme_by_offset(encoding, k), layer=0,
                                                                head=0, scheme=encoding.label).figure,
        "shares by query": lambda: offset_views.shares_by_query(profile, layer=0, head=0).figure,
    }
    out["attention"] = sum(figure_case(res, repeat, f"library: attention {k} tok, {name}", build)
                           for name, build in page.items())
    res.add("2 payload", f"library: attention page {k} tok ({len(page)} figures)", [out["attention"]], unit="B")

    def every_layer_and_head():
        return go.Figure([go.Heatmap(z=np.asarray(patterns[i, h], dtype=np.float32), visible=i == h == 0)
                          for i in range(patterns.shape[0]) for h in range(patterns.shape[1])])

    out["attention_all"] = figure_case(
        res, 1, f"library: every layer and head at once ({patterns.shape[0]}x{patterns.shape[1]} heatmaps)",
        every_layer_and_head)
    res.add("2 payload", "  all at once ÷ page", [out["attention_all"] / out["attention"]], unit="x")
    return out


def umap_cases(lm, repeat: int, res: Results) -> None:
    """Time (seconds) UMAP of the 512 positions in this process, after a first UMAP (64 x 8), which
    imports umap-learn and reads its compiled code from numba's disk cache (or compiles it)."""
    import numpy as np

    import posviz

    vectors = lm.encodings[0].tensor
    start = time.perf_counter()
    posviz.project(np.random.default_rng(0).normal(size=(64, 8)), "umap")
    res.add("4 umap", "library: 1st UMAP in the process (64x8)", [time.perf_counter() - start],
            note="import, numba code from its disk cache")
    first, values = timed(lambda: posviz.project(vectors, "umap"), repeat)
    res.add("4 umap", "library: UMAP 512 positions after the warm-up", values, first=first)


def long_context_folder(folder: Path) -> Path:
    """Save a randomly initialised Llama-style model with :data:`LONG_CONTEXT` positions (rotary)
    and the bundled tokenizer to ``folder``, as a user's folder would hold them."""
    import posviz
    from transformers import AutoModel, AutoTokenizer, LlamaConfig

    config = LlamaConfig(vocab_size=30522, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=LONG_CONTEXT)
    AutoModel.from_config(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(posviz.loading.bundled_model_path()).save_pretrained(folder)
    return folder


def long_context_cases(res: Results, repeat: int, devices: list[str], sync, folder: Path) -> dict[tuple, float]:
    """The similarity page's matrix of the long-context Llama over each of :data:`RANGES` on each
    device, and its heatmap's bytes; the median seconds by (range, device)."""
    import posviz
    from posviz.views import figures
    from posviz.analysis.similarity import sample_positions

    medians = {}
    long_context_folder(folder)
    for device in devices:
        lm = posviz.load_model(str(folder), device=device)
        res.add("6 long context", f"Llama {LONG_CONTEXT:,} positions: load_model on {device}", [lm.load_seconds])
        enc = lm.encodings[0]
        for name in RANGES:
            positions, step = sample_positions(0, int(name.split("-")[1]), 2048)
            first, values = timed(lambda: posviz.similarity(enc.vectors(positions), "dot"), repeat,
                                  sync if device == "cuda" else None)
            row = res.add("6 long context", f"  matrix {name} on {device}", values, first=first,
                          note=f"{len(positions)}x{len(positions)}, stride {step}")
            medians[name, device] = row["median"]
    matrix = posviz.similarity(enc.vectors(positions), "dot")
    spec = streamlit_spec(figures.position_heatmap(matrix, 0, "bench", "dot", step=step))
    res.add("6 long context", f"  heatmap bytes, {name} (block means)", [len(spec.encode())], unit="B")
    return medians


def run(res: Results, repeat: int, workdir: Path) -> dict:
    """Every in-process case (see the module docstring); returns facts for the table's header,
    the in-process payload in bytes (``payload``) and the long-context medians in seconds by
    (range, device) (``long``)."""
    log("import posviz in this process …")
    import torch

    import posviz

    quiet()
    first, values = timed(lambda: posviz.load_model(device="cpu"), repeat)
    res.add("1 cold start", "load_model() bundled, warm (same process)", values, first=first)
    lm = posviz.load_model(device="cpu")
    payload = payload_cases(lm, repeat, res)
    umap_cases(lm, repeat, res)
    cpu = compute_cases(lm, repeat, res, "6 compute cpu")
    gpu = torch.cuda.is_available()
    if gpu:
        sync = torch.cuda.synchronize
        cuda = compute_cases(posviz.load_model(device="cuda"), repeat, res, "6 compute cuda", sync=sync)
        for name, row in cuda.items():
            res.add("6 cpu ÷ cuda", name, [cpu[name]["median"] / row["median"]], unit="x")
    else:
        res.note("6 compute cuda", "cuda against cpu", "no GPU (torch.cuda.is_available() is False): skipped")
    log("long-context Llama …")
    long = long_context_cases(res, repeat, ["cpu", "cuda"] if gpu else ["cpu"], torch.cuda.synchronize if gpu else None,
                              workdir / "llama-32k")
    return dict(payload=payload, long=long, gpu=torch.cuda.get_device_name(0) if gpu else None,
                torch=torch.__version__, threads=torch.get_num_threads())


if __name__ == "__main__":
    child_main()
