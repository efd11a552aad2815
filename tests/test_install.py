"""tools/install.py: uv is given the sources pip is configured with, and only those that exist."""

import importlib.util
import itertools
import sys

from conftest import ROOT


def load_install():
    spec = importlib.util.spec_from_file_location("install", ROOT / "tools" / "install.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pips_sources_are_passed_to_uv_and_missing_ones_left_out(tmp_path):
    install = load_install()
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    listing = "\n".join(
        [
            f"global.find-links='{tmp_path / 'gone'}'",
            f"global.extra-index-url='file://{tmp_path} file://{tmp_path / 'missing'}'",
            "global.cert='/etc/ssl/certs/ca-certificates.crt'",
            f":env:.find-links='{wheels}'",  # the environment overrides pip's files
        ]
    )
    settings = install.pip_settings(listing)
    assert settings["find-links"] == [str(wheels)]
    command = install.uv_command(settings, ["-e", ".[lab,test]"])
    assert command[:6] == [sys.executable, "-m", "uv", "pip", "install", "--python"]
    pairs = list(itertools.pairwise(command))
    assert ("--find-links", str(wheels)) in pairs
    assert ("--extra-index-url", f"file://{tmp_path}") in pairs
    assert not any("missing" in c or "gone" in c for c in command)
    assert command[-2:] == ["-e", ".[lab,test]"] and "unsafe-best-match" in command
