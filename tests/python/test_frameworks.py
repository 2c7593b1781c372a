"""One model, two frameworks: the demo CNN in PyTorch-Python
(examples/python/demo_cnn.py) fed trainscope.TrainerInputs, against
`trainscope train` on the same config, on real Fashion-MNIST (a subset).
trainscope diff must find SGD bit-identical, and Adam parting at step 1 in
the update alone (the forward and backward passes of step 1, hence its
loss, are the same: only the optimizers' rounding differs). The framework
study (examples/python/frameworks.yaml) runs both as cells of one study."""
import hashlib
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys

import pytest
import torch

import trainscope

CLI = os.environ["TS_CLI"]
ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "python"
DEMO = str(ROOT / "configs" / "demo.yaml")
SMALL = ["data.train_subset=640", "data.test_subset=500", "train.epochs=2"]


def cli(store, *args, check=True):
    return subprocess.run([CLI, "--store", "sqlite:" + str(store), *args], check=check,
                          capture_output=True, text=True)


def python_run(store, name, sets):
    argv = [sys.executable, str(EXAMPLES / "demo_cnn.py"), DEMO, "--name", name]
    for s in sets:
        argv += ["--set", s]
    env = dict(os.environ, TRAINSCOPE_STORE=str(store))
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def libtorch_run(store, name, sets):
    args = ["-q", "train", DEMO, "--name", name, "--no-progress"]
    for s in sets:
        args += ["--set", s]
    cli(store, *args)


def diff(store, a, b):
    return json.loads(cli(store, "--json", "diff", a, b).stdout)


def test_the_inputs_are_the_trainers_and_fixed_by_the_seeds():
    a = trainscope.TrainerInputs(DEMO, SMALL)
    b = trainscope.TrainerInputs(DEMO, SMALL)
    other = trainscope.TrainerInputs(DEMO, SMALL + ["seeds.init=7", "seeds.data_order=7"])
    assert a.train_size == 640 and a.batches_per_epoch == 5
    assert a.params["model.name"] == "demo_cnn" and a.params["data.train_subset"] == "640"
    sa, sb, so = a.initial_state(), b.initial_state(), other.initial_state()
    assert list(sa) == ["features.conv1.weight", "features.conv1.bias", "features.conv2.weight",
                        "features.conv2.bias", "classifier.fc1.weight", "classifier.fc1.bias",
                        "classifier.fc2.weight", "classifier.fc2.bias"]
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["features.conv1.weight"], so["features.conv1.weight"])
    e0 = list(a.epoch(0))
    assert len(e0) == 5 and [len(y) for _, y in e0] == [128] * 5
    assert e0[0][0].shape == (128, 1, 28, 28) and e0[0][0].dtype == torch.float32
    assert all(torch.equal(x, x2) for (x, _), (x2, _) in zip(e0, b.epoch(0)))
    assert not torch.equal(e0[0][1], next(iter(a.epoch(1)))[1])  # a new order each epoch
    assert not torch.equal(e0[0][1], next(iter(other.epoch(0)))[1])
    # Every sample once per epoch; the test set normalised like the batches.
    assert sorted(torch.cat([y for _, y in e0]).tolist()) == sorted(
        torch.cat([y for _, y in a.epoch(1)]).tolist())
    x, y = a.test()
    assert x.shape == (500, 1, 28, 28) and len(y) == 500 and abs(float(x.mean())) < 0.2


