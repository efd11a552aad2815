"""Serving: what the lab keeps of it. The server is the lesson's own script
(``notebooks/serving/resnet_server.py``, read in notebook 07b); the load comes from MLPerf
LoadGen's Server scenario; the client a practitioner would use is tritonclient.

For: starting and stopping a server script on 127.0.0.1 (:class:`~labkit.serve.process.Server`),
a LoadGen system under test that sends its queries over HTTP and the records read from LoadGen's
summary beside the adapter's own timings (:mod:`~labkit.serve.loadgen`), and one figure
(:func:`~labkit.serve.loadgen.figure`). Importing it imports no framework, no web library and
no LoadGen.

Not for: a production server (one model, loopback only, no TLS), or timing a model in a loop
(:mod:`labkit.runner`).
"""

from .loadgen import REFERENCE_BOUNDS, Run, figure, run_server_scenario, table
from .process import Server

__all__ = ["REFERENCE_BOUNDS", "Run", "Server", "figure", "run_server_scenario", "table"]
