#!/usr/bin/env python3
"""A unit built apart from trainscope (tests/capability/sign_flips.cc as a
shared library of its own) loads into the CLI and the Python package through
TRAINSCOPE_UNITS: its config key is known to `config keys`, a training with
`--set sign_flips.every=2` records its records, a Python run that watches a
model records them too, and a bad library is one line with exit 2.

  load_test.py TRAINSCOPE UNIT_LIBRARY CONFIGS WORKDIR [PYTHON PYTHONPATH]
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys

ts, lib, configs, work = (os.path.abspath(a) for a in sys.argv[1:5])
python, pypath = (sys.argv[5:7] + ["", ""])[:2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
db = os.path.join(work, "u.db")
SMALL = ["--set", "data.dataset=synthetic", "--set", "data.synthetic.size=256",
         "--set", "train.epochs=1", "--set", "train.batch_size=32", "--no-progress", "-q"]


def cli(args, units=None, timeout=120, cwd=None):
    env = {k: v for k, v in os.environ.items() if k != "TRAINSCOPE_UNITS"}
    if units is not None:
        env["TRAINSCOPE_UNITS"] = units
    return subprocess.run([ts, "--store", "sqlite:" + db] + args, env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=cwd)


def refused(p, *words):
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("trainscope: "), \
        (p.returncode, p.stderr)
    for w in words:
        assert w in lines[0], (w, lines[0])
    return lines[0]


def records(run):
    with sqlite3.connect(db) as c:
        return c.execute("select r.key, r.step from records r join runs u on u.id = r.run_id "
                         "where u.name = ? and r.kind = 'sign_flips' order by r.step, r.key",
                         (run,)).fetchall()


# Without the library, its key is unknown; with it, `config keys` lists it.
refused(cli(["config", "show", f"{configs}/demo.yaml", "--set", "sign_flips.every=2"]),
        "unknown key 'sign_flips.every'")
keys = cli(["config", "keys"], units=lib)
assert keys.returncode == 0 and "sign_flips.every" in keys.stdout, keys.stderr

# A bare file name is the file here, not one of the library path's.
keys = cli(["config", "keys"], units=os.path.basename(lib), cwd=os.path.dirname(lib))
assert keys.returncode == 0 and "sign_flips.every" in keys.stdout, keys.stderr

# A training records the unit's records every 2nd step, for each weight
# matrix; the environment manifest names the library.
p = cli(["train", f"{configs}/demo.yaml", "--name", "flips", "--set", "sign_flips.every=2"] + SMALL,
        units=lib)
assert p.returncode == 0, p.stderr
got = records("flips")
steps = sorted({s for _, s in got})
assert steps and steps[0] == 2 and all(s % 2 == 0 for s in steps), steps
assert {k for k, _ in got} >= {"features.conv1.weight", "classifier.fc2.weight"}, got[:4]
env = cli(["runs", "show", "flips", "--json"], units=lib)
shown = json.loads(env.stdout)
assert shown["records"].get("sign_flips") == len(got), shown["records"]
with sqlite3.connect(db) as c:
    (named,) = c.execute("select e.value from environment e join runs r on r.id = e.run_id "
                         "where r.name = 'flips' and e.key = 'env.TRAINSCOPE_UNITS'").fetchone()
assert named == lib, named

# The same library named twice loads once; off by default.
p = cli(["train", f"{configs}/demo.yaml", "--name", "twice"] + SMALL, units=lib + ":" + lib)
assert p.returncode == 0 and records("twice") == [], p.stderr

# Bad libraries: one line each, exit 2, nothing blocks.
missing = os.path.join(work, "absent.so")
refused(cli(["runs", "list"], units=missing), "TRAINSCOPE_UNITS", "absent.so")
fifo = os.path.join(work, "fifo.so")
os.mkfifo(fifo)
refused(cli(["runs", "list"], units=fifo, timeout=20), "TRAINSCOPE_UNITS", "FIFO")
text = os.path.join(work, "text.so")
with open(text, "w") as f:
    f.write("not a library\n")
refused(cli(["runs", "list"], units=text), "cannot load unit library", "text.so")
libm = next(p for p in ["/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
                        "/lib64/libm.so.6"] if os.path.exists(p))
refused(cli(["runs", "list"], units=libm), "registers no unit")
# A copy of the library under another name registers the same unit again.
copy = os.path.join(work, "copy.so")
shutil.copy(lib, copy)
refused(cli(["config", "keys"], units=lib + ":" + copy), "copy.so", "did not register")
assert records("flips") == got  # nothing recorded was touched

# A Python run loads it as the CLI does, and its watch attaches the unit.
if python and os.path.exists(os.path.join(pypath, "trainscope")):
    script = f"""
import torch, trainscope
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.5)
with trainscope.start_run(name="py-flips", store="sqlite:{db}") as run:
    run.watch(model, opt, fingerprint_every=0, monitor_interval=0,
              settings=["sign_flips.every=1"])
    for _ in range(4):
        opt.zero_grad()
        model(torch.randn(16, 4)).pow(2).mean().backward()
        opt.step()
"""
    env = dict(os.environ, TRAINSCOPE_UNITS=lib, PYTHONPATH=pypath)
    p = subprocess.run([python, "-c", script], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    py = records("py-flips")
    assert sorted({s for _, s in py}) == [1, 2, 3, 4] and {k for k, _ in py} == {"0.weight",
                                                                             "1.weight"}, py
    print(f"units: a Python run recorded {len(py)} sign_flips records")
print(f"units: the unit built apart loaded and recorded {len(got)} records over steps "
      f"{steps[0]}..{steps[-1]}")
