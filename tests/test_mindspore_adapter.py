"""The MindSpore adapter: the same ResNet-50 numbers as PyTorch, both modes."""

import os
import subprocess
import sys

from labkit import resnet
from labkit.frameworks import contract

import numpy as np
import pytest
from conftest import ROOT, assert_float32_close, notebook_script, require

SIZE = 32  # the smallest image ResNet-50 takes: keeps the suite fast


@pytest.fixture(scope="module")
def ms_adapter():
    return require("mindspore")


@pytest.fixture(scope="module")
def weights():
    return resnet.init_weights(seed=0)


@pytest.fixture(scope="module")
def net(ms_adapter, weights):
    return ms_adapter.build_resnet50(weights)


def test_parameters_follow_the_spec(ms_adapter, net):
    params = dict(net.parameters_and_names())
    shapes = resnet.param_shapes()
    assert set(params) == {ms_adapter.native_name(n) for n in shapes}
    for name, shape in shapes.items():
        assert tuple(params[ms_adapter.native_name(name)].shape) == shape, name
    trainable = {p.name for p in net.trainable_params()}
    assert trainable == {ms_adapter.native_name(n) for n in shapes if resnet.is_trainable(n)}
    assert sum(int(np.prod(p.shape)) for p in net.trainable_params()) == 25_557_032
    assert (
        ms_adapter.native_name("layer2.0.downsample.1.running_var")
        == "layer2.0.downsample.1.moving_variance"
    )
    assert not net.training  # built in eval mode


def test_round_trip_is_exact(ms_adapter, net, weights):
    back = ms_adapter.to_canonical(net)
    assert set(back) == set(weights)
    for name, arr in weights.items():
        assert back[name].dtype == np.float32
        np.testing.assert_array_equal(back[name], arr, err_msg=name)


def test_max_pool_pads_like_torch(ms_adapter):
    import mindspore as ms

    require("torch")
    import torch

    x = -1.0 - np.abs(np.random.default_rng(0).standard_normal((2, 3, 9, 9), dtype=np.float32))
    ours = ms_adapter.max_pool(ms.Tensor(x)).asnumpy()
    theirs = torch.nn.functional.max_pool2d(torch.from_numpy(x), 3, 2, 1).numpy()
    np.testing.assert_array_equal(ours, theirs)  # a zero-padded pool would return 0 at borders


# Logits and a training step against PyTorch's float64 reference, with 1 and with 2 threads:
# tests/test_resnet_crosscheck.py (in fresh processes, so the thread count is the one asked).


@pytest.mark.parametrize("task", contract.TASKS)
def test_prepare_runs_every_mode(ms_adapter, weights, task):
    batch = 1 if task == "latency" else 2
    outputs = {}
    for mode in ms_adapter.SPEC.modes:
        prepared = ms_adapter.prepare(weights, mode, task, batch, image_size=SIZE)
        assert prepared.batch_size == batch and prepared.notes
        outputs[mode] = [np.asarray(prepared.step()) for _ in range(2)]
    if task == "train":  # scalar losses; the weights moved between the steps; same in both modes
        for mode, (first, second) in outputs.items():
            assert first.shape == () and np.isfinite(first) and second != first, mode
        # the loss is computed before the update: a forward quantity, where float32 rounding
        # is about 1e-7 of it (a bug in the step would change the second loss by far more)
        np.testing.assert_allclose(outputs["graph"], outputs["pynative"], rtol=1e-5)
    else:
        images, _ = resnet.random_batch(batch, SIZE, seed=0)  # prepare's batch
        for mode, (first, second) in outputs.items():
            assert first.shape == (batch, 1000), mode
            np.testing.assert_array_equal(first, second)
            assert_float32_close(first, weights, images, f"{mode} {task}")


def test_prepare_rejects_bad_choices(ms_adapter, weights):
    good = {
        "mode": "graph",
        "task": "latency",
        "batch_size": 1,
        "precision": "fp32",
        "image_size": SIZE,
    }
    for key, bad, valid in [
        ("mode", "eager", "pynative, graph"),
        ("task", "inference", "latency, throughput, train"),
        ("precision", "fp16", "fp32, bf16"),
        ("device", "tpu", "cpu, gpu"),
    ]:
        with pytest.raises(ValueError, match=f"{bad}.*{valid}"):
            ms_adapter.prepare(weights, **{**good, key: bad})
    with pytest.raises(ValueError, match=">= 1"):
        ms_adapter.prepare(weights, **{**good, "batch_size": 0})
    with pytest.raises(ValueError, match="multiple of 32"):
        ms_adapter.prepare(weights, **{**good, "image_size": 40})


