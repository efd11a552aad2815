"""Models whose benchmark cell fails, runs out of memory or hangs (tests/test_runner.py): the
runner must record each as a failure and go on."""

import subprocess
import sys
import time

import torch


class Fault(torch.nn.Module):
    """A model whose every call raises ``error`` (a weight, so that it can be trained)."""

    def __init__(self, error: BaseException):
        super().__init__()
        self.error, self.weight = error, torch.nn.Parameter(torch.ones(1))

    def forward(self, x):
        raise self.error


def fails():
    return Fault(RuntimeError("test fault: the model raised"))


def oom():
    return Fault(MemoryError("test fault: the model ran out of memory"))


def hangs():
    """Hangs while it builds, beside a child of its own: the cell's whole process group must go."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    print(f"test fault: hanging, grandchild pid {child.pid}", file=sys.stderr, flush=True)
    time.sleep(3600)
