"""Does the lab's measured path report what a bare loop sees? torch eager inference, both ways.

The lab measures every figure through the runner: a cell in a fresh subprocess
(``labkit.runner.run_cell``, what ``python -m labkit bench`` and the notebooks use), with the
lab's thread policy, its cold caches and ``labkit.bench.measure``. This script times the same
ResNet-50 (canonical weights, same batch and image size) both ways, in rounds that alternate
which goes first, so that drift in the machine's speed hits both alike:

- lab: one throughput cell through ``runner.run_cell``;
- bare: a fresh Python process with the *same environment* (``runner.cell_env``: threads,
  caches, everything) running a hand-written loop: ``torch.set_num_threads``, one inter-op
  thread, ``model(x)`` under ``torch.inference_mode()``, each call timed with
  ``time.perf_counter``; the first call and the same warm-up calls untimed, then as many timed
  calls as the lab's cell timed in that round.

Each side's calls of all rounds are pooled; their medians, as images/s, are compared. Prints
every round, both medians and their ratio (lab / bare), and exits with status 1 when the ratio
is off 1 by more than ``--tolerance`` (default 3 %). The machine must be quiet: the script says
when it was not (other processes' busy CPUs while timing, as the records' verdicts read them).

Run: ``python benchmarks/overhead.py [--profile standard] [--rounds 9] [--batch 8 --size 224]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import labkit  # noqa: F401  (before any framework)
from labkit import bench, hardware, profiles, runner
from labkit.util import stats


def bare(args: argparse.Namespace) -> int:
    """The bare loop, in its own fresh process: prints its call times as JSON."""
    from labkit import frameworks, resnet

    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    model = frameworks.get("torch").build_resnet50(resnet.init_weights(0)).eval()
    x = torch.from_numpy(np.ascontiguousarray(resnet.random_batch(args.batch, args.size)[0]))
    times = []
    with torch.inference_mode():
        for _ in range(1 + args.warmup):
            model(x)
        before = bench.cpu_sample()
        for _ in range(args.calls):
            t0 = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - t0)
        after = bench.cpu_sample()
    print(json.dumps({"times_s": times, "others_cpus": bench.busy_elsewhere(before, after)}))
    return 0


def bare_round(cell: runner.Cell, threads: int, calls: int, warmup: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="labkit-bare-") as tmp:
        env = runner.cell_env(cell, threads, Path(tmp))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--bare"]
        cmd += ["--threads", str(threads), "--calls", str(calls), "--warmup", str(warmup)]
        cmd += ["--batch", str(cell.batch_size), "--size", str(cell.image_size)]
        out = subprocess.run(
            cmd, env=env, cwd=tmp, capture_output=True, text=True, timeout=3600, check=False
        )
    if out.returncode != 0:
        raise RuntimeError(f"the bare loop failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def lab_round(cell: runner.Cell, threads: int) -> dict:
    fields = runner.run_cell(cell, threads, cell_timeout(cell))
    if fields.get("status") != "ok":
        raise RuntimeError(f"the lab's cell failed: {fields.get('error')}\n{fields.get('log')}")
    return fields


def cell_timeout(cell: runner.Cell) -> float:
    return profiles.get(cell.profile).cell_timeout_s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--profile", default=None, help="smoke | standard | full (default: $LABKIT_PROFILE)"
    )
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds (default 6)")
    parser.add_argument("--tolerance", type=float, default=0.03, help="default 0.03 (3 %%)")
    parser.add_argument("--threads", type=int, default=None, help="default: the runner's")
    parser.add_argument("--batch", type=int, default=None, help="default: the profile's")
    parser.add_argument("--size", type=int, default=None, help="image size (the profile's)")
    parser.add_argument("--bare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--warmup", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bare:
        return bare(args)
    if args.rounds < 2:
        parser.error("--rounds must be at least 2 (the order alternates)")
    prof = profiles.get(args.profile)
    threads = args.threads or hardware.default_threads()
    batch = [args.batch] if args.batch else None
    (cell,) = runner.Plan.build(["torch"], ["eager"], ["throughput"], batch, profile=prof)
    if args.size:
        cell = dataclasses.replace(cell, image_size=args.size)
    print(f"{cell.label()}, {threads} threads, profile {prof.name}, {args.rounds} rounds")

    lab_times: list[float] = []
    bare_times: list[float] = []
    busy: list[float] = []
    calls = prof.min_repeats
    for r in range(args.rounds):  # alternate which goes first, so that drift hits both alike
        if r % 2:
            b = bare_round(cell, threads, calls, prof.warmup)
        lab = lab_round(cell, threads)
        calls = lab["repeats"]
        if not r % 2:
            b = bare_round(cell, threads, calls, prof.warmup)
        lab_times += lab["times_s"]
        bare_times += b["times_s"]
        busy += [x for x in (lab.get("others_cpus"), b.get("others_cpus")) if x is not None]
        lab_ips = cell.batch_size / stats.median(lab["times_s"])
        bare_ips = cell.batch_size / stats.median(b["times_s"])
        print(
            f"round {r + 1} ({'bare' if r % 2 else 'lab'} first): lab {lab_ips:.2f} images/s "
            f"({lab['repeats']} calls), bare loop {bare_ips:.2f} images/s, "
            f"ratio {lab_ips / bare_ips:.3f}",
            flush=True,
        )
    lab_ips = cell.batch_size / stats.median(lab_times)
    bare_ips = cell.batch_size / stats.median(bare_times)
    ratio = lab_ips / bare_ips
    print(f"lab (runner) median {lab_ips:.2f} images/s over {len(lab_times)} calls")
    print(f"bare loop    median {bare_ips:.2f} images/s over {len(bare_times)} calls")
    print(f"ratio lab / bare: {ratio:.3f}", flush=True)
    cpus = hardware.report().logical_cpus
    if busy and max(busy) > max(0, cpus - threads) + bench.MAX_STOLEN * threads:
        print(
            f"note: the machine was busy (other processes kept up to {max(busy):.2f} CPUs busy "
            "while timing): rerun on a quiet machine before trusting the ratio",
            file=sys.stderr,
        )
    if abs(ratio - 1) > args.tolerance:
        print(
            f"FAIL: the lab's path is off the bare loop by {abs(ratio - 1):.1%} "
            f"(> {args.tolerance:.0%})",
            file=sys.stderr,
        )
        return 1
    print(f"OK: within {args.tolerance:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
