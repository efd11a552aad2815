"""Result cards and the class collection: anonymity, idempotent collection, bad files named and
skipped, the report's figures. Real subprocesses for the command line, a real DuckDB file."""

import getpass
import html
import json
import os
import re
import shutil
import socket

from labkit import classroom, hardware, results
from labkit.results import cards

import pytest
from conftest import SCHEMA_1_FIELDS, run_labkit

FAKE_USER = "adalovelace_test"


def _record(fw, mode, median, task="throughput", **extra):
    # 30 calls: at least the smoke profile's 0.2 s of timed calls (a valid record)
    times = [median * f for f in (0.97, 0.99, 1.0, 1.01, 1.04)] * 6
    return results.make(
        framework=fw,
        mode=mode,
        task=task,
        batch_size=4,
        precision="fp32",
        image_size=32,
        device="cpu",
        profile="smoke",
        status="ok",
        first_call_s=1.5,
        median_s=median,
        iqr_s=0.02 * median,
        p90_s=1.03 * median,
        mean_s=median,
        images_per_s=4 / median,
        peak_rss_mb=700.0,
        ceiling_images_per_s=1000.0,
        ceiling_share=(4 / median) / 1000.0,
        repeats=len(times),
        warmup=1,
        times_s=times,
        threads=2,
        machine={
            "cpu": "Test CPU 9000",
            "cores": 2,
            "arch": "x86_64",
            "vector_extensions": ["avx2"],
            "gpus": [],
            "memory_gb": 8.0,
            "os": "Linux",
            "python": "3.11",
            "peak_gflops_boost": 100.0,
        },
        **extra,
    ).to_json()


CELL_FAILED = {
    "framework": "torch",
    "mode": "compile",
    "task": "throughput",
    "batch_size": 4,
    "precision": "fp32",
    "image_size": 32,
    "device": "cpu",
    "profile": "smoke",
    "status": "failed",
}


def _results_file(path, host, home):
    recs = [
        _record("torch", "eager", 0.04),
        _record(
            "torch", "torchscript", 0.02, notes=f"exported to {home}/graphs/model.pt on {host}"
        ),
        results.make(
            framework="torch",
            mode="compile",
            task="throughput",
            batch_size=4,
            precision="fp32",
            image_size=32,
            device="cpu",
            profile="smoke",
            status="failed",
            threads=2,
            error=f"RuntimeError: cannot write {home}/.cache/inductor ({FAKE_USER}@{host})",
            log=(
                f'Traceback:\n  File "{home}/venv/lib/python3.11/site-packages/torch/_inductor/'
                f'codecache.py", line 12\n  File "C:\\Users\\{FAKE_USER}\\x.py"\nhost {host.upper()}'
            ),
            machine=_record("torch", "eager", 1.0)["machine"],
        ),
    ]
    for r in recs:
        results.append(path, r)
    return recs


