"""The benchmark results file: one JSON object per line (JSONL), appended as each cell finishes.

Every line is one *cell* (framework x mode x task x batch size x precision on a device), either
measured (``status: "ok"``) or failed (``status: "failed"`` with ``error``; a combination that a
framework does not offer is a failure whose error starts with ``"unsupported:"`` and that carries
``"unsupported": true``). The fields, their types and meanings are in :data:`FIELDS`.

Each measured record carries its **validity verdict** (``valid``, ``invalid_reasons``: enough
timed calls and time, a spread under :data:`labkit.bench.MAX_REL_IQR`, a quiet machine; see
:func:`labkit.bench.verdict`) and whether it lies **above the compute ceiling** estimated for its
precision (``above_ceiling`` with ``ceiling_note``: the likely cause). Invalid records are kept
and shown flagged; :func:`valid` is what evidence (claims, the guide) is drawn from.

Reading is strict, because notebooks and the selection guide trust these numbers: a corrupt line
raises ``ValueError`` naming the file, the line and the fix. The one exception is a truncated
*last* line, which is what an interrupted write leaves behind: it is skipped with a warning, so
nothing already measured is lost. A time that is zero or negative, NaN or an infinity, a line
nested deeper than :data:`labkit.util.jsonio.MAX_DEPTH` and a schema newer than this labkit's are
errors naming the line; a framework that is not registered is kept, with a warning
(:class:`UnregisteredFramework`). Appending takes an exclusive lock on the file (:func:`append`),
so several processes may write one file.

Schema versions: files written before version 2 still load. A version-1 record is checked
against version 1's fields and then read with the fields it lacks filled in (:func:`upgrade`):
``model`` "resnet50"; ``threads`` ``{"intra": <its thread count>, "inter": null}`` (inter-op
threads were not recorded); ``cache`` "unknown"; ``export_s``, ``recipe`` and ``others_cpus``
null; ``above_ceiling`` true when its ``ceiling_share`` exceeded 1 (the ceiling of that time);
``valid`` and ``invalid_reasons`` judged by today's rules from its raw times, its profile's
minimums and the load average it recorded when it started.

One pairing (:func:`pair`, :func:`baseline_pairs`), one ratio with a bootstrap confidence
interval from the raw times (:func:`ratio`) and one break-even (:func:`break_even`) serve the
tables here, the figures (:mod:`labkit.plots`), the claim check (:mod:`labkit.claims`), the
guide and the notebooks.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from . import bench, profiles
from .frameworks import MODES, NAMES, specs
from .frameworks.contract import TASKS
from .util import jsonio

SCHEMA_VERSION = 2
#: the model every cell measures unless it says otherwise
DEFAULT_MODEL = "resnet50"
#: what a record without these fields (written before they existed, or by hand) reads as
DEFAULTS: dict[str, object] = {"model": DEFAULT_MODEL, "input_shape": ""}
CACHE_STATES: tuple[str, ...] = ("cold", "warm", "unknown")

#: the eager mode of each framework that has one (from the registry); every other mode is a
#: graph mode. A runtime of exported graphs (ONNX Runtime) has none: its speedup is measured
#: against the eager mode of the framework it runs exports of (see :data:`BASELINE`).
EAGER_MODES: dict[str, str] = {s.name: s.eager for s in specs() if s.eager is not None}
BASELINE: dict[str, tuple[str, str]] = {
    s.name: (s.name, s.eager)
    if s.eager is not None
    else (s.exported_from, EAGER_MODES[s.exported_from])
    for s in specs()
}

_NUM = (int, float)
_OPT_NUM = (int, float, type(None))
_NONE = type(None)
#: field -> (accepted types, meaning). Every record carries every field; measured numbers are
#: null in a failed record.
FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "schema": ((int,), "version of this schema (2; 1 for a record upgraded on loading)"),
    "model": (
        (str,),
        (
            "the network measured: resnet50 (labkit.resnet), or the spec of a learner's model "
            "('module:function' or 'path/file.py:function', labkit.explore.bench)"
        ),
    ),
    "input_shape": (
        (str,),
        (
            "another model's input shapes, batch first ('8x16x32', several separated by commas); "
            "'' for ResNet-50 (batch_size x 3 x image_size x image_size)"
        ),
    ),
    "framework": ((str,), "a registered framework: " + " | ".join(NAMES)),
    "mode": ((str,), "execution mode, one of labkit.frameworks.spec(framework).modes"),
    "task": ((str,), "latency (batch 1, p50/p90) | throughput (larger batch) | train (SGD step)"),
    "batch_size": ((int,), "images per call"),
    "precision": ((str,), "fp32 | bf16 (in-process deployment records also int8-...)"),
    "image_size": (
        (int,),
        "input side in pixels (square RGB images); 0 for another model (see input_shape)",
    ),
    "device": ((str,), "cpu | gpu"),
    "status": ((str,), "ok | failed"),
    "error": (((str, _NONE)), "why the cell failed (null when ok)"),
    "unsupported": (
        (bool,),
        "true when the combination does not exist here (error 'unsupported: ...')",
    ),
    "valid": (
        (bool,),
        (
            "the validity verdict: enough timed calls and time, a small spread, a quiet machine "
            "(labkit.bench.verdict); false for a failed cell"
        ),
    ),
    "invalid_reasons": ((list,), "each rule an invalid record broke, in words ([] when valid)"),
    "export_s": (
        _OPT_NUM,
        "seconds of exporting the model before the cell could run it (ONNX Runtime); null: none",
    ),
    "prepare_s": (
        _OPT_NUM,
        "seconds to build the model and prepare the step (trace, session, ...), export excluded",
    ),
    "first_call_s": (_OPT_NUM, "seconds of the first call, timed apart (tracing / compilation)"),
    "cache": (
        (str,),
        (
            "cold: every compile cache (Inductor, Triton, XLA, MindSpore, the ONNX export) started "
            "empty for this cell | warm: caches shared with earlier runs, so the first call may "
            "reuse their work | unknown (schema 1)"
        ),
    ),
    "median_s": (_OPT_NUM, "median seconds per call in the steady state"),
    "iqr_s": (_OPT_NUM, "interquartile range of the seconds per call"),
    "p90_s": (_OPT_NUM, "90th percentile of the seconds per call"),
    "mean_s": (_OPT_NUM, "mean seconds per call"),
    "images_per_s": (_OPT_NUM, "batch_size / median_s (another model: samples per second)"),
    "peak_rss_mb": (_OPT_NUM, "peak resident memory of the cell's process, MiB"),
    "ceiling_images_per_s": (
        _OPT_NUM,
        (
            "the CPU's estimated compute ceiling at this size, task and precision; null on a GPU "
            "or where the ceiling is unknown (labkit.hardware.ceiling)"
        ),
    ),
    "ceiling_share": (_OPT_NUM, "images_per_s / ceiling_images_per_s (null without a ceiling)"),
    "above_ceiling": ((bool,), "images_per_s above the estimated ceiling: flagged, not an error"),
    "ceiling_note": ((str,), "when above the ceiling: its likely cause, in words; else ''"),
    "repeats": (_OPT_NUM, "timed calls"),
    "warmup": (_OPT_NUM, "untimed calls after the first call"),
    "times_s": ((list, _NONE), "the raw seconds of every timed call"),
    "notes": ((str,), "how the adapter realised the mode and precision"),
    "recipe": (
        (dict, _NONE),
        (
            "train: the hyper-parameters the framework applied, read back from its optimizer and "
            "loss objects (labkit.recipe.TRAIN); null otherwise"
        ),
    ),
    "threads": (
        (dict,),
        (
            'the thread counts in effect, read back from the framework: {"intra": N, "inter": M} '
            "(null values: not read back, e.g. the cell failed first)"
        ),
    ),
    "thread_env": (
        (dict,),
        "thread-related environment of the cell's process (OMP_NUM_THREADS, OMP_WAIT_POLICY, ...)",
    ),
    "profile": ((str,), "smoke | standard | full"),
    "versions": ((dict,), "package versions in the cell's process"),
    "machine": ((dict,), "labkit.hardware.fingerprint()"),
    "wall_s": (_OPT_NUM, "seconds the whole cell subprocess took"),
    "load_1min": (
        _OPT_NUM,
        (
            "the machine's 1-minute load average when timing started (the cell's start in "
            "schema 1); null where the OS does not report it"
        ),
    ),
    "others_cpus": (
        _OPT_NUM,
        (
            "CPUs other processes kept busy, on average, while the cell was timed (/proc/stat); null "
            "where it cannot be read"
        ),
    ),
    "log": ((str,), "the tail of the cell's stderr when it failed, else ''"),
    "timestamp": ((str,), "when the cell finished, ISO 8601 UTC"),
}
#: fields schema 1 did not have (filled in by :func:`upgrade`)
NEW_IN_2: tuple[str, ...] = (
    "model",
    "input_shape",
    "valid",
    "invalid_reasons",
    "export_s",
    "cache",
    "above_ceiling",
    "ceiling_note",
    "recipe",
    "others_cpus",
)
#: fields that must be numbers (not null) in an ``ok`` record
MEASURED = ("first_call_s", "median_s", "iqr_s", "p90_s", "images_per_s", "peak_rss_mb", "repeats")
#: the fields that identify a cell (two records with the same key measured the same thing)
KEY = (
    "model",
    "framework",
    "mode",
    "task",
    "batch_size",
    "precision",
    "image_size",
    "device",
    "profile",
    "input_shape",
)
#: what two records must share to be compared: everything but framework, mode and profile
CONTEXT = ("model", "input_shape", "task", "precision", "device", "image_size", "batch_size")

_BENCH_FIX = "python -m labkit bench --resume --out {path}"


def key(record: dict) -> tuple:
    return tuple(record.get(k, DEFAULTS.get(k)) for k in KEY)


def model_name(model: str) -> str:
    """A short name of a record's model: ``resnet50``; ``file:build_model`` for a spec (the
    file's or the module's last name, then the builder); a saved model's file name."""
    where, _, function = model.rpartition(":")
    if not where or not function.isidentifier():
        return Path(model).name
    stem = Path(where).stem if where.endswith(".py") else where.rpartition(".")[2]
    return f"{stem}:{function}"


