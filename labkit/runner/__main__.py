"""``python -m labkit.runner --cell JSON --result FILE --threads N``: measure one benchmark cell
in this process (what :func:`labkit.runner.run` starts for each cell)."""

import sys

from labkit.runner.cell import main

sys.exit(main())