def test_a_card_carries_records_and_ratios_and_never_the_host_user_or_paths(tmp_path):
    host = socket.gethostname()
    home = tmp_path / "home" / FAKE_USER
    home.mkdir(parents=True)
    src = tmp_path / "results.jsonl"
    recs = _results_file(src, host, home)
    env = {"USER": FAKE_USER, "LOGNAME": FAKE_USER, "HOME": str(home)}
    proc = run_labkit("card", str(src), "--out", str(tmp_path / "card.json"), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "anonymous" in proc.stderr
    text = (tmp_path / "card.json").read_text()
    card = json.loads(text)
    assert card["kind"] == cards.KIND and card["name"] is None and card["profile"] == "smoke"
    assert len(card["records"]) == len(recs) and card["machine"]["cpu"] == "Test CPU 9000"
    # the key ratios are labkit.results.speedups' own
    (ratio,) = card["ratios"]
    (expected,) = results.speedups(recs)
    assert ratio["mode"] == "torchscript" and ratio["speedup"] == pytest.approx(expected["speedup"])
    assert ratio["flagged"] is False and ratio["valid"] is True  # both judged valid (schema 2)
    # nothing identifying, anywhere in the card (logs and notes included)
    names = {FAKE_USER, getpass.getuser(), host, host.split(".")[0]}
    for name in names:
        assert not re.search(
            rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", text, re.IGNORECASE
        ), name
    assert FAKE_USER not in text.lower() and str(tmp_path) not in text and "/home/" not in text
    assert (
        ".../site-packages/torch/_inductor/codecache.py" in text
    )  # the useful part of a path stays
    assert "<host>" in text and "<user>" in text
    named = run_labkit(
        "card", str(src), "--out", str(tmp_path / "n.json"), "--name", "Team 7", env=env
    )
    assert named.returncode == 0, named.stderr
    assert json.loads((tmp_path / "n.json").read_text())["name"] == "Team 7"


def test_card_without_results_is_a_clear_error(tmp_path):
    proc = run_labkit("card", cwd=tmp_path)
    assert proc.returncode == 2 and "no results files" in proc.stderr and "bench" in proc.stderr


def _old(record):
    """The record as schema 1 wrote it: no verdict, no above_ceiling, threads a number."""
    old = {k: v for k, v in record.items() if k in SCHEMA_1_FIELDS}
    return {**old, "schema": 1, "threads": 2}


def test_flags_use_the_records_verdict_and_cope_with_old_records():
    old_ok = _old(_record("torch", "eager", 0.04))
    old_above = _old(_record("torch", "eager", 0.001))  # 4000 images/s against a ceiling of 1000
    new_bad = {
        **old_ok,
        "valid": False,
        "invalid_reasons": ["spread 31% above 10%"],
        "above_ceiling": False,
        "cache": "cold",
        "threads": {"intra": 2, "inter": 1},
    }
    new_good = {**old_ok, "valid": True, "invalid_reasons": [], "above_ceiling": False}
    # a record from before verdicts existed is not evidence, and says why
    assert results.flags(old_ok) == ["no validity verdict"] and results.flags(new_good) == []
    assert results.flags(old_above) == [
        "no validity verdict",
        "above the estimated compute ceiling",
    ]
    assert results.flags(new_bad) == ["spread 31% above 10%"]
    graph = {**_record("torch", "torchscript", 0.02), "valid": True, "invalid_reasons": []}
    (r,) = cards.ratios([new_bad, graph])
    assert r["flagged"] and r["valid"] is False and "eager (baseline): spread" in r["flags"][0]
    card = cards.build([new_bad, graph], scrubber=cards.Scrubber(users=[], hosts=[]))
    assert card["records"][0]["threads"] == {"intra": 2, "inter": 1}  # carried as it is
    assert card["counts"] == {"records": 2, "measured": 2, "flagged": 1}


def test_cpu_family_and_isa():
    assert hardware.machine.cpu_family("Intel(R) Xeon(R) Platinum 8480+") == "Intel Xeon"
    assert hardware.machine.cpu_family("AMD EPYC 9R14 96-Core Processor") == "AMD EPYC"
    assert hardware.machine.cpu_family("12th Gen Intel(R) Core(TM) i7-1260P") == "Intel Core"
    assert hardware.machine.cpu_family("Apple M2 Pro") == "Apple M2"
    amx = {"vector_extensions": ["avx2", "avx512f", "amx_tile"]}
    assert hardware.machine_of(amx)["isa"] == "AMX"  # the widest unit
    assert hardware.machine_of({"vector_extensions": ["asimd"]})["isa"] == "NEON"


@pytest.fixture
def handed_in(tmp_path):
    """A shared folder as an instructor finds it: good cards, a results file and the card made
    from it, a duplicate, a truncated upload, a foreign JSON, a notebook checkpoint copy."""
    folder = tmp_path / "handed_in"
    (folder / "week1").mkdir(parents=True)
    fixtures = classroom.fixture_cards("smoke")
    good = [f for f in fixtures if f.stem in ("hub-xeon-amx-1", "laptop-ryzen", "old-laptop-busy")]
    for f in good:
        shutil.copy(f, folder / f.name)
    shutil.copy(good[0], folder / "week1" / "same-card-again.json")
    src = folder / "learner.jsonl"
    recs = _results_file(src, "somehost", "/home/someone")
    cards.save(cards.build(recs), folder / "learner-card.json")
    text = good[-1].read_text()
    (folder / "truncated.json").write_text(text[: len(text) // 3])
    (folder / "package.json").write_text(json.dumps({"name": "app", "dependencies": {}}))
    card = json.loads(good[0].read_text())
    (folder / "future-card.json").write_text(json.dumps({**card, "format": 99}))
    (folder / "bad-records.json").write_text(
        json.dumps({**card, "records": [{"framework": "torch"}]})
    )
    (folder / "notes.txt").write_text("not collected: not .json")
    (folder / ".ipynb_checkpoints").mkdir()
    shutil.copy(good[-1], folder / ".ipynb_checkpoints" / "copy.json")
    n_records = sum(len(json.loads(f.read_text())["records"]) for f in good) + len(recs)
    return folder, n_records


def test_collect_stores_good_files_once_and_names_the_bad_ones(handed_in, tmp_path):
    folder, n_records = handed_in
    db = tmp_path / "class.duckdb"
    proc = run_labkit("class", "collect", str(folder), "--db", str(db))
    assert proc.returncode == 1, proc.stdout + proc.stderr  # some files were skipped
    out = proc.stdout
    assert re.search(r"SKIPPED\s+\S*truncated\.json: truncated or damaged JSON", out), out
    assert re.search(r"SKIPPED\s+\S*package\.json: foreign file", out), out
    assert re.search(r"SKIPPED\s+\S*future-card\.json: card format 99 is newer", out), out
    assert re.search(
        r"SKIPPED\s+\S*bad-records\.json: wrong schema: record 1 .*missing field", out
    ), out
    assert re.search(r"already\s+\S*same-card-again\.json", out) or re.search(
        r"already\s+\S*" + re.escape(classroom.fixture_cards("smoke")[0].name), out
    ), out
    assert "checkpoints" not in out and "notes.txt" not in out
    con = classroom.connect(db, read_only=True)
    try:
        (files,) = con.execute("SELECT count(*) FROM files").fetchone()
        (stored,) = con.execute("SELECT count(*) FROM records").fetchone()
    finally:
        con.close()
    assert files == 5  # three cards, the results file, the card made from it
    assert stored == n_records  # the results file and its card: each measurement once
    again = run_labkit("class", "collect", str(folder), "--db", str(db))
    assert again.returncode == 1 and "0 added" in again.stdout
    good_only = run_labkit(
        "class", "collect", str(folder / "week1"), str(folder / "learner.jsonl"), "--db", str(db)
    )
    assert good_only.returncode == 0, good_only.stdout
    con = classroom.connect(db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM records").fetchone()[0] == n_records
    finally:
        con.close()


def test_collect_bad_usage_exits_2_and_touches_nothing(tmp_path):
    proc = run_labkit("class", "collect", str(tmp_path / "nowhere"), "--db", str(tmp_path / "c.db"))
    assert proc.returncode == 2 and "no such file or folder" in proc.stderr
    assert not (tmp_path / "c.db").exists()
    not_db = tmp_path / "notes.duckdb"
    not_db.write_text("my notes")
    card = classroom.fixture_cards("smoke")[0]
    proc = run_labkit("class", "collect", str(card), "--db", str(not_db))
    assert proc.returncode == 2 and "is not a class database" in proc.stderr
    assert not_db.read_text() == "my notes"
    assert run_labkit("class", "collect").returncode == 2  # no paths: argparse usage error


def test_a_file_that_fails_midway_leaves_the_database_as_it_was(tmp_path, monkeypatch):
    fixtures = classroom.fixture_cards("smoke")
    db = tmp_path / "c.duckdb"
    assert classroom.collect([fixtures[0]], db).exit_status == 0
    real = classroom.store_card

    def broken(con, *args):
        real(con, *args)  # everything written ...
        raise RuntimeError("disk full")  # ... then it fails

    monkeypatch.setattr(classroom, "store_card", broken)
    done = classroom.collect([fixtures[1]], db)
    assert done.exit_status == 1 and "disk full" in done.skipped[0][1]
    con = classroom.connect(db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM files").fetchone()[0] == 1
        n = len(json.loads(fixtures[0].read_text())["records"])
        assert con.execute("SELECT count(*) FROM records").fetchone()[0] == n
    finally:
        con.close()


def test_class_report_writes_its_figures_and_page(handed_in, tmp_path):
    folder, _ = handed_in
    db = tmp_path / "class.duckdb"
    run_labkit("class", "collect", str(folder), "--db", str(db))
    out = tmp_path / "report"
    proc = run_labkit("class", "report", "--db", str(db), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    page = (out / "index.html").read_text()
    for name in classroom.FIGURES:
        png = out / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, name
        assert f"src='{name}.png'" in page
    assert "fixture" in page and "Flagged records" in page and "learner.jsonl" in page
    # the fixtures include flagged records: listed apart, and left out of the summary
    con = classroom.connect(db, read_only=True)
    try:
        ratios, summary = classroom.ratios(con), classroom.speedup_summary(con)
    finally:
        con.close()
    assert any(r["flagged"] for r in ratios) and any(not r["flagged"] for r in ratios)
    assert sum(s["machines"] + s["flagged"] for s in summary) == len(ratios)
    # fixture machines are never pooled with measured ones: rows of their own, marked
    assert {s["source"] for s in summary} == {"measured", classroom.FIXTURE}
    for s in summary:
        pooled = [r for r in ratios if (r["task"], r["cell"]) == (s["task"], s["cell"])]
        assert s["machines"] + s["flagged"] == sum(
            r["fixture"] == (s["source"] == classroom.FIXTURE) for r in pooled
        )
    assert page.count(classroom.FIXTURE) >= 2 and "never pooled" in page
    missing = run_labkit(
        "class", "report", "--db", str(tmp_path / "none.duckdb"), "--out", str(out)
    )
    assert missing.returncode == 2 and "no class database" in missing.stderr


def test_the_report_page_is_its_template_filled_in_and_a_plain_page_without_it(
    tmp_path, monkeypatch
):
    db = tmp_path / "c.duckdb"
    assert classroom.collect(classroom.fixture_cards("smoke")[:2], db).exit_status == 0
    text = classroom.report(db, tmp_path / "report").read_text()
    template = classroom.TEMPLATE.read_text()
    head, tail = template.split("$body")
    assert text.startswith(head.split("$")[0]) and text.endswith(tail) and "$" not in tail
    assert "<h2>Machine types</h2>" in text and "Files collected (2)" in text
    assert "Median speedup per CPU family" in text
    monkeypatch.setattr(classroom, "TEMPLATE", tmp_path / "missing.html")
    text = classroom.report(db, tmp_path / "report").read_text()
    assert "The report could not be made in full: FileNotFoundError" in text
    assert "What this report leaves out" in text  # the plain page still says what it left out


def test_a_figure_marks_fixture_machines_hollow_and_in_the_legend(tmp_path):
    db = tmp_path / "c.duckdb"
    real = _card_of([_record("torch", "eager", 0.04), _record("torch", "torchscript", 0.02)])
    (tmp_path / "mine.json").write_text(json.dumps(real))
    fixture = [f for f in classroom.fixture_cards("smoke") if "ryzen" in f.name or "busy" in f.name]
    classroom.collect([tmp_path / "mine.json", *fixture], db)
    con = classroom.connect(db, read_only=True)
    try:
        ratios = classroom.ratios(con)
    finally:
        con.close()
    assert {r["fixture"] for r in ratios} == {True, False}
    fig = classroom.speedup_figure(ratios)
    assert classroom.FIXTURE in [t.get_text() for t in fig.legends[0].get_texts()]
    faces = {
        (round(float(off[0]), 6), tuple(face))
        for ax in fig.axes
        for coll in ax.collections
        for off, face in zip(coll.get_offsets(), coll.get_facecolors())
    }
    hollow = {x for x, face in faces if face == (1.0, 1.0, 1.0, 1.0)}
    by_x = {round(r["speedup"], 6): r["fixture"] for r in ratios if not r["flagged"]}
    assert hollow and all(by_x.get(x, True) for x in hollow)  # only fixtures are hollow
    assert any(not fx and x not in hollow for x, fx in by_x.items())  # measured ones are filled
    # a fixture's point is hollow whether or not it is flagged (a red cross is hollow too)
    assert all(round(r["speedup"], 6) in hollow for r in ratios if r["fixture"])
    assert any(r["flagged"] and r["fixture"] for r in ratios)


def test_fixture_cards_say_they_are_not_measurements():
    for profile in ("smoke", "standard", "full"):
        for f in classroom.fixture_cards(profile):
            card = json.loads(f.read_text())
            assert "NOT measurements" in card["fixture"], f
            assert all(r["notes"].startswith("FIXTURE") for r in card["records"]), f
            assert {r["profile"] for r in card["records"]} == {profile}


def test_import_classroom_does_not_import_duckdb():
    import subprocess
    import sys

    code = "import labkit.classroom, labkit.results.cards, sys; print('duckdb' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ}
    )
    assert out.stdout.strip() == "False"


def test_scrubbing_leaves_the_labs_own_names_alone():
    scrub = cards.Scrubber(users=["torch"], hosts=["labkit"])
    card = scrub(
        {
            "kind": cards.KIND,
            "records": [
                {"framework": "torch", "notes": "torch on labkit", "log": 'File "/x/y.py"'}
            ],
        }
    )
    assert card["kind"] == cards.KIND and card["records"][0]["framework"] == "torch"
    assert card["records"][0]["notes"] == "<user> on <host>"
    assert card["records"][0]["log"] == 'File "<path>/y.py"'


def _card_of(records, cpu="Test CPU 9000"):
    """A real card (labkit.results.cards.build) of ``records``, measured on a machine named ``cpu``."""
    recs = [{**r, "machine": {**r["machine"], "cpu": cpu}} for r in records]
    return cards.build(recs, scrubber=cards.Scrubber(users=[], hosts=[]), local=False)


def _write_card(path, card, prefix=b""):
    path.write_bytes(prefix + json.dumps(card, indent=1).encode() + b"\n")


@pytest.fixture
def hostile_folder(tmp_path):
    """One good card beside hostile, damaged and oddly named hand-ins, as found in a shared
    folder or an LMS download. Returns (folder, {file name: what the collector must say})."""
    import zipfile

    folder = tmp_path / "handed_in"
    folder.mkdir()
    good = _card_of([_record("torch", "eager", 0.04), _record("torch", "torchscript", 0.02)])
    _write_card(folder / "good.json", good)
    # accepted: any case of .json, a byte-order mark, a mode with TeX in its name
    _write_card(folder / "UPPER.JSON", _card_of([_record("torch", "eager", 0.05)], "Upper CPU"))
    bom = _card_of([_record("torch", "eager", 0.06)], "Bom CPU")
    _write_card(folder / "bom.json", bom, prefix=b"\xef\xbb\xbf")
    tex = _card_of(
        [_record("torch", "eager", 0.04), _record("torch", r"eager$\undefinedmacro$", 0.03)],
        r"Tex $\alpha$ CPU",
    )
    _write_card(folder / "mathtext.json", tex)
    # accepted, and judged invalid: it claims 1e12 images/s and says it is valid
    fast = _record("torch", "torchscript", 4e-12)
    forged = _record("torch", "compile", 0.02)  # honest raw times, a forged figure
    forged.update(median_s=4e-12, images_per_s=1e12)
    for r in (fast, forged):
        r.update(valid=True, invalid_reasons=[], ceiling_share=0.5, above_ceiling=False)
    _write_card(
        folder / "impossible.json",
        _card_of([_record("torch", "eager", 0.04), fast, forged], "Fast CPU"),
    )
    # skipped, each with its reason
    skipped = {"deep.json": "nested deeper than 32 levels", "big.json": "MB, more than the"}
    deep = '{"kind": "labkit-result-card", "format": 1, "records": ' + "[" * 5000
    (folder / "deep.json").write_text(deep + "]" * 5000 + "}")
    big = {**good, "name": "x" * 50_000_000}
    _write_card(folder / "big.json", big)
    nan = json.dumps(good).replace('"median_s": 0.04', '"median_s": NaN', 1)
    assert "NaN" in nan
    (folder / "nan.json").write_text(nan)
    skipped["nan.json"] = "NaN is not a number labkit accepts"
    (folder / "card.json.txt").write_text(json.dumps(good))
    skipped["card.json.txt"] = "not a card: its name ends in '.txt'"
    (folder / "cards.tar.gz").write_bytes(b"\x1f\x8b not really")
    skipped["cards.tar.gz"] = "unpack it first"
    with zipfile.ZipFile(folder / "class.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.write(folder / "good.json", "learner-7/good.json")  # the good card again
        z.writestr("../../escape.json", json.dumps(good))
        z.writestr("inner.zip", b"PK\x05\x06" + bytes(18))
        z.writestr("bomb.json", bytes(9 * 2**20))  # 9 MiB of zeros: 9 kB packed
        z.writestr("__MACOSX/._good.json", b"\x00\x05\x16\x07")
    skipped["class.zip:../../escape.json"] = "unsafe name in the archive"
    skipped["class.zip:inner.zip"] = "an archive inside an archive"
    skipped["class.zip:bomb.json"] = "MB, more than the"
    (folder / "notes.txt").write_text("an instructor's note: not a hand-in")
    return folder, skipped, len(good["records"])


def test_hostile_hand_ins_are_named_and_skipped_and_the_rest_collected(hostile_folder, tmp_path):
    folder, skipped, n_good = hostile_folder
    db = tmp_path / "class.duckdb"
    proc = run_labkit("class", "collect", str(folder), "--db", str(db))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out  # some files were skipped
    assert "Traceback" not in out
    for name, why in skipped.items():
        line = next((ln for ln in out.splitlines() if ln.startswith("SKIPPED") and name in ln), "")
        assert why in line, (name, out)
    for name in ("UPPER.JSON", "bom.json", "mathtext.json", "impossible.json"):
        assert re.search(rf"added\s+\S*/{re.escape(name)}: card", out), (name, out)
    # the good card, handed in twice (in the folder and in the zip): added once, then "already"
    twice = [
        ln.split()[0]
        for ln in out.splitlines()
        if ln.endswith(
            (
                "good.json: card, 2 records",
                "good.json: collected before (same content), nothing added",
            )
        )
    ]
    assert sorted(twice) == ["added", "already"], out
    assert "__MACOSX" not in out and "notes.txt" not in out and "other files ignored" in out
    con = classroom.connect(db, read_only=True)
    try:
        good = con.execute(
            "SELECT count(*) FROM records r JOIN machines m USING (machine_id) "
            "WHERE m.cpu = 'Test CPU 9000'"
        ).fetchone()[0]
        assert good == n_good  # the good card once, though handed in twice
        (bad,) = con.execute(
            "SELECT count(*) FROM records WHERE isnan(images_per_s) OR isinf(images_per_s) "
            "OR isnan(median_s) OR isinf(median_s)"
        ).fetchone()
        assert bad == 0
        judged = classroom.rows(
            con,
            "SELECT mode, valid, flagged, flags, images_per_s, ceiling_share FROM records "
            "WHERE mode IN ('torchscript', 'compile') AND machine_id IN "
            "(SELECT machine_id FROM machines WHERE cpu = 'Fast CPU')",
        )
        n_records = con.execute("SELECT count(*) FROM records").fetchone()[0]
    finally:
        con.close()
    assert {j["mode"] for j in judged} == {"torchscript", "compile"}
    for j in judged:  # what the card said about itself was not believed
        assert j["valid"] is False and j["flagged"], j
    fast = next(j for j in judged if j["mode"] == "torchscript")
    forged = next(j for j in judged if j["mode"] == "compile")
    assert "impossible" in fast["flags"] and "FLOP/s" in fast["flags"]
    assert "contradicts the median of its raw times" in forged["flags"]
    assert forged["images_per_s"] == pytest.approx(4 / 0.02)  # recomputed from its raw times
    assert fast["ceiling_share"] > 1e6  # recomputed, not the card's 0.5
    again = run_labkit("class", "collect", str(folder), "--db", str(db))
    assert again.returncode == 1 and "0 added" in again.stdout, again.stdout
    con = classroom.connect(db, read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM records").fetchone()[0] == n_records
    finally:
        con.close()
    # the report writes its page, with the TeX name shown literally and what it left out
    report = tmp_path / "report"
    proc = run_labkit("class", "report", "--db", str(db), "--out", str(report))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = (report / "index.html").read_text()
    assert "What this report leaves out" in page and "could not be drawn" not in page
    for name in skipped:
        assert html.escape(name) in page, name
    assert html.escape(r"eager$\undefinedmacro$") in page and "impossible" in page
    for name in classroom.FIGURES:
        assert (report / f"{name}.png").read_bytes()[:4] == b"\x89PNG", name


def test_a_failed_cells_log_loses_hub_user_names_home_folders_and_e_mail(monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_USER", "hubalice")
    monkeypatch.setenv("USER", "unixbob")
    monkeypatch.setenv("LOGNAME", "logcarol")
    error = (
        "RuntimeError: hubalice's kernel (unixbob, logcarol) could not open ~dave/notes.txt, "
        "~dave/ or /home/erin; mail frank.o+lab@uni.example.org or see /Users/gina/x.py"
    )
    failed = results.make(**{**CELL_FAILED, "error": error, "log": error, "notes": error})
    card = cards.build([_record("torch", "eager", 0.1), failed])
    text = json.dumps(card)
    for name in ("hubalice", "unixbob", "logcarol", "dave", "erin", "frank", "example", "gina"):
        assert name not in text, name
    scrubbed = card["records"][1]["error"]
    assert scrubbed == (
        "RuntimeError: <user>'s kernel (<user>, <user>) could not open ~/notes.txt, "
        "~/ or ~; mail <email> or see ~/x.py"
    )
    assert card["records"][1]["log"] == scrubbed == card["records"][1]["notes"]
