#!/usr/bin/python3
"""families.py — the model families of `make model-zoo` beyond classification (issue #30; tools/model-zoo/run,
Documentation/onnx.md "Model zoo").

  families.py OUTDIR [MODEL ...]

Writes OUTDIR/MODEL/model.onnx, input_0.pb and output_0.pb as export.py does, for: semantic segmentation
(LR-ASPP on MobileNetV3-Large), a YOLO-style detector at batch 2 (SiLU, C2f Split/Concat, SPPF, nearest
Upsample), Swin-T (shifted-window attention as torchvision exports it: Mod, Pad, Roll as Slice/Concat,
relative position bias Gather), video (r3d_18: Conv3d, AdaptiveAvgPool3d), recurrent classifiers
(bidirectional LSTM and GRU), an audio feature encoder (wav2vec2-style Conv1d with large kernels and
strides, GroupNorm), an MLP quantised dynamically as ONNX Runtime's quantize_dynamic writes it
(DynamicQuantizeLinear, MatMulInteger) and an fp16 CNN (FLOAT16 weights, input and output).

References: the float models' is the torch module evaluated in float64 (as export.py); the fp16 CNN's is
the same float64 evaluation of the module with its weights and input rounded to float16 (the model holds
exactly those values); the dynamically quantised MLP's is computed below with numpy exactly as the ONNX
specification defines each of its operators.  Seeded weights; nothing is downloaded.

This file's hash keys its own cache directory (tools/model-zoo/run), apart from export.py's.
"""
import copy
import io
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import torch
import torch.nn as nn
import torchvision

SEED = 3030
torch.set_num_threads(2)


def save_pb(path, arr, name):
    t = numpy_helper.from_array(np.ascontiguousarray(arr), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def randomise_norms(model):
    """Non-trivial BatchNorm statistics and affine parameters (folding must use all four tensors)."""
    g = torch.Generator().manual_seed(SEED + 1)
    for mod in model.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)):
            c = mod.num_features
            mod.running_mean.copy_(torch.randn(c, generator=g) * 0.2)
            mod.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            if mod.affine:
                mod.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
                mod.bias.data.copy_(torch.randn(c, generator=g) * 0.2)


class OutOnly(nn.Module):
    """torchvision's segmentation models return {"out": ...}: the graph output is that tensor."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)["out"]


def lraspp():
    return OutOnly(torchvision.models.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                              num_classes=21))


def cbs(i, o, k=3, s=1):
    return nn.Sequential(nn.Conv2d(i, o, k, s, k // 2, bias=False), nn.BatchNorm2d(o), nn.SiLU())


class Yolo(nn.Module):
    """A YOLOv8-style backbone/neck/head in miniature: C2f (Split, bottleneck, Concat), SPPF (three
    chained 5x5 max pools, Concat), nearest 2x Upsample, Concat with the stride-2 features, 1x1 head."""

    def __init__(self):
        super().__init__()
        self.stem, self.down = cbs(3, 16, 3, 2), cbs(16, 32, 3, 2)
        self.c2f_in, self.c2f_mid, self.c2f_out = cbs(32, 32, 1), cbs(16, 16), cbs(48, 32, 1)
        self.sppf_in, self.pool, self.sppf_out = cbs(32, 16, 1), nn.MaxPool2d(5, 1, 2), cbs(64, 32, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.head = nn.Conv2d(48, 3 * (5 + 4), 1)

    def forward(self, x):
        x = self.stem(x)
        p = self.down(x)
        a, b = self.c2f_in(p).split(16, 1)
        y = self.c2f_out(torch.cat([a, b, self.c2f_mid(b)], 1))
        z = self.sppf_in(y)
        z1 = self.pool(z)
        z2 = self.pool(z1)
        y = self.sppf_out(torch.cat([z, z1, z2, self.pool(z2)], 1))
        return self.head(torch.cat([self.up(y), x], 1))


class Recurrent(nn.Module):
    """A sequence classifier: a bidirectional LSTM or GRU, its last step's state into a Linear."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(16, 32, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(64, 5)

    def forward(self, x):
        y, _ = self.rnn(x)
        return self.fc(y[:, -1])


