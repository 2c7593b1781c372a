"""trainscope.transformers: a real `transformers.Trainer` training of a tiny
BERT built from a config (no download; CPU, a few seconds) on seeded random
tokens, recorded by TrainscopeCallback and read back with the CLI as a
user would (TS_CLI, PYTHONPATH: set by ctest; requirements/interop.txt
installs transformers and accelerate)."""
import json
import os
import subprocess

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

import trainscope  # noqa: E402
from trainscope.transformers import TrainscopeCallback, trainer_seeds  # noqa: E402

CLI = os.environ["TS_CLI"]
WATCH = {"profile_every": 4, "profile_warmup": 1, "probes": "economy", "probes_every": 2}


def cli(store, *args, check=True):
    return subprocess.run([CLI, "--store", "sqlite:" + str(store), *args], check=check,
                          capture_output=True, text=True)


def show(store, run):
    return json.loads(cli(store, "--json", "runs", "show", run).stdout)


class Tokens(torch.utils.data.Dataset):
    """64 fixed sequences of 12 random tokens, labelled by the first token's
    parity; item `fail_at` raises."""

    def __init__(self, fail_at=-1):
        fixed = torch.Generator().manual_seed(1234)
        self.ids = torch.randint(0, 64, (64, 12), generator=fixed)
        self.fail_at = fail_at

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        if i == self.fail_at:
            raise RuntimeError("a failing batch")
        return {"input_ids": self.ids[i], "labels": self.ids[i, 0] % 2}


def train(tmp_path, store, name, fail_at=-1, watch=None):
    """A plain script's lines: the config (a study's settings from
    $TRAINSCOPE_SET applied), the seeds, the model from a config, train."""
    cfg = trainscope.config({"lr": 1e-3, "seeds": {"master": 0}})
    seeds = trainscope.setup(cfg)
    model = transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=16, num_labels=2))
    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / name), per_device_train_batch_size=8, num_train_epochs=2,
        learning_rate=cfg["lr"], logging_steps=2, save_strategy="steps", save_steps=8,
        report_to=[], use_cpu=True, disable_tqdm=True, **trainer_seeds(seeds))
    with TrainscopeCallback(name=name, experiment="hf", config=cfg, store="sqlite:" + str(store),
                            watch=watch or WATCH) as callback:
        trainer = transformers.Trainer(model=model, args=args, train_dataset=Tokens(fail_at),
                                       callbacks=[callback])
        trainer.train()
    return callback


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three trainings into one store: a and b with one seed, c with
    another (seeds.master=1, as a study's $TRAINSCOPE_SET hands it)."""
    tmp = tmp_path_factory.mktemp("transformers")
    store = tmp / "h.db"
    train(tmp, store, "a")
    train(tmp, store, "b")
    os.environ["TRAINSCOPE_SET"] = "seeds.master=1"
    try:
        train(tmp, store, "c")
    finally:
        del os.environ["TRAINSCOPE_SET"]
    return store, tmp


def test_a_training_records_arguments_config_metrics_and_checkpoints(runs):
    store, tmp = runs
    j = show(store, "a")
    assert j["status"] == "finished" and j["experiment"] == "hf"
    params = j["params"]
    assert params["lr"] == "0.001" and params["seeds.master"] == "0"  # config=
    assert params["args.learning_rate"] == "0.001" and params["args.num_train_epochs"] == "2"
    assert params["args.seed"] == str(trainer_seeds(trainscope.setup(
        {"seeds": {"master": 0}}, apply=False))["seed"])
    assert params["model.hidden_size"] == "32" and params["model.num_hidden_layers"] == "2"
    assert j["tags"]["framework"] == "transformers"
    metrics = {m["key"]: m for m in j["metric_summaries"]}
    assert metrics["train/loss"]["count"] == 8 and metrics["train/loss"]["last_step"] == 16
    assert metrics["train/learning_rate"]["count"] == 8
    assert metrics["train/train_runtime"]["last_step"] == 16  # the final summary
    artifacts = {a["name"]: a for a in j["artifacts"]}
    for step in (8, 16):
        name = f"checkpoints/checkpoint-{step}/model.safetensors"
        assert artifacts[name]["kind"] == "transformers.checkpoint", sorted(artifacts)
        on_disk = tmp / "a" / f"checkpoint-{step}" / "model.safetensors"
        assert artifacts[name]["size"] == on_disk.stat().st_size


def test_the_watch_fingerprints_profiles_and_probes_the_model(runs):
    store, _ = runs
    assert show(store, "a")["records"]["fingerprints"] == 16  # one per optimizer step
    profile = cli(store, "profile", "show", "a").stdout
    assert "profiled iterations" in profile and "bert.encoder.layer.1.output.dense" in profile
    probes = cli(store, "probes", "a", "--format", "csv").stdout
    assert "classifier,weights/l2," in probes, probes[:2000]


def test_one_seed_is_bit_identical_and_two_seeds_part_where_diff_says(runs):
    store, _ = runs
    same = json.loads(cli(store, "--json", "diff", "a", "b").stdout)
    assert same["bit_identical"] and same["common_steps"] == 16, same
    other = json.loads(cli(store, "--json", "diff", "a", "c").stdout)
    assert not other["bit_identical"] and other["first_diff_step"] == 1, other
    assert "classifier.weight" in other["differing_tensors"], other["differing_tensors"]
    assert "loss" in other["differing_tensors"]  # the loss, from the Trainer's backward
    # The seeds, and the Trainer's seeds trainer_seeds() took from them, differ.
    differ = {c["key"].removeprefix("config."): (c["a"], c["b"]) for c in other["config"]}
    assert differ["seeds.master"] == ("0", "1"), differ
    assert {"args.seed", "args.data_seed"} <= set(differ), differ


def test_a_training_that_raises_ends_the_run_failed(tmp_path):
    store = tmp_path / "f.db"
    with pytest.raises(RuntimeError, match="a failing batch"):
        train(tmp_path, store, "fails", fail_at=5, watch={"fingerprint_every": 1})
    assert show(store, "fails")["status"] == "failed"
