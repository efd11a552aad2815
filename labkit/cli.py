"""Command line: ``python -m labkit doctor | bench | report | explore | card | class |
distributed`` (build_parser below holds each command's options, README says what they do). Bad
input: one line, exit status 2."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

__all__ = ["build_parser", "main"]


def _doctor(args: argparse.Namespace) -> int:
    from . import doctor

    found = doctor.peaks(measure=not args.no_measure, refresh=args.remeasure)
    print(f"# Graph Lab doctor\n\n{doctor.markdown(found=found)}")
    return 0


def _csv(text: str) -> list[str]:
    """An option's comma-separated list (``type=_csv``: None when the option is not given)."""
    return [t.strip() for t in text.split(",") if t.strip()]


def _bench(args: argparse.Namespace) -> int:
    from . import profiles, runner

    profile = profiles.get(args.profile)  # None: LABKIT_PROFILE, else standard
    batch_sizes = args.batch_sizes and [int(t) if t.isdigit() else t for t in args.batch_sizes]
    plan = runner.Plan.build(
        args.frameworks, args.modes, args.tasks, batch_sizes, args.precision, args.device, profile
    )
    if args.threads is not None and args.threads < 1:
        raise ValueError(f"--threads must be >= 1, got {args.threads}")
    out = Path(args.out or f"results/bench-{profile.name}.jsonl")
    runner.loop.check_out(out)  # before the first line: a bad --out is the only thing said
    print(
        f"labkit bench: {len(plan)} cells, profile {profile.name} ({profile.image_size}x"
        f"{profile.image_size} images), results -> {out}",
        file=sys.stderr,
    )
    res = runner.run(plan, out, resume=args.resume, threads=args.threads, cache=args.cache)
    return _finished(res)


def _finished(res) -> int:
    """Print a run's records and where its figures come from; its exit status (130:
    interrupted, 1: results not written; the run's last line says which, and the fix)."""
    from . import results

    if res.records:
        print(results.table(res.records))
    print(f"\nfigures: python -m labkit report {res.out}", file=sys.stderr)
    return 130 if res.interrupted else 1 if res.unsaved else 0


def _report(args: argparse.Namespace) -> int:
    from . import plots, results

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = results.load(args.file)
    notes = [w for w in caught if issubclass(w.category, results.UnregisteredFramework)]
    caught = [w for w in caught if w not in notes]
    for w in notes:  # kept and shown: worth a word, not an error
        print(f"warning: {w.message}", file=sys.stderr)
    if not records and not caught:
        raise ValueError(
            f"{args.file} holds no results; fix: run "
            f"`python -m labkit bench --out {args.file}` first"
        )
    path = Path(args.file)  # bench.jsonl's figures go in bench/, bench's in bench-figures/
    out = Path(args.out or (path.with_suffix("") if path.suffix else f"{path}-figures"))
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file, not a folder: name a folder for the figures")
    print(results.table(records))
    if records:
        paths = plots.save_all(records, out)
        print(f"\nfigures: {', '.join(str(p) for p in paths)}")
    for w in caught:  # a truncated last line: everything complete is reported above
        print(f"error: {w.message}", file=sys.stderr)
    return 2 if caught else 0


def _stopped(args: argparse.Namespace, report) -> str:
    """The one line that says why the run stopped at its first path, and the fix."""
    first = report.paths[0]
    limit = first.details.get("timed_out")
    if limit:
        return (
            f"{args.spec}: {first.path} did not finish within {limit:g} s on inputs "
            f"{report.inputs}, so no other path was checked; fix: --timeout {4 * limit:g} (or "
            "more) if it only needs longer; a model that never returns needs fixing first"
        )
    if first.status == "crashed":
        return (
            f"{args.spec}: the process running {first.path} died ({first.details.get('crashed')}) "
            f"on inputs {report.inputs}, so no other path was checked: the framework crashed or "
            f"ran out of memory on this model ({first.message[:300] or 'no output'})"
        )
    return (
        f"{args.spec} does not run on inputs {report.inputs} ({first.path}: "
        f"{first.message or first.reason}); fix: give --input the shape(s) the model takes, "
        "batch first, e.g. --input 8x3x224x224 (several inputs: --input 8x16,8x16:int64), or "
        "let the builder return them: return model, example_args, example_kwargs"
    )