def custom(record: dict) -> bool:
    """Whether the record measured a learner's model rather than the ResNet-50."""
    return record.get("model", DEFAULT_MODEL) != DEFAULT_MODEL


def _type_problems(record: dict, fields: dict) -> list[str]:
    out = [f"missing field {f!r}" for f in fields if f not in record]
    for f, (types, _) in fields.items():
        v = record.get(f)
        if f in record and not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            out.append(f"field {f!r} has type {type(v).__name__}")
        elif isinstance(v, float) and not math.isfinite(v):
            out.append(f"field {f!r} is not a finite number ({v})")
    return out


def _status_problems(record: dict) -> list[str]:
    out = []
    status = record.get("status")
    if status == "ok":
        out += [
            f"ok record without a number in {f!r}"
            for f in MEASURED
            if not isinstance(record.get(f), _NUM)
        ]
    elif status == "failed":
        if not isinstance(record.get("error"), str) or not record["error"]:
            out.append("failed record without an 'error' message")
        elif record.get("unsupported") != record["error"].startswith("unsupported:"):
            out.append("'unsupported' must be true exactly when error starts with 'unsupported:'")
    else:
        out.append(f"status must be 'ok' or 'failed', got {status!r}")
    return out


#: times (and the rate) that must be > 0 where a record gives them, and those that may be 0
POSITIVE = ("first_call_s", "median_s", "p90_s", "mean_s", "images_per_s")
NON_NEGATIVE = ("iqr_s", "export_s", "prepare_s", "wall_s")


