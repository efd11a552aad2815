"""labkit.explore on what real models do: masks and keyword arguments given through the spec,
token inputs and their sequence length, channels-last images, a cache object in the output, a
dict-like output, an LSTM, an operator without an ONNX translation, an output that does not
depend on the input, a model that hangs or crashes in eager.

The models (tests/explore_real_models.py) are tiny and built from configs with random weights:
Hugging Face ``transformers`` (the test extra; nothing is downloaded, HF_HUB_OFFLINE=1) and
Keras applications with ``weights=None``. Framework-free pieces first; the checks then run in
real worker processes (``slow``; whole reports are ``costly``).
"""

import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from labkit import explore
from labkit.frameworks._kit import explore as kit
from labkit.frameworks._kit import layout
from labkit.runner import inputs

import numpy as np
import pytest
from conftest import ROOT, require, run_labkit, skip_or_fail

MODELS = ROOT / "tests" / "explore_real_models.py"


def spec(name: str) -> str:
    return f"{MODELS}:{name}"


def require_transformers():
    require("torch")
    try:
        import transformers  # noqa: F401
    except ImportError as exc:
        skip_or_fail(f"transformers (the test extra) is not installed: {exc}")


def _tokens():
    ids = np.random.default_rng(0).integers(1, 100, (2, 16))
    mask = np.ones((2, 16), np.int64)
    mask[1, 10:] = 0
    return ids, mask


# --------------------------------------------------------------------------------------------
# framework-free: which axes vary, masks, calls, reasons


def test_the_signature_decides_which_axes_vary_and_a_guess_says_so():
    x = np.zeros((2, 32, 32, 3), np.float32)
    keras_like = layout.axes([x], [(None, None, None, 3)], "last", "Keras model.inputs", "Keras")
    image = layout.variations([x], keras_like)[1]
    assert image.name == "image size" and image.shapes[1:] == [
        "2x40x40x3",
        "2x48x48x3",
        "2x56x56x3",
    ]
    fixed = layout.axes([x], [(None, 32, 32, 3)], "last", "Keras model.inputs")
    assert [v.name for v in layout.variations([x], fixed)] == ["batch size"]
    assert fixed.fixed == {"image size": "Keras model.inputs fixes it at 32x32"}
    guessed = layout.axes([x])  # no signature, no layout given: a guess, said so
    assert guessed.roles["image size"] == [(0, 1), (0, 2)] and "guessed" in guessed.notes[0]
    nchw = layout.axes([np.zeros((2, 3, 32, 32), np.float32)])
    assert nchw.roles["image size"] == [(0, 2), (0, 3)] and "assumed" in nchw.notes[0]
    declared = layout.axes([x], channels="first", channels_from="the layout given")
    assert declared.roles["image size"] == [(0, 2), (0, 3)]
    onnx_like = layout.axes([np.zeros((3, 8), np.float32)], [(3, 8)], source="the ONNX file")
    assert onnx_like.fixed == {"batch size": "the ONNX file fixes it at 3"}


def test_token_inputs_get_a_sequence_length_series_and_masks_stay_masks():
    ids, mask = _tokens()
    series = {v.name: v for v in layout.variations([ids, mask])}
    assert list(series) == ["batch size", "sequence length"]
    assert series["sequence length"].shapes[1:] == [
        "2x20:int64,2x20:int64",
        "2x24:int64,2x24:int64",
        "2x28:int64,2x28:int64",
    ]
    for xs in series["sequence length"].inputs[1:]:
        new_mask = xs[1]
        assert layout.is_mask(new_mask) and new_mask[:, 0].all()  # a padding mask, never empty
        assert np.all(np.diff(new_mask, axis=1) <= 0)  # ones, then zeros
        assert xs[0].min() >= ids.min() and xs[0].max() <= ids.max()
    (_, new), (_, zeros) = layout.probes([ids, mask])
    assert layout.is_mask(new[1]) and new[1][:, 0].all()
    assert np.array_equal(zeros[1], mask) and not zeros[0].any()  # the mask kept, ids zeroed
    (note,) = layout.probe_notes([ids, mask], layout.Call(("", "attention_mask")))
    assert "attention_mask" in note and "leaves it as given" in note
    assert layout.probe_notes([ids]) == []


