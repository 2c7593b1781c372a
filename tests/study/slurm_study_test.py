#!/usr/bin/env python3
"""A small study through the Slurm executor on a real single-node cluster
(tests/support/slurm_cluster.py) into a PostgreSQL store on a real server
(tests/support/pg_server.py, started by ctest): one sbatch job array, one
task cancelled with scancel while it trains, the study still completes,
and its report has the structure of the same study run by the local
executor into SQLite. The store's password never reaches the sbatch
script. Then a partition that does not exist.

  slurm_study_test.py TRAINSCOPE CONFIGS_DIR WORK_DIR POSTGRES_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLUSTER = os.path.join(HERE, "..", "support", "slurm_cluster.py")
sys.path.insert(0, os.path.join(HERE, "..", "support"))
from checks import Checks  # noqa: E402
import pg_server  # noqa: E402


def study_file(work, configs):
    path = os.path.join(work, "small.yaml")
    with open(path, "w") as f:
        f.write(f"study: small\nbase: {os.path.abspath(configs)}/demo.yaml\n"
                "set:\n  train.epochs: 3\n  data.train_subset: 6400\n  data.test_subset: 200\n"
                "  checkpoint.every_steps: 20\n"
                "grid:\n  optimizer.name: [adam, sgd]\nreplicates: 2\nvary: data_order\n"
                "retries: 2\n")
    return path


def report_shape(ts, store):
    """The report's structure: its keys, and each cell's name and keys."""
    out = subprocess.run([ts, "--store", store, "--json", "study", "report", "small",
                          "--no-weights"], capture_output=True, text=True, check=True).stdout
    r = json.loads(out)
    return sorted(r), [(c["cell"], c["runs"], sorted(c)) for c in r["cells"]]


def cancel_one_running_task(env, deadline=120):
    """scancel the first array task seen running; its id."""
    end = time.time() + deadline
    while time.time() < end:
        out = subprocess.run(["squeue", "-h", "-r", "-t", "RUNNING", "-o", "%i"], env=env,
                             capture_output=True, text=True).stdout.split()
        if out:
            time.sleep(0.3)  # inside its training, well before its end (~3 s)
            r = subprocess.run(["scancel", out[0]], env=env, capture_output=True, text=True)
            return out[0] if r.returncode == 0 else None
        time.sleep(0.1)
    return None


def command_lines_while(proc, ts):
    """Until `proc` ends: how many training processes of `ts` were seen,
    and those whose command line held the store's password. A local study
    forks its trainings from a warm worker: they show the worker's command
    line (`study worker ...`), the job's own travels on a socket."""
    seen, leaked = set(), []
    ts = os.path.realpath(ts)
    while proc.poll() is None:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    argv = f.read().decode(errors="replace").split("\0")
            except OSError:
                continue
            if (os.path.realpath(argv[0]) == ts and ("train" in argv or "worker" in argv)
                    and pid not in seen):
                seen.add(pid)
                if any(pg_server.PASSWORD in a for a in argv):
                    leaked.append(argv)
        time.sleep(0.05)
    proc.communicate()
    return len(seen), leaked