def _number(v: object) -> bool:
    return isinstance(v, _NUM) and not isinstance(v, bool)


def _time_problems(record: dict) -> list[str]:
    out = [
        f"field {f!r} must be {'> 0' if f in POSITIVE else '>= 0'}, got {record[f]!r}"
        for f in POSITIVE + NON_NEGATIVE
        if _number(record.get(f)) and (record[f] <= 0 if f in POSITIVE else record[f] < 0)
    ]
    times = record.get("times_s")
    bad = [t for t in times if not _number(t) or not t > 0] if isinstance(times, list) else []
    if bad:
        out.append(
            f"field 'times_s' holds {len(bad)} value(s) that are not times > 0 seconds "
            f"(first: {bad[0]!r})"
        )
    schema = record.get("schema")
    if _number(schema) and schema > SCHEMA_VERSION:
        out.append(f"schema {schema} is newer than this labkit's ({SCHEMA_VERSION})")
    return out


#: schema 1's fields: today's minus the new ones, with ``threads`` a number
FIELDS_V1: dict[str, tuple[tuple[type, ...], str]] = {
    **{f: v for f, v in FIELDS.items() if f not in NEW_IN_2},
    "threads": ((int,), "intra-op threads given to the framework"),
}


def problems(record: object) -> list[str]:
    """What is wrong with one record (empty when it follows the schema of its version)."""
    if not isinstance(record, dict):
        return [f"expected a JSON object, got {type(record).__name__}"]
    if record.get("schema") == 1 and "valid" not in record:  # a version-1 line, as written
        return _type_problems(record, FIELDS_V1) + _status_problems(record) + _time_problems(record)
    out = _type_problems(record, FIELDS) + _status_problems(record) + _time_problems(record)
    if record.get("cache") not in CACHE_STATES and "cache" in record:
        out.append(f"cache must be one of {', '.join(CACHE_STATES)}, got {record['cache']!r}")
    if isinstance(record.get("valid"), bool):
        reasons = record.get("invalid_reasons")
        if record["valid"] and reasons:
            out.append("a valid record must have no invalid_reasons")
        if not record["valid"] and not reasons:
            out.append("an invalid record must say why (invalid_reasons)")
        if record["valid"] and record.get("status") != "ok":
            out.append("a failed record cannot be valid")
    return out


def validate(record: dict) -> dict:
    """``record`` if it follows the schema, else ``ValueError`` listing the problems."""
    found = problems(record)
    if found:
        raise ValueError("invalid benchmark record: " + "; ".join(found))
    return record


def judge(record: dict) -> list[str]:
    """The validity verdict of a record from its own fields: why it is invalid ([]: valid).

    :func:`labkit.bench.verdict` with the record's raw times (else its repeats, median and
    IQR), its profile's minimum calls and time, its intra-op threads, and the machine readings
    it carries (``others_cpus``, else ``load_1min``).
    """
    if record.get("status") != "ok":
        return ["unsupported here" if record.get("unsupported") else "the cell failed"]
    try:
        prof = profiles.get(record.get("profile"))
    except ValueError:
        return [f"unknown profile {record.get('profile')!r}: its minimums cannot be checked"]
    times = record.get("times_s")
    if not times:  # no raw times: the count, and a spread around the median with that IQR
        n, med, spread = int(record["repeats"]), record["median_s"], record["iqr_s"]
        times = [med - spread / 2] + [med] * max(0, n - 2) + [med + spread / 2] * (n > 1)
    threads = (record.get("threads") or {}).get("intra")
    machine = record.get("machine") or {}
    return bench.verdict(
        times,
        prof.min_repeats,
        prof.min_time_s,
        int(threads or machine.get("threads") or machine.get("cores") or 1),
        record.get("others_cpus"),
        record.get("load_1min"),
        machine.get("logical_cpus") or machine.get("cores"),
    )