def _explore(args: argparse.Namespace) -> int:
    import json

    from . import explore

    report = explore.check(
        args.spec,
        args.input,
        framework=args.framework,
        timeout_s=args.timeout,
        checks=args.checks,
        layout=args.layout,
    )
    text = report.to_markdown()
    first = report.paths[0]
    if first.status == "works":
        print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        data = json.dumps(report.to_dict(), indent=2) if out.suffix == ".json" else text + "\n"
        out.write_text(data, encoding="utf-8")
        print(f"\nreport written to {out}", file=sys.stderr)
    if first.status != "works":
        raise ValueError(_stopped(args, report))
    if not args.bench:
        return 0
    res = explore.bench(
        args.spec,
        args.input,
        modes=args.modes,
        tasks=args.tasks,
        frameworks=args.frameworks,
        framework=report.framework,
        out=args.results,
        profile=args.profile,
        resume=args.resume,
        threads=args.threads,
    )
    return _finished(res)


def _card(args: argparse.Namespace) -> int:
    from . import results
    from .results import cards

    files = [Path(f) for f in args.results] or [
        p for d in ("results", "notebooks/results") for p in sorted(Path(d).glob("*.jsonl"))
    ]
    if not files:
        raise ValueError(
            "no results files in results/ or notebooks/results/; fix: name one "
            "(python -m labkit card FILE.jsonl), or measure first: run notebook 06, or "
            "`python -m labkit bench --profile smoke`"
        )
    records = [r for f in files for r in results.load(f)]  # a truncated line: main() warns
    source = files[0].name if len(files) == 1 else f"{len(files)} results files"
    card = cards.build(records, name=args.name, source=source)
    out = Path(args.out or f"results/card-{card['profile']}.json")
    cards.save(card, out)
    print(cards.summary(card))
    print(
        f"\nwrote {out} ({out.stat().st_size / 1024:.0f} KiB; "
        + ("named " + repr(args.name) if args.name else "anonymous: no host, user name or path")
        + "): hand this file in",
        file=sys.stderr,
    )
    return 0


def _class(args: argparse.Namespace) -> int:
    from . import classroom

    if args.class_command == "collect":
        report = classroom.collect(args.paths, args.db)
        print(report.text())
        return report.exit_status
    print(f"class report: {classroom.report(args.db, args.out)} (figures beside it)")
    return 0


def _distributed(args: argparse.Namespace) -> int:
    from . import distributed  # framework-free: it builds command lines
    from .frameworks import specs

    names = [s.name for s in specs() if s.launcher]
    if args.framework not in names:
        raise ValueError(f"--framework {args.framework!r}: choose one of {', '.join(names)}")
    for host, line in distributed.cluster_commands(
        args.framework, args.script, args.hosts, args.workers, args.port
    ):
        print(f"# on {host}:\n{line}")
    return 0


def _run_options(parser: argparse.ArgumentParser) -> None:
    """The options bench and explore share: what to run, and how."""
    parser.add_argument("--profile", help="smoke | standard | full (default: $LABKIT_PROFILE)")
    parser.add_argument("--frameworks", type=_csv, help="comma-separated (default: all)")
    parser.add_argument(
        "--modes", type=_csv, help="eager, graph (every non-eager mode) or mode names"
    )
    parser.add_argument(
        "--tasks", type=_csv, help="comma-separated: latency, throughput, train (default: all)"
    )
    parser.add_argument("--threads", type=int, help="intra-op threads (default: the cores)")
    parser.add_argument("--resume", action="store_true", help="skip the cells already saved")


