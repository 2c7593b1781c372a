"""Thirtieth hunt, tester B: the Python package's defects D1, D2, D5 and D8,
read back with the CLI as a user would."""
import json
import re
import time

import pytest
import torch

import trainscope
from trainscope import watch as watch_module

from hunt_support import cli, show, store  # noqa: F401 (store: a fixture)
ALSO = "give a number such as 0.5, in ASCII digits without '_', finite"


def status(store, name):
    return json.loads(cli(store, "--json", "runs", "show", name))["status"]


def statuses(store):
    rows = cli(store, "runs", "list", "--columns", "name,status").splitlines()[1:]
    return dict(line.split() for line in rows)


def points(store, name, key):
    out = cli(store, "metrics", name, key, "--format", "csv")
    return [int(line.split(",")[0]) for line in out.splitlines()[1:]]


def start(store, name):
    return trainscope.start_run(name=name, store="sqlite:" + store, record_environment=False)


def train(model, optimizer, steps=3):
    for _ in range(steps):
        optimizer.zero_grad()
        model(torch.randn(8, 2)).pow(2).mean().backward()
        optimizer.step()


def net():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
    return model, torch.optim.SGD(model.parameters(), lr=0.1)


# B-D1: finish(status) on an ended run was a silent no-op whatever the status.

def test_finishing_an_ended_run_with_another_status_is_refused(store):
    run = start(store, "twice")
    run.finish()
    run.finish()  # the same status again: nothing to say
    run.finish("finished")
    for other in ("failed", "killed", "stopped"):
        with pytest.raises(ValueError, match=rf"^run {run.uuid[:8]} already ended finished; it "
                           rf"cannot be made {other}$"):
            run.finish(other)
    with pytest.raises(ValueError, match=r"^status 'running' ends no run"):
        run.finish("running")
    assert status(store, "twice") == "finished"
    stopped = start(store, "halted")
    stopped.finish("stopped")
    stopped.finish("stopped")
    with pytest.raises(ValueError, match=r"already ended stopped; it cannot be made finished$"):
        stopped.finish()
    assert statuses(store) == {"twice": "finished", "halted": "stopped"}


def test_a_with_block_that_fails_an_ended_run_says_the_run_stays_as_it_ended(store):
    run = start(store, "ended")
    run.finish()
    with pytest.raises(RuntimeError) as e:
        with run:
            raise RuntimeError("boom")
    assert str(e.value) == "boom"  # the script's own error, with a note
    assert e.value.__notes__ == [f"trainscope: run {run.uuid[:8]} already ended finished; it "
                                 "cannot be made failed"]
    with run:  # left normally: nothing to say
        pass
    # A run the block ended itself keeps that end, left normally or failing so.
    with start(store, "own") as own:
        own.finish("failed")
    with pytest.raises(KeyError) as e:
        with start(store, "own-failed") as own_failed:
            own_failed.finish("failed")
            raise KeyError("k")
    assert not getattr(e.value, "__notes__", None)
    assert statuses(store) == {"ended": "finished", "own": "failed", "own-failed": "failed"}


# B-D2: a TorchScript module gave torch's RuntimeError from inside watch.py,
# after the native watch was made, which then sampled on into the run.

@pytest.mark.filterwarnings("ignore:`torch.jit:FutureWarning")
def test_a_torchscript_module_is_refused_before_anything_is_attached(store):
    run = start(store, "script")
    scripted = torch.jit.script(torch.nn.Linear(3, 3))
    traced = torch.jit.trace(torch.nn.Linear(3, 3), torch.randn(1, 3))
    for model, kind, how in ((scripted, "RecursiveScriptModule", "script"),
                             (traced, "TopLevelTracedModule", "trace")):
        with pytest.raises(ValueError, match=rf"^model is a TorchScript module \({kind}\): "
                           r"watch\(\) needs an nn.Module it can hook; watch the module before "
                           rf"torch.jit.{how}$"):
            run.watch(model, monitor_interval=0.1)
    assert watch_module._WATCHES == []
    model, opt = net()
    run.watch(model, opt, monitor_interval=0.1)
    time.sleep(0.5)
    train(model, opt)
    run.finish()
    assert status(store, "script") == "finished"
    steps = points(store, "script", "proc/rss_mib")
    assert steps and steps == sorted(set(steps)), steps  # one sampler: never back


class Unhookable(torch.nn.Linear):
    """A model whose forward hook cannot be registered (as a ScriptModule's)."""

    def register_forward_hook(self, *args, **kwargs):
        raise RuntimeError("no hooks here")


