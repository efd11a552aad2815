"""labkit.util.jsonio.write_atomic: text or bytes, replaced whole, nothing left half-written."""

from labkit.util import jsonio

import pytest


def test_text_and_bytes_replace_the_file_whole(tmp_path):
    path = tmp_path / "deep" / "er" / "file.json"
    assert jsonio.write_atomic(path, '{"é": 1}\n') == path  # folders created
    assert path.read_bytes() == '{"é": 1}\n'.encode()
    jsonio.write_atomic(path, b"\x00\xffbinary")
    assert path.read_bytes() == b"\x00\xffbinary"
    assert [p.name for p in path.parent.iterdir()] == ["file.json"]  # no temporary file left


def test_a_failed_write_keeps_the_old_file_and_leaves_nothing_else(tmp_path):
    path = tmp_path / "file.bin"
    jsonio.write_atomic(path, b"old")
    with pytest.raises(TypeError):
        jsonio.write_atomic(path, 42)  # neither text nor bytes: fails while writing
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.bin"]
