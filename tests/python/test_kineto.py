"""Kineto traces in (issue 50): a trace `torch.profiler` writes of a small
CNN's training steps, as the demo's (two convolutions, pooling, a linear
layer; CPU, batch 64), imported by `trainscope profile import` into a run's
profile, agrees with the profiler's own `key_averages()`: each layer's
forward time (a record_function scope per module) and each operator's self
time within 5%, over the same profiled steps. A trace with eager modules
(with_stack=True: "nn.Module: Conv2d_0") has them as layers; backward
operators go to the layer whose forward operator has their sequence number;
the optimizer's step is the update phase. TS_CLI, PYTHONPATH: set by
ctest."""
import json
import os
import subprocess

import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

CLI = os.environ["TS_CLI"]
ACTIVE = 3


def cli(store, *args, check=True):
    r = subprocess.run([CLI, "--store", f"sqlite:{store}", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"{args}: exit {r.returncode}: {r.stderr}")
    return r


def cnn():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(32 * 7 * 7, 10))


def scoped(model):
    """A record_function scope per module, named layer/<its name>, as users
    add by hand (torch.profiler has no module scopes for eager models)."""
    names = {m: n for n, m in model.named_children()}

    def enter(m, _):
        m._scope = record_function(f"layer/{names[m]}")
        m._scope.__enter__()

    def leave(m, _, __):
        m._scope.__exit__(None, None, None)
    for m in names:
        m.register_forward_pre_hook(enter)
        m.register_forward_hook(leave)
    return model


def trace(path, model, **kwargs):
    """Profiles 5 training steps (1 wait, 1 warm-up, 3 active) and writes
    the trace; the profiler's key_averages() of the active steps."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))
    averages = {}

    def ready(p):
        p.export_chrome_trace(str(path))
        for e in p.key_averages():
            averages[e.key] = (e.count, e.cpu_time_total, e.self_cpu_time_total)
    with profile(activities=[ProfilerActivity.CPU], on_trace_ready=ready,
                 schedule=schedule(wait=1, warmup=1, active=ACTIVE), **kwargs) as p:
        for _ in range(5):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            p.step()
    return averages


@pytest.fixture(scope="module")
def scoped_trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("kineto")
    averages = trace(d / "cnn.json", scoped(cnn()))
    store = d / "ts.db"
    out = cli(store, "profile", "import", str(d / "cnn.json"), "--name", "cnn")
    return store, averages, out.stdout


def test_each_layers_forward_time_agrees_with_key_averages(scoped_trace):
    store, averages, said = scoped_trace
    assert f"imported {ACTIVE} steps" in said, said
    shown = json.loads(cli(store, "profile", "show", "cnn", "--format", "json").stdout)
    assert shown["profiled_iterations"] == ACTIVE
    layers = {l["layer"]: l for l in shown["layers"]}
    scopes = [k for k in averages if k.startswith("layer/")]
    assert len(scopes) == 8 and set(scopes) <= set(layers)
    for key in scopes:
        count, total, _ = averages[key]
        assert count == ACTIVE
        mine = layers[key]["forward_us"] * ACTIVE
        assert mine == pytest.approx(total, rel=0.05), key
    # Backward operators found their layers through the sequence numbers.
    for key in ("layer/0", "layer/3", "layer/7"):
        assert layers[key]["backward_us"] > 0, key
    assert shown["categories_us"].get("update (framework)", 0) > 0
    assert 0 < shown["coverage_min"] <= 1


def test_each_operators_self_time_agrees_with_key_averages(scoped_trace):
    store, averages, _ = scoped_trace
    ops = json.loads(cli(store, "profile", "show", "cnn", "--ops", "0", "--format",
                         "json").stdout)
    assert ops["steps"] == ACTIVE
    mine = {o["name"]: o for o in ops["operators"]}
    top = sorted((k for k in averages if k.startswith("aten::")),
                 key=lambda k: -averages[k][2])[:8]
    for key in top:
        count, total, self_time = averages[key]
        assert mine[key]["calls"] == count, key
        assert mine[key]["self_us"] == pytest.approx(self_time, rel=0.05), key
        assert mine[key]["total_us"] == pytest.approx(total, rel=0.05), key


def test_eager_modules_are_layers_with_their_types(tmp_path):
    trace(tmp_path / "stack.json", cnn(), with_stack=True)
    store = tmp_path / "ts.db"
    cli(store, "profile", "import", str(tmp_path / "stack.json"), "--name", "stack")
    shown = json.loads(cli(store, "profile", "show", "stack", "--format", "json").stdout)
    types = {l["layer"]: l["type"] for l in shown["layers"]}
    if not any(t == "Conv2d" for t in types.values()):
        pytest.skip("this torch writes no nn.Module events with with_stack=True")
    assert types.get("Conv2d_0") == "Conv2d" and types.get("Linear_0") == "Linear"


def test_what_is_no_trace_and_a_second_profile_are_refused(scoped_trace, tmp_path):
    store = scoped_trace[0]
    (tmp_path / "no.json").write_text('{"rows": []}')
    out = cli(store, "profile", "import", str(tmp_path / "no.json"), check=False)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "is not a Chrome trace" in out.stderr
    cnn_trace = next(p for p in os.listdir(os.path.dirname(store)) if p.endswith(".json"))
    out = cli(store, "profile", "import", os.path.join(os.path.dirname(store), cnn_trace),
              "--run", "cnn", check=False)
    assert out.returncode == 4 and "has a profile already" in out.stderr, out.stderr
