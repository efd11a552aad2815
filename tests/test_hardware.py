"""labkit.hardware on fixture machines: what a process may use, and the ceiling per precision.

Each folder under ``tests/data/machines/`` stands for the filesystem root of one machine
(``proc/cpuinfo``, ``proc/self/status``, ``proc/self/cgroup``, ``sys/devices/system/cpu/...``,
``sys/fs/cgroup/...``; macOS: a ``sysctl`` file); its README says what it is. The expected
numbers are worked out by hand in the comments: peak GFLOP/s = usable cores x maximum GHz x
FLOPs per cycle per core. Nothing here depends on the machine the tests run on.
"""

import math

from labkit import hardware, resnet

import pytest
from conftest import ROOT

MACHINES = ROOT / "tests" / "data" / "machines"


def machine(name: str) -> str:
    path = MACHINES / name
    assert (path / "README").is_file(), f"fixture {name} is missing"
    return str(path)


@pytest.fixture(autouse=True)
def no_clock_override(monkeypatch):
    monkeypatch.delenv(hardware.MAX_GHZ_ENV, raising=False)


# name -> (default threads, usable cores, max GHz, {precision: peak GFLOP/s})
EXPECTED = {
    # AMD EPYC 9654 (Zen 4), 4 CPUs without SMT siblings, cpufreq max 3.7 GHz (current 2.4).
    # AVX-512 runs on two 256-bit FMA pipes: 2 pipes x 8 fp32 lanes x 2 (FMA) = 32 FLOP/cycle.
    # fp32: 4 x 3.7 x 32 = 473.6; bf16 (AVX-512 BF16, 2x): 947.2; int8 (VNNI, 4x): 1894.4
    "amd_zen4": (4, 4.0, 3.7, {"fp32": 473.6, "bf16": 947.2, "int8": 1894.4}),
    # Intel Xeon 8488C (Sapphire Rapids), 4 CPUs, cpufreq max 3.8 GHz.
    # fp32: 2 x 512-bit FMA = 2 x 16 x 2 = 64 FLOP/cycle: 4 x 3.8 x 64 = 972.8
    # bf16 on AMX: 1024 FLOP/cycle: 4 x 3.8 x 1024 = 15564.8 (16x fp32, not 2x)
    # int8 on AMX: 2048 op/cycle: 4 x 3.8 x 2048 = 31129.6
    "intel_amx": (4, 4.0, 3.8, {"fp32": 972.8, "bf16": 15564.8, "int8": 31129.6}),
    # Core i7-8650U: 8 CPUs = 4 cores x 2 hyper-threads: 4 threads, 4 cores. No cpufreq: the
    # model name's 1.90 GHz (a base clock; the idle 0.8 GHz in cpuinfo is ignored).
    # AVX2 + FMA: 2 x 256-bit = 32 FLOP/cycle: 4 x 1.9 x 32 = 243.2; no bf16 unit: bf16 at the
    # fp32 rate, 243.2; no VNNI: int8 at most 2x, 486.4
    "smt_laptop": (4, 4.0, 1.9, {"fp32": 243.2, "bf16": 243.2, "int8": 486.4}),
    # Neoverse V1 (Graviton3): 4 CPUs, cpufreq max 2.6 GHz; 4 x 128-bit NEON FMA pipes
    # = 4 x 4 x 2 = 32 FLOP/cycle: 4 x 2.6 x 32 = 332.8; bf16 (BFMMLA, 4x): 1331.2;
    # int8 (i8mm SMMLA, 8x): 2662.4
    "arm_neoverse_v1": (4, 4.0, 2.6, {"fp32": 332.8, "bf16": 1331.2, "int8": 2662.4}),
    # a container with --cpus=1.5 (cgroup v2 cpu.max 150000/100000) on 8 Zen 3 CPUs at 3.5 GHz:
    # 1.5 cores' worth of time: threads floor(1.5) = 1; AVX2 + FMA 32 FLOP/cycle:
    # fp32 1.5 x 3.5 x 32 = 168.0; bf16 (none) 168.0; int8 (no VNNI, 2x) 336.0
    "container_quota": (1, 1.5, 3.5, {"fp32": 168.0, "bf16": 168.0, "int8": 336.0}),
    # a cgroup v1 container with --cpus=2 on 16 CPUs of an "AMD EPYC" VM with no clock anywhere:
    # 2 threads, 2 cores; the clock and so every peak are unknown
    "container_v1_unknown_clock": (2, 2.0, None, {"fp32": None, "bf16": None, "int8": None}),
    # macOS on an Apple M2 Pro: 10 cores (sysctl), Apple's published M2 maximum 3.5 GHz,
    # 4 x 128-bit NEON FMA pipes = 32 FLOP/cycle: 10 x 3.5 x 32 = 1120; BF16 4x: 4480;
    # I8MM 8x: 8960
    "apple_m2": (10, 10.0, 3.5, {"fp32": 1120.0, "bf16": 4480.0, "int8": 8960.0}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ceiling_and_default_threads_of_each_fixture_machine(name):
    root = machine(name)
    threads, cores, ghz, peaks = EXPECTED[name]
    assert hardware.default_threads(root) == threads
    for precision, peak in peaks.items():
        c = hardware.ceiling(precision, root)
        assert c.precision == precision and c.cores == pytest.approx(cores)
        assert c.clock_ghz == (None if ghz is None else pytest.approx(ghz))
        if peak is None:
            assert c.peak_gflops is None and c.images_per_s_at(224) is None
            assert "unknown" in c.method and hardware.MAX_GHZ_ENV in c.method
        else:
            assert c.peak_gflops == pytest.approx(peak)
            assert c.images_per_s_at(224) == pytest.approx(peak * 1e9 / resnet.flops(224))
            assert f"{c.peak_gflops:.0f} GFLOP/s" in c.method
        assert "GHz" in c.method and "FLOP/cycle" in c.method


def test_smt_counts_physical_cores_and_says_so():
    root = machine("smt_laptop")
    assert hardware.machine.usable_cpus(root) == list(range(8))
    assert hardware.machine.physical_cores(root)[:2] == (4, True)
    assert "SMT on" in hardware.ceiling("fp32", root).method
    report = hardware.report(root)
    assert (report.logical_cpus, report.cores, report.smt) == (8, 4, True)


def test_without_sysfs_the_core_ids_in_cpuinfo_tell_the_same(tmp_path):
    import shutil

    root = tmp_path / "m"
    shutil.copytree(machine("smt_laptop"), root)
    shutil.rmtree(root / "sys")
    cores, smt, how = hardware.machine.physical_cores(root)
    assert (cores, smt) == (4, True) and "cpuinfo" in how


def test_the_affinity_mask_narrows_the_cores(tmp_path):
    import shutil

    root = tmp_path / "m"
    shutil.copytree(machine("smt_laptop"), root)
    # taskset -c 0,4: both hyper-threads of core 0, so one physical core
    (root / "proc/self/status").write_text("Cpus_allowed_list:\t0,4\n")
    assert hardware.machine.physical_cores(root)[:2] == (1, True)
    assert hardware.default_threads(root) == 1
    # taskset -c 0-3: one thread of each core, no two siblings
    (root / "proc/self/status").write_text("Cpus_allowed_list:\t0-3\n")
    assert hardware.machine.physical_cores(root)[:2] == (4, False)


def test_quota_from_cgroup_v2_and_v1():
    assert hardware.machine.cpu_quota(machine("container_quota")) == (
        1.5,
        "cgroup v2 sys/fs/cgroup/cpu.max",
    )
    quota, where = hardware.machine.cpu_quota(machine("container_v1_unknown_clock"))
    assert quota == 2.0 and "cgroup v1" in where and "cfs_quota_us" in where
    assert hardware.machine.cpu_quota(machine("amd_zen4")) == (None, "no cgroup CPU quota")


def test_a_quota_set_higher_up_the_cgroup_tree_applies(tmp_path):
    import shutil

    root = tmp_path / "m"
    shutil.copytree(machine("amd_zen4"), root)
    (root / "proc/self/cgroup").write_text("0::/user.slice/session-1.scope\n")
    (root / "sys/fs/cgroup/user.slice/session-1.scope").mkdir(parents=True)
    (root / "sys/fs/cgroup/user.slice/session-1.scope/cpu.max").write_text("max 100000\n")
    (root / "sys/fs/cgroup/user.slice/cpu.max").write_text("250000 100000\n")
    assert hardware.machine.cpu_quota(root)[0] == 2.5
    assert hardware.default_threads(root) == 2  # floor(2.5), below the 4 cores


def test_clock_sources_in_order(monkeypatch):
    ghz, how = hardware.machine.max_clock_ghz(machine("amd_zen4"))
    assert ghz == pytest.approx(3.7) and how.startswith("cpufreq")  # not cpuinfo's 2.4 GHz
    ghz, how = hardware.machine.max_clock_ghz(machine("smt_laptop"))
    assert ghz == pytest.approx(1.9) and "base clock" in how
    ghz, how = hardware.machine.max_clock_ghz(machine("container_v1_unknown_clock"))
    assert ghz is None and "2.60 GHz, is no maximum" in how
    monkeypatch.setenv(hardware.MAX_GHZ_ENV, "3.7")
    ghz, how = hardware.machine.max_clock_ghz(machine("container_v1_unknown_clock"))
    assert ghz == pytest.approx(3.7) and "your setting" in how
    # 2 cores (quota) x 3.7 GHz x 32 (Zen 4) = 236.8
    assert hardware.ceiling("fp32", machine("container_v1_unknown_clock")).peak_gflops == (
        pytest.approx(236.8)
    )
    monkeypatch.setenv(hardware.MAX_GHZ_ENV, "fast")
    with pytest.raises(ValueError, match="LABKIT_CPU_MAX_GHZ='fast' is not a clock in GHz"):
        hardware.machine.max_clock_ghz(machine("amd_zen4"))


def test_above_the_ceiling_explains_the_likely_cause():
    laptop = hardware.ceiling("fp32", machine("smt_laptop"))
    text = laptop.explain_above()
    assert "243 GFLOP/s" in text and "base clock" in text and "timing error" in text
    apple = hardware.ceiling("fp32", machine("apple_m2"))
    assert "matrix coprocessor" in apple.explain_above()
    assert hardware.ceiling("fp32", machine("container_v1_unknown_clock")).explain_above() == ""


def test_training_costs_three_forward_passes_and_size_scales():
    c = hardware.ceiling("fp32", machine("amd_zen4"))
    assert c.images_per_s_at(224, training=True) == pytest.approx(c.images_per_s_at(224) / 3)
    assert c.images_per_s_at(64) > 10 * c.images_per_s_at(224)  # ~ (224/64)^2
    assert hardware.ceiling("int8-dynamic", machine("amd_zen4")).precision == "int8"
    with pytest.raises(ValueError, match="fp32, bf16, int8"):
        hardware.ceiling("fp16", machine("amd_zen4"))


def test_report_and_cpu_lists():
    assert hardware.machine.parse_cpu_list("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    r = hardware.report(machine("arm_neoverse_v1"))
    assert r.cpu == "Neoverse V1" and r.arch == "aarch64"
    assert {"asimd", "sve", "bf16", "i8mm"} <= set(r.vector_extensions)
    assert r.ceilings["fp32"].peak_gflops == pytest.approx(332.8)
    mac = hardware.report(machine("apple_m2"))
    assert (mac.cpu, mac.arch, mac.memory_gb) == ("Apple M2 Pro", "arm64", 16.0)
    intel = hardware.report(machine("intel_amx"))
    assert {"amx_bf16", "amx_int8", "avx512_bf16"} <= set(intel.vector_extensions)


def test_this_machine_gives_consistent_readings():
    r = hardware.report()
    assert r.threads == hardware.default_threads() >= 1
    assert 1 <= r.cores <= r.logical_cpus
    c = hardware.ceiling()
    assert c.cores <= r.cores and c.method
    assert c.peak_gflops is None or (c.peak_gflops > 0 and math.isfinite(c.peak_gflops))
    fp = hardware.fingerprint()
    assert set(fp["peak_gflops"]) == {"fp32", "bf16", "int8"} and fp["threads"] == r.threads


# --------------------------------------------------------------------------------------------
# the measured peak: fixture trees record their probes' output (tests/data/make_peak_fixtures.py)


def test_a_measured_peak_sits_beside_the_estimate_with_the_clock_it_implies():
    # Xeon 8488C, 4 threads: estimate fp32 4 x 3.8 x 64 = 972.8; the best fp32 kernel (oneDNN,
    # pre-packed) 505 GFLOP/s = 52% of it
    found = hardware.recorded(machine("intel_amx"))
    fp32 = found["fp32"]
    assert found.threads == 4 and found.source.endswith(hardware.FIXTURE_FILE)
    assert fp32.gflops == pytest.approx(505.0, rel=1e-3) and "oneDNN" in fp32.kernel
    assert fp32.estimate_gflops == pytest.approx(972.8)
    assert fp32.of_estimate == pytest.approx(505 / 972.8, rel=1e-3)
    assert "52% of the spec-sheet estimate" in fp32.note and not fp32.above_estimate
    assert 0 < fp32.iqr_gflops < 0.05 * fp32.gflops
    assert fp32.images_per_s_at(224) == pytest.approx(fp32.gflops * 1e9 / resnet.flops(224))
    # bf16 on AMX: 2950 of 15564.8; the plain GEMM is far from the matrix units' promise
    bf16 = found["bf16"]
    assert bf16.gflops == pytest.approx(2950.0, rel=1e-3) and bf16.of_estimate < 0.2
    assert "matrix units" in bf16.note
    assert found["int8-static"] is found["int8"]  # deployment records' precisions
    assert "torch._int_mm (torch, 4096^3)" in {k.kernel for k in found["int8"].kernels}


def test_without_a_clock_the_measurement_still_gives_a_peak_and_names_the_fix():
    found = hardware.recorded(machine("container_v1_unknown_clock"))
    fp32 = found["fp32"]
    assert fp32.estimate_gflops is None and fp32.of_estimate is None and fp32.valid
    assert fp32.gflops == pytest.approx(230.0, rel=1e-3) and "onnxruntime" in fp32.kernel
    assert hardware.MAX_GHZ_ENV in fp32.note and not fp32.above_estimate


def test_a_peak_above_the_estimate_is_flagged_and_what_cannot_be_measured_says_why():
    found = hardware.recorded(machine("smt_laptop"))
    fp32 = found["fp32"]
    # 280 GFLOP/s against 4 x 1.9 (the model name's base clock) x 32 = 243.2
    assert fp32.above_estimate and fp32.of_estimate == pytest.approx(280 / 243.2, rel=1e-3)
    assert "base clock" in fp32.note and "timing is wrong" in fp32.note
    failed = [k for k in fp32.kernels if k.gflops is None]
    assert len(failed) == 1 and "no such kernel" in failed[0].error
    for precision in ("bf16", "int8"):  # AVX2 only: no unit of its own to measure
        peak = found[precision]
        assert peak.gflops is None and not peak.measured
        assert "not measured" in peak.note and f"no {precision} unit" in peak.note
        assert peak.images_per_s_at(128) is None and peak.explain_above() == ""
    assert hardware.recorded(machine("amd_zen4")) is None  # no recorded probe output


def test_a_precision_no_kernel_ran_says_why():
    nothing = hardware.measured.judge("fp32", [], 2, machine("amd_zen4"), "not measured: why")
    assert nothing.gflops is None and nothing.note == "not measured: why"


def test_a_figure_above_the_measured_peak_is_explained_by_its_precision():
    found = hardware.recorded(machine("intel_amx"))
    fp32, int8 = found["fp32"].explain_above(), found["int8"].explain_above()
    assert "almost surely a timing error" in fp32 and "505 GFLOP/s with 4 threads" in fp32
    assert "better kernel than the plain GEMM" in int8 and "--remeasure" in int8


def fake_probe(times: list[float]):
    """A stand-in for a probe's subprocess (``measured._run``): one fp32 kernel whose calls took
    ``times`` seconds, on a quiet machine; ``calls`` counts the runs."""
    calls = []

    def run(probe, threads, precisions):
        calls.append(precisions)
        row = {"precision": "fp32", "kernel": "fake GEMM", "n": 1024, "prepacked": False}
        row |= {"ops": 2 * 1024**3, "times_s": times}
        output = {"versions": {"fake": "1"}, "kernels": [row]}
        return {"module": probe.module, "output": output, "others_cpus": 0.0}

    return run, calls


def test_a_peak_measured_with_a_wide_spread_is_measured_again_and_never_cached(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(hardware.measured.CACHE_ENV, str(tmp_path))
    probe = hardware.Probe("fake.peak", (("fake", "1"),))
    run, calls = fake_probe([0.010, 0.012, 0.020, 0.025, 0.030])  # IQR/median 87%
    monkeypatch.setattr(hardware.measured, "_run", run)
    found = hardware.measure([probe], threads=2, refresh=True)
    fp32 = found["fp32"]
    assert len(calls) == 2  # measured again once, then refused
    assert fp32.measured and not fp32.valid and not found.valid
    assert fp32.invalid[0] == "spread too wide: IQR/median 65% > 10%"  # of the times, as a record's
    assert "not a valid peak" in fp32.note and "--remeasure" in fp32.note
    assert fp32.note.count("not a valid peak") == 1 and "spec-sheet" in fp32.note  # said once
    # no record is judged against it
    assert fp32.images_per_s_at(224) is None and fp32.explain_above() == ""
    assert found.source == "" and not list(tmp_path.glob("peaks-*.json"))
    assert hardware.cached([probe], threads=2) is None
    # a tight one is the machine's peak: cached, and read back without measuring
    run, calls = fake_probe([0.0100, 0.0101, 0.0100, 0.0102, 0.0101])
    monkeypatch.setattr(hardware.measured, "_run", run)
    good = hardware.measure([probe], threads=2)
    assert len(calls) == 1 and good.valid and good["fp32"].images_per_s_at(224) > 0
    assert good.source and hardware.cached([probe], threads=2).valid
    assert hardware.measure([probe], threads=2).measured_at == good.measured_at
    assert len(calls) == 1


def test_a_peak_measured_on_a_busy_machine_is_not_valid():
    row = {"precision": "fp32", "kernel": "torch.mm", "n": 2048, "ops": 2 * 2048**3}
    rate = hardware.measured.KernelRate.of(row | {"times_s": [0.0430] * 9}, "x.torch.peak")
    peak = hardware.measured.judge("fp32", [rate], 2, machine("amd_zen4"), others=1e6)
    assert len(peak.invalid) == 1 and peak.invalid[0].startswith("busy machine: other processes")
    assert not peak.valid and peak.images_per_s_at(224) is None
    quiet = hardware.measured.judge("fp32", [rate], 2, machine("amd_zen4"), others=0.0)
    assert (
        quiet.valid and quiet.images_per_s_at(224) > 0 and "timing error" in quiet.explain_above()
    )


def test_which_precisions_this_kind_of_cpu_measures():
    assert hardware.measured.to_measure(machine("intel_amx")) == {
        "fp32": "",
        "bf16": "",
        "int8": "",
    }
    laptop = hardware.measured.to_measure(machine("smt_laptop"))
    assert laptop["fp32"] == "" and laptop["bf16"] and laptop["int8"]


@pytest.mark.slow
@pytest.mark.costly  # the peak measurement; 06 and 07 measure it under smoke
def test_the_measurement_runs_here_and_is_plausible(tmp_path, monkeypatch):
    """The probes of the installed frameworks, for real, in subprocesses, into an empty cache:
    every measured rate is positive and below the estimate where one exists, or flagged."""
    from labkit import frameworks

    monkeypatch.setenv(hardware.measured.CACHE_ENV, str(tmp_path / "cache"))
    probes = frameworks.peak_probes()
    if not probes:
        pytest.skip("no framework with a matrix-multiply probe is installed")
    found = hardware.measure(probes, threads=1)
    assert not found.problems, found.problems
    assert found.threads == 1
    assert found["fp32"].measured
    for precision, why in hardware.measured.to_measure().items():
        peak = found[precision]
        assert peak.measured == (not why), (precision, peak.note)
        if not peak.measured:
            continue
        assert all(k.gflops > 0 and len(k.times_s) >= 5 for k in peak.kernels if not k.error)
        assert peak.gflops == max(k.gflops for k in peak.kernels if k.gflops)
        if peak.estimate_gflops is not None:
            assert peak.above_estimate == (peak.gflops > peak.estimate_gflops), peak.note
        assert peak.note
    if not found.valid:  # a busy machine (a wide spread): refused, not cached
        assert found.source == "" and hardware.cached(probes, threads=1) is None
        return
    assert found.source.startswith(str(tmp_path / "cache"))
    again = hardware.measure(probes, threads=1)  # from the cache: nothing is measured
    assert again.measured_at == found.measured_at and again["fp32"].gflops == found["fp32"].gflops
    assert hardware.cached(probes, threads=2) is None  # another thread count is another peak
