"""Command line: ``python -m labkit doctor | bench | report | explore | card | class |
distributed`` (labkit/data/cli.toml holds each command's options, README says what they do). Bad
input: one line, exit status 2."""

from __future__ import annotations

import argparse
import sys
import tomllib
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


#: what an argument's ``type`` names in labkit/data/cli.toml
TYPES = {"csv": _csv, "int": int, "float": float}


def _add(parser: argparse.ArgumentParser, spec: dict, run: list[dict], dest: str) -> None:
    """``spec``'s arguments and nested commands (labkit/data/cli.toml) on ``parser``."""
    for arg in spec.get("args", []) + run * spec.get("run", False):
        keywords = {k: TYPES[v] if k == "type" else v for k, v in arg.items() if k != "name"}
        parser.add_argument(arg["name"], **keywords)
    if "commands" in spec:
        sub = parser.add_subparsers(dest=dest, required=True)
        for name, nested in spec["commands"].items():
            _add(sub.add_parser(name, help=nested["help"]), nested, run, f"{name}_command")


def build_parser() -> argparse.ArgumentParser:
    spec = tomllib.loads((Path(__file__).parent / "data" / "cli.toml").read_text("utf-8"))
    parser = argparse.ArgumentParser(prog="python -m labkit", description=spec["description"])
    _add(parser, spec, spec["run_options"], "command")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warnings.formatwarning = lambda message, *_, **__: f"warning: {message}\n"  # no source line
    try:
        return globals()[f"_{args.command}"](args)  # each command's handler: _<command>
    except ValueError as exc:  # bad input: one clear line, exit status 2
        print(f"error: {exc}", file=sys.stderr)
        return 2
