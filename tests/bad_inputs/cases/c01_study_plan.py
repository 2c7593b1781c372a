"""1. A study is its recorded plan: resume trains what was planned, and a
study's files changed on disk since are refused, naming the key; status and
report read the store alone."""
import os

TITLE = "1. A study is its recorded plan"

BASE = ("data: {dataset: synthetic, synthetic: {size: 256}}\n"
        "model: {name: mlp, hidden: 16}\ntrain: {epochs: 1, batch_size: 64}\n"
        "monitor: {interval_s: 0}\n")


def study(d, name):
    """A finished two-run study NAME in $DIR/NAME/, one of its runs deleted
    so that a resume has something to train."""
    os.makedirs(f"{d}/{name}")
    with open(f"{d}/{name}/base.yaml", "w") as f:
        f.write(BASE)
    with open(f"{d}/{name}/study.yaml", "w") as f:
        f.write(f"study: {name}\nbase: base.yaml\nsources: [init]\nreplicates: 2\nworkers: 2\n")
    return f"$TS -q study run $DIR/{name}/study.yaml && $TS -q runs delete --yes " \
           f"\"$($TS runs list --filter \"name = 'init/r2' and experiment = '{name}'\" " \
           f"--format csv | tail -1 | cut -d, -f1)\""


def fixtures(d, run):
    for name in ("edited", "restudied", "moved"):
        run(study(d, name))
    with open(f"{d}/edited/base.yaml", "w") as f:
        f.write(BASE.replace("epochs: 1", "epochs: 3"))
    with open(f"{d}/restudied/study.yaml", "a") as f:
        f.write("set: {optimizer.lr: 0.01}\n")
    os.rename(f"{d}/moved", f"{d}/moved-away")


CASES = [
    ("resuming a study whose base config changed since it was planned",
     "$TS study resume edited"),
    ("resuming a study whose study file changed since it was planned",
     "$TS study resume restudied"),
    ("the status of a study whose files moved away", "$TS study status moved > /dev/null",
     {"ok": True}),
    ("the report of a study whose files moved away",
     "$TS study report moved --format md --no-weights > /dev/null", {"ok": True}),
    ("planning again a study whose files moved away", "$TS study resume moved --replan"),
    ("resuming a study whose files moved away (its recorded plan is trained)",
     "$TS -q study resume moved > /dev/null", {"ok": True}),
]
