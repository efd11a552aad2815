"""The PaddlePaddle adapter: the same ResNet-50 numbers as PyTorch in every mode, and the process
it may not share (after TensorFlow).

PaddlePaddle is imported in this process before any test runs (conftest.import_first: importing
it after TensorFlow crashes the process, and other test files load TensorFlow first). Logits and
a training step against PyTorch's float64 reference, with 1 and with 2 threads, are checked in
tests/test_resnet_crosscheck.py, in fresh processes.
"""

import os
import subprocess
import sys

from labkit import recipe, resnet
from labkit.frameworks import contract

import numpy as np
import pytest
from conftest import ROOT, assert_float32_close, notebook_script, require

SIZE = 32  # the smallest image ResNet-50 takes: keeps the suite fast


@pytest.fixture(scope="module")
def pd_adapter():
    return require("paddle")


@pytest.fixture(scope="module")
def weights():
    return resnet.init_weights(seed=0)


@pytest.fixture(scope="module")
def model(pd_adapter, weights):
    return pd_adapter.build_resnet50(weights)


def test_parameters_follow_the_spec(pd_adapter, model):
    state = model.state_dict()
    shapes = resnet.param_shapes()
    assert set(state) == {pd_adapter.native_name(n) for n in shapes}
    for name, shape in shapes.items():
        native = tuple(state[pd_adapter.native_name(name)].shape)
        assert native == (shape[::-1] if name == "fc.weight" else shape), name
    trainable = [p for p in model.parameters() if not p.stop_gradient]
    assert sum(int(np.prod(p.shape)) for p in trainable) == 25_557_032
    assert pd_adapter.native_name("layer2.0.downsample.1.running_var") == (
        "layer2.0.downsample.1._variance"
    )
    assert not model.training  # built in eval mode


@pytest.mark.parametrize(
    "task",
    # the inference tasks capture the graph again (10 s each): make test-standard runs them;
    # under smoke, train runs both captures
    [t if t == "train" else pytest.param(t, marks=pytest.mark.costly) for t in contract.TASKS],
)
def test_prepare_runs_every_mode(pd_adapter, weights, task):
    """dygraph and both to_static captures compute the same function."""
    batch = 1 if task == "latency" else 2
    outputs = {}
    for mode in pd_adapter.SPEC.modes:
        prepared = pd_adapter.prepare(weights, mode, task, batch, image_size=SIZE)
        assert prepared.batch_size == batch and prepared.notes
        outputs[mode] = [np.asarray(prepared.step()) for _ in range(2)]
    if task == "train":  # losses before each update: the weights moved; the same in all modes
        for mode, (first, second) in outputs.items():
            assert first.shape == () and np.isfinite(first) and second != first, mode
        for mode in ("sot", "ast"):
            np.testing.assert_allclose(outputs[mode], outputs["dygraph"], rtol=1e-5)
    else:
        images, _ = resnet.random_batch(batch, SIZE, seed=0)  # prepare's batch
        for mode, (first, second) in outputs.items():
            assert first.shape == (batch, 1000), mode
            np.testing.assert_array_equal(first, second)
            assert_float32_close(first, weights, images, f"{mode} {task}")


def test_the_training_step_reads_back_the_recipe(pd_adapter, weights):
    """The step's optimizer and loss are read back; train_step moves the weights by the
    recipe's update (the full check against float64: test_resnet_crosscheck)."""
    images, labels = resnet.random_batch(2, SIZE, seed=3)
    loss, new = pd_adapter.train_step(weights, images, labels)
    assert np.isfinite(loss) and set(new) == set(weights)
    trainable = [n for n in weights if resnet.is_trainable(n)]
    moved = [n for n in trainable if not np.array_equal(new[n], weights[n])]
    assert len(moved) == len(trainable)
    _, doubled = pd_adapter.train_step(weights, images, labels, lr=2 * recipe.TRAIN.lr)
    step = np.concatenate([(new[n] - weights[n]).ravel() for n in trainable])
    twice = np.concatenate([(doubled[n] - weights[n]).ravel() for n in trainable])
    # the first momentum step is w -= lr * g: twice the rate, twice the update (float32 rounding
    # of w + update and the summation order of the gradients leave about 1e-4 of it)
    assert np.linalg.norm(twice - 2 * step) < 1e-2 * np.linalg.norm(2 * step)


