"""labkit.lessons: the timing, comparison and break-even helpers of notebooks 01-05."""

import ctypes
import logging
import math
import os
import time

from labkit import bench, lessons, profiles

import pytest


def test_timed_follows_the_profile_and_times_the_first_call_apart(monkeypatch):
    monkeypatch.setenv("LABKIT_PROFILE", "smoke")
    p = profiles.get("smoke")
    calls = []

    def step():
        calls.append(1)
        time.sleep(0.05 if len(calls) == 1 else 0.001)  # a slow first call, like a compile

    m = lessons.timed(step, "sleep")
    assert isinstance(m, bench.Measurement) and m.label == "sleep"
    assert m.first_call_s >= 0.05 > m.median_s
    assert p.min_repeats <= m.repeats <= p.max_repeats
    assert len(calls) == 1 + m.warmup + m.repeats * m.number_per_run  # blocks of calls count too
    assert m.warmup >= p.warmup and sum(m.times_s) * m.number_per_run >= p.min_time_s


def test_us_formats_median_and_spread_per_operation():
    m = bench.Measurement([1e-3, 2e-3, 3e-3], first_call_s=0.1, images_per_call=1, warmup=0)
    assert lessons.us(m) == "2,000.0 µs ± 1,000.0"
    assert lessons.us(m, per=1000) == "2.0 µs ± 1.0"
    with pytest.raises(ValueError, match="positive count"):
        lessons.us(m, per=0)


def _m(times, label, min_repeats=3):
    return bench.Measurement(
        list(times), 0.1, 1, 0, label=label, min_repeats=min_repeats, others_cpus=0.0
    )


def test_compare_gives_the_ratio_its_interval_and_both_verdicts(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # the verdicts read this machine's CPUs
    fast = _m([1.0, 1.01, 0.99, 1.0, 1.02], "compiled")
    slow = _m([2.0, 2.02, 1.98, 2.0, 2.01], "eager")
    c = lessons.compare(fast, slow, threads=1)
    assert c.estimate.value == pytest.approx(2.0) and c.estimate.low > 1.9 and c.estimate.high < 2.1
    assert c.valid and c.estimate.reading == "faster" and c.sentence().endswith("; valid")
    assert c.sentence().startswith("compiled ran 2.00x [")
    assert lessons.compare(slow, fast).estimate.reading == "slower"
    # overlapping samples: the interval holds 1, and the sentence says so, not a direction
    a, b = _m([1.0, 1.5, 0.8, 1.2, 0.9], "a"), _m([1.1, 0.9, 1.4, 1.0, 0.85], "b")
    same = lessons.compare(a, b)
    assert same.estimate.reading == "cannot tell" and "cannot tell a from b" in same.sentence()
    assert "spread too wide" in same.sentence() and not same.valid  # IQR/median > 10%
    few = lessons.compare(_m([1.0, 1.0], "one", min_repeats=5), slow)
    assert few.problems == ("one: 2 timed calls, fewer than the 5 required",)
    busy = bench.Measurement([1.0] * 5, 0.1, 1, 0, label="busy", others_cpus=1.9)
    assert "busy machine" in lessons.compare(busy, slow, threads=1).sentence()
    with pytest.raises(TypeError, match="two labkit.bench.Measurement"):
        lessons.compare([1.0, 2.0], slow)


def test_compare_gives_the_calls_that_pay_back_the_first_call():
    def m(first_call_s, median_s):
        return bench.Measurement([median_s] * 5, first_call_s, 1, 0, others_cpus=0.0)

    # 10 s extra one-off cost, 0.5 s saved per call: 20 calls
    assert lessons.compare(m(10.5, 0.5), m(0.5, 1.0)).break_even_calls == pytest.approx(20)
    assert lessons.compare(m(10.0, 0.5), m(0.0, 1.0)).break_even_calls == pytest.approx(20)
    assert lessons.compare(m(5.0, 2.0), m(0.0, 1.0)).break_even_calls == math.inf  # never
    assert lessons.compare(m(0.5, 0.5), m(1.0, 1.0)).break_even_calls == 0.0  # no extra cost


def test_native_output_captures_descriptor_1_and_restores_it(capfd):
    def native_print():
        os.write(1, b"from C, line 1\n")
        libc = ctypes.CDLL(None)
        libc.printf(b"from C stdio, line 2\n")  # buffered by C stdio: must be flushed
        return "done"

    result, text = lessons.native_output(native_print)
    assert result == "done"
    assert text.splitlines() == ["from C, line 1", "from C stdio, line 2"]
    os.write(1, b"after\n")  # descriptor 1 is back where it was
    assert "after" in capfd.readouterr().out


def test_native_output_restores_the_descriptor_when_fn_raises(capfd):
    def boom():
        os.write(1, b"partial\n")
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        lessons.native_output(boom)
    os.write(1, b"still works\n")
    assert "still works" in capfd.readouterr().out


def test_native_output_captures_standard_error_and_rejects_other_descriptors(capfd):
    _, text = lessons.native_output(lambda: os.write(2, b"a C++ log line\n" * 10_000), fd=2)
    assert text.count("a C++ log line") == 10_000  # 150 kB: more than a pipe buffer holds
    os.write(2, b"stderr is back\n")
    assert "stderr is back" in capfd.readouterr().err
    with pytest.raises(ValueError, match="fd must be 1"):
        lessons.native_output(lambda: None, fd=3)


# ---- notebooks 01-04: structure that nbval cannot check ------------------------------------

LESSON_NOTEBOOKS = [
    "01_eager_execution",
    "02_tensorflow_graphs",
    "03_pytorch_graphs",
    "04_mindspore_and_paddle",
]


def _code_cells(name):
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "notebooks" / f"{name}.ipynb"
    return [
        "".join(c["source"])
        for c in json.loads(path.read_text())["cells"]
        if c["cell_type"] == "code"
    ]


@pytest.mark.parametrize("name", LESSON_NOTEBOOKS)
def test_lesson_notebooks_have_graded_exercises_left_for_the_learner(name):
    import re

    cells = _code_cells(name)
    questions = [
        m.group(1)
        for c in cells
        for m in re.finditer(r"^(q\d+) = exercises\.load\(", c, re.MULTILINE)
    ]
    assert len(questions) >= 3, f"{name}: only {len(questions)} exercises"
    for q in questions:  # each question has its own learner cell: answer left as None, or code
        assert f"{q}.check(None)" in cells or any(f"\n{q}.check(" in c for c in cells), (
            f"{name}: no cell checks `{q}`"
        )
    assert not any(".solution()" in c for c in cells), f"{name}: a solution is revealed"


@pytest.mark.parametrize("name", LESSON_NOTEBOOKS)
def test_lesson_notebooks_never_stop_in_a_debugger(name):
    import ast

    for cell in _code_cells(name):
        tree = ast.parse("\n".join(line for line in cell.splitlines() if not line.startswith("%")))
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id == "breakpoint"
        ]
        if calls:
            # a breakpoint() may only run while sys.breakpointhook is replaced by a recorder
            assert "sys.breakpointhook = saved_hook" in cell and "finally:" in cell, cell[:200]


