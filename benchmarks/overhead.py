"""How much does labkit's harness cost? torch eager inference, harness vs a bare hand-written loop.

Both time the same ResNet-50 (canonical weights, same batch, same threads) in this one process,
in alternating rounds so that drift in the machine's speed hits both alike:

- harness: ``labkit.frameworks.torch.prepare(...)`` measured by ``labkit.bench.measure``
  (what ``python -m labkit bench`` reports), its median images/s;
- bare: ``model(x)`` under ``torch.inference_mode()`` in a plain ``for`` loop, each call timed
  with ``time.perf_counter``, its median images/s.

Prints both and their ratio; exits with status 1 when the ratio is off 1 by more than
``--tolerance`` (default 5 %). Run: ``python benchmarks/overhead.py [--profile standard]``.
"""
from __future__ import annotations

import argparse
import sys
import time

import labkit  # noqa: F401  (before any framework)
from labkit import bench, hardware, profiles, resnet


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
    parser.add_argument("--profile", default=None, help="smoke | standard | full (default: "
                                                        "$LABKIT_PROFILE, else standard)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--tolerance", type=float, default=0.05)
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads (default: all cores, as the runner uses)")
    args = parser.parse_args(argv)
    prof = profiles.get(args.profile)

    import torch

    from labkit.frameworks import torch as adapter

    threads = args.threads or hardware.cores()
    adapter.set_threads(threads)
    weights = resnet.init_weights(0)
    batch, size = prof.throughput_batch, prof.image_size
    prepared = adapter.prepare(weights, "eager", "throughput", batch, "fp32", size, "cpu")
    model = adapter.build_resnet50(weights).eval()
    images, _ = resnet.random_batch(batch, size, seed=0)
    x = torch.from_numpy(images)
    bare_loop(model, x, 1 + prof.warmup)  # first call and warm-up, as the harness does

    harness_ips, bare_ips = [], []
    for r in range(args.rounds):
        m = bench.measure(prepared, prof.warmup, prof.min_repeats, prof.min_time_s,
                          prof.max_repeats)
        times = bare_loop(model, x, m.repeats)
        harness_ips.append(m.images_per_s)
        bare_ips.append(batch / bench.median(times))
        print(f"round {r + 1}: harness {harness_ips[-1]:.2f} images/s ({m.repeats} calls), "
              f"bare loop {bare_ips[-1]:.2f} images/s")
    h, b = bench.median(harness_ips), bench.median(bare_ips)
    ratio = h / b
    print(f"torch eager inference, batch {batch}, {size}x{size}, {threads} threads, "
          f"profile {prof.name}")
    print(f"harness median {h:.2f} images/s, bare loop median {b:.2f} images/s, "
          f"ratio {ratio:.3f}")
    if abs(ratio - 1) > args.tolerance:
        sys.stdout.flush()
        print(f"FAIL: the harness is off the bare loop by {abs(ratio - 1):.1%} "
              f"(> {args.tolerance:.0%}); on a busy machine, rerun when it is idle",
              file=sys.stderr)
        return 1
    print(f"OK: within {args.tolerance:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
