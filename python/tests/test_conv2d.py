"""Device.conv2d (NCHW) against a numpy im2col convolution in float64 / int64."""
import numpy as np
import pytest

from numpy_ref import conv_ref


def as_pads(padding):
    if isinstance(padding, int):
        return (padding,) * 4
    if len(padding) == 2:
        return (padding[0], padding[1], padding[0], padding[1])
    return tuple(padding)


def as_pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


CASES = [
    # (N, C, H, W), (K, R, S), stride, padding, dilation, groups
    ((1, 1, 5, 5), (1, 3, 3), 1, 0, 1, 1),
    ((2, 3, 9, 8), (4, 3, 3), 1, 1, 1, 1),
    ((1, 8, 12, 12), (16, 3, 3), 2, 1, 1, 1),
    ((1, 4, 11, 10), (6, 3, 2), (2, 1), (1, 0, 2, 1), 1, 1),
    ((1, 3, 13, 13), (5, 3, 3), 1, 2, 2, 1),
    ((1, 6, 7, 7), (4, 3, 3), 1, 1, 1, 2),
    ((2, 8, 10, 10), (8, 3, 3), 1, 1, 1, 8),          # depthwise
    ((1, 16, 6, 6), (32, 1, 1), 1, 0, 1, 1),          # pointwise
]


def make(rng, dtype, xshape, kshape, groups):
    n, c, h, w = xshape
    k, r, s = kshape
    if dtype == np.int8:
        return (rng.integers(-128, 128, xshape, dtype=np.int8),
                rng.integers(-128, 128, (k, c // groups, r, s), dtype=np.int8))
    return (rng.standard_normal(xshape).astype(np.float32),
            rng.standard_normal((k, c // groups, r, s)).astype(np.float32))


@pytest.mark.parametrize("dtype", [np.float32, np.int8])
@pytest.mark.parametrize("xshape,kshape,stride,padding,dilation,groups", CASES)
def test_conv2d_matches_numpy_im2col(dev, rng, dtype, xshape, kshape, stride, padding, dilation, groups):
    x, w = make(rng, dtype, xshape, kshape, groups)
    y = dev.conv2d(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups)
    want = conv_ref(x, w, stride=as_pair(stride), pad=as_pads(padding), dil=as_pair(dilation), groups=groups)
    assert y.shape == want.shape
    if dtype == np.int8:
        assert y.dtype == np.int32
        np.testing.assert_array_equal(y, want)
    else:
        assert y.dtype == np.float32
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4 * np.sqrt(w[0].size))


def test_bias_relu_and_non_contiguous_input(dev, rng):
    x = rng.standard_normal((1, 4, 16, 16)).astype(np.float32)[:, :, ::2, ::2]
    w = rng.standard_normal((5, 4, 3, 3)).astype(np.float32)
    b = rng.standard_normal(5).astype(np.float32)
    y = dev.conv2d(x, w, b, padding=1, relu=True)
    np.testing.assert_allclose(y, np.maximum(conv_ref(x, w, b, pad=(1, 1, 1, 1)), 0), rtol=1e-4, atol=1e-4)


def test_int8_bias_and_input_zero_point_pads_with_it(dev, rng):
    x, w = make(rng, np.int8, (1, 3, 6, 6), (4, 3, 3), 1)
    b = rng.integers(-1000, 1000, 4, dtype=np.int32)
    y = dev.conv2d(x, w, b, padding=1, input_zero_point=-7)
    np.testing.assert_array_equal(y, conv_ref(x, w, b, pad=(1, 1, 1, 1), pad_value=-7))


@pytest.mark.parametrize("x,w,kw,exc,match", [
    (np.ones((1, 1, 4, 4)), np.ones((1, 1, 3, 3)), {}, TypeError, "float64"),
    (np.ones((1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), {}, ValueError, "4-D"),
    (np.ones((1, 2, 4, 4), np.float32), np.ones((1, 3, 3, 3), np.float32), {}, ValueError, "groups"),
    (np.ones((1, 3, 4, 4), np.float32), np.ones((4, 1, 3, 3), np.float32), {"groups": 2}, ValueError, "groups"),
    (np.ones((1, 1, 2, 2), np.float32), np.ones((1, 1, 3, 3), np.float32), {}, ValueError, "larger"),
    (np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), {"stride": 0}, ValueError, "stride"),
    (np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), {"padding": -1}, ValueError, "padding"),
    (np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), {"padding": (1, 2, 3)}, TypeError,
     "padding"),
    (np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), {"dilation": "2"}, TypeError,
     "dilation"),
    (np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), {"input_zero_point": 3}, ValueError,
     "int8"),
    (np.ones((1, 1, 4, 4), np.int8), np.ones((1, 1, 3, 3), np.int8), {"input_zero_point": 300}, ValueError,
     "-128"),
    (np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), {"bias": np.ones(2, np.float32)},
     ValueError, "bias"),
    (np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), {"groups": 0}, ValueError, "groups"),
    (np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), {"groups": -1}, ValueError, "groups"),
    (np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32), {"stride": (1.5, 1)}, TypeError, ""),
])
def test_bad_arguments_raise_python_errors(dev, x, w, kw, exc, match):
    with pytest.raises(exc, match=match):
        dev.conv2d(x, w, **kw)


def test_padding_and_stride_as_lists(dev, rng):
    x, w = make(rng, np.float32, (1, 2, 7, 7), (3, 3, 3), 1)
    y = dev.conv2d(x, w, stride=[2, 1], padding=[1, 0, 2, 1])
    np.testing.assert_allclose(y, conv_ref(x, w, stride=(2, 1), pad=(1, 0, 2, 1)), rtol=1e-4, atol=1e-4)


def test_library_limits_raise_error_with_library_message(dev):
    """Values the Python side accepts but the device cannot do come back as tnpu.Error with libaccel's message."""
    import errno

    import tnpu
    with pytest.raises(tnpu.Error, match="255") as ei:
        dev.conv2d(np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 3, 3), np.float32), stride=300, padding=300)
    assert ei.value.errno == errno.EINVAL
    assert dev.conv2d(np.ones((1, 1, 3, 3), np.float32), np.ones((1, 1, 3, 3), np.float32))[0, 0, 0, 0] == 9


def test_int8_conv_requantised_output(dev, rng):
    x, w = make(rng, np.int8, (2, 3, 7, 7), (4, 3, 3), 1)
    b = rng.integers(-2000, 2000, 4, dtype=np.int32)
    y = dev.conv2d(x, w, b, padding=1, relu=True, out_scale=0.004, out_zero_point=-20)
    assert y.dtype == np.int8 and y.shape == (2, 4, 7, 7)
    acc = np.maximum(conv_ref(x, w, b, pad=(1, 1, 1, 1)), 0)
    want = np.clip(np.round(acc * 0.004) - 20, -128, 127)
    assert np.abs(y.astype(np.int64) - want).max() <= 1
    assert np.mean(y == want) > 0.95
