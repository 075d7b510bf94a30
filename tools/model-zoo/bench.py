"""bench.py — `tools/bench-models --zoo`: speed of every CNN of the model zoo, not two (issue #30).

For each CNN of tools/model-zoo/export.py's MODELS (the same constructors, seeded weights and randomised
BatchNorm; the transformers and the QDQ models are left out: their figures are elsewhere), exported at
SxS for every S of --sizes (224 by default; cached under $TNPU_CACHE/bench-models/zoo-<hash>/):
  * `accel-bench model --json` on sim: device cycles, useful PE utilisation = the graph's Conv/Gemm/MatMul
    MACs (ONNX shape inference) / (cycles × peak MACs per cycle), host nodes, verified against the CPU
    reference executor; only at the first size, which the targets name;
  * the sim's wall time against PyTorch on one thread, side by side: ROUNDS rounds of `accel-bench model
    --repeat N` then N PyTorch inferences; the ratio is the median of the rounds' ratios;
  * at every size, the host nodes of the compiled plan (`accel-run --info`): the sweep must add none.
Targets (issue #30): useful PE utilisation >= 0.5 (>= 0.3 under 100 M MACs), sim / PyTorch <= 3.
"""
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
NOT_CNN = ("vit", "transformer_encoder")


def log(msg):
    print("[bench-models zoo] " + msg, file=sys.stderr, flush=True)


def zoo():
    sys.path.insert(0, HERE)
    import export as z
    return z


def cnns(z):
    return [n for n in z.MODELS if n not in NOT_CNN and n not in z.QDQ_MODELS]


def cache_dir():
    h = hashlib.sha256()
    for f in ("bench.py", "export.py"):
        with open(os.path.join(HERE, f), "rb") as fh:
            h.update(fh.read())
    root = os.environ.get("TNPU_CACHE", os.path.expanduser("~/.cache/tnpu"))
    return os.path.join(root, "bench-models", "zoo-" + h.hexdigest()[:16])


def build_model(z, name):
    import torch
    torch.manual_seed(z.SEED)
    model = z.MODELS[name][0]()
    z.randomise_bn(model)
    return model.eval()


def export(z, cache, name, size):
    """name at 1x3xSxS as ONNX (or None with the reason when the architecture does not take that size)."""
    path = os.path.join(cache, "%s-%d.onnx" % (name, size))
    if os.path.exists(path):
        return path, None
    import onnx
    import torch
    os.makedirs(cache, exist_ok=True)
    model = build_model(z, name)
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(z.SEED + 2))
    try:
        with torch.no_grad():
            model(x)
        proto = z.export_float(model, x, z.MODELS[name][2])
    except Exception as e:  # e.g. vgg11_small's classifier is sized for 32x32
        return None, "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:120])
    onnx.save(proto, path + ".tmp")
    os.replace(path + ".tmp", path)
    return path, None


