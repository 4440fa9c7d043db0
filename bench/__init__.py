"""posviz benchmarks: ``python -m bench`` or ``python bench/run.py`` (see bench/run.py).

Shared facts of the cases: the repository root and the sentences the app shows by default.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT = "The cat chased the dog"              # posviz.app_state.DEFAULT_TEXT
TEXT_PAIR = "The dog chased the cat"         # posviz.app_state.DEFAULT_TEXT_PAIR
LONG_TEXT = " ".join([TEXT + "."] * 120)     # 722 tokens with the bundled tokenizer: truncated to 512
