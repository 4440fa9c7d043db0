"""The posviz test-suite (a package, so that ``tests.support`` is importable from the repository root)."""
