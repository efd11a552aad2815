"""Models whose fate in graph mode is known, for tests/test_explore.py.

Each builder takes no arguments (a spec names it: ``tests/explore_models.py:two_breaks``). The
line numbers the tests expect are found by searching this file for the marked lines, so editing
it does not break them.
"""

import os
import signal
from pathlib import Path

import torch
from torch import nn


class Clean(nn.Module):
    """A small CNN with nothing but tensor operations: one graph, exports everywhere."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(torch.relu(self.conv(x))), 1))


class TwoBreaks(nn.Module):
    """Two graph breaks: a print, then an if on a tensor's value."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x)
        print("between two graphs")  # BREAK 1
        if y.sum() > 0:  # BREAK 2
            y = y * 2
        return torch.relu(y)


class KillsWhenExported(nn.Module):
    """Runs eagerly and under torch.compile, but kills its own process when torch.export traces
    it: a stand-in for a framework that crashes natively on a model."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        if torch.compiler.is_exporting():
            os.kill(os.getpid(), signal.SIGKILL)
        return torch.relu(self.lin(x))


def clean():
    torch.manual_seed(0)
    return Clean()


def two_breaks():
    torch.manual_seed(0)
    return TwoBreaks()


def kills_when_exported():
    torch.manual_seed(0)
    return KillsWhenExported()


def transformer_block():
    from labkit.runner import inputs

    examples = Path(__file__).parents[1] / "notebooks" / "own_model" / "examples.py"
    return inputs.build_example(f"{examples}:transformer_block")[0]


def raises():
    raise RuntimeError("the weights file is missing")


def keras_dense():
    """A Keras model over (batch, time, 16): each new batch size retraces a plain tf.function."""
    import keras

    inputs = keras.Input((None, 16))
    hidden = keras.layers.Dense(32, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(4)(hidden), name="dense_over_time")
