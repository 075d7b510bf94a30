#!/usr/bin/python3
"""Train the `make demo` model: a small CNN on Fashion-MNIST, exported to ONNX (issue #10).

  make train-model            (installs python3-torch/python3-onnx through tools/setup-deps --train)
  models/fashion-mnist/train.py [--epochs N] [--out PATH]

Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist/*.gz). Inputs are pixels / 255
({N, 1, 28, 28} float), outputs are 10 logits.  Conv+BatchNorm+ReLU+MaxPool twice, then Flatten and
Gemm; exported with the BatchNormalization nodes kept (TrainingMode.PRESERVE on an eval() model) so
the importer's folding is exercised.  Fixed seed, 2 threads: a few minutes on 2 cores.
"""
import argparse
import gzip
import os
import time

import numpy as np
import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))


def idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2))
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        return self.fc(torch.flatten(self.features(x), 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(HERE, "fashion-mnist-cnn.onnx"))
    args = ap.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_num_threads(2)
    xtr = torch.from_numpy(idx("train-images-idx3-ubyte.gz").astype(np.float32) / 255.0).unsqueeze(1)
    ytr = torch.from_numpy(idx("train-labels-idx1-ubyte.gz").astype(np.int64))
    xte = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz").astype(np.float32) / 255.0).unsqueeze(1)
    yte = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz").astype(np.int64))
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    loss_fn = nn.CrossEntropyLoss()
    for ep in range(args.epochs):
        t0 = time.time()
        net.train()
        perm = torch.randperm(len(xtr))
        for i in range(0, len(xtr), 128):
            b = perm[i:i + 128]
            opt.zero_grad()
            loss = loss_fn(net(xtr[b]), ytr[b])
            loss.backward()
            opt.step()
        net.eval()
        with torch.no_grad():
            acc = (net(xte).argmax(1) == yte).float().mean().item()
        print(f"epoch {ep + 1}: loss {loss.item():.3f}, test accuracy {100 * acc:.2f}% ({time.time() - t0:.0f} s)")
    net.eval()
    torch.onnx.export(net, torch.zeros(1, 1, 28, 28), args.out, opset_version=13,
                      input_names=["image"], output_names=["logits"],
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
                      training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes); torch test accuracy {100 * acc:.2f}%")


if __name__ == "__main__":
    main()
