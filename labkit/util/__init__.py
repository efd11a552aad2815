"""The ground floor: small tools every room of labkit uses; nothing here imports labkit."""

import tomllib
from pathlib import Path

__all__ = ["data_file", "jsonio", "net", "numeric", "proc", "stats", "stdio", "tables", "tempdirs"]


def data_file(name: str) -> dict:
    """The parsed ``labkit/data/<name>.toml``: the course's words and tables, kept out of code."""
    return tomllib.loads((Path(__file__).parents[1] / "data" / f"{name}.toml").read_text("utf-8"))
