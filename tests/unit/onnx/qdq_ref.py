#!/usr/bin/python3
"""qdq_ref.py MODEL INPUT_RAW DTYPE SHAPE OUTPUT_RAW — the numpy reference of test_qdq.c.

Evaluates a small QDQ ONNX model exactly as the ONNX specification defines each operator, in float64
between QuantizeLinear and DequantizeLinear (numpy; python3-onnx only reads the file): DequantizeLinear
(q - zp) * scale per tensor or along `axis`; QuantizeLinear saturate(round_half_even(x / scale) + zp), per
tensor or along `axis`;
Conv (pads, strides, dilations, group), Gemm, MatMul, Add, Relu, Clip, MaxPool, AveragePool
(count_include_pad), GlobalAveragePool, Flatten.  Writes the single output's raw bytes.
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def attrs(n):
    return {a.name: helper.get_attribute_value(a) for a in n.attribute}


def windows(x, kh, kw, sh, sw, dh, dw, pads, fill):
    """x [N, C, H, W] padded with fill: yields (r, s, the strided view of tap r, s) and the output size."""
    pt, pl, pb, pr = pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), constant_values=fill)
    oh = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    taps = [(r, s, xp[:, :, r * dh:r * dh + sh * (oh - 1) + 1:sh, s * dw:s * dw + sw * (ow - 1) + 1:sw])
            for r in range(kh) for s in range(kw)]
    return taps, oh, ow


def conv(x, w, b, a):
    k, cg, kh, kw = w.shape
    g = a.get("group", 1)
    p = a.get("pads", [0, 0, 0, 0])
    st, dl = a.get("strides", [1, 1]), a.get("dilations", [1, 1])
    taps, oh, ow = windows(x, kh, kw, st[0], st[1], dl[0], dl[1], [p[0], p[1], p[2], p[3]], 0.0)
    y = np.zeros((x.shape[0], k, oh, ow))
    kg = k // g
    for gi in range(g):
        for r, s, t in taps:
            y[:, gi * kg:(gi + 1) * kg] += np.einsum("nchw,kc->nkhw", t[:, gi * cg:(gi + 1) * cg],
                                                     w[gi * kg:(gi + 1) * kg, :, r, s])
    if b is not None:
        y += b.reshape(1, -1, 1, 1)
    return y


def pool(x, a, kind):
    kh, kw = a["kernel_shape"]
    p = a.get("pads", [0, 0, 0, 0])
    st = a.get("strides", [1, 1])
    taps, _, _ = windows(x, kh, kw, st[0], st[1], 1, 1, p, -np.inf if kind == "max" else 0.0)
    v = np.stack([t for _, _, t in taps])
    return v.max(axis=0) if kind == "max" else v.sum(axis=0) / (kh * kw)


def main():
    model, inp, dt, shape, outp = sys.argv[1:6]
    g = onnx.load(model).graph
    env = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    env[g.input[0].name] = np.fromfile(inp, dtype=dt).reshape([int(d) for d in shape.split("x")])
    for n in g.node:
        a, x = attrs(n), [env[i] if i else None for i in n.input]
        op = n.op_type
        if op == "DequantizeLinear":
            s, zp = x[1].astype(np.float64), (x[2] if len(x) > 2 else np.zeros_like(x[1], np.int64))
            if s.size > 1:
                sh = [1] * x[0].ndim
                sh[a.get("axis", 1)] = -1
                s, zp = s.reshape(sh), zp.reshape(sh)
            y = (x[0].astype(np.int64) - zp.astype(np.int64)) * s
        elif op == "QuantizeLinear":
            zp = x[2] if len(x) > 2 else np.uint8(0)
            s = x[1].astype(np.float64)
            if s.size > 1:  # per axis (opset 13)
                sh = [1] * x[0].ndim
                sh[a.get("axis", 1)] = -1
                s, zp = s.reshape(sh), zp.reshape(sh)
            lo, hi = (0, 255) if zp.dtype == np.uint8 else (-128, 127)
            y = np.clip(np.round(x[0] / s) + zp.astype(np.int64), lo, hi).astype(zp.dtype)  # half to even
        elif op == "Conv":
            y = conv(x[0], x[1], x[2] if len(x) > 2 else None, a)
        elif op == "Gemm":
            bm = x[1].T if a.get("transB", 0) else x[1]
            y = x[0] @ bm + (x[2] if len(x) > 2 else 0)
        elif op == "MatMul":
            y = x[0] @ x[1]
        elif op == "Add":
            y = x[0] + x[1]
        elif op == "Relu":
            y = np.maximum(x[0], 0)
        elif op == "Clip":
            y = np.clip(x[0], x[1].astype(np.float64), x[2].astype(np.float64))
        elif op == "MaxPool":
            y = pool(x[0], a, "max")
        elif op == "AveragePool":
            y = pool(x[0], a, "avg")
        elif op == "GlobalAveragePool":
            y = x[0].mean(axis=(2, 3), keepdims=True)
        elif op == "Flatten":
            y = x[0].reshape(x[0].shape[0], -1)
        else:
            raise SystemExit(f"qdq_ref.py: no {op}")
        env[n.output[0]] = y
    np.ascontiguousarray(env[g.output[0].name]).tofile(outp)


if __name__ == "__main__":
    main()
