"""The record: :class:`Record` (what a cell measured, in the shape of ``torch.utils.benchmark``'s
``Measurement``), its JSON fields (:data:`FIELDS`) and checks (:func:`problems`), the validity
verdict (:func:`judge`), older records in today's shape (:meth:`Record.from_json`) and
:func:`make`."""

from __future__ import annotations

import dataclasses
import datetime
import html
import math
from collections.abc import Mapping
from dataclasses import MISSING
from pathlib import Path

from .. import bench, profiles
from ..util import data_file

__all__ = [
    "CACHE_STATES",
    "CONTEXT",
    "DEFAULT_MODEL",
    "FIELDS",
    "Record",
    "custom",
    "judge",
    "key",
    "make",
    "model_name",
    "problems",
]

SCHEMA_VERSION = 2
#: what the rooms say of a results file they cannot read, and of an accuracy cost: results.toml
MESSAGES = data_file("results")
#: the model every cell measures unless it says otherwise
DEFAULT_MODEL = "resnet50"
CACHE_STATES: tuple[str, ...] = ("cold", "warm", "unknown")

_NUM = (int, float)
_TYPES = {"str": (str,), "int": (int,), "float": _NUM, "bool": (bool,), "dict": (dict,)}
_TYPES |= {"list": (list,), "None": (type(None),)}
#: fields that must be numbers (not null) in an ``ok`` record
MEASURED = ("first_call_s", "median_s", "iqr_s", "p90_s", "images_per_s", "peak_rss_mb", "repeats")
#: times (and the rate) that must be > 0 where a record gives them, and those that may be 0
POSITIVE = ("first_call_s", "median_s", "p90_s", "mean_s", "images_per_s")
NON_NEGATIVE = ("iqr_s", "export_s", "prepare_s", "wall_s")


def key(record: dict) -> tuple:
    """The cell a record measured (:data:`KEY`)."""
    return tuple(record.get(k, DEFAULTS.get(k)) for k in KEY)


def model_name(model: str) -> str:
    """A short name of a record's model: ``resnet50``, ``file:build_model`` for a spec, a saved
    model's file name."""
    where, _, function = model.rpartition(":")
    if not where or not function.isidentifier():
        return Path(model).name
    stem = Path(where).stem if where.endswith(".py") else where.rpartition(".")[2]
    return f"{stem}:{function}"


def custom(record: dict) -> bool:
    """Whether the record measured a learner's model rather than the ResNet-50."""
    return record.get("model", DEFAULT_MODEL) != DEFAULT_MODEL


def _number(v: object) -> bool:
    return isinstance(v, _NUM) and not isinstance(v, bool)


def newer_schema(record: object) -> int | float | None:
    """The schema of a record written by a newer labkit, else None."""
    schema = record.get("schema") if isinstance(record, dict) else None
    return schema if _number(schema) and schema > SCHEMA_VERSION else None


def problems(record: object) -> list[str]:
    """What is wrong with one record (empty when it follows the schema of its version): a spec
    field missing (any other reads as its default), a field of the wrong type, a status without
    its figures or its error, a time out of range, a verdict without its reasons."""
    if not isinstance(record, Mapping):
        return [f"expected a JSON object, got {type(record).__name__}"]
    out = [f"missing field {f!r}" for f in REQUIRED if f not in record]
    for f, types in FIELDS.items():
        v = record.get(f)
        if f in record and not isinstance(v, types) or (isinstance(v, bool) and bool not in types):
            out.append(f"field {f!r} has type {type(v).__name__}")
        elif isinstance(v, float) and not math.isfinite(v):
            out.append(f"field {f!r} is not a finite number ({v})")
    status, error = record.get("status"), record.get("error")
    if status == "ok":
        out += [
            f"ok record without a number in {f!r}" for f in MEASURED if not _number(record.get(f))
        ]
    elif status != "failed":
        out.append(f"status must be 'ok' or 'failed', got {status!r}")
    elif not isinstance(error, str) or not error:
        out.append("failed record without an 'error' message")
    elif record.get("unsupported", False) != error.startswith("unsupported:"):
        out.append("'unsupported' must be true exactly when error starts with 'unsupported:'")
    out += [
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
    if newer_schema(record) is not None:
        out.append(f"schema {record['schema']} is newer than this labkit's ({SCHEMA_VERSION})")
    if record.get("cache") not in CACHE_STATES and "cache" in record:
        out.append(f"cache must be one of {', '.join(CACHE_STATES)}, got {record['cache']!r}")
    if isinstance(record.get("valid"), bool):
        reasons = record.get("invalid_reasons")
        if record["valid"] and reasons:
            out.append("a valid record must have no invalid_reasons")
        if not record["valid"] and not reasons:
            out.append("an invalid record must say why (invalid_reasons)")
        if record["valid"] and status != "ok":
            out.append("a failed record cannot be valid")
    return out


def validate(record: dict) -> dict:
    """``record`` if it follows the schema, else ``ValueError`` listing the problems."""
    if found := problems(record):
        raise ValueError("invalid benchmark record: " + "; ".join(found))
    return record


def judge(record: dict) -> list[str]:
    """Why a record is invalid ([]: valid): :func:`labkit.bench.verdict` on its own fields, by
    its profile's limits (a record without raw times: its repeats, median and IQR)."""
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
        int(record.get("number_per_run") or 1),
        prof.max_spread,
    )


