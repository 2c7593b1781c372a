"""Ranks that are not children of one launcher: started by hand on two
"hosts" (two network namespaces joined by a veth pair, so that the
rendezvous and Gloo's traffic leave loopback), and as the tasks of `srun`
on the test Slurm cluster. Run by ctest (Dist.Namespaces, Dist.Slurm) with
TS_CLI set; needs root for the namespaces."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

CLI = os.environ["TS_CLI"]
ROOT = pathlib.Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "configs" / "demo.yaml")
SMALL = ["data.train_subset=2048", "data.test_subset=500", "train.epochs=1",
         "optimizer.name=sgd", "optimizer.lr=0.05", "dist.nproc=2", "dist.timeout_s=30"]
NETS = {0: ("tsdist0", "tsveth0", "10.231.7.1"), 1: ("tsdist1", "tsveth1", "10.231.7.2")}


def sets(extra=()):
    out = []
    for s in SMALL + list(extra):
        out += ["--set", s]
    return out


def show(store, run):
    done = subprocess.run([CLI, "--store", "sqlite:" + str(store), "--json", "runs", "show", run],
                          check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@pytest.fixture(scope="module")
def namespaces():
    """Two namespaces, each with one end of a veth pair and an address on
    10.231.7.0/24: two hosts as far as the ranks can tell."""
    for ns, _, _ in NETS.values():
        ip("netns", "del", ns, check=False)
    made = ip("netns", "add", NETS[0][0], check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot make a network namespace here: {made.stderr.strip()}")
    ip("netns", "add", NETS[1][0])
    ip("link", "add", NETS[0][1], "type", "veth", "peer", "name", NETS[1][1])
    for ns, dev, addr in NETS.values():
        ip("link", "set", dev, "netns", ns)
        ip("-n", ns, "addr", "add", addr + "/24", "dev", dev)
        ip("-n", ns, "link", "set", dev, "up")
        ip("-n", ns, "link", "set", "lo", "up")
    yield
    for ns, _, _ in NETS.values():
        ip("netns", "del", ns, check=False)


def start_rank(rank, store, name, extra=(), port=29617):
    """Rank `rank` in its own namespace, told where rank 0 is by the
    TRAINSCOPE_DIST_* variables, as a user would on each host."""
    ns = NETS[rank][0]
    env = dict(os.environ, TRAINSCOPE_DIST_RANK=str(rank), TRAINSCOPE_DIST_WORLD_SIZE="2",
               TRAINSCOPE_DIST_ADDR=NETS[0][2], TRAINSCOPE_DIST_PORT=str(port))
    cmd = ["ip", "netns", "exec", ns, CLI, "--store", "sqlite:" + str(store), "train", DEMO,
           "--name", name, "--no-progress", *sets(extra)]
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_two_hosts_train_one_run_over_the_veth_pair(tmp_path, namespaces):
    store = tmp_path / "s.db"
    ranks = [start_rank(r, store, "hosts") for r in (0, 1)]
    outs = [p.communicate(timeout=600) for p in ranks]
    assert [p.returncode for p in ranks] == [0, 0], outs
    assert outs[1] == ("", ""), outs[1]  # rank 1 is quiet
    run = show(store, "hosts")
    tags = run["tags"]
    assert run["status"] == "finished" and "dist.replica_mismatch" not in tags
    assert tags["dist.rendezvous"] == "environment" and tags["dist.world_size"] == "2"
    # Gloo bound each rank to its namespace's address: the gradients went
    # over the veth pair, not loopback.
    assert tags["dist.addresses"] == f"{NETS[0][2]},{NETS[1][2]}", tags


def test_a_killed_host_ends_the_other_with_its_address(tmp_path, namespaces):
    store = tmp_path / "s.db"
    ranks = [start_rank(r, store, "killed", ["data.train_subset=60000"], port=29618)
             for r in (0, 1)]
    deadline = time.time() + 120
    while time.time() < deadline:  # until rank 0 has recorded a few steps
        out = subprocess.run([CLI, "--store", "sqlite:" + str(store), "--json", "metrics",
                              "killed", "train/loss"], capture_output=True, text=True)
        if out.returncode == 0 and len(json.loads(out.stdout)["points"]) >= 3:
            break
        time.sleep(0.2)
    ranks[1].send_signal(signal.SIGKILL)  # `ip netns exec` execs the rank itself
    killed = time.time()
    _, err = ranks[0].communicate(timeout=120)
    assert time.time() - killed < 60
    ranks[1].communicate()
    assert ranks[0].returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("trainscope: rank 0:"), err
    assert NETS[1][2] in lines[0], err  # Gloo names the peer that went away
    assert show(store, "killed")["status"] == "failed"


def test_ranks_with_different_configs_are_refused(tmp_path):
    """On loopback: rank 1 trains another learning rate than rank 0."""
    store = tmp_path / "s.db"
    base = dict(os.environ, TRAINSCOPE_DIST_WORLD_SIZE="2", TRAINSCOPE_DIST_PORT="29619")
    procs = []
    for rank, lr in ((0, "0.05"), (1, "0.1")):
        env = dict(base, TRAINSCOPE_DIST_RANK=str(rank))
        procs.append(subprocess.Popen(
            [CLI, "--store", "sqlite:" + str(store), "train", DEMO, "--name", "mixed",
             "--no-progress", *sets([f"optimizer.lr={lr}"])], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=120) for p in procs]
    assert procs[1].returncode == 2, outs
    assert outs[1][1].strip() == ("trainscope: rank 1's config differs from rank 0's: every rank "
                                  "must train the same config (the same file and --set values)")
    assert procs[0].returncode != 0 and show(store, "mixed")["status"] == "failed", outs


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    if subprocess.run(["which", "slurmctld"], capture_output=True).returncode != 0:
        pytest.skip("slurm-wlm is not installed")
    folder = tmp_path_factory.mktemp("slurm")
    helper = str(ROOT / "tests" / "support" / "slurm_cluster.py")
    conf = subprocess.run([sys.executable, helper, "start", str(folder)], check=True,
                          capture_output=True, text=True).stdout.strip()
    yield dict(os.environ, SLURM_CONF=conf)
    subprocess.run([sys.executable, helper, "stop", str(folder)])


def test_srun_tasks_are_the_ranks(tmp_path, slurm):
    store = tmp_path / "s.db"
    # Two tasks on the one node (--overcommit: CI has two cores).
    srun = ["srun", "--overcommit", "--kill-on-bad-exit=1"]
    done = subprocess.run([*srun, "--ntasks", "2", CLI, "--store", "sqlite:" + str(store),
                           "train", DEMO, "--name", "slurm", "--no-progress", *sets()],
                          env=slurm, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    # Rank 1 is quiet: one result line, rank 0's.
    assert done.stdout.count("finished: 16 steps") == 1, done.stdout
    run = show(store, "slurm")
    assert run["status"] == "finished" and "dist.replica_mismatch" not in run["tags"]
    assert run["tags"]["dist.rendezvous"] == "slurm" and run["tags"]["dist.world_size"] == "2"
    # A task count that is not the config's world size: one line from each
    # task, which exits 2 (srun's own code depends on which task it saw
    # first, since --kill-on-bad-exit ends the others).
    done = subprocess.run([*srun, "--ntasks", "3", CLI, "--store", "sqlite:" + str(store),
                           "train", DEMO, "--no-progress", *sets()], env=slurm,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0, done.stderr
    ours = [line for line in done.stderr.splitlines() if line.startswith("trainscope:")]
    assert ours and all("SLURM_NTASKS=3 but the config's dist.nproc is 2" in line
                        for line in ours), done.stderr
    assert done.returncode == 2 or "Exited with exit code 2" in done.stderr, done.stderr
