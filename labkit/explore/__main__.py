"""``python -m labkit.explore``: one worker process of check() (what check() starts)."""

import sys

from labkit.explore import _worker_main

sys.exit(_worker_main())
