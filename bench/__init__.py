"""posviz benchmarks: ``python -m bench`` or ``python bench/run.py`` (see bench/run.py).

Shared facts of the cases: the repository root and the sentences the app shows by default.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The cat chased the dog"              # posviz.app.widgets.DEFAULT_TEXT
TEXT_PAIR = "The dog chased the cat"         # posviz.app.widgets.DEFAULT_TEXT_PAIR
LONG_TEXT = " ".join([TEXT + "."] * 120)     # 722 tokens with the bundled tokenizer: truncated to 512


def reuse_tests() -> None:
    """Make the repository's ``tests/`` importable: the bench reuses its local Hub
    (``local_hub``) and its browser helpers (``browser_support``) rather than copying them."""
    if str(ROOT / "tests") not in sys.path:
        sys.path.append(str(ROOT / "tests"))
