"""Graph optimisation made visible: node counts before and after, and the same outputs.

Real frameworks on ResNet-50 at 32x32 (TorchScript freeze / optimize_for_inference, ONNX Runtime's
optimisation levels on the PyTorch export, TensorFlow's traced and frozen graphs), and the
lesson's Markdown table.
"""

import os
import subprocess
import sys

from labkit import resnet
from labkit.frameworks._kit.graphs import OpCounts
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
    c = OpCounts.of(["Const", "Conv", "Conv", "Relu", "Const", "Const"], lambda k: k == "Const")
    assert (c.total, c.compute, c["Conv"], c["Missing"]) == (6, 3, 2, 0)
    assert list(c.by_kind) == ["Const", "Conv", "Relu"]  # most common first
    assert c.count("on") == 5 and c.top(1) == "Const x3"


def test_markdown_rows_round_floats_and_fill_missing_keys():
    md = graphs.markdown([{"level": "basic", "nodes": 120, "x": 1.23456}, {"level": "all"}])
    assert md.splitlines()[0].split("|")[1:4] == [" level ", " nodes ", " x "]
    assert "| basic | 120 | 1.23 |" in md and "| all |  |  |" in md
    assert graphs.markdown([]) == "_(no rows)_"


# ---------------------------------------------------------------------------------------------
# TorchScript


def test_torchscript_freeze_and_optimize_shrink_resnet50(weights, images):
    lt = require("torch")
    from labkit.frameworks.torch import graphs as tg

    import torch

    model = lt.build_resnet50(weights).eval()
    want = lt.predict(model, images)
    x = torch.from_numpy(images)
    with lt.quiet_torchscript(), torch.no_grad():
        traced = torch.jit.trace(model, x, check_trace=False)
        stages = {
            "traced": traced,
            "frozen": torch.jit.freeze(traced),
            "optimized": torch.jit.optimize_for_inference(torch.jit.freeze(traced)),
        }
    c = {k: tg.counts(m) for k, m in stages.items()}
    assert c["traced"].count("batch_norm") == 53 and c["traced"].count("convolution") == 53
    assert c["traced"]["prim::GetAttr"] > 100  # every weight read from the module
    assert tg.counts(traced.inlined_graph).by_kind == c["traced"].by_kind  # a graph or a module
    for after in ("frozen", "optimized"):
        assert c[after].total < c["traced"].total and c[after].compute < c["traced"].compute
        assert c[after].count("batch_norm") == 0 and c[after]["prim::GetAttr"] == 0
        with torch.inference_mode():
            assert close(stages[after](x).numpy(), want), after
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
    """launches() reads the program torch.compile really generates (as notebook 05 gets it)."""
    require("torch")
    from labkit.frameworks.torch import graphs as tg

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
            kinds[freezing] = tg.launches("\n".join(codes))
    finally:
        torch.compiler.reset()
    # unfrozen: the convolution is a library call; BatchNorm and ReLU run as one generated loop
    assert any(tg.is_generated(k) and "batch_norm" in k and "relu" in k for k in kinds[False])
    # frozen: BatchNorm is folded into the weights, nothing generated mentions it any more
    assert not any("batch_norm" in k for k in kinds[True]), kinds[True]
    assert len(kinds[True]) <= len(kinds[False])
    assert tg.inductor_kernels("\n".join(codes)).total == len(kinds[True])


# ---------------------------------------------------------------------------------------------
# ONNX Runtime


def ort_run(path, x):
    """The first output of a model file run as stored (graph optimisation off)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


@pytest.fixture(scope="module")
def onnx_files(weights, images, tmp_path_factory):
    """The PyTorch export that the onnxruntime adapter runs, and ORT's rewrite at each level."""
    require("torch")
    lo = require("onnxruntime")

    from labkit.frameworks.onnxruntime import graphs as og

    directory = tmp_path_factory.mktemp("onnx")
    files = {"exported": lo.model_file(weights)}
    files.update(
        {lv: og.optimize(files["exported"], lv, directory / f"{lv}.onnx") for lv in og.LEVELS}
    )
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
        assert close(ort_run(path, images), want), name


