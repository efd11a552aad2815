"""How much does labkit's harness cost? torch eager inference, harness vs a bare hand-written loop.

Both time the same ResNet-50 (canonical weights, same batch, same threads) in this one process,
in rounds that alternate which one goes first, so that drift in the machine's speed hits
both alike:

- harness: ``labkit.frameworks.torch.adapter.prepare(...)`` measured by ``labkit.bench.measure``
  (what ``python -m labkit bench`` reports);
- bare: ``model(x)`` under ``torch.inference_mode()`` in a plain ``for`` loop, each call timed
  with ``time.perf_counter``, as many calls as the harness timed in that round.

The median images/s of each (all rounds' calls pooled) are compared.

Prints both and their ratio; exits with status 1 when the ratio is off 1 by more than
``--tolerance`` (default 5 %). Run: ``python benchmarks/overhead.py [--profile standard]``.
"""

from __future__ import annotations

import argparse
import sys
import time

import labkit  # noqa: F401  (before any framework)
from labkit import bench, frameworks, hardware, profiles, resnet


def bare_loop(model, x, calls: int) -> list[float]:
    import torch

    times = []
    with torch.inference_mode():
        for _ in range(calls):
            t0 = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - t0)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--profile",
        default=None,
        help="smoke | standard | full (default: $LABKIT_PROFILE, else standard)",
    )
    parser.add_argument("--rounds", type=int, default=6, help="alternating rounds (default 6)")
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: all cores, as the runner uses)",
    )
    args = parser.parse_args(argv)
    prof = profiles.get(args.profile)

    adapter = frameworks.get("torch")

    import torch

    threads = args.threads or hardware.cores()
    adapter.set_threads(threads)
    weights = resnet.init_weights(0)
    batch, size = prof.throughput_batch, prof.image_size
    prepared = adapter.prepare(weights, "eager", "throughput", batch, "fp32", size, "cpu")
    model = adapter.build_resnet50(weights).eval()
    images, _ = resnet.random_batch(batch, size, seed=0)
    x = torch.from_numpy(images)
    bare_loop(model, x, 1 + prof.warmup)  # first call and warm-up, as the harness does

    harness_times: list[float] = []
    bare_times: list[float] = []
    calls = prof.min_repeats
    for r in range(args.rounds):  # alternate which goes first, so that drift hits both alike
        if r % 2:
            times = bare_loop(model, x, calls)
        m = bench.measure(
            prepared, prof.warmup, prof.min_repeats, prof.min_time_s, prof.max_repeats
        )
        calls = m.repeats
        if not r % 2:
            times = bare_loop(model, x, calls)
        harness_times += m.times_s
        bare_times += times
        print(
            f"round {r + 1}: harness {m.images_per_s:.2f} images/s ({m.repeats} calls), "
            f"bare loop {batch / bench.median(times):.2f} images/s"
        )
    # all calls of all rounds pooled: the medians of per-call times, as images/s
    h, b = batch / bench.median(harness_times), batch / bench.median(bare_times)
    ratio = h / b
    print(
        f"torch eager inference, batch {batch}, {size}x{size}, {threads} threads, "
        f"profile {prof.name}, {len(harness_times)} + {len(bare_times)} calls"
    )
    print(
        f"harness median {h:.2f} images/s, bare loop median {b:.2f} images/s, ratio {ratio:.3f}",
        flush=True,
    )
    if abs(ratio - 1) > args.tolerance:
        print(
            f"FAIL: the harness is off the bare loop by {abs(ratio - 1):.1%} "
            f"(> {args.tolerance:.0%}); on a busy machine, rerun when it is idle",
            file=sys.stderr,
        )
        return 1
    print(f"OK: within {args.tolerance:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