def test_a_model_with_other_tensors_is_refused_by_name():
    inputs = trainscope.TrainerInputs(DEMO, SMALL)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10))
    with pytest.raises(ValueError, match="missing classifier.fc1.bias.*not in the trainer's "
                       "model 1.bias, 1.weight"):
        inputs.initialise(net)
    with pytest.raises(TypeError, match="list of 'key=value'"):
        trainscope.TrainerInputs(DEMO, "train.epochs=1")
    with pytest.raises(ValueError, match="optimizer.nme"):
        trainscope.TrainerInputs(DEMO, ["optimizer.nme=sgd"])
    with pytest.raises(LookupError, match="nowhere.yaml"):
        trainscope.TrainerInputs("/nowhere.yaml")
    # Seventeenth hunt, 17A-D3: an epoch that is no whole number got the
    # binding's four-line TypeError; True was epoch 1.
    for bad in (0.5, "0", None, True, -1, 2**70):
        with pytest.raises(ValueError, match="^epoch "):
            inputs.epoch(bad)
    assert len(inputs.epoch(1.0)) == inputs.batches_per_epoch
    # Twenty-fifth hunt, A-D1 and A-D2: a model of the wrong type was
    # torch's AttributeError; a model on the meta device came back "done"
    # and held no weights.
    for bad, said in ((3, "model must be a torch.nn.Module, not an int 3"),
                      (None, "not a NoneType None"), (torch.nn.Linear, "the class Linear")):
        with pytest.raises(ValueError, match=said):
            inputs.initialise(bad)
    sys.path.insert(0, str(EXAMPLES))
    try:
        from demo_cnn import DemoCNN
    finally:
        sys.path.remove(str(EXAMPLES))
    with torch.device("meta"):
        ghost = DemoCNN.like(inputs.initial_state())
    with pytest.raises(ValueError, match="tensor features.conv1.weight is on the meta device"):
        inputs.initialise(ghost)
    real = inputs.initialise(ghost.to_empty(device="cpu"))
    assert torch.equal(real.features.conv1.weight, inputs.initial_state()["features.conv1.weight"])


def test_sgd_is_bit_identical_across_the_frameworks(tmp_path):
    store = tmp_path / "s.db"
    sets = SMALL + ["optimizer.name=sgd", "optimizer.lr=0.05"]
    python_run(store, "pytorch-sgd", sets)
    libtorch_run(store, "libtorch-sgd", sets)
    d = diff(store, "libtorch-sgd", "pytorch-sgd")
    assert d["have_fingerprints"] and d["bit_identical"], d
    assert d["max_loss_diff"] == 0 and d["final_accuracy_a"] == d["final_accuracy_b"]
    shown = json.loads(cli(store, "--json", "runs", "show", "pytorch-sgd").stdout)
    assert shown["tags"]["framework"] == "pytorch"
    assert shown["params"]["optimizer.name"] == "sgd"
    assert shown["tags"]["data.file.train-images-idx3-ubyte.gz"].endswith("ubyte.gz")
    # Same code, same data files: the environments differ in Python's entries only.
    env = json.loads(cli(store, "--json", "env", "diff", "libtorch-sgd", "pytorch-sgd").stdout)
    differ = {e["key"] for e in env}
    assert not {k for k in differ if k.startswith(("git.", "data."))}, differ
    assert "python.executable" in differ


def test_adam_parts_at_the_first_update_and_only_there(tmp_path):
    store = tmp_path / "s.db"
    python_run(store, "pytorch-adam", SMALL)
    libtorch_run(store, "libtorch-adam", SMALL)
    d = diff(store, "libtorch-adam", "pytorch-adam")
    assert not d["bit_identical"] and d["first_diff_step"] == 1, d
    # Step 1's loss is hashed with the weights after its update: the same
    # loss means the same forward pass; only updated weights differ.
    assert "loss" not in d["differing_tensors"] and d["differing_tensors"]
    assert set(d["differing_tensors"]) <= set(trainscope.TrainerInputs(DEMO).initial_state())
    assert d["max_loss_diff"] < 1e-3
    table = cli(store, "report", "throughput", "libtorch-adam", "pytorch-adam").stdout
    assert "samples/s" in table and "libtorch-adam" in table and "pytorch-adam" in table


