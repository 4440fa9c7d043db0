"""posviz benchmarks: ``python -m bench`` from the repository root (see bench/run.py).

Shared facts of the cases: the repository root and the sentences the app shows by default. The
bench reuses the tests' local Hub and browser helpers (``tests.support``) rather than copying them.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The cat chased the dog"              # posviz.app.widgets.DEFAULT_TEXT
TEXT_PAIR = "The dog chased the cat"         # posviz.app.widgets.DEFAULT_TEXT_PAIR
LONG_TEXT = " ".join([TEXT + "."] * 120)     # 722 tokens with the bundled tokenizer: truncated to 512
