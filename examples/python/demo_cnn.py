"""The demo CNN of configs/demo.yaml written in PyTorch-Python, started from
the trainer's initial weights and fed the trainer's batches, so that a run
of it and `trainscope train configs/demo.yaml` differ only in the framework
that trains: PyTorch's Python front end, autograd called from Python and
torch.optim, against trainscope's C++ loop on the same libtorch.

    PYTHONPATH=build/python python3 examples/python/demo_cnn.py configs/demo.yaml
    trainscope train configs/demo.yaml --name demo-libtorch
    trainscope diff demo-libtorch demo-pytorch

Settings: `--set key=value`, the config's keys as for `trainscope train`.
In a study (`command:`, docs/frameworks.md), the planned run's settings
($TRAINSCOPE_SET) come first, and `framework=libtorch` hands the run to
`trainscope train` with the same settings: one study file has the
framework as a factor.
"""
import argparse
import os
import shutil
import sys
import time
from collections import OrderedDict

import torch
import torch.nn.functional as F
from torch import nn

import trainscope

FRAMEWORKS = ("pytorch", "libtorch")


class DemoCNN(nn.Module):
    """src/models/models.cc, make_demo_cnn: the same layers, the same names."""

    def __init__(self, channels, flat, classes):
        super().__init__()
        self.features = nn.Sequential(OrderedDict(
            conv1=nn.Conv2d(channels, 16, 3, 1, 1), relu1=nn.ReLU(), pool1=nn.MaxPool2d(2),
            conv2=nn.Conv2d(16, 32, 3, 1, 1), relu2=nn.ReLU(), pool2=nn.MaxPool2d(2)))
        self.classifier = nn.Sequential(OrderedDict(
            fc1=nn.Linear(flat, 128), relu=nn.ReLU(), fc2=nn.Linear(128, classes)))

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))

    @classmethod
    def like(cls, state):
        """The model whose tensors have the shapes of `state`."""
        return cls(state["features.conv1.weight"].shape[1], state["classifier.fc1.weight"].shape[1],
                   state["classifier.fc2.weight"].shape[0])


def optimizer(params, model):
    """torch.optim's optimizer of the config (SGD or Adam, constant lr)."""
    if params["schedule.name"] != "constant" or params["model.dropout"] != "0":
        sys.exit("demo_cnn.py: schedule.name must be constant and model.dropout 0 here")
    lr, wd = float(params["optimizer.lr"]), float(params["optimizer.weight_decay"])
    if params["optimizer.name"] == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, weight_decay=wd,
                               momentum=float(params["optimizer.momentum"]),
                               nesterov=params["optimizer.nesterov"] == "true")
    if params["optimizer.name"] == "adam":
        return torch.optim.Adam(model.parameters(), lr=lr, weight_decay=wd,
                                betas=(float(params["optimizer.beta1"]),
                                       float(params["optimizer.beta2"])),
                                eps=float(params["optimizer.eps"]))
    sys.exit(f"demo_cnn.py: optimizer.name {params['optimizer.name']}: sgd or adam here")


def evaluate(model, test, batch_size):
    """Test loss and accuracy, as the trainer's evaluation computes them."""
    x, y = test
    model.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for i in range(0, len(y), batch_size):
            out = model(x[i:i + batch_size])
            loss += F.cross_entropy(out, y[i:i + batch_size], reduction="sum").item()
            correct += int(out.argmax(1).eq(y[i:i + batch_size]).sum())
    model.train()
    return loss / len(y), correct / len(y)


def train_epoch(model, opt, batches, run, step):
    """One epoch; returns the step reached, the loss sum, correct, seen."""
    loss_sum, correct, seen = 0.0, 0, 0
    lr = opt.param_groups[0]["lr"]
    for x, y in batches:
        opt.zero_grad(set_to_none=True)
        out = model(x)
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        step += 1
        value = loss.item()
        run.log({"train/loss": value, "lr": lr}, step=step)
        loss_sum += value * len(y)
        correct += int(out.argmax(1).eq(y).sum())
        seen += len(y)
    return step, loss_sum, correct, seen


def train(inputs, run):
    p = inputs.params
    model = inputs.initialise(DemoCNN.like(inputs.initial_state()))
    opt = optimizer(p, model)
    run.watch(model, opt, fingerprint_every=int(p["fingerprint.every_steps"]),
              monitor_interval=float(p["monitor.interval_s"]))
    step, accuracy = 0, 0.0
    for epoch in range(int(p["train.epochs"])):
        started = time.monotonic()
        batches = inputs.epoch(epoch)
        steps = len(batches)
        step, loss_sum, correct, seen = train_epoch(model, opt, batches, run, step)
        seconds = time.monotonic() - started
        loss, accuracy = evaluate(model, inputs.test(), int(p["eval.batch_size"]))
        e1 = epoch + 1
        run.log({"test/loss": loss, "test/accuracy": accuracy, "train/epoch_loss": loss_sum / seen,
                 "train/accuracy": correct / seen, "epoch_time_s": seconds,
                 "samples_per_s": seen / seconds, "steps_per_s": steps / seconds}, step=e1)
        run.log({"epoch": e1}, step=step)
        print(f"epoch {e1}: test accuracy {accuracy:.4f}, {seconds:.1f} s", flush=True)
    return accuracy


def as_libtorch(config, sets):
    """Hands this run to `trainscope train` (the study's planned run and
    store are in the environment, which it reads)."""
    program = os.environ.get("TRAINSCOPE_PROGRAM") or shutil.which("trainscope")
    if not program:
        sys.exit("demo_cnn.py: framework=libtorch needs `trainscope` on PATH")
    argv = [program, "-q", "train", config, "--no-progress"]
    for s in sets:
        argv += ["--set", s]
    os.environ["TRAINSCOPE_TAGS"] = "framework=libtorch"
    os.execv(program, argv)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", nargs="?", default="configs/demo.yaml")
    ap.add_argument("--set", action="append", default=[], help="key=value, as for train")
    ap.add_argument("--name", default="demo-pytorch")
    args = ap.parse_args()
    sets, framework = [], "pytorch"
    for line in os.environ.get("TRAINSCOPE_SET", "").splitlines() + args.set:
        if line.startswith("framework="):
            framework = line.partition("=")[2]
        elif line.strip():
            sets.append(line)
    if framework not in FRAMEWORKS:
        sys.exit(f"demo_cnn.py: framework={framework}: give one of {', '.join(FRAMEWORKS)}")
    if framework == "libtorch":
        as_libtorch(args.config, sets)
    inputs = trainscope.TrainerInputs(args.config, sets)
    p = inputs.params
    own = {}
    for key, value in p.items():
        section, _, rest = key.partition(".")
        if section in ("seeds", "compute", "determinism"):
            own.setdefault(section, {})[rest] = value
    trainscope.setup(own)
    with trainscope.start_run(name=args.name, experiment=p["run.experiment"], config=p,
                              tags={"framework": "pytorch", **inputs.data_tags},
                              environment=inputs.data_environment) as run:
        train(inputs, run)


if __name__ == "__main__":
    main()
