"""The per-layer profile of PyTorch models of one's own (Run.watch with
profile_every): the models the issue names (an MLP, a CNN with a residual
block, in-place ReLU and BatchNorm, a layer shared by two paths, nested
containers, an evaluation under no_grad between steps, a loop without an
optimizer), read back with `trainscope profile show` as a user would."""
import json
import os
import subprocess

import pytest
import torch

import trainscope

CLI = os.environ["TS_CLI"]


def profile(store, run):
    out = subprocess.run([CLI, "--store", "sqlite:" + store, "--json", "profile", "show", run],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


@pytest.fixture
def store(tmp_path):
    return str(tmp_path / "p.db")


class Block(torch.nn.Module):
    """conv -> BatchNorm -> + x -> in-place ReLU (after a hooked module)."""

    def __init__(self, c):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(c)
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.bn(self.conv(x)) + x)


class ResidualCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3, padding=1),
                                        torch.nn.BatchNorm2d(8), torch.nn.ReLU(inplace=True))
        self.block = Block(8)
        self.pool = torch.nn.MaxPool2d(2)
        self.head = torch.nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.pool(self.block(self.stem(x))), 1))


class Shared(torch.nn.Module):
    """One Linear used on two paths (weight sharing)."""

    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(12, 16)
        self.shared = torch.nn.Linear(16, 16)
        self.out = torch.nn.Linear(16, 3)

    def forward(self, x):
        h = torch.relu(self.inp(x))
        return self.out(self.shared(h) + self.shared(torch.tanh(h)))


def train(store, name, model, x, y, steps, optimizer=None, evaluate=False, **watch):
    with trainscope.start_run(name=name, store="sqlite:" + store) as run:
        run.watch(model, optimizer, **watch)
        for step in range(1, steps + 1):
            if optimizer is not None:
                optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            if optimizer is not None:
                optimizer.step()
            else:  # plain SGD by hand: the step ends where the loop says
                with torch.no_grad():
                    for p in model.parameters():
                        p -= 0.01 * p.grad
                        p.grad = None
                run.step_done()
            if evaluate:
                model.eval()
                with torch.no_grad():
                    model(x)
                model.train()
    return run


def layers(p):
    return {layer["layer"]: layer for layer in p["layers"]}


def test_a_residual_cnn_with_in_place_relu_and_batchnorm_is_accounted_for(store):
    torch.manual_seed(0)
    model = ResidualCNN()
    x, y = torch.randn(32, 1, 16, 16), torch.randint(0, 10, (32,))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    # Time the process spends descheduled between two hooks is in no
    # category: on a loaded machine (CI's -j2) one iteration of four read
    # 45%. The claim is that an iteration the machine leaves alone is
    # accounted for, so a noisy training is trained again (at most twice).
    for attempt in range(3):
        train(store, f"cnn{attempt}", model, x, y, 12, opt, evaluate=True, profile_every=3,
              profile_warmup=2)
        p = profile(store, f"cnn{attempt}")
        if p["coverage_min"] >= 0.97:
            break
    assert p["profiled_iterations"] == 4  # steps 3, 6, 9, 12
    assert [layer["layer"] for layer in p["layers"]] == [
        "stem.0", "stem.1", "stem.2", "block.conv", "block.bn", "block.relu", "pool", "head"]
    by = layers(p)
    for name in ("stem.0", "stem.1", "block.conv", "block.bn", "head"):
        assert by[name]["forward_us"] > 0 and by[name]["backward_us"] > 0, by[name]
        assert by[name]["update_us"] > 0, by[name]  # Adam's moments are charged to the layer
    assert by["block.conv"]["type"] == "Conv2d"
    assert by["block.conv"]["forward_flops"] == 2 * 8 * 9 * 8 * 16 * 16 * 32
    assert by["head"]["forward_flops"] == 2 * 512 * 10 * 32
    assert p["coverage_min"] >= 0.97, p["coverage_min"]
    # The categories and the layers add up to the iteration.
    total = sum(layer["forward_us"] + layer["backward_us"] + layer["update_us"]
                for layer in p["layers"]) + sum(p["categories_us"].values())
    assert total == pytest.approx(p["wall_us"], rel=0.02)


def test_a_shared_layer_is_one_layer_and_an_mlp_without_an_optimizer_is_profiled(store):
    torch.manual_seed(1)
    model = Shared()
    x, y = torch.randn(64, 12), torch.randint(0, 3, (64,))
    train(store, "shared", model, x, y, 6, None, profile_every=1, profile_warmup=0)
    p = profile(store, "shared")
    assert p["profiled_iterations"] == 6
    assert [layer["layer"] for layer in p["layers"]] == ["inp", "shared", "out"]
    shared = layers(p)["shared"]
    # Called twice a step: both calls' forward and backward are its own.
    assert shared["forward_us"] > 0 and shared["backward_us"] > 0
    assert shared["update_us"] > 0  # the hand-written update touches its parameters
    assert p["coverage_min"] >= 0.97, p["coverage_min"]


def test_steps_outside_the_profile_cost_no_hooks_and_are_timed(store):
    torch.manual_seed(2)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    x, y = torch.randn(16, 8), torch.randint(0, 2, (16,))
    opt = torch.optim.SGD(model.parameters(), 0.1)
    seen = []

    def count(module, inputs, output):  # training passes only, not a unit's replay
        if torch.is_grad_enabled():
            seen.append(len(module._forward_hooks))

    model[0].register_forward_hook(count)
    train(store, "mlp", model, x, y, 10, opt, profile_every=5, profile_warmup=1)
    # Profiled steps 2 and 7 add a hook to each layer; the other steps none.
    assert seen == [1, 2, 1, 1, 1, 1, 2, 1, 1, 1], seen
    p = profile(store, "mlp")
    assert p["profiled_iterations"] == 2
    out = subprocess.run([CLI, "--store", "sqlite:" + store, "metrics", "mlp",
                          "profile/step_ms_unprofiled", "--format", "csv"],
                         check=True, capture_output=True, text=True).stdout
    assert len(out.splitlines()) == 1 + 8


def test_a_failed_run_records_no_profile_and_backward_is_restored(store):
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), 0.1)
    original = torch.Tensor.backward
    with pytest.raises(RuntimeError, match="boom"):
        with trainscope.start_run(name="boom", store="sqlite:" + store) as run:
            run.watch(model, opt, profile_every=1, profile_warmup=0)
            assert torch.Tensor.backward is not original
            for _ in range(3):
                opt.zero_grad()
                model(torch.randn(2, 4)).sum().backward()
                opt.step()
            raise RuntimeError("boom")
    assert torch.Tensor.backward is original
    got = subprocess.run([CLI, "--store", "sqlite:" + store, "profile", "show", "boom"],
                         capture_output=True, text=True)
    assert got.returncode != 0 and "no profile" in got.stderr.lower(), got.stderr


def test_bad_profile_settings_are_one_line_errors(store):
    model = torch.nn.Linear(4, 2)
    with trainscope.start_run(name="bad", store="sqlite:" + store) as run:
        with pytest.raises(ValueError, match=r"watch\(\): profile.every=0: profile.every must be"):
            run.watch(model, None, profile_every=0)