def test_bf16_on_cpu_is_unsupported_with_paddles_reason(pd_adapter, weights):
    with pytest.raises(contract.Unsupported, match=r"bfloat16.*CUDAPlace, XPUPlace"):
        pd_adapter.prepare(weights, "dygraph", "latency", 1, "bf16", SIZE)


def test_the_gpu_needs_the_gpu_wheel(pd_adapter, weights):
    with pytest.raises(contract.Unsupported, match="paddlepaddle-gpu"):
        pd_adapter.prepare(weights, "dygraph", "latency", 1, device="gpu", image_size=SIZE)


# ---- the process PaddlePaddle may not share ------------------------------------------------


def _python(code: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter, with ``env`` (default: this process's environment)."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        env=os.environ if env is None else env,
        check=False,
    )


def test_after_tensorflow_the_registry_refuses_paddle_instead_of_crashing():
    """``import tensorflow`` then ``import paddle`` is a segmentation fault (exit 139); the
    registry names the problem and both fixes instead. The other order works."""
    require("tensorflow")
    refused = _python(
        "import labkit, tensorflow, labkit.frameworks as f\n"
        "try:\n    f.get('paddle')\nexcept f.FrameworkUnavailable as e:\n    print('refused:', e)"
    )
    assert refused.returncode == 0, refused.stderr[-2000:]
    said = refused.stdout
    assert "refused: PaddlePaddle cannot be imported in this process: tensorflow" in said
    assert "fresh process" in said and "labkit.frameworks.get('paddle') before" in said
    both = _python(
        "import labkit, labkit.frameworks as f\n"
        "order = f.import_order(['tensorflow', 'paddle'])\n"
        "for n in order: f.get(n)\nprint(order)"
    )
    assert both.returncode == 0, both.stderr[-2000:]
    assert both.stdout.strip().splitlines()[-1] == "['paddle', 'tensorflow']"


@pytest.mark.parametrize("given", [None, "3"])
def test_importing_paddle_leaves_the_thread_variables_as_they_were(given):
    """Paddle sets OMP_NUM_THREADS=1 as it loads; every child process would inherit it."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    if given:
        env["OMP_NUM_THREADS"] = given
    out = _python(
        "import os, labkit.frameworks as f; f.get('paddle'); "
        "print(os.environ.get('OMP_NUM_THREADS'))",
        env,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == str(given)


# ---- what to_static makes of Python (notebook 04, notebooks/capture_modes.py) ----------


LOG: list = []  # what double_until appends to: a global, as a notebook cell's would be


def double_until(x):
    LOG.append("ran")
    print("inside")
    if x.sum() > 0:
        x = x * 2
    else:
        x = -x
    steps = 0
    while x.sum() < 100:
        x = x * 2
        steps += 1
    return x, steps


def test_source_conversion_makes_control_flow_operators_of_the_program(pd_adapter):
    """What source conversion makes of control flow, read from Paddle's own program."""
    import paddle

    LOG.clear()
    converted = paddle.jit.to_static(double_until, full_graph=True, backend=None)
    steps = [int(converted(paddle.to_tensor(np.array(v, np.float32)))[1]) for v in ([1.0], [-70.0])]
    assert steps == [6, 1] and LOG == ["ran"]  # right answers; the Python ran once, converting
    ops = [op.name() for op in converted.concrete_program.main_program.global_block().ops]
    assert ops.count("pd_op.if") == ops.count("pd_op.while") == 1


@pytest.mark.costly  # cold caches (20 s); notebook 04 shows SOT's breaks under smoke
def test_bytecode_capture_reports_its_graph_breaks_from_a_cold_cache_every_time(pd_adapter):
    pg = notebook_script("capture_modes")  # notebook 04's
    import paddle

    calls = [(paddle.to_tensor(np.array(v, np.float32)),) for v in ([1.0], [-70.0])]
    LOG.clear()
    first, again = pg.sot_capture(double_until, calls), pg.sot_capture(double_until, calls)
    assert [s for _, s in first.outputs] == [6, 1] and len(LOG) == 4  # Python ran every call
    assert first.printed.count("inside") == 2 and any("print" in b for b in first.breaks)
    assert first.resumes > 0  # cut where a tensor decides the path
    assert (again.translated, again.breaks) == (first.translated, first.breaks)
    plain = pg.sot_capture(lambda x: x * 2 + 1, calls)
    assert (plain.translated, plain.resumes, plain.breaks) == (1, 0, [])
