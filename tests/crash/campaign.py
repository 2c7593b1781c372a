#!/usr/bin/python3
"""Crash campaign: SIGKILL at random moments of training, resuming, and a
study, and SIGSTOP pauses of training; then check what the store holds.

    campaign.py TRAINSCOPE_BIN CONFIG_DIR WORK_DIR [--kills N] [--pauses P]
                [--seed S]

Trains a reference run to the end, then a victim of the same config that is
killed with SIGKILL at a random moment, resumed, killed again ... until it
finishes; then the next victim. A study of 4 runs on 2 workers is killed and
resumed the same way. After every kill:
  - `PRAGMA integrity_check` of the store is "ok";
  - every metric point a reader saw just before the kill is still there.
The first P attempts of the victims are also paused at a random moment: the
training is stopped with SIGSTOP (outside a store write, as a write lock
held while stopped blocks every other writer) and its heartbeat made an hour
old, as if it had been paused for longer than the stale threshold; then
  - the run is still "running" (a paused process of this host is alive: it
    is never reaped), also after a writer opened the store;
  - `train --resume` of it is refused with exit 4 (a run has one writer);
and SIGCONT lets it go on (to be killed later or to finish).
Every finished victim must be bit-identical to the reference (`trainscope
diff`: fingerprints of every step) with exactly one train/loss point per
step, and the study's runs must each finish once. Prints one line per kill
and pause and a summary; exits 1 on the first failure.
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
    ap.add_argument("--pauses", type=int, default=2)
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
        self.pauses = 0

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

    def steps(self, run, key="train/loss"):
        """The steps of every point of a key, in order, repeats included."""
        r = self.run("--json", "metrics", run, key)
        if r.returncode != 0:
            self.fail(f"metrics {run} {key}: {r.stderr.strip()}")
        return [p["step"] for p in json.loads(r.stdout)["points"]]

    def stop_and_age(self, p, name):
        """SIGSTOPs p while it holds no write lock of the store and makes its
        run's heartbeat an hour old; the number of runs aged (0: p does not
        write the run yet, or no more)."""
        for _ in range(100):
            os.kill(p.pid, signal.SIGSTOP)
            con = sqlite3.connect(self.db, timeout=0.3, isolation_level=None)
            try:
                con.execute("BEGIN IMMEDIATE")
                n = con.execute("UPDATE runs SET heartbeat = heartbeat - 3600 WHERE name = ? "
                                "AND status = 'running' AND pid = ?", (name, p.pid)).rowcount
                con.execute("COMMIT")
                return n
            except sqlite3.OperationalError:  # it was inside a write: let it finish
                os.kill(p.pid, signal.SIGCONT)
                time.sleep(0.05)
            finally:
                con.close()
        self.fail(f"could not pause {name} outside a store write")

    def pause(self, p, name):
        """A pause longer than the stale threshold; False if the run was not
        running at that moment (then nothing was checked)."""
        if self.stop_and_age(p, name) == 0:
            os.kill(p.pid, signal.SIGCONT)
            return False
        if self.status(name)[0] != "running":
            self.fail(f"paused {name} was marked {self.status(name)[0]} by a reader")
        r = self.run("train", self.cfg, "--resume", name, "--no-progress")
        if r.returncode != 4 or "still running" not in r.stderr:
            self.fail(f"resume of paused {name}: exit {r.returncode}: {r.stderr.strip()}")
        status = self.status(name)[0]  # the resume opened the store as a writer
        if status != "running":
            self.fail(f"paused {name} was reaped: {status}")
        os.kill(p.pid, signal.SIGCONT)
        self.pauses += 1
        print(f"pause {self.pauses}: {name} stopped, heartbeat an hour old: still running, "
              f"resume refused (exit 4), continued", flush=True)
        return True

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

    def kill_at_random(self, args, run, lo=0.3, hi=2.0, kill=True):
        """Starts a command and kills it at a random moment (kill=False: lets it
        end), pausing a training once at an earlier random moment while pauses
        remain; True if it ended first."""
        p = subprocess.Popen(self.cli(*args), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        start = time.monotonic()
        deadline = start + self.rng.uniform(lo, hi) if kill else float("inf")
        pause_at = None
        if run and self.pauses < self.a.pauses:
            pause_at = self.rng.uniform(start, min(deadline, start + hi))
        while time.monotonic() < deadline and p.poll() is None:
            if pause_at is not None and time.monotonic() >= pause_at:
                pause_at = None
                paused = time.monotonic()
                self.pause(p, run)
                deadline += time.monotonic() - paused  # the kill lands as far into training
            time.sleep(0.02)
        seen = self.points(run) if run else set()
        if p.poll() is not None:
            if not kill and p.returncode != 0:
                self.fail(f"{' '.join(args[:2])} {run}: {p.stderr.read().decode().strip()}")
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
            if self.kills >= self.a.kills:  # the kills are spent: finish (a pause aside)
                self.kill_at_random(args, name, 0.1 * self.duration, 0.95 * self.duration,
                                    kill=False)
                break
        d = self.run("diff", "reference", name, "--no-replay")
        if "BIT-IDENTICAL" not in d.stdout:
            self.fail(f"{name} differs from the reference:\n{d.stdout}{d.stderr}")
        steps = self.steps(name)
        if len(set(steps)) != len(steps) or sorted(steps) != self.reference_steps:
            repeated = sorted({s for s in steps if steps.count(s) > 1})
            self.fail(f"{name}: {len(steps)} train/loss points for {len(self.reference_steps)} "
                      f"steps (repeated: {repeated[:5]})")
        print(f"{name}: finished, bit-identical to the reference, one point per step", flush=True)

    def study(self):
        spec = os.path.join(self.a.work, "crash-study.yaml")
        with open(spec, "w") as f:
            f.write(STUDY.format(cfg=self.cfg))
        args = ["study", "run", spec]
        while not self.kill_at_random(args, None, 0.3 * self.duration, 2 * self.duration):
            args = ["study", "resume", "crash"]
        # A resume started just after a SIGKILL may find a planned run's
        # trainer still ending (it follows its killed parent within moments):
        # it leaves that run to it and says to resume when it ends (exit 1),
        # as a user then does.
        for _ in range(60):
            r = self.run("study", "resume", "crash")
            if r.returncode != 1 or "another process is training" not in r.stderr:
                break
            time.sleep(1)
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
        self.reference_steps = sorted(self.steps("reference"))
        n = 0
        while self.kills < self.a.kills or self.pauses < self.a.pauses:
            n += 1
            self.victim(f"victim{n}")
            if n == 1 and self.kills < self.a.kills:
                self.study()
        print(f"campaign: {self.kills} SIGKILLs, {n} victims bit-identical, store intact; "
              f"{self.pauses} SIGSTOP pauses: never reaped, resume refused")


if __name__ == "__main__":
    Campaign(parse()).main()
