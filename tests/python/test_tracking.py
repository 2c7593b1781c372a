"""`import trainscope`: a run recorded from Python, read back with the CLI
as a user would (TS_CLI is the trainscope executable; ctest sets it and
PYTHONPATH to the built package)."""
import importlib.metadata
import json
import os
import platform
import sqlite3
import subprocess
import sys

import pytest
import torch

import trainscope

CLI = os.environ["TS_CLI"]


def show(store, name):
    out = subprocess.run([CLI, "--store", "sqlite:" + store, "--json", "runs", "show", name],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def metric(store, name, key):
    out = subprocess.run([CLI, "--store", "sqlite:" + store, "metrics", name, key, "--format",
                          "csv"], check=True, capture_output=True, text=True).stdout
    return [tuple(float(x) for x in line.split(",")[0:3:2]) for line in out.splitlines()[1:]]


@pytest.fixture
def store(tmp_path):
    return str(tmp_path / "t.db")


def test_a_training_loop_records_params_metrics_and_an_artifact(store, tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(64, 4), torch.randint(0, 2, (64,))
    (tmp_path / "notes.txt").write_text("hello")
    with trainscope.start_run(name="mlp", experiment="py", store="sqlite:" + store,
                              config={"optimizer": {"name": "sgd", "lr": 0.1}, "epochs": 3},
                              tags={"team": "vision"}) as run:
        for step in range(1, 31):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            run.log({"train/loss": loss, "lr": 0.1}, step=step)  # a 0-d tensor and a float
        run.log_metric("test/accuracy", 0.75)
        assert run.log_artifact(tmp_path / "notes.txt") == "notes.txt"
    j = show(store, "mlp")
    assert j["status"] == "finished"
    assert j["experiment"] == "py"
    assert j["params"]["optimizer.lr"] == "0.1" and j["params"]["epochs"] == "3"
    assert j["tags"]["team"] == "vision" and j["tags"]["source"] == "python"
    points = metric(store, "mlp", "train/loss")
    assert [p[0] for p in points] == list(range(1, 31))
    assert points[-1][1] < points[0][1], "the loss went down"
    # (pytest's __main__ is the "script": inside a checkout with local
    # changes, as .venv in a developer's tree is, its diff is stored too.)
    assert [a["name"] for a in j["artifacts"] if a["name"] != "git.diff"] == ["notes.txt"]


def environment(store, uuid):
    with sqlite3.connect(store) as db:
        return dict(db.execute("SELECT key, value FROM environment WHERE run_id = "
                               "(SELECT id FROM runs WHERE uuid = ?)", (uuid,)))


def test_the_environment_names_the_interpreter_imported_packages_and_libtorch(store):
    with trainscope.start_run(name="env", store="sqlite:" + store) as run:
        pass
    env = environment(store, run.uuid)
    assert env["python.version"] == platform.python_version()
    assert env["python.executable"] == sys.executable
    assert env["python.packages.torch"] == importlib.metadata.version("torch")
    # The C++ side's part: the torch this interpreter imported, and the wheel
    # pip would install to get it again.
    assert env["libraries.torch.version"] == torch.__version__
    assert env["libraries.torch.path"] == os.path.dirname(torch.__file__)
    assert env["libraries.torch.distribution"] == "torch==" + importlib.metadata.version("torch")
    assert "hardware.cpu.model" in env or any(k.startswith("hardware.") for k in env)
    assert run.name == "env" and len(run.uuid) == 36


def test_an_exception_fails_the_run_and_ctrl_c_kills_it(store):
    with pytest.raises(RuntimeError):
        with trainscope.start_run(name="boom", store="sqlite:" + store) as run:
            run.log({"loss": 1.0}, step=0)
            raise RuntimeError("diverged")
    with pytest.raises(KeyboardInterrupt):
        with trainscope.start_run(name="stopped", store="sqlite:" + store):
            raise KeyboardInterrupt
    assert show(store, "boom")["status"] == "failed"
    assert metric(store, "boom", "loss") == [(0.0, 1.0)], "what was logged before is kept"
    assert show(store, "stopped")["status"] == "killed"


def test_bad_input_is_one_clear_line_and_loses_nothing(store):
    run = trainscope.start_run(name="bad", store="sqlite:" + store)
    run.log({"loss": 2.0}, step=5)
    with pytest.raises(ValueError, match="at step 3 goes back: it was logged at step 5"):
        run.log({"loss": 1.0}, step=3)
    with pytest.raises(ValueError, match="metric key '' is empty"):
        run.log({"loss": 1.5, "": 0.5}, step=6)
    with pytest.raises(ValueError, match="tensor of 3 elements"):
        run.log({"loss": torch.ones(3)}, step=7)
    with pytest.raises(ValueError, match="is a str, not a number"):
        run.log({"loss": "low"}, step=7)
    run.finish()
    with pytest.raises(ValueError, match="has ended: nothing more can be recorded"):
        run.log({"loss": 0.5}, step=8)
    assert metric(store, "bad", "loss") == [(5.0, 2.0)]
    assert show(store, "bad")["status"] == "finished"
    with pytest.raises(ValueError, match="no backend for scheme 'mongodb'"):
        trainscope.start_run(store="mongodb://host/db")
    with pytest.raises(trainscope.Error):
        trainscope.start_run(store="sqlite:" + os.path.dirname(store) + "/no/such/folder/t.db")


def test_the_default_store_is_trainscope_store(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINSCOPE_STORE", "sqlite:" + str(tmp_path / "env.db"))
    assert trainscope.default_store() == "sqlite:" + str(tmp_path / "env.db")
    with trainscope.start_run(name="from-env"):
        pass
    assert show(str(tmp_path / "env.db"), "from-env")["status"] == "finished"


def train(store, name, seed, steps=12):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.BatchNorm1d(8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 3))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(1)  # the same data for every run
    x, y = torch.randn(32, 6, generator=g), torch.randint(0, 3, (32,), generator=g)
    with trainscope.start_run(name=name, store="sqlite:" + store) as run:
        run.watch(model, opt, fingerprint_every=2)
        for step in range(1, steps + 1):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            run.log({"train/loss": loss}, step=step)


def diff(store, a, b):
    out = subprocess.run([CLI, "--store", "sqlite:" + store, "--json", "diff", a, b],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def test_fingerprints_let_diff_compare_two_python_runs(store):
    train(store, "a", seed=0)
    train(store, "b", seed=0)
    train(store, "c", seed=1)
    same = diff(store, "a", "b")
    assert same["have_fingerprints"] and same["bit_identical"], same
    assert same["common_steps"] == 6  # every 2nd of 12 steps
    other = diff(store, "a", "c")
    assert not other["bit_identical"] and other["first_diff_step"] == 2, other
    assert "0.weight" in other["differing_tensors"]
    # Parameters, buffers (BatchNorm's running statistics) and the loss.
    assert {"0.weight", "1.running_mean", "loss"} <= set(other["differing_tensors"]), other
    assert show(store, "a")["records"]["fingerprints"] == 6
