"""A PyTorch training of one's own, recorded by trainscope; run alone
    PYTHONPATH=build/python .venv/bin/python examples/python/train_mlp.py
or as the runs of a study, which hands each run its settings:
    build/bin/trainscope study run examples/python/sources.yaml
"""
import torch

import trainscope

cfg = trainscope.config({"lr": 0.1, "epochs": 2, "batch_size": 32, "hidden": 32,
                         "seeds": {"master": 0}})
seeds = trainscope.setup(cfg)  # threads, and the init stream for what follows

# A fixed synthetic task: its own generator, the same data in every run.
fixed = torch.Generator().manual_seed(1234)
x = torch.randn(1024, 16, generator=fixed)
y = (x @ torch.randn(16, 4, generator=fixed)).argmax(1)
train = torch.utils.data.TensorDataset(x[:768], y[:768])
test_x, test_y = x[768:], y[768:]

model = torch.nn.Sequential(torch.nn.Linear(16, cfg["hidden"]), torch.nn.ReLU(),
                            torch.nn.Dropout(0.1), torch.nn.Linear(cfg["hidden"], 4))
seeds.use("dropout")  # dropout masks from their own stream
opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"])
loader = torch.utils.data.DataLoader(train, batch_size=cfg["batch_size"], shuffle=True,
                                     generator=seeds.generator("data_order"))

with trainscope.start_run(experiment="python-mlp", config=cfg) as run:
    run.watch(model, opt, fingerprint_every=1)
    run.log({"init/weight_sum": model[0].weight.sum()}, step=0)
    step = 0
    for epoch in range(cfg["epochs"]):
        model.train()
        for xb, yb in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            step += 1
            run.log({"train/loss": loss}, step=step)
        model.eval()
        with torch.no_grad():
            accuracy = (model(test_x).argmax(1) == test_y).float().mean()
        run.log({"test/accuracy": accuracy}, step=step)