def _add_reading(sub) -> None:
    """doctor, report and card: the machine, and results already measured."""
    doctor = sub.add_parser("doctor", help="the machine, its ceiling, the frameworks")
    doctor.set_defaults(handler=_doctor)
    doctor.add_argument("--remeasure", action="store_true", help="measure the peaks again")
    doctor.add_argument("--no-measure", action="store_true", help="show only peaks measured before")

    report = sub.add_parser("report", help="print a results file as a table and write its figures")
    report.set_defaults(handler=_report)
    report.add_argument("file", help="a JSONL file written by `python -m labkit bench`")
    report.add_argument("--out", help="folder for the figures (default: FILE without suffix)")

    card = sub.add_parser("card", help="write your result card: a small JSON file to hand in")
    card.set_defaults(handler=_card)
    card.add_argument("results", nargs="*", help="results files (default: results/*.jsonl)")
    card.add_argument("--out", help="the card (default: results/card-<profile>.json)")
    card.add_argument("--name", help="a name to show on the card (default: anonymous)")


def _add_bench(sub) -> None:
    bench = sub.add_parser("bench", help="measure ResNet-50 here, each cell in its own process")
    bench.set_defaults(handler=_bench)
    bench.add_argument(
        "--batch-sizes", type=_csv, help="of throughput and train, e.g. 1,8 (latency: 1)"
    )
    bench.add_argument(
        "--precision", type=_csv, help="fp32 (default), bf16, int8, or several: fp32,bf16"
    )
    bench.add_argument("--device", default="cpu", help="cpu (default) or gpu")
    bench.add_argument("--cache", choices=["cold", "warm"], default="cold", help="compile caches")
    bench.add_argument("--out", help="results file, appended to (results/bench-<profile>.jsonl)")
    _run_options(bench)


def _add_explore(sub) -> None:
    explore = sub.add_parser("explore", help="your own model through every capture path")
    explore.set_defaults(handler=_explore)
    explore.add_argument("spec", help="file.py:build_model or package.module:build_model")
    explore.add_argument("--input", help="shape(s), batch first: 8x3x224x224, 8x16,8x16:int64")
    explore.add_argument("--layout", choices=["NCHW", "NHWC"], help="of image inputs (PyTorch)")
    explore.add_argument("--framework", help="the model's (default: from the model's type)")
    explore.add_argument("--checks", type=_csv, help="comma-separated subset of the paths to check")
    explore.add_argument("--timeout", type=float, default=300.0, help="seconds per check")
    explore.add_argument("--out", help="also write the report: FILE.json or FILE.md")
    explore.add_argument("--bench", action="store_true", help="then time eager vs graph modes")
    explore.add_argument("--results", help="--bench's JSONL (results/explore-<profile>.jsonl)")
    _run_options(explore)


def _add_class(sub) -> None:
    klass = sub.add_parser("class", help="instructor: collect result cards, report on the class")
    klass.set_defaults(handler=_class)
    nested = klass.add_subparsers(dest="class_command", required=True)
    collect = nested.add_parser("collect", help="add cards and results files (or folders)")
    collect.add_argument("paths", nargs="+", help="card/results files, or folders to search")
    report = nested.add_parser("report", help="write the class report: figures and a page")
    report.add_argument("--out", required=True, help="folder for index.html and figures")
    for parser in (collect, report):
        parser.add_argument("--db", default="class.duckdb", help="database file (class.duckdb)")


def _add_distributed(sub) -> None:
    dist = sub.add_parser("distributed", help="notebook 08's workers' commands on several machines")
    dist.set_defaults(handler=_distributed)
    dist.add_argument("--framework", required=True, help="torch, tensorflow or mindspore")
    dist.add_argument(
        "--hosts", type=_csv, required=True, help="comma-separated; the first coordinates"
    )
    dist.add_argument("--script", default="worker.py", help="e.g. notebook 08's torch_ddp.py")
    dist.add_argument("--workers", type=int, default=2, help="workers per machine")
    dist.add_argument("--port", type=int, default=29500)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m labkit``: each command sets its handler."""
    parser = argparse.ArgumentParser(
        prog="python -m labkit", description="Graph Lab helper: machine report and benchmarks"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_reading, _add_bench, _add_explore, _add_class, _add_distributed):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warnings.formatwarning = lambda message, *_, **__: f"warning: {message}\n"  # no source line
    try:
        return args.handler(args)
    except ValueError as exc:  # bad input: one clear line, exit status 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
