"""Thirty-first hunt, tester B: the Python package's defects B-D4, B-D7 and
B-D8 (docs/reliability.md), read back with the CLI as a user would."""
import copy
import json
import pickle

import pytest
import torch

import trainscope

from hunt_support import cli, show, store  # noqa: F401 (store: a fixture)


def keys(store, name):
    summaries = json.loads(cli(store, "--json", "runs", "show", name))["metric_summaries"]
    return [m["key"] for m in summaries]


def start(store, name):
    return trainscope.start_run(name=name, store="sqlite:" + store, record_environment=False)


def test_probes_record_no_train_accuracy_of_a_loop_whose_labels_they_do_not_see(store):
    """B-D4: the probes recorded probe/train_accuracy 0 at every step of a
    classifier at 98%: a Python loop's targets go to its own loss function,
    so there is no accuracy to record, and none is (the loss still is)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    x = torch.randn(64, 4)
    y = (x[:, 0] > 0).long()
    with start(store, "clf") as run:
        run.watch(model, opt, probes="economy", probes_every=1, monitor_interval=0)
        for _ in range(30):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    accuracy = (model(x).argmax(1) == y).float().mean().item()
    assert accuracy > 0.9
    recorded = keys(store, "clf")
    assert "probe/loss" in recorded
    assert "probe/train_accuracy" not in recorded


@pytest.mark.parametrize("key", ["probe/loss", "probe/fc/weights/l2", "profile/coverage"])
def test_a_script_cannot_log_the_probes_or_the_profilers_series(store, key):
    """B-D7: a script's own probe/* or profile/* points were mixed into the
    series the probes and the profiler record, as energy/* and proc/* are
    refused."""
    with start(store, "own") as run:
        with pytest.raises(ValueError, match="one trainscope records itself"):
            run.log({key: 1.0}, step=1)
        run.log({"loss": 1.0}, step=1)
    assert keys(store, "own") == ["loss"]


def test_a_run_cannot_be_copied_or_pickled(store):
    """B-D8: copy.copy(run) made a second handle; the original's finish()
    then named the copy's reason. A Run is one object."""
    with start(store, "one") as run:
        for make in (copy.copy, copy.deepcopy, pickle.dumps):
            with pytest.raises(TypeError, match="a Run cannot be copied or pickled"):
                make(run)
        run.log({"loss": 0.5}, step=1)
    assert json.loads(cli(store, "--json", "runs", "show", "one"))["status"] == "finished"
