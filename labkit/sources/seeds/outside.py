"""The systems the source articles name that this lab cannot run, said plainly: what each
needs that a lab of x86 CPUs and pip packages lacks, the command that would run it where it can
run, and the figure the articles claim for it (built from their tables, :mod:`.throughput` and
:mod:`.articles`, never typed twice; "no figure" where they give none).

Not for: what the lab runs (the registry) or the guide's rules; the guide and the course show
this table (:func:`out_of_reach_markdown`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...util import tables
from .articles import figure
from .throughput import INFERENCE_DEVICES, InferenceRow, inference

__all__ = ["OUT_OF_REACH", "OutOfReach", "out_of_reach", "out_of_reach_markdown"]


@dataclass(frozen=True)
class OutOfReach:
    key: str
    name: str
    needs: str  #: what it needs that this lab does not have
    command: str  #: a command that runs the course's ResNet-50 with it, where it can run
    claim: str  #: what the articles claim for it, in the course's words
    where: str  #: where the articles name it


def _fps(row: InferenceRow, *devices: str) -> str:
    """'52 FPS on the CPU (Xeon 8375C), 350 on the GPU (T4)' for a row of the inference table."""
    parts = [f"{getattr(row, d):g} on the {INFERENCE_DEVICES[d]}" for d in devices]
    return f"{row.label}: " + ", ".join(parts) + " (ResNet-50, frames per second)"


def _entries() -> tuple[OutOfReach, ...]:
    lite, serving = inference("mindspore"), inference("tensorflow")
    routes = ("torch", "tensorflow", "mindspore")
    jetson = ", ".join(f"{inference(fw).label} {inference(fw).embedded_fps:g}" for fw in routes)
    return (
        OutOfReach(
            "tensorrt",
            "TensorRT",
            "an NVIDIA GPU and NVIDIA's TensorRT libraries (this lab's machines have no GPU); "
            "ONNX Runtime's TensorrtExecutionProvider (onnxruntime-gpu) and Paddle Inference's "
            "enable_tensorrt_engine() call it too",
            "trtexec --onnx=model.onnx --fp16 --shapes=images:8x3x224x224",
            "no figure: article 003 names it as TensorFlow's deployment tool beside TF Lite",
            "seed 003, part 1 (ecosystems)",
        ),
        OutOfReach(
            "mindspore_lite",
            "MindSpore Lite",
            "its converter and runtime, which pip does not install: no mindspore-lite "
            "distribution for MindSpore 2.8 in the package registries (MindSpore's site ships "
            "it as archives)",
            "converter_lite --fmk=MINDIR --modelFile=resnet50.mindir --outputFile=resnet50 && "
            "benchmark --modelFile=resnet50.ms --device=CPU",
            f"{_fps(lite, *INFERENCE_DEVICES)}; {figure('lite_vs_tflite').statement}",
            "seed 000, part 2.2 (inference benchmark) and part 3.3 (multi-target deployment)",
        ),
        OutOfReach(
            "tf_serving",
            "TensorFlow Serving",
            "a C++ server shipped as a Docker image or a Debian package, not a pip package; the "
            "lab's serving notebook measures a Python server under load instead",
            "docker run -p 8501:8501 -v $PWD/saved_model:/models/resnet50/1 "
            "-e MODEL_NAME=resnet50 tensorflow/serving",
            _fps(serving, "cpu_fps", "gpu_fps"),
            "seed 000, part 2.2 (inference benchmark)",
        ),
        OutOfReach(
            "ascend",
            "Huawei Ascend NPUs",
            "an Ascend NPU (an Atlas card) with the CANN toolkit, the script calling "
            "mindspore.set_device('Ascend'); MindSpore's AutoParallel and graph sinking target "
            "it (on this CPU AutoParallel's compile refuses)",
            "msrun --worker_num 8 --local_worker_num 8 train.py",
            "no figure: article 000 says MindSpore supports domestic AI chips such as Ascend best",
            "seed 000, part 3.5 (special domains)",
        ),
        OutOfReach(
            "jetson",
            "NVIDIA Jetson Nano",
            "the board (an ARM CPU with an NVIDIA GPU, JetPack), where the command runs; this lab "
            "runs on x86 CPUs",
            "trtexec --onnx=model.onnx --fp16",
            f"on a Jetson Nano, frames per second: {jetson}",
            "seed 000, part 2.2 (inference benchmark)",
        ),
    )


#: the systems the articles name that the lab cannot run here
OUT_OF_REACH: tuple[OutOfReach, ...] = _entries()


def out_of_reach(key: str) -> OutOfReach:
    for entry in OUT_OF_REACH:
        if entry.key == key:
            return entry
    raise ValueError(
        f"unknown system {key!r}: the ones out of reach are "
        f"{', '.join(e.key for e in OUT_OF_REACH)}"
    )


def out_of_reach_markdown() -> str:
    """The table: each system, what it needs, the command that would run it, the claim."""
    head = ["system", "why not here", "what would run it", "what the articles claim"]
    rows = [[e.name, e.needs, f"`{e.command}`", f"{e.claim} ({e.where})"] for e in OUT_OF_REACH]
    return tables.markdown(head, rows)
