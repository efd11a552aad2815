"""Command line: ``python -m labkit doctor | bench | report``."""
from __future__ import annotations

import argparse
import sys


def _doctor(args: argparse.Namespace) -> int:
    from . import doctor

    print(doctor.text())
    return 0


def _not_yet(args: argparse.Namespace) -> int:
    print(f"labkit {args.command}: not yet available in this version of the lab "
          "(the benchmark engine lands with the benchmark issue)", file=sys.stderr)
    return 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m labkit",
                                     description="Graph Lab helper: machine report and benchmarks")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("doctor", help="machine report, compute ceiling, framework versions").set_defaults(
        func=_doctor)
    sub.add_parser("bench", help="run the ResNet-50 benchmark plan").set_defaults(func=_not_yet)
    sub.add_parser("report", help="summarise a results file").set_defaults(func=_not_yet)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:  # bad input: one clear line, exit status 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
