"""Graph optimisation made visible: node counts before and after, and the same outputs.

Real frameworks on ResNet-50 at 32x32 (TorchScript freeze / optimize_for_inference, ONNX Runtime's
optimisation levels on the PyTorch export, Grappler on TensorFlow's traced graph), plus the
framework-free arithmetic (BatchNorm folding, memory planning) checked against the frameworks.
"""

import os
import subprocess
import sys

from labkit import resnet
from labkit.lessons import graphs

import numpy as np
import pytest
from conftest import ROOT, require, skip_or_fail

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
# framework-free


def test_op_counts_separate_bookkeeping_from_compute():
    c = graphs.OpCounts.of(
        ["Const", "Conv", "Conv", "Relu", "Const", "Const"], lambda k: k == "Const"
    )
    assert (c.total, c.compute, c["Conv"], c["Missing"]) == (6, 3, 2, 0)
    assert list(c.by_kind) == ["Const", "Conv", "Relu"]  # most common first
    assert c.count("on") == 5 and c.top(1) == "Const x3"
    rows = graphs.stage_rows(
        {"before": c, "after": graphs.OpCounts.of(["Conv"], lambda k: False)}, watch=("Relu",)
    )
    assert [(r["stage"], r["nodes"], r["compute nodes"], r["Relu"]) for r in rows] == [
        ("before", 6, 3, 1),
        ("after", 1, 1, 0),
    ]


def test_plan_memory_liveness():
    # a -> b -> c, with a also read by the last step (a residual connection)
    steps = [
        graphs.Step("s0", ("x",), ("a",)),
        graphs.Step("s1", ("a",), ("b",)),
        graphs.Step("s2", ("b",), ("c",)),
        graphs.Step("s3", ("c", "a"), ("y",)),
    ]
    sizes = {"a": 100, "b": 10, "c": 20, "y": 1}
    plan = graphs.plan_memory(steps, sizes, keep=["y"])
    assert plan.naive_bytes == 131
    # during a step its inputs and outputs are alive; a stays alive for the residual add
    assert plan.live_bytes == [100, 110, 130, 121]
    assert (plan.peak_bytes, plan.peak_step) == (130, "s2")
    chain = [
        graphs.Step("s0", ("x",), ("a",)),
        graphs.Step("s1", ("a",), ("b",)),
        graphs.Step("s2", ("b",), ("y",)),
    ]
    plan = graphs.plan_memory(chain, {"a": 100, "b": 10, "y": 1}, keep=["y"])
    assert plan.live_bytes == [100, 110, 11] and plan.saving == pytest.approx(1 - 110 / 111)
    with pytest.raises(ValueError, match="no size for intermediate"):
        graphs.plan_memory(chain, {"a": 1})


def test_fold_batchnorm_matches_torch():
    require("torch")
    import torch

    rng = np.random.default_rng(0)
    conv = torch.nn.Conv2d(3, 4, 3, padding=1, bias=True).eval()
    bn = torch.nn.BatchNorm2d(4).eval()
    with torch.no_grad():
        bn.weight.copy_(torch.from_numpy(rng.uniform(0.5, 2, 4).astype(np.float32)))
        bn.bias.copy_(torch.from_numpy(rng.normal(size=4).astype(np.float32)))
        bn.running_mean.copy_(torch.from_numpy(rng.normal(size=4).astype(np.float32)))
        bn.running_var.copy_(torch.from_numpy(rng.uniform(0.5, 2, 4).astype(np.float32)))
    w, b = graphs.fold_batchnorm(
        conv.weight.detach().numpy(),
        conv.bias.detach().numpy(),
        bn.weight.detach().numpy(),
        bn.bias.detach().numpy(),
        bn.running_mean.numpy(),
        bn.running_var.numpy(),
        bn.eps,
    )
    x = torch.from_numpy(rng.normal(size=(2, 3, 8, 8)).astype(np.float32))
    with torch.no_grad():
        want = bn(conv(x)).numpy()
        got = torch.nn.functional.conv2d(
            x, torch.from_numpy(w), torch.from_numpy(b), padding=1
        ).numpy()
    # one small convolution (27 products per output) in float32: folding the BatchNorm into it
    # changes each output by a few roundings (~1e-7 of values of order 1), far inside 1e-5
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="one value per output channel"):
        graphs.fold_batchnorm(
            np.ones((4, 3, 3, 3)), None, np.ones(3), np.ones(4), np.ones(4), np.ones(4)
        )


# ---------------------------------------------------------------------------------------------
# TorchScript