def upgrade(record: dict) -> dict:
    """A record in today's shape: a schema-1 record with the fields it lacks filled in (see the
    module's docstring); a current record unchanged."""
    if record.get("schema") != 1 or "valid" in record:
        return record
    share = record.get("ceiling_share")
    above = isinstance(share, _NUM) and share > 1
    out = {
        **record,
        **DEFAULTS,
        "threads": {"intra": record.get("threads"), "inter": None},
        "cache": "unknown",
        "export_s": None,
        "recipe": None,
        "others_cpus": None,
        "above_ceiling": above,
        "ceiling_note": "above the ceiling estimated when it was measured (schema 1)"
        if above
        else "",
    }
    reasons = judge(out)
    out.update(valid=not reasons, invalid_reasons=reasons)
    return validate(out)


class BadLine(ValueError):
    """A line of a JSON Lines text that is not JSON (and not an interrupted last write)."""

    def __init__(self, line: int, msg: str):
        super().__init__(f"line {line} is not JSON ({msg})")
        self.line, self.msg = line, msg


def parse_lines(text: str) -> tuple[list[tuple[int, object]], int | None]:
    """JSON Lines: ``(line number, value)`` of every non-blank line, and the number of a
    truncated last line (no newline after it and not JSON: a write that was interrupted),
    which is left out, else None. Raises :class:`BadLine` for any other line that is not JSON,
    and for a line that holds NaN or an infinity or nests deeper than
    :data:`labkit.util.jsonio.MAX_DEPTH` (read by :func:`labkit.util.jsonio.loads`: never a
    ``RecursionError``)."""
    lines = text.split("\n")
    complete = text.endswith("\n")
    parsed: list[tuple[int, object]] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            parsed.append((n, jsonio.loads(line)))
        except jsonio.JSONError as exc:
            if exc.syntax and n == len(lines) and not complete:
                return parsed, n
            raise BadLine(n, exc.msg) from None
    return parsed, None


