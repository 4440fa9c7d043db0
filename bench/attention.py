"""Attention at any length (section 7): the attention page's computations on a model of SmolLM2-135M's shape.

A randomly initialised Llama (30 layers, 9 heads with 3 key-value heads, width 576, 8 192 positions,
rotary base 100 000), with the bundled WordPiece tokenizer, is saved once in the bench's folder. For
512, 2 048 and 8 192 tokens of the probes' text, a fresh process loads it and then does what the
Attention page does with its defaults: reads the attention (every layer kept as the page keeps them,
a 32 × 32 window where the input is summarised), builds the head, mean and heads-grid figures, the
zoomed window, the attention-by-offset grid, the sink grid and one head's profile beside the rotary
kernel. It reports the wall time and the peak growth of the process's memory (resident set, sampled
every 5 ms from before the reading to after the last figure; after a short sentence's forward pass has
paged in the memory-mapped weights, as any earlier page would have). Beside it, ``posviz.attention``
(``output_attentions=True``, every layer at once) at the lengths where its estimate fits in half
of this machine's free memory.

    python -m bench --only attention
    python -m bench.attention --child FOLDER TOKENS {page,output_attentions}   (one measurement)
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.report import Results, log

LENGTHS = (512, 2048, 8192)
#: The issue's limit on the page's memory growth at 8 192 tokens, bytes.
GROWTH_LIMIT = 2e9


def build_model(folder: Path) -> Path:
    """Save the random SmolLM2-135M-shaped Llama (and the bundled tokenizer) in ``folder``, once."""
    if (folder / "config.json").exists():
        return folder
    import torch
    from transformers import AutoModel, AutoTokenizer, LlamaConfig

    from posviz.loading import bundled_model_path

    config = LlamaConfig(vocab_size=30522, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                         num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                         rope_theta=100000.0, tie_word_embeddings=True)
    torch.manual_seed(0)
    AutoModel.from_config(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(bundled_model_path(), model_input_names=["input_ids", "attention_mask"]
                                  ).save_pretrained(folder)
    return folder


class _PeakMemory:
    """The resident set's peak above its value at the start, sampled every 5 ms in a thread."""

    def __enter__(self):
        import psutil

        self._process = psutil.Process()
        self.start = self.peak = self._process.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self._process.memory_info().rss)

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._process.memory_info().rss)

    @property
    def growth(self) -> int:
        return self.peak - self.start


def _text(lm, tokens: int) -> str:
    """The probes' text, repeated and cut to about ``tokens`` tokens (special tokens included)."""
    from posviz.analysis.layer_probe import BUILTIN_TEXT

    ids = lm.tokenizer(" ".join([BUILTIN_TEXT] * (tokens // 1000 + 2)), add_special_tokens=False)["input_ids"]
    return lm.tokenizer.decode(ids[:tokens - 2])


def child(folder: str, tokens: int, way: str) -> dict:
    """One measurement in this (fresh) process: the page's computations, or ``posviz.attention``."""
    import posviz
    from posviz.analysis import attention_budget as budget
    from posviz.analysis import attention_reading as reading
    from posviz.analysis.attention_offsets import scheme_by_offset
    from posviz.tokenization import encode
    from posviz.views import attention as views
    from posviz.views import attention_offsets as offset_views

    lm = posviz.load_model(folder)
    text = _text(lm, tokens)
    posviz.attention(lm, "A warm-up sentence.")  # pages the memory-mapped weights in, as any page before did
    with _PeakMemory() as memory:
        began = time.perf_counter()
        if way == "output_attentions":
            posviz.attention(lm, text)
        else:
            window = budget.Window(0, 32, 0, 32)
            queries = len(encode(lm, text).tokens)
            summarised = queries > budget.WHOLE_TOKENS
            layers = None if budget.every_layer_fits(lm, queries, queries, window=window) else (0,)
            att = reading.read_attention(lm, text, layers=layers, window=window if summarised else None)
            read_s = time.perf_counter() - began
            kept = att.layer(0)
            shown = dict(layer=0, summary=(kept.block, "mean"))
            patterns = kept.summary("mean")
            for view in (views.attention_head(patterns, att.query_tokens, att.key_tokens, head=0, **shown),
                         views.attention_mean(patterns, att.query_tokens, att.key_tokens, **shown),
                         views.attention_grid(patterns, att.query_tokens, att.key_tokens, **shown)):
                view.figure.to_json()
            zoomed = kept.window_patterns if kept.block > 1 else kept.patterns[:, :32, :32]
            views.attention_window(zoomed, att.query_tokens, att.key_tokens, window, layer=0, head=0).figure.to_json()
            encoding = lm.encodings[0]
            prediction = scheme_by_offset(encoding, queries)
            for view in (offset_views.offset_grid(att.offsets), offset_views.sink_grid(att.offsets),
                         offset_views.head_offsets(att.offsets, prediction, layer=0, head=0, scheme=encoding.label)):
                view.figure.to_json()
        seconds = time.perf_counter() - began
    result = dict(tokens=tokens, way=way, seconds=seconds, growth=memory.growth)
    if way == "page":
        result |= dict(read_s=read_s, queries=queries, block=kept.block, estimate=budget.estimate(
            lm, queries, kept=30 if layers is None else 1, window=window if summarised else None).peak_bytes)
    return result


def _measure(folder: Path, tokens: int, way: str) -> dict:
    done = subprocess.run([sys.executable, "-m", "bench.attention", "--child", str(folder), str(tokens), way],
                          capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"bench.attention child failed ({tokens}, {way}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(res: Results, workdir: Path) -> None:
    """Section 7: the page's time and memory growth at each of :data:`LENGTHS`, beside output_attentions."""
    import psutil

    folder = build_model(workdir / "smollm2-135m-shape")
    free = psutil.virtual_memory().available
    for tokens in LENGTHS:
        log(f"attention page, {tokens} tokens of a SmolLM2-135M-shaped Llama …")
        got = _measure(folder, tokens, "page")
        res.add("7 long attention", f"page, {tokens} tokens: time", [got["seconds"]],
                note=f"reading {got['read_s']:.1f} s; blocks of {got['block']} tokens")
        res.add("7 long attention", f"page, {tokens} tokens: memory growth", [got["growth"]], "B",
                note=f"estimate {got['estimate'] / 1e9:.2f} GB")
        if tokens == 8192:
            res.goal("7 long attention", "page at 8 192 tokens: memory growth", got["growth"], GROWTH_LIMIT, "B")
        need = 2 * 30 * 9 * tokens * tokens * 4
        if need < free / 2:
            log(f"output_attentions, {tokens} tokens …")
            old = _measure(folder, tokens, "output_attentions")
            res.add("7 long attention", f"output_attentions, {tokens} tokens: time", [old["seconds"]])
            res.add("7 long attention", f"output_attentions, {tokens} tokens: memory growth", [old["growth"]], "B")
        else:
            res.note("7 long attention", f"output_attentions, {tokens} tokens",
                     f"not run: every layer at once needs about {need / 1e9:.0f} GB")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        print(json.dumps(child(sys.argv[2], int(sys.argv[3]), sys.argv[4])))
