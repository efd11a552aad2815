"""Write the recorded probe output (``peak-probes.json``) of three fixture machines.

The file has the shape of a cache file of :mod:`labkit.hardware.measured`: the probes'
outputs as ``python -m labkit.frameworks.<name>.peak`` prints them, so that
``hardware.recorded(root)`` judges them with the same code as a real measurement. The rates
are illustrative, chosen to exercise the judgement, not measured on those machines:

- ``intel_amx`` (4 threads): the issue's 2-thread probe on the project's Intel AMX machine
  (fp32 246, bf16 731, int8 ``torch._int_mm`` 1,081 GFLOP/s) doubled, with the pre-packed
  oneDNN and ONNX Runtime kernels faster: far below the AMX estimate at bf16 and int8;
- ``container_v1_unknown_clock`` (2 threads): an AMD EPYC VM with no clock, so no estimate;
  the measurement implies one;
- ``smt_laptop`` (4 threads): AVX2 only, so only fp32 is measured, and at a rate above the
  estimate (its clock is the model name's base clock): flagged.

Run ``python tests/data/make_peak_fixtures.py`` to write them again.
"""

import json
from pathlib import Path

MACHINES = Path(__file__).resolve().parent / "machines"
JITTER = (0.99, 1.0, 1.01, 0.995, 1.02, 1.0, 0.98)
TORCH, ORT = "labkit.frameworks.torch.peak", "labkit.frameworks.onnxruntime.peak"

#: machine -> threads, {module: [(precision, kernel, prepacked, n, GFLOP/s)]}
RATES = {
    "intel_amx": (
        4,
        {
            TORCH: [
                ("fp32", "torch.mm", False, 2048, 492.0),
                ("fp32", "mkl packed GEMM", True, 2048, 470.0),
                ("fp32", "oneDNN linear, pre-packed weight", True, 2048, 505.0),
                ("bf16", "torch.mm", False, 4096, 1462.0),
                ("bf16", "oneDNN linear, pre-packed weight", True, 4096, 2950.0),
                ("int8", "torch._int_mm", False, 4096, 2162.0),
                ("int8", "oneDNN quantised linear, pre-packed weight", True, 4096, 5200.0),
            ],
            ORT: [
                ("fp32", "MatMul, pre-packed weight", True, 2048, 498.0),
                ("int8", "MatMulInteger (u8 x s8), pre-packed weight", True, 4096, 4100.0),
            ],
        },
    ),
    "container_v1_unknown_clock": (
        2,
        {
            TORCH: [
                ("fp32", "torch.mm", False, 2048, 160.0),
                ("fp32", "mkl packed GEMM", True, 2048, 175.0),
                ("fp32", "oneDNN linear, pre-packed weight", True, 2048, 190.0),
                ("bf16", "torch.mm", False, 2048, 330.0),
                ("bf16", "oneDNN linear, pre-packed weight", True, 2048, 395.0),
                ("int8", "torch._int_mm", False, 2048, 600.0),
                ("int8", "oneDNN quantised linear, pre-packed weight", True, 4096, 900.0),
            ],
            ORT: [
                ("fp32", "MatMul, pre-packed weight", True, 2048, 230.0),
                ("int8", "MatMulInteger (u8 x s8), pre-packed weight", True, 2048, 850.0),
            ],
        },
    ),
    "smt_laptop": (
        4,
        {
            TORCH: [
                ("fp32", "torch.mm", False, 2048, 280.0),
                ("fp32", "mkl packed GEMM", True, 2048, 262.0),
                ("fp32", "oneDNN linear, pre-packed weight", True, 2048, 0.0),  # failed
            ],
            ORT: [("fp32", "MatMul, pre-packed weight", True, 2048, 251.0)],
        },
    ),
}
VERSIONS = {TORCH: {"torch": "2.13.0+cpu"}, ORT: {"onnxruntime": "1.32.0"}}


def kernel(precision: str, name: str, prepacked: bool, n: int, gflops: float) -> dict:
    row = {"precision": precision, "kernel": name, "prepacked": prepacked}
    if not gflops:
        return {**row, "n": 0, "ops": 0, "times_s": [], "error": "RuntimeError: no such kernel"}
    ops = 2 * n**3
    times = [round(ops / (gflops * 1e9) * j, 6) for j in JITTER]
    return {**row, "n": n, "ops": ops, "times_s": times, "error": ""}


def main() -> None:
    for machine, (threads, probes) in RATES.items():
        outputs = [
            {
                "module": module,
                "output": {
                    "versions": VERSIONS[module],
                    "threads": threads,
                    "kernels": [kernel(*k) for k in kernels],
                },
                "others_cpus": 0.02,
            }
            for module, kernels in probes.items()
        ]
        data = {
            "format": 1,
            "threads": threads,
            "measured_at": "2026-01-01T00:00:00+00:00",
            "outputs": outputs,
            "probes": [],
        }
        (MACHINES / machine / "peak-probes.json").write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    main()
