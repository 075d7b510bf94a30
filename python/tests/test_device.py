"""tnpu.Device: opening, capabilities, lifetime, errors."""
import errno
import threading

import numpy as np
import pytest

import tnpu


def test_open_sim_reports_backend_and_caps():
    with tnpu.Device("sim") as d:
        assert d.backend == "sim"
        caps = d.caps
        assert caps["backend"] == "sim"
        assert caps["pes"] > 0 and caps["rows"] > 0 and caps["cols"] > 0
        assert caps["sram_bytes"] > 0 and caps["clock_mhz"] > 0
        assert isinstance(caps["feature_names"], list)
        # every set feature bit is named once, in bit order
        assert len(caps["feature_names"]) == bin(caps["features"]).count("1")
        assert "im2col" in caps["feature_names"]


def test_sim_geometry_option_reaches_caps():
    with tnpu.Device("sim:rows=2,cols=3") as d:
        assert (d.caps["rows"], d.caps["cols"]) == (2, 3)


def test_islands_in_caps():
    with tnpu.Device("sim") as d:
        isl = d.caps["islands"]
        assert sum(i["rows"] for i in isl) == d.caps["rows"]
    with tnpu.Device("sim:islands=2:i8/2:all:2") as d:
        a, b = d.caps["islands"]
        assert (a["first_row"], a["rows"], a["dtypes"], a["clkdiv"]) == (0, 2, ["int8"], 1)
        assert (b["first_row"], b["rows"], b["clkdiv"]) == (2, 2, 2) and "fp32" in b["dtypes"]
        assert b["sram_base"] == a["sram_base"] + a["sram_bytes"]


def test_default_device_follows_accel_device(monkeypatch):
    monkeypatch.setenv("ACCEL_DEVICE", "sim")
    with tnpu.Device() as d:
        assert d.backend == "sim"
    with tnpu.Device(None) as d:
        assert d.backend == "sim"


def test_missing_device_path_raises_error_with_errno_and_message():
    with pytest.raises(tnpu.Error) as ei:
        tnpu.Device("/dev/accel/no-such-accel")
    assert isinstance(ei.value, OSError)
    assert ei.value.errno == errno.ENOENT
    assert "/dev/accel/no-such-accel" in str(ei.value)


def test_bad_sim_option_raises_error_with_library_message():
    with pytest.raises(tnpu.Error) as ei:
        tnpu.Device("sim:bogus=1")
    assert ei.value.errno == errno.EINVAL
    assert ei.value.strerror


def test_path_must_be_str_or_pathlike():
    with pytest.raises(TypeError):
        tnpu.Device(42)


def test_close_is_idempotent_and_use_after_close_raises_valueerror():
    d = tnpu.Device("sim")
    assert not d.closed
    d.close()
    d.close()
    assert d.closed
    assert "closed" in repr(d)
    a = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match="closed"):
        d.gemm(a, a)
    with pytest.raises(ValueError, match="closed"):
        d.conv2d(np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 1, 1), np.float32))
    with pytest.raises(ValueError):
        d.caps
    with pytest.raises(ValueError):
        d.backend
    with pytest.raises(ValueError):
        with d:
            pass


def test_context_manager_closes_on_exception():
    with pytest.raises(RuntimeError):
        with tnpu.Device("sim") as d:
            raise RuntimeError("boom")
    assert d.closed


def test_threads_share_one_device(dev, rng):
    """The per-device lock serialises libaccel calls made from threads with the GIL released."""
    a = rng.standard_normal((24, 40)).astype(np.float32)
    b = rng.standard_normal((40, 16)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    errors = []

    def work():
        try:
            for _ in range(3):
                np.testing.assert_allclose(dev.gemm(a, b), want, rtol=1e-4, atol=1e-4)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_close_while_other_thread_computes(rng):
    """close() waits for a running operation; later calls raise ValueError, never crash."""
    d = tnpu.Device("sim")
    a = rng.standard_normal((64, 64)).astype(np.float32)
    outcome = []

    def work():
        try:
            for _ in range(5):
                d.gemm(a, a)
            outcome.append("done")
        except ValueError:
            outcome.append("closed")

    t = threading.Thread(target=work)
    t.start()
    d.close()
    t.join()
    assert outcome and outcome[0] in ("done", "closed")


def test_module_exports_only_its_init_function():
    """libaccel and the ONNX runtime are linked in statically: none of their symbols may be exported
    (an application's own cs_init or plan_alloc must not be bound to ours, nor ours to theirs)."""
    import shutil
    import subprocess
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("nm (binutils) not installed")
    out = subprocess.run([nm, "-D", "--defined-only", tnpu.__file__], capture_output=True, text=True, check=True)
    names = [line.split()[-1] for line in out.stdout.splitlines() if line.strip()]
    assert names == ["PyInit_tnpu"]
