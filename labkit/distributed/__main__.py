"""``python -m labkit.distributed ...`` (``--help``)."""

from .cli import main

raise SystemExit(main())
