"""``python -m labkit serve`` and ``python -m labkit load``: their options and what they do.

:func:`add_serve` and :func:`add_load` fill the subcommands' parsers (``labkit.cli`` makes
them); :func:`serve` runs a server in this process until it is stopped, :func:`load` a load run
(against a URL, or a server it starts itself with ``--serve``) whose records it appends and
tabulates. Bad input is a ``ValueError`` (``labkit.cli`` prints it and exits with status 2).

Not for: the server and the load themselves (:mod:`labkit.serve.app`,
:mod:`labkit.serve.sweep`). Imports no framework and no web library until a command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .model import modes
from .sweep import ENCODINGS

__all__ = ["add_load", "add_serve", "load", "serve"]


def _csv(text: str | None) -> list[str]:
    return [t.strip() for t in (text or "").split(",") if t.strip()]


def serve(args: argparse.Namespace) -> int:
    """Run the server of ``args`` until it is stopped; exits the process with its status."""
    import os

    from . import app, process

    cpus = process.pin(args.cpus)  # before any framework starts its threads
    config = app.ServerConfig(
        args.framework,
        args.mode,
        args.port,
        max_batch=args.max_batch,
        max_wait_ms=args.max_wait_ms,
        max_queue=args.max_queue,
        pad=args.pad,
        threads=args.threads or (len(cpus) if cpus else None),
    )
    code = app.serve(config, parent=args.parent)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # a framework's own threads must not keep a stopped server waiting


def _numbers(text: str | None, kind: type, option: str) -> list:
    try:
        return [kind(t) for t in _csv(text)]
    except ValueError:
        raise ValueError(
            f"{option} {text!r}: give numbers separated by commas, e.g. {option} 5,10"
        ) from None


def _plan(args: argparse.Namespace, client_cpus: list[int] | None, machine: dict):
    from .. import profiles
    from . import sweep

    return sweep.Plan(
        rates=_numbers(args.rates, float, "--rates"),
        concurrency=_numbers(args.concurrency, int, "--concurrency"),
        duration_s=args.duration,
        min_requests=args.min_requests,
        max_requests=args.max_requests,
        timeout_s=args.timeout,
        encoding=args.encoding,
        out=Path(args.out or f"results/serve-{profiles.current().name}.jsonl"),
        bound_s=args.bound_ms / 1e3 if args.bound_ms else None,
        refine=args.refine,
        half=args.half,
        client_cpus=client_cpus,
        machine=machine,
    ).check()


def load(args: argparse.Namespace) -> int:
    """Run the load of ``args``: 0 when every step was answered, 1 when one was not, 130 after
    Ctrl-C (the steps measured so far are kept)."""
    from .. import hardware
    from ..results import sweeps
    from . import process, records, sweep

    if (args.url is None) == (args.serve is None):
        raise ValueError("give the server's URL, or --serve FRAMEWORK/MODE to start one (not both)")
    if args.url is not None:
        sweep.Target(args.url)  # a URL off this machine is refused before anything starts
    machine = hardware.fingerprint()  # the machine, before this process is pinned to part of it
    server_cpus, client_cpus = process.cpus_for(args.cpus, started=args.serve is not None)
    plan = _plan(args, client_cpus, machine)
    if args.parent is not None:
        from ..util import proc

        proc.exit_with_parent(args.parent, label="labkit load")
    try:
        with process.target(args.url, args.serve, server_cpus, args) as url:
            process.pin(client_cpus)
            print(f"labkit load: {url}, records -> {plan.out}", file=sys.stderr)
            found = sweep.run(url, plan)
    except KeyboardInterrupt:
        print(f"interrupted: the steps measured so far are kept in {plan.out}", file=sys.stderr)
        return 130
    print(records.table(found))
    if found:
        bound = records.p99_bound(found[0]["image_size"])
        why = bound.why if not args.bound_ms else f"p99 under {args.bound_ms:g} ms (--bound-ms)"
        best = sweeps.capacity(found, plan.bound_s, include_invalid=True)
        rate = f"{best:g} requests/s" if best else "none of the rates tried"
        print(f"\nhighest offered rate with {why}: {rate}", file=sys.stderr)
    return 0 if all(r["status"] == "ok" for r in found) else 1


def add_serve(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m labkit serve``."""
    offered = ", ".join(f"{f}/{m}" for f, m in modes())
    parser.description = (
        "Serve ResNet-50 (canonical weights, the profile's width and image size) in one "
        f"framework and mode ({offered}) over HTTP on 127.0.0.1, speaking the Open Inference "
        "Protocol (KServe v2: /v2/health/ready, /v2/models/resnet50/infer), with dynamic "
        "batching and load shedding. Warms up before it says it is ready; Ctrl-C stops it."
    )
    parser.add_argument("--framework", required=True, help="a framework the lab serves")
    parser.add_argument("--mode", required=True, help="one of its serving modes")
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default 8000)")
    parser.add_argument(
        "--max-batch",
        type=int,
        default=1,
        help="largest batch of requests run together (default 1: batching off)",
    )
    parser.add_argument(
        "--max-wait-ms",
        type=float,
        default=5.0,
        help="with --max-batch > 1: how long the oldest request waits for others (default 5)",
    )
    parser.add_argument(
        "--max-queue",
        type=int,
        default=32,
        help="images that may wait; past them requests are refused with 503 (default 32)",
    )
    parser.add_argument(
        "--pad",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="pad batches to powers of two (default: when the mode compiles one graph per size)",
    )
    parser.add_argument(
        "--threads", type=int, help="intra-op threads (default: the cores it may use)"
    )
    parser.add_argument("--cpus", help="pin the server to these CPUs, e.g. 1 or 0-1")
    parser.add_argument("--parent", type=int, help=argparse.SUPPRESS)  # exit when it is gone
    parser.set_defaults(func=serve)