def test_torchscript_freeze_and_optimize_shrink_resnet50(weights, images):
    lt = require("torch")
    from labkit.frameworks.torch import graphs as tg

    model = lt.build_resnet50(weights)
    want = lt.predict(model, images)
    stages = tg.stages(model, images)
    c = {k: tg.counts(m) for k, m in stages.items()}
    assert list(c) == list(tg.STAGES)
    assert c["traced"].count("batch_norm") == 53 and c["traced"].count("convolution") == 53
    assert c["traced"]["prim::GetAttr"] > 100  # every weight read from the module
    for after in ("frozen", "optimized"):
        assert c[after].total < c["traced"].total and c[after].compute < c["traced"].compute
        assert c[after].count("batch_norm") == 0 and c[after]["prim::GetAttr"] == 0
        assert close(tg.run(stages[after], images), want), after
    assert c["frozen"].compute == 122  # 53 conv + 49 relu + 16 add + pools, flatten, linear
    assert c["optimized"]["prim::mkldnn_convolution"] == 53


# ---------------------------------------------------------------------------------------------
# TorchInductor

GENERATED = '''
cpp_fused_relu_0 = async_compile.cpp_pybinding(['const float*', 'float*'], r"""
extern "C" void kernel() {}
""")
class Runner:
    def call(self, args):
        arg0_1, = args
        cpp_fused_relu_0(arg0_1, buf0)
        buf1 = torch.ops.mkldnn._convolution_pointwise.default(buf0, w, b, 'relu')
        assert_size_stride(buf1, (2, 64), (64, 1), 'torch.ops.mkldnn._convolution_pointwise')
        buf2 = extern_kernels.convolution(buf1, w2, stride=(1, 1))
        triton_poi_fused_add_7.run(buf2, buf1, 128, stream=stream0)
        return (buf2, )
    def later(self):
        cpp_fused_relu_0(x, y)
'''


def test_inductor_launches_are_read_from_the_call_function_only():
    from labkit.frameworks.torch import graphs as tg

    got = tg.launches(GENERATED)
    assert got == [
        "cpp_fused_relu",
        "torch.ops.mkldnn._convolution_pointwise.default",
        "extern_kernels.convolution",
        "triton_poi_fused_add",
    ]
    assert [tg.is_generated(k) for k in got] == [True, False, False, True]
    assert tg.inductor_kernels(GENERATED).total == 4
    with pytest.raises(ValueError, match=r"no `def call\(`"):
        tg.launches("print('hello')")


def test_inductor_folds_batchnorm_and_fuses_relu_of_a_small_block():
    require("torch")
    from labkit.frameworks.torch import graphs as tg

    import torch

    torch.manual_seed(0)
    block = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU()
    ).eval()
    with torch.no_grad():  # non-trivial running statistics, so that folding shows in the result
        block[1].running_mean.uniform_(-1, 1)
        block[1].running_var.uniform_(0.5, 2)
    x = np.random.default_rng(0).standard_normal((2, 3, 8, 8)).astype(np.float32)
    with torch.no_grad():
        want = block(torch.from_numpy(x)).numpy()
    kinds = {}
    for freezing in (False, True):
        logits, code = tg.inductor(block, x, freezing=freezing)
        assert close(logits, want), freezing
        kinds[freezing] = tg.launches(code)
    # unfrozen: the convolution is a library call; BatchNorm and ReLU run as one generated loop
    assert any(tg.is_generated(k) and "batch_norm" in k and "relu" in k for k in kinds[False])
    # frozen: BatchNorm is folded into the weights, nothing generated mentions it any more
    assert not any("batch_norm" in k for k in kinds[True]), kinds[True]
    assert len(kinds[True]) <= len(kinds[False])


# ---------------------------------------------------------------------------------------------
# ONNX Runtime


@pytest.fixture(scope="module")
def onnx_files(weights, images, tmp_path_factory):
    """The PyTorch export that the onnxruntime adapter runs, and ORT's rewrite at each level."""
    require("torch")
    lo = require("onnxruntime")
    from labkit.frameworks.onnxruntime import graphs as og

    directory = tmp_path_factory.mktemp("onnx")
    files = {"exported": lo.model_file(weights)}
    files.update(og.optimize_levels(files["exported"], directory))
    return files, lo.predict(lo.build_resnet50(weights), images)


def test_onnxruntime_levels_shrink_the_exported_graph(onnx_files, images):
    from labkit.frameworks.onnxruntime import graphs as og

    files, want = onnx_files
    c = {k: og.counts(p) for k, p in files.items()}
    assert c["exported"]["BatchNormalization"] == 53 and c["exported"]["Conv"] == 53
    assert c["disabled"]["BatchNormalization"] == 53
    assert c["basic"]["BatchNormalization"] == 0 and c["basic"]["Conv"] == 53  # folded
    assert c["basic"].total < c["disabled"].total
    assert c["extended"]["com.microsoft:FusedConv"] > 0  # Conv+Relu fused
    assert c["extended"].total < c["basic"].total
    assert c["all"].total < c["extended"].total  # NCHWc convolutions absorb Add and Relu
    assert c["all"].count("nchwc") >= 53
    for name, path in files.items():
        assert close(og.run(path, images), want), name


