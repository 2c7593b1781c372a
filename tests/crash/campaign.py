#!/usr/bin/python3
"""Crash campaign: SIGKILL at random moments of training, resuming, and a
study, then check what the store holds.

    campaign.py TRAINSCOPE_BIN CONFIG_DIR WORK_DIR [--kills N] [--seed S]

Trains a reference run to the end, then a victim of the same config that is
killed with SIGKILL at a random moment, resumed, killed again ... until it
finishes; then the next victim. A study of 4 runs on 2 workers is killed and
resumed the same way. After every kill:
  - `PRAGMA integrity_check` of the store is "ok";
  - every metric point a reader saw just before the kill is still there.
Every finished victim must be bit-identical to the reference (`trainscope
diff`: fingerprints of every step), and the study's runs must each finish
once. Prints one line per kill and a summary; exits 1 on the first failure.
"""
import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

CONFIG = """
data: {dataset: fashion-mnist, train_subset: 1280, test_subset: 200}
model: {name: demo_cnn, dropout: 0.2}
optimizer: {name: sgd, lr: 0.05, momentum: 0.9}
train: {epochs: 2, batch_size: 64}
checkpoint: {every_steps: 5}
fingerprint: {every_steps: 1}
monitor: {interval_s: 0.2}
"""

STUDY = """study: crash
base: {cfg}
set:
  train.epochs: 2
  data.train_subset: 1280
  data.test_subset: 100
grid:
  seeds.master: [1, 2]
replicates: 2
vary: data_order
retries: 2
workers: 2
"""


def parse():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bin")
    ap.add_argument("config_dir")
    ap.add_argument("work")
    ap.add_argument("--kills", type=int, default=24)
    ap.add_argument("--seed", type=int, default=1)
    return ap.parse_args()


class Campaign:
    def __init__(self, a):
        self.a = a
        self.rng = random.Random(a.seed)
        os.makedirs(a.work, exist_ok=True)
        self.db = os.path.join(a.work, "crash.db")
        for f in (self.db, self.db + "-wal", self.db + "-shm"):
            if os.path.exists(f):
                os.remove(f)
        self.cfg = os.path.join(a.work, "crash.yaml")
        with open(self.cfg, "w") as f:
            f.write(CONFIG)
        self.kills = 0

    def cli(self, *args):
        return [self.a.bin, "-q", "--store", "sqlite:" + self.db, *args]

    def run(self, *args):
        return subprocess.run(self.cli(*args), capture_output=True, text=True)

    def fail(self, what):
        print(f"FAIL after {self.kills} kills: {what}", flush=True)
        sys.exit(1)

    def points(self, run, key="train/loss"):
        r = self.run("--json", "metrics", run, key)
        if r.returncode != 0:
            return set()
        return {(p["step"], json.dumps(p["value"])) for p in json.loads(r.stdout)["points"]}

    def check_store(self, seen, run):
        con = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        ok = con.execute("PRAGMA integrity_check").fetchone()[0]
        con.close()
        if ok != "ok":
            self.fail(f"integrity_check: {ok}")
        now = self.points(run) if run else set()
        lost = seen - now
        if lost:
            self.fail(f"{len(lost)} points seen before the kill are gone, e.g. {sorted(lost)[:3]}")

    def kill_at_random(self, args, run, lo=0.3, hi=2.0):
        """Starts a command, kills it at a random moment; True if it ended first."""
        p = subprocess.Popen(self.cli(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + self.rng.uniform(lo, hi)
        while time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.02)
        seen = self.points(run) if run else set()
        if p.poll() is not None:
            return True
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        self.kills += 1
        self.check_store(seen, run)
        what = f"{args[0]} {args[1]}" + (f" {run}, {len(seen)} loss points seen" if run else "")
        print(f"kill {self.kills}: {what}: integrity ok, nothing seen was lost", flush=True)
        return False

    def status(self, name):
        info = self.run("--json", "runs", "show", name)
        if info.returncode != 0:
            return None, False
        j = json.loads(info.stdout)
        return j.get("status"), '"checkpoint"' in info.stdout

    def victim(self, name):
        fresh = ["train", self.cfg, "--name", name, "--no-progress"]
        args = fresh
        while True:
            self.kill_at_random(args, name, 0.1 * self.duration, 0.95 * self.duration)
            status, resumable = self.status(name)
            if status == "finished":
                break
            if resumable:
                args = ["train", self.cfg, "--resume", name, "--no-progress"]
            else:  # killed before its first checkpoint: start over
                if status:
                    self.run("runs", "delete", name, "--yes")
                args = fresh
            if self.kills >= self.a.kills:  # the kills are spent: finish undisturbed
                r = self.run(*args)
                if r.returncode != 0:
                    self.fail(f"{' '.join(args[:2])} {name}: {r.stderr.strip()}")
                break
        d = self.run("diff", "reference", name, "--no-replay")
        if "BIT-IDENTICAL" not in d.stdout:
            self.fail(f"{name} differs from the reference:\n{d.stdout}{d.stderr}")
        print(f"{name}: finished, bit-identical to the reference", flush=True)

    def study(self):
        spec = os.path.join(self.a.work, "crash-study.yaml")
        with open(spec, "w") as f:
            f.write(STUDY.format(cfg=self.cfg))
        args = ["study", "run", spec]
        while not self.kill_at_random(args, None, 0.3 * self.duration, 2 * self.duration):
            args = ["study", "resume", "crash"]
        r = self.run("--json", "study", "status", "crash")
        status = json.loads(r.stdout)
        total = status.get("total", {})
        if total.get("finished") != 4:
            self.fail(f"study after resume: {total}")
        print("study: 4 runs finished once each", flush=True)

    def main(self):
        t0 = time.monotonic()
        r = self.run("train", self.cfg, "--name", "reference", "--no-progress")
        self.duration = time.monotonic() - t0
        if r.returncode != 0:
            self.fail(f"reference run: {r.stderr}")
        n = 0
        while self.kills < self.a.kills:
            n += 1
            self.victim(f"victim{n}")
            if n == 1 and self.kills < self.a.kills:
                self.study()
        print(f"campaign: {self.kills} SIGKILLs, {n} victims bit-identical, store intact")


if __name__ == "__main__":
    Campaign(parse()).main()
