"""The TensorFlow adapter: the Keras ResNet-50 against the spec and the PyTorch reference, its
three execution modes as benchmark cells.

Small images (32/64 px) and 10 classes keep this file cheap; the architecture is the full one.
"""

import os
import platform
import subprocess
import sys

from labkit import resnet
from labkit.frameworks import contract
from labkit.frameworks.crosscheck import max_rel_diff

import numpy as np
import pytest
from conftest import ROOT, assert_float32_close, require

pytestmark = pytest.mark.slow

CLASSES = 10
MODE_TASKS = [("latency", 1), ("throughput", 2), ("train", 4)]  # train batch = train_batch
SIZE = 32


@pytest.fixture(scope="module")
def tfa():
    return require("tensorflow")


@pytest.fixture(scope="module")
def weights():
    return resnet.init_weights(seed=0, num_classes=CLASSES)


@pytest.fixture(scope="module")
def model(tfa, weights):
    return tfa.build_resnet50(weights)


@pytest.fixture(scope="module")
def train_batch():
    return resnet.random_batch(4, SIZE, num_classes=CLASSES)


@pytest.fixture(scope="module")
def stepped(tfa, weights, train_batch):
    """The eager train_step on the training batch: (loss, new weights)."""
    return tfa.train_step(weights, *train_batch)


# ----------------------------------------------------------------------------- the model


def test_parameter_count_and_names_follow_the_spec(tfa):
    net = tfa.resnet50(num_classes=1000)
    assert sum(int(np.prod(v.shape)) for v in net.trainable_variables) == 25_557_032
    assert len(net.trainable_variables) == sum(map(resnet.is_trainable, resnet.param_shapes()))
    for conv in resnet.all_convs():
        layer = net.get_layer(tfa.keras_name(conv.conv))
        assert tuple(layer.kernel.shape) == (conv.kernel, conv.kernel, conv.cin, conv.cout)
        assert net.get_layer(tfa.keras_name(conv.bn)).epsilon == resnet.BN_EPS
    assert tfa.keras_name("layer2.0.downsample.0") == "layer2_0_downsample_0"
    assert tuple(net.get_layer("fc").kernel.shape) == (2048, 1000)


def test_canonical_round_trip_is_exact(tfa, model, weights):
    back = tfa.to_canonical(model)
    assert list(back) == list(resnet.param_shapes(CLASSES))
    for name, arr in weights.items():
        assert back[name].dtype == np.float32
        np.testing.assert_array_equal(back[name], arr, err_msg=name)


# Logits and a training step against PyTorch's float64 reference, with 1 and with 2 threads:
# tests/test_resnet_crosscheck.py (in fresh processes, so the thread count is the one asked).


def test_keras_folds_the_biased_batch_variance_into_running_var(tfa, weights, stepped):
    """The one convention where Keras and PyTorch differ by design (which is why the cross-
    check leaves running variances out): Keras's update uses the biased batch variance."""
    torch_adapter = require("torch")
    ref = torch_adapter.train_step(weights, *resnet.random_batch(4, SIZE, num_classes=CLASSES))[1]
    name = "layer4.2.bn3.running_var"
    n = 4 * 1 * 1  # values per channel in layer4 at 32 px: batch 4, 1 x 1
    # running = 0.9 old + 0.1 var: the batch-variance terms differ by the factor (n - 1) / n
    ours, theirs = stepped[1][name] - 0.9 * weights[name], ref[name] - 0.9 * weights[name]
    np.testing.assert_allclose(ours, theirs * (n - 1) / n, rtol=1e-3)


# ----------------------------------------------------------------------------- benchmark cells


@pytest.mark.parametrize(
    "mode",
    # XLA compiles each task's graph (20 s): make test-standard; under smoke test_runner runs
    # an XLA cell and checks it
    ["eager", *(pytest.param(m, marks=pytest.mark.costly) for m in ("function", "xla"))],
)
def test_every_task_runs_in_every_mode_and_agrees_with_eager(tfa, model, weights, stepped, mode):
    for task, batch in MODE_TASKS:
        prepared = tfa.prepare(weights, mode, task, batch, image_size=SIZE)
        assert isinstance(prepared, contract.Prepared) and prepared.batch_size == batch
        assert dict(tfa.SPEC.mode_notes)[mode] in prepared.notes
        first, second = prepared.step(), prepared.step()
        images, _ = resnet.random_batch(batch, SIZE, num_classes=CLASSES)
        if task == "train":  # the same first step as the eager train_step, then a lower loss
            assert float(first) == pytest.approx(stepped[0], rel=1e-4)
            assert float(second) < float(first)
        else:
            assert first.shape == (batch, CLASSES)
            assert_float32_close(first, weights, images, f"{mode} {task}")
            np.testing.assert_array_equal(first, second)