def test_onnxruntime_fuses_a_small_conv_bn_relu():
    """Conv+BatchNorm folds at 'basic', Conv+Relu fuses at 'extended', on a hand-built graph."""
    need("onnxruntime")
    from labkit.frameworks.onnxruntime import graphs as og

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
    x = rng.normal(size=(1, 3, 8, 8)).astype(np.float32)
    want = og.run(og.session(model.SerializeToString(), "disabled"), x)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        src = f"{d}/cbr.onnx"
        onnx.save(model, src)
        files = og.optimize_levels(src, d, ("basic", "extended"))
        assert og.counts(files["basic"]).by_kind == {"Conv": 1, "Relu": 1}
        assert og.counts(files["extended"]).by_kind == {"com.microsoft:FusedConv": 1}
        for p in files.values():  # one 27-term convolution: fusion moves it by ~1e-7
            np.testing.assert_allclose(og.run(p, x), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="valid levels are"):
        og.session(src, "max")


def test_memory_plan_of_the_exported_resnet50(onnx_files, images):
    from labkit.frameworks.onnxruntime import graphs as og

    files, _ = onnx_files
    steps, sizes, outputs = og.memory_steps(files["basic"], images)
    assert len(steps) == og.counts(files["basic"]).total and outputs == ["logits"]
    assert sizes["logits"] == BATCH * 1000 * 4
    plan = graphs.plan_memory(steps, sizes, outputs)
    assert 0 < plan.peak_bytes < plan.naive_bytes / 4  # buffer reuse saves most of the memory
    assert plan.peak_bytes == max(plan.live_bytes)
    # the biggest activations: the stem's 64 x 16 x 16 (and layer1's 256 x 8 x 8) float32 maps
    assert max(sizes.values()) == BATCH * 64 * (SIZE // 2) ** 2 * 4


# ---------------------------------------------------------------------------------------------
# TensorFlow / Grappler


def test_grappler_folds_constants_and_removes_dead_code():
    require("tensorflow")
    from labkit.frameworks.tensorflow import graphs as tg

    import tensorflow as tf

    @tf.function
    def f(x):
        scale = tf.constant(2.0) * tf.constant(3.0)  # foldable
        unused = tf.sin(x) * 100.0  # noqa: F841 - dead code
        return x * scale

    x = np.arange(4, dtype=np.float32)
    cf = tg.trace(f, x)
    ins, outs = tg.io_names(cf)
    before = tg.graph_def(cf)
    assert tg.counts(before)["Mul"] == 3 and tg.counts(before)["Sin"] == 1
    pruned = tg.grappler(before, ins, outs, ["pruning"])
    assert tg.counts(pruned)["Sin"] == 0 and tg.counts(pruned)["Mul"] == 2
    full = tg.grappler(before, ins, outs)
    assert tg.counts(full)["Mul"] == 1 and tg.counts(full).total < tg.counts(before).total
    for g in (before, pruned, full):
        np.testing.assert_allclose(tg.run(g, ins, outs, x)[0], x * 6)
    with pytest.raises(ValueError, match="unknown Grappler optimizer"):
        tg.grappler(before, ins, outs, ["fold-everything"])


def test_grappler_shrinks_resnet50(weights, images):
    ltf = require("tensorflow")
    from labkit.frameworks.tensorflow import graphs as tg

    model = ltf.build_resnet50(weights)
    want = ltf.predict(model, images)
    x = ltf.to_nhwc(images)
    stages, ins, outs = tg.stages(model, x)
    c = {k: tg.counts(g) for k, g in stages.items()}
    assert c["traced"]["ReadVariableOp"] > 200 and c["frozen"]["ReadVariableOp"] == 0
    assert c["traced"]["Conv2D"] == c["grappler"]["Conv2D"] == 53
    assert c["grappler"]["Rsqrt"] == 0 < c["frozen"]["Rsqrt"]  # BatchNorm folded away
    assert c["grappler"].total < c["frozen"].total and c["grappler"].compute < c["frozen"].compute
    for name in ("frozen", "grappler"):
        assert close(tg.run(stages[name], ins, outs, x)[0], want), name


# ---------------------------------------------------------------------------------------------
# int8 quantisation in ONNX Runtime


def test_int8_quantisation_of_resnet50(onnx_files, images, tmp_path):
    from labkit.frameworks.onnxruntime import graphs as og
    from labkit.lessons import deploy

    files, want = onnx_files
    dyn = og.quantize_dynamic(files["exported"], tmp_path / "dynamic.onnx")
    c = og.counts(dyn)
    # ONNX Runtime's default dynamic quantisation covers the convolutions and the classifier
    assert c["ConvInteger"] == 53 and c["MatMulInteger"] == 1 and c["DynamicQuantizeLinear"] > 0
    assert c["BatchNormalization"] == 0  # folded before quantising
    calib = [resnet.random_batch(2, SIZE, seed=50 + i)[0] for i in range(2)]
    qdq = og.quantize_static(files["exported"], tmp_path / "static.onnx", calib)
    assert og.counts(qdq)["QuantizeLinear"] > 0 and og.counts(qdq)["DequantizeLinear"] > 0
    fused = og.counts(og.optimize(qdq, "all", tmp_path / "static_all.onnx"))
    assert fused["com.microsoft:QLinearConv"] == 53  # Q/DQ pairs fused into integer kernels
    fp32_bytes = deploy.size_bytes(files["exported"])
    for path in (dyn, qdq):
        assert deploy.size_bytes(path) < fp32_bytes / 3  # int8 weights: about a quarter
        agree = deploy.agreement(want, og.run(og.session(path, "all"), images))
        # int8: 256 levels per tensor through 53 layers of random weights; the bound is the
        # int8 regime's (tens of percent), not float32's
        assert agree.max_rel_diff < 0.2 and agree.top1 >= 0.5, (path.name, agree)
    with pytest.raises(ValueError, match="calibration batch"):
        og.quantize_static(files["exported"], tmp_path / "x.onnx", [])


def test_tflite_callable_runs_a_converted_graph():
    require("tensorflow")
    from labkit.frameworks.tensorflow import graphs as tg

    import tensorflow as tf

    rng = np.random.default_rng(4)
    kernel = tf.constant(rng.normal(size=(3, 3, 3, 5)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 8, 8, 3], tf.float32)])
    def conv_relu(x):
        return tf.nn.relu(tf.nn.conv2d(x, kernel, 1, "SAME"))

    flat = tf.lite.TFLiteConverter.from_concrete_functions(
        [conv_relu.get_concrete_function()], conv_relu
    ).convert()
    run = tg.tflite_callable(flat, threads=1)
    for batch in (2, 3, 2):  # resized when the batch changes
        x = rng.normal(size=(batch, 3, 8, 8)).astype(np.float32)  # NCHW, as every adapter takes
        want = conv_relu(tf.constant(x.transpose(0, 2, 3, 1))).numpy()
        # one 27-term convolution in two float32 runtimes: they differ by ~1e-7
        np.testing.assert_allclose(run(x), want, rtol=1e-4, atol=1e-5)