def test_example_inputs_from_a_builder(tmp_path):
    ids, mask = _tokens()
    arrays, call = inputs.example_of((ids,), {"attention_mask": mask, "use_cache": False})
    assert call.names == ("", "attention_mask") and call.constants == {"use_cache": False}
    assert call.text(arrays) == "model(2x16:int64, attention_mask=2x16:int64, use_cache=False)"
    assert call.split(["a", "b"]) == (["a"], {"attention_mask": "b"})
    with pytest.raises(ValueError, match="keyword 'cache' is a object, not a tensor"):
        inputs.example_of((ids,), {"cache": object()})
    with pytest.raises(ValueError, match="not a tensor or an array"):
        inputs.example_of(("text",))
    (tmp_path / "m.py").write_text(
        "import numpy as np\n"
        "def build():\n"
        "    return 'the model', (np.zeros((2, 4)),), {'flag': True, 'mask': np.ones((2, 4), int)}\n"
        "def plain():\n    return 'the model'\n"
    )
    model, (arrays, call) = inputs.build_example(f"{tmp_path / 'm.py'}:build")
    assert model == "the model" and arrays[0].shape == (2, 4) and call.constants == {"flag": True}
    assert call.names == ("", "mask") and len(arrays) == 2
    assert inputs.build_example(f"{tmp_path / 'm.py'}:plain") == ("the model", None)
    assert [a.shape[0] for a in inputs.to_batch([ids, mask], 5)] == [5, 5]
    assert np.array_equal(inputs.to_batch([ids], 1)[0], ids[:1])


def _timing(ms, iqr=0.01, invalid=()):
    return {"ms": ms, "iqr_ms": iqr, "calls": 30, "invalid": list(invalid)}


def test_a_timing_is_reported_with_its_verdict_and_a_slowdown_only_between_valid_ones():
    require("torch")
    from labkit.frameworks.torch import explore as tx

    ms = {
        "no_grad": {"eager": _timing(0.5), "compiled": _timing(0.5)},
        "inference_mode": {"eager": _timing(0.5), "compiled": _timing(345.0)},
    }
    found = tx.slowdown(ms)
    assert "690.0x slower than eager" in found and "torch.inference_mode" in found
    assert "under torch.no_grad: 0.5 ms (IQR 0.01) compiled" in found and "valid timings" in found
    # the finding of the issue: a ratio from timings a busy machine spoiled is not claimed
    busy = {"no_grad": {"eager": _timing(0.05), "compiled": _timing(52.1, 40, ["spread too wide"])}}
    said = tx.slowdown(busy)
    assert (
        "INVALID (1 of 2 timings invalid, e.g. spread too wide)" in said
        and "slower" not in said
        and "x " not in said
    )
    quiet = tx.slowdown({"no_grad": {"eager": _timing(1.0), "compiled": _timing(1.5)}})
    assert "slower" not in quiet and "1.5 ms" in quiet  # noise: said, not a finding
    assert tx.slowdown({}) == ""


def test_the_recompile_row_says_what_its_counts_show():
    require("torch")
    from labkit.frameworks.torch import explore as tx

    def rec(counts):
        return kit.Recompile("torch.compile", "batch size", ["a"] * len(counts), counts)

    assert "every size reused the first graph" in tx.recompiles_in_words(rec([1, 0, 0, 0]))
    dynamic = tx.recompiles_in_words(rec([1, 1, 0, 0]))
    assert "at call(s) 1, 2" in dynamic and "every later size reused that graph" in dynamic
    again = tx.recompiles_in_words(rec([1, 1, 0, 1]))  # the counts
    assert "compiled again at call(s) 4" in again and "reused that graph" not in again


