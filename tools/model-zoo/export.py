#!/usr/bin/python3
"""export.py — export the model zoo of `make model-zoo` (tools/model-zoo/run; Documentation/onnx.md).

  export.py OUTDIR [MODEL ...]

For each model (all of MODELS by default) writes OUTDIR/MODEL/model.onnx, input_0.pb (a seeded random
input) and output_0.pb (the reference output), all as ONNX TensorProtos.  Uses Debian's python3-torch
1.13, python3-torchvision 0.14 and python3-onnx 1.12 only.

Every model: torch.manual_seed(SEED) before it is built (seeded random weights), BatchNorm statistics and
affine parameters randomised (non-trivial running_mean/var, so folding is tested), eval() mode,
torch.onnx.export with do_constant_folding and TrainingMode.EVAL (torch folds BatchNorm into the Conv
where it can; what is left stays a BatchNormalization node).  The reference output is PyTorch's, except
for the QDQ model, whose reference is computed by ref_onnx() below, exactly as ONNX defines
QuantizeLinear/DequantizeLinear (see qdq_cnn).

This file's hash keys the cache (tools/model-zoo/run): edit it and everything is exported again.
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
import torch.nn.functional as F
import torchvision

SEED = 2026
torch.set_num_threads(2)


def randomise_bn(model):
    """Non-trivial BatchNorm (and LayerNorm) parameters: folding must use all four tensors."""
    g = torch.Generator().manual_seed(SEED + 1)
    for mod in model.modules():
        if isinstance(mod, (nn.BatchNorm1d, nn.BatchNorm2d)):
            c = mod.num_features
            mod.running_mean.copy_(torch.randn(c, generator=g) * 0.2)
            mod.running_var.copy_(torch.rand(c, generator=g) + 0.5)
            if mod.affine:
                mod.weight.data.copy_(torch.rand(c, generator=g) + 0.5)
                mod.bias.data.copy_(torch.randn(c, generator=g) * 0.2)
        elif isinstance(mod, nn.LayerNorm) and mod.elementwise_affine:
            shape = mod.weight.shape
            mod.weight.data.copy_(torch.rand(shape, generator=g) + 0.5)
            mod.bias.data.copy_(torch.randn(shape, generator=g) * 0.2)


def tv(name, **kw):
    return lambda: getattr(torchvision.models, name)(weights=None, **kw)


def vgg11_small():
    """VGG-11's eight convolutions as torchvision builds them, at 32x32 (features end at 1x1) with a
    512-256-256-10 classifier instead of 25088-4096-4096-1000 (500 MB of weights)."""
    m = torchvision.models.vgg11(weights=None)
    m.avgpool = nn.Identity()
    m.classifier = nn.Sequential(nn.Linear(512, 256), nn.ReLU(True), nn.Dropout(), nn.Linear(256, 256),
                                 nn.ReLU(True), nn.Dropout(), nn.Linear(256, 10))
    return m


def alexnet_small():
    """AlexNet's features at 224x224 (they end at 6x6, so AdaptiveAvgPool2d(6) is an identity) with a
    9216-256-256-10 classifier instead of 9216-4096-4096-1000 (230 MB of weights)."""
    m = torchvision.models.alexnet(weights=None)
    m.classifier = nn.Sequential(nn.Dropout(), nn.Linear(9216, 256), nn.ReLU(True), nn.Dropout(),
                                 nn.Linear(256, 256), nn.ReLU(True), nn.Linear(256, 10))
    return m


def wide_resnet_small():
    """Wide-ResNet as torchvision builds wide_resnet50_2 (Bottleneck blocks with width_per_group=128: every
    block's 3x3 convolution twice as wide as ResNet-50's) with one block per stage instead of [3, 4, 6, 3]:
    86 MB of weights instead of 270 MB, so it fits the test VM's 1 GiB next to its own copy."""
    from torchvision.models.resnet import Bottleneck, ResNet
    return ResNet(Bottleneck, [1, 1, 1, 1], width_per_group=128)


