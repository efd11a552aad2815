"""Golden messages of labkit.results: the exact words a learner reads for a bad results file.

Taken from the code as it was before labkit.results became a package (issue 20), so that the move
is shown to keep them: ``load``, ``validate`` and ``append`` for a zero time, a newer schema, a
field of the wrong type, a truncated last line and a few more; the ratio and break-even checks;
the text table. And the package's face: every public name of its rooms is re-exported.
"""

import importlib
import json
import warnings

from labkit import results
from labkit.results import cards

import pytest

#: one cell, its time fixed so that two records made of it are equal
CELL = {"framework": "torch", "mode": "eager", "task": "throughput", "batch_size": 8}
CELL |= {"precision": "fp32", "image_size": 32, "device": "cpu", "threads": 2}
CELL |= {"profile": "smoke", "timestamp": "2025-01-01T00:00:00+00:00"}
FIX = "fix: give a file written by `python -m labkit bench`, or delete that line"


def measured(**change) -> dict:
    return results.make(
        **{**CELL, **change},
        status="ok",
        first_call_s=1.0,
        prepare_s=1.0,
        median_s=0.1,
        iqr_s=0.0,
        p90_s=0.1,
        mean_s=0.1,
        images_per_s=80.0,
        peak_rss_mb=500.0,
        repeats=8,
        warmup=1,
        times_s=[0.1] * 8,
    ).to_json()


def refusal(call, *args) -> str:
    """The message of the ``ValueError`` that ``call(*args)`` raises."""
    with pytest.raises(ValueError) as caught:
        call(*args)
    return str(caught.value)


def write(path, *lines: str):
    path.write_text("".join(line + "\n" for line in lines))
    return path


