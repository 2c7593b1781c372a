#!/usr/bin/env python3
"""drift end to end, as a user meets it: its key in `config keys`; a CLI
training with drift.every=2 records one record per weight tensor every 2nd
step; `runs view` lists and prints it as a table, CSV and JSON; the
dashboard's API serves the same JSON; a Python run records the distances a
hand computation gives; a run without it is refused in one line.

Run by CTest (cmake/TrainscopeUnit.cmake) with TS_CLI, TS_CONFIGS, TS_WORK,
TS_PYTHON and TS_PYTHONPATH in the environment.
"""
import csv
import io
import json
import math
import os
import shutil
import subprocess
import sys
import urllib.request

ts, configs, work = os.environ["TS_CLI"], os.environ["TS_CONFIGS"], os.environ["TS_WORK"]
python, pypath = os.environ.get("TS_PYTHON", ""), os.environ.get("TS_PYTHONPATH", "")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
store = "sqlite:" + os.path.join(work, "d.db")
SMALL = ["--set", "data.dataset=synthetic", "--set", "data.synthetic.size=256",
         "--set", "train.epochs=1", "--set", "train.batch_size=32", "--no-progress", "-q"]


def cli(*args, check=True):
    p = subprocess.run([ts, "--store", store, *args], capture_output=True, text=True, timeout=240)
    if check:
        assert p.returncode == 0, (args, p.returncode, p.stderr)
    return p


# Its key is one of the config's.
assert "drift.every" in cli("config", "keys").stdout

# A training records it every 2nd step for each weight tensor of 2+ dimensions.
cli("train", f"{configs}/demo.yaml", "--name", "drifting", "--set", "drift.every=2", *SMALL)
view = json.loads(cli("runs", "view", "drifting", "drift", "--json").stdout)
assert view["name"] == "drift" and view["columns"] == ["tensor", "step", "drift", "from_step"], view
rows = view["rows"]
tensors = sorted({r[0] for r in rows})
steps = sorted({r[1] for r in rows})
assert "features.conv1.weight" in tensors and "classifier.fc2.weight" in tensors, tensors
assert not any(t.endswith(".bias") for t in tensors), tensors
assert steps[0] == 2 and all(s % 2 == 0 for s in steps) and len(rows) == len(tensors) * len(steps)
assert all(r[3] == 0 and isinstance(r[2], float) and 0 < r[2] < 10 for r in rows), rows[:3]
# Training moves the weights away: each tensor is further at the end than at step 2.
for t in tensors:
    mine = [r[2] for r in rows if r[0] == t]
    assert mine[-1] > mine[0], (t, mine)
assert view["chart"] == {"series": "tensor", "x": "step", "y": "drift", "log_y": False}

# The listing names it; the table and the CSV hold the same rows.
listing = cli("runs", "view", "drifting").stdout
assert "drift" in listing and "Distance from the initial weights" in listing, listing
listed = [{"name": "drift", "title": "Distance from the initial weights", "records": len(rows)}]
assert json.loads(cli("runs", "view", "drifting", "--json").stdout) == listed
# -f json and -f csv list too (the sixteenth hunt, A-D1: the listing was
# always the table).
assert json.loads(cli("runs", "view", "drifting", "-f", "json").stdout) == listed
assert list(csv.reader(io.StringIO(cli("runs", "view", "drifting", "-f", "csv").stdout))) == [
    ["name", "title", "records"], ["drift", "Distance from the initial weights", str(len(rows))]]
table = cli("runs", "view", "drifting", "drift").stdout.splitlines()
assert table[0].split() == ["TENSOR", "STEP", "DRIFT", "FROM_STEP"] and len(table) == len(rows) + 1
got = list(csv.reader(io.StringIO(cli("runs", "view", "drifting", "drift", "-f", "csv").stdout)))
assert got[0] == view["columns"] and len(got) == len(rows) + 1
assert all(float(c[2]) == r[2] for c, r in zip(got[1:], rows))  # CSV numbers round-trip

