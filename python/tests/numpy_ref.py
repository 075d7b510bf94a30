"""numpy references of the tnpu Python tests: computed in float64 / int64 from the definitions, never
from tnpu's own code."""
import gzip

import numpy as np


def conv_ref(x, w, bias=None, stride=(1, 1), pad=(0, 0, 0, 0), dil=(1, 1), groups=1, pad_value=0):
    """Reference: explicit padding, im2col patches, one matmul per group (wider dtype, no overflow)."""
    acc = np.int64 if np.issubdtype(x.dtype, np.integer) else np.float64
    x = x.astype(acc)
    w = w.astype(acc)
    n, c, h, wd = x.shape
    k, cg, r, s = w.shape
    top, left, bottom, right = pad
    xp = np.full((n, c, h + top + bottom, wd + left + right), pad_value, acc)
    xp[:, :, top:top + h, left:left + wd] = x
    oh = (xp.shape[2] - dil[0] * (r - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dil[1] * (s - 1) - 1) // stride[1] + 1
    out = np.zeros((n, k, oh, ow), acc)
    kg = k // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        cols = np.empty((n, cg, r, s, oh, ow), acc)           # im2col
        for i in range(r):
            for j in range(s):
                y0, x0 = i * dil[0], j * dil[1]
                cols[:, :, i, j] = xs[:, :, y0:y0 + stride[0] * oh:stride[0], x0:x0 + stride[1] * ow:stride[1]]
        cols = cols.reshape(n, cg * r * s, oh * ow)
        wg = w[g * kg:(g + 1) * kg].reshape(kg, cg * r * s)
        out[:, g * kg:(g + 1) * kg] = (wg @ cols).reshape(n, kg, oh, ow)
    if bias is not None:
        out += bias.astype(acc).reshape(1, k, 1, 1)
    return out


def maxpool_ref(x, k, stride):
    n, c, h, w = x.shape
    oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    out = np.full((n, c, oh, ow), -np.inf)
    for i in range(k):
        for j in range(k):
            out = np.maximum(out, x[:, :, i:i + stride * oh:stride, j:j + stride * ow:stride])
    return out


def onnx_forward(model, feeds):
    """Run the few operators of models/fashion-mnist (Conv, BatchNormalization, Relu, MaxPool, Flatten,
    Gemm) in float64 from an onnx.ModelProto (the `onnx` package reads the file, numpy computes)."""
    from onnx import helper, numpy_helper

    vals = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
    vals.update({k: v.astype(np.float64) for k, v in feeds.items()})
    for node in model.graph.node:
        at = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        x = [vals[i] for i in node.input]
        if node.op_type == "Conv":
            p = at.get("pads", [0, 0, 0, 0])
            y = conv_ref(x[0], x[1], stride=tuple(at.get("strides", [1, 1])), pad=(p[0], p[1], p[2], p[3]),
                         dil=tuple(at.get("dilations", [1, 1])), groups=at.get("group", 1))
            if len(x) > 2:
                y = y + x[2].reshape(1, -1, 1, 1)
        elif node.op_type == "BatchNormalization":
            scale, bias, mean, var = (v.reshape(1, -1, 1, 1) for v in x[1:5])
            y = (x[0] - mean) / np.sqrt(var + at.get("epsilon", 1e-5)) * scale + bias
        elif node.op_type == "Relu":
            y = np.maximum(x[0], 0)
        elif node.op_type == "MaxPool":
            assert not any(at.get("pads", [0])) and not at.get("ceil_mode", 0)
            y = maxpool_ref(x[0], at["kernel_shape"][0], at["strides"][0])
        elif node.op_type == "Flatten":
            y = x[0].reshape(x[0].shape[0], -1)
        elif node.op_type == "Gemm":
            a = x[0].T if at.get("transA", 0) else x[0]
            b = x[1].T if at.get("transB", 0) else x[1]
            y = at.get("alpha", 1.0) * (a @ b) + (at.get("beta", 1.0) * x[2] if len(x) > 2 else 0)
        else:
            raise NotImplementedError(node.op_type)
        vals[node.output[0]] = y
    return {o.name: vals[o.name] for o in model.graph.output}


def read_idx(path):
    """An idx file of the MNIST family (gzip): a uint8 array of the shape its header gives."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def assert_model_close(got, want, atol=None, rtol=None):
    """A model output against its reference with the project's model rule (Documentation/onnx.md,
    "Tolerances"; onnx_compare_scaled): |got - want| <= atol + rtol * max|want|, the max over the
    output (its scale), defaults tnpu.MODEL_ATOL / MODEL_RTOL."""
    import tnpu
    atol = tnpu.MODEL_ATOL if atol is None else atol
    rtol = tnpu.MODEL_RTOL if rtol is None else rtol
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"shape {got.shape}, expected {want.shape}"
    finite = np.abs(want[np.isfinite(want)])
    bound = atol + rtol * (finite.max() if finite.size else 0.0)
    err = np.abs(got - want)
    bad = ~((err <= bound) | (got == want) | (np.isnan(got) & np.isnan(want)))
    assert not bad.any(), (f"{bad.sum()} of {got.size} values differ by more than {bound:.3g} "
                           f"(max |err| {np.nanmax(err):.3g}); first at {np.argwhere(bad)[0].tolist()}")