def test_function_mode_traces_once(tfa, model):
    fn = tfa.step_fn(model, "function")
    for seed in range(3):
        images, _ = resnet.random_batch(2, SIZE, seed=seed)
        fn(tfa.to_nhwc(images))
    assert fn.experimental_get_tracing_count() == 1


def prepare_or_skip(tfa, *args, **kwargs):
    """``prepare``, or a skip saying why where this CPU's kernels cannot run the precision."""
    try:
        return tfa.prepare(*args, **kwargs)
    except contract.Unsupported as exc:
        if "kernels on this CPU" in str(exc):
            pytest.skip(str(exc))
        raise


def test_bf16_cell_is_close_and_leaves_the_global_policy_alone(tfa, model, weights):
    prepared = prepare_or_skip(tfa, weights, "eager", "latency", 1, "bf16", SIZE)
    logits = prepared.step()
    assert logits.dtype == np.float32 and "mixed_bfloat16" in prepared.notes
    images, _ = resnet.random_batch(1, SIZE, num_classes=CLASSES)
    err = max_rel_diff(logits, tfa.predict(model, images))
    assert 0 < err < 5e-2  # bfloat16 keeps 8 bits of mantissa: close, not equal
    import keras  # here, not at collection: PaddlePaddle must load before TensorFlow (conftest)

    assert keras.config.dtype_policy().name == "float32"


BF16_UNDER_CAP = """
import numpy as np, labkit, sys
from labkit import frameworks, resnet
from labkit.frameworks import contract
tfa = frameworks.get("tensorflow")
import tensorflow as tf
try:
    tf.nn.conv2d(tf.ones([1, 8, 8, 3], tf.bfloat16), tf.ones([3, 3, 3, 4], tf.bfloat16), 1, "SAME")
    conv = "runs"
except Exception as exc:
    conv = type(exc).__name__
w = resnet.init_weights(seed=0, num_classes=10)
try:
    tfa.prepare(w, "eager", "latency", 1, "bf16", 32).step()
    print("@@", conv, "prepared")
except contract.Unsupported as exc:
    print("@@", conv, "unsupported", exc)
"""


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86 only")
def test_bf16_is_offered_exactly_where_a_bf16_convolution_runs_under_an_avx2_cap(tmp_path):
    """With oneDNN held to AVX2 (most laptops' kernels) TensorFlow 2.21's bf16 convolution may
    have no kernel: then the cell is unsupported with TensorFlow's reason and the cap named."""
    env = {**os.environ, "ONEDNN_MAX_CPU_ISA": "AVX2", "LABKIT_CACHE_DIR": str(tmp_path)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", BF16_UNDER_CAP],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("@@ "))
    conv, outcome = line.split()[1:3]
    assert (conv == "runs") == (outcome == "prepared"), line
    if outcome == "unsupported":
        assert "cannot run bf16 kernels on this CPU" in line and "ONEDNN_MAX_CPU_ISA=AVX2" in line
        assert list(tmp_path.glob("kernels-*.json"))  # probed once, cached


def test_gpu_cell_runs_or_says_how_to_get_one(tfa, weights):
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        prepared = tfa.prepare(weights, "eager", "latency", 1, image_size=SIZE, device="gpu")
        assert prepared.step().shape == (1, CLASSES) and "GPU" in prepared.notes
    else:
        with pytest.raises(contract.Unsupported, match=r"tensorflow\[and-cuda\]"):
            tfa.prepare(weights, "eager", "latency", 1, image_size=SIZE, device="gpu")


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"mode": "graph"}, "valid modes are eager, function, xla"),
        ({"task": "serve"}, "valid tasks are latency, throughput, train"),
        ({"precision": "fp16"}, "valid precisions are fp32, bf16"),
        ({"device": "tpu"}, "valid devices are cpu, gpu"),
        ({"image_size": 40}, "multiple of 32"),
    ],
)
def test_bad_cell_choices_list_the_valid_ones(tfa, weights, kwargs, message):
    args = {"mode": "eager", "task": "latency", "batch_size": 1, "image_size": SIZE, **kwargs}
    with pytest.raises(ValueError, match=message):
        tfa.prepare(weights, **args)


def test_threads_cannot_change_once_tensorflow_runs(tfa, model):
    import tensorflow as tf

    current = tf.config.threading.get_intra_op_parallelism_threads()
    with pytest.raises(RuntimeError, match=r"call set_threads\(\d+\) before TensorFlow runs"):
        tfa.set_threads(current + 1)
    with pytest.raises(ValueError, match=">= 1"):
        tfa.set_threads(0)