# ---- INSTRUCTORS.md's lesson plans: they fill their time, end on the guide, name real sections --


def _plan_rows(title):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "INSTRUCTORS.md").read_text()
    block = text.split(f"### {title}", 1)[1].split("\n#", 1)[0]
    rows = [
        [c.strip() for c in line.strip().strip("|").split("|")]
        for line in block.splitlines()
        if line.startswith("| ") and not line.startswith("| minutes")
    ]
    assert rows, f"INSTRUCTORS.md has no plan {title!r}"
    return rows


def _headings(stem):
    import json
    from pathlib import Path

    (path,) = (Path(__file__).resolve().parents[1] / "notebooks").glob(f"{stem}_*.ipynb")
    cells = json.loads(path.read_text())["cells"]
    return [
        line.lstrip("#").strip()
        for c in cells
        if c["cell_type"] == "markdown"
        for line in "".join(c["source"]).splitlines()
        if line.startswith(("## ", "### "))
    ]


@pytest.mark.parametrize("title, length", [("90 minutes", 90), ("A half day", 210)])
def test_the_lesson_plans_fill_their_time_and_name_real_sections(title, length):
    import itertools
    import re
    from pathlib import Path

    rows = _plan_rows(title)
    spans = [tuple(int(m) for m in row[0].split("-")) for row in rows]
    assert spans[0][0] == 0 and spans[-1][1] == length, f"{title}: {spans[0]}..{spans[-1]}"
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in itertools.pairwise(spans)), spans
    named = [re.findall(r"`(\d\d[a-z]?)_[a-z0-9_]+`", row[1]) for row in rows]
    if length > 90:  # the core mechanisms fill 90 minutes; a longer plan ends on the guide
        assert "09" in named[-1], f"{title}: the course ends on the selection guide, 09"
    existing = {p.stem[:2] for p in (Path(__file__).resolve().parents[1] / "notebooks").glob("*")}
    for notebooks, row in zip(named, rows):
        assert all(n in existing for n in notebooks), row[1]
        if not notebooks or row[2] == "as above":
            continue
        parts = [p.strip() for p in row[2].split(";")] if len(notebooks) > 1 else [row[2]]
        for part in parts:
            stem = part[:2] if len(notebooks) > 1 else notebooks[0]
            heads = _headings(stem)
            for a, b in re.findall(r"§(\d+)(?:-§(\d+))?", part):
                for n in range(int(a), int(b or a) + 1):
                    assert any(h.startswith(f"{n}.") for h in heads), f"{title}: {stem} has no §{n}"
            for name in re.findall(r"\*([^*]+)\*", part):
                assert any(h.startswith(name) for h in heads), (
                    f"{title}: {stem} has no section headed {name!r}: update INSTRUCTORS.md"
                )


def test_quiet_logs_hushes_notes_and_puts_the_callers_own_setting_back(caplog):
    from labkit.util.stdio import quiet_logs

    log = logging.getLogger("labkit.test.quiet")
    logging.disable(logging.DEBUG)  # a caller that had hushed debug notes itself
    try:
        with caplog.at_level(logging.DEBUG, logger=log.name), quiet_logs():
            log.warning("an exporter's note")
            log.error("an error still shows")
        assert [r.getMessage() for r in caplog.records] == ["an error still shows"]
        assert logging.root.manager.disable == logging.DEBUG
    finally:
        logging.disable(logging.NOTSET)
