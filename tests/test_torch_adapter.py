"""The PyTorch adapter: the hand-written ResNet-50 against the spec, bad input, every benchmark
mode x task at smoke size, and the ONNX export run by ONNX Runtime.

Small images (32/64 px) keep this file cheap; the architecture is the full one. Compiling
is the expensive part (torch.compile: about 30 s per inference graph and longer for a training
step on 2 cores; TorchScript: seconds), so under the smoke profile each mode runs each code
path once (latency and throughput share one path: only the batch differs), and the remaining
combinations run under the standard and full profiles. The smoke compile cell is the one the
benchmark runner's smoke cells build (seed-0 weights, batch 1, 32 px), so Inductor's on-disk
cache can serve it.
"""

from labkit import resnet
from labkit.frameworks import contract
from labkit.frameworks.crosscheck import max_rel_diff

import numpy as np
import onnx
import pytest
from conftest import assert_float32_close, inductor_launches, require

pytestmark = pytest.mark.slow

CLASSES = 1000
SIZE = 32
# another compiled graph (or export) costs too much for the smoke profile: skipped there
# (conftest), run by `make test-standard` (LABKIT_PROFILE=standard)
COSTLY_IN_SMOKE = pytest.mark.costly


@pytest.fixture(scope="module")
def T():
    return require("torch")


@pytest.fixture(scope="module")
def weights():
    return resnet.init_weights(seed=0, num_classes=CLASSES)


def prepare_or_skip(T, *args, **kwargs):
    """``prepare``, or a skip saying why where this CPU's kernels cannot run the precision."""
    try:
        return T.prepare(*args, **kwargs)
    except contract.Unsupported as exc:
        if "kernels on this CPU" in str(exc):
            pytest.skip(str(exc))
        raise


# ----------------------------------------------------------------------------- the model


def test_parameters_follow_the_spec(T):
    model = T.ResNet50(1000)
    spec = resnet.param_shapes(1000)
    trainable = {n: tuple(p.shape) for n, p in model.named_parameters() if p.requires_grad}
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == 25_557_032
    assert trainable == {n: s for n, s in spec.items() if resnet.is_trainable(n)}
    buffers = {
        n: tuple(b.shape) for n, b in model.named_buffers() if not n.endswith("num_batches_tracked")
    }
    assert buffers == {n: s for n, s in spec.items() if not resnet.is_trainable(n)}
    assert all(m.eps == resnet.BN_EPS for m in model.modules() if isinstance(m, T.nn.BatchNorm2d))


def test_canonical_round_trip_is_exact(T, weights):
    model = T.build_resnet50(weights)
    assert not model.training
    back = T.to_canonical(model)
    assert list(back) == list(resnet.param_shapes(CLASSES))
    for name, arr in weights.items():
        assert back[name].dtype == np.float32
        np.testing.assert_array_equal(back[name], arr, err_msg=name)


def test_eval_logits_have_a_sensible_scale(T, weights):
    """Random weights, but neither vanishing nor exploding logits, and each image its own."""
    images, _ = resnet.random_batch(2, 64, seed=5, num_classes=CLASSES)
    logits = T.predict(T.build_resnet50(weights), images)
    assert logits.shape == (2, CLASSES) and np.isfinite(logits).all()
    assert 0.01 < np.abs(logits).max() < 100
    assert np.abs(logits[0] - logits[1]).max() > 1e-4


# ----------------------------------------------------------------------------- benchmark modes


def test_prepare_rejects_unknown_choices(T, weights):
    good = {
        "mode": "eager",
        "task": "latency",
        "batch_size": 1,
        "precision": "fp32",
        "image_size": SIZE,
        "device": "cpu",
    }
    for key, bad, valid in [
        ("mode", "jit", "eager, compile, torchscript"),
        ("task", "infer", "latency, throughput, train"),
        ("precision", "fp16", "fp32, bf16"),
        ("device", "tpu", "cpu, gpu"),
    ]:
        with pytest.raises(ValueError, match=f"unknown {key} '{bad}'.*{valid}"):
            T.prepare(weights, **{**good, key: bad})
    with pytest.raises(ValueError, match="batch_size must be an integer >= 1"):
        T.prepare(weights, **{**good, "batch_size": 0})


