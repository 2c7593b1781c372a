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

import trainscope
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


# --- the thirty-sixth hunt: a trace is untrusted input ----------------------

STEP = '{{"ph": "X", "cat": "user_annotation", "name": "{name}", "ts": {ts}, "dur": {dur}, "pid": 1, "tid": 1}}'
OP = '{{"ph": "X", "cat": "{cat}", "name": "{name}", "ts": {ts}, "dur": {dur}, "pid": 1, "tid": 1}}'


def write_trace(path, *events, base=True):
    head = '"baseTimeNanoseconds": 1700000000000000000, ' if base else ""
    path.write_text("{" + head + '"traceEvents": [' + ", ".join(events) + "]}")
    return path


@pytest.mark.parametrize("events, words", [
    # B-D2: a scope named as the profile's own rows lost or moved its time
    ([STEP.format(name="ProfilerStep#1", ts=1, dur=100),
      OP.format(cat="user_annotation", name="(wall)", ts=10, dur=40)], "a scope is named '(wall)'"),
    # A-D1, B-D3: what the profile's readers call a damaged store
    ([OP.format(cat="cpu_op", name="aten::mm", ts=1, dur=1e18)], "'dur' is not a time"),
    ([STEP.format(name="ProfilerStep#99999999999999999999", ts=1, dur=10),
      OP.format(cat="cpu_op", name="aten::mm", ts=2, dur=3)], "no step from 0 to 2^53"),
    # A-D3, B-D4: one step's cells overwrote the other's
    ([STEP.format(name="ProfilerStep#5", ts=1, dur=10), OP.format(cat="cpu_op", name="aten::mm",
      ts=2, dur=3), STEP.format(name="ProfilerStep#5", ts=20, dur=10),
      OP.format(cat="cpu_op", name="aten::mm", ts=22, dur=3)], "step 5 is in it twice"),
    # A-D4, B-D9: a step of no time, a step with nothing in it
    ([STEP.format(name="ProfilerStep#1", ts=1, dur=0),
      OP.format(cat="cpu_op", name="aten::mm", ts=1, dur=0)], "spans no time"),
    ([STEP.format(name="ProfilerStep#1", ts=1, dur=10)], "no CPU events"),
])
def test_what_the_profile_cannot_hold_is_refused_and_nothing_recorded(tmp_path, events, words):
    store = tmp_path / "ts.db"
    out = cli(store, "profile", "import", str(write_trace(tmp_path / "t.json", *events)),
              check=False)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert words in out.stderr, out.stderr
    assert not os.path.exists(store) or json.loads(
        cli(store, "--json", "runs", "list").stdout) == []


def test_a_trace_that_does_not_say_when_starts_now(tmp_path):
    """A-D2, B-D7: dated 1970."""
    store = tmp_path / "ts.db"
    cli(store, "profile", "import", str(write_trace(
        tmp_path / "t.json", OP.format(cat="cpu_op", name="aten::mm", ts=1, dur=2), base=False)),
        "--name", "now")
    run = json.loads(cli(store, "--json", "runs", "show", "now").stdout)
    assert run["start_time"].startswith(str(__import__("datetime").date.today().year))


def test_a_file_of_zeros_is_refused_before_it_is_read(tmp_path):
    """A-D5: 2 GB read whole to say it is no trace."""
    big = tmp_path / "z.json"
    with open(big, "wb") as f:
        f.truncate(1 << 30)
    out = cli(tmp_path / "ts.db", "profile", "import", str(big), check=False)
    assert out.returncode == 2 and "first byte is no '{'" in out.stderr, out.stderr


def test_a_running_run_and_a_name_no_artifact_takes_are_refused_before_anything_is_written(
        tmp_path):
    """A-D8, B-D5: written into a live run; B-D6, A-D7: refused after the
    records were written into --run's run."""
    store = tmp_path / "ts.db"
    trace = write_trace(tmp_path / "t.json", OP.format(cat="cpu_op", name="aten::mm", ts=1, dur=2))
    with trainscope.start_run(name="live", store=f"sqlite:{store}",
                              record_environment=False) as live:
        out = cli(store, "profile", "import", str(trace), "--run", "live", check=False)
        assert out.returncode == 4 and "is running" in out.stderr, out.stderr
    long = tmp_path / ("x" * 246 + ".json")
    long.write_text(trace.read_text())
    out = cli(store, "profile", "import", str(long), "--run", live.uuid, check=False)
    assert out.returncode == 2 and "rename the file" in out.stderr, out.stderr
    cli(store, "profile", "import", str(trace), "--run", live.uuid)  # no profile was left
