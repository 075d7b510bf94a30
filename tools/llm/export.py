#!/usr/bin/python3
"""tools/llm/export.py — export a decoder LLM (tools/llm/models.py) to ONNX as decoder exporters write it.

  export.py --arch gpt2|llama [--size test|full] [--quant SCHEME] [--seed N] (--out FILE | --cached)

Inputs input_ids [batch, sequence], attention_mask [batch, total], position_ids [batch, sequence],
past_key_values.N.key/value [batch, kv_heads, past, head_dim]; outputs logits [batch, sequence, vocab],
present.N.key/value [batch, kv_heads, total, head_dim]; batch, sequence, past and total are symbolic.
SCHEME (tools/llm/quant.py): fp32, int8 (DequantizeLinear per output channel on every MatMul weight),
int4-b32, int4-b128, int4-b32-zp, int4-b128-zp (com.microsoft MatMulNBits, as ONNX Runtime's quantiser writes
it).  --cached writes under $TNPU_CACHE/llm/<key>/ (key: this script, models.py, quant.py and the arguments)
and prints the path; an existing export is reused.  `dequantised_model()` gives the PyTorch model computing
with exactly the graph's weights: the reference for the quantised exports.
"""
import argparse
import copy
import hashlib
import os
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402
import quant  # noqa: E402

OPSET = 14


def export_fp32(model, path):
    ins, outs = models.io_names(model.c["layers"])
    past = [torch.zeros(1, model.c["kv_heads"], 2, model.c["d"] // model.c["heads"]) for _ in ins[3:]]
    args = (torch.tensor([[1, 2, 3]]), torch.ones(1, 5, dtype=torch.int64), torch.tensor([[2, 3, 4]]), *past)
    dyn = {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "total"},
           "position_ids": {0: "batch", 1: "sequence"}, "logits": {0: "batch", 1: "sequence"}}
    for n in ins[3:]:
        dyn[n] = {0: "batch", 2: "past"}
    for n in outs[1:]:
        dyn[n] = {0: "batch", 2: "total"}
    # the tracer's warnings are about Python ints taken from shapes (head_dim, the past length): constants of
    # the architecture or values the dynamic axes carry, not errors of the export
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        torch.onnx.export(model, args, path, input_names=ins, output_names=outs, dynamic_axes=dyn,
                          opset_version=OPSET, do_constant_folding=True)


def weight_matmuls(g):
    """(node, initializer) for every MatMul whose B is a 2-D float initializer: the weights to quantise."""
    inits = {t.name: t for t in g.initializer}
    for node in g.node:
        if node.op_type == "MatMul" and node.input[1] in inits:
            t = inits[node.input[1]]
            if len(t.dims) == 2 and t.data_type == TensorProto.FLOAT:
                yield node, t


def quantise_graph(m, scheme):
    kind, block, zp = quant.parse(scheme)
    g = m.graph
    repl, dead = [], set()
    for node, t in list(weight_matmuls(g)):
        w_kn = numpy_helper.to_array(t)
        k, n = w_kn.shape
        w = np.ascontiguousarray(w_kn.T)  # [N, K]
        base = node.name or node.output[0]
        if kind == "int8":
            q, s, _ = quant.int8_per_channel(w)
            qn, sn, dn = base + ".weight_q", base + ".weight_scale", base + ".weight_dq"
            g.initializer.extend([numpy_helper.from_array(np.ascontiguousarray(q.T), qn),
                                  numpy_helper.from_array(s, sn)])
            repl.append((node, [helper.make_node("DequantizeLinear", [qn, sn], [dn], name=base + ".dq",
                                                 axis=1),
                                helper.make_node("MatMul", [node.input[0], dn], list(node.output),
                                                 name=node.name)]))
        else:
            packed, s, zpp, _ = quant.int4_blockwise(w, block, zp)
            bn, sn = base + ".qweight", base + ".scales"
            g.initializer.extend([numpy_helper.from_array(packed, bn), numpy_helper.from_array(s, sn)])
            inputs = [node.input[0], bn, sn]
            if zp:
                g.initializer.append(numpy_helper.from_array(zpp, base + ".zero_points"))
                inputs.append(base + ".zero_points")
            repl.append((node, [helper.make_node("MatMulNBits", inputs, list(node.output), name=node.name,
                                                 domain="com.microsoft", K=k, N=n, bits=4,
                                                 block_size=block, accuracy_level=0)]))
        dead.add(t.name)
    nodes = []
    for node in g.node:
        hit = [r for o, r in repl if o is node]
        nodes.extend(hit[0] if hit else [node])
    del g.node[:]
    g.node.extend(nodes)
    used = {i for nd in g.node for i in nd.input}
    keep = [t for t in g.initializer if t.name not in dead or t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    if kind == "int4":
        m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def dequantised_model(model, scheme):
    """A copy of `model` whose every quantised weight is the graph's dequantised one (fp32: the model)."""
    if scheme == "fp32":
        return model
    m = copy.deepcopy(model)
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, torch.nn.Linear):
                mod.weight.copy_(torch.from_numpy(quant.dequantised(mod.weight.numpy(), scheme)))
        if m.head is None:  # the tied head is a MatMul weight of its own in the graph; the embedding is not
            m.head = torch.nn.Linear(m.c["d"], m.c["vocab"], bias=False)
            m.head.weight.copy_(torch.from_numpy(quant.dequantised(m.embed.weight.numpy(), scheme)))
    return m.eval()


def export(arch, size, scheme, seed, path):
    quant.parse(scheme)
    model = models.build(arch, size, seed)
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "fp32.onnx")
        export_fp32(model, raw)
        m = onnx.load(raw)
    if scheme != "fp32":
        m = quantise_graph(m, scheme)
    m.producer_name = f"tnpu tools/llm/export.py {arch}/{size} {scheme} seed {seed}"
    tmp_path = path + ".part"
    onnx.save(m, tmp_path)
    os.replace(tmp_path, path)
    return path


def cache_key(args):
    h = hashlib.sha256()
    for f in ("export.py", "models.py", "quant.py"):
        with open(os.path.join(HERE, f), "rb") as fh:
            h.update(fh.read())
    h.update(f"{args.arch}/{args.size}/{args.quant}/{args.seed}/{torch.__version__}/{onnx.__version__}".encode())
    return h.hexdigest()[:16]


def cache_dir():
    return os.path.join(os.environ.get("TNPU_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "tnpu")), "llm")


def cached(arch, size="test", scheme="fp32", seed=0):
    """The path of the cached export of (arch, size, scheme, seed), exporting it first if needed."""
    args = argparse.Namespace(arch=arch, size=size, quant=scheme, seed=seed)
    d = os.path.join(cache_dir(), f"{arch}-{size}-{scheme}-s{seed}-{cache_key(args)}")
    path = os.path.join(d, "model.onnx")
    if not os.path.exists(path):
        os.makedirs(d, exist_ok=True)
        print(f"export.py: exporting {arch}/{size} {scheme} to {d}", file=sys.stderr)
        export(arch, size, scheme, seed, path)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", required=True, choices=["gpt2", "llama"])
    ap.add_argument("--size", default="test", choices=["test", "full"])
    ap.add_argument("--quant", default="fp32", choices=quant.SCHEMES)
    ap.add_argument("--seed", type=int, default=0)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--out")
    g.add_argument("--cached", action="store_true")
    args = ap.parse_args()
    if args.out:
        export(args.arch, args.size, args.quant, args.seed, args.out)
        print(args.out)
        return
    print(cached(args.arch, args.size, args.quant, args.seed))


if __name__ == "__main__":
    main()