def test_bf16_on_cpu_is_unsupported_with_mindspores_reason(ms_adapter, weights):
    with pytest.raises(
        contract.Unsupported, match=r"cannot run bf16 kernels on this CPU.*Conv2D.*BFloat16"
    ):
        ms_adapter.prepare(weights, "pynative", "latency", 1, "bf16", SIZE)


def test_gpu_without_a_gpu_plugin_says_how_to_install(ms_adapter, weights):
    import mindspore as ms

    if ms.device_context.gpu.is_available():
        pytest.skip("MindSpore's GPU plugin loads here")
    with pytest.raises(contract.Unsupported, match="CUDA.*mindspore.cn/install"):
        ms_adapter.prepare(weights, "pynative", "latency", 1, device="gpu", image_size=SIZE)


def test_tensorflow_then_mindspore_in_one_process():
    """labkit imported first sets protobuf's pure-Python mode, so TF may be imported first.

    The same fresh process checks that MindSpore's thread count can be set once only.
    """
    require("tensorflow")
    code = (
        "import os, labkit, tensorflow as tf\n"
        "assert os.environ['PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION'] == 'python'\n"
        "from labkit import frameworks\n"
        "m = frameworks.get('mindspore')\n"
        "m.set_threads(1); m.set_threads(1)\n"  # the same count again is a no-op
        "try:\n    m.set_threads(2)\nexcept RuntimeError as e:\n    print('once:', e)\n"
        "import mindspore as ms, numpy as np\n"
        "a = ms.ops.add(ms.Tensor(np.ones(3, np.float32)), 1).asnumpy()\n"
        "b = tf.reduce_sum(tf.ones(3)).numpy()\n"
        "print('ok', a.sum() + b, m.version() == ms.__version__)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "ok 9.0 True" in proc.stdout
    assert "once: MindSpore's CPU thread count is already 1" in proc.stdout


def test_jit_compiles_once_per_python_scalar_value_unless_mutable(ms_adapter):
    msg = notebook_script("capture_modes")  # notebook 04's
    import mindspore as ms

    @ms.jit
    def scale(x, k):
        return x * k

    x = ms.Tensor(np.ones(3, np.float32))

    def compiles(args):
        before = msg.compiled_graphs()
        outs = [float(scale(x, k).asnumpy()[0]) for k in args]
        return msg.compiled_graphs() - before, outs

    assert compiles([2.0, 3.0, 2.0, 4.0]) == (3, [2.0, 3.0, 2.0, 4.0])  # a constant per value
    assert compiles([ms.mutable(v) for v in (5.0, 6.0, 7.0)]) == (1, [5.0, 6.0, 7.0])
    assert compiles([ms.Tensor(v) for v in (8.0, 9.0)]) == (1, [8.0, 9.0])


def test_jit_capture_modes_of_the_installed_mindspore(ms_adapter):
    msg = notebook_script("capture_modes")  # notebook 04's
    import mindspore as ms

    for mode in msg.CAPTURE_MODES:  # the pinned list is what the installed jit accepts
        ms.jit(lambda x: x, capture_mode=mode)
    with pytest.raises(ValueError, match="capture_mode"):
        ms.jit(lambda x: x, capture_mode="?")


def test_capture_mode_demo_runs_each_mode_in_a_fresh_process(ms_adapter):
    msg = notebook_script("capture_modes")  # notebook 04's
    rows = msg.capture_mode_demo()
    assert list(rows) == list(msg.CAPTURE_MODES)
    ast, trace = rows["ast"], rows["trace"]
    # ast parses the source: the Python never runs, print is a graph op, the `if` stays an `if`
    assert (ast["python_runs"], ast["prints"], ast["error"]) == (0, 3, "")
    assert ast["outputs"] == list(msg.DEMO_EAGER)
    # trace runs the Python once and records the branch of the first input only
    assert (trace["python_runs"], trace["prints"], trace["error"]) == (1, 1, "")
    assert trace["outputs"][:2] == list(msg.DEMO_EAGER)[:2]
    assert trace["outputs"][2] != msg.DEMO_EAGER[2]
