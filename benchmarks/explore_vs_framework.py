"""labkit.explore's verdicts beside what each framework says directly, per model.

For each spec, a fresh process asks the framework itself, with the calls a framework engineer
would type (``torch._dynamo.explain``, ``torch.compile(fullgraph=True)``, ``torch.export.export``
strict and non-strict, ``torch.jit.trace``, ``torch.onnx.export`` + ``onnxruntime``;
``tf.function`` and ``experimental_get_tracing_count`` over new batch sizes,
``jit_compile=True``, ``tf.saved_model``, ``tf.lite.TFLiteConverter``), and ``labkit.explore``
checks the same spec; the table sets the two side by side. Recompiles are counted directly too,
over the very input shapes explore called: graphs a counting ``torch.compile`` backend receives
per call, and ``experimental_get_tracing_count`` of plain, ``reduce_retracing=True`` and
``input_signature`` ``tf.function`` calls. Run it by hand (it compiles and exports every model:
minutes):

    .venv/bin/python benchmarks/explore_vs_framework.py [SPEC ...] [--out FILE.md]

Default specs: the tiny real models of ``tests/explore_real_models.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import labkit  # noqa: F401  (first: the protobuf setting)

MODELS = ROOT / "tests" / "explore_real_models.py"
DEFAULT = [
    (f"{MODELS}:bert_with_mask", None),
    (f"{MODELS}:gpt2", "2x16:int64"),
    (f"{MODELS}:gpt2_no_cache", None),
    (f"{MODELS}:vit", "2x3x32x32"),
    (f"{MODELS}:lstm", "2x16:int64"),
    (f"{MODELS}:no_onnx", "2x8"),
    (f"{MODELS}:keras_cnn", "2x32x32x3"),
    (f"{MODELS}:keras_mobilenet", "2x32x32x3"),
]


def _tried(fn) -> str:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the framework's answer is what we report
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).strip().splitlines()  # no colour codes
        return f"error: {type(exc).__name__}: {text[0][:160] if text else ''}"


def _resized(a, shape):
    """``a`` tiled (not redrawn: token ids and masks stay valid) and cut to ``shape``."""
    import numpy as np

    reps = [-(-n // m) for n, m in zip(shape, a.shape)]
    return np.tile(a, reps)[tuple(slice(0, n) for n in shape)]


def _series_of(arrays: list, series: list) -> dict[tuple[str, str], list[list]]:
    """For each (path, dimension) explore varied, the example arrays resized to each shape it
    called."""
    from labkit.runner import inputs

    return {
        (path, varied): [
            [_resized(a, i.shape) for a, i in zip(arrays, inputs.parse_inputs(text))]
            for text in texts
        ]
        for path, varied, texts in series
    }


def _trace(torch, model, args: tuple, kwargs: dict) -> str:
    """``torch.jit.trace``, strict first; keyword tensors become trace inputs through a module
    that binds them, the other keywords (``use_cache=False``) stay bound."""
    names = [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]

    class Bound(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *tensors):
            named = dict(zip(names, tensors[len(args) :]))
            return self.model(*tensors[: len(args)], **{**kwargs, **named})

    traced = Bound() if kwargs else model
    inputs = (*args, *(kwargs[k] for k in names))
    for strict in (True, False):
        try:
            torch.jit.trace(traced, inputs, check_trace=False, strict=strict)
            return f"traced (strict={strict})"
        except RuntimeError as exc:
            last = exc
    raise last


def _count_compiles(torch, model, calls: list, split) -> str:
    """Graphs ``torch.compile`` builds at each call of ``calls``, counted by a backend that
    only counts (``split``: a call's tensors -> (args, kwargs))."""
    torch._dynamo.reset()
    graphs = []

    def counting(gm, example_inputs):  # a backend: called once per graph Dynamo compiles
        graphs.append(gm)
        return gm.forward

    compiled = torch.compile(model, backend=counting)
    per_call = []
    for arrays in calls:
        a, kw = split([torch.from_numpy(x) for x in arrays])
        before = len(graphs)
        with torch.no_grad():
            compiled(*a, **kw)
        per_call.append(len(graphs) - before)
    return f"compiles {per_call}"


def _torch_direct(model, args: tuple, kwargs: dict, series: dict, split) -> dict[str, str]:
    """What PyTorch says, called directly; ``series``: (path, varied) -> the inputs of each
    call, ``split``: those inputs -> (args, kwargs)."""
    import tempfile
    import warnings

    import numpy as np
    import onnxruntime as ort
    import torch
    import torch._dynamo
    from torch.utils import _pytree as pytree

    warnings.simplefilter("ignore")

    def leaves(out):
        return [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]

    with torch.no_grad():
        ref = leaves(model(*args, **kwargs))

    def explain():
        e = torch._dynamo.explain(model)(*args, **kwargs)
        return f"{e.graph_count} graph(s), {max(e.graph_break_count, 0)} break(s)"

    def fullgraph():
        torch._dynamo.reset()
        with torch.no_grad():
            torch.compile(model, fullgraph=True, backend="eager")(*args, **kwargs)
        return "one graph"

    def export(strict):
        p = torch.export.export(model, args, kwargs, strict=strict)
        return f"exported ({sum(n.op == 'call_function' for n in p.graph.nodes)} ops)"

    def onnx():
        with tempfile.TemporaryDirectory() as tmp:
            program = torch.onnx.export(model, args, kwargs=kwargs, dynamo=True, verbose=False)
            program.save(f"{tmp}/m.onnx")
            sess = ort.InferenceSession(f"{tmp}/m.onnx", providers=["CPUExecutionProvider"])
            feeds = [t.numpy() for t in leaves((args, kwargs))]
            names = [i.name for i in sess.get_inputs()]
            outs = sess.run(None, dict(zip(names, feeds)))
        worst = max(float(np.abs(o - r.numpy()).max()) for o, r in zip(outs, ref))
        return f"ORT agrees to {worst:.1g}"

    answers = {
        f"compiles: {path} {varied}": _tried(lambda c=c: _count_compiles(torch, model, c, split))
        for (path, varied), c in series.items()
        if path == "torch.compile"
    }
    return answers | {
        "torch.compile": _tried(explain),
        "torch.compile(fullgraph)": _tried(fullgraph),
        "torch.export": _tried(lambda: export(False)),
        "torch.export(strict)": _tried(lambda: export(True)),
        "torch.jit.trace": _tried(lambda: _trace(torch, model, args, kwargs)),
        "onnx": _tried(onnx),
    }


def _tf_direct(model, arrays: list, series: dict) -> dict[str, str]:
    """What TensorFlow says, called directly (``series``: (path, varied) -> the inputs of each
    call)."""
    import tempfile

    import numpy as np
    import tensorflow as tf

    x = arrays[0]

    def traces(path, calls):
        options = {"tf.function(reduce_retracing=True)": {"reduce_retracing": True}}.get(path, {})
        if path == "tf.function(input_signature)":  # None on every dimension the series varies
            shapes = [c[0].shape for c in calls]
            dims = [None if len({s[d] for s in shapes}) > 1 else n for d, n in enumerate(shapes[0])]
            options = {"input_signature": [tf.TensorSpec(dims, tf.as_dtype(calls[0][0].dtype))]}
        fn = tf.function(lambda t: model(t, training=False), **options)
        per_call = []
        for c in calls:
            before = fn.experimental_get_tracing_count()
            fn(tf.constant(c[0]))
            per_call.append(fn.experimental_get_tracing_count() - before)
        return f"traces {per_call}"

    def xla():
        tf.function(lambda t: model(t, training=False), jit_compile=True)(tf.constant(x))
        return "compiled"

    def saved():
        with tempfile.TemporaryDirectory() as tmp:
            model.export(f"{tmp}/sm", verbose=False)
            loaded = tf.saved_model.load(f"{tmp}/sm")  # kept: its variables live with it
            loaded.serve(tf.constant(x))
        return "saved and loaded"

    def tflite():
        flat = tf.lite.TFLiteConverter.from_keras_model(model).convert()
        return f"converted ({len(flat) / 1e6:.2g} MB)"

    y1 = np.asarray(model(x, training=False))
    y2 = np.asarray(model(np.random.default_rng(1).standard_normal(x.shape).astype(x.dtype)))
    answers = {
        f"compiles: {path} {varied}": _tried(lambda p=path, c=c: traces(p, c))
        for (path, varied), c in series.items()
    }
    return answers | {
        "eager": f"output varies with the input: {bool(np.abs(y1 - y2).max() > 0)}",
        "xla": _tried(xla),
        "savedmodel": _tried(saved),
        "tflite": _tried(tflite),
    }


def direct(spec: str, shapes: str | None, series: list) -> dict[str, str]:
    """The framework's own answers for one spec (run in a process of its own); ``series``: the
    input shapes explore called for each dimension it varied, called here too."""
    from labkit import frameworks
    from labkit.runner import inputs

    model, given = inputs.build_example(spec)
    if given is None:
        arrays, call = inputs.example_arrays(inputs.parse_inputs(shapes)), None
    else:
        arrays, call = given
    calls = _series_of(arrays, series)
    if frameworks.framework_of(model) == "tensorflow":
        return _tf_direct(model, arrays, calls)
    import torch

    def split(tensors):
        if call is None:
            return tuple(tensors), {}
        args, named = call.split(tensors)
        return tuple(args), {**named, **call.constants}

    args, kwargs = split([torch.from_numpy(a) for a in arrays])
    return _torch_direct(model, args, kwargs, calls, split)


def compare(spec: str, shapes: str | None) -> list[str]:
    """Markdown rows: each path's explorer verdict beside the framework's own answer."""
    from labkit import explore

    report = explore.check(spec, shapes, progress=False)
    series = [(r.path, r.varied, r.shapes) for r in report.recompiles]
    child = subprocess.run(
        [
            sys.executable,
            __file__,
            "--direct",
            spec,
            "--shapes",
            shapes or "",
            "--series",
            json.dumps(series),
        ],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    lines = [ln for ln in child.stdout.splitlines() if ln.startswith("{")]
    own = json.loads(lines[-1]) if lines else {"error": child.stderr[-300:]}
    name = spec.rpartition(":")[2]
    rows = []
    for p in report.paths:
        said = own.get(p.path, "")
        if p.path.endswith("(new shapes)"):  # the plain path's counts of the rows below
            plain = p.path.removesuffix("(new shapes)")
            said = "; ".join(v for k, v in own.items() if k.startswith(f"compiles: {plain} "))
        verdict = p.status
        if p.details.get("constant_output"):  # explore's warning: agreement is then vacuous
            verdict += " (warns: the output does not depend on the input)"
        rows.append(f"| {name} | {p.path} | {verdict} | {said.replace('|', '/')} |")
    for r in report.recompiles:
        said = own.get(f"compiles: {r.path} {r.varied}", "")
        rows.append(f"| {name} | {r.path} ({r.varied}) | compiles {r.compiles} | {said} |")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="*", help="SPEC or SPEC@SHAPES (default: the test models)")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    parser.add_argument("--direct", help=argparse.SUPPRESS)
    parser.add_argument("--shapes", help=argparse.SUPPRESS)
    parser.add_argument("--series", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.direct:
        print(json.dumps(direct(args.direct, args.shapes or None, json.loads(args.series))))
        return 0
    todo = [tuple(s.split("@", 1)) if "@" in s else (s, None) for s in args.specs] or DEFAULT
    table = [
        "| model | path | labkit.explore | the framework, called directly |",
        "|---|---|---|---|",
    ]
    for spec, shapes in todo:
        rows = compare(spec, shapes)
        table += rows
        print("\n".join(rows), flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(table) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