def test_a_watch_that_fails_after_its_units_started_ends_them(store):
    run = start(store, "half")
    model = Unhookable(3, 3)
    with pytest.raises(RuntimeError, match="^no hooks here$"):
        run.watch(model, monitor_interval=0.1)
    assert watch_module._WATCHES == []
    assert not model._forward_pre_hooks  # the pre-hook made first is removed
    time.sleep(1.0)  # ten samples, were its sampler still running
    run.log({"loss": 1.0}, step=0)
    run.finish()
    assert status(store, "half") == "finished"
    assert len(points(store, "half", "proc/rss_mib")) <= 3


# B-D5: config() read a script's own numbers with int()/float().

@pytest.mark.parametrize("setting, message", [
    ("lr=1_0", "'lr' is a float \\(default 0.1\\); " + ALSO),
    ("epochs=1_000", "'epochs' is an int \\(default 2\\); give a whole number such as 3, in "
                     "ASCII digits without '_', finite"),
    ("epochs=\u0661\u0662", "'epochs' is an int \\(default 2\\); give a whole number such as 3"),
    ("lr=\uff11.\uff15", "'lr' is a float \\(default 0.1\\); " + ALSO),
    ("lr=1e999", "'lr' is a float \\(default 0.1\\); " + ALSO),
    ("lr=infinity", "'lr' is a float \\(default 0.1\\); " + ALSO),
    ("lr=nan", "'lr' is a float \\(default 0.1\\); " + ALSO),
    ("free=1_0", "'free' is untyped \\(default None\\); " + ALSO + ", or text that reads as no "
                 "number"),
    ("free=inf", "'free' is untyped \\(default None\\); " + ALSO),
], ids=["underscore", "int-underscore", "arabic-indic", "fullwidth", "1e999", "infinity", "nan",
        "untyped-underscore", "untyped-inf"])
def test_config_reads_a_scripts_numbers_by_the_one_rule_of_settings(setting, message):
    defaults = {"lr": 0.1, "epochs": 2, "free": None}
    with pytest.raises(trainscope.Error, match="^setting " + re.escape(setting) + ": " + message):
        trainscope.config(defaults, sets=[setting])


def test_config_keeps_taking_what_it_took():
    defaults = {"lr": 0.1, "epochs": 2, "name": "a", "amp": False, "free": None,
                "opt": {"beta": 0.9}}
    cfg = trainscope.config(defaults, sets=["lr=1e-3", "epochs=-3", "name=3", "amp=true",
                                            "opt.beta=1", "seeds.master=7"])
    assert cfg == {"lr": 0.001, "epochs": -3, "name": "3", "amp": True, "free": None,
                   "opt": {"beta": 1.0}, "seeds": {"master": 7}}
    for text, value in (("3", 3), ("-2.5e-3", -0.0025), ("ten", "ten"), ("false", False),
                        (" 0.5 ", 0.5), (".5", 0.5)):
        got = trainscope.config(defaults, sets=[f"free={text}"])["free"]
        assert got == value and type(got) is type(value), (text, got)
    assert trainscope.config(defaults, sets=["lr=-5"])["lr"] == -5.0
    # What was refused before is refused as before (trainscope.Error).
    for setting in ("epochs=2.5", "epochs=ten", "lr=fast"):
        with pytest.raises(trainscope.Error, match="^setting " + setting):
            trainscope.config(defaults, sets=[setting])
    with pytest.raises(trainscope.Error, match="^setting lr=1_0: "):
        trainscope.config(defaults, sets=["lr=1_0"])


# B-D8: two open runs watching one model: the first one's profile was all zeros.

def test_one_run_watches_a_model_at_a_time(store):
    model, opt = net()
    first, second = start(store, "run-one"), start(store, "run-two")
    first.watch(model, opt, profile_every=1, profile_warmup=0, monitor_interval=0)
    with pytest.raises(ValueError, match=rf"^model is already watched by run "
                       rf"{first.uuid[:8]} \(run-one\); one run watches a model at a time: "
                       r"finish that run first$"):
        second.watch(model, opt, profile_every=1, profile_warmup=0, monitor_interval=0)
    train(model, opt)
    first.finish()
    second.watch(model, opt, profile_every=1, profile_warmup=0, monitor_interval=0)
    train(model, opt)
    second.finish()
    assert watch_module._WATCHES == []
    assert statuses(store) == {"run-one": "finished", "run-two": "finished"}
    for name in ("run-one", "run-two"):
        shown = cli(store, "profile", "show", name)
        layers = re.search(r"^all layers\s+([0-9.]+)", shown, re.M)
        assert layers and float(layers.group(1)) > 0, shown