def test_gpu_without_cuda_is_unsupported_with_the_reason(T, weights):
    if T.torch.cuda.is_available():
        prepared = T.prepare(weights, "eager", "latency", 1, image_size=SIZE, device="gpu")
        assert prepared.step().device.type == "cuda"
        return
    with pytest.raises(contract.Unsupported, match="no CUDA GPU"):
        T.prepare(weights, "eager", "latency", 1, image_size=SIZE, device="gpu")


INFERENCE = [
    ("eager", "latency", 1, "fp32"),
    ("eager", "throughput", 2, "fp32"),
    ("eager", "latency", 1, "bf16"),
    ("torchscript", "latency", 1, "fp32"),
    ("torchscript", "latency", 1, "bf16"),
    pytest.param("torchscript", "throughput", 2, "fp32", marks=COSTLY_IN_SMOKE),
    ("compile", "latency", 1, "fp32"),
    pytest.param("compile", "throughput", 2, "fp32", marks=COSTLY_IN_SMOKE),
    pytest.param("compile", "latency", 1, "bf16", marks=COSTLY_IN_SMOKE),
]


@pytest.mark.parametrize("mode,task,batch,precision", INFERENCE)
def test_inference_modes_agree_with_eager(T, weights, mode, task, batch, precision):
    prepared = prepare_or_skip(T, weights, mode, task, batch, precision, image_size=SIZE)
    assert isinstance(prepared, contract.Prepared) and prepared.batch_size == batch
    out = prepared.step()
    images, _ = resnet.random_batch(batch, SIZE, seed=0, num_classes=CLASSES)  # prepare's batch
    ref = T.predict(T.build_resnet50(weights), images)
    assert tuple(out.shape) == (batch, CLASSES)
    if precision == "fp32":
        assert_float32_close(out.numpy(), weights, images, f"{mode} {task}")
    else:  # bfloat16 keeps 8 bits of mantissa: close, not equal
        assert out.dtype == T.torch.bfloat16 and "autocast" in prepared.notes
        assert max_rel_diff(out.float().numpy(), ref) < 5e-2
    np.testing.assert_array_equal(prepared.step().float().numpy(), out.float().numpy())


def test_frozen_compile_folds_batchnorm_into_the_convolution(T):
    """bf16 inference compiles with Inductor's freezing (frozen): with torch 2.13 the
    config flag folds BatchNorm, ``options={"freezing": True}`` does not (checked here too)."""
    import torch
    from torch._inductor.utils import run_and_get_code

    torch.manual_seed(0)
    conv, bn = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
    block = torch.nn.Sequential(conv, bn, torch.nn.ReLU()).eval()
    with torch.no_grad():  # running statistics far from (0, 1), so that a fold shows
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    with torch.no_grad():
        want = block.double()(x).numpy()  # a float64 reference
    block.float()
    launched = {}
    try:
        for name, net in [
            ("options", torch.compile(block, options={"freezing": True})),
            ("frozen", T.frozen(block)),
        ]:
            torch.compiler.reset()
            with torch.inference_mode(), torch._inductor.config.patch(compile_threads=1):
                got, codes = run_and_get_code(net, x.float())
            assert np.abs(got.double().numpy() - want).max() < 1e-4, name
            launched[name] = inductor_launches("\n".join(codes))
    finally:
        torch.compiler.reset()
    assert torch._inductor.config.freezing is False  # the flag is put back after the call
    assert any("batch_norm" in k for k in launched["options"]), launched  # not folded
    assert not any("batch_norm" in k for k in launched["frozen"]), launched  # folded
    assert any("convolution" in k and not k.startswith("cpp_fused") for k in launched["frozen"])


TRAIN = [
    ("eager", "fp32"),
    ("torchscript", "fp32"),
    ("eager", "bf16"),
    pytest.param("torchscript", "bf16", marks=COSTLY_IN_SMOKE),
    pytest.param("compile", "fp32", marks=COSTLY_IN_SMOKE),
    pytest.param("compile", "bf16", marks=COSTLY_IN_SMOKE),
]


TRAIN_BATCH = 4


@pytest.fixture(scope="module")
def reference_loss(T, weights):
    """The loss of train_step on prepare's training batch, before any update."""
    images, labels = resnet.random_batch(TRAIN_BATCH, SIZE, seed=0, num_classes=CLASSES)
    return T.train_step(weights, images, labels)[0]