def test_tensorflows_error_is_kept_to_its_cause_and_a_failed_option_is_not_a_fix():
    require("tensorflow")
    from labkit.frameworks.tensorflow import explore as tfx

    text = (
        'in user code:\n\n    File "/tmp/m.py", line 9, in call  *\n'
        "        for i in range(x.shape[1]):\n\n"
        "    TypeError: 'NoneType' object cannot be interpreted as an integer\n"
    )
    cause = tfx.cause(TypeError(text))
    assert cause == "TypeError: 'NoneType' object cannot be interpreted as an integer"
    keras_said = (  # Keras says its cause on the line after its own, then lists the arguments
        'in user code:\n\n    File "/tmp/m.py", line 8, in call\n        for i in range(3):\n\n'
        "    TypeError: Exception encountered when calling Sub.call().\n    \n"
        "    \x1b[1m'NoneType' object cannot be interpreted as an integer\x1b[0m\n    \n"
        "    Arguments received by Sub.call():\n      • x=tf.Tensor(shape=(None, None, 8))\n"
    )
    assert tfx.cause(TypeError(keras_said)) == cause
    failed = kit.Recompile(
        "tf.function(reduce_retracing=True)",
        "sequence length",
        ["a"] * 4,
        [1],
        [f"failed at call 2: {cause}"],
    )
    said = tfx._tried(failed)
    assert said.startswith("reduce_retracing=True fails here") and "NoneType" in said
    assert "traced" not in said  # not presented as tracing less


def test_outputs_flatten_as_the_framework_flattens_them_dataclasses_included():
    require("torch")
    import dataclasses

    from labkit.frameworks.torch import explore as tx

    import torch

    @dataclasses.dataclass
    class Out:
        logits: torch.Tensor
        extra: tuple

    out = {"a": Out(torch.ones(2), (torch.zeros(3), [torch.ones(1)])), "b": torch.ones(4)}
    leaves = tx.flatten(out)
    assert [tuple(t.shape) for _, t in leaves] == [(2,), (3,), (1,), (4,)]
    assert leaves[0][0] == "['a']['logits']"

    class ReturnsDataclass(torch.nn.Module):
        def forward(self, x):
            return Out(x * 2, (x.sum(1),))

    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    s = tx.Session(ReturnsDataclass(), [x], layout.Call())
    eager = tx.CHECKS["eager"](s)["path"]
    assert eager["status"] == "works" and "2 output(s)" in eager["reason"]
    assert eager["details"]["constant_output"] is False  # the false warning
    assert "does not depend" not in eager["reason"]

    class NoTensor(torch.nn.Module):
        def forward(self, x):
            return {"n": 3}

    eager = tx.CHECKS["eager"](tx.Session(NoTensor(), [x], layout.Call()))["path"]
    assert eager["status"] == "caveats" and "holds no tensor" in eager["reason"]
    assert "does not depend" not in eager["reason"]


def test_a_nearly_constant_output_makes_agreement_vacuous_and_says_so():
    require("torch")
    from labkit.frameworks.torch import explore as tx

    import torch

    class Saturated(torch.nn.Module):  # within 1e-6 of 0.1 for any input, like EfficientNetB0
        def forward(self, x):
            return torch.full((x.shape[0], 4), 0.1) + 1e-7 * torch.tanh(x.sum(1, keepdim=True))

    x = np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32)
    eager = tx.CHECKS["eager"](tx.Session(Saturated(), [x], layout.Call()))["path"]
    assert eager["details"]["constant_output"] is True
    assert "(nearly) does not depend on the input" in eager["reason"]


