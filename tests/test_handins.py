"""Hand-ins are untrusted: the limits of labkit.classroom.handins, one case each, on real files
(zips, links, encodings), a real DuckDB file and real figures. The whole folder through the
command line is
tests/test_classroom.py::test_hostile_hand_ins_are_named_and_skipped_and_the_rest_collected.
"""

import io
import json
import os
import zipfile

from labkit import classroom, plots, results
from labkit.classroom import handins
from labkit.results import cards

import pytest
from test_classroom import _card_of, _record


def _good_card(cpu="Test CPU 9000"):
    return _card_of([_record("torch", "eager", 0.04), _record("torch", "torchscript", 0.02)], cpu)


def _skipped(done):
    return {
        p.name if ":" not in str(p) else str(p).split(":", 1)[1]: why for p, why in done.skipped
    }


def test_a_zip_is_refused_whole_when_it_would_unpack_too_much_or_holds_too_many(
    tmp_path, monkeypatch
):
    card = json.dumps(_good_card()).encode()
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for i in range(4):
            z.writestr(f"card-{i}.json", card)
    monkeypatch.setattr(handins, "ZIP_MAX_MEMBERS", 3)
    done = classroom.collect([path], tmp_path / "c.duckdb")
    assert done.skipped == [(path, "holds 4 files, more than the 3 a class hands in: not opened")]
    monkeypatch.setattr(handins, "ZIP_MAX_MEMBERS", 10)
    monkeypatch.setattr(handins, "ZIP_MAX_TOTAL", 3 * len(card))
    done = classroom.collect([path], tmp_path / "c.duckdb")
    ((where, why),) = done.skipped
    assert where == path and "would unpack to" in why and "zip bomb" in why and not done.added


def test_a_zip_member_that_lies_about_its_size_is_refused(tmp_path):
    """A zip bomb's header declares a small member that unpacks to far more: the member is read
    only as far as its declared size, and then fails its checksum."""
    import struct

    path = tmp_path / "lies.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("card.json", json.dumps(_good_card()))
        z.writestr("bomb.json", b"[" + b" " * (50 * 2**20) + b"]")  # 50 MB, 50 kB packed
    data = bytearray(path.read_bytes())
    entry = data.rfind(b"PK\x01\x02")  # the central directory entry of bomb.json
    struct.pack_into("<I", data, entry + 24, 1000)  # it now says: 1000 bytes unpacked
    path.write_bytes(bytes(data))
    with zipfile.ZipFile(path) as z:
        assert z.getinfo("bomb.json").file_size == 1000
    card, bomb = handins.open_each(path, [])
    assert card.data and not card.skip
    assert bomb.data is None and "cannot be unpacked" in bomb.skip and "CRC" in bomb.skip


def test_results_files_with_hostile_lines_are_skipped_not_crashed_on(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    line = json.dumps(_record("torch", "eager", 0.04))
    (folder / "deep.jsonl").write_text(line + "\n" + "[" * 5000 + "]" * 5000 + "\n")
    (folder / "nan.jsonl").write_text(
        line + "\n" + line.replace('"median_s": 0.04', '"median_s": Infinity') + "\n"
    )
    (folder / "long.JSONL").write_text(line + "\n" + '{"batch_size": ' + "9" * 5000 + "}\n")
    (folder / "huge.jsonl").write_text(
        line + "\n" + line.replace('"batch_size": 4', '"batch_size": 1' + "0" * 30) + "\n"
    )
    (folder / "fine.jsonl").write_text(line + "\n")
    done = classroom.collect([folder], tmp_path / "c.duckdb")
    why = _skipped(done)
    assert set(why) == {"deep.jsonl", "nan.jsonl", "long.JSONL", "huge.jsonl"}, done.text()
    assert "not finite" in why["nan.jsonl"] or "NaN" in why["nan.jsonl"], why
    assert "too large" in why["huge.jsonl"], why
    assert [p.name for p, _ in done.added] == ["fine.jsonl"]


def test_utf16_cards_links_and_names_given_on_the_command_line(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "notepad.json").write_bytes(
        b"\xff\xfe" + json.dumps(_good_card("U16")).encode("utf-16-le")
    )
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps(_good_card("Linked CPU")))
    os.symlink(target, folder / "link.json")
    named = tmp_path / "card.json.txt"
    named.write_text(json.dumps(_good_card("Named CPU")))
    done = classroom.collect([folder, named], tmp_path / "c.duckdb")
    assert sorted(p.name for p, _ in done.added) == ["card.json.txt", "notepad.json"], done.text()
    assert _skipped(done) == {
        "link.json": "a symbolic link: not followed; fix: collect the file itself"
    }


