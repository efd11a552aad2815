"""Notebook 01's tracer (notebooks/tracer.py): record, fold, replay (framework-free, fast)."""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).parents[1] / "notebooks" / "tracer.py"
spec = importlib.util.spec_from_file_location("tracer", SCRIPT)
tr = sys.modules["tracer"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tr)


def gelu_like(x):
    k = tr.const(2.0) * tr.const(3.0)  # constants only: foldable
    unused = tr.exp(x)  # noqa: F841  (dead code)
    return 0.5 * x * (1.0 + tr.tanh(x / k)) - x


X = np.array([-1.5, 0.0, 0.25, 3.0])


def count(graph, op):
    return sum(n.op == op for n in graph.nodes)


def eager(x):
    return 0.5 * x * (1.0 + np.tanh(x / 6.0)) - x


def test_tracing_records_every_operation_and_replays_it():
    g = tr.trace(gelu_like)
    ops = [n.op for n in g.nodes]
    assert ops.count("input") == 1 and count(g, "exp") == 1 and count(g, "tanh") == 1
    assert count(g, "mul") == 3 and count(g, "div") == 1  # 2*3, 0.5*x, (...)*(...)
    np.testing.assert_allclose(g.run(X), eager(X))
    assert str(g).splitlines()[-1] == f"return {g.output}"


def test_the_function_runs_once_while_tracing_and_never_on_replay():
    calls = []

    def f(x):
        calls.append("python ran")
        return x * 2.0

    g = tr.trace(f)
    for v in (1.0, 2.0, 3.0):
        assert g.run(np.float64(v)) == 2 * v
    assert calls == ["python ran"]


def test_fold_computes_constants_and_removes_dead_code_without_changing_the_result():
    g = tr.trace(gelu_like)
    f = tr.fold(g)
    assert count(f, "exp") == 0  # dead code gone
    assert 6.0 in [n.value for n in f.nodes if n.op == "const"]  # 2 * 3 folded
    assert count(f, "mul") == count(g, "mul") - 1 and len(f.nodes) < len(g.nodes)
    np.testing.assert_allclose(f.run(X), g.run(X))


def test_fold_of_a_constant_function_ignores_its_input():
    f = tr.fold(tr.trace(lambda x: tr.const(2.0) * 3.0))
    assert [n.op for n in f.nodes] == ["const"] and f.run(99.0) == 6.0


def test_a_python_if_on_a_proxy_fails_with_the_fix():
    def branchy(x):
        return x * 2.0 if x else x

    with pytest.raises(tr.TracingError, match=r"decide an `if` or `while`.*tf\.cond, torch\.cond"):
        tr.trace(branchy)
    with pytest.raises(tr.TracingError):
        tr.trace(lambda x: float(x))


def test_constants_and_unary_ops_are_eager_outside_a_trace():
    assert tr.const(2.0) == 2.0
    assert count(tr.trace(lambda x: tr.const(2.0) * x), "const") == 1  # recorded while tracing
    assert tr.tanh(0.0) == 0.0 and tr.exp(0.0) == 1.0


def test_reflected_operations_and_numpy_operands_are_recorded():
    g = tr.trace(lambda x: 1.0 - np.ones(2) * x / 4.0)
    assert [n.op for n in g.nodes if n.op in tr.OPS] == ["mul", "div", "sub"]
    np.testing.assert_allclose(g.run(np.array([4.0, 8.0])), [0.0, -1.0])
