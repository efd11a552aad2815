"""The framework registry and the adapter contract, checked once for every registered framework.

A contributor who adds a framework (its table in ``labkit/data/frameworks.toml`` and its package
under ``labkit/frameworks/``) learns here, by name, what is missing: the spec's fields, the
adapter's functions, the behaviour every adapter shares (threads, modes, tasks, bad weights, bad
images). The architecture rules live here too: framework-free modules import no framework, the
import graph has no cycles, and no module outside the registry and the adapters names a
framework.
"""

import ast
import inspect
import json
import subprocess
import sys
from pathlib import Path

from labkit import frameworks, recipe, resnet
from labkit.frameworks import contract, crosscheck

import numpy as np
import pytest
from conftest import ROOT, require

LABKIT = ROOT / "labkit"
SPECS = frameworks.specs()
NAMES = [s.name for s in SPECS]
CLASSES = 10  # the full architecture, a small classifier: cheap to build


# --------------------------------------------------------------------------------------------
# the specs


def test_specs_are_read_without_importing_any_framework():
    code = (
        "import sys, labkit.frameworks as f; specs = f.specs(); "
        f"print([m for m in {[s.import_name for s in SPECS] + ['keras', 'onnx']!r} "
        "if m in sys.modules], len(specs))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.split() == ["[]", str(len(SPECS))], out.stdout


@pytest.mark.parametrize("spec", SPECS, ids=NAMES)
def test_every_spec_is_complete_and_consistent(spec):
    assert spec.name in frameworks.NAMES and frameworks.spec(spec.name) is spec
    assert spec.display and spec.import_name and spec.color.startswith("#")
    assert spec.modes and len(set(spec.modes)) == len(spec.modes)
    assert set(spec.tasks) <= set(contract.TASKS) and spec.tasks, f"{spec.name}: unknown tasks"
    if spec.eager is None:  # a runtime of exported graphs: measured against its source's eager
        assert spec.exported_from, f"{spec.name} has no eager mode: name what it runs exports of"
        assert frameworks.spec(spec.exported_from).eager is not None
    else:
        assert spec.modes[0] == spec.eager, f"{spec.name}: the eager mode must come first"
    assert spec.folder.is_dir() and (spec.folder / "adapter.py").is_file()
    if spec.launcher:  # a data-parallel launcher: its launch module (the workers: notebook 08)
        assert (spec.folder / "launch.py").is_file(), f"{spec.name}: write launch.py"
        launch = frameworks.launch_module(spec.name)
        missing = [
            name
            for name in (
                "CLUSTER_VARIABLES",
                "ENVIRONMENT",
                "EVERY_INTERFACE",
                "ports_needed",
                "local_commands",
                "cluster_commands",
            )
            if not hasattr(launch, name)
        ]
        assert not missing, f"{spec.name}'s launch.py lacks {missing}"
        assert launch.ports_needed(2) >= 1
    assert crosscheck.REFERENCE in frameworks.NAMES
    assert "fp32" in spec.precisions
    known = set(contract.PRECISIONS)
    assert {*spec.precisions, *spec.peak_precisions} <= known, f"{spec.name}: unknown precisions"
    if spec.peak_precisions:  # a matrix-multiply probe: its module, run as python -m
        assert (spec.folder / "peak.py").is_file(), f"{spec.name}: write peak.py"
        assert spec.peak_module == f"labkit.frameworks.{spec.name}.peak"
    else:
        assert spec.peak_module is None


def test_an_unknown_framework_or_part_says_what_is_offered():
    with pytest.raises(ValueError, match="unknown framework 'jax': valid frameworks are torch"):
        frameworks.spec("jax")
    without = next((s.name for s in SPECS if not s.launcher), None)
    if without:
        with pytest.raises(ValueError, match=f"{without} has no data-parallel launcher"):
            frameworks.launch_module(without)


# --------------------------------------------------------------------------------------------
# the adapters, against the Protocol and their spec


@pytest.fixture(scope="module", params=NAMES)
def adapter(request):
    return require(request.param)


@pytest.fixture(scope="module")
def weights():
    return resnet.init_weights(seed=0, num_classes=CLASSES)


def _parameters(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def test_adapter_implements_the_protocol_its_spec_promises(adapter):
    spec = adapter.SPEC
    assert spec is frameworks.spec(spec.name), "the adapter's SPEC is the registered one"
    missing = [
        name
        for name in (
            "version",
            "set_threads",
            "threads",
            "build_resnet50",
            "predict",
            "prepare",
        )
        if not callable(getattr(adapter, name, None))
    ]
    assert not missing, f"{spec.name} adapter lacks {missing}"
    assert _parameters(adapter.prepare)[:7] == [
        "weights",
        "mode",
        "task",
        "batch_size",
        "precision",
        "image_size",
        "device",
    ]
    if "train" in spec.tasks:  # its new weights, in canonical names, for the cross-check
        trains = ("train_step", "to_canonical")
        assert all(callable(getattr(adapter, f, None)) for f in trains), f"{spec.name}: {trains}"
    assert isinstance(adapter.version(), str) and adapter.version()


@pytest.mark.parametrize("spec", SPECS, ids=NAMES)
def test_code_checks_module_verifies_every_property_its_spec_declares(spec):
    if not spec.code_checks:
        with pytest.raises(ValueError, match="has no code-exercise checks"):
            frameworks.checks(spec.name)
        return
    has = (spec.folder / "checks.py").exists() or spec.exercise
    assert has, f"{spec.name} declares code_checks: add checks.py or an exercise table"
    require(spec.name)
    checks = frameworks.checks(spec.name)
    assert callable(checks.namespace) and callable(checks.verify)
    for prop, meaning in spec.code_checks:
        assert meaning, prop
        assert prop in checks.PROPERTIES, f"{spec.name} checks.verify does not handle {prop!r}"
    with pytest.raises(ValueError, match="unknown"):
        checks.verify("turbo", lambda x: x, [(1,)], reference=lambda x: x, rtol=0, atol=0)


def test_set_threads_checks_its_argument(adapter):
    """A bad count changes nothing (the idempotence and the policy: in a fresh process, below,
    so that no thread count is left behind for later tests in this process)."""
    before = adapter.threads()
    with pytest.raises(ValueError, match="thread count must be an integer >= 1, got 0"):
        adapter.set_threads(0)
    effective = adapter.threads()
    assert effective == before and set(effective) == {"intra", "inter"}
    assert all(v is None or (isinstance(v, int) and v >= 0) for v in effective.values())


@pytest.mark.parametrize("name", NAMES)
def test_the_thread_policy_is_read_back_the_same_in_every_framework(name):
    """In a fresh process (as a benchmark cell): intra-op N and inter-op 1, read back; asking
    again for the same count is a no-op (a notebook run twice in one kernel does)."""
    require(name)
    code = (
        f"import json, labkit, labkit.frameworks as f; a = f.get({name!r}); a.set_threads(2); "
        "a.set_threads(2); print(json.dumps(a.threads()))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"intra": 2, "inter": 1}


@pytest.mark.parametrize("name", [s.name for s in SPECS if "train" in s.tasks])
def test_every_framework_trains_with_the_one_recipe(name, weights):
    """Each adapter's benchmark training step reads its hyper-parameters back from the optimizer
    and loss objects it built: they must be labkit.recipe.TRAIN's, and so must train_step's
    defaults."""
    adapter = require(name)
    for mode in adapter.SPEC.modes[:1] + adapter.SPEC.graph_modes[:1]:
        prepared = adapter.prepare(weights, mode, "train", 2, image_size=32)
        assert prepared.recipe == recipe.TRAIN._asdict(), (name, mode, prepared.recipe)
    defaults = inspect.signature(adapter.train_step).parameters
    assert defaults["lr"].default == recipe.TRAIN.lr
    assert defaults["momentum"].default == recipe.TRAIN.momentum
    inference = adapter.prepare(weights, adapter.SPEC.modes[0], "latency", 1, image_size=32)
    assert inference.recipe is None


def test_prepare_names_unknown_modes_and_refuses_tasks_the_spec_leaves_out(adapter, weights):
    spec = adapter.SPEC
    with pytest.raises(ValueError, match=f"unknown mode 'turbo' for {spec.name}: valid modes are"):
        adapter.prepare(weights, "turbo", "latency", 1, image_size=32)
    for task in set(contract.TASKS) - set(spec.tasks):
        with pytest.raises(contract.Unsupported):
            adapter.prepare(weights, spec.modes[0], task, 1, image_size=32)


def test_prepare_refuses_the_precisions_the_spec_leaves_out_saying_why(adapter, weights):
    spec = adapter.SPEC
    with pytest.raises(ValueError, match=f"unknown precision 'fp16' for {spec.name}"):
        adapter.prepare(weights, spec.modes[0], "latency", 1, "fp16", image_size=32)
    for precision in set(contract.PRECISIONS) - set(spec.precisions):
        for mode in spec.modes:
            with pytest.raises(contract.Unsupported) as refused:
                adapter.prepare(weights, mode, "throughput", 2, precision, image_size=32)
            assert len(str(refused.value)) > 40, "say why, and what to use instead"


@pytest.mark.slow
@pytest.mark.parametrize(
    "name",
    # TensorFlow's bf16 eager step over 256 images takes 20 s here: make test-standard runs it
    # (test_tensorflow_adapter checks its bf16 cell under smoke)
    [
        pytest.param(n, marks=pytest.mark.costly) if n in ("tensorflow", "torch") else n
        for n in NAMES
    ],
)
def test_each_low_precision_step_carries_its_accuracy_cost(name, weights):
    """The graph path of each precision the spec offers beyond fp32 (eager where there is no
    cheaper one): the step runs, and its accuracy cost against fp32 is measured after timing,
    or the combination is refused here with the framework's reason."""
    adapter = require(name)
    spec = adapter.SPEC
    for precision in [p for p in spec.precisions if p != "fp32"]:
        try:
            prepared = adapter.prepare(weights, spec.modes[0], "throughput", 2, precision, 32)
        except contract.Unsupported as exc:  # MindSpore: no bf16 convolution on the CPU
            assert precision in str(exc) or "bfloat16" in str(exc), str(exc)
            continue
        assert prepared.step() is not None and prepared.accuracy is not None
        cost = prepared.accuracy()
        assert cost["images"] >= 256 and cost["images"] % 2 == 0
        assert 0 <= cost["top1_agreement"] <= 1 and 0 <= cost["centred_top1_agreement"] <= 1
        assert 0 < cost["max_abs_diff"] and 0 < cost["max_rel_diff"] < 0.5, cost
        assert cost["top1_classes"] >= 1 and "fp32" in cost["reference"]
    fp32 = adapter.prepare(weights, spec.modes[0], "throughput", 2, "fp32", 32)
    assert fp32.accuracy is None


@pytest.mark.parametrize("spec", [s for s in SPECS if s.peak_precisions], ids=lambda s: s.name)
def test_each_peak_probe_follows_the_protocol_and_prints_its_kernels(spec):
    require(spec.name)
    import importlib

    probe = importlib.import_module(spec.peak_module)
    assert tuple(probe.KERNELS) == spec.peak_precisions
    out = subprocess.run(
        [sys.executable, "-m", spec.peak_module, "--threads", "1", "--precisions", "fp32"]
        + ["--seconds", "0.01"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    printed = json.loads(out.stdout.strip().splitlines()[-1])
    assert printed["threads"] == 1 and printed["versions"]
    kernels = printed["kernels"]
    assert [k["kernel"] for k in kernels] == list(probe.KERNELS["fp32"])
    ok = [k for k in kernels if not k["error"]]
    assert ok, kernels
    for k in ok:
        assert k["ops"] == 2 * k["n"] ** 3 and len(k["times_s"]) >= 5
        assert all(t > 0 for t in k["times_s"])
    bad = subprocess.run(
        [sys.executable, "-m", spec.peak_module, "--threads", "0"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert bad.returncode == 2 and "--threads >= 1" in bad.stderr


# the bad-input contract: weights that do not fit the spec and images the network cannot take
# fail with an error naming the problem


@pytest.fixture(scope="module")
def model(adapter, weights):
    return adapter.build_resnet50(weights)


@pytest.mark.parametrize(
    "name", ["conv1.weight", "layer3.2.bn2.running_mean", "layer3.2.bn2.running_var", "fc.weight"]
)
def test_missing_tensor_is_named(adapter, weights, name):
    broken = {k: v for k, v in weights.items() if k != name}
    with pytest.raises(ValueError, match=rf"missing tensor '{name}'".replace(".", r"\.")):
        adapter.build_resnet50(broken)


def test_misshaped_and_unexpected_tensors_are_named(adapter, weights):
    misshaped = {**weights, "layer2.0.conv2.weight": np.zeros((128, 128, 1, 1), np.float32)}
    with pytest.raises(
        ValueError, match=r"'layer2\.0\.conv2\.weight' has shape \(128, 128, 1, 1\)"
    ):
        adapter.build_resnet50(misshaped)
    hwio = weights["layer1.0.conv2.weight"].transpose(2, 3, 1, 0)  # a TF layout passed by mistake
    with pytest.raises(
        ValueError,
        match=r"'layer1\.0\.conv2\.weight' has shape \(3, 3, 64, 64\), "
        r"the spec expects \(64, 64, 3, 3\)",
    ):
        adapter.build_resnet50({**weights, "layer1.0.conv2.weight": hwio})
    with pytest.raises(ValueError, match="unexpected tensor 'fc2.weight'"):
        adapter.build_resnet50({**weights, "fc2.weight": np.zeros((3, 3), np.float32)})


def test_bad_images_fail_clearly(adapter, model, weights):
    for size in (40, 48):
        with pytest.raises(ValueError, match=rf"cannot take {size}x{size} images.*multiple of 32"):
            adapter.predict(model, np.zeros((1, 3, size, size), np.float32))
    with pytest.raises(ValueError, match="NCHW with 3 channels"):
        adapter.predict(model, np.zeros((1, 64, 64, 3), np.float32))
    with pytest.raises(ValueError, match="cannot take 48x48"):
        adapter.prepare(weights, adapter.SPEC.modes[0], "latency", 1, image_size=48)


def _trains(adapter) -> None:
    if "train" not in adapter.SPEC.tasks:
        pytest.skip("a runtime of exported graphs hands no weights back (its logits: crosscheck)")


def test_weights_round_trip_through_every_trainer(adapter, model, weights):
    _trains(adapter)
    back = adapter.to_canonical(model)
    assert set(back) == set(weights)
    assert all(np.array_equal(back[k], weights[k]) for k in weights)


def test_a_narrower_resnet50_round_trips_and_misfits_are_named_with_the_width(adapter):
    """Each adapter builds the width its weights have (the smoke profile's narrow ResNet-50)."""
    narrow = resnet.init_weights(seed=1, num_classes=CLASSES, width=16)
    built = adapter.build_resnet50(narrow)
    logits = adapter.predict(built, resnet.random_batch(1, 32)[0])
    assert logits.shape == (1, CLASSES) and np.isfinite(logits).all()
    if hasattr(adapter, "to_canonical"):
        back = adapter.to_canonical(built)
        assert {k: v.shape for k, v in back.items()} == {k: v.shape for k, v in narrow.items()}
        assert all(np.array_equal(back[k], narrow[k]) for k in narrow)
    wide_fc = {**narrow, "fc.weight": np.zeros((CLASSES, 2048), np.float32)}
    with pytest.raises(
        ValueError, match=r"'fc\.weight' has shape .* at width 16 \(read from conv1"
    ):
        adapter.build_resnet50(wide_fc)


# --------------------------------------------------------------------------------------------
# a learner's own model (labkit.explore): the explorers and the adapters that benchmark any model

EXPLORING = [s.name for s in SPECS if s.explores]


def test_frameworks_that_take_a_learners_model_say_how_it_is_recognised():
    assert EXPLORING, "no framework offers labkit.explore checks"
    for s in SPECS:
        assert s.model_packages, f"{s.name}: model_packages names no package"
    claimed = [p for s in SPECS for p in s.model_packages]
    assert len(claimed) == len(set(claimed)), "two frameworks claim the same package"


#: What ``labkit/frameworks/<name>/explore.py`` provides: ``SPEC``; ``CHECKS``, the capture paths
#: in order, each a report row, the first gating the others (a model that does not even run there
#: is tried no further): ``CHECKS[name](session) -> {"path": {...}, "graph_breaks": [...],
#: "recompiles": [...]}``; ``ACCEPTS``, what the checks take, in words; ``Session(model, arrays,
#: call)``, the state the checks share in one worker process; ``versions()``, of the packages the
#: checks use. Optional: ``accepts(model)`` (default ``callable``) and ``bind(model, call)`` where a
#: builder's example inputs reach a benchmark cell.
EXPLORER = ("SPEC", "CHECKS", "ACCEPTS", "Session", "versions")


@pytest.fixture(scope="module", params=EXPLORING)
def explorer(request):
    require(request.param)
    return frameworks.explorer(request.param)


def test_explorer_implements_the_protocol_and_its_adapter_benchmarks_any_model(explorer):
    spec = explorer.SPEC
    assert spec is frameworks.spec(spec.name)
    missing = [name for name in EXPLORER if not hasattr(explorer, name)]
    assert not missing, f"{spec.name} explore lacks {missing}"
    checks = explorer.CHECKS
    assert checks and len(set(checks)) == len(checks) and isinstance(explorer.ACCEPTS, str)
    assert spec.name in explorer.versions()
    adapter = frameworks.get(spec.name)
    assert _parameters(adapter.prepare_model)[:4] == ["model", "inputs", "mode", "task"]
    with pytest.raises(ValueError, match=f"unknown mode 'turbo' for {spec.name}"):
        adapter.prepare_model(None, [np.zeros((1, 2), np.float32)], "turbo", "latency")


# --------------------------------------------------------------------------------------------
# the architecture: framework-free modules, no import cycles, framework names in one place

#: the modules that may import a framework: each framework package's adapter and helpers
#: (``torchrun``: PyTorch's launcher with labkit's loopback rendezvous, run in its own process)
FRAMEWORK_MODULES = {
    f"labkit.frameworks.{s.name}.{part}"
    for s in SPECS
    for part in (
        "adapter",
        "graphs",
        "checks",
        "explore",
        "examples",
        "torchrun",
        "peak",
        "modes",
    )
}
#: modules that are data about named frameworks by nature, and why
NAMES_ALLOWED = {
    "labkit.frameworks": "the registry",
    "labkit.sources.claims.catalog": "the source articles' claims compare named frameworks",
    "labkit.sources.seeds.throughput": "the source articles' benchmark tables name frameworks",
    "labkit.sources.seeds.comparisons": "the source articles compare named frameworks",
    "labkit.sources.seeds.scenarios": "the source articles' advice names the frameworks",
    "labkit.sources.seeds.outside": "the systems out of reach cite the frameworks' table rows",
    "labkit.guide.questions": "the selection guide's answers name the frameworks a team knows",
    "labkit.guide.rules": "the selection guide's rule tables name the frameworks they score",
    "labkit.guide.advice": "the selection guide's alternatives and toolchains name frameworks",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, ast.Module]:
    return {_module_name(p): ast.parse(p.read_text()) for p in sorted(LABKIT.rglob("*.py"))}


def _imports(
    name: str, tree: ast.Module, package: bool, known: frozenset[str] = frozenset()
) -> set[str]:
    """Every module ``name`` imports, anywhere in it (function-level imports count too);
    ``known``: labkit's modules (a name imported from a package may be one of them)."""
    base = name.split(".") if package else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            root = base[: len(base) - node.level + 1] if node.level else []
            module = ".".join([*root, *(node.module.split(".") if node.module else [])])
            names = {f"{module}.{a.name}" for a in node.names}
            out.update(names)
            # `from . import sub` needs the submodule, not the package's face (which may be the
            # very package that is importing it); any other name needs the module itself
            if not node.names or not names <= known:
                out.add(module)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    packages = {_module_name(p) for p in LABKIT.rglob("__init__.py")}
    return {
        name: {
            m
            for m in _imports(name, tree, name in packages, frozenset(modules))
            if m in modules and m != name
        }
        for name, tree in modules.items()
    }


def test_the_import_graph_has_no_cycles():
    graph = _graph()
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt] if nxt in path else [node, nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def test_framework_free_modules_import_no_framework():
    frameworks_imported = {s.import_name for s in SPECS} | {
        "keras",
        "onnx",
        "onnxscript",
        "ai_edge_litert",
    }
    offenders = []
    for name, tree in _modules().items():
        if name in FRAMEWORK_MODULES:
            continue
        for imported in _imports(name, tree, True):
            if imported.split(".")[0] in frameworks_imported:
                offenders.append(f"{name} imports {imported}")
    assert not offenders, offenders


def test_import_labkit_and_every_framework_free_module_loads_no_framework():
    free = sorted(
        n for n in _modules() if n not in FRAMEWORK_MODULES and not n.endswith("__main__")
    )
    code = (
        "import importlib, sys\n"
        f"for m in {free!r}: importlib.import_module(m)\n"
        f"print([m for m in {[s.import_name for s in SPECS] + ['keras', 'onnx']!r} "
        "if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_no_framework_name_is_hard_coded_outside_the_registry_and_the_adapters():
    """Tables of the lab read the registry: a literal "torch" elsewhere is a table to move."""
    names = {s.name for s in SPECS} | {s.import_name for s in SPECS}
    found = []
    for name, tree in _modules().items():
        if name.startswith("labkit.frameworks") or name in NAMES_ALLOWED:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in names:
                found.append(f"{name} line {node.lineno}: {node.value!r}")
    assert not found, found


def test_kernel_support_is_a_probe_cached_per_version_and_isa_cap(tmp_path, monkeypatch):
    """Whether a precision runs here is decided by a tiny probe of the kernels, cached."""
    monkeypatch.setenv("LABKIT_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    calls = []

    def refused():
        calls.append(1)
        raise RuntimeError("could not create a primitive descriptor\nfor the convolution")

    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    why = frameworks.kernel_support("fakefw", "1.0", "bf16", refused)
    assert why == (
        "fakefw 1.0 cannot run bf16 kernels on this CPU: RuntimeError: could not create a "
        "primitive descriptor for the convolution (with ONEDNN_MAX_CPU_ISA=AVX2)"
    )
    assert frameworks.kernel_support("fakefw", "1.0", "bf16", refused) == why and len(calls) == 1
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA")  # another cap, another answer
    assert frameworks.kernel_support("fakefw", "1.0", "bf16", lambda: None) == ""
    assert frameworks.kernel_support(
        "fakefw", "1.1", "bf16", lambda: "left it in float32"
    ).endswith("on this CPU: left it in float32")
    assert frameworks.kernel_support("fakefw", "1.0", "bf16", refused) == "" and len(calls) == 1