# A run without it: one line, exit 3 (not found); an unknown view names the views.
cli("train", f"{configs}/demo.yaml", "--name", "still", *SMALL)
p = cli("runs", "view", "still", "drift", check=False)
assert p.returncode == 3 and p.stderr.count("\n") == 1 and "no drift records" in p.stderr, p.stderr
assert "no capability's view" in cli("runs", "view", "still").stdout
p = cli("runs", "view", "drifting", "nope", check=False)
assert p.returncode == 3 and "no view 'nope'" in p.stderr and "drift" in p.stderr, p.stderr

# A training that diverges: its weights go NaN, and so do their distances,
# which every reader shows (the twenty-seventh hunt, B-D3: its own records
# were called a damaged store, exit 5).
cli("train", f"{configs}/mlp.yaml", "--name", "diverged", "--set", "drift.every=1",
    "--set", "optimizer.lr=1e30", "--set", "train.max_steps=6", *SMALL, check=False)
gone = json.loads(cli("runs", "view", "diverged", "drift", "--json").stdout)["rows"]
assert any(r[2] == "nan" or (isinstance(r[2], float) and math.isnan(r[2])) for r in gone), gone
assert "nan" in cli("runs", "view", "diverged", "drift", "-f", "csv").stdout

# The dashboard's API: the run page lists the view and serves the CLI's JSON.
server = subprocess.Popen([ts, "--store", store, "serve", "--port", "0"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
try:
    line = server.stdout.readline()
    url = line[line.index("http://"):].split()[0].rstrip("/")
    uuid = view["run"]

    def get(path):
        with urllib.request.urlopen(url + path, timeout=30) as r:
            return json.load(r)

    page = get(f"/api/runs/{uuid}")
    assert page["views"] == [{"name": "drift", "title": "Distance from the initial weights"}]
    served = get(f"/api/runs/{uuid}/views/drift")
    assert served == {**{k: v for k, v in view.items() if k != "run"},
                      "total_rows": len(rows), "sampled": False}, served.keys()
    # A chart's sample: every k-th row, saying so.
    few = get(f"/api/runs/{uuid}/views/drift?max_rows=5")
    assert few["sampled"] and few["total_rows"] == len(rows) and 1 < len(few["rows"]) <= 5, few
    assert few["rows"][0] == rows[0] and all(r in rows for r in few["rows"]), (few["rows"], rows[:3])
    try:
        get(f"/api/runs/{uuid}/views/nope")
        raise AssertionError("an unknown view was served")
    except urllib.error.HTTPError as e:
        assert e.code == 404, e.code
finally:
    server.terminate()
    server.wait(timeout=30)

# A Python run attaches it like every unit; its numbers are the hand-computed ones.
if python and os.path.exists(os.path.join(pypath, "trainscope")):
    script = f"""
import json, torch, trainscope
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))
w0 = {{n: p.detach().clone() for n, p in model.named_parameters()}}
opt = torch.optim.SGD(model.parameters(), lr=0.5)
want = []
with trainscope.start_run(name="py-drift", store="{store}") as run:
    run.watch(model, opt, fingerprint_every=0, monitor_interval=0, settings=["drift.every=1"])
    for step in range(1, 4):
        opt.zero_grad()
        model(torch.randn(16, 4)).pow(2).mean().backward()
        opt.step()
        for n, p in model.named_parameters():
            if p.dim() > 1:
                want.append([n, step, ((p.detach() - w0[n]).norm() / w0[n].norm()).item()])
print(json.dumps(want))
"""
    p = subprocess.run([python, "-c", script], env=dict(os.environ, PYTHONPATH=pypath),
                       capture_output=True, text=True, timeout=240)
    assert p.returncode == 0, p.stderr
    want = json.loads(p.stdout.strip().splitlines()[-1])
    py = json.loads(cli("runs", "view", "py-drift", "drift", "--json").stdout)["rows"]
    assert [r[:2] for r in py] == [w[:2] for w in want], (py, want)
    for r, w in zip(py, want):
        assert math.isclose(r[2], w[2], rel_tol=1e-5), (r, w)
    print(f"drift: a Python run recorded {len(py)} records equal to the hand-computed distances")
print(f"drift: {len(rows)} records over steps {steps[0]}..{steps[-1]} for {len(tensors)} tensors, "
      "read alike by the CLI, CSV, JSON and the dashboard's API")