def test_the_framework_is_a_factor_of_one_study(tmp_path):
    for f in ("demo_cnn.py", "frameworks.yaml"):
        shutil.copy(EXAMPLES / f, tmp_path / f)
    spec = (tmp_path / "frameworks.yaml").read_text().replace("../../configs/demo.yaml", DEMO)
    spec = spec.replace("replicates: 3, set: {", "replicates: 2, set: {data.test_subset: 500, ")
    (tmp_path / "frameworks.yaml").write_text(spec)
    store = tmp_path / "s.db"
    done = cli(store, "study", "run", str(tmp_path / "frameworks.yaml"), "--quick",
               "--logs", str(tmp_path / "logs"), check=False)
    assert done.returncode == 0, done.stderr + "".join(
        p.read_text() for p in (tmp_path / "logs").glob("*.log"))
    runs = json.loads(cli(store, "--json", "runs", "list", "--experiment", "frameworks").stdout)
    children = {r["name"]: r for r in runs if r["parent"]}
    assert sorted(children) == ["framework=libtorch/r1", "framework=libtorch/r2",
                                "framework=pytorch/r1", "framework=pytorch/r2"]
    trained = json.loads(cli(store, "--json", "runs", "show", "framework=libtorch/r2").stdout)
    assert trained["tags"]["framework"] == "libtorch" and "source" not in trained["tags"]
    planned = trained["tags"]["study.planned_sha256"]
    script = json.loads(cli(store, "--json", "runs", "show", "framework=pytorch/r2").stdout)
    assert script["tags"]["framework"] == "pytorch"
    assert planned != hashlib.sha256(script["config"].encode()).hexdigest()  # another cell
    assert trained["params"]["seeds.master"] == script["params"]["seeds.master"]
    # The libtorch runs count as planned: a replan sets nothing aside.
    again = cli(store, "study", "resume", "frameworks", "--replan", check=False)
    assert again.returncode == 0, again.stderr
    assert "0 run(s) it no longer trains set aside" in again.stderr, again.stderr
    report = json.loads(cli(store, "--json", "study", "report", "frameworks").stdout)
    assert [c["cell"] for c in report["cells"]] == ["framework=pytorch", "framework=libtorch"]


def test_a_torch_saved_state_dict_starts_a_training_and_comes_back_bit_for_bit(tmp_path):
    """PyTorch-Python's torch.save(model.state_dict()) into the C++ model of
    the same names (model.init_from), and `trainscope weights` back out:
    torch.load gives every tensor bit for bit; the run's manifest holds the
    file's hash. A state dict of another model, or not a state dict, is one
    line naming what differs."""
    sys.path.insert(0, str(EXAMPLES))
    from demo_cnn import DemoCNN  # the trainer's names, in PyTorch
    torch.manual_seed(3)
    model = DemoCNN(1, 32 * 7 * 7, 10)
    with torch.no_grad():  # values no init of trainscope's would draw
        for p in model.parameters():
            p.copy_(torch.randn_like(p) * 0.05)
    state = model.state_dict()
    torch.save(state, tmp_path / "mine.pt")
    store = tmp_path / "s.db"
    out = cli(store, "train", DEMO, "--name", "from-py", "--no-progress",
              "--set", f"model.init_from={tmp_path / 'mine.pt'}", "--set", "train.max_steps=1",
              "--set", "data.train_subset=256", "--set", "data.test_subset=64",
              "--set", "checkpoint.every_steps=1", check=False)
    assert out.returncode == 0, out.stderr
    got = cli(store, "weights", "from-py", "--checkpoint", "step-000000000.pt",
              "-o", str(tmp_path / "back.pt"), check=False)
    assert got.returncode == 0, got.stderr
    back = torch.load(tmp_path / "back.pt", weights_only=True)
    assert list(back) == list(state), (list(back), list(state))
    for k, v in state.items():
        assert back[k].dtype == v.dtype and torch.equal(back[k], v), k
    with sqlite3.connect(store) as db:
        env = dict(db.execute("SELECT key, value FROM environment WHERE run_id = "
                              "(SELECT id FROM runs WHERE name = 'from-py')"))
    digest = hashlib.sha256((tmp_path / "mine.pt").read_bytes()).hexdigest()
    assert env[f"data.sha256.{tmp_path / 'mine.pt'}"] == digest
    # Another model's state dict, and a file that is none: one line each.
    other = {k: v for k, v in state.items() if k != "classifier.fc2.bias"}
    other["head.weight"] = torch.zeros(3)
    torch.save(other, tmp_path / "other.pt")
    torch.save(model, tmp_path / "whole.pt")  # a pickled module, not a state dict
    for name, says in (("other.pt", "has no 'classifier.fc2.bias'"),
                       ("whole.pt", "cannot be read as a state dict"),
                       ("missing.pt", "does not exist")):
        bad = cli(store, "train", DEMO, "--no-progress", "--set",
                  f"model.init_from={tmp_path / name}", "--set", "train.max_steps=1", check=False)
        assert bad.returncode in (2, 3) and says in bad.stderr, (name, bad.returncode, bad.stderr)
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