@pytest.mark.parametrize("mode,precision", TRAIN)
def test_training_steps_learn_and_start_from_the_same_loss(
    T, weights, reference_loss, mode, precision
):
    prepared = prepare_or_skip(T, weights, mode, "train", TRAIN_BATCH, precision, image_size=SIZE)
    first, second = prepared.step(), prepared.step()
    assert isinstance(first, float)
    tolerance = 1e-4 if precision == "fp32" else 5e-2
    assert first == pytest.approx(reference_loss, rel=tolerance)
    assert second < first  # the SGD update was applied


def test_train_step_updates_weights_and_running_stats(T, weights):
    images, labels = resnet.random_batch(2, SIZE, seed=3, num_classes=CLASSES)
    loss, new = T.train_step(weights, images, labels, lr=0.1, momentum=0.9)
    assert np.isfinite(loss) and loss == pytest.approx(np.log(CLASSES), rel=0.2)  # near-uniform
    assert list(new) == list(weights)
    for name in ("conv1.weight", "fc.bias", "layer4.2.bn3.weight", "bn1.running_mean"):
        assert not np.array_equal(new[name], weights[name]), name


# ----------------------------------------------------------------------------- ONNX


def test_onnx_export_checks_and_runs_in_onnxruntime(T):
    ort_adapter = require("onnxruntime")
    weights = resnet.init_weights(seed=1)
    # torch.onnx.export's file, written into the ONNX Runtime adapter's cache (its template is
    # exported from seed-0 weights; seed-1 weights are then written in by name): one export
    # serves this file's and test_resnet_crosscheck's tests
    path = ort_adapter.model_file(weights)
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    (images_input,) = proto.graph.input
    assert [d.dim_param for d in images_input.type.tensor_type.shape.dim] == [
        "batch",
        "",
        "height",
        "width",
    ]
    # the file keeps the canonical weight names: BatchNorm is fused later, by ONNX Runtime
    assert set(resnet.param_shapes()) <= {t.name for t in proto.graph.initializer}
    assert {n.op_type for n in proto.graph.node} >= {"Conv", "BatchNormalization", "Gemm"}
    session = ort_adapter.session_from_file(path)
    for batch, size in [(1, 32), (2, 64)]:
        images, _ = resnet.random_batch(batch, size, seed=batch)
        got = ort_adapter.predict(session, images)
        assert got.shape == (batch, 1000)
        assert_float32_close(got, weights, images, f"ONNX Runtime {batch}x{size}")


@COSTLY_IN_SMOKE  # a second real export (the one above is cached across runs)
def test_export_writes_model_onnx_that_reloads_with_the_same_logits(T, tmp_path):
    weights = resnet.init_weights(seed=2, num_classes=CLASSES)
    model = T.build_resnet50(weights).train()
    path = T.export(model, tmp_path / "out")
    assert path == tmp_path / "out" / "model.onnx" and path.stat().st_size > 50e6  # weights inside
    assert model.training  # exported in eval mode, the caller's mode restored
    onnx.checker.check_model(str(path), full_check=True)
    ort_adapter = require("onnxruntime")
    session = ort_adapter.session_from_file(path)
    for batch, size in [(1, 32), (3, 64)]:
        images, _ = resnet.random_batch(batch, size, seed=size)
        got = ort_adapter.predict(session, images)
        assert_float32_close(got, weights, images, f"ONNX {batch}x{size}")


def test_export_asks_for_eval_mode_and_dynamic_sizes_and_restores_the_mode_on_failure(
    T, tmp_path, monkeypatch
):
    """The arguments export() gives the exporter, checked without exporting (the exporter is
    replaced by one that fails); the real export is checked above and by the ONNX Runtime test."""
    calls = []

    def fake_export(model, args, **kwargs):
        calls.append((model.training, kwargs["dynamic_shapes"], kwargs["optimize"]))
        raise RuntimeError("stop here")

    monkeypatch.setattr(T.torch.onnx, "export", fake_export)
    model = T.build_resnet50(resnet.init_weights(seed=0)).train()
    with pytest.raises(RuntimeError, match="stop here"):
        T.export(model, tmp_path / "out")
    ((training, dims, optimize),) = calls
    assert not training and model.training  # exported in eval mode, mode restored
    assert optimize is False and set(dims["x"]) == {0, 2, 3}
