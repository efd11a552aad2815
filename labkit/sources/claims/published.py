"""Published figures from trustworthy sources, quoted exactly, shown beside the seeds' own.

Each :class:`Source` is a page (NVIDIA's DeepLearningExamples, MLPerf results, NVIDIA's
performance pages); ``values`` holds the numbers a notebook computes with, each typed once, and
fills the quoted ``figure``. The claims cite them (``Claim.published``); they never vote.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "JETSON",
    "MLPERF_CPU",
    "MLPERF_CPU_GNR",
    "MLPERF_INF",
    "MLPERF_T4",
    "MLPERF_TRAIN",
    "NV_PERF",
    "NV_PT",
    "NV_T4_PT",
    "NV_T4_TF",
    "NV_TF",
    "Source",
]


@dataclass(frozen=True)
class Source:
    """A published figure (quoted exactly as the source gives it) or, figure "", just the page.

    ``values`` names the numbers a notebook computes with; ``figure`` then holds ``{name}``
    fields and is filled from them, so that each number is typed once.
    """

    title: str
    url: str
    figure: str = ""
    values: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        if self.values:
            object.__setattr__(self, "figure", self.figure.format(**dict(self.values)))

    def value(self, name: str) -> float:
        found = dict(self.values)
        if name not in found:
            raise ValueError(
                f"{self.title} gives no value {name!r}: it gives {', '.join(found) or 'none'}"
            )
        return found[name]

    def cite(self) -> str:
        return (
            f"{self.figure} ({self.title}, {self.url})"
            if self.figure
            else f"{self.title}, {self.url}"
        )


NV_PT = Source(
    "NVIDIA DeepLearningExamples, ResNet50 v1.5 for PyTorch, training performance on DGX A100 "
    "(8x A100 80GB), pytorch-21.03 NGC container",
    "https://github.com/NVIDIA/DeepLearningExamples/blob/291f0d02e815b148fa5c2b81bf07aa3552142895/"
    "PyTorch/Classification/ConvNets/resnet50v1.5/README.md",
    "1 GPU: {gpu1_tf32:g} img/s TF32, {gpu1_amp:g} img/s mixed precision; 8 GPUs: "
    "{gpu8_tf32:g} img/s TF32, {gpu8_amp:g} img/s mixed precision",
    (("gpu1_tf32", 938), ("gpu1_amp", 2470), ("gpu8_tf32", 7248), ("gpu8_amp", 16621)),
)
NV_TF = Source(
    "NVIDIA DeepLearningExamples, ResNet-50 v1.5 for TensorFlow, training performance on DGX A100 "
    "(8x A100 40GB), TensorFlow 20.06-tf1-py3 NGC container",
    "https://github.com/NVIDIA/DeepLearningExamples/blob/1d4211fe9d94550d7bc72bb9b0ac4f576533ca52/"
    "TensorFlow/Classification/ConvNets/resnet50v1.5/README.md",
    "1 GPU: {gpu1_tf32:g} img/s TF32 + XLA, {gpu1_amp:g} img/s mixed precision + XLA; 8 GPUs: "
    "{gpu8_tf32:g} and {gpu8_amp:g} img/s",
    (("gpu1_tf32", 909), ("gpu1_amp", 2375), ("gpu8_tf32", 7000), ("gpu8_amp", 17400)),
)
NV_PERF = Source(
    "NVIDIA Data Center Deep Learning Product Performance (current figures)",
    "https://developer.nvidia.com/deep-learning-performance-training-inference",
)
MLPERF_TRAIN = Source(
    "MLPerf Training results (MLCommons), ResNet-50 time to train",
    "https://mlcommons.org/benchmarks/training/",
)
NV_T4_PT = Source(
    "NVIDIA DeepLearningExamples, ResNet50 v1.5 for PyTorch, inference on one T4",
    NV_PT.url,
    "FP32: 98 img/s at batch 1, 428 img/s at batch 64; mixed precision: 1198 img/s at batch 256",
)
NV_T4_TF = Source(
    "NVIDIA DeepLearningExamples, ResNet-50 v1.5 for TensorFlow, inference on one T4",
    NV_TF.url,
    "FP32: 136.44 img/s at batch 1, 425.72 img/s at batch 256; mixed precision + XLA: "
    "1193.74 img/s at batch 256",
)
MLPERF_T4 = Source(
    "MLPerf Inference v0.5, closed division, NVIDIA T4x8 (8 T4 GPUs, TensorRT), ResNet-50 Offline",
    "https://github.com/mlcommons/inference_results_v0.5/blob/master/closed/NVIDIA/results/"
    "T4x8/resnet/Offline/performance/run_1/mlperf_log_summary.txt",
    "44977.8 samples/s for 8 GPUs, i.e. about 5600 per T4 (INT8)",
)
MLPERF_INF = Source(
    "MLPerf Inference results (MLCommons), datacenter and edge, ResNet-50",
    "https://mlcommons.org/benchmarks/inference-datacenter/",
)
MLPERF_CPU = Source(
    "MLPerf Inference v4.1, closed division, Intel 1-node-2S-EMR-PyTorch (2x Xeon Platinum "
    "8592+, 64 cores each; PyTorch, the model calibrated to int8 per the submission's README), "
    "ResNet-50 Offline, status available",
    "https://github.com/mlcommons/inference_results_v4.1/blob/main/closed/Intel/results/"
    "1-node-2S-EMR-PyTorch/resnet50/Offline/performance/run_1/mlperf_log_summary.txt",
    "{samples_per_s:,g} samples/s on {cores:g} cores (VALID), about {per_core:.0f} per core",
    (("samples_per_s", 25204.5), ("cores", 128), ("per_core", 25204.5 / 128)),
)
MLPERF_CPU_GNR = Source(
    "MLPerf Inference v4.1, closed division, Intel 1-node-2S-GNR-PyTorch (2x Xeon 6980P, 128 "
    "cores each), ResNet-50 Offline, status preview",
    "https://github.com/mlcommons/inference_results_v4.1/blob/main/closed/Intel/results/"
    "1-node-2S-GNR-PyTorch/resnet50/Offline/performance/run_1/mlperf_log_summary.txt",
    "{samples_per_s:,g} samples/s on {cores:g} cores (VALID), about {per_core:.0f} per core",
    (("samples_per_s", 45617.3), ("cores", 256), ("per_core", 45617.3 / 256)),
)
JETSON = Source(
    "NVIDIA Jetson Nano deep learning inference benchmarks",
    "https://developer.nvidia.com/embedded/jetson-nano-dl-inference-benchmarks",
)
