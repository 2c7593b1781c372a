#!/usr/bin/env python3
"""The same training step as bench/train_step_bench.cc, in Python PyTorch.

Same models (layer for layer), same Fashion-MNIST batches (normalised with
the training subset's mean/std), Adam lr 1e-3, zero_grad/forward/loss/
backward/step/loss.item().

    bench/py_train_step.py MODEL SECONDS THREADS    (MODEL: mlp_b64 | demo_cnn_b128)

Prints "bench: step_us=<mean>" (bench/interleave.py reads it).
"""
import gzip
import json
import os
import struct
import sys
import time

import torch
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
LABELS = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz"


def read_idx(n):
    with gzip.open(DATA, "rb") as f:
        _, count, h, w = struct.unpack(">IIII", f.read(16))
        x = torch.frombuffer(bytearray(f.read(n * h * w)), dtype=torch.uint8)
    with gzip.open(LABELS, "rb") as f:
        f.read(8)
        y = torch.frombuffer(bytearray(f.read(n)), dtype=torch.uint8)
    return x.view(n, 1, h, w), y.long()


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256),
                         nn.ReLU(), nn.Linear(256, 10))


def demo_cnn():
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def bench(name, make, batch, seconds):
    torch.manual_seed(1)
    n = batch * 64
    x8, y = read_idx(n)
    x = x8.double() / 255.0
    # The C++ side normalises with the *training subset* statistics.
    mean, std = x.mean().item(), x.std().item()
    x = ((x - mean) / std).float()
    batches = [(x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch]) for i in range(64)]
    model = make()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.functional.cross_entropy

    def step(i):
        bx, by = batches[i % 64]
        opt.zero_grad()
        loss = loss_fn(model(bx), by)
        loss.backward()
        opt.step()
        return loss.item()

    for i in range(20):  # warm-up
        step(i)
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step(steps)
        steps += 1
    elapsed = time.perf_counter() - start
    print(f"bench: step_us={elapsed / steps * 1e6:.2f} steps={steps} "
          f"threads={torch.get_num_threads()}")


if __name__ == "__main__":
    name = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
    torch.set_num_threads(int(sys.argv[3]) if len(sys.argv) > 3 else os.cpu_count())
    models = {"mlp_b64": (mlp, 64), "demo_cnn_b128": (demo_cnn, 128)}
    bench(name, models[name][0], models[name][1], seconds)
