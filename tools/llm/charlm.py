#!/usr/bin/python3
"""tools/llm/charlm.py — the text demo's model: a byte-level GPT-2 trained here on Debian's fortunes.

  charlm.py --cached                              train (once) and export; print the ONNX path
  charlm.py --generate TEXT --new N [--ids]       PyTorch's greedy continuation of TEXT (text, or the ids)

The corpus is fortunes-min's /usr/share/games/fortunes/{fortunes,literature,riddles} (~100 KB of text),
read as bytes: vocabulary 256, so `accel-generate --prompt` takes text.  The model is tools/llm/models.py's
GPT-2 decoder (3 layers, d 64, 4 heads, context 128), trained for a fixed number of seeded Adam steps on
random 64-byte windows (one thread: ~45 s of CPU, 2.5 min wall on a loaded 2-core machine), then exported as
tools/llm/export.py exports the others.  --cached keeps the weights and the export under $TNPU_CACHE/llm/charlm-<key>/ (key: this script,
models.py, export.py, the corpus and torch's version); make demo uses it (Documentation/llm.md, "Text demo").
"""
import argparse
import hashlib
import json
import os
import sys
import warnings

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import models  # noqa: E402
import export  # noqa: E402

CORPUS = [f"/usr/share/games/fortunes/{n}" for n in ("fortunes", "literature", "riddles")]
CONFIG = dict(layers=3, d=64, heads=4, kv_heads=4, ffn=256, vocab=256, ctx=128)
STEPS, BATCH, WINDOW, LR, SEED = 400, 32, 64, 3e-3, 29


def corpus():
    missing = [p for p in CORPUS if not os.path.exists(p)]
    if missing:
        sys.exit(f"charlm.py: {missing[0]} not found: install fortunes-min (tools/setup-deps)")
    return b"".join(open(p, "rb").read() for p in CORPUS)


def cache_dir(data):
    h = hashlib.sha256()
    for f in ("charlm.py", "models.py", "export.py"):
        with open(os.path.join(HERE, f), "rb") as fh:
            h.update(fh.read())
    h.update(data)
    h.update(torch.__version__.encode())
    root = os.environ.get("TNPU_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "tnpu"))
    return os.path.join(root, "llm", "charlm-" + h.hexdigest()[:16])


def new_model():
    torch.manual_seed(SEED)
    m = models.Decoder("gpt2", dict(CONFIG))
    with torch.no_grad():  # GPT-2's initialisation, as models.build
        for name, p in m.named_parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
            elif name.endswith("bias"):
                p.zero_()
    return m


def train(data):
    torch.set_num_threads(1)  # more threads spin against each other on a shared machine (5x slower here)
    m = new_model().train()
    ids = torch.tensor(list(data), dtype=torch.int64)
    g = torch.Generator().manual_seed(SEED)
    opt = torch.optim.Adam(m.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, STEPS)
    mask = torch.ones(BATCH, WINDOW, dtype=torch.int64)
    pos = torch.arange(WINDOW)[None, :].expand(BATCH, WINDOW)
    past = m.empty_past(BATCH)
    for step in range(STEPS):
        start = torch.randint(0, len(ids) - WINDOW - 1, (BATCH,), generator=g)
        x = torch.stack([ids[s:s + WINDOW + 1] for s in start.tolist()])
        logits = m(x[:, :-1], mask, pos, *past)[0]
        loss = F.cross_entropy(logits.reshape(-1, 256), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 250 == 0 or step == STEPS - 1:
            print(f"charlm.py: step {step}/{STEPS} loss {loss.item():.3f}", file=sys.stderr)
    return m.eval()


def cached():
    data = corpus()
    d = cache_dir(data)
    onnx_path, pt = os.path.join(d, "model.onnx"), os.path.join(d, "model.pt")
    if not os.path.exists(onnx_path):
        os.makedirs(d, exist_ok=True)
        print(f"charlm.py: training the demo model on {len(data)} bytes of fortunes into {d}", file=sys.stderr)
        m = train(data)
        torch.save(m.state_dict(), pt)
        with warnings.catch_warnings():  # the tracer's notes on the architecture's constants (export.py)
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            export.export_fp32(m, onnx_path + ".part")
        os.replace(onnx_path + ".part", onnx_path)
    return onnx_path, pt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cached", action="store_true")
    ap.add_argument("--generate")
    ap.add_argument("--new", type=int, default=80)
    ap.add_argument("--ids", action="store_true")
    a = ap.parse_args()
    onnx_path, pt = cached()
    if a.generate is None:
        print(onnx_path)
        return
    m = new_model()
    m.load_state_dict(torch.load(pt))
    out = models.generate_greedy(m.eval(), list(a.generate.encode()), a.new)
    if a.ids:
        print(json.dumps(out))
    else:
        sys.stdout.buffer.write(bytes(out) + b"\n")


if __name__ == "__main__":
    main()
