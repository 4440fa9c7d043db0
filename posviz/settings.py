"""Settings read from the environment: hosted mode and the memory and input limits.

=========================  ==================================================================
``SPACE_ID``               set by Hugging Face Spaces: hosted mode
``POSVIZ_HOSTED=1``        hosted mode anywhere else
``POSVIZ_MAX_MODEL_BYTES`` largest checkpoint a full load accepts (``"8GB"``, ``"500MiB"``,
                           bytes); default 80 % of the target device's free memory
``POSVIZ_CACHE_BYTES``     most bytes of weights the app keeps loaded; default the same
``POSVIZ_ATTENTION_BYTES`` most memory one reading of attention may add; default half the
                           device's free memory
``POSVIZ_MAX_TEXT``        longest sentence the app takes, in characters; default 2 000 in
                           hosted mode, 100 000 otherwise
``POSVIZ_CACHE_DIR``       folder of the app's stored first chart (read by
                           :func:`posviz.app.first_paint.folder`, which imports no torch)
=========================  ==================================================================
"""

from __future__ import annotations

import os
import re

import psutil
import torch

#: Share of the free memory a model may take by default (the rest is for activations and the app).
FREE_MEMORY_SHARE = 0.8

_UNITS = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}


def hosted() -> bool:
    """Whether posviz runs as a public demo: on a Hugging Face Space (``SPACE_ID`` set) or with
    ``POSVIZ_HOSTED=1``. Hosted mode refuses local paths, loads safetensors weights only and caps
    the input length."""
    asked = os.environ.get("POSVIZ_HOSTED", "").strip().lower() in ("1", "true", "yes")
    return bool(os.environ.get("SPACE_ID")) or asked


def parse_bytes(text: str) -> int:
    """``"8GB"`` -> 8·10⁹, ``"512MiB"`` -> 512·2²⁰, ``"1000"`` -> 1000 (case and spaces ignored).

    Raises
    ------
    ValueError
        When the text is not a number with an optional unit (K, M, G, T, optionally with i, and B).
    """
    match = re.fullmatch(r"\s*([\d.]+)\s*([kmgt]i?)?b?\s*", text, flags=re.IGNORECASE)
    if not match:
        raise ValueError(f"Not a size: {text!r}. Write it as bytes or with a unit, like 8GB or 500MiB.")
    return int(float(match[1]) * _UNITS[(match[2] or "").upper()])


def free_memory(device: torch.device) -> int:
    """Free memory of ``device`` in bytes: the GPU's free memory for cuda, else the available RAM."""
    if device.type == "cuda":
        return int(torch.cuda.mem_get_info(device)[0])
    return int(psutil.virtual_memory().available)


def _bytes_setting(name: str, device: torch.device) -> int:
    value = os.environ.get(name, "").strip()
    return parse_bytes(value) if value else int(FREE_MEMORY_SHARE * free_memory(device))


def model_budget(device: torch.device) -> int:
    """Largest checkpoint, in bytes, a full load accepts: ``POSVIZ_MAX_MODEL_BYTES``, else 80 %
    of the device's free memory now."""
    return _bytes_setting("POSVIZ_MAX_MODEL_BYTES", device)


def model_budget_source() -> str:
    """Where :func:`model_budget` comes from, in words, for messages."""
    if os.environ.get("POSVIZ_MAX_MODEL_BYTES", "").strip():
        return "the limit set by POSVIZ_MAX_MODEL_BYTES"
    return f"{FREE_MEMORY_SHARE:.0%} of the free memory (POSVIZ_MAX_MODEL_BYTES sets another limit)"


def cache_budget() -> int:
    """Most bytes of weights the app keeps loaded at once: ``POSVIZ_CACHE_BYTES``, else 80 % of
    the available RAM at the time of the call."""
    return _bytes_setting("POSVIZ_CACHE_BYTES", torch.device("cpu"))


#: Share of the free memory one reading of attention may add by default.
ATTENTION_MEMORY_SHARE = 0.5


def attention_budget(device: torch.device) -> int:
    """Most bytes one reading of attention may add (:func:`posviz.analysis.attention_budget.estimate`):
    ``POSVIZ_ATTENTION_BYTES``, else half the device's free memory now."""
    value = os.environ.get("POSVIZ_ATTENTION_BYTES", "").strip()
    return parse_bytes(value) if value else int(ATTENTION_MEMORY_SHARE * free_memory(device))


def attention_budget_source() -> str:
    """Where :func:`attention_budget` comes from, in words, for messages."""
    if os.environ.get("POSVIZ_ATTENTION_BYTES", "").strip():
        return "the limit set by POSVIZ_ATTENTION_BYTES"
    return f"{ATTENTION_MEMORY_SHARE:.0%} of the free memory (POSVIZ_ATTENTION_BYTES sets another limit)"


def max_text_chars() -> int:
    """Longest sentence the app accepts, in characters: ``POSVIZ_MAX_TEXT``, else 2 000 in hosted
    mode and 100 000 otherwise. (The model's own limit, in tokens, truncates further.)"""
    value = os.environ.get("POSVIZ_MAX_TEXT", "").strip()
    return int(value) if value else (2_000 if hosted() else 100_000)


def human_bytes(size: float) -> str:
    """``1.5e9`` -> ``"1.5 GB"`` (decimal units, as the Hub writes file sizes)."""
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000:
            return f"{size:.3g} {unit}"
        size /= 1000
    return f"{size:.3g} TB"
