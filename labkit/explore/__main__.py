"""``python -m labkit.explore --job FILE --parent PID``: one worker process of
:func:`labkit.explore.check` (see :mod:`labkit.explore.workers`)."""

import sys

from labkit.explore.workers import main

sys.exit(main())
