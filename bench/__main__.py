"""``python -m bench`` (from the repository root): see bench/run.py."""

import sys

from bench.run import main

sys.exit(main())