def load(path: str | os.PathLike) -> list[dict]:
    """All records of a results file, validated; schema-1 records are upgraded in memory
    (:func:`upgrade`; the file is not changed).

    Raises ``ValueError`` (naming the file, the line and the fix) for a missing or unreadable
    file, a corrupt line or a record that breaks the schema. A truncated last line (an
    interrupted write) is skipped with a ``UserWarning`` instead.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ValueError(
            f"cannot read results file {path}: {exc.strerror or exc}; fix: give "
            f"the path of a file written by `python -m labkit bench --out "
            f"FILE.jsonl`"
        ) from exc
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path} is not a labkit results file (not UTF-8 text: {exc.reason}); "
            f"fix: give a .jsonl file written by `python -m labkit bench`"
        ) from exc
    try:
        parsed, truncated = parse_lines(text)
    except BadLine as exc:
        raise ValueError(
            f"{path} line {exc.line} is not valid JSON ({exc.msg}): not a labkit "
            f"results file, or a damaged one; fix: give a file written by "
            f"`python -m labkit bench`, or delete or repair that line (the "
            f"other lines are intact)"
        ) from exc
    if truncated:
        warnings.warn(
            f"{path} line {truncated} is truncated (an interrupted write) and was "
            f"skipped; the {len(parsed)} complete records are kept; "
            f"`{_BENCH_FIX.format(path=path)}` measures that cell again",
            UserWarning,
            stacklevel=2,
        )
    records: list[dict] = []
    for n, record in parsed:
        _refuse_newer(path, n, record)
        found = problems(record)
        if found:
            raise ValueError(
                f"{path} line {n} is not a labkit benchmark record: "
                f"{'; '.join(found[:4])}; fix: give a file written by "
                f"`python -m labkit bench`, or delete that line"
            )
        records.append(upgrade(record))
    _warn_unregistered(path, parsed)
    return records


class UnregisteredFramework(UserWarning):
    """A results file holds records of a framework this labkit does not register: they are kept
    (shown in tables, compared with nothing), and the warning names it."""


def _refuse_newer(path: Path, n: int, record: object) -> None:
    schema = record.get("schema") if isinstance(record, dict) else None
    if _number(schema) and schema > SCHEMA_VERSION:
        raise ValueError(
            f"{path} line {n} was written by a newer labkit (results schema {schema}; this "
            f"labkit reads schemas 1 to {SCHEMA_VERSION}); fix: upgrade labkit (pip install -U "
            f"labkit, or git pull in the course folder) and read the file again"
        )


def _warn_unregistered(path: Path, parsed: list[tuple[int, object]]) -> None:
    first: dict[str, tuple[int, int]] = {}  # framework -> (first line, records)
    for n, r in parsed:
        fw = r["framework"]
        if fw not in NAMES:
            line, count = first.get(fw, (n, 0))
            first[fw] = (line, count + 1)
    for fw, (line, count) in first.items():
        warnings.warn(
            UnregisteredFramework(
                f"{path} line {line}: framework {fw!r} ({count} record(s)) is not registered "
                f"in this labkit (it knows {', '.join(NAMES)}); its records are kept and shown, "
                f"but compared with no baseline"
            ),
            stacklevel=3,
        )


def truncated_tail(path: str | os.PathLike) -> bytes:
    """The bytes after the last newline of ``path`` (a write that was interrupted), or b''.

    Reads from the end (a file that ends cleanly costs one byte), so appending stays cheap
    however long the file grows."""
    if not os.path.exists(path):
        return b""
    with open(path, "rb") as f:
        pos, step, tail = f.seek(0, os.SEEK_END), 1, b""
        while pos > 0:
            step = min(step, pos)
            pos = f.seek(pos - step)
            block = f.read(step)
            newline = block.rfind(b"\n")
            if newline >= 0:
                return block[newline + 1 :] + tail
            tail, step = block + tail, 1 << 16
        return tail


def repair_tail(path: str | os.PathLike) -> bytes:
    """Move a truncated last line out of ``path`` (to ``path + '.partial'``): appends stay valid.

    Returns the bytes moved (b'' when the file ends cleanly). Nothing that parses is touched.
    """
    tail = truncated_tail(path)
    if tail:
        with open(f"{os.fspath(path)}.partial", "ab") as f:
            f.write(tail + b"\n")
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - len(tail))
    return tail


def append(path: str | os.PathLike, record: dict) -> None:
    """Validate ``record`` and append it as one line, fsynced (survives a crash).

    One writer at a time: the repair of a truncated tail (:func:`repair_tail`) and the write
    happen under an exclusive lock on the file (:func:`labkit.util.jsonio.locked`), so two processes
    appending to one file (a notebook and a terminal) lose nothing and interleave no lines.
    ``OSError`` when the file cannot be written (a full disk may leave part of the line, which
    the next append moves to ``.partial``)."""
    line = json.dumps(validate(record), sort_keys=True, allow_nan=False) + "\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with jsonio.locked(path) as f:
        repair_tail(path)
        jsonio.write_all(f, line.encode("utf-8"))


# ---------------------------------------------------------------------------------------------
# queries


def ok(records: Iterable[dict]) -> list[dict]:
    return [r for r in records if r.get("status") == "ok"]


def is_valid(record: dict) -> bool:
    """Whether a record counts as evidence: measured, and its validity verdict is ``True``.

    Every record that :func:`load` or :func:`make` returns carries a verdict (version-1 lines
    are judged on loading); a hand-made dict without one is not evidence.
    """
    return record.get("status") == "ok" and record.get("valid") is True


def valid(records: Iterable[dict]) -> list[dict]:
    """The measured records that passed their validity verdict: what counts as evidence."""
    return [r for r in records if is_valid(r)]


def invalid(records: Iterable[dict]) -> list[dict]:
    """The measured records that did not pass their validity verdict (kept, shown flagged)."""
    return [r for r in ok(records) if not is_valid(r)]


def latest(records: Iterable[dict]) -> list[dict]:
    """One record per cell: the last one written (a later run re-measures a cell)."""
    by_key: dict[tuple, dict] = {}
    for r in records:
        by_key.pop(key(r), None)  # keep file order of the latest
        by_key[key(r)] = r
    return list(by_key.values())


def _match(r: dict, **where) -> bool:
    return all(v is None or r.get(k) == v for k, v in where.items())


def best(
    records: Iterable[dict],
    framework: str,
    task: str,
    precision: str | None = None,
    device: str | None = None,
) -> dict | None:
    """The fastest measured record (highest images/s) of ``framework`` on ``task``, or None."""
    found = [
        r
        for r in ok(records)
        if _match(r, framework=framework, task=task, precision=precision, device=device)
    ]
    return max(found, key=lambda r: r["images_per_s"], default=None)


# ---------------------------------------------------------------------------------------------
# one pairing, one ratio, one break-even


def context(record: dict) -> tuple:
    """What a record must share with another to be compared with it (:data:`CONTEXT`)."""
    defaults = {**DEFAULTS, "precision": "fp32", "device": "cpu"}
    return tuple(record.get(k, defaults.get(k)) for k in CONTEXT)


def _usable(records: Iterable[dict], include_invalid: bool) -> list[dict]:
    """The latest record of each cell, measured (and valid unless ``include_invalid``)."""
    cells = [r for r in latest(records) if r.get("status") == "ok"]
    cells = [r for r in cells if float(r.get("median_s") or 0) > 0]
    return cells if include_invalid else valid(cells)


def pair(
    records: Iterable[dict],
    num: tuple[str, str],
    den: tuple[str, str],
    task: str,
    precision: str = "fp32",
    device: str = "cpu",
    include_invalid: bool = False,
) -> tuple[dict, dict] | None:
    """The two records to compare: framework/mode ``num`` against ``den``, declared up front.

    Both sides are the latest record of their cell, measured and (unless ``include_invalid``)
    valid, on ``task``, ``precision`` and ``device``, in the same :func:`context` (model, image
    size, batch size). Where both were measured in several contexts, the largest image size
    (then batch) wins. None when a side is missing.
    """
    cells = [
        r
        for r in _usable(records, include_invalid)
        if r.get("task") == task
        and r.get("precision", "fp32") == precision
        and r.get("device", "cpu") == device
    ]
    nums = {context(r): r for r in cells if (r["framework"], r["mode"]) == tuple(num)}
    dens = {context(r): r for r in cells if (r["framework"], r["mode"]) == tuple(den)}
    shared = set(nums) & set(dens)
    if not shared:
        return None
    size, batch = CONTEXT.index("image_size"), CONTEXT.index("batch_size")
    best_ctx = max(shared, key=lambda c: (c[size] or 0, c[batch] or 0))
    return nums[best_ctx], dens[best_ctx]


def baseline_pairs(
    records: Iterable[dict], include_invalid: bool = False
) -> Iterator[tuple[dict, dict]]:
    """Each measured graph-mode cell with the eager cell it is compared against (its
    :data:`BASELINE`, same :func:`context`)."""
    cells = _usable(records, include_invalid)
    pool = {(r["framework"], r["mode"], context(r)): r for r in cells}
    for r in cells:
        if EAGER_MODES.get(r["framework"]) == r["mode"] or r["framework"] not in BASELINE:
            continue
        base = pool.get((*BASELINE[r["framework"]], context(r)))
        if base is not None:
            yield r, base


@dataclass(frozen=True)
class Estimate:
    """A ratio and its confidence interval, and how the interval was found."""

    value: float
    low: float
    high: float
    method: str = ""

    def __post_init__(self):
        if not (self.low <= self.value <= self.high):
            raise ValueError(
                f"estimate {self.value} lies outside its interval [{self.low}, {self.high}]"
            )

    @property
    def significant(self) -> bool:
        """Whether the interval leaves out 1 (the two sides can be told apart)."""
        return not (self.low <= 1.0 <= self.high)

    def __str__(self) -> str:
        return f"{self.value:.2f}x [{self.low:.2f}-{self.high:.2f}]"


#: confidence level of every ratio's interval, and the bootstrap's resamples
CONFIDENCE = 0.95
RESAMPLES = 2000


def _ips(r: dict) -> float:
    return r["batch_size"] / r["median_s"]


def ratio(num: dict, den: dict, confidence: float = CONFIDENCE, seed: int = 0) -> Estimate:
    """Throughput (images/s) of ``num`` over ``den``, with a confidence interval.

    The interval is a percentile bootstrap from the raw call times (:data:`RESAMPLES`
    resamples of each side's times, the ratio of their medians each time; seeded, so the same
    records give the same interval). Records without raw times fall back to propagating the
    two relative IQRs: ``ratio * sqrt((iqr_n/med_n)^2 + (iqr_d/med_d)^2)`` either side.
    """
    for r in (num, den):
        if float(r["median_s"]) <= 0:
            raise ValueError(
                f"record has a non-positive median time {r['median_s']}: "
                f"{r.get('framework')}/{r.get('mode')}/{r.get('task')}"
            )
    value = _ips(num) / _ips(den)
    tn, td = num.get("times_s") or [], den.get("times_s") or []
    if len(tn) >= 2 and len(td) >= 2:
        import numpy as np

        rng = np.random.default_rng(seed)

        def medians(times: list[float]) -> np.ndarray:
            t = np.asarray(times, dtype=float)
            return np.median(t[rng.integers(0, len(t), (RESAMPLES, len(t)))], axis=1)

        boot = (num["batch_size"] / medians(tn)) / (den["batch_size"] / medians(td))
        lo, hi = np.quantile(boot, [(1 - confidence) / 2, (1 + confidence) / 2])
        return Estimate(
            value,
            min(float(lo), value),
            max(float(hi), value),
            f"{confidence:.0%} bootstrap interval from the raw times",
        )
    rel = math.hypot(
        float(num.get("iqr_s") or 0) / num["median_s"],
        float(den.get("iqr_s") or 0) / den["median_s"],
    )
    return Estimate(
        value,
        max(value * (1 - rel), 0.0),
        value * (1 + rel),
        "propagated relative IQRs (no raw times)",
    )


def speedups(records: Iterable[dict], include_invalid: bool = False) -> list[dict]:
    """Each graph mode against its eager baseline, same model, task, batch, precision, size and
    device: ``speedup`` = graph images/s over eager's (> 1: the graph mode is faster), with
    its confidence interval (:func:`ratio`). ONNX Runtime is compared with torch eager (see
    :data:`BASELINE`). Invalid records are left out unless ``include_invalid``; each row says
    whether both sides are valid.
    """
    rows = []
    for r, base in baseline_pairs(records, include_invalid):
        est = ratio(r, base)
        rows.append(
            {
                **dict(zip(KEY, key(r))),
                "baseline": f"{base['framework']} {base['mode']}",
                "speedup": est.value,
                "speedup_low": est.low,
                "speedup_high": est.high,
                "significant": est.significant,
                "interval": est.method,
                "valid": is_valid(r) and is_valid(base),
                "eager_median_s": base["median_s"],
                "graph_median_s": r["median_s"],
            }
        )
    return rows


@dataclass(frozen=True)
class BreakEven:
    """When a graph mode's one-off cost has paid for itself against eager."""

    extra_s: float  #: one-off seconds beyond eager's (export + prepare + first call)
    saving_s: float  #: seconds each later call saves (eager median - graph median)
    calls: float  #: calls after the first that repay ``extra_s``; 0: nothing to repay; inf: never