def make(**fields) -> Record:
    """A validated :class:`Record`: ``fields`` over the defaults of a failed, unmeasured cell.

    ``unsupported`` follows from ``error``, ``threads`` may be the intra-op count, and without
    ``valid`` the record is judged from its own fields (:func:`judge`)."""
    error, now = fields.get("error"), datetime.datetime.now(datetime.UTC)
    row = {"unsupported": isinstance(error, str) and error.startswith("unsupported:"), **fields}
    row["timestamp"] = fields.get("timestamp") or now.isoformat(timespec="seconds")
    return Record.from_json(row)


@dataclasses.dataclass(kw_only=True)
class Record(Mapping):
    """What one cell measured: its spec, the raw times and the statistics derived from them, the
    verdict, and how it was measured. One line of the results file is :meth:`to_json`;
    :meth:`from_json` reads one (an older one upgraded). Read by attribute; the read-only
    mapping view (``r["median_s"]``) serves readers of JSON rows."""

    schema: int = SCHEMA_VERSION  # 2 (1: a record upgraded on loading)
    model: str = DEFAULT_MODEL  # resnet50, or a learner's model spec ('file.py:function')
    input_shape: str = ""  # another model's input shapes, batch first ('8x16x32')
    framework: str  # a registered framework (labkit.frameworks.NAMES)
    mode: str  # one of labkit.frameworks.spec(framework).modes
    task: str  # latency (batch 1) | throughput (larger batch) | train (SGD step)
    batch_size: int  # images per call
    precision: str  # fp32 | bf16 | int8 (deployment records also int8-dynamic/static)
    image_size: int  # input side in pixels (square RGB); 0 for another model
    device: str  # cpu | gpu
    profile: str  # smoke | standard | full
    status: str = "failed"  # ok | failed
    error: str | None = None  # why the cell failed
    unsupported: bool = False  # the combination does not exist here (error 'unsupported: ...')
    valid: bool = False  # the validity verdict (labkit.bench.verdict); false when failed
    invalid_reasons: list = dataclasses.field(default_factory=list)  # each rule broken, in words
    export_s: float | None = None  # exporting the model first (ONNX Runtime)
    prepare_s: float | None = None  # building the model and the step, export excluded
    first_call_s: float | None = None  # the first call, timed apart (tracing, compilation)
    cache: str = "unknown"  # compile caches: cold (empty for this cell) | warm | unknown
    median_s: float | None = None  # per call, in the steady state
    iqr_s: float | None = None
    p90_s: float | None = None
    mean_s: float | None = None
    images_per_s: float | None = None  # batch_size / median_s (another model: samples/s)
    peak_rss_mb: float | None = None  # of the cell's process, MiB
    ceiling_images_per_s: float | None = None  # the CPU's spec-sheet ceiling (hardware.ceiling)
    ceiling_share: float | None = None  # images_per_s / ceiling_images_per_s
    above_ceiling: bool = False  # above the estimated ceiling: flagged, not an error
    ceiling_note: str = ""  # above the ceiling: its likely cause
    measured_peak: dict | None = None  # the measured matmul peak (labkit.hardware.measured)
    measured_peak_images_per_s: float | None = None  # ResNet-50 images/s at that peak
    measured_peak_share: float | None = None
    above_measured_peak: bool = False
    measured_peak_note: str = ""  # above the peak: the likely cause; without one: why
    accuracy: dict | None = None  # low precision's cost against fp32 (frameworks._kit.accuracy)
    repeats: float | None = None  # timed samples (each number_per_run calls)
    warmup: float | None = None  # untimed calls after the first call
    times_s: list | None = None  # the raw seconds per call of every timed sample
    number_per_run: int = 1  # calls in each timed sample
    notes: str = ""  # how the adapter realised the mode and precision
    recipe: dict | None = None  # train: the hyper-parameters read back (labkit.recipe.TRAIN)
    # the intra- and inter-op thread counts; a bare number (schema 1, make) reads as the intra-op
    threads: dict | int = dataclasses.field(default_factory=lambda: {"intra": None, "inter": None})
    thread_env: dict = dataclasses.field(default_factory=dict)  # of the cell's process
    versions: dict = dataclasses.field(default_factory=dict)  # packages in the cell's process
    machine: dict = dataclasses.field(default_factory=dict)  # labkit.hardware.fingerprint()
    wall_s: float | None = None  # the whole cell subprocess
    load_1min: float | None = None  # the 1-minute load average when timing started
    others_cpus: float | None = None  # CPUs other processes kept busy while timing
    log: str = ""  # the tail of the cell's stderr when it failed
    timestamp: str = ""  # when the cell finished, ISO 8601 UTC

    @classmethod
    def from_json(cls, row: object) -> Record:
        """The record of one JSON object; ``ValueError`` naming what is wrong with anything else.
        A field it lacks (written before the field existed) reads as its default, and one without
        a verdict (schema 1 wrote none) is judged (:func:`judge`). Fields this labkit does not
        know are left out."""
        record = cls(**{k: v for k, v in validate(row).items() if k in FIELDS})
        if isinstance(record.threads, int):  # the intra-op count alone (as schema 1 wrote it)
            record.threads = {"intra": record.threads, "inter": None}
        if "valid" in row:
            return record
        if row.get("schema") == 1 and _number(share := row.get("ceiling_share")) and share > 1:
            record.above_ceiling = True
            record.ceiling_note = "above the ceiling estimated when it was measured (schema 1)"
        reasons = judge(record)
        record.valid, record.invalid_reasons = not reasons, reasons
        return record

    def to_json(self) -> dict:
        """The results file's line for this record, as a dict (the same field names)."""
        return dict(self)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def key(self) -> tuple:
        """The cell it measured (:data:`KEY`); a :class:`labkit.runner.Cell`'s too."""
        return tuple(getattr(self, k) for k in KEY)

    def label(self) -> str:
        """The cell in words (a :class:`labkit.runner.Cell`'s too): a learner's model, framework,
        mode, task, batch (a learner's model: its input shapes), precision, image size, device."""
        what = f"{self.framework} {self.mode} {self.task}"
        if self.model == DEFAULT_MODEL:
            return f"{what} b{self.batch_size} {self.precision} {self.image_size}px {self.device}"
        return f"{model_name(self.model)} {what} {self.input_shape} {self.precision} {self.device}"

    def __str__(self) -> str:
        """One line: the cell, its rate, median and verdict (or why it failed)."""
        if not self.ok:
            return f"{self.label()}: {'' if self.unsupported else 'failed: '}{self.error[:200]}"
        verdict = "valid" if self.valid else "invalid: " + "; ".join(self.invalid_reasons)
        share = self.measured_peak_share
        peak = "" if share is None else f", {share:.0%} of the measured peak"
        flag = " (!)" if self.above_measured_peak or self.above_ceiling else ""
        return (
            f"{self.label()}: {self.images_per_s:.2f} images/s, median {self.median_s * 1e3:.1f} "
            f"± {self.iqr_s * 1e3:.1f} ms{peak}{flag}, {verdict}"
        )

    def _how(self) -> str:
        how = f"{self.profile} profile, cache {self.cache}"
        if self.ok:
            how += f", first call {self.first_call_s:.2f} s, p90 {self.p90_s * 1e3:.1f} ms"
        return how

    def __repr__(self) -> str:
        return f"<labkit.results.Record> {self}\n  {self._how()}"

    def _repr_html_(self) -> str:
        """The repr in a notebook: the cell in bold, escaped (a model's name comes from a file)."""
        cell, rest = html.escape(self.label()), html.escape(str(self)[len(self.label()) :])
        return f"<div><b>{cell}</b>{rest}<br><small>{html.escape(self._how())}</small></div>"

    # the read-only mapping view: the JSON row's fields by name
    def __getitem__(self, name: str):
        return vars(self)[name]

    def __iter__(self):
        return iter(vars(self))

    def __len__(self) -> int:
        return len(vars(self))


#: field -> the JSON types it accepts (a measured number is null in a failed record)
FIELDS: dict[str, tuple[type, ...]] = {
    f.name: sum((_TYPES[t] for t in f.type.split(" | ")), ()) for f in dataclasses.fields(Record)
}
#: what a record without a field (written before it existed) reads as: its default
DEFAULTS = {f.name: f.default for f in dataclasses.fields(Record) if f.default is not MISSING}
#: the spec: the fields without a default, which every record gives
REQUIRED = tuple(
    f.name for f in dataclasses.fields(Record) if MISSING is f.default is f.default_factory
)
#: the fields that identify a cell (two records with the same key measured the same thing): the
#: model, the spec and the input shapes
KEY = ("model", *REQUIRED, "input_shape")
#: what two records must share to be compared: everything but framework, mode and profile
CONTEXT = tuple(k for k in KEY if k not in ("framework", "mode", "profile"))
