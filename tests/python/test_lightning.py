"""trainscope.lightning: a real `lightning.Trainer` fit of a tiny module on
seeded random data (CPU, a few seconds), recorded by TrainscopeCallback and
read back with the CLI as a user would (TS_CLI, PYTHONPATH: set by ctest;
requirements/interop.txt installs Lightning)."""
import json
import os
import subprocess

import pytest
import torch

lightning = pytest.importorskip("lightning")

import trainscope  # noqa: E402
from trainscope.lightning import TrainscopeCallback  # noqa: E402

CLI = os.environ["TS_CLI"]
WATCH = {"profile_every": 4, "profile_warmup": 1, "probes": "economy", "probes_every": 2}


def cli(store, *args, check=True):
    return subprocess.run([CLI, "--store", "sqlite:" + str(store), *args], check=check,
                          capture_output=True, text=True)


def show(store, run):
    return json.loads(cli(store, "--json", "runs", "show", run).stdout)


class Net(lightning.LightningModule):
    """A small classifier; `fail_at` raises in that training step."""

    def __init__(self, lr=0.1, hidden=16, fail_at=-1):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.ReLU(),
                                       torch.nn.Dropout(0.2), torch.nn.Linear(hidden, 3))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        if self.global_step == self.hparams.fail_at:
            raise RuntimeError("a failing step")
        x, y = batch
        loss = torch.nn.functional.cross_entropy(self(x), y)
        self.log("train/loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)


def fit(tmp_path, store, name, fail_at=-1, watch=None):
    """A plain script's lines: the config (a study's settings from
    $TRAINSCOPE_SET applied), the seeds, then the model, its data and fit."""
    cfg = trainscope.config({"lr": 0.1, "hidden": 16, "seeds": {"master": 0}})
    seeds = trainscope.setup(cfg)
    model = Net(lr=cfg["lr"], hidden=cfg["hidden"], fail_at=fail_at)
    seeds.use("dropout")
    fixed = torch.Generator().manual_seed(1234)  # the same data in every run
    x = torch.randn(128, 8, generator=fixed)
    y = (x @ torch.randn(8, 3, generator=fixed)).argmax(1)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16,
                                         shuffle=True, generator=seeds.generator("data_order"))
    callback = TrainscopeCallback(name=name, experiment="lit", config=cfg,
                                  store="sqlite:" + str(store), watch=watch or WATCH)
    trainer = lightning.Trainer(max_epochs=2, callbacks=[callback], logger=False,
                                log_every_n_steps=1, accelerator="cpu", deterministic=True,
                                enable_progress_bar=False, enable_model_summary=False,
                                default_root_dir=str(tmp_path / name))
    trainer.fit(model, loader)
    return callback


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three fits into one store: a and b with one seed, c with another
    (seeds.master=1, as a study's $TRAINSCOPE_SET hands it)."""
    tmp = tmp_path_factory.mktemp("lightning")
    store = tmp / "l.db"
    fit(tmp, store, "a")
    fit(tmp, store, "b")
    os.environ["TRAINSCOPE_SET"] = "seeds.master=1"
    try:
        fit(tmp, store, "c")
    finally:
        del os.environ["TRAINSCOPE_SET"]
    return store, tmp


def test_a_fit_records_params_metrics_and_checkpoints(runs):
    store, tmp = runs
    j = show(store, "a")
    assert j["status"] == "finished" and j["experiment"] == "lit"
    params = j["params"]
    assert params["lr"] == "0.1" and params["seeds.master"] == "0"  # config=
    assert params["hparams.lr"] == "0.1" and params["hparams.hidden"] == "16"  # the module's
    assert params["trainer.max_epochs"] == "2" and params["trainer.optimizers"] == "SGD"
    assert j["tags"]["framework"] == "lightning" and j["tags"]["source"] == "python"
    metrics = {m["key"]: m for m in j["metric_summaries"]}
    # Lightning hands its loggers the steps of the batches that stepped: 0..15.
    assert metrics["train/loss"]["count"] == 16 and metrics["train/loss"]["last_step"] == 15
    assert metrics["epoch"]["last"] == 1
    artifacts = {a["name"]: a for a in j["artifacts"]}
    assert "checkpoints/epoch=1-step=16.ckpt" in artifacts, sorted(artifacts)
    ckpt = artifacts["checkpoints/epoch=1-step=16.ckpt"]
    assert ckpt["kind"] == "lightning.checkpoint"
    assert ckpt["size"] == (tmp / "a" / "checkpoints" / "epoch=1-step=16.ckpt").stat().st_size


def test_the_watch_fingerprints_profiles_and_probes_the_module(runs):
    store, _ = runs
    j = show(store, "a")
    assert j["records"]["fingerprints"] == 16, j["records"]  # one per optimizer step
    profile = cli(store, "profile", "show", "a").stdout
    assert "profiled iterations" in profile
    assert all(layer in profile for layer in ("net.0", "net.1", "net.2", "net.3")), profile
    probes = cli(store, "probes", "a", "--format", "csv").stdout
    assert "net.0,weights/l2," in probes and "net.3,weight_gradients/l2," in probes, probes


def test_one_seed_is_bit_identical_and_two_seeds_part_where_diff_says(runs):
    store, _ = runs
    same = json.loads(cli(store, "--json", "diff", "a", "b").stdout)
    assert same["bit_identical"] and same["common_steps"] == 16, same
    other = json.loads(cli(store, "--json", "diff", "a", "c").stdout)
    assert not other["bit_identical"] and other["first_diff_step"] == 1, other
    assert "net.0.weight" in other["differing_tensors"], other["differing_tensors"]
    assert [(c["key"], c["a"], c["b"]) for c in other["config"]] == [("seeds.master", "0", "1")]
    text = cli(store, "diff", "a", "c").stdout
    assert "first difference at step 1" in text, text


def test_a_fit_that_raises_ends_the_run_failed(tmp_path):
    store = tmp_path / "f.db"
    with pytest.raises(RuntimeError, match="a failing step"):
        fit(tmp_path, store, "fails", fail_at=5, watch={"fingerprint_every": 1})
    j = show(store, "fails")
    assert j["status"] == "failed"
    assert {m["key"]: m for m in j["metric_summaries"]}["train/loss"]["last_step"] == 4


SCRIPT = '''\
import sys, torch, lightning, trainscope
sys.path.insert(0, {here!r})
from test_lightning import Net
from trainscope.lightning import TrainscopeCallback
cfg = trainscope.config({{"lr": 0.1, "hidden": 16, "seeds": {{"master": 0}}}})
seeds = trainscope.setup(cfg)
model = Net(lr=cfg["lr"], hidden=cfg["hidden"])
fixed = torch.Generator().manual_seed(1234)
x = torch.randn(64, 8, generator=fixed)
y = (x @ torch.randn(8, 3, generator=fixed)).argmax(1)
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16,
                                     shuffle=True, generator=seeds.generator("data_order"))
lightning.Trainer(max_epochs=1, callbacks=[TrainscopeCallback(config=cfg, watch=False)],
                  logger=False, accelerator="cpu", enable_progress_bar=False, log_every_n_steps=1,
                  enable_model_summary=False, enable_checkpointing=False).fit(model, loader)
'''


def test_a_study_runs_a_lightning_script_as_it_runs_a_plain_one(tmp_path):
    """`study run` of a Lightning script: each planned run is the fit's
    run, under the study, with the seeds the study set ($TRAINSCOPE_SET
    through trainscope.config), and every reader counts the same runs."""
    (tmp_path / "lit.py").write_text(SCRIPT.format(here=os.path.dirname(__file__)))
    (tmp_path / "study.yaml").write_text(
        "study: lit-seeds\ncommand: python3 lit.py\nsources: [init]\nreplicates: 2\n"
        "threads_per_run: 1\n")
    store = tmp_path / "s.db"
    done = cli(store, "study", "run", str(tmp_path / "study.yaml"), "--logs",
               str(tmp_path / "logs"), check=False)
    assert done.returncode == 0, done.stderr + "".join(
        p.read_text() for p in (tmp_path / "logs").glob("*.log"))
    runs = [r for r in json.loads(cli(store, "--json", "runs", "list").stdout)
            if r["name"] != "lit-seeds"]
    assert sorted(r["name"] for r in runs) == ["init/r1", "init/r2"]
    study = show(store, "lit-seeds")
    inits = set()
    for r in runs:
        j = show(store, r["uuid"])
        assert j["parent"] == study["uuid"] and j["status"] == "finished"
        assert j["tags"]["framework"] == "lightning"
        inits.add(j["params"]["seeds.init"])
    assert len(inits) == 2  # each replicate its own init stream
    stats = json.loads(cli(store, "--json", "stats", "train/loss", "--study", "lit-seeds").stdout)
    assert [g["n"] for g in stats["groups"]] == [2], stats
