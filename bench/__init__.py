"""posviz benchmarks: ``python -m bench`` or ``python bench/run.py`` (see bench/run.py)."""
