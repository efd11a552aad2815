"""Apache TVM as a deployment compiler: it imports ResNet-50's ONNX export as it is, and its
logits against ONNX Runtime's on the same file (both within the float32 bound of
labkit.frameworks.crosscheck).

Compiling takes seconds per input shape (untuned, Relax's default CPU pipeline), so the checks
use the narrow ResNet-50 of the smoke profile (every layer of ResNet-50, width 16); a benchmark
cell of the full network through the runner, its compile time in the break-even, is costly.
"""

import collections
import os

from labkit import resnet, results, runner
from labkit.frameworks import crosscheck as cc

import numpy as np
import pytest
from conftest import require

pytestmark = pytest.mark.slow

WIDTH = 16


@pytest.fixture(scope="module")
def tv():
    return require("tvm")


@pytest.fixture(scope="module")
def ort():
    return require("onnxruntime")


@pytest.fixture(scope="module")
def weights():
    return resnet.init_weights(seed=3, width=WIDTH)


@pytest.fixture(scope="module")
def compiled(tv, weights):
    return tv.build_resnet50(weights)


def test_the_export_imports_as_it_is_and_holds_only_the_networks_operators(tv, compiled):
    """The export has no shape arithmetic (ResNet-50's global pool is a mean over the pixels):
    Relax imports the file with its dynamic sizes, or fixed to one input shape."""
    import onnx
    from tvm.relax.frontend.onnx import from_onnx

    model = onnx.load(str(compiled))
    kinds = collections.Counter(n.op_type for n in model.graph.node)
    assert set(kinds) == {
        "Conv",
        "BatchNormalization",
        "Relu",
        "Add",
        "MaxPool",
        "ReduceMean",
        "Gemm",
    }
    assert kinds["Conv"] == kinds["BatchNormalization"] == 53
    for shapes, takes in [
        (None, "(batch, 3, height, width)"),
        ({"images": [2, 3, 64, 64]}, "(2, 3, 64, 64)"),
    ]:
        script = from_onnx(model, shapes, keep_params_in_input=False).script()
        assert f"def main(images: R.Tensor({takes}" in script, shapes


@pytest.mark.costly  # notebook 07 checks TVM's logits under smoke
def test_tvm_logits_agree_with_onnx_runtimes_on_the_same_file(tv, ort, compiled, weights):
    """Both runtimes are within FP32_SPREAD x PyTorch's own float32 error of the float64
    reference, so they are within twice that of each other."""
    session, compiles = ort.session_from_file(compiled), tv.machine.cache_info().misses
    for batch, size in [(1, 32), (2, 64)]:
        images, _ = resnet.random_batch(batch, size, seed=batch)
        exact, limit = cc.reference_logits(weights, images)
        mine, theirs = tv.predict(compiled, images), ort.predict(session, images)
        assert mine.shape == theirs.shape == exact.shape
        assert cc.max_rel_diff(mine, exact) <= limit, (batch, size, limit)
        assert cc.max_rel_diff(mine, theirs) <= 2 * limit, (batch, size)
        assert np.array_equal(mine.argmax(1), theirs.argmax(1))
    assert tv.machine.cache_info().misses == compiles + 2  # one compile per shape


def test_prepare_exports_apart_and_compiles_for_this_cpu(tv, ort, weights):
    prepared = tv.prepare(weights, "relax", "throughput", 2, image_size=32)
    assert prepared.export_s is not None and prepared.export_s >= 0
    assert f"mcpu={tv.host_cpu()}" in prepared.notes and tv.host_cpu()
    images, _ = resnet.random_batch(2, 32, seed=0)  # prepare's batch
    expected = ort.predict(ort.build_resnet50(weights), images)
    assert cc.max_rel_diff(prepared.step(), expected) < 1e-5


@pytest.mark.costly
def test_a_benchmark_cell_counts_export_and_compile_in_the_break_even(tmp_path):
    """The runner's cell of the full ResNet-50: export_s (torch.onnx.export) and prepare_s
    (import + compile) are recorded, and the break-even against PyTorch eager adds both."""
    plan = runner.Plan.build(["torch", "tvm"], ["eager", "relax"], ["latency"], profile="smoke")
    run = runner.run(plan, tmp_path / "tvm.jsonl", progress=False)
    by = {r["framework"]: r for r in run.records}
    assert by["tvm"]["status"] == "ok", by["tvm"].get("error")
    assert by["tvm"]["export_s"] > 0 and by["tvm"]["prepare_s"] > 0
    (row,) = [
        r
        for r in results.break_even_rows(run.records, include_invalid=True)
        if r["framework"] == "tvm"
    ]
    parts = ("export_s", "prepare_s", "first_call_s")  # the one-off cost before the steady state
    one_off = {fw: sum(r[p] or 0 for p in parts) for fw, r in by.items()}
    assert row["extra_s"] == pytest.approx(one_off["tvm"] - one_off["torch"])
    assert os.path.exists(tmp_path / "tvm.jsonl")