def one_off_s(record: dict) -> float:
    """A record's one-off seconds before its steady state: export + prepare + first call."""
    return (
        float(record.get("export_s") or 0)
        + float(record.get("prepare_s") or 0)
        + float(record["first_call_s"])
    )


def break_even(record: dict, eager_record: dict) -> BreakEven:
    """How many calls ``record`` (a graph mode) needs before its one-off cost has paid off.

    The lab's one break-even formula. ``extra = one-off(record) - one-off(eager_record)`` (each
    :func:`one_off_s`: export, prepare and first call; missing parts count 0); each later call
    saves ``eager median - graph median``. ``calls = extra / saving`` counts the calls after the
    first: 0 when the graph mode is not even slower to start, ``inf`` when it is not faster per
    call. For ``n`` calls in all, eager takes ``one-off + (n - 1) x median`` and so does the
    graph mode: the two totals meet after ``1 + calls`` calls.
    """
    for name, r in (("record", record), ("eager_record", eager_record)):
        for f in ("first_call_s", "median_s"):
            v = r.get(f)
            if not isinstance(v, _NUM) or not (v >= 0 and math.isfinite(v)):
                raise ValueError(f"{name}[{f!r}] must be a finite time >= 0 seconds, got {v!r}")
    extra = one_off_s(record) - one_off_s(eager_record)
    saving = eager_record["median_s"] - record["median_s"]
    calls = 0.0 if extra <= 0 else (extra / saving if saving > 0 else math.inf)
    return BreakEven(extra, saving, calls)


