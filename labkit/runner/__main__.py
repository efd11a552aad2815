"""``python -m labkit.runner``: measure one benchmark cell in this process (what run() starts)."""

import sys

from labkit.runner import _cell_main

sys.exit(_cell_main())
