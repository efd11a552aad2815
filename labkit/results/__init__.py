"""The record format of benchmark results, and everything labkit does with a results file short
of measuring or drawing: the fields of a record and their checks (:mod:`~labkit.results.schema`),
reading and appending results files (:mod:`~labkit.results.store`), choosing and pairing records
(:mod:`~labkit.results.query`), comparing them (:mod:`~labkit.results.compare`: ratios with their
intervals, break-evens), the summary rows and text table (:mod:`~labkit.results.summary`), a
learner's result card (:mod:`~labkit.results.cards`), the fields and verdict of a serving record
(:mod:`~labkit.results.serving`) and what a serving sweep says (:mod:`~labkit.results.sweeps`),
the last two reached as ``results.serving`` and ``results.sweeps``. Not for: measuring
(:mod:`labkit.runner`, :mod:`labkit.bench`) or plotting (:mod:`labkit.plots`).

The benchmark results file: one JSON object per line (JSONL), appended as each cell finishes.

Every line is one *cell* (framework x mode x task x batch size x precision on a device), either
measured (``status: "ok"``) or failed (``status: "failed"`` with ``error``; a combination that a
framework does not offer is a failure whose error starts with ``"unsupported:"`` and that carries
``"unsupported": true``). The fields, their types and meanings are in :data:`FIELDS`.

Each measured record carries its **validity verdict** (``valid``, ``invalid_reasons``: enough
timed calls and time, a spread under its profile's ``max_spread`` (10%, smoke 25%), a quiet machine; see
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
minimums and the load average it recorded when it started. A schema-2 record written before
a field of :data:`ADDED_IN_2` existed (``number_per_run``, the serving fields, the measured
peak's, ``accuracy``) reads it as that dict gives.

One pairing (:func:`pair`, :func:`baseline_pairs`), one ratio with a bootstrap confidence
interval from the raw times (:func:`ratio`) and one break-even (:func:`break_even`) serve the
tables here, the figures (:mod:`labkit.plots`), the claim check (:mod:`labkit.claims`), the
guide and the notebooks.
"""

from . import cards, serving, sweeps
from .compare import (
    CONFIDENCE,
    RESAMPLES,
    BreakEven,
    Estimate,
    break_even,
    break_even_rows,
    one_off_s,
    ratio,
    speedups,
)
from .query import (
    BASELINE,
    EAGER_MODES,
    baseline_pairs,
    best,
    context,
    invalid,
    is_valid,
    latest,
    ok,
    pair,
    valid,
)
from .schema import (
    ADDED_IN_2,
    CACHE_STATES,
    CONTEXT,
    DEFAULT_MODEL,
    DEFAULTS,
    FIELDS,
    FIELDS_V1,
    KEY,
    MEASURED,
    NEW_IN_2,
    NON_NEGATIVE,
    POSITIVE,
    SCHEMA_VERSION,
    SERVE_KEY,
    custom,
    judge,
    key,
    make,
    model_name,
    newer_schema,
    problems,
    upgrade,
    validate,
)
from .store import (
    BadLine,
    UnregisteredFramework,
    append,
    load,
    parse_lines,
    repair_tail,
    truncated_tail,
)
from .summary import accuracy_text, flags, summary_rows, table

__all__ = [
    "ADDED_IN_2",
    "BASELINE",
    "CACHE_STATES",
    "CONFIDENCE",
    "CONTEXT",
    "DEFAULTS",
    "DEFAULT_MODEL",
    "EAGER_MODES",
    "FIELDS",
    "FIELDS_V1",
    "KEY",
    "MEASURED",
    "NEW_IN_2",
    "NON_NEGATIVE",
    "POSITIVE",
    "RESAMPLES",
    "SCHEMA_VERSION",
    "SERVE_KEY",
    "BadLine",
    "BreakEven",
    "Estimate",
    "UnregisteredFramework",
    "accuracy_text",
    "append",
    "baseline_pairs",
    "best",
    "break_even",
    "break_even_rows",
    "cards",
    "context",
    "custom",
    "flags",
    "invalid",
    "is_valid",
    "judge",
    "key",
    "latest",
    "load",
    "make",
    "model_name",
    "newer_schema",
    "ok",
    "one_off_s",
    "pair",
    "parse_lines",
    "problems",
    "ratio",
    "repair_tail",
    "serving",
    "speedups",
    "summary_rows",
    "sweeps",
    "table",
    "truncated_tail",
    "upgrade",
    "valid",
    "validate",
]