def break_even_rows(records: Iterable[dict], include_invalid: bool = False) -> list[dict]:
    """:func:`break_even` of every graph-mode cell against its eager baseline (see
    :func:`baseline_pairs`; invalid records left out unless ``include_invalid``)."""
    rows = []
    for r, base in baseline_pairs(records, include_invalid):
        b = break_even(r, base)
        rows.append(
            {
                **dict(zip(KEY, key(r))),
                "baseline": f"{base['framework']} {base['mode']}",
                "extra_s": b.extra_s,
                "saving_per_call_s": b.saving_s,
                "break_even_calls": b.calls,
                "cache": r.get("cache", "unknown"),
                "valid": is_valid(r) and is_valid(base),
            }
        )
    return rows


# ---------------------------------------------------------------------------------------------
# tables


def flags(record: dict) -> list[str]:
    """What a reader must know before trusting a record: why it is invalid, and the
    above-ceiling note (empty for a valid record within its ceiling)."""
    out = [] if is_valid(record) else list(record.get("invalid_reasons") or ["no validity verdict"])
    above = record.get("above_ceiling")
    if above is None:  # a record that predates the flag: its recorded share says it
        share = record.get("ceiling_share")
        above = isinstance(share, int | float) and share > 1.0
    if above:
        out.append(record.get("ceiling_note") or "above the estimated compute ceiling")
    return list(dict.fromkeys(out))


def summary_rows(records: Iterable[dict]) -> list[dict]:
    """One flat row per cell (the latest record), in a stable order, for tables and widgets."""
    order = {fw: i for i, fw in enumerate(NAMES)}
    modes = {(fw, m): i for fw, ms in MODES.items() for i, m in enumerate(ms)}
    tasks = {t: i for i, t in enumerate(TASKS)}
    rows = []
    for r in latest(records):
        ok_ = r["status"] == "ok"
        rows.append(
            {
                "model": r.get("model", DEFAULT_MODEL),
                "input_shape": r.get("input_shape", ""),
                "framework": r["framework"],
                "mode": r["mode"],
                "task": r["task"],
                "batch_size": r["batch_size"],
                "precision": r["precision"],
                "image_size": r["image_size"],
                "device": r["device"],
                "status": r["status"],
                "valid": is_valid(r),
                "flags": flags(r) if ok_ else [],
                "images_per_s": r["images_per_s"] if ok_ else None,
                "median_ms": r["median_s"] * 1e3 if ok_ else None,
                "iqr_ms": r["iqr_s"] * 1e3 if ok_ else None,
                "p90_ms": r["p90_s"] * 1e3 if ok_ else None,
                "first_call_s": r["first_call_s"] if ok_ else None,
                "export_s": r.get("export_s") if ok_ else None,
                "cache": r.get("cache", "unknown"),
                "ceiling_share": r["ceiling_share"] if ok_ else None,
                "above_ceiling": bool(r.get("above_ceiling")),
                "peak_rss_mb": r["peak_rss_mb"] if ok_ else None,
                "threads": r.get("threads"),
                "error": r["error"] or "",
            }
        )
    rows.sort(
        key=lambda x: (
            x["model"] != DEFAULT_MODEL,
            x["model"],
            order.get(x["framework"], 9),
            tasks.get(x["task"], 9),
            x["precision"],
            x["batch_size"],
            x["image_size"],
            x["input_shape"],
            x["device"],
            modes.get((x["framework"], x["mode"]), 9),
        )
    )
    return rows