class AudioEncoder(nn.Module):
    """wav2vec2's feature encoder in miniature: Conv1d kernel 10 stride 5, GroupNorm over every channel
    (exported as InstanceNormalization), GELU, then kernel 3 stride 2 and kernel 2 stride 2."""

    def __init__(self):
        super().__init__()
        self.c0 = nn.Conv1d(1, 32, 10, 5, bias=False)
        self.norm = nn.GroupNorm(32, 32)
        self.c1 = nn.Conv1d(32, 32, 3, 2, bias=False)
        self.c2 = nn.Conv1d(32, 32, 2, 2, bias=False)
        self.act = nn.GELU()

    def forward(self, x):
        x = self.act(self.norm(self.c0(x)))
        return self.act(self.c2(self.act(self.c1(x))))


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.f = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, 1, 1),
                               nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x):
        return self.f(x)


FLOAT_MODELS = {
    "lraspp_mobilenet_v3": (lraspp, (1, 3, 64, 64), 13),
    "yolo_style_b2": (Yolo, (2, 3, 64, 64), 13),
    "swin_t": (lambda: torchvision.models.swin_t(weights=None), (1, 3, 64, 64), 17),
    "r3d_18": (lambda: torchvision.models.video.r3d_18(weights=None), (1, 3, 4, 32, 32), 13),
    "lstm_bidir": (lambda: Recurrent(nn.LSTM), (1, 12, 16), 13),
    "gru_bidir": (lambda: Recurrent(nn.GRU), (1, 12, 16), 13),
    "audio_conv1d": (AudioEncoder, (1, 1, 1600), 13),
}
MODELS = list(FLOAT_MODELS) + ["fp16_cnn", "mlp_dynamic_quant"]


def export(model, x, opset):
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, opset_version=opset, input_names=["input"], output_names=["output"],
                      do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL)
    return onnx.load_from_string(buf.getvalue())


def write(outdir, name, proto, x, y):
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(proto, os.path.join(d, "model.onnx"))
    save_pb(os.path.join(d, "input_0.pb"), x, "input")
    save_pb(os.path.join(d, "output_0.pb"), y, "output")


def export_float(name, outdir):
    build, shape, opset = FLOAT_MODELS[name]
    torch.manual_seed(SEED)
    model = build()
    randomise_norms(model)
    model.eval()
    x = torch.randn(shape, generator=torch.Generator().manual_seed(SEED + 2))
    proto = export(model, x, opset)
    with torch.no_grad():
        y32 = model(x)
        y = copy.deepcopy(model).double()(x.double())
    write(outdir, name, proto, x.numpy(), y.float().numpy())
    # PyTorch's own float32 output, for the error budget (tools/model-zoo/run --errors)
    save_pb(os.path.join(outdir, name, "torch_fp32.pb"), y32.numpy(), "output")


def export_fp16(outdir):
    """SmallCnn with every weight, the input and the output in FLOAT16 (Cast-free: the graph's own types),
    as a model converted to half precision is shipped."""
    torch.manual_seed(SEED)
    model = SmallCnn().eval()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())  # the values the fp16 model holds
    x = torch.randn((1, 3, 32, 32), generator=torch.Generator().manual_seed(SEED + 2)).half().float()
    proto = export(model, x, 13)
    g = proto.graph
    for t in g.initializer:
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    for v in list(g.input) + list(g.output):
        v.type.tensor_type.elem_type = TensorProto.FLOAT16
    del g.value_info[:]
    onnx.checker.check_model(proto)
    with torch.no_grad():
        y = copy.deepcopy(model).double()(x.double())
    write(outdir, "fp16_cnn", proto, x.numpy().astype(np.float16), y.numpy().astype(np.float16))


