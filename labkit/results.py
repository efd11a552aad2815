"""The benchmark results file: one JSON object per line (JSONL), appended as each cell finishes.

Every line is one *cell* (framework x mode x task x batch size x precision on a device), either
measured (``status: "ok"``) or failed (``status: "failed"`` with ``error``; a combination that a
framework does not offer is a failure whose error starts with ``"unsupported:"`` and that carries
``"unsupported": true``). The fields, their types and meanings are in :data:`FIELDS`.

Reading is strict, because notebooks and the selection guide trust these numbers: a corrupt line
raises ``ValueError`` naming the file, the line and the fix. The one exception is a truncated
*last* line, which is what an interrupted write leaves behind: it is skipped with a warning, so
nothing already measured is lost.

The query helpers (:func:`best`, :func:`speedups`, :func:`break_even`, :func:`summary_rows`,
:func:`table`) are what notebooks, ``python -m labkit report`` and the selection guide use.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path

from .bench import TASKS
from .frameworks import MODES, NAMES, specs

SCHEMA_VERSION = 1

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
#: field -> (accepted types, meaning). Every record carries every field; measured numbers are
#: null in a failed record.
FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "schema": ((int,), "version of this schema (1)"),
    "framework": ((str,), "a registered framework: " + " | ".join(NAMES)),
    "mode": ((str,), "execution mode, one of labkit.frameworks.spec(framework).modes"),
    "task": ((str,), "latency (batch 1, p50/p90) | throughput (larger batch) | train (SGD step)"),
    "batch_size": ((int,), "images per call"),
    "precision": ((str,), "fp32 | bf16"),
    "image_size": (
        (int,),
        "input side in pixels (square RGB images); 0 for another model (see input_shape)",
    ),
    "device": ((str,), "cpu | gpu"),
    "status": ((str,), "ok | failed"),
    "error": (((str, type(None))), "why the cell failed (null when ok)"),
    "unsupported": (
        (bool,),
        "true when the combination does not exist here (error 'unsupported: ...')",
    ),
    "prepare_s": (_OPT_NUM, "seconds to build the model and prepare the step (export, trace, ...)"),
    "first_call_s": (_OPT_NUM, "seconds of the first call, timed apart (tracing / compilation)"),
    "median_s": (_OPT_NUM, "median seconds per call in the steady state"),
    "iqr_s": (_OPT_NUM, "interquartile range of the seconds per call"),
    "p90_s": (_OPT_NUM, "90th percentile of the seconds per call"),
    "mean_s": (_OPT_NUM, "mean seconds per call"),
    "images_per_s": (_OPT_NUM, "batch_size / median_s (another model: samples per second)"),
    "peak_rss_mb": (_OPT_NUM, "peak resident memory of the cell's process, MiB"),
    "ceiling_share": (_OPT_NUM, "images_per_s / ceiling_images_per_s (CPU only; null on a GPU)"),
    "ceiling_images_per_s": (_OPT_NUM, "the CPU's compute ceiling at this size, task, precision"),
    "repeats": (_OPT_NUM, "timed calls"),
    "warmup": (_OPT_NUM, "untimed calls after the first call"),
    "times_s": ((list, type(None)), "the raw seconds of every timed call"),
    "notes": ((str,), "how the adapter realised the mode and precision"),
    "threads": ((int,), "intra-op threads given to the framework (same for every framework)"),
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
            "the machine's 1-minute load average when the cell started (busy "
            "machine: noisy timings); null where the OS does not report it"
        ),
    ),
    "log": ((str,), "the tail of the cell's stderr when it failed, else ''"),
    "timestamp": ((str,), "when the cell finished, ISO 8601 UTC"),
    "model": (
        (str,),
        (
            "the model measured: resnet50 (labkit.resnet), or the spec of a learner's model "
            "('module:function' or 'path/file.py:function', labkit.explore.bench)"
        ),
    ),
}
FIELDS["input_shape"] = (
    (str,),
    (
        "another model's input shapes, batch first ('8x16x32', several separated by commas); "
        "'' for ResNet-50 (batch_size x 3 x image_size x image_size)"
    ),
)
#: fields a record may lack (written before the field existed): it reads as this default
OPTIONAL: dict[str, object] = {"model": "resnet50", "input_shape": ""}
#: fields that must be numbers (not null) in an ``ok`` record
MEASURED = ("first_call_s", "median_s", "iqr_s", "p90_s", "images_per_s", "peak_rss_mb", "repeats")
#: ... and in an ``ok`` record on the CPU (labkit estimates no GPU ceiling: null there)
MEASURED_CPU = ("ceiling_share", "ceiling_images_per_s")
#: the fields that identify a cell (two records with the same key measured the same thing)
KEY = (
    "framework",
    "mode",
    "task",
    "batch_size",
    "precision",
    "image_size",
    "device",
    "profile",
    "model",
    "input_shape",
)

_BENCH_FIX = "python -m labkit bench --resume --out {path}"


def key(record: dict) -> tuple:
    return tuple(record.get(k, OPTIONAL.get(k)) for k in KEY)


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
    return record.get("model", OPTIONAL["model"]) != OPTIONAL["model"]


def problems(record: object) -> list[str]:
    """What is wrong with one record (empty when it follows the schema)."""
    if not isinstance(record, dict):
        return [f"expected a JSON object, got {type(record).__name__}"]
    out = [f"missing field {f!r}" for f in FIELDS if f not in record and f not in OPTIONAL]
    for f, (types, _) in FIELDS.items():
        v = record.get(f)
        if f in record and not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            out.append(f"field {f!r} has type {type(v).__name__}")
    status = record.get("status")
    if status == "ok":
        cpu_resnet = record.get("device") == "cpu" and not custom(record)
        needed = MEASURED + (MEASURED_CPU if cpu_resnet else ())
        out += [
            f"ok record without a number in {f!r}"
            for f in needed
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


def validate(record: dict) -> dict:
    """``record`` if it follows the schema, else ``ValueError`` listing the problems."""
    found = problems(record)
    if found:
        raise ValueError("invalid benchmark record: " + "; ".join(found))
    return record


def load(path: str | os.PathLike) -> list[dict]:
    """All records of a results file, validated.

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
    lines = text.split("\n")
    complete = text.endswith("\n")
    records: list[dict] = []
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        is_tail = n == len(lines) and not complete
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if is_tail:
                warnings.warn(
                    f"{path} line {n} is truncated (an interrupted write) and was "
                    f"skipped; the {len(records)} complete records are kept; "
                    f"`{_BENCH_FIX.format(path=path)}` measures that cell again",
                    UserWarning,
                    stacklevel=2,
                )
                continue
            raise ValueError(
                f"{path} line {n} is not valid JSON ({exc.msg}): not a labkit "
                f"results file, or a damaged one; fix: give a file written by "
                f"`python -m labkit bench`, or delete or repair that line (the "
                f"other lines are intact)"
            ) from exc
        found = problems(record)
        if found:
            raise ValueError(
                f"{path} line {n} is not a labkit benchmark record: "
                f"{'; '.join(found[:4])}; fix: give a file written by "
                f"`python -m labkit bench`, or delete that line"
            )
        records.append({**OPTIONAL, **record})
    return records


