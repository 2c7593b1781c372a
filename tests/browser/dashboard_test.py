#!/usr/bin/env python3
"""The dashboard end to end: a store filled by real short trainings (two
runs to compare, a profiled run, a probed run, a small study, a run named
<script>...), `trainscope serve` on a free loopback port, and every page
opened in Debian's headless Chromium by check_dashboard.mjs, which also
trains a run live and measures how soon its new points show. Then what the
browser cannot see: the token on a non-loopback bind, and bad input.

  dashboard_test.py TRAINSCOPE CONFIGS_DIR CHECK_DASHBOARD_MJS WORK_DIR
  dashboard_test.py --fill-only TRAINSCOPE CONFIGS_DIR WORK_DIR   (keep the store)
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402

SMALL = ["--set", "train.epochs=1", "--set", "data.train_subset=2560",
         "--set", "data.test_subset=200"]
XSS_NAME = "<script>window.__xss=1</script>"


def run(argv, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"FAILED ({r.returncode}): {' '.join(argv)}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def fill(ts, configs, work):
    """Trains the runs every page needs; returns their UUIDs by role."""
    configs = os.path.abspath(configs)
    demo = os.path.join(configs, "demo.yaml")
    uuids = {}

    def train(role, *args):
        out = run(ts + ["--json", "train", demo, *SMALL, "--set", "fingerprint.every_steps=5",
                        *args])
        uuids[role] = json.loads(out)["run"]
        print(f"trained {role}: {uuids[role][:8]}", flush=True)

    # Two epochs: test metrics at two epoch ends, among the steps of train/loss.
    train("run", "--name", "seed-one", "--set", "seeds.master=1", "--set", "train.epochs=2")
    # With a capability's view (src/drift): its section on the run page.
    train("other", "--name", "seed-two", "--set", "seeds.master=2", "--set", "train.epochs=2",
          "--set", "drift.every=10")
    train("xss_run", "--name", XSS_NAME)
    train("ranks", "--name", "two-ranks", "--nproc", "2", "--set", "dist.bucket_mb=0.1")
    out = run(ts + ["--json", "profile", demo, "--steps", "12", "--name", "profiled",
                    "--set", "profile.warmup_steps=2", "--set", "profile.every=3",
                    "--set", "data.train_subset=2560", "--set", "data.test_subset=200"])
    uuids["profile"] = json.loads(out)["run"]
    # A learning rate 100x too high: the probes alert; histograms at "standard".
    out = run(ts + ["--json", "train", os.path.join(configs, "probes", "lr_too_high.yaml"),
                    "--name", "probed", "--set", "probes.preset=standard",
                    "--set", "data.train_subset=2560", "--set", "data.test_subset=200"])
    uuids["probes"] = json.loads(out)["run"]
    study = os.path.join(work, "study.yaml")
    with open(study, "w") as f:
        f.write(f"study: tiny\nbase: {demo}\n"
                "set:\n  train.epochs: 1\n  data.train_subset: 1024\n  data.test_subset: 200\n"
                "grid:\n  optimizer.name: [adam, sgd]\nreplicates: 2\nvary: data_order\n"
                "workers: 2\n")
    run(ts + ["study", "run", study])
    uuids["study"] = json.loads(run(ts + ["--json", "study", "status", "tiny"]))["study"]["uuid"]
    return uuids


class Server:
    """`trainscope serve` in the background; the URL it prints."""

    def __init__(self, ts, *args):
        self.proc = subprocess.Popen(ts + ["serve", "--port", "0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if " at http" not in line:
            sys.exit(f"serve did not start: {line}{self.proc.stderr.read()}")
        self.url = line.split(" at ")[1].split()[0]
        self.base = self.url.split("?")[0].rstrip("/")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def get(url, headers=None):
    """(status, parsed JSON or text) of a GET."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            body, status = r.read(), r.status
    except urllib.error.HTTPError as e:
        body, status = e.read(), e.code
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode(errors="replace")


