"""Writes the fixture cards in this folder: SYNTHETIC result cards for machine types a class may
not have, so that the class report (notebook 11, tests) has machines to compare. NOT MEASURED.

Each card says so in its ``fixture`` field, every record's ``notes`` start with "FIXTURE", and
the class report draws fixture machines hollow and labels them "fixture". The numbers come from a
simple model, not from any machine: a call takes ``work / (share x peak) + overhead``, where
``work`` is ResNet-50's FLOPs for the batch (labkit.resnet.flops), ``peak`` the machine's
nominal FP32 peak (cores x clock x FLOP/cycle x boost), ``share`` the fraction of the peak a mode
reaches on large images and ``overhead`` its fixed cost per call (Python dispatch, op launches);
both are round figures chosen to look like CPUs and to make graph modes gain more on small images,
with a seeded per-machine jitter. The call times are drawn around that median, as many as the
profile's minimums need (the collector judges every record again by today's rules).

    python tests/data/make_class_fixtures.py     # rewrites smoke/, standard/, full/
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import labkit
from labkit import bench, profiles, resnet, results
from labkit.results import cards

HERE = Path(__file__).resolve().parents[2] / "labkit" / "data" / "class_fixtures"
#: the fields of a record as schema 1 wrote it (those of its fixture file, and no others)
SCHEMA_1 = set(
    json.loads(Path(__file__).with_name("results-v1.jsonl").read_text().partition("\n")[0])
)
NOTE = (
    "FIXTURE: a synthetic card made by tests/data/make_class_fixtures.py to show the class "
    "report with machine types the class may not have. Its numbers are NOT measurements."
)
#: (framework, mode) -> (share of peak on large images, fixed overhead per call in s)
MODEL = {
    ("torch", "eager"): (0.45, 0.008),
    ("torch", "torchscript"): (0.55, 0.004),
    ("torch", "compile"): (0.62, 0.002),
    ("tensorflow", "eager"): (0.40, 0.025),
    ("tensorflow", "function"): (0.60, 0.003),
    ("tensorflow", "xla"): (0.62, 0.002),
    ("mindspore", "pynative"): (0.12, 0.040),
    ("mindspore", "graph"): (0.30, 0.005),
    ("onnxruntime", "ort"): (0.70, 0.001),
}
FIRST_CALL_S = {
    "eager": 1.0,
    "pynative": 1.5,
    "torchscript": 3.0,
    "compile": 25.0,
    "function": 4.0,
    "xla": 8.0,
    "graph": 10.0,
    "ort": 6.0,
}
#: name -> (fingerprint, FP32 FLOP/cycle/core, clock GHz, cards, what is special about it)
MACHINES = {
    "hub-xeon-amx": (
        {
            "cpu": "Intel(R) Xeon(R) Platinum 8480+",
            "cores": 4,
            "arch": "x86_64",
            "vector_extensions": [
                "sse4_2",
                "avx",
                "avx2",
                "fma",
                "avx512f",
                "avx512_bf16",
                "avx512_vnni",
                "amx_bf16",
                "amx_tile",
            ],
            "gpus": [],
            "memory_gb": 16.0,
            "os": "Linux-5.15-x86_64-with-glibc2.35",
            "python": "3.11.9",
        },
        64,
        2.0,
        3,
        "three learners on identical hub nodes",
    ),
    "laptop-ryzen": (
        {
            "cpu": "AMD Ryzen 7 5800U with Radeon Graphics",
            "cores": 8,
            "arch": "x86_64",
            "vector_extensions": ["sse4_2", "avx", "avx2", "fma"],
            "gpus": [],
            "memory_gb": 16.0,
            "os": "Linux-6.5-x86_64-with-glibc2.35",
            "python": "3.11.9",
        },
        32,
        1.9,
        1,
        "",
    ),
    "laptop-apple-m2": (
        {
            "cpu": "Apple M2",
            "cores": 8,
            "arch": "arm64",
            "vector_extensions": ["asimd"],
            "gpus": [],
            "memory_gb": 16.0,
            "os": "macOS-14.5-arm64-arm-64bit",
            "python": "3.11.9",
        },
        16,
        3.5,
        1,
        "MindSpore not installed",
    ),
    "old-laptop-busy": (
        {
            "cpu": "Intel(R) Core(TM) i5-8250U CPU @ 1.60GHz",
            "cores": 4,
            "arch": "x86_64",
            "vector_extensions": ["sse4_2", "avx", "avx2", "fma"],
            "gpus": [],
            "memory_gb": 8.0,
            "os": "Linux-6.1-x86_64-with-glibc2.36",
            "python": "3.11.2",
        },
        32,
        1.6,
        1,
        "a busy machine: some records invalid, one above the ceiling",
    ),
    "cloud-vm-old-labkit": (
        {
            "cpu": "AMD EPYC 7B13",
            "cores": 2,
            "arch": "x86_64",
            "vector_extensions": ["sse4_2", "avx", "avx2", "fma"],
            "gpus": [],
            "memory_gb": 8.0,
            "os": "Linux-6.1-x86_64-with-glibc2.36",
            "python": "3.11.2",
        },
        32,
        2.45,
        1,
        "written by an older labkit: records without validity fields",
    ),
}
BOOST = 1.43
CREATED = "2026-01-01T00:00:00+00:00"
REPEATS = 12


def _calls(median: float, spread: float, profile: profiles.Profile, rng: random.Random) -> list:
    """Call times drawn as labkit.bench.measure times them: until both the profile's minimum
    calls (and at least REPEATS) and its minimum time are reached, or its max_repeats."""
    times: list[float] = []
    while len(times) < profile.max_repeats and (
        len(times) < max(REPEATS, profile.min_repeats) or sum(times) < profile.min_time_s
    ):
        times.append(float(f"{median * rng.lognormvariate(0, spread):.5g}"))
    return times


def _records(name: str, profile: profiles.Profile, rng: random.Random, learner: int) -> list[dict]:
    fp, fpc, ghz, _, _ = MACHINES[name]
    peak = fp["cores"] * ghz * fpc * 1e9
    machine = {**fp, "peak_gflops_boost": round(peak * BOOST / 1e9, 1)}
    busy = name == "old-laptop-busy"
    old = name == "cloud-vm-old-labkit"
    fw_factor = {
        fw: rng.lognormvariate(0, 0.15)
        for fw in ("torch", "tensorflow", "mindspore", "onnxruntime")
    }
    out = []
    for (fw, mode), (share, overhead) in MODEL.items():
        for task in ("throughput", "train"):
            batch = profile.throughput_batch if task == "throughput" else profile.train_batch
            if fw == "onnxruntime" and task == "train":
                continue
            base = {
                "framework": fw,
                "mode": mode,
                "task": task,
                "batch_size": batch,
                "precision": "fp32",
                "image_size": profile.image_size,
                "device": "cpu",
                "profile": profile.name,
                "machine": machine,
                "threads": fp["cores"],
                "log": "",
                "versions": {"labkit": "0.1.0" if old else labkit.__version__},
                "timestamp": CREATED,  # fixed: the generator writes the same files every time
            }
            if name == "laptop-apple-m2" and fw == "mindspore":
                out.append(
                    results.make(
                        **base,
                        status="failed",
                        error="ModuleNotFoundError: No module named 'mindspore'",
                        notes="FIXTURE",
                    )
                )
                continue
            training = task == "train"
            work = batch * resnet.flops(profile.image_size, training=training)
            call_overhead = overhead * (3 if training else 1) * (1 + 0.04 * batch)
            s = share * fw_factor[fw] * rng.lognormvariate(0, 0.08)
            median = work / (s * peak) + call_overhead
            spread = 0.35 if busy and rng.random() < 0.4 else 0.04
            times = _calls(median, spread, profile, rng)
            first = FIRST_CALL_S[mode] * rng.lognormvariate(0, 0.2) + median
            load = round(rng.uniform(4.5, 7.0) if busy else rng.uniform(0.1, 1.0), 2)
            m = bench.Measurement(times, first, batch, warmup=1, load_1min=load)
            ceiling = peak * BOOST / resnet.flops(profile.image_size, training=training)
            ips = m.images_per_s
            if busy and fw == "onnxruntime":  # a timing bug: a figure above the ceiling
                ips, m = (
                    ceiling * 1.3,
                    bench.Measurement(
                        [batch / (ceiling * 1.3)] * len(times), first, batch, 1, load_1min=load
                    ),
                )
            rec = results.make(
                **base,
                status="ok",
                **m.as_dict(),
                prepare_s=round(rng.uniform(0.5, 2.0), 2),
                peak_rss_mb=round(rng.uniform(600, 1800)),
                ceiling_images_per_s=ceiling,
                ceiling_share=ips / ceiling,
                notes=f"FIXTURE ({name}, learner {learner})",
                wall_s=round(first + sum(times) + 5, 1),
            )
            if old:  # as schema 1 wrote it: no verdict (the collector judges it), threads a number
                rec = {k: v for k, v in rec.items() if k in SCHEMA_1}
                rec.update(schema=1, threads=fp["cores"])
            else:  # the verdict is results.make's: today's rules, from the raw times
                rec.update(above_ceiling=rec["ceiling_share"] > 1, cache="cold")
            out.append(rec)
    return out


def main() -> None:
    for prof in profiles.PROFILES.values():
        folder = HERE / prof.name
        folder.mkdir(exist_ok=True)
        for old in folder.glob("*.json"):
            old.unlink()
        for name, (_, _, _, count, special) in MACHINES.items():
            for learner in range(1, count + 1):
                rng = random.Random(f"{name}/{prof.name}/{learner}")
                card = cards.build(
                    _records(name, prof, rng, learner),
                    source="fixture",
                    scrubber=cards.Scrubber(users=[], hosts=[]),  # nothing personal in it
                )
                card["card_id"] = f"fixture-{name}-{prof.name}-{learner}"
                card["created"] = CREATED
                card["fixture"] = NOTE + (f" Shows: {special}." if special else "")
                stem = f"{name}-{learner}" if count > 1 else name
                (folder / f"{stem}.json").write_text(
                    json.dumps(card, separators=(",", ":"), allow_nan=False) + "\n"
                )


if __name__ == "__main__":
    main()
