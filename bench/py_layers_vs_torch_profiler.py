#!/usr/bin/env python3
"""Per-layer forward and backward times of the demo CNN in Python, from
trainscope's profile and from torch.profiler, on interleaved steps of one
training (trainscope profiles steps 6, 8, 10, ...; torch.profiler the odd
steps between them), so that both see the same model, data and machine.

    PYTHONPATH=build/python bench/py_layers_vs_torch_profiler.py [PAIRS (20)] [THREADS (1)]

torch.profiler's layer times: each layer's forward is a record_function range
(forward hooks open and close it); its forward time is the self time of the
operators inside the range, its backward time the total time of the
autograd functions whose sequence number is that of one of its forward
operators (how torch.profiler links backward to forward). trainscope's are
`trainscope profile show`'s (the same attribution, by its own callbacks).
"""
import json
import os
import subprocess
import sys
import tempfile

import torch
from torch.autograd.profiler import record_function

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_watch import batches  # noqa: E402
from py_train_step import demo_cnn  # noqa: E402

import trainscope  # noqa: E402


def ranges(model):
    """Forward hooks that open a record_function range per leaf module."""
    handles, stack = [], []
    for name, m in model.named_modules():
        if next(m.children(), None) is not None:
            continue
        handles.append(m.register_forward_pre_hook(
            lambda mod, i, n=name: stack.append(record_function("layer:" + n).__enter__())))
        handles.append(m.register_forward_hook(
            lambda mod, i, o: stack.pop().__exit__(None, None, None)))
    return handles


def torch_layer_times(events, fwd, bwd):
    """Adds one profiled step's per-layer times (us) into fwd and bwd."""
    def layer_of(e):
        p = e.cpu_parent
        while p is not None and not p.name.startswith("layer:"):
            p = p.cpu_parent
        return p.name[len("layer:"):] if p is not None else None

    seq = {}
    for e in events:
        layer = layer_of(e)
        if layer is None or e.name.startswith("layer:"):
            continue
        fwd[layer] = fwd.get(layer, 0.0) + e.self_cpu_time_total
        if e.sequence_nr >= 0:
            seq[e.sequence_nr] = layer
    for e in events:
        if e.name.startswith("autograd::engine::evaluate_function:") and e.sequence_nr in seq:
            layer = seq[e.sequence_nr]
            bwd[layer] = bwd.get(layer, 0.0) + e.cpu_time_total


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    torch.manual_seed(1)
    data, model = batches(), demo_cnn()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    store = os.path.join(tempfile.mkdtemp(), "l.db")
    fwd, bwd, profiled = {}, {}, 0
    with trainscope.start_run(name="layers", store="sqlite:" + store,
                              record_environment=False) as run:
        run.watch(model, opt, fingerprint_every=0, monitor_interval=0, profile_every=2,
                  profile_warmup=5)
        for i in range(5 + 2 * pairs):
            bx, by = data[i % len(data)]
            torch_step = i >= 5 and i % 2 == 1  # steps 7, 9, ... (1-based)
            if torch_step:
                handles = ranges(model)
                prof = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
                prof.__enter__()
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(bx), by)
            loss.backward()
            opt.step()
            if torch_step:
                prof.__exit__(None, None, None)
                for h in handles:
                    h.remove()
                torch_layer_times(prof.profiler.function_events, fwd, bwd)
                profiled += 1
    ts = json.loads(subprocess.run(
        [os.environ.get("TS_CLI", "build/bin/trainscope"), "--store", "sqlite:" + store,
         "--json", "profile", "show", "layers"], check=True, capture_output=True,
        text=True).stdout)
    print(f"trainscope: {ts['profiled_iterations']} steps; torch.profiler: {profiled} steps "
          f"(us per step)")
    print(f"{'layer':<6}{'type':<10}{'fwd ts':>9}{'fwd torch':>11}{'ratio':>7}"
          f"{'bwd ts':>9}{'bwd torch':>11}{'ratio':>7}")
    for layer in ts["layers"]:
        n = layer["layer"]
        tf, tb = fwd.get(n, 0) / profiled, bwd.get(n, 0) / profiled
        rf = layer["forward_us"] / tf if tf else float("nan")
        rb = layer["backward_us"] / tb if tb else float("nan")
        print(f"{n:<6}{layer['type']:<10}{layer['forward_us']:>9.1f}{tf:>11.1f}{rf:>7.3f}"
              f"{layer['backward_us']:>9.1f}{tb:>11.1f}{rb:>7.3f}")


if __name__ == "__main__":
    main()