def add_load(parser: argparse.ArgumentParser) -> None:
    """The options of ``python -m labkit load``."""
    parser.description = (
        "Send requests to an Open Inference Protocol server on 127.0.0.1: Poisson "
        "arrivals at each offered rate (open loop, MLPerf's Server scenario) and/or N concurrent "
        "clients (closed loop), each step bounded in time and requests. Each step becomes a "
        "results record (achieved rate, p50/p90/p99 latency, shed, timeouts, errors, validity), "
        "appended as soon as it ends."
    )
    parser.add_argument("url", nargs="?", help="the server, e.g. http://127.0.0.1:8000")
    parser.add_argument(
        "--serve",
        metavar="FRAMEWORK/MODE",
        help="start that server first (pinned apart from the client), stop it at the end",
    )
    parser.add_argument("--max-batch", type=int, default=1, help="with --serve: its --max-batch")
    parser.add_argument(
        "--max-wait-ms", type=float, default=5.0, help="with --serve: its --max-wait-ms"
    )
    parser.add_argument(
        "--pad", action=argparse.BooleanOptionalAction, default=None, help="with --serve: --pad"
    )
    parser.add_argument("--rates", help="offered rates, requests/s, e.g. 5,10,20,40")
    parser.add_argument("--concurrency", help="closed-loop client counts, e.g. 1,4")
    parser.add_argument(
        "--duration", type=float, default=10.0, help="seconds of arrivals per step (default 10)"
    )
    parser.add_argument(
        "--min-requests",
        type=int,
        default=0,
        help="make each open-loop step last until it has offered at least this many requests (a "
        "p99 needs 100)",
    )
    parser.add_argument(
        "--max-requests", type=int, default=5000, help="requests one step may send (default 5000)"
    )
    parser.add_argument(
        "--timeout", type=float, default=2.0, help="seconds a request may wait (default 2)"
    )
    parser.add_argument(
        "--encoding",
        choices=ENCODINGS,
        default="auto",
        help="json (any v2 server), binary (the binary tensor extension), auto (default: "
        "binary where the server offers it)",
    )
    parser.add_argument(
        "--out", help="results file (default: results/serve-<profile>.jsonl); steps are appended"
    )
    parser.add_argument(
        "--bound-ms",
        type=float,
        help="the p99 bound (default: the seeds' 100 ms scaled to the image size)",
    )
    parser.add_argument(
        "--refine",
        type=int,
        default=0,
        help="extra steps that narrow down the highest rate under the bound (default 0)",
    )
    parser.add_argument(
        "--half", action="store_true", help="end with a step at half the highest rate under it"
    )
    parser.add_argument(
        "--cpus",
        help="pin the client to these CPUs, e.g. 0; auto: one CPU for the client, the others for "
        "the server (the default with --serve)",
    )
    parser.add_argument("--parent", type=int, help=argparse.SUPPRESS)  # exit when it is gone
    parser.set_defaults(func=load)