def test_grappler_runs_when_a_graph_is_first_instantiated_not_on_every_call():
    require("tensorflow")
    from labkit.frameworks.tensorflow import graphs as tg

    runs = dict(tg.grappler_runs())
    assert list(runs.values()) == [0, 1, 0, 0, 1, 0], runs  # first call per traced shape only


def test_run_executes_a_graph_as_it_is_without_grappler():
    """``run`` checks the graph it is given: a plain Session would optimise it first (Grappler's
    own log says so), ``run``'s session must not."""
    require("tensorflow")
    code = (
        "import numpy as np, tensorflow as tf, labkit, sys\n"
        "from labkit.frameworks.tensorflow import graphs as tg\n"
        "f = tf.function(lambda x: x * (tf.constant(2.0) * tf.constant(3.0)))\n"
        "x = np.arange(4, dtype=np.float32)\n"
        "cf = tg.trace(f, x); ins, outs = tg.io_names(cf); g = tg.graph_def(cf)\n"
        "print('@@ plain session', file=sys.stderr, flush=True)\n"
        "with tf.Graph().as_default() as graph:\n"
        "    tf.compat.v1.import_graph_def(g, name='')\n"
        "    with tf.compat.v1.Session(graph=graph) as s:\n"
        "        s.run(outs, {ins[0]: x})\n"
        "print('@@ run', file=sys.stderr, flush=True)\n"
        "assert (tg.run(g, ins, outs, x)[0] == x * 6).all()\n"
        "print('@@ end', file=sys.stderr, flush=True)\n"
    )
    env = {
        **os.environ,
        "TF_CPP_VMODULE": "meta_optimizer=1",
        "TF_CPP_MIN_LOG_LEVEL": "0",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    log = proc.stderr.split("@@ plain session", 1)[1]
    plain, rest = log.split("@@ run", 1)
    ours = rest.split("@@ end", 1)[0]
    from labkit.frameworks.tensorflow.graphs import GRAPPLER_STARTS

    assert GRAPPLER_STARTS in plain  # the check can see Grappler at work ...
    assert GRAPPLER_STARTS not in ours  # ... and run() does not let it touch the graph
