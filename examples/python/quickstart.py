"""A PyTorch training of one's own, recorded and watched by trainscope.
    PYTHONPATH=build/python .venv/bin/python examples/python/quickstart.py
    build/bin/trainscope runs show quickstart      # profile show, probes, diff, serve
"""
import torch

import trainscope

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.BatchNorm2d(8),
                            torch.nn.ReLU(inplace=True), torch.nn.Flatten(),
                            torch.nn.Linear(8 * 26 * 26, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(256, 1, 28, 28), torch.randint(0, 10, (256,))
with trainscope.start_run(name="quickstart", config={"lr": 0.05, "batch": 32}) as run:
    run.watch(model, opt, fingerprint_every=5, profile_every=5, probes="economy", probes_every=5)
    for step in range(1, 41):
        i = step % 8 * 32
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[i:i + 32]), y[i:i + 32])
        loss.backward()
        opt.step()
        run.log({"train/loss": loss}, step=step)
