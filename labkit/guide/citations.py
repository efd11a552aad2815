"""Where the guide's rules come from: the article's parts (its voice) and the course's dated,
checkable sources (the course's voice).

:data:`SOURCES` are release notes, official docs and guides, each with the date the page itself
gives or the date of the commit that last changed it, and where that date comes from; a course
rule cites them by key (several joined with ``+``). The ``A_*`` constants are the parts of the
source article (:data:`ARTICLE_NAME`) that the article's rules restate.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = [
    "ARTICLE_NAME",
    "A_DEPLOY",
    "A_GRAPHS",
    "A_INFERENCE",
    "A_RESEARCH",
    "A_SMALL",
    "A_SPECIAL",
    "A_STEP1",
    "A_STEP2",
    "A_STEP4",
    "A_TRAINING",
    "SOURCES",
    "Source",
]

#: the article, as the rules of its voice cite it
ARTICLE_NAME = "the source article (seed 000: eager vs static graphs, benchmarks, selection guide)"


class Source(NamedTuple):
    """A dated, checkable source of a course rule: open ``url`` and find the fact there."""

    title: str
    url: str
    date: str  # ISO 8601, as the page gives it or as its source's last commit dates it
    dated: str  # where the date comes from


SOURCES: dict[str, Source] = {
    "torch_compile": Source(
        "Introduction to torch.compile (PyTorch tutorials)",
        "https://docs.pytorch.org/tutorials/intermediate/torch_compile_tutorial.html",
        "2026-01-26",
        "'Last Updated' on the page (created 2023-03-15, with PyTorch 2.0)",
    ),
    "torch_fsdp2": Source(
        "torch.distributed.fsdp.fully_shard, FSDP2 (PyTorch documentation)",
        "https://docs.pytorch.org/docs/stable/distributed.fsdp.fully_shard.html",
        "2025-10-13",
        "'Last Updated On' on the page",
    ),
    "torchscript_deprecated": Source(
        "TorchScript Language Reference: 'TorchScript is deprecated, please use torch.export "
        "instead' (PyTorch documentation)",
        "https://docs.pytorch.org/docs/stable/jit_language_reference.html",
        "2025-07-15",
        "'Last Updated On' on the page",
    ),
    "torch_onnx": Source(
        "Introduction to ONNX: torch.onnx export, dynamo=True recommended (PyTorch tutorials)",
        "https://docs.pytorch.org/tutorials/beginner/onnx/intro_onnx.html",
        "2025-07-11",
        "'Last Updated' on the page",
    ),
    "executorch": Source(
        "ExecuTorch README: PyTorch's on-device runtime, from smartphones to microcontrollers "
        "(v1.0.0 tagged 2025-10-17)",
        "https://github.com/pytorch/executorch/blob/52467d5f4919ae3c1bd1ce8910adf02a69a4990f/"
        "README.md",
        "2026-08-10",
        "date of the commit the link points to",
    ),
    "tf_function": Source(
        "Better performance with tf.function: eager by default, debug eagerly then decorate "
        "(TensorFlow guide)",
        "https://www.tensorflow.org/guide/function",
        "2023-11-27",
        "last change of the page's source, tensorflow/docs commit af33301",
    ),
    "tf_distribute": Source(
        "Distributed training with TensorFlow: tf.distribute.Strategy over GPUs, machines or "
        "TPUs (TensorFlow guide)",
        "https://www.tensorflow.org/guide/distributed_training",
        "2023-08-18",
        "last change of the page's source, tensorflow/docs commit dfea136",
    ),
    "tf_tpu": Source(
        "Use TPUs: tf.distribute.TPUStrategy for synchronous training on Cloud TPUs and TPU Pods "
        "(TensorFlow guide)",
        "https://www.tensorflow.org/guide/tpu",
        "2024-09-04",
        "last change of the page's source, tensorflow/docs commit 48a1db2",
    ),
    "tf_savedmodel": Source(
        "Using the SavedModel format: deploy with TFLite, TensorFlow.js or TensorFlow Serving "
        "(TensorFlow guide)",
        "https://www.tensorflow.org/guide/saved_model",
        "2025-01-29",
        "last change of the page's source, tensorflow/docs commit 857b9d4",
    ),
    "tf_serving": Source(
        "Serving Models: TensorFlow Serving for production environments (TFX guide)",
        "https://tensorflow.org/serving",
        "2021-01-28",
        "'Last updated' on the page",
    ),
    "litert": Source(
        "TensorFlow Lite is now LiteRT: one on-device runtime for models from TensorFlow, "
        "PyTorch, JAX and Keras (Google Developers Blog)",
        "https://developers.googleblog.com/en/tensorflow-lite-is-now-litert/",
        "2024-09-04",
        "publication date of the post",
    ),
    "mindspore_design": Source(
        "MindSpore design overview: device-edge-cloud, automatic parallelism, whole-graph "
        "sinking on Ascend, third-party chip plugins, jit (MindSpore documentation)",
        "https://github.com/mindspore-ai/docs/blob/e15d2d48aeb352ad6adda436c67612c8a04f72f2/"
        "docs/mindspore/source_en/design/overview.md",
        "2025-07-03",
        "date of the commit the link points to (published at mindspore.cn/docs/en/master/"
        "design/overview.html)",
    ),
    "mindspore_lite": Source(
        "MindSpore Lite architecture: one device-cloud MindIR, code generation for IoT "
        "(MindSpore Lite documentation)",
        "https://github.com/mindspore-ai/docs/blob/c99f5259c453969820444b559e23fff562e96de8/"
        "docs/lite/docs/source_en/reference/architecture_lite.md",
        "2024-09-05",
        "date of the commit the link points to",
    ),
    "mindspore_federated": Source(
        "MindSpore Federated: federated learning without sharing local data (MindSpore "
        "documentation)",
        "https://github.com/mindspore-ai/docs/blob/d97cfd6f60e20a1c752fd55181f51dfef97243a6/"
        "docs/federated/docs/source_en/index.rst",
        "2023-06-14",
        "date of the commit the link points to",
    ),
    "torch_xla": Source(
        "PyTorch/XLA README: PyTorch on Cloud TPUs through the XLA compiler; TorchTPU announced "
        "to replace it once public (pytorch/xla)",
        "https://github.com/pytorch/xla/blob/5499f03c1ec172caef73949c64302d00c9d86c47/README.md",
        "2026-04-23",
        "date of the commit the link points to",
    ),
    "torch_npu": Source(
        "TorchNPU (torch_npu) README: the PyTorch adapter plugin for Ascend NPUs (Ascend/pytorch)",
        "https://github.com/Ascend/pytorch/blob/042818b84eabcb6ec1745f93dd35d753d762e5b9/README.md",
        "2026-08-20",
        "date of the commit the link points to",
    ),
    "paddle_custom_device": Source(
        "PaddleCustomDevice README: hardware backends for Ascend NPU, Biren GPU, Cambricon MLU, "
        "Enflame GCU and others (PaddlePaddle)",
        "https://github.com/PaddlePaddle/PaddleCustomDevice/blob/"
        "77090b642bfecc527ea0dc8ede72e9f0eec60a10/README_en.md",
        "2024-10-18",
        "date of the commit the link points to",
    ),
}

#: where the article says it (the article's voice cites its parts)
A_RESEARCH = "article, part 3.1 (research and prototyping)"
A_TRAINING = "article, part 3.2 (industrial large-scale training)"
A_DEPLOY = "article, part 3.3 (multi-target deployment)"
A_SMALL = "article, part 3.4 (small teams)"
A_SPECIAL = "article, part 3.5 (special domains)"
A_INFERENCE = "article, part 2.2 (inference conclusions)"
A_GRAPHS = "article, part 1 (where each execution mode fits)"
A_STEP1 = "article, part 4, step 1 (name the core need)"
A_STEP2 = "article, part 4, step 2 (weigh the team's expertise)"
A_STEP4 = "article, part 4, step 4 (think about long-term growth)"
