"""Device.gemm against numpy references (float64 matmul; exact int64 matmul for int8)."""
import numpy as np
import pytest

import tnpu

SHAPES = [(1, 1, 1), (3, 5, 7), (17, 33, 9), (64, 96, 48), (130, 20, 70)]


def ref(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_fp32_matches_float64_matmul(dev, rng, m, k, n):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    c = dev.gemm(a, b)
    assert c.dtype == np.float32 and c.shape == (m, n)
    np.testing.assert_allclose(c, ref(a, b), rtol=1e-4, atol=1e-4 * np.sqrt(k))


@pytest.mark.parametrize("m,k,n", SHAPES)
def test_int8_gives_exact_int32(dev, rng, m, k, n):
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    c = dev.gemm(a, b)
    assert c.dtype == np.int32 and c.shape == (m, n)
    np.testing.assert_array_equal(c, a.astype(np.int64) @ b.astype(np.int64))


@pytest.mark.parametrize("trans_a,trans_b", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_transposes(dev, rng, trans_a, trans_b, dtype):
    m, k, n = 13, 29, 11
    if dtype == np.int8:
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
    else:
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
    sa = np.ascontiguousarray(a.T) if trans_a else a
    sb = np.ascontiguousarray(b.T) if trans_b else b
    c = dev.gemm(sa, sb, trans_a=trans_a, trans_b=trans_b)
    np.testing.assert_allclose(c, ref(a, b), rtol=1e-4, atol=1e-3)


def test_non_contiguous_and_fortran_inputs_are_copied(dev, rng):
    big = rng.standard_normal((40, 60)).astype(np.float32)
    a = big[::2, 1::3]                   # strided view, 20 x 20
    b = np.asfortranarray(rng.standard_normal((20, 9)).astype(np.float32))
    c = dev.gemm(a, b)
    np.testing.assert_allclose(c, ref(a, b), rtol=1e-4, atol=1e-4)
    # a transposed view (not contiguous) gives op(a) = a.T's values as given
    c = dev.gemm(big[:20, :20].T, b)
    np.testing.assert_allclose(c, ref(big[:20, :20].T, b), rtol=1e-4, atol=1e-4)


def test_big_endian_float32_is_converted(dev, rng):
    a = rng.standard_normal((6, 4)).astype(">f4")
    b = rng.standard_normal((4, 5)).astype(">f4")
    np.testing.assert_allclose(dev.gemm(a, b), ref(a, b), rtol=1e-5, atol=1e-5)


def test_bias_and_relu(dev, rng):
    a = rng.standard_normal((10, 12)).astype(np.float32)
    b = rng.standard_normal((12, 7)).astype(np.float32)
    bias = rng.standard_normal(7).astype(np.float32)
    np.testing.assert_allclose(dev.gemm(a, b, bias=bias), ref(a, b) + bias, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dev.gemm(a, b, bias=bias, relu=True), np.maximum(ref(a, b) + bias, 0),
                               rtol=1e-4, atol=1e-4)
    ai = rng.integers(-128, 128, (10, 12), dtype=np.int8)
    bi = rng.integers(-128, 128, (12, 7), dtype=np.int8)
    biasi = rng.integers(-5000, 5000, 7, dtype=np.int32)
    np.testing.assert_array_equal(dev.gemm(ai, bi, bias=biasi, relu=True),
                                  np.maximum(ai.astype(np.int64) @ bi + biasi, 0))


def test_out_array_receives_result(dev, rng):
    a = rng.standard_normal((8, 8)).astype(np.float32)
    out = np.full((8, 8), np.nan, np.float32)
    r = dev.gemm(a, a, out)
    assert r is out
    np.testing.assert_allclose(out, ref(a, a), rtol=1e-4, atol=1e-4)
    # a non-contiguous out view is written through
    big = np.zeros((8, 16), np.float32)
    dev.gemm(a, a, c=big[:, ::2])
    np.testing.assert_allclose(big[:, ::2], ref(a, a), rtol=1e-4, atol=1e-4)
    assert not big[:, 1::2].any()


def test_result_does_not_alias_inputs(dev, rng):
    a = rng.standard_normal((16, 16)).astype(np.float32)
    want = ref(a, a)
    c = dev.gemm(a, a, a)                # c aliases a and b: inputs are staged copies
    assert c is a
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("a,b,exc,match", [
    (np.ones((2, 2)), np.ones((2, 2)), TypeError, "float64"),
    (np.ones((2, 2), np.float32), np.ones((2, 2), np.int8), TypeError, "same dtype"),
    (np.ones((2, 2), np.int32), np.ones((2, 2), np.int32), TypeError, "int32"),
    (np.ones(4, np.float32), np.ones((4, 2), np.float32), ValueError, "2-D"),
    (np.ones((2, 3, 4), np.float32), np.ones((4, 2), np.float32), ValueError, "2-D"),
    (np.ones((2, 3), np.float32), np.ones((4, 2), np.float32), ValueError, "inner dimensions"),
    (np.ones((0, 3), np.float32), np.ones((3, 2), np.float32), ValueError, "dimension 0"),
    (None, np.ones((3, 2), np.float32), TypeError, "None"),
    ([[1, 2], [3, 4]], np.ones((2, 2), np.float32), TypeError, "int64"),
    ("text", np.ones((2, 2), np.float32), TypeError, "dtype"),
    ([[1.0], [2.0, 3.0]], np.ones((2, 2), np.float32), TypeError, "convertible"),
])
def test_bad_arguments_raise_python_errors(dev, a, b, exc, match):
    with pytest.raises(exc, match=match):
        dev.gemm(a, b)


def test_bad_bias_and_out(dev):
    a = np.ones((3, 4), np.float32)
    b = np.ones((4, 5), np.float32)
    with pytest.raises(ValueError, match="bias"):
        dev.gemm(a, b, bias=np.ones(4, np.float32))
    with pytest.raises(TypeError, match="bias"):
        dev.gemm(a, b, bias=np.ones(5, np.float64))
    with pytest.raises(TypeError, match="int32"):
        dev.gemm(a.astype(np.int8), b.astype(np.int8), bias=np.ones(5, np.float32))
    with pytest.raises(ValueError, match="shape"):
        dev.gemm(a, b, np.zeros((3, 4), np.float32))
    with pytest.raises(TypeError, match="float32"):
        dev.gemm(a, b, np.zeros((3, 5), np.float64))
    ro = np.zeros((3, 5), np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        dev.gemm(a, b, ro)
    with pytest.raises(TypeError, match="numpy array"):
        dev.gemm(a, b, [[0.0] * 5] * 3)
    with pytest.raises(TypeError):
        dev.gemm(a, b, trans_c=True)


def test_device_still_works_after_errors(dev, rng):
    with pytest.raises(ValueError):
        dev.gemm(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))
    a = rng.standard_normal((5, 5)).astype(np.float32)
    np.testing.assert_allclose(dev.gemm(a, a), ref(a, a), rtol=1e-4, atol=1e-4)


def requant_ref(acc, scale, zp):
    return np.clip(np.round(acc * scale) + zp, -128, 127)


@pytest.mark.parametrize("scale,zp", [(1 / 300, 3), (0.001, -5), (0.02, 0), (1.5, 0)])
def test_int8_requantised_output(dev, rng, scale, zp):
    a = rng.integers(-128, 128, (20, 30), dtype=np.int8)
    b = rng.integers(-128, 128, (30, 10), dtype=np.int8)
    bias = rng.integers(-3000, 3000, 10, dtype=np.int32)
    y = dev.gemm(a, b, bias=bias, relu=True, out_scale=scale, out_zero_point=zp)
    assert y.dtype == np.int8 and y.shape == (20, 10)
    want = requant_ref(np.maximum(a.astype(np.int64) @ b + bias, 0), scale, zp)
    # fixed-point multiplier/shift vs real scale: at most one step apart (on ties)
    assert np.abs(y.astype(np.int64) - want).max() <= 1
    assert np.mean(y == want) > 0.95


def test_fp32_out_scale(dev, rng):
    a = rng.standard_normal((9, 6)).astype(np.float32)
    b = rng.standard_normal((6, 4)).astype(np.float32)
    bias = rng.standard_normal(4).astype(np.float32)
    y = dev.gemm(a, b, bias=bias, relu=True, out_scale=0.25)
    np.testing.assert_allclose(y, np.maximum(ref(a, b) + bias, 0) * 0.25, rtol=1e-4, atol=1e-5)


def test_bad_requantisation_arguments(dev):
    a8 = np.ones((2, 2), np.int8)
    af = np.ones((2, 2), np.float32)
    with pytest.raises(ValueError, match="out_scale"):
        dev.gemm(a8, a8, out_scale=0)
    with pytest.raises(ValueError, match="out_scale"):
        dev.gemm(a8, a8, out_scale=-1.0)
    with pytest.raises(ValueError, match="out_scale"):
        dev.gemm(a8, a8, out_scale=float("nan"))
    with pytest.raises(ValueError, match="needs out_scale"):
        dev.gemm(a8, a8, out_zero_point=3)
    with pytest.raises(ValueError, match="-128"):
        dev.gemm(a8, a8, out_scale=0.5, out_zero_point=200)
    with pytest.raises(ValueError, match="int8"):
        dev.gemm(af, af, out_scale=0.5, out_zero_point=1)
    with pytest.raises(TypeError):
        dev.gemm(a8, a8, out_scale="x")
    with pytest.raises(TypeError, match="int8"):
        dev.gemm(a8, a8, np.zeros((2, 2), np.int32), out_scale=0.5)