def vit_tiny():
    """torchvision's VisionTransformer at 32x32 (4x4 patches of 8x8, 2 layers, hidden 32, 2 heads, MLP
    64).  torchvision zero-initialises the head (fine-tuning practice): a seeded random head instead,
    or every output would be 0."""
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                          num_classes=10)
    nn.init.normal_(m.heads.head.weight, std=0.2)
    nn.init.normal_(m.heads.head.bias, std=0.2)
    return m


class Encoder(nn.Module):
    """torch.nn.TransformerEncoder (2 post-norm layers, d_model 32, 4 heads, ReLU FFN 64), batch first."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.1,
                                           batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)

    def forward(self, x):
        return self.enc(x)


class SmallResNet(nn.Module):
    """The float model of the QDQ CNN: a stem, two residual blocks (one strided with a 1x1
    projection), max and global average pooling and a classifier."""

    def __init__(self):
        super().__init__()

        def cbr(i, o, s=1, k=3, relu=True):
            layers = [nn.Conv2d(i, o, k, s, k // 2, bias=False), nn.BatchNorm2d(o)]
            return nn.Sequential(*layers, *([nn.ReLU()] if relu else []))
        self.stem = cbr(3, 16, 2)
        self.pool = nn.MaxPool2d(2)
        self.b1 = nn.Sequential(cbr(16, 16), cbr(16, 16, relu=False))
        self.b2 = nn.Sequential(cbr(16, 32, 2), cbr(32, 32, relu=False))
        self.proj = cbr(16, 32, 2, k=1, relu=False)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(self.stem(x))
        x = F.relu(self.b1(x) + x)
        x = F.relu(self.b2(x) + self.proj(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


# name: (builder, input shape, opset).  Input sizes are the smallest the architecture handles without
# changing its graph (CI time); ViT and the encoder use opset 17 so LayerNorm exports as
# LayerNormalization (opset 13 decomposes it into ReduceMean/Sub/Pow/Sqrt/Div).
MODELS = {
    "resnet18": (tv("resnet18"), (1, 3, 64, 64), 13),
    "resnext50_32x4d": (tv("resnext50_32x4d"), (1, 3, 64, 64), 13),
    "wide_resnet": (wide_resnet_small, (1, 3, 64, 64), 13),
    "mobilenet_v2": (tv("mobilenet_v2"), (1, 3, 64, 64), 13),
    "mobilenet_v3_small": (tv("mobilenet_v3_small"), (1, 3, 64, 64), 13),
    "squeezenet1_1": (tv("squeezenet1_1"), (1, 3, 64, 64), 13),
    "shufflenet_v2_x0_5": (tv("shufflenet_v2_x0_5"), (1, 3, 64, 64), 13),
    "mnasnet0_5": (tv("mnasnet0_5"), (1, 3, 64, 64), 13),
    "googlenet": (tv("googlenet", aux_logits=False, init_weights=True), (1, 3, 64, 64), 13),
    # init_weights=False: PyTorch's default init; torchvision's (truncated normal, std 0.1 whatever the
    # fan-in) grows the logits to ~1e10 through 94 convolutions
    "inception_v3": (tv("inception_v3", aux_logits=False, init_weights=False), (1, 3, 75, 75), 13),
    "densenet121": (tv("densenet121"), (1, 3, 64, 64), 13),
    "vgg11": (vgg11_small, (1, 3, 32, 32), 13),
    "alexnet": (alexnet_small, (1, 3, 224, 224), 13),
    "efficientnet_b0": (tv("efficientnet_b0"), (1, 3, 64, 64), 13),
    "regnet_x_400mf": (tv("regnet_x_400mf"), (1, 3, 64, 64), 13),
    "convnext_tiny": (tv("convnext_tiny"), (1, 3, 64, 64), 13),
    "vit": (vit_tiny, (1, 3, 32, 32), 17),
    "transformer_encoder": (Encoder, (1, 8, 32), 17),
    "qdq_cnn": (SmallResNet, (1, 3, 32, 32), 13),
    # torchvision's ResNet-18 and MobileNetV2 quantised the same way (qdq_model below)
    "resnet18_qdq": (tv("resnet18"), (1, 3, 64, 64), 13),
    "mobilenet_v2_qdq": (tv("mobilenet_v2"), (1, 3, 64, 64), 13),
}
QDQ_MODELS = ("qdq_cnn", "resnet18_qdq", "mobilenet_v2_qdq")


def save_pb(path, arr, name):
    t = numpy_helper.from_array(np.ascontiguousarray(arr), name)
    with open(path, "wb") as f:
        f.write(t.SerializeToString())


def export_float(model, x, opset):
    buf = io.BytesIO()
    torch.onnx.export(model, (x,), buf, opset_version=opset, input_names=["input"], output_names=["output"],
                      do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL)
    return onnx.load_from_string(buf.getvalue())


# ---- the QDQ model ------------------------------------------------------------------------------
# The float graph torch exports for SmallResNet (BatchNorm folded into the Conv weights) is quantised
# the way static post-training quantisation tools emit QDQ models: every activation that feeds a
# Conv, Gemm, Add, MaxPool or GlobalAveragePool (and the graph output) gets a QuantizeLinear ->
# DequantizeLinear pair, uint8 per-tensor with a min/max calibrated on CALIB random inputs; Conv/Gemm
# weights become int8 initializers, symmetric per output channel (zero point 0), through a
# DequantizeLinear with axis 0; biases int32 with scale x_scale * w_scale (per channel).  The graph's
# output is the final QuantizeLinear's uint8 tensor (so the comparison is in LSBs).
#
# The reference (ref_onnx) evaluates that QDQ graph node by node in float32 torch, exactly as ONNX
# defines each node: QuantizeLinear y = saturate(round_half_even(x / scale) + zp)
# with a true division (torch.fake_quantize_per_tensor_affine multiplies by 1/scale, which rounds
# differently at ties and near them: not used), DequantizeLinear (q - zp) * scale, and the float
# operators between them in float64 (DequantizeLinear's output is float64): ONNX fixes no summation
# order, and float32 sums flip roundings that then propagate — measured on resnet18_qdq, a float32
# evaluation differs from the float64 one by up to 2 LSB on 19 of the 1000 outputs (430 differ at
# all), while the device's exact int32 arithmetic matches the float64 one bit for bit.  The float
# graph (calibration, and the check against PyTorch) stays float32.

QOPS = ("Conv", "Gemm", "Add", "MaxPool", "GlobalAveragePool", "Flatten")


def ref_onnx(graph, feeds, quantise=True, record=None):
    """Evaluate the float or QDQ graph of a CNN: Conv, Gemm, Relu, Clip, Add, MaxPool,
    GlobalAveragePool, Flatten, Constant, QuantizeLinear, DequantizeLinear.  record: dict name -> list
    of tensors (calibration)."""
    env = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy()) for i in graph.initializer}
    env.update({k: torch.from_numpy(v) for k, v in feeds.items()})

    def attrs(n):
        return {a.name: helper.get_attribute_value(a) for a in n.attribute}
    for n in graph.node:
        a, x = attrs(n), [env[i] if i else None for i in n.input]
        if n.op_type == "Conv":
            p = a.get("pads", [0, 0, 0, 0])
            assert p[0] == p[2] and p[1] == p[3]
            y = F.conv2d(x[0], x[1], x[2] if len(x) > 2 else None, a.get("strides", [1, 1]), p[:2],
                         a.get("dilations", [1, 1]), a.get("group", 1))
        elif n.op_type == "Gemm":
            assert a.get("transB") == 1 and a.get("alpha", 1.0) == 1.0 and a.get("beta", 1.0) == 1.0
            y = x[0] @ x[1].T + x[2]
        elif n.op_type == "Relu":
            y = torch.relu(x[0])
        elif n.op_type == "Add":
            y = x[0] + x[1]
        elif n.op_type == "MaxPool":
            p = a.get("pads", [0] * 4)
            assert p[0] == p[2] and p[1] == p[3] and not a.get("ceil_mode", 0)
            y = F.max_pool2d(x[0], a["kernel_shape"], a["strides"], p[:2])
        elif n.op_type == "Clip":
            y = torch.clamp(x[0], x[1].to(x[0].dtype) if len(x) > 1 else None,
                            x[2].to(x[0].dtype) if len(x) > 2 else None)
        elif n.op_type == "Constant":
            y = torch.from_numpy(numpy_helper.to_array(a["value"]).copy())
        elif n.op_type == "GlobalAveragePool":
            y = x[0].mean(dim=(2, 3), keepdim=True)
        elif n.op_type == "Flatten":
            y = x[0].flatten(a.get("axis", 1))
        elif n.op_type == "QuantizeLinear":
            zp = x[2].to(torch.int32)
            lo, hi = (0, 255) if x[2].dtype == torch.uint8 else (-128, 127)
            q = torch.round(x[0].double() / x[1].double()).to(torch.int32) + zp   # torch.round: half to even
            y = q.clamp(lo, hi).to(x[2].dtype)
        elif n.op_type == "DequantizeLinear":
            ax = a.get("axis", 1)
            s, zp = x[1], x[2] if len(x) > 2 and x[2] is not None else torch.zeros_like(x[1], dtype=torch.int32)
            if s.dim() == 1 and s.numel() > 1:
                shape = [1] * x[0].dim()
                shape[ax] = -1
                s, zp = s.reshape(shape), zp.reshape(shape)
            y = (x[0].to(torch.int32) - zp.to(torch.int32)).to(torch.float64) * s.double()
        else:
            raise RuntimeError(f"ref_onnx: no {n.op_type}")
        env[n.output[0]] = y
        if record is not None:
            record.setdefault(n.output[0], []).append(y)
    return [env[o.name] for o in graph.output]


def qdq_model(float_model, calib):
    g = float_model.graph
    inits = {i.name: i for i in g.initializer}
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    record = {}
    for c in calib:
        record.setdefault(g.input[0].name, []).append(torch.from_numpy(c))
        ref_onnx(g, {g.input[0].name: c}, record=record)

    def act_qparams(name):
        v = torch.cat([t.flatten() for t in record[name]])
        lo, hi = min(float(v.min()), 0.0), max(float(v.max()), 0.0)
        scale = np.float32((hi - lo) / 255.0 or 1.0)
        zp = np.uint8(np.clip(round(-lo / float(scale)), 0, 255))
        return scale, zp

    new_nodes, new_inits, qdq_of, scales = [], [], {}, {}

    def qdq(name):
        if name not in qdq_of:
            s, zp = act_qparams(name)
            scales[name] = s
            sn, zn = name + "_scale", name + "_zp"
            new_inits.extend([numpy_helper.from_array(np.array(s, np.float32), sn),
                              numpy_helper.from_array(np.array(zp, np.uint8), zn)])
            q, d = name + "_q", name + "_dq"
            new_nodes.append(helper.make_node("QuantizeLinear", [name, sn, zn], [q], name=q))
            new_nodes.append(helper.make_node("DequantizeLinear", [q, sn, zn], [d], name=d))
            qdq_of[name] = d
        return qdq_of[name]

    for i in g.input:
        if i.name in consumers:
            qdq(i.name)
    for n in g.node:
        if n.op_type in QOPS:
            ins = list(n.input)
            for k, name in enumerate(ins):
                if name in inits:
                    continue
                ins[k] = qdq(name) if k == 0 or n.op_type == "Add" else name
            if n.op_type in ("Conv", "Gemm"):
                w = numpy_helper.to_array(inits[ins[1]]).astype(np.float32)
                amax = np.abs(w.reshape(w.shape[0], -1)).max(axis=1)
                ws = (np.where(amax > 0, amax, 1.0) / 127.0).astype(np.float32)
                wq = np.clip(np.round(w / ws.reshape(-1, *[1] * (w.ndim - 1))), -127, 127).astype(np.int8)
                wn = ins[1] + "_int8"
                new_inits.extend([numpy_helper.from_array(wq, wn),
                                  numpy_helper.from_array(ws, wn + "_scale"),
                                  numpy_helper.from_array(np.zeros_like(wq, shape=ws.shape), wn + "_zp")])
                new_nodes.append(helper.make_node("DequantizeLinear", [wn, wn + "_scale", wn + "_zp"], [wn + "_dq"],
                                                  name=wn + "_dq", axis=0))
                ins[1] = wn + "_dq"
                if len(ins) > 2 and ins[2] in inits:
                    b = numpy_helper.to_array(inits[ins[2]]).astype(np.float32)
                    bs = (scales[n.input[0]] * ws).astype(np.float32)
                    bq = np.round(b / bs).astype(np.int32)
                    bn = ins[2] + "_int32"
                    new_inits.extend([numpy_helper.from_array(bq, bn), numpy_helper.from_array(bs, bn + "_scale"),
                                      numpy_helper.from_array(np.zeros_like(bq), bn + "_zp")])
                    new_nodes.append(helper.make_node("DequantizeLinear", [bn, bn + "_scale", bn + "_zp"],
                                                      [bn + "_dq"], name=bn + "_dq", axis=0))
                    ins[2] = bn + "_dq"
            del n.input[:]
            n.input.extend(ins)
        new_nodes.append(n)
    # the output: quantised (uint8), compared in LSBs
    out = g.output[0].name
    s, zp = act_qparams(out)
    new_inits.extend([numpy_helper.from_array(np.array(s, np.float32), "output_scale"),
                      numpy_helper.from_array(np.array(zp, np.uint8), "output_zp")])
    for n in new_nodes:
        for k, o in enumerate(n.output):
            if o == out:
                n.output[k] = "output_float"
    new_nodes.append(helper.make_node("QuantizeLinear", ["output_float", "output_scale", "output_zp"], [out],
                                      name="output_q"))
    used = {i for n in new_nodes for i in n.input}
    keep = [i for i in g.initializer if i.name in used] + new_inits
    out_vi = helper.make_tensor_value_info(out, TensorProto.UINT8, [d.dim_value for d in
                                                                     g.output[0].type.tensor_type.shape.dim])
    graph = helper.make_graph(new_nodes, "qdq_model", list(g.input), [out_vi], keep)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tnpu model-zoo")
    m.ir_version = float_model.ir_version
    onnx.checker.check_model(m)
    return m


def export_one(name, outdir):
    build, shape, opset = MODELS[name]
    torch.manual_seed(SEED)
    model = build()
    randomise_bn(model)
    model.eval()
    g = torch.Generator().manual_seed(SEED + 2)
    x = torch.randn(shape, generator=g)
    with torch.no_grad():
        y = model(x)
    proto = export_float(model, x, opset)
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    if name in QDQ_MODELS:
        calib = [torch.randn(shape, generator=g).numpy() for _ in range(8)] + [x.numpy()]
        # the float graph torch exported must compute what the module does (checks ref_onnx itself)
        yf = ref_onnx(proto.graph, {"input": x.numpy()})[0]
        assert torch.allclose(yf, y, atol=1e-4, rtol=1e-4), "ref_onnx disagrees with PyTorch"
        proto = qdq_model(proto, calib)
        y = ref_onnx(proto.graph, {"input": x.numpy()})[0]
    else:
        # The reference of a float model is the same module evaluated in float64 (rounded once to float32
        # when saved): it is within ~1e-15 of exact on every host, so a verdict cannot depend on which
        # kernels PyTorch picked on this host; PyTorch's own float32 output is kept next to it for the
        # error budget (tools/model-zoo/run --errors; Documentation/onnx.md "Tolerances").
        save_pb(os.path.join(d, "torch_fp32.pb"), y.numpy(), "output")
        with torch.no_grad():
            y = copy.deepcopy(model).double()(x.double())
    onnx.save(proto, os.path.join(d, "model.onnx"))
    save_pb(os.path.join(d, "input_0.pb"), x.numpy(), "input")
    save_pb(os.path.join(d, "output_0.pb"), y.float().numpy() if name not in QDQ_MODELS else y.numpy(), "output")


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    names = sys.argv[2:] or list(MODELS)
    for n in names:
        if n not in MODELS:
            print(f"export.py: unknown model '{n}'", file=sys.stderr)
            return 2
    for n in names:
        export_one(n, sys.argv[1])
        print(f"exported {n}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