def test_onnxruntime_counts_a_small_conv_bn_relu_as_ort_rewrites_it(tmp_path):
    """Conv+BatchNorm folds at 'basic', Conv+Relu fuses at 'extended'; counts() names ORT's own
    operator with its domain."""
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
    src = tmp_path / "cbr.onnx"
    onnx.save(model, src)
    x = rng.normal(size=(1, 3, 8, 8)).astype(np.float32)
    want = ort_run(src, x)
    assert og.counts(model).by_kind == {"Conv": 1, "BatchNormalization": 1, "Relu": 1}
    files = {lv: og.optimize(src, lv, tmp_path / f"{lv}.onnx") for lv in ("basic", "extended")}
    assert og.counts(files["basic"]).by_kind == {"Conv": 1, "Relu": 1}
    assert og.counts(files["extended"]).by_kind == {"com.microsoft:FusedConv": 1}
    assert og.counts(files["extended"]).compute == 1
    for p in files.values():  # one 27-term convolution: fusion moves it by ~1e-7
        np.testing.assert_allclose(ort_run(p, x), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="valid levels are disabled, basic"):
        og.optimize(src, "max", tmp_path / "max.onnx")


def test_memory_steps_of_the_exported_resnet50(onnx_files, images):
    from labkit.frameworks.onnxruntime import graphs as og

    files, _ = onnx_files
    steps, sizes, outputs = og.memory_steps(files["basic"], images)
    assert len(steps) == og.counts(files["basic"]).total and outputs == ["logits"]
    assert sizes["logits"] == BATCH * 1000 * 4
    assert {t for s in steps for t in s.writes} <= set(sizes)  # every tensor written is sized
    # the biggest activations: the stem's 64 x 16 x 16 (and layer1's 256 x 8 x 8) float32 maps
    assert max(sizes.values()) == BATCH * 64 * (SIZE // 2) ** 2 * 4


# ---------------------------------------------------------------------------------------------
# TensorFlow: counting, freezing and running GraphDefs; when Grappler runs


def test_counts_and_run_read_a_traced_graph_as_it_is():
    require("tensorflow")
    from labkit.frameworks.tensorflow import graphs as tg

    import tensorflow as tf

    @tf.function
    def f(x):
        scale = tf.constant(2.0) * tf.constant(3.0)  # foldable
        unused = tf.sin(x) * 100.0  # noqa: F841 - dead code
        return x * scale

    x = np.arange(4, dtype=np.float32)
    cf = f.get_concrete_function(tf.TensorSpec(x.shape, tf.float32))
    ins, outs = [t.name for t in cf.inputs], [t.name for t in cf.outputs]
    before = cf.graph.as_graph_def()
    c = tg.counts(before)
    assert (c["Mul"], c["Sin"], c["Placeholder"]) == (3, 1, 1)
    assert c.compute == c.total - c["Const"] - c["Placeholder"] - c["Identity"]
    np.testing.assert_allclose(tg.run(before, ins, outs, x)[0], x * 6)
    with pytest.raises(ValueError, match="the graph takes 1 input"):
        tg.run(before, ins, outs)


def test_freeze_turns_resnet50s_variables_into_constants(weights, images):
    ltf = require("tensorflow")
    from labkit.frameworks.tensorflow import graphs as tg

    import tensorflow as tf

    model = ltf.build_resnet50(weights)
    want = ltf.predict(model, images)
    x = ltf.to_nhwc(images)
    cf = tf.function(lambda t: model(t, training=False)).get_concrete_function(
        tf.TensorSpec(x.shape, tf.float32)
    )
    ins = [t.name for t in cf.inputs if t.dtype != tf.resource]
    outs = [t.name for t in cf.outputs]
    traced, frozen = tg.counts(cf.graph.as_graph_def()), tg.freeze(cf)
    c = tg.counts(frozen)
    assert traced["ReadVariableOp"] > 200 and c["ReadVariableOp"] == 0
    assert c["Conv2D"] == 53 and c["Rsqrt"] > 0  # BatchNorm still there: nothing optimised yet
    assert close(tg.run(frozen, ins, outs, x)[0], want)


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
        "cf = f.get_concrete_function(tf.TensorSpec([4], tf.float32))\n"
        "ins, outs = [t.name for t in cf.inputs], [t.name for t in cf.outputs]\n"
        "g = cf.graph.as_graph_def()\n"
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