def check_token(ts, check):
    """A non-loopback bind makes a token; requests without it get 401."""
    srv = Server(ts, "--bind", "0.0.0.0")
    try:
        token = srv.url.split("token=")[1]
        port = srv.base.rsplit(":", 1)[1]
        base = f"http://127.0.0.1:{port}"
        status, body = get(base + "/api/info")
        check(status == 401 and "token" in body["error"], "no token: 401 with a JSON error")
        check(get(base + "/api/runs", {"Authorization": "Bearer wrong"})[0] == 401,
               "a wrong token: 401")
        check(get(base + "/", {"Authorization": "Bearer wrong"})[0] == 401,
               "the page itself without the token: 401")
        check(get(base + "/api/runs", {"Authorization": "Bearer " + token})[0] == 200,
               "the right token as a bearer header: 200")
        check(get(f"{base}/api/info?token={token}")[0] == 200, "the token as ?token=: 200")
    finally:
        srv.stop()


def check_bad_input(ts, store, srv, uuids, check):
    port = srv.base.rsplit(":", 1)[1]
    r = subprocess.run(ts + ["serve", "--port", port], capture_output=True, text=True)
    check(r.returncode == 2 and f"cannot listen on 127.0.0.1:{port}" in r.stderr
           and len(r.stderr.strip().splitlines()) == 1,
           f"a port in use: exit 2, one line ({r.returncode}: {r.stderr.strip()})")
    missing = ts[:1] + ["--store", "sqlite:" + store + ".missing", "serve", "--port", "0"]
    r = subprocess.run(missing, capture_output=True, text=True)
    check(r.returncode == 3 and "does not exist" in r.stderr and not os.path.exists(
        store + ".missing"), f"a store that does not exist: exit 3, not created "
        f"({r.returncode}: {r.stderr.strip()})")
    status, body = get(srv.base + "/api/runs/no-such-run")
    check(status == 404 and "no run matches" in body["error"], "an unknown run: 404 JSON")
    status, body = get(srv.base + "/api/runs?filter=metrics.x%20%3E")
    check(status == 400 and "filter column" in body["error"], "a malformed filter: 400 naming "
           "the column")
    status, body = get(srv.base + "/api/runs/" + uuids["run"] + "/metric?key=no/such")
    check(status == 404, "an unknown metric key: 404")
    req = urllib.request.Request(srv.base + "/api/runs/" + uuids["run"] + "/tags/x", data=b"1",
                                 method="PUT")
    try:
        urllib.request.urlopen(req, timeout=10)
        status = 200
    except urllib.error.HTTPError as e:
        status = e.code
    check(status == 403, "a write to a read-only server: 403")


def main(argv):
    if argv[0] == "--fill-only":
        cli, configs, work = argv[1:4]
        os.makedirs(work, exist_ok=True)
        store = os.path.join(work, "store.db")
        print(json.dumps(fill([cli, "-q", "--store", "sqlite:" + store], configs, work)))
        return 0
    cli, configs, check_mjs, work = argv
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    store = os.path.join(work, "store.db")
    ts = [cli, "-q", "--store", "sqlite:" + store]
    uuids = fill(ts, configs, work)
    check = Checks()
    srv = Server(ts)
    try:
        demo = os.path.join(configs, "demo.yaml")
        scenario = {
            "base": srv.base, "shots": os.path.join(work, "screenshots"),
            # Rows of the table: a study's runs are nested under it.
            "runs_total": len(get(srv.base + "/api/runs?limit=1000&nest=parent")[1]["runs"]),
            "run": uuids["run"], "compare": [uuids["run"], uuids["other"]],
            "profile": uuids["profile"], "probes": uuids["probes"], "study": uuids["study"],
            "xss_run": uuids["xss_run"], "views": uuids["other"], "xss_name": XSS_NAME, "ranks": uuids["ranks"],
            # ~9 s of training, a point every step: ~40 flushes to watch arrive.
            "live": {"argv": ts + ["train", demo, "--name", "live-run",
                                   "--set", "train.epochs=8", "--set", "data.train_subset=12800",
                                   "--set", "data.test_subset=200",
                                   "--set", "train.log_every_steps=1"],
                     "name": "live-run", "key": "train/loss"},
        }
        os.makedirs(scenario["shots"], exist_ok=True)
        with open(os.path.join(work, "scenario.json"), "w") as f:
            json.dump(scenario, f, indent=1)
        r = subprocess.run(["node", check_mjs, os.path.join(work, "scenario.json")],
                           capture_output=True, text=True, timeout=600)
        print(r.stdout + r.stderr, flush=True)
        check(r.returncode == 0, "every page in Chromium")
        check_bad_input(ts, store, srv, uuids, check)
    finally:
        srv.stop()
    check_token(ts, check)
    return check.verdict("dashboard", "every page rendered, live points within 1 s, token and "
                         "bad input checked")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
