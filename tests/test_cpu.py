"""Thread planning for `captrack run` stages on a shared CPU."""

from __future__ import annotations

from captrack.pipeline.cpu import plan_threads, prepare_openmp


def test_idle_machine_uses_every_usable_core() -> None:
    assert plan_threads(env={}, load=0.1, cores=2).threads == 2


def test_busy_machine_leaves_the_busy_cores_alone() -> None:
    assert plan_threads(env={}, load=1.2, cores=4).threads == 3
    assert plan_threads(env={}, load=2.0, cores=2).threads == 1
    assert plan_threads(env={}, load=9.0, cores=2).threads == 1  # never fewer than one


def test_an_explicit_thread_count_wins() -> None:
    assert plan_threads(env={"OMP_NUM_THREADS": "3"}, load=5.0, cores=2).threads == 3
    assert plan_threads(env={"CAPTRACK_THREADS": "1", "OMP_NUM_THREADS": "4"}, load=0.0, cores=8).threads == 1
    assert plan_threads(env={"OMP_NUM_THREADS": "auto"}, load=0.0, cores=2).threads == 2  # not a count: ignored


def test_openmp_waits_passively_unless_the_user_chose() -> None:
    env: dict[str, str] = {}
    prepare_openmp(env)
    assert env["OMP_WAIT_POLICY"] == "PASSIVE"
    mine = {"OMP_WAIT_POLICY": "ACTIVE"}
    prepare_openmp(mine)
    assert mine["OMP_WAIT_POLICY"] == "ACTIVE"


def test_busy_cores_are_measured_from_other_work() -> None:
    """A busy-looping child keeps about one core busy; this process sleeps while it samples."""
    import subprocess
    import sys

    from captrack.pipeline.cpu import busy_cores_now

    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        assert busy_cores_now(0.5) >= 0.6
    finally:
        hog.kill()


def test_bf16_features_name_the_flags_that_decide_the_dtype_and_an_isa_cap() -> None:
    from captrack.pipeline.cpu import bf16_features

    epyc = "processor : 0\nflags : fpu avx2 avx512f avx512_bf16\n"
    assert bf16_features(epyc, {}) == "CPU bfloat16 features: amx_bf16 no, avx512_bf16 yes"
    sapphire = "flags : avx512_bf16 amx_tile amx_bf16\n"
    capped = bf16_features(sapphire, {"ONEDNN_MAX_CPU_ISA": "AVX512_CORE_BF16"})
    assert capped == "CPU bfloat16 features: amx_bf16 yes, avx512_bf16 yes (capped by ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16)"
    assert "--dtype auto" in bf16_features("flags : fpu avx2\n", {}, uses_bf16=True)
    assert "emulated" not in bf16_features("flags : fpu avx2\n", {})  # a float32 stage is not told