def _ceiling_text(r: dict) -> str:
    if r["ceiling_share"] is None:
        return "-"
    return f"{r['ceiling_share']:.1%}" + (" (!)" if r["above_ceiling"] else "")


def table(records: Iterable[dict]) -> str:
    """A plain-text table of :func:`summary_rows` (what ``python -m labkit report`` prints).

    ``valid`` says whether a measured cell passed its validity verdict; the reasons, and the
    likely cause of a figure above the ceiling (marked ``(!)``), follow the table. Records of a
    learner's model (``labkit.explore.bench``) add a ``model`` column, and their ``size`` is the
    input shape.
    """
    rows = summary_rows(records)
    models = any(r["model"] != DEFAULT_MODEL for r in rows)
    lead = ("model",) * models + ("framework", "mode", "task", "batch", "prec", "size", "dev")
    head = lead + (
        "images/s",
        "median ms",
        "IQR ms",
        "p90 ms",
        "first s",
        "ceiling",
        "RSS MB",
        "valid",
    )
    n = len(lead)
    lines, notes = [], []
    for r in rows:
        cells = [model_name(r["model"])] * models + [
            r["framework"],
            r["mode"],
            r["task"],
            str(r["batch_size"]),
            r["precision"],
            r["input_shape"] or str(r["image_size"]),
            r["device"],
        ]
        if r["status"] == "ok":
            cells += [
                f"{r['images_per_s']:.2f}",
                f"{r['median_ms']:.1f}",
                f"{r['iqr_ms']:.1f}",
                f"{r['p90_ms']:.1f}",
                f"{r['first_call_s']:.2f}",
                _ceiling_text(r),
                f"{r['peak_rss_mb']:.0f}",
                "yes" if r["valid"] else "NO",
            ]
            if r["flags"]:
                notes.append(f"{' '.join(cells[: n - 4])}: " + "; ".join(r["flags"]))
        else:
            err = r["error"] if len(r["error"]) <= 70 else r["error"][:67] + "..."
            cells += [f"FAILED: {err}"]
        lines.append(cells)
    widths = [
        max(
            [len(h)] + [len(c[i]) for c in lines if i < len(c) and not (len(c) == n + 1 and i == n)]
        )
        for i, h in enumerate(head)
    ]
    fmt = lambda cs: "  ".join(
        c.ljust(w) if i < n else c.rjust(w) for i, (c, w) in enumerate(zip(cs, widths))
    )
    out = [fmt(head), fmt(["-" * w for w in widths])]
    for c in lines:
        out.append(fmt(c) if len(c) == len(head) else fmt(c[:n]) + "  " + c[n])
    if notes:
        out += ["", "flags:"] + [f"  {n}" for n in notes]
    return "\n".join(out)


def make(**fields) -> dict:
    """A record with every field: the given values over the defaults of a failed, unmeasured cell.

    ``unsupported`` follows from ``error`` unless given; ``threads`` may be given as a number
    (the intra-op count; inter-op then unknown); without ``valid``, the record is judged from
    its own fields (:func:`judge`). The result is validated.
    """
    record: dict = {f: None for f in FIELDS}
    record.update(
        schema=SCHEMA_VERSION,
        **DEFAULTS,
        notes="",
        log="",
        versions={},
        machine={},
        thread_env={},
        threads={"intra": None, "inter": None},
        unsupported=False,
        cache="unknown",
        above_ceiling=False,
        ceiling_note="",
    )
    record.update(fields)
    if isinstance(record["threads"], int) and not isinstance(record["threads"], bool):
        record["threads"] = {"intra": record["threads"], "inter": None}
    if "unsupported" not in fields:
        record["unsupported"] = bool(record["error"]) and record["error"].startswith("unsupported:")
    if "valid" not in fields:
        reasons = judge(record) if not _status_problems(record) else ["not a complete record"]
        record.update(valid=not reasons, invalid_reasons=reasons)
    elif record.get("invalid_reasons") is None:
        record["invalid_reasons"] = []
    if not record.get("timestamp"):
        import datetime

        record["timestamp"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return validate(record)