BAD = {
    "a zero time": (
        {"first_call_s": 0},
        "field 'first_call_s' must be > 0, got 0",
    ),
    "a field of the wrong type": (
        {"batch_size": "8"},
        "field 'batch_size' has type str",
    ),
    "an unknown status": (
        {"status": "done"},
        "status must be 'ok' or 'failed', got 'done'; a failed record cannot be valid",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_record_is_refused_in_the_same_words_by_load_validate_and_append(tmp_path, case):
    change, why = BAD[case]
    record = {**measured(), **change}
    path = write(tmp_path / "r.jsonl", json.dumps(measured()), json.dumps(record))
    assert refusal(results.load, path) == (
        f"{path} line 2 is not a labkit benchmark record: {why}; {FIX}"
    )
    assert refusal(results.schema.validate, record) == f"invalid benchmark record: {why}"
    assert refusal(results.append, tmp_path / "o.jsonl", record) == (
        f"invalid benchmark record: {why}"
    )
    assert not (tmp_path / "o.jsonl").exists() or (tmp_path / "o.jsonl").read_text() == ""


def test_a_line_that_is_no_object_is_refused_naming_what_it_is(tmp_path):
    path = write(tmp_path / "r.jsonl", json.dumps(measured()), "[1, 2]")
    why = "expected a JSON object, got list"
    assert refusal(results.load, path) == (
        f"{path} line 2 is not a labkit benchmark record: {why}; {FIX}"
    )
    assert refusal(results.schema.validate, [1, 2]) == f"invalid benchmark record: {why}"


def test_a_newer_schema_says_to_upgrade_labkit(tmp_path):
    newer = {**measured(), "schema": 3, "hologram": True}
    path = write(tmp_path / "r.jsonl", json.dumps(measured()), json.dumps(newer))
    assert refusal(results.load, path) == (
        f"{path} line 2 was written by a newer labkit (results schema 3; this labkit reads "
        "schemas 1 to 2); fix: upgrade labkit (pip install -U labkit, or git pull in the course "
        "folder) and read the file again"
    )
    why = "invalid benchmark record: schema 3 is newer than this labkit's (2)"
    assert refusal(results.schema.validate, newer) == why
    assert refusal(results.append, tmp_path / "o.jsonl", newer) == why


def test_a_truncated_last_line_is_skipped_in_these_words_and_set_aside_on_append(tmp_path):
    path = tmp_path / "r.jsonl"
    line = json.dumps(measured())
    path.write_text(line + "\n" + line[:40])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [r.to_json() for r in results.load(path)] == [measured()]
    assert [(w.category, str(w.message)) for w in caught] == [
        (
            UserWarning,
            (
                f"{path} line 2 is truncated (an interrupted write) and was skipped; the 1 "
                f"complete records are kept; `python -m labkit bench --resume --out {path}` "
                "measures that cell again"
            ),
        )
    ]
    results.append(path, measured(mode="compile"))
    assert (tmp_path / "r.jsonl.partial").read_text() == line[:40] + "\n"
    assert [r["mode"] for r in results.load(path)] == ["eager", "compile"]


def test_a_file_that_is_not_a_results_file_is_named_with_the_fix(tmp_path):
    path = write(tmp_path / "r.jsonl", json.dumps(measured()), "{not json", json.dumps(measured()))
    assert refusal(results.load, path) == (
        f"{path} line 2 is not valid JSON (Expecting property name enclosed in double quotes): "
        "not a labkit results file, or a damaged one; fix: give a file written by `python -m "
        "labkit bench`, or delete or repair that line (the other lines are intact)"
    )
    path.write_bytes(b"\xff\xfe\x00")
    assert refusal(results.load, path) == (
        f"{path} is not a labkit results file (not UTF-8 text: invalid start byte); fix: give a "
        ".jsonl file written by `python -m labkit bench`"
    )
    missing = tmp_path / "missing.jsonl"
    assert refusal(results.load, missing) == (
        f"cannot read results file {missing}: No such file or directory; fix: give the path of a "
        "file written by `python -m labkit bench --out FILE.jsonl`"
    )


def test_an_unregistered_framework_is_kept_with_this_warning(tmp_path):
    path = write(
        tmp_path / "r.jsonl", json.dumps(measured()), json.dumps(measured(framework="jax"))
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert len(results.load(path)) == 2
    assert [(w.category, str(w.message)) for w in caught] == [
        (
            results.UnregisteredFramework,
            (
                f"{path} line 2: framework 'jax' (1 record(s)) is not registered in this labkit "
                "(it knows torch, tensorflow, mindspore, paddle, onnxruntime, tvm); its records are "
                "kept and shown, but compared with no baseline"
            ),
        )
    ]


def test_ratio_break_even_and_card_refusals_keep_their_words():
    ok = measured()
    cases = [
        (
            lambda: results.ratio({**ok, "median_s": 0}, ok),
            "record has a non-positive median time 0: torch/eager/throughput",
        ),
        (
            lambda: results.break_even({**ok, "median_s": None}, ok),
            "record['median_s'] must be a finite time >= 0 seconds, got None",
        ),
        (
            lambda: results.break_even(ok, {**ok, "first_call_s": -1}),
            "eager_record['first_call_s'] must be a finite time >= 0 seconds, got -1",
        ),
        (
            lambda: cards.build([]),
            (
                "no benchmark records to put on a card; fix: run notebook 06 or `python -m "
                "labkit bench --profile smoke` first"
            ),
        ),
    ]
    for call, message in cases:
        assert refusal(call) == message


def test_the_text_table_keeps_its_layout():
    failed = results.make(**{**CELL, "mode": "compile"}, status="failed", error="boom")
    busy = measured(mode="torchscript", others_cpus=1.9, machine={"logical_cpus": 2})
    assert busy["invalid_reasons"]  # flagged below the table
    lines = results.table([measured(), failed, busy]).split("\n")
    assert lines[:5] == [
        (
            "framework  mode         task        batch  prec  size  dev  images/s  median ms  "
            "IQR ms  p90 ms  first s  ceiling  peak  RSS MB  valid"
        ),
        (
            "---------  -----------  ----------  -----  ----  ----  ---  --------  ---------  "
            "------  ------  -------  -------  ----  ------  -----"
        ),
        (
            "torch      eager        throughput  8      fp32  32    cpu     80.00      100.0     "
            "0.0   100.0     1.00        -     -     500    yes"
        ),
        "torch      compile      throughput  8      fp32  32    cpu  FAILED: boom",
        (
            "torch      torchscript  throughput  8      fp32  32    cpu     80.00      100.0     "
            "0.0   100.0     1.00        -     -     500     NO"
        ),
    ]
    assert lines[5:7] == ["", "flags:"]
    assert lines[7:] == [
        (
            "  torch torchscript throughput: busy machine: other processes kept 1.90 CPUs busy "
            "while timing (at most 0.20 with 2 threads on 2 CPUs)"
        )
    ]


def test_the_package_re_exports_its_rooms_names_and_nothing_else():
    """What callers use is re-exported as the room's own object; the rest is reached through its
    room (``results.schema.upgrade``)."""
    rooms = ["schema", "store", "compare", "cards"]
    exported = set(rooms)
    for name in rooms:
        room = importlib.import_module(f"labkit.results.{name}")
        assert room.__doc__ and room.__all__, name
        assert all(hasattr(room, n) for n in room.__all__), name
        if name != "cards":  # reached as results.<room>
            shared = set(room.__all__) & set(results.__all__)
            assert all(getattr(results, n) is getattr(room, n) for n in shared), name
            exported |= shared
    assert set(results.__all__) <= exported, set(results.__all__) - exported
    assert results.cards is cards
    assert callable(results.table) and callable(results.load)
    assert all(hasattr(results, n) for n in results.__all__)


def test_the_table_shows_the_measured_peak_share_and_the_accuracy_cost_below_it():
    cost = {
        "reference": "fp32 eager",
        "images": 256,
        "max_abs_diff": 0.0026,
        "max_rel_diff": 0.0076,
        "top1_agreement": 1.0,
        "top1_classes": 1,
        "centred_top1_agreement": 0.9,
    }
    bf16 = measured(precision="bf16", measured_peak_share=0.4, accuracy=cost)
    above = measured(
        mode="compile",
        measured_peak_share=1.2,
        above_measured_peak=True,
        measured_peak_note="above the measured fp32 matrix-multiply peak: a timing error",
    )
    lines = results.table([bf16, above]).split("\n")
    assert lines[2].split()[:5] + lines[2].split()[-3:] == [
        *("torch", "eager", "throughput", "8", "bf16"),
        *("40.0%", "500", "yes"),
    ]
    assert lines[3].split()[-4:] == ["120.0%", "(!)", "500", "yes"]
    assert lines[5:] == [
        "flags:",
        "  torch compile throughput: above the measured fp32 matrix-multiply peak: a timing error",
        "",
        "accuracy against fp32:",
        (
            "  torch eager throughput bf16: largest logit difference 0.0026 (0.8% of the largest "
            "fp32 logit), top-1 agreement 100% on 256 synthetic images (1 top class(es) in fp32; "
            "on the image-dependent part of the logits 90%)"
        ),
    ]
