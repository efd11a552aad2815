"""Serving: ResNet-50 behind a real HTTP inference server, and the load that shows how it
behaves when requests arrive at random and compete.

For: the server (:mod:`~labkit.serve.app`: FastAPI on uvicorn, on 127.0.0.1, speaking the Open
Inference Protocol of KServe, Triton and MLServer, :mod:`~labkit.serve.protocol`), the model it
answers with in one framework and serving mode (:mod:`~labkit.serve.model`), dynamic batching
and load shedding (:mod:`~labkit.serve.batching`), the load generator (open-loop Poisson
arrivals, MLPerf's Server scenario, and closed-loop clients: :mod:`~labkit.serve.loadgen`, a
run of steps: :mod:`~labkit.serve.sweep`), the records of each step and the p99 bound
(:mod:`~labkit.serve.records`; what a sweep says, the highest rate under the bound and the
knee, is :mod:`labkit.results.sweeps`'s, re-exported here), the processes and their pinning
(:mod:`~labkit.serve.process`) and the latency-vs-load figure (:mod:`~labkit.serve.figures`).
The seeds' serving claims are checked from a run's records by
:mod:`labkit.sources.claims.serving`.
``python -m labkit serve`` and ``python -m labkit load`` are its commands; notebook 07b its
lesson.

Not for: a production server (one model, one process, no TLS or authentication: it listens on
this machine only), another machine (the load generator drives loopback only), nor timing a
model in a loop (:mod:`labkit.runner`). Importing it imports no framework and no web library.
"""

from ..results.sweeps import capacity, config_of, configs, knee, meets, summary
from . import figures, protocol
from .batching import Batcher, Overloaded, padded_size, warm_shapes
from .model import MODEL_NAME, modes, network_name
from .process import Server, cpu_split, measure, run_load
from .records import Bound, p99_bound, summary_table, table
from .sweep import Plan

__all__ = [
    "MODEL_NAME",
    "Batcher",
    "Bound",
    "Overloaded",
    "Plan",
    "Server",
    "capacity",
    "config_of",
    "configs",
    "cpu_split",
    "figures",
    "knee",
    "measure",
    "meets",
    "modes",
    "network_name",
    "p99_bound",
    "padded_size",
    "protocol",
    "run_load",
    "summary",
    "summary_table",
    "table",
    "warm_shapes",
]
