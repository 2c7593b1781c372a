#!/usr/bin/env python3
"""What trainscope's Python package costs a PyTorch training loop: the demo
CNN (bench/py_train_step.py's, batch 128, Adam) for a fixed number of steps,
bare or watched.

    PYTHONPATH=build/python bench/py_watch.py MODE STEPS THREADS STORE

MODE: bare | metrics_fp (run.log every step, fingerprints every 10th) |
profile10 (+ the per-layer profile every 10th step) | economy10 / standard10
(+ probes, that preset, every 10th step) | torch_profiler10 (torch.profiler
on every 10th step, beside them). Prints "bench: step_us=<mean> ..." for
bench/interleave.py; the loop alone is timed (a run's records are written
when it ends, after it, as in C++).
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_train_step import demo_cnn, read_idx  # noqa: E402

import trainscope  # noqa: E402

WATCH = {
    "metrics_fp": {"fingerprint_every": 10},
    "profile10": {"fingerprint_every": 10, "profile_every": 10},
    "economy10": {"fingerprint_every": 10, "probes": "economy", "probes_every": 10},
    "standard10": {"fingerprint_every": 10, "probes": "standard", "probes_every": 10},
}


def batches(batch=128):
    x8, y = read_idx(batch * 16)
    x = x8.float() / 255.0
    x = (x - x.mean()) / x.std()
    return [(x[i * batch:(i + 1) * batch], y[i * batch:(i + 1) * batch]) for i in range(16)]


def loop(model, opt, data, steps, run=None, prof=None):
    for i in range(steps):
        bx, by = data[i % len(data)]
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(bx), by)
        loss.backward()
        opt.step()
        if run is not None:
            run.log({"train/loss": loss}, step=i + 1)
        if prof is not None:
            prof.step()


def main():
    mode, steps, threads, store = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    data, model = batches(), demo_cnn()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    start = time.perf_counter()
    if mode == "bare":
        loop(model, opt, data, steps)
    elif mode == "torch_profiler10":
        schedule = torch.profiler.schedule(wait=9, warmup=0, active=1)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    schedule=schedule) as prof:
            loop(model, opt, data, steps, prof=prof)
    else:
        with trainscope.start_run(name=mode, store="sqlite:" + store,
                                  record_environment=False) as run:
            run.watch(model, opt, monitor_interval=0, **WATCH[mode])
            loop(model, opt, data, steps, run=run)
            elapsed = time.perf_counter() - start  # before the run's records are written
    if mode in ("bare", "torch_profiler10"):
        elapsed = time.perf_counter() - start
    print(f"bench: step_us={elapsed / steps * 1e6:.1f} threads={threads}")


if __name__ == "__main__":
    main()
