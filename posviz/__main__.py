"""``python -m posviz``: see :mod:`posviz.cli`."""

import sys

from posviz.cli import main

sys.exit(main())
