"""Command line: ``python -m labkit.distributed`` (also ``python -m labkit distributed``)."""

from __future__ import annotations

import argparse
import json
import sys

from ..resnet import WIDTH
from .job import COMM_HOOKS, FAULTS, FRAMEWORKS, MODELS, STRATEGIES, DistributedError, Job
from .launcher import cluster_commands, launch
from .runs import is_running_statistic, max_difference, scaling_efficiency

__all__ = ["build_parser", "cli", "main"]


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    p = parser or argparse.ArgumentParser(
        prog="python -m labkit.distributed",
        description="data-parallel training with real worker processes",
    )
    p.add_argument("--framework", choices=FRAMEWORKS, default=FRAMEWORKS[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--batch", type=int, default=4, help="images per worker per step")
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--model", choices=MODELS, default="resnet50")
    p.add_argument(
        "--width",
        type=int,
        default=WIDTH,
        help=f"ResNet-50's base width (default {WIDTH}, the real network; 16: 1/16 of its weights)",
    )
    p.add_argument(
        "--threads", type=int, default=None, help="per worker (default: cores / workers)"
    )
    p.add_argument("--port", type=int, default=None, help="rendezvous port (default: a free one)")
    p.add_argument(
        "--timeout", type=float, default=300.0, help="seconds before everything is stopped"
    )
    p.add_argument(
        "--out", default=None, help="folder for the workers' results (default: temporary)"
    )
    p.add_argument(
        "--compare",
        action="store_true",
        help="also train one plain process on the concatenated batch and compare",
    )
    p.add_argument(
        "--fault",
        choices=FAULTS,
        default=None,
        help="make one worker go wrong on purpose (to see the clean-up)",
    )
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument(
        "--fault-step", type=int, default=1, help="the step (1, 2, ...) the fault happens at"
    )
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default=STRATEGIES[0],
        help="ddp: a whole replica per worker; fsdp: parameters, gradients and optimizer state "
        "sharded over the workers (torch); auto_parallel: MindSpore's AutoParallel, "
        "data-parallel (Ascend and GPU only in 2.8)",
    )
    p.add_argument(
        "--comm-hook", choices=COMM_HOOKS, default=None, help="compress DDP's gradients (torch)"
    )
    p.add_argument("--powersgd-rank", type=int, default=1, help="PowerSGD's approximation rank")
    p.add_argument(
        "--max-restarts",
        type=int,
        default=0,
        help="start every worker again (from the last checkpoint) when one fails, up to N times "
        "(torch: torchrun --max-restarts)",
    )
    p.add_argument(
        "--hosts",
        default=None,
        help="comma-separated machines: print the commands to run there instead",
    )
    p.set_defaults(func=cli)
    return p


def cli(args: argparse.Namespace) -> int:
    job = Job(
        args.framework,
        workers=args.workers,
        steps=args.steps,
        batch=args.batch,
        image_size=args.image_size,
        model=args.model,
        width=args.width,
        threads=args.threads,
        fault=args.fault,
        fault_rank=args.fault_rank,
        fault_step=args.fault_step,
        strategy=args.strategy,
        comm_hook=args.comm_hook,
        powersgd_rank=args.powersgd_rank,
        max_restarts=args.max_restarts,
    )
    if args.hosts:
        hosts = [h.strip() for h in args.hosts.split(",") if h.strip()]
        for host, command in cluster_commands(job, hosts, port=args.port or 29500):
            print(f"# on {host}:\n{command}")
        return 0
    try:
        run = launch(job, port=args.port, timeout=args.timeout, out_dir=args.out)
    except DistributedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    trainable = lambda n: not is_running_statistic(n)
    summary = {
        **run.summary(),
        "max_difference_between_workers": run.max_difference_between_workers(trainable),
        "out_dir": str(run.out_dir),
    }
    if args.compare:
        try:
            ref = launch(job.reference(), timeout=args.timeout)
        except DistributedError as exc:  # keep what was measured, then say what failed
            print(json.dumps(summary, indent=2))
            print(
                f"error: the single-process reference of --compare failed (the {job.workers}-"
                f"worker run above succeeded): {exc}",
                file=sys.stderr,
            )
            return 1
        summary["single_process"] = ref.summary()
        summary["max_difference_vs_single_process"] = max_difference(
            run.weights(0), ref.weights(0), trainable
        )
        summary["scaling_efficiency"] = round(scaling_efficiency(run, ref), 3)
    print(json.dumps(summary, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
