"""The GPU cases, in one script for a machine that has a GPU: ``python -m bench.gpu [--repeat 3]``.

1. cuda against cpu, in this process, on the bundled model (all-MiniLM-L6-v2): each page's data
   (:func:`bench.library.compute_cases`: similarity, q profile, PCA, the input representation,
   the attention of the default pair and of 512 tokens), seconds, and cpu ÷ cuda;
2. the similarity matrix of a randomly initialised Llama-style model with 32,768 positions
   (rotary) over each range of :data:`bench.library.RANGES`, on each device
   (:func:`bench.library.long_context_cases`);
3. every page of the app (AppTest, the bundled model, ``device`` auto: cuda): no error, and every
   forward pass and positional tensor of its run on cuda. A global forward pre-hook of torch
   records the device of every tensor a module is called with; the page's model and positional
   tensors must be on cuda too.

Prints the table (:func:`bench.report.print_table`); exit status 1 when a page ran anything on the
cpu or failed, 2 when there is no GPU (nothing measured).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench import library
from bench.report import Results, evaluate, log, print_table

#: The app's pages, as AppTest opens them (``pages/<name>.py``).
PAGES = ("model", "similarity", "projection", "input", "attention", "compare", "probes", "word_order", "properties",
         "gallery")


def page_devices(page: str) -> tuple[set[str], str]:
    """Run one page of the app in AppTest; (the device types its modules were called with, the
    page's first error or "")."""
    import torch
    from torch.nn.modules.module import register_module_forward_pre_hook

    from tests.support.apptest import open_page

    seen: set[str] = set()

    def record(module, args):
        seen.update(a.device.type for a in args if isinstance(a, torch.Tensor))

    handle = register_module_forward_pre_hook(record)
    try:
        at = open_page(page)
    finally:
        handle.remove()
    errors = [e.value for e in at.exception] + [e.value for e in at.main.error]
    return seen, str(errors[0])[:200] if errors else ""


def main(argv: list[str] | None = None) -> int:
    """Run the GPU cases; print the table; return the exit status (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    import torch

    import posviz

    if not torch.cuda.is_available():
        log("no GPU (torch.cuda.is_available() is False): nothing to measure")
        return 2
    res, sync = Results(), torch.cuda.synchronize
    library.quiet()
    cpu = library.compute_cases(posviz.load_model(device="cpu"), args.repeat, res, "1 compute cpu")
    lm = posviz.load_model(device="cuda")
    cuda = library.compute_cases(lm, args.repeat, res, "1 compute cuda", sync=sync)
    for name, row in cuda.items():
        res.add("1 cpu ÷ cuda", name, [cpu[name]["median"] / row["median"]], unit="x")
    with tempfile.TemporaryDirectory(prefix="posviz-gpu-") as tmp:
        long = library.long_context_cases(res, args.repeat, ["cpu", "cuda"], sync, Path(tmp) / "llama-32k")
    full = library.RANGES[-1]
    res.goal("2 long context", f"32k Llama, matrix {full}: cpu ÷ cuda", long[full, "cpu"] / long[full, "cuda"], 1.0,
             "x", ">=")
    tensors = {e.tensor.device.type for e in lm.encodings if getattr(e, "tensor", None) is not None}
    res.goal("3 pages", "the bundled model's positional tensors on cuda", float(tensors == {"cuda"}), 1, "n", ">=")
    for page in PAGES:
        log(f"page {page} on cuda …")
        devices, error = page_devices(page)
        res.add("3 pages", f"{page}: devices of its forward passes", [len(devices)], unit="n",
                note=(", ".join(sorted(devices)) or "no forward pass") + (f"; error: {error}" if error else ""))
        res.goal("3 pages", f"{page}: no error, nothing on the cpu", float(not error and "cpu" not in devices), 1,
                 "n", ">=")
    print_table(res, f"posviz GPU cases · {torch.cuda.get_device_name(0)} · torch {torch.__version__}")
    return evaluate(res.goals)


if __name__ == "__main__":
    sys.exit(main())
