"""How repeatable is one benchmark cell? Run it several times, each in a fresh process.

Runs one cell (default: torch eager throughput under the standard profile) ``--runs`` times
through ``labkit.runner`` (exactly what ``python -m labkit bench`` does) and prints each run's
median images/s and within-run IQR/median, then the run-to-run spread: IQR / median of the run
medians, and (max - min) / median. Run: ``python benchmarks/stability.py [--runs 5]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import labkit  # noqa: F401
from labkit import runner
from labkit.util import stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="standard")
    parser.add_argument("--framework", default="torch")
    parser.add_argument("--mode", default="eager")
    parser.add_argument("--task", default="throughput")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None, help="default: the runner's")
    parser.add_argument("--out", help="keep the records in this JSONL file (default: temporary)")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs must be at least 2 to have a spread")
    plan = runner.Plan.build([args.framework], [args.mode], [args.task], profile=args.profile)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or Path(tmp) / "stability.jsonl")
        medians = []
        for i in range(args.runs):
            (rec,) = runner.run(plan, out, progress=False, threads=args.threads).records
            if rec["status"] != "ok":
                print(f"run {i + 1} failed: {rec['error']}", file=sys.stderr)
                return 1
            medians.append(rec["images_per_s"])
            verdict = "valid" if rec["valid"] else "invalid: " + "; ".join(rec["invalid_reasons"])
            print(
                f"run {i + 1}: {rec['images_per_s']:.2f} images/s, within-run IQR/median "
                f"{rec['iqr_s'] / rec['median_s']:.1%}, first call {rec['first_call_s']:.2f} s "
                f"({rec['cache']} caches); {verdict}"
            )
    mid = stats.median(medians)
    print(f"{plan.cells[0].label()}, {args.runs} runs (fresh process each)")
    print(
        f"run-to-run spread: IQR/median {stats.iqr(medians) / mid:.1%}, "
        f"(max-min)/median {(max(medians) - min(medians)) / mid:.1%}, median {mid:.2f} images/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