# ---- the dynamically quantised MLP ----------------------------------------------------------------
# ONNX Runtime's quantize_dynamic (weight_type QInt8) turns MatMul(x, W) + b into
#   x_q, x_s, x_zp = DynamicQuantizeLinear(x)                  (uint8, per tensor, from x's range)
#   acc = MatMulInteger(x_q, W_q, x_zp, W_zp)                  (int32; W int8 symmetric, zero point 0)
#   y = Add(Mul(Cast(acc, FLOAT), Mul(x_s, W_s)), b)
# The reference follows the specification operator by operator in float32 (numpy), the integer part exactly.

def dql_ref(x):
    """DynamicQuantizeLinear: scale = (max(0, max x) - min(0, min x)) / 255, zp = saturate(round(-min / scale)),
    y = saturate(round(x / scale) + zp), rounding half to even."""
    lo, hi = np.float32(min(0.0, float(x.min()))), np.float32(max(0.0, float(x.max())))
    scale = np.float32((hi - lo) / np.float32(255))
    zp = np.uint8(np.clip(np.rint(np.float32(0) - lo / scale), 0, 255))
    q = np.clip(np.rint(x / scale) + np.float32(zp), 0, 255).astype(np.uint8)
    return q, scale, zp


def export_dynq(outdir):
    rng = np.random.default_rng(SEED)
    dims = [(64, 128), (128, 10)]
    x = rng.standard_normal((4, 64)).astype(np.float32)
    inits, nodes, ref = [], [], x
    prev = "input"
    for i, (k, n) in enumerate(dims):
        w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
        b = (rng.standard_normal(n) * 0.1).astype(np.float32)
        w_s = np.float32(np.abs(w).max() / 127)
        w_q = np.clip(np.rint(w / w_s), -127, 127).astype(np.int8)
        inits += [numpy_helper.from_array(w_q, f"w{i}_q"), numpy_helper.from_array(np.array(w_s), f"w{i}_s"),
                  numpy_helper.from_array(np.array(0, np.int8), f"w{i}_zp"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [helper.make_node("DynamicQuantizeLinear", [prev], [f"x{i}_q", f"x{i}_s", f"x{i}_zp"]),
                  helper.make_node("MatMulInteger", [f"x{i}_q", f"w{i}_q", f"x{i}_zp", f"w{i}_zp"], [f"acc{i}"]),
                  helper.make_node("Cast", [f"acc{i}"], [f"accf{i}"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [f"x{i}_s", f"w{i}_s"], [f"s{i}"]),
                  helper.make_node("Mul", [f"accf{i}", f"s{i}"], [f"m{i}"]),
                  helper.make_node("Add", [f"m{i}", f"b{i}"], [f"h{i}" if i + 1 < len(dims) else "output"])]
        q, s, zp = dql_ref(ref)
        acc = (q.astype(np.int32) - np.int32(zp)) @ w_q.astype(np.int32)
        ref = acc.astype(np.float32) * np.float32(s * w_s) + b
        if i + 1 < len(dims):
            nodes.append(helper.make_node("Relu", [f"h{i}"], [f"r{i}"]))
            prev = f"r{i}"
            ref = np.maximum(ref, np.float32(0))
    graph = helper.make_graph(nodes, "mlp_dynamic_quant",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [4, 64])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [4, 10])], inits)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tnpu model-zoo")
    onnx.checker.check_model(proto)
    write(outdir, "mlp_dynamic_quant", proto, x, ref.astype(np.float32))


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    names = sys.argv[2:] or MODELS
    for n in names:
        if n not in MODELS:
            print(f"families.py: unknown model '{n}'", file=sys.stderr)
            return 2
    for n in names:
        if n == "fp16_cnn":
            export_fp16(sys.argv[1])
        elif n == "mlp_dynamic_quant":
            export_dynq(sys.argv[1])
        else:
            export_float(n, sys.argv[1])
        print(f"exported {n}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