def test_rejudge_trusts_nothing_a_record_says_about_itself():
    good = _record("torch", "eager", 0.04)
    assert handins.rejudge(good)["valid"] is True  # an honest record stays valid
    no_times = {**good, "times_s": None, "repeats": 10**13, "valid": True}
    judged = handins.rejudge(no_times)  # no list of 1e13 calls is built
    assert judged["valid"] is False and judged["invalid_reasons"][0].startswith("cannot judge")
    negative = {**good, "times_s": [0.04, -1.0, 0.04]}
    assert "not all positive" in handins.rejudge(negative)["invalid_reasons"][0]
    custom = {**good, "model": "mine.py:build", "times_s": [1e-9] * 30, "median_s": 1e-9}
    custom["images_per_s"] = 4 / 1e-9
    reasons = handins.rejudge(custom)["invalid_reasons"]
    assert any(r.startswith("impossible: a median call") for r in reasons), reasons
    claims_above = {**good, "ceiling_images_per_s": 50.0, "ceiling_share": 0.1}
    judged = handins.rejudge(claims_above)  # 100 images/s against a ceiling of 50
    assert judged["above_ceiling"] and judged["ceiling_share"] == pytest.approx(2.0)
    assert "above the estimated ceiling" in results.flags(judged)[-1]
    failed = {**_record("torch", "eager", 0.04), "status": "failed", "error": "x", "valid": True}
    assert handins.rejudge(failed)["valid"] is False


def test_figures_from_a_results_file_show_tex_in_names_literally():
    records = [
        _record("torch", "eager", 0.04),
        _record("torch", r"graph$\undefinedmacro$", 0.02, model=r"$\frac$.py:build"),
    ]
    drawn = [fig for fig in (make(records) for make in plots.FIGURES.values())]
    assert sum(isinstance(fig, plots.Figure) for fig in drawn) >= 2
    for name, fig in zip(plots.FIGURES, drawn):
        if isinstance(fig, plots.Nothing):
            continue
        buf = io.BytesIO()
        fig.savefig(buf, format="png")  # mathtext would raise ValueError here
        assert buf.getvalue()[:4] == b"\x89PNG", name


def test_the_report_page_is_written_when_a_figure_fails_and_names_what_it_left_out(
    tmp_path, monkeypatch
):
    folder = tmp_path / "in"
    folder.mkdir()
    bad = folder / "learner.json"
    bad.write_text("{not json")
    db = tmp_path / "c.duckdb"
    classroom.collect([folder], db)

    def broken(_rows):
        raise RuntimeError("a figure that cannot be drawn")

    monkeypatch.setattr(classroom, "speedup_figure", broken)
    page = classroom.report(db, tmp_path / "report").read_text()
    assert "figure speedup could not be drawn: RuntimeError" in page
    assert "learner.json" in page and "1 file(s) skipped at collection" in page
    # the learner hands in again: the file goes in, and is no longer listed as skipped
    cards.save(_good_card(), bad)
    assert classroom.collect([folder], db).exit_status == 0
    page = classroom.report(db, tmp_path / "report").read_text()
    assert "0 file(s) skipped at collection" in page
