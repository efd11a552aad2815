"""The learner's own copy of the course: `make lab` opens `my-notebooks/`, never `notebooks/`.

JupyterLab saves outputs into every notebook it runs, so a learner who ran the tracked notebooks
would find the clone dirty and `git pull` refusing to update it. `make lab` runs this first: it
copies each notebook (and the scripts beside them) that `my-notebooks/` does not have yet, and
never touches a copy that is there. After `git pull`, `make lab` adds what is new; to take the
course's version of a notebook you changed, `python tools/working_copy.py --fresh NAME`
(your copy is kept as NAME.bak.ipynb). `my-notebooks/` is ignored by git.

    python tools/working_copy.py [--to my-notebooks] [--fresh 03_pytorch_graphs.ipynb ...]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def sync(source: Path, target: Path, fresh: tuple[str, ...] = ()) -> list[str]:
    """Copy what ``target`` lacks from ``source`` (``fresh``: copy again, the old one kept as
    ``.bak``); returns the paths copied, relative to ``target``."""
    unknown = [name for name in fresh if not (source / name).is_file()]
    if unknown:
        raise FileNotFoundError(f"no notebook {unknown[0]!r} in {source}: give a file name there")
    copied = []
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if not path.is_file() or any(p.startswith((".", "__")) for p in rel.parts):
            continue  # checkpoints, caches
        if rel.parts[0] == "results":
            continue  # what a run writes, not course material
        out = target / rel
        if out.exists() and rel.as_posix() not in fresh:
            continue
        if out.exists():
            shutil.copy2(out, out.with_suffix(".bak" + out.suffix))
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, out)
        copied.append(rel.as_posix())
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--to", default=str(ROOT / "my-notebooks"), help="the working copy")
    parser.add_argument("--fresh", nargs="*", default=[], help="notebooks to copy again")
    args = parser.parse_args(argv)
    try:
        copied = sync(ROOT / "notebooks", Path(args.to), tuple(args.fresh))
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if copied:
        print(f"copied into {args.to}: {', '.join(copied)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
