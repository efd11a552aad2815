"""Graph optimisation made visible: node counts before and after, and the same outputs.

Real frameworks on ResNet-50 at 32x32 (TorchScript freeze / optimize_for_inference, ONNX Runtime's
optimisation levels on the PyTorch export, TensorFlow's traced and frozen graphs).
"""

import collections

from labkit import resnet

import numpy as np
import pytest
from conftest import inductor_launches, require, skip_or_fail

SIZE, BATCH = 32, 2
TOL = 1e-4  # of the logit scale


def need(package):
    """Skip unless ``package`` imports here (the framework itself, not its labkit adapter)."""
    from labkit import frameworks

    probe = frameworks.probe_all()[package]
    if not probe.importable:
        skip_or_fail(f"{package} is not importable here: {probe.error}")


def close(a, b):
    scale = max(float(np.abs(a).max()), 1e-6)
    return float(np.abs(a - b).max()) / scale < TOL


@pytest.fixture(scope="module")
def weights():
    return resnet.init_weights(0)


@pytest.fixture(scope="module")
def images():
    return resnet.random_batch(BATCH, SIZE, seed=3)[0]


# ---------------------------------------------------------------------------------------------
# TorchInductor (torch.compile)


def test_inductor_folds_batchnorm_and_fuses_relu_of_a_small_block():
    """What the program torch.compile really generates launches (as notebook 05 reads it)."""
    require("torch")
    import torch
    from torch._inductor.utils import run_and_get_code

    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU()
    ).eval()
    with torch.no_grad():  # non-trivial running statistics, so that folding shows in the result
        block[1].running_mean.uniform_(-1, 1)
        block[1].running_var.uniform_(0.5, 2)
    x = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32))
    with torch.no_grad():
        want = block(x).numpy()
    kinds = {}
    try:
        for freezing in (False, True):
            torch.compiler.reset()
            # freezing is Inductor's config flag (torch.compile(options={"freezing": True}) does
            # not fold BatchNorm with torch 2.13 here)
            with (
                torch.no_grad(),
                torch._inductor.config.patch(freezing=freezing, compile_threads=1),
            ):
                logits, codes = run_and_get_code(torch.compile(block), x)
            assert close(logits.numpy(), want), freezing
            kinds[freezing] = inductor_launches("\n".join(codes))
    finally:
        torch.compiler.reset()
    # unfrozen: the convolution is a library call; BatchNorm and ReLU run as one generated loop
    assert any(
        k.startswith("cpp_fused") and "batch_norm" in k and "relu" in k for k in kinds[False]
    )
    # frozen: BatchNorm is folded into the weights, nothing generated mentions it any more
    assert not any("batch_norm" in k for k in kinds[True]), kinds[True]
    assert len(kinds[True]) <= len(kinds[False])


# ---------------------------------------------------------------------------------------------
# ONNX Runtime


def ort_run(path, x):
    """The first output of a model file run as stored (graph optimisation off)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


#: ONNX Runtime's graph optimisation levels, lowest first (``ORT_DISABLE_ALL``, ``ORT_ENABLE_<LEVEL>``)
LEVELS = ("disabled", "basic", "extended", "layout", "all")


def optimize(path, level, out):
    """Write the model as ONNX Runtime rewrites it at ``level`` to ``out``; returns ``out``."""
    import onnxruntime as ort

    if level not in LEVELS:
        raise ValueError(
            f"unknown optimisation level {level!r}: valid levels are {', '.join(LEVELS)}"
        )
    so = ort.SessionOptions()
    name = "ORT_DISABLE_ALL" if level == "disabled" else f"ORT_ENABLE_{level.upper()}"
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, name)
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.optimized_model_filepath = str(out)
    ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return out


def counts(model):
    """Nodes by operator; ORT's own operators carry their domain (``com.microsoft:FusedConv``)."""
    import onnx

    model = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))
    return collections.Counter(
        f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
        for n in model.graph.node
    )


@pytest.fixture(scope="module")
def onnx_files(weights, images, tmp_path_factory):
    """The PyTorch export that the onnxruntime adapter runs, and ORT's rewrite at each level."""
    require("torch")
    lo = require("onnxruntime")
    directory = tmp_path_factory.mktemp("onnx")
    files = {"exported": lo.model_file(weights)}
    files.update({lv: optimize(files["exported"], lv, directory / f"{lv}.onnx") for lv in LEVELS})
    return files, lo.predict(lo.build_resnet50(weights), images)


def test_onnxruntime_levels_shrink_the_exported_graph(onnx_files, images):

    files, want = onnx_files
    c = {k: counts(p) for k, p in files.items()}
    assert c["exported"]["BatchNormalization"] == 53 and c["exported"]["Conv"] == 53
    assert c["disabled"]["BatchNormalization"] == 53
    assert c["basic"]["BatchNormalization"] == 0 and c["basic"]["Conv"] == 53  # folded
    assert c["basic"].total() < c["disabled"].total()
    assert c["extended"]["com.microsoft:FusedConv"] > 0  # Conv+Relu fused
    assert c["extended"].total() < c["basic"].total()
    assert c["all"].total() < c["extended"].total()  # NCHWc convolutions absorb Add and Relu
    assert sum(n for k, n in c["all"].items() if "nchwc" in k) >= 53
    for name, path in files.items():
        assert close(ort_run(path, images), want), name


def test_onnxruntime_counts_a_small_conv_bn_relu_as_ort_rewrites_it(tmp_path):
    """Conv+BatchNorm folds at 'basic', Conv+Relu fuses at 'extended'; counts() names ORT's own
    operator with its domain."""
    need("onnxruntime")

    import onnx
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(1)
    init = [
        numpy_helper.from_array(rng.normal(size=s).astype(np.float32), n)
        for n, s in (("w", (4, 3, 3, 3)), ("gamma", (4,)), ("beta", (4,)), ("mean", (4,)))
    ]
    init.append(numpy_helper.from_array(rng.uniform(0.5, 2, 4).astype(np.float32), "var"))
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "gamma", "beta", "mean", "var"], ["b"]),
        helper.make_node("Relu", ["b"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "cbr",
        [helper.make_tensor_value_info("x", 1, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", 1, [1, 4, 8, 8])],
        init,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    src = tmp_path / "cbr.onnx"
    onnx.save(model, src)
    x = rng.normal(size=(1, 3, 8, 8)).astype(np.float32)
    want = ort_run(src, x)
    assert counts(model) == {"Conv": 1, "BatchNormalization": 1, "Relu": 1}
    files = {lv: optimize(src, lv, tmp_path / f"{lv}.onnx") for lv in ("basic", "extended")}
    assert counts(files["basic"]) == {"Conv": 1, "Relu": 1}
    assert counts(files["extended"]) == {"com.microsoft:FusedConv": 1}
    for p in files.values():  # one 27-term convolution: fusion moves it by ~1e-7
        np.testing.assert_allclose(ort_run(p, x), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="valid levels are disabled, basic"):
        optimize(src, "max", tmp_path / "max.onnx")