def truncated_tail(path: str | os.PathLike) -> bytes:
    """The bytes after the last newline of ``path`` (a write that was interrupted), or b''."""
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        return b""
    return data[data.rfind(b"\n") + 1 :]


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
    """Validate ``record`` and append it as one line, flushed and fsynced (survives a crash)."""
    line = json.dumps(validate(record), sort_keys=True, allow_nan=False) + "\n"
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    repair_tail(path)
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


# ---------------------------------------------------------------------------------------------
# queries


def ok(records: Iterable[dict]) -> list[dict]:
    return [r for r in records if r.get("status") == "ok"]


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


def _rel(r: dict) -> float:
    return r["iqr_s"] / r["median_s"] if r["median_s"] else math.inf


def _baseline_for(r: dict, pool: dict[tuple, dict]) -> dict | None:
    fw, mode = BASELINE.get(r["framework"], (None, None))
    if fw is None:
        return None
    k = dict(zip(KEY, key(r)), framework=fw, mode=mode)
    return pool.get(tuple(k[f] for f in KEY))


def _graph_and_baseline(records: Iterable[dict]) -> Iterator[tuple[dict, dict]]:
    """Each measured graph-mode cell with the eager cell it is compared against."""
    cells = latest(ok(records))
    pool = {key(r): r for r in cells}
    for r in cells:
        if EAGER_MODES.get(r["framework"]) != r["mode"]:
            base = _baseline_for(r, pool)
            if base is not None:
                yield r, base