def main(ts, configs, work, pg_dir):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    expect = Checks()
    conf = subprocess.run([sys.executable, CLUSTER, "start", os.path.join(work, "slurm")],
                          capture_output=True, text=True)
    if conf.returncode != 0:
        sys.exit(f"could not start Slurm: {conf.stdout}{conf.stderr}")
    env = dict(os.environ, SLURM_CONF=conf.stdout.strip())
    try:
        spec = study_file(work, configs)
        database = f"slurm_study_{os.getpid()}"
        store = pg_server.createdb(pg_dir, database) + "?artifacts=" + os.path.join(work,
                                                                                    "artifacts")
        study = subprocess.Popen([ts, "-q", "--store", store, "study", "run", spec, "--executor",
                                  "slurm", "--array-parallelism", "2", "--logs",
                                  os.path.join(work, "logs")], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        cancelled = cancel_one_running_task(env)
        during = subprocess.run([ts, "--store", store, "--json", "study", "status", "small"],
                                env=env, capture_output=True, text=True)
        out, _ = study.communicate(timeout=600)
        print(out)
        expect(cancelled is not None, f"a running task was cancelled ({cancelled})")
        expect(study.returncode == 0 and "4/4 runs finished" in out,
               f"the study completed despite it (exit {study.returncode})")
        script = open(os.path.join(work, "logs", "array-1.sbatch")).read()
        expect("#SBATCH --array=0-3%2" in script and "#SBATCH --requeue" in script,
               "one job array of 4 tasks, 2 at once, requeued on preemption")
        expect("postgresql://" in script and pg_server.PASSWORD not in script,
               "the tasks write into PostgreSQL; the password is not in the script")
        hosts = subprocess.run(["psql", "-X", "-At", store.split("?")[0], "-c",
                                "SELECT count(*), count(DISTINCT pid) FROM runs "
                                "WHERE parent_id IS NOT NULL AND status = 'finished'"],
                               capture_output=True, text=True).stdout.strip()
        expect(hosts.startswith("4|"), f"PostgreSQL holds the 4 finished runs ({hosts})")
        expect(os.path.exists(os.path.join(work, "logs", "array-2.sbatch")),
               "the cancelled run went out again in a second array")
        # Slurm lists a finished array as COMPLETING until its epilog is
        # done (a moment, longer on a loaded machine): ask until it is gone.
        deadline = time.time() + 60
        while True:
            status = json.loads(subprocess.run([ts, "--store", store, "--json", "study",
                                                "status", "small"], capture_output=True,
                                               text=True).stdout)
            if status["slurm"]["queue"] == {} or time.time() > deadline:
                break
            time.sleep(0.5)
        expect(status["total"]["finished"] == 4, "study status: 4 of 4 finished")
        slurm = json.loads(during.stdout).get("slurm", {}) if during.returncode == 0 else {}
        expect(len(slurm.get("jobs", [])) >= 1 and slurm.get("error") is None
               and sum(slurm.get("queue", {}).values()) >= 1,
               f"study status while it ran showed Slurm's queue ({slurm})")
        expect(len(status["slurm"]["jobs"]) == 2 and status["slurm"]["queue"] == {},
               f"and after: both arrays, nothing queued ({status['slurm']})")

        local = pg_server.createdb(pg_dir, database + "_local")
        r = subprocess.Popen([ts, "-q", "--store", local, "study", "run", spec, "--logs",
                              os.path.join(work, "local-logs")], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        trainings, leaked = command_lines_while(r, ts)
        expect(r.returncode == 0, "the same study with the local executor")
        expect(trainings > 0 and not leaked,
               f"its {trainings} trainings seen in /proc have no password on their command "
               f"line ({leaked})")
        expect(report_shape(ts, store) == report_shape(ts, local),
               "the reports have the same structure (cells, runs per cell, fields)")

        bad_store = pg_server.createdb(pg_dir, database + "_bad")
        bad = subprocess.run([ts, "-q", "--store", bad_store, "study", "run", spec, "--executor",
                              "slurm", "--partition", "nope"], env=env, capture_output=True,
                             text=True)
        runs = subprocess.run([ts, "--store", bad_store, "--json", "runs", "list"],
                              capture_output=True, text=True).stdout
        expect(bad.returncode == 2 and "Slurm partition 'nope' does not exist" in bad.stderr
               and len(bad.stderr.strip().splitlines()) == 1 and json.loads(runs) == [],
               f"a partition that does not exist: exit 2, one line, no run recorded "
               f"({bad.stderr.strip()})")
    finally:
        subprocess.run([sys.executable, CLUSTER, "stop", os.path.join(work, "slurm")])
    return expect.verdict("slurm study", "complete through a job array, one task cancelled and "
                          "rerun")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