def test_recompile_reasons_name_the_models_arguments_and_mel_bins_are_not_a_length():
    require("torch")
    from labkit.frameworks.torch import explore as tx

    import torch

    class Tokens(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(100, 8)

        def forward(self, input_ids, attention_mask=None):
            return self.emb(input_ids) * attention_mask[..., None]

    ids, mask = _tokens()
    s = tx.Session(Tokens(), [ids, mask], layout.Call(names=("", "attention_mask")))
    found = tx.CHECKS["torch.compile(new shapes)"](s)
    reasons = [r for rec in found["recompiles"] for r in rec["reasons"]]
    assert reasons and any("input_ids" in r for r in reasons), reasons
    assert not any("xs[" in r for r in reasons), reasons

    class Whisperish(torch.nn.Module):  # (batch, 16 mel bins, frames), as Whisper's encoder
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(16, 8, 3, padding=1)

        def forward(self, input_features):
            return self.conv(input_features).mean(-1)

    mel = np.random.default_rng(0).standard_normal((2, 16, 40)).astype(np.float32)
    s = tx.Session(Whisperish(), [mel], layout.Call())
    eager = tx.CHECKS["eager"](s)
    seq = next(v for v, why in s.accepted if v.name == "sequence length")
    assert seq.dims == ((0, 2),) and seq.shapes[1] == "2x16x50"  # frames vary, mel bins stay
    assert "also takes other batch sizes and sequence lengths" in eager["path"]["reason"]
    assert any("last axis" in n for n in eager["notes"])


def test_an_onnx_failure_after_torch_export_is_placed_in_the_onnx_stage():
    require("torch")
    from labkit.frameworks.torch import explore as tx

    try:
        try:
            raise RuntimeError("No decomposition for aten::weird")
        except RuntimeError as inner:
            raise RuntimeError(
                "Failed to decompose the FX graph for ONNX compatibility."
            ) from inner
    except RuntimeError as exc:
        row = tx._onnx_failed(exc)["path"]
    assert "torch.export succeeded; decomposing the program" in row["reason"]
    assert "capture stopped" not in row["reason"]
    try:
        raise RuntimeError("Failed to export the model with torch.export. This is step 1/3")
    except RuntimeError as exc:
        assert "its first stage, torch.export, fails" in tx._onnx_failed(exc)["path"]["reason"]


def test_the_learners_frame_is_found_not_the_standard_librarys():
    import ctypes

    text = (
        f'File "{MODELS}", line 12, in forward\n'
        '  File "/v/lib/python3.11/site-packages/transformers/models/bert/modeling_bert.py", '
        "line 40, in forward\n"
        '  File "/v/lib/python3.11/site-packages/torch/nn/modules/module.py", line 9, in _call\n'
        f'  File "{ctypes.__file__}", line 5, in __getattr__\n'
    )
    assert kit.user_location(text) == "explore_real_models.py:12 in forward"
    library = text.split("\n", 1)[1]  # no learner's frame: the model library's, not ctypes'
    assert kit.user_location(library) == "modeling_bert.py:40 in forward"
    assert kit.user_location(library.split("\n", 2)[2]) == ""  # torch and ctypes only


def test_reasons_come_from_the_frameworks_error_classes():
    require("torch")
    from labkit.frameworks.torch import explore as tx

    class DispatchError(Exception):
        pass

    class ConversionError(Exception):
        pass

    inner = DispatchError(
        "No ONNX function found for <OpOverload(op='aten.cummax', overload='default')>."
    )
    try:
        try:
            raise inner
        except DispatchError as exc:
            raise ConversionError("Failed to convert the exported program (call_function)") from exc
    except ConversionError as exc:
        why, message, _ = tx.diagnose(exc)
    assert "aten.cummax.default has no ONNX translation" in why and "Dynamo" not in why
    assert message.startswith("DispatchError: No ONNX function found")
    cache = RuntimeError(
        "Found <class 'transformers.cache_utils.DynamicCache'> in output, which is not a known type."
    )
    why, _, _ = tx.diagnose(cache)
    assert "use_cache=False" in why and "register DynamicCache as a pytree node" in why
    strict = AssertionError("Encountered unrecognized type UserDefinedObjectVariable(DynamicCache)")
    assert "use_cache=False" in tx.diagnose(AssertionError(f"{strict} at output 1"))[0]
    rnn = "Attempted to wrap RNN, GRU, or LSTM\n  Explanation: Dynamo does not support RNN.\n  Hint: Set x"
    assert tx.dynamo_words(rnn) == "Dynamo does not support RNN; its hint: Set x"
    assert "allow_rnn" in tx.plain(rnn)


# --------------------------------------------------------------------------------------------
# PyTorch: transformers models, an LSTM, cummax, a hang, a crash


@pytest.mark.slow
@pytest.mark.costly  # a second real transformer; 10 runs one under smoke
def test_a_bert_like_model_with_a_real_mask_through_the_spec_agrees_and_recompiles_per_length():
    require_transformers()
    require("onnxruntime")
    report = explore.check(
        spec("bert_with_mask"), checks=["torch.compile(new shapes)", "onnx"], progress=False
    )
    assert report.inputs == "2x16:int64,2x16:int64"
    assert report.call == "model(2x16:int64, attention_mask=2x16:int64)"
    assert report.status("eager") == "works" and report.status("onnx") == "works"
    assert "run by ONNX Runtime; agrees with eager" in report.path("onnx").reason
    by = {r.varied: r for r in report.recompiles}
    assert by["sequence length"].shapes[1] == "2x20:int64,2x20:int64"
    assert by["sequence length"].compiles[0] == 1  # the example compiles; later lengths reuse
    assert any("attention_mask a 0/1 mask" in n for n in report.notes)
    assert "called as `model(2x16:int64, attention_mask=2x16:int64)`" in report.to_markdown()


@pytest.mark.slow
def test_a_decoders_cache_output_is_reported_and_the_hint_names_use_cache():
    require_transformers()
    report = explore.check(
        spec("gpt2"), "2x16:int64", checks=["torch.export", "torch.jit.trace"], progress=False
    )
    eager = report.path("eager")
    assert (
        "DynamicCache (past_key_values)" in eager.reason and "no path compares it" in eager.reason
    )
    export = report.path("torch.export")
    assert export.status == "fails" and "use_cache=False" in export.reason
    assert "register DynamicCache as a pytree node" in export.reason
    assert export.message.startswith("RuntimeError: Found <class")
    trace = report.path("torch.jit.trace")
    assert trace.status == "fails" and "use_cache=False" in trace.reason


@pytest.mark.slow
def test_a_dict_output_traces_with_strict_false_and_an_lstm_says_why_nothing_compiles():
    require_transformers()
    report = explore.check(spec("bert_with_mask"), checks=["torch.jit.trace"], progress=False)
    trace = report.path("torch.jit.trace")
    assert trace.status == "caveats" and "strict=False" in trace.reason
    assert "BaseModelOutputWithPoolingAndCrossAttentions" in trace.reason
    assert trace.details["strict"] is False
    lstm = explore.check(spec("lstm"), "2x16:int64", checks=["torch.compile"], progress=False)
    row = lstm.path("torch.compile")
    assert row.status == "caveats" and "Dynamo captured no graph (an nn.RNN/GRU/LSTM" in row.reason
    assert "allow_rnn=True" in row.message
    (brk,) = lstm.graph_breaks
    assert brk.location.startswith("explore_real_models.py:")  # the learner's line, not torch's
    assert set(row.details["ms_per_call"]) == {"no_grad", "inference_mode"}
    timings = [x for t in row.details["ms_per_call"].values() for x in t.values()]
    assert all(x["ms"] > 0 and isinstance(x["invalid"], list) for x in timings)


@pytest.mark.slow
def test_an_operator_without_an_onnx_translation_is_named_as_such():
    require("torch")
    require("onnxruntime")
    report = explore.check(spec("no_onnx"), "2x8", checks=["onnx"], progress=False)
    row = report.path("onnx")
    assert row.status == "fails" and "aten.cummax.default has no ONNX translation" in row.reason
    assert "Dynamo" not in row.reason and row.message.startswith("DispatchError")


@pytest.mark.slow
def test_timeout_20_on_a_model_that_hangs_returns_within_30_s_and_names_the_option():
    # the limit counts from the worker's start, PyTorch's import included: right after a fresh
    # install (CI) that import alone took over 8 s, so a shorter limit stops the load instead
    require("torch")
    t0 = time.perf_counter()
    proc = run_labkit("explore", spec("hangs"), "--input", "2x3", "--timeout", "20", timeout=120)
    took = time.perf_counter() - t0
    assert proc.returncode == 2, proc.stderr[-2000:]
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert "eager did not finish within 20 s" in line and "--timeout" in line
    assert "timeout_s" not in line and "no other path was checked" in line
    assert took < 45, f"took {took:.0f} s"  # 20 s, plus starting PyTorch on a busy machine


@pytest.mark.slow
def test_a_crash_in_eager_stops_the_run_and_says_what_ran(tmp_path):
    require("torch")
    (tmp_path / "dies.py").write_text(
        "import os, signal, torch\n"
        "class Dies(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        "def build():\n"
        "    return Dies()\n"
    )
    report = explore.check(f"{tmp_path / 'dies.py'}:build", "2x3", progress=False)
    assert [p.path for p in report.paths] == ["eager"] and report.status("eager") == "crashed"
    assert "no other check ran" in report.path("eager").reason
    assert "fresh process" not in report.path("eager").reason
    proc = run_labkit("explore", f"{tmp_path / 'dies.py'}:build", "--input", "2x3", timeout=120)
    (line,) = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert proc.returncode == 2 and "died (killed by SIGKILL)" in line
    assert "--input" not in line  # a crash is not a shape problem


# --------------------------------------------------------------------------------------------
# TensorFlow and ONNX: channels-last images, a constant output, an int64 input


@pytest.mark.slow
def test_a_channels_last_keras_cnn_varies_height_and_width():
    require("tensorflow")
    report = explore.check(
        spec("keras_cnn"), "2x32x32x3", checks=["tf.function(new shapes)"], progress=False
    )
    assert report.status("eager") == "works"
    assert "also takes other batch sizes and image sizes" in report.path("eager").reason
    image = next(r for r in report.recompiles if r.varied == "image size")
    assert image.shapes == ["2x32x32x3", "2x40x40x3", "2x48x48x3", "2x56x56x3"]
    assert any("channels-last (NHWC)" in n and "Keras" in n for n in report.notes)


@pytest.mark.slow
def test_a_keras_application_with_random_weights_warns_that_agreement_is_vacuous():
    require("tensorflow")
    report = explore.check(
        spec("keras_mobilenet"), "2x32x32x3", checks=["tf.function"], progress=False
    )
    eager = report.path("eager")
    assert eager.details["constant_output"] is True
    assert "the output (nearly) does not depend on the input" in eager.reason
    assert "image size (Keras model.inputs fixes it at 32x32)" in eager.reason
    md = report.to_markdown()
    assert md.index("does not depend on the input") < md.index("| path |")  # said first


# --------------------------------------------------------------------------------------------
# whole reports (costly: every path compiles and exports)


@pytest.mark.slow
@pytest.mark.costly
@pytest.mark.parametrize("name, shapes", [("bert_with_mask", None), ("gpt2_no_cache", None)])
def test_every_path_of_a_transformer_given_its_inputs_agrees_with_eager(name, shapes):
    require_transformers()
    require("onnxruntime")
    report = explore.check(spec(name), shapes, progress=False)
    statuses = {p.path: p.status for p in report.paths}
    assert statuses.pop("torch.jit.trace") == "caveats"  # strict=False, with TracerWarnings
    assert set(statuses.values()) == {"works"}, report.to_markdown()
    assert any(r.varied == "sequence length" for r in report.recompiles)
