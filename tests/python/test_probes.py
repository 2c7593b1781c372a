"""Probes, alerts, TensorBoard and the resource sampler on PyTorch models of
one's own (Run.watch with probes=...): the same units as a C++ run, read back
with `trainscope probes` and `runs show` as a user would."""
import json
import os
import struct
import subprocess

import pytest
import torch

import trainscope

CLI = os.environ["TS_CLI"]


def cli(store, *args, check=True):
    return subprocess.run([CLI, "--store", "sqlite:" + store, *args], check=check,
                          capture_output=True, text=True)


def points(store, run, *filters):
    rows = json.loads(cli(store, "probes", run, "--format", "json", *filters).stdout)
    out = {}
    for r in rows:
        out.setdefault((r["layer"], r["series"]), []).append((r["step"], r["value"]))
    return out


@pytest.fixture
def store(tmp_path):
    return str(tmp_path / "p.db")


class Net(torch.nn.Module):
    """BatchNorm, an in-place ReLU after it (a hooked module's output changed
    in place), a nested block and a ReLU module used twice."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.relu = torch.nn.ReLU(inplace=True)
        self.head = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4 * 8 * 8, 16))
        self.out = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.out(self.relu(self.head(self.relu(self.bn(self.conv(x))))))


def train(store, name, steps=8, lr=0.05, **watch):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    x, y = torch.randn(16, 1, 8, 8), torch.randint(0, 3, (16,))
    with trainscope.start_run(name=name, store="sqlite:" + store) as run:
        run.watch(model, opt, **watch)
        for _ in range(steps):
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
    return model, run


def test_the_standard_preset_probes_every_layer_of_a_model_of_ones_own(store):
    model, run = train(store, "std", probes="standard", probes_every=2, monitor_interval=0)
    p = points(store, "std")
    layers = {layer for layer, _ in p}
    assert {"conv", "bn", "relu", "head.1", "out"} <= layers, layers
    steps = [s for s, _ in p[("conv", "weights/l2")]]
    assert steps == [2, 4, 6, 8]
    # What the probes saw is the model's own: the last weight norm is the model's.
    last = p[("out", "weights/l2")][-1][1]
    assert last == pytest.approx(model.out.weight.detach().norm().item(), rel=1e-5)
    # Activations and the gradients of the layers' outputs, in-place ReLU included.
    assert ("relu", "activations/zero_fraction") in p and ("bn", "layer_gradients/l2") in p
    assert all(v > 0 for _, v in p[("conv", "weight_gradients/l2")])
    shown = json.loads(cli(store, "--json", "runs", "show", "std").stdout)
    assert shown["records"]["histograms"] > 0
    events = [a for a in shown["artifacts"] if a["kind"] == "tensorboard"]
    assert len(events) == 1
    with open(events[0]["path"], "rb") as f:  # TFRecord framing: length, crc, data, crc
        (length,) = struct.unpack("<Q", f.read(8))
        assert 0 < length < 1 << 20


def test_a_learning_rate_too_high_raises_the_alert(store):
    train(store, "hot", steps=12, lr=50.0, probes="economy", probes_every=1, monitor_interval=0)
    out = cli(store, "probes", "hot").stdout
    assert "alert at step" in out and "update_ratio" in out, out


def test_probes_select_layers_and_a_selection_of_nothing_is_one_line(store):
    train(store, "sel", probes="economy", probes_every=2, monitor_interval=0,
          settings=["probes.layers=head.*"])
    assert {layer for layer, _ in points(store, "sel")} - {""} == {"head.1"}  # "": the loss
    model = Net()
    with trainscope.start_run(name="none", store="sqlite:" + store) as run:
        with pytest.raises(ValueError, match="no layer matches layers 'nothing'.*conv"):
            run.watch(model, None, probes="economy", settings=["probes.layers=nothing"])
            for _ in range(2):
                model(torch.randn(2, 1, 8, 8)).sum().backward()
                run.step_done()


def test_a_layer_whose_name_holds_a_slash_reads_back_whole(store):
    # Twenty-ninth hunt, A-D1: add_module('enc/0') was read back as layer 'enc'
    # with series '0/weights/l2', and --layer 'enc/0' exited 3.
    torch.manual_seed(0)
    model = torch.nn.Sequential()
    model.add_module("enc/0", torch.nn.Linear(4, 3))
    model.add_module("head", torch.nn.Linear(3, 2))
    with trainscope.start_run(name="slash", store="sqlite:" + store) as run:
        run.watch(model, None, probes="economy", probes_every=1, monitor_interval=0)
        for _ in range(2):
            model(torch.randn(5, 4)).sum().backward()
            run.step_done()
    p = points(store, "slash", "--layer", "enc/0")
    assert {layer for layer, _ in p} == {"enc/0"}, p
    assert ("enc/0", "weights/l2") in p
    assert p[("enc/0", "weights/l2")][-1][1] == pytest.approx(
        model.get_submodule("enc/0").weight.detach().norm().item(), rel=1e-5)


def test_a_watch_setting_no_unit_reads_is_refused(store):
    # Eleventh hunt, B-D9: optimizer.lr was taken and read by nothing.
    model = Net()
    with trainscope.start_run(name="keys", store="sqlite:" + store) as run:
        for line in ("optimizer.lr=0.5", "dist.world_size=2", "seeds.master=3"):
            key = line.split("=")[0]
            with pytest.raises(ValueError, match=(
                    f"^watch\\(\\) setting '{line}': no unit it attaches reads '{key}' "
                    r"\(they read drift\.\*, fingerprint\.\*, monitor\.\*, probes\.\*, "
                    r"profile\.\*\); a setting of the script's own goes to trainscope\.config\(\)$")):
                run.watch(model, None, settings=[line])


def test_the_resource_sampler_records_the_process(store):
    train(store, "mon", steps=40, monitor_interval=0.05)
    shown = json.loads(cli(store, "--json", "runs", "show", "mon").stdout)
    keys = {m["key"] for m in shown["metric_summaries"]}
    assert "sys/mem_used_mib" in keys or any(k.startswith("proc/") for k in keys), keys
