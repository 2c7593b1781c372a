"""docs/seeds.md, table §5: the pathologies BRIEF §5's library set out to
detect, made on purpose in a PyTorch script of one's own and watched by
trainscope's probes (Run.watch, preset standard): each run is one case of
brief5_pathologies.yaml, which hands it its settings.

  healthy      a 6-layer MLP, kaiming init, SGD at 0.05
  lr_too_high  the same at a learning rate 50x higher
  bad_init     the same with every weight divided by 30 at the start
  saturation   tanh instead of ReLU, every weight times 8 at the start

A fixed synthetic task (its own generator): the same data in every run.
"""
import torch

import trainscope

cfg = trainscope.config({"case": "healthy", "steps": 120, "lr": 0.05,
                         "seeds": {"master": 0}})
seeds = trainscope.setup(cfg)

fixed = torch.Generator().manual_seed(1234)
x = torch.randn(2048, 32, generator=fixed)
y = (x @ torch.randn(32, 8, generator=fixed)).argmax(1)
test_x, test_y = x[1536:], y[1536:]

case = cfg["case"]
act = torch.nn.Tanh if case == "saturation" else torch.nn.ReLU
layers = []
for i, (n_in, n_out) in enumerate([(32, 128)] + [(128, 128)] * 4 + [(128, 8)]):
    layers.append(torch.nn.Linear(n_in, n_out))
    if i < 5:
        layers.append(act())
model = torch.nn.Sequential(*layers)
with torch.no_grad():
    for m in model:
        if isinstance(m, torch.nn.Linear):
            torch.nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            m.bias.zero_()
            if case == "bad_init":
                m.weight /= 30
            if case == "saturation":
                m.weight *= 8
lr = cfg["lr"] * (50 if case == "lr_too_high" else 1)
opt = torch.optim.SGD(model.parameters(), lr=lr)
order = seeds.generator("data_order")

with trainscope.start_run(experiment="brief5_pathologies", config=cfg) as run:
    run.watch(model, opt, probes="standard", probes_every=1)
    for step in range(1, cfg["steps"] + 1):
        idx = torch.randint(0, 1536, (64,), generator=order)
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[idx]), y[idx])
        loss.backward()
        opt.step()
        run.log({"train/loss": loss}, step=step)
    with torch.no_grad():
        accuracy = (model(test_x).argmax(1) == test_y).float().mean()
    run.log({"test/accuracy": accuracy}, step=cfg["steps"])
