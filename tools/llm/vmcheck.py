"""The VM half of tools/llm/check (--vm-only, and make llm-check after the sim run): the same prefill and
teacher-forced decode steps, run by `accel-run` on /dev/accel/accel0 in the VM (tools/accel-vm run: the
guest has no PyTorch), each step's inputs and PyTorch's float64 outputs (rounded to float32) staged as
TensorProto files and judged by `accel-run --expect` with the model-output tolerance (atol 1e-6, rtol
1e-4 of the output's scale), logits and every present.  Top-1 agreement is not measured in the guest;
a step whose logits are within the tolerance cannot change an arg-max except at a near-tie.
"""
import os
import re
import subprocess
import tempfile
import time

import numpy as np
import torch
from onnx import numpy_helper

import export
import models

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))


def stage_model(d, arch, scheme, args):
    """Write model.onnx and, per step, in_K.pb / out_K.pb under d; the step count."""
    path = export.cached(arch, "test", scheme, args.seed)
    os.makedirs(d)
    try:
        os.link(path, os.path.join(d, "model.onnx"))  # the cache and /tmp usually share a file system
    except OSError:
        import shutil
        shutil.copy(path, os.path.join(d, "model.onnx"))
    ref = export.dequantised_model(models.build(arch, "test", args.seed), scheme).double()
    ins, outs = models.io_names(ref.c["layers"])
    rng = np.random.default_rng(args.seed + 1)
    tokens = [int(x) for x in rng.integers(0, ref.c["vocab"], args.prompt + args.steps)]
    past = [p.double() for p in ref.empty_past()]
    steps = [tokens[:args.prompt]] + [[x] for x in tokens[args.prompt:]]
    n = 0
    for i, ids in enumerate(steps):
        t = len(ids)
        feed = [np.array([ids], np.int64), np.ones((1, n + t), np.int64), np.arange(n, n + t, dtype=np.int64)[None]]
        feed += [p.numpy().astype(np.float32) for p in past]
        with torch.no_grad():
            res = ref(torch.tensor([ids]), torch.ones(1, n + t, dtype=torch.int64),
                      torch.arange(n, n + t)[None, :], *past)
        for k, (name, a) in enumerate(zip(ins, feed)):
            with open(os.path.join(d, f"s{i}_in{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(np.ascontiguousarray(a), name).SerializeToString())
        for k, (name, a) in enumerate(zip(outs, res)):
            with open(os.path.join(d, f"s{i}_out{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a.numpy().astype(np.float32), name).SerializeToString())
        past, n = list(res[1:]), n + t
    return len(steps), len(ins), len(outs)


def run_vm(arch_list, schemes, args):
    """[(ok, line)] for every model in the VM."""
    t0 = time.time()
    names, lines, results = [], ["#!/bin/sh"], []
    with tempfile.TemporaryDirectory() as stage:
        for arch in arch_list:
            for scheme in schemes:
                name = f"{arch}-{scheme}"
                n_steps, n_in, n_out = stage_model(os.path.join(stage, "llm", name), arch, scheme, args)
                names.append((arch, scheme, name, n_steps))
                for i in range(n_steps):
                    a = " ".join(f"--input /llm/{name}/s{i}_in{k}.pb" for k in range(n_in))
                    e = " ".join(f"--expect /llm/{name}/s{i}_out{k}.pb" for k in range(n_out))
                    lines.append(f"accel-run /llm/{name}/model.onnx {a} {e} --device /dev/accel/accel0 "
                                 f"> /tmp/o 2>&1; rc=$?; echo \"===STEP {name} {i} $rc\"; "
                                 f"[ $rc -eq 0 ] || tail -n 4 /tmp/o")
        with open(os.path.join(stage, "llm", "run.sh"), "w") as f:
            f.write("\n".join(lines) + "\n")
        cmd = [os.path.join(TOP, "tools", "accel-vm"), "run", "--timeout", os.environ.get("VM_TIMEOUT", "900"),
               "--add", os.path.join(stage, "llm") + ":/llm", "--", "sh", "/llm/run.sh"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                           env=dict(os.environ, VM_MEM=os.environ.get("VM_MEM", "2048")))
    out = p.stdout.replace("\r", "")
    for arch, scheme, name, n_steps in names:
        rcs = {int(m.group(1)): int(m.group(2)) for m in re.finditer(rf"^===STEP {re.escape(name)} (\d+) (\d+)$",
                                                                      out, re.M)}
        bad = [i for i in range(n_steps) if rcs.get(i) != 0]
        ok = not bad
        if ok:
            detail = f"prefill {args.prompt} + {args.steps} decode steps, logits and presents within tolerance"
        elif len(rcs) < n_steps:
            detail = f"ran {len(rcs)} of {n_steps} steps (accel-vm exit {p.returncode}): {out.strip()[-300:]}"
        else:
            m = re.search(rf"^===STEP {re.escape(name)} {bad[0]} \d+$\n((?:(?!===).*\n){{0,4}})", out, re.M)
            detail = f"steps {bad} failed: " + (m.group(1).strip().replace("\n", " | ") if m else "")
        results.append((ok, f"{'ok  ' if ok else 'FAIL'} vm {arch}/{scheme}: {detail}"))
    results.append((None, f"llm-check: vm, {time.time() - t0:.1f} s"))
    return results