def graph_macs(model, size):
    """Multiply-accumulates of the network's convolutions and linear layers at 1x3xSxS, counted by
    forward hooks on the PyTorch model (the same figure as tools/bench-models' graph_macs() on the
    exported graph, without relying on ONNX shape inference, which loses shapes after ShuffleNet's
    channel shuffle)."""
    import torch
    total = [0]

    def conv(mod, inp, out):
        total[0] += out.numel() * (mod.in_channels // mod.groups) * mod.kernel_size[0] * mod.kernel_size[1]

    def linear(mod, inp, out):
        total[0] += out.numel() * mod.in_features

    hooks = [m.register_forward_hook(conv) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    hooks += [m.register_forward_hook(linear) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    with torch.no_grad():
        model(torch.zeros(1, 3, size, size))
    for h in hooks:
        h.remove()
    return total[0]


def accel_bench(build, path, repeat):
    exe = os.path.join(build, "tools", "accel-bench")
    r = subprocess.run([exe, "model", path, "--json", "--repeat", str(repeat)], capture_output=True, text=True)
    if r.returncode not in (0, 1) or not r.stdout.strip():
        return None, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    return json.loads(r.stdout.strip().splitlines()[-1]), None


def host_nodes(build, path):
    exe = os.path.join(build, "tools", "accel-run", "accel-run")
    r = subprocess.run([exe, path, "--info"], capture_output=True, text=True)
    m = re.search(r"^placement: (\d+) on the device, (\d+) on the host", r.stdout, re.M)
    if r.returncode or not m:
        return None
    return int(m.group(2))


def torch_ms(model, size, repeat):
    import torch
    torch.set_num_threads(1)
    x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(0))
    times = []
    with torch.no_grad():
        model(x)  # warm-up
        for _ in range(repeat):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def run(build, sizes, repeat, rounds, only, emit):
    """Measures every model; emit(dict) gets one record per model and size.  Returns the records."""
    z = zoo()
    cache = cache_dir()
    names = [n for n in cnns(z) if not only or n in only]
    unknown = [n for n in (only or []) if n not in cnns(z)]
    if unknown:
        sys.exit("bench-models --zoo: unknown zoo CNN(s) %s; have %s" % (", ".join(unknown), ", ".join(cnns(z))))
    out = []
    for name in names:
        model = None
        for k, size in enumerate(sizes):
            path, why = export(z, cache, name, size)
            rec = {"bench": "zoo", "model": name, "size": size}
            if not path:
                rec["skipped"] = why
                log("%s %d: skipped (%s)" % (name, size, why))
                emit(rec)
                out.append(rec)
                continue
            rec["host_nodes"] = host_nodes(build, path)
            if k == 0:
                model = model or build_model(z, name)
                macs = graph_macs(model, size)
                ratios, sims, torches, r = [], [], [], None
                for _ in range(rounds):
                    r, err = accel_bench(build, path, repeat)
                    if not r:
                        rec["error"] = err
                        break
                    t = torch_ms(model, size, repeat)
                    sims.append(r["wall_ms"])
                    torches.append(t)
                    ratios.append(r["wall_ms"] / t)
                if r:
                    peak = r["peak_macs_per_cycle"]
                    util = macs / (r["device_cycles"] * peak) if r["device_cycles"] else 0.0
                    target = 0.5 if macs >= 100e6 else 0.3
                    rec.update(graph_macs=macs, device_cycles=r["device_cycles"], device_jobs=r["device_jobs"],
                               useful_pe_utilisation=round(util, 4), util_target=target,
                               util_met=bool(r["verified"] and util >= target), verified=r["verified"],
                               sim_ms=round(statistics.median(sims), 2),
                               torch_ms=round(statistics.median(torches), 2),
                               sim_over_torch=round(statistics.median(ratios), 3), rounds=rounds,
                               ratio_met=statistics.median(ratios) <= 3.0)
            log("%s %d: %s" % (name, size, json.dumps(rec)))
            emit(rec)
            out.append(rec)
    return out


def table(recs, sizes):
    rows = [("model", "MMACs", "cycles", "useful util", "target", "sim ms", "torch ms", "sim/torch",
             "host nodes " + "/".join(str(s) for s in sizes))]
    by = {}
    for r in recs:
        by.setdefault(r["model"], {})[r["size"]] = r
    for name, d in by.items():
        first = d.get(sizes[0], {})
        hn = "/".join("-" if d.get(s, {}).get("host_nodes") is None else str(d[s]["host_nodes"]) for s in sizes)
        if "useful_pe_utilisation" in first:
            rows.append((name, "%.0f" % (first["graph_macs"] / 1e6), str(first["device_cycles"]),
                         "%.3f%s" % (first["useful_pe_utilisation"], "" if first["util_met"] else " NO"),
                         ">= %.1f" % first["util_target"], "%.1f" % first["sim_ms"], "%.1f" % first["torch_ms"],
                         "%.2f%s" % (first["sim_over_torch"], "" if first["ratio_met"] else " NO"), hn))
        else:
            why = first.get("skipped") or first.get("error") or "-"
            rows.append((name, "-", "-", why if len(why) <= 40 else why[:37] + "...", "", "", "", "", hn))
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w[i]) for i, c in enumerate(r)).rstrip())
    print("(NO: target missed; host nodes '-': the architecture does not export at that size, see --json)")