def speedups(records: Iterable[dict]) -> list[dict]:
    """Each graph mode against its eager baseline, same task, batch, precision, size and device.

    ``speedup = eager median / graph median`` (> 1: the graph mode is faster). ``speedup_iqr`` is
    the first-order propagation of the two relative IQRs,
    ``speedup * sqrt((iqr_e/med_e)^2 + (iqr_g/med_g)^2)``: a speedup within it of 1 is noise.
    ONNX Runtime is compared with torch eager (see :data:`BASELINE`).
    """
    rows = []
    for r, base in _graph_and_baseline(records):
        s = base["median_s"] / r["median_s"]
        rows.append(
            {
                **{k: r[k] for k in KEY},
                "baseline": f"{base['framework']} {base['mode']}",
                "speedup": s,
                "speedup_iqr": s * math.hypot(_rel(r), _rel(base)),
                "eager_median_s": base["median_s"],
                "graph_median_s": r["median_s"],
            }
        )
    return rows


def break_even(records: Iterable[dict]) -> list[dict]:
    """How many calls a graph mode needs before its one-off cost has paid for itself.

    One-off cost = ``prepare_s + first_call_s`` (build, trace/compile/export, first run); the
    extra over eager is ``graph one-off - eager one-off``; each later call saves
    ``eager median - graph median``. ``calls = extra / saving`` (``inf`` when it never pays off,
    0 when the graph mode is not even slower to start).
    """
    rows = []
    for r, base in _graph_and_baseline(records):
        extra = (
            (r.get("prepare_s") or 0)
            + r["first_call_s"]
            - (base.get("prepare_s") or 0)
            - base["first_call_s"]
        )
        saving = base["median_s"] - r["median_s"]
        calls = 0.0 if extra <= 0 else (extra / saving if saving > 0 else math.inf)
        rows.append(
            {
                **{k: r[k] for k in KEY},
                "baseline": f"{base['framework']} {base['mode']}",
                "extra_s": extra,
                "saving_per_call_s": saving,
                "break_even_calls": calls,
            }
        )
    return rows


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
                "model": r.get("model", OPTIONAL["model"]),
                "input_shape": r.get("input_shape", ""),
                "framework": r["framework"],
                "mode": r["mode"],
                "task": r["task"],
                "batch_size": r["batch_size"],
                "precision": r["precision"],
                "image_size": r["image_size"],
                "device": r["device"],
                "status": r["status"],
                "images_per_s": r["images_per_s"] if ok_ else None,
                "median_ms": r["median_s"] * 1e3 if ok_ else None,
                "iqr_ms": r["iqr_s"] * 1e3 if ok_ else None,
                "p90_ms": r["p90_s"] * 1e3 if ok_ else None,
                "first_call_s": r["first_call_s"] if ok_ else None,
                "ceiling_share": r["ceiling_share"] if ok_ else None,
                "peak_rss_mb": r["peak_rss_mb"] if ok_ else None,
                "error": r["error"] or "",
            }
        )
    rows.sort(
        key=lambda x: (
            x["model"] != OPTIONAL["model"],
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


def table(records: Iterable[dict]) -> str:
    """A plain-text table of :func:`summary_rows` (what ``python -m labkit report`` prints).

    Records of a learner's model (``labkit.explore.bench``) add a ``model`` column, and their
    ``size`` is the input shape.
    """
    rows = summary_rows(records)
    models = any(r["model"] != OPTIONAL["model"] for r in rows)
    lead = ("model",) * models + ("framework", "mode", "task", "batch", "prec", "size", "dev")
    head = lead + (
        "images/s",
        "median ms",
        "IQR ms",
        "p90 ms",
        "first s",
        "ceiling",
        "RSS MB",
    )
    n = len(lead)
    lines = []
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
                "-" if r["ceiling_share"] is None else f"{r['ceiling_share']:.1%}",
                f"{r['peak_rss_mb']:.0f}",
            ]
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
    return "\n".join(out)


def make(**fields) -> dict:
    """A record with every field: the given values over the defaults of a failed, unmeasured cell.

    ``unsupported`` follows from ``error`` unless given; the result is validated.
    """
    record: dict = {f: None for f in FIELDS}
    record.update(OPTIONAL)
    record.update(
        schema=SCHEMA_VERSION,
        notes="",
        log="",
        versions={},
        machine={},
        thread_env={},
        unsupported=False,
    )
    record.update(fields)
    if "unsupported" not in fields:
        record["unsupported"] = bool(record["error"]) and record["error"].startswith("unsupported:")
    if not record.get("timestamp"):
        import datetime

        record["timestamp"] = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return validate(record)
