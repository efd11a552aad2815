"""The seed articles' performance claims as data, and verdicts computed from measured records.

Framework-free. A *record* is one benchmark result as the runner writes it (a dict with at least
``framework``, ``mode``, ``task``, ``precision``, ``status``, ``batch_size``, ``median_s``,
``iqr_s``; ``device`` and ``machine`` when known). Each :class:`Claim` names the quantity that can
be measured on this machine (a throughput ratio), the range the seeds give for it, and the
:class:`Regime` it was made in (hardware class, model, image size, batch, precision, runtime,
metric). :func:`check` turns records into a :class:`Verdict` that never claims more than the
measurement's regime:

- ``holds here`` / ``does not hold here``: the measurement is in the claim's regime and every /
  no measured ratio's median lies in the claimed range; ``direction holds, larger than claimed``:
  every ratio is in the range or beyond it on the far side of 1x (a graph mode faster than
  the claimed gain is no refutation of "graphs are faster"); ``mixed here``: some do, some do
  not (the row says which);
- ``different regime``: the measurement differs from the claim's regime in something the claim
  states (a 2-core CPU at 32 px cannot confirm or refute a claim made on A100 GPUs at 224 px, nor
  one about TF Serving or MindSpore Lite, which this lab does not run); the row reports the ratio
  measured here beside the seeds' and names every difference;
- ``not measured here``: nothing measured for it yet. A claim this lab can measure nothing for
  (a whole training run on a cluster, MindSpore Lite on a watch) has no ratios and says why
  (``Claim.untestable``): always "different regime".

Only records of the same task, precision, device, image size and batch size are divided. A ratio
carries the interval of :func:`labkit.results.ratio` (a bootstrap from the raw step times, as
:func:`labkit.results.speedups` reports); a median inside the range whose interval pokes out (or
the reverse) is reported as "within noise". Only the two modes each ratio declares are divided
(:func:`labkit.results.pair`, the lab's one pairing), and only valid records count as evidence
unless asked for (``include_invalid``).

The claims and their regimes are data (:mod:`.catalog`, :mod:`.regimes`, :mod:`.published`); the
judging and the claim-check table are :mod:`.verdicts`. Everything is read as ``claims.X``; the
seeds' serving claims, checked from a serving run's records, as ``claims.serving.X``. Not for:
the articles' own tables (:mod:`labkit.sources.seeds`) or measuring (the runner does that).
"""

from . import serving
from .catalog import (
    CLAIMS,
    EPOCH_CLAIM,
    NOT_RUN_HERE,
    SCOPE,
    SEED_EPOCH_IMAGES,
    SEED_TRAINING,
    Claim,
    Ratio,
    claim,
)
from .published import (
    JETSON,
    MLPERF_CPU,
    MLPERF_CPU_GNR,
    MLPERF_INF,
    MLPERF_T4,
    MLPERF_TRAIN,
    NV_PERF,
    NV_PT,
    NV_T4_PT,
    NV_T4_TF,
    NV_TF,
    Source,
)
from .regimes import (
    A100_TRAINING,
    IN_PROCESS,
    INFERENCE_TABLE,
    LARGE_SCALE,
    MIXED_PRECISIONS,
    Record,
    Regime,
    regime_of,
)
from .verdicts import (
    FAILS,
    HOLDS,
    LARGER,
    MIXED,
    NOT_MEASURED,
    REGIME,
    UNTESTABLE,
    VERDICTS,
    Estimate,
    Measured,
    Verdict,
    check,
    check_all,
    epoch_consistency,
    gpu_present,
    implied_epoch_minutes,
    judge,
    markdown,
    measure,
    pair,
    place,
    ratio,
    read,
    rows,
    sources,
)

__all__ = [
    "A100_TRAINING",
    "CLAIMS",
    "EPOCH_CLAIM",
    "FAILS",
    "HOLDS",
    "INFERENCE_TABLE",
    "IN_PROCESS",
    "JETSON",
    "LARGER",
    "LARGE_SCALE",
    "MIXED",
    "MIXED_PRECISIONS",
    "MLPERF_CPU",
    "MLPERF_CPU_GNR",
    "MLPERF_INF",
    "MLPERF_T4",
    "MLPERF_TRAIN",
    "NOT_MEASURED",
    "NOT_RUN_HERE",
    "NV_PERF",
    "NV_PT",
    "NV_T4_PT",
    "NV_T4_TF",
    "NV_TF",
    "REGIME",
    "SCOPE",
    "SEED_EPOCH_IMAGES",
    "SEED_TRAINING",
    "UNTESTABLE",
    "VERDICTS",
    "Claim",
    "Estimate",
    "Measured",
    "Ratio",
    "Record",
    "Regime",
    "Source",
    "Verdict",
    "check",
    "check_all",
    "claim",
    "epoch_consistency",
    "gpu_present",
    "implied_epoch_minutes",
    "judge",
    "markdown",
    "measure",
    "pair",
    "place",
    "ratio",
    "read",
    "regime_of",
    "rows",
    "serving",
    "sources",
]
