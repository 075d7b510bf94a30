#!/usr/bin/python3
"""errors.py — the model zoo's error budget (tools/model-zoo/run --errors; Documentation/onnx.md, "Tolerances").

  errors.py EXPORT_DIR ACCEL_RUN MODEL:ATOL:RTOL ...

For each float model: the reference is PyTorch's float64 evaluation (output_0.pb, export.py); prints the
output's scale max|ref|, tnpu's largest error on the sim device and PyTorch's own float32 error
(torch_fp32.pb), both as fractions of the scale, the probabilistic rounding-error estimate u * sqrt(sum K)
(u = 2^-24, K the length of each Conv/Gemm/MatMul dot product, summed over every such node: Higham & Mary's
sqrt(n) u per dot product, independent layers adding in quadrature), the bound atol + rtol * scale as a
fraction of the scale, and the margin bound / tnpu error.  Uses Debian's python3-numpy and python3-onnx.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.shape_inference
from onnx import numpy_helper


def load(path):
    return numpy_helper.to_array(onnx.load_tensor(path)).astype(np.float64).ravel()


def dot_lengths(path):
    """sum over the model's Conv/ConvTranspose/Gemm/MatMul nodes of the dot-product length K."""
    m = onnx.shape_inference.infer_shapes(onnx.load(path))
    shapes = {i.name: list(i.dims) for i in m.graph.initializer}
    for v in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        shapes.setdefault(v.name, [d.dim_value for d in v.type.tensor_type.shape.dim])
    total = 0
    for n in m.graph.node:
        w = shapes.get(n.input[1]) if len(n.input) > 1 else None
        if not w:
            continue
        if n.op_type == "Conv" and len(w) >= 3:
            total += int(np.prod(w[1:]))
        elif n.op_type == "Gemm":
            trans_b = next((a.i for a in n.attribute if a.name == "transB"), 0)
            total += w[1] if trans_b else w[0]
        elif n.op_type == "MatMul":
            total += w[-2] if len(w) >= 2 else w[0]
    return total


def main():
    if len(sys.argv) < 4:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    d, accel_run = sys.argv[1], sys.argv[2]
    print(f"{'model':22s} {'scale':>9s} {'tnpu err':>10s} {'torch fp32':>10s} {'estimate':>10s} {'bound':>9s} {'margin':>8s}")
    print(f"{'':22s} {'max|ref|':>9s} {'/ scale':>10s} {'/ scale':>10s} {'u*sqrt(K)':>10s} {'/ scale':>9s} {'':>8s}")
    worst = None
    for spec in sys.argv[3:]:
        name, atol, rtol = spec.split(":")
        atol, rtol = float(atol), float(rtol)
        m = os.path.join(d, name)
        if not os.path.exists(os.path.join(m, "torch_fp32.pb")):
            continue  # an integer (QDQ) model: compared in LSBs
        with tempfile.TemporaryDirectory() as tmp:
            p = subprocess.run([accel_run, os.path.join(m, "model.onnx"), "--input", os.path.join(m, "input_0.pb"),
                                "--device", "sim", "--save-outputs", os.path.join(tmp, "o")],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if p.returncode != 0:
                print(f"{name:22s} accel-run failed: {p.stdout.strip()[-200:]}")
                continue
            got = load(os.path.join(tmp, "o0.pb"))
        ref, t32 = load(os.path.join(m, "output_0.pb")), load(os.path.join(m, "torch_fp32.pb"))
        scale = np.abs(ref[np.isfinite(ref)]).max()
        e_dev = np.abs(got - ref).max() / scale
        e_t32 = np.abs(t32 - ref).max() / scale
        bound = (atol + rtol * scale) / scale
        margin = bound / e_dev if e_dev > 0 else float("inf")
        worst = margin if worst is None else min(worst, margin)
        est = 2.0 ** -24 * np.sqrt(dot_lengths(os.path.join(m, "model.onnx")))
        print(f"{name:22s} {scale:9.3g} {e_dev:10.2e} {e_t32:10.2e} {est:10.2e} {bound:9.2e} {margin:7.0f}x",
              flush=True)
    if worst is not None:
        print(f"smallest margin: {worst:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
