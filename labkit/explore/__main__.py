"""``python -m labkit.explore FOLDER PARENT_PID``: one worker of :func:`labkit.explore.check`."""

import sys

from labkit.explore.readiness import main

sys.exit(main(sys.argv[1:]))
