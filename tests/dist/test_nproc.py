"""`trainscope train CONFIG --nproc N`: real ranks (processes) on loopback,
rendezvous through c10d's TCPStore, gradients through Gloo, on a subset of
the real Fashion-MNIST. Run by ctest (Dist.*) with TS_CLI set."""
import json
import os
import pathlib
import signal
import socket
import sqlite3
import subprocess
import time

import pytest

CLI = os.environ["TS_CLI"]
DEMO = str(pathlib.Path(__file__).resolve().parents[2] / "configs" / "demo.yaml")
SMALL = ["data.train_subset=2048", "data.test_subset=500", "train.epochs=1",
         "optimizer.name=sgd", "optimizer.lr=0.05", "checkpoint.every_epochs=1"]


def cli(store, *args, check=True, timeout=600):
    return subprocess.run([CLI, "--store", "sqlite:" + str(store), *args], check=check,
                          capture_output=True, text=True, timeout=timeout)


def train(store, name, nproc, sets=(), check=True):
    args = ["train", DEMO, "--name", name, "--no-progress"]
    if nproc:
        args += ["--nproc", str(nproc)]
    for s in list(SMALL) + list(sets):
        args += ["--set", s]
    return cli(store, *args, check=check)


def show(store, run):
    return json.loads(cli(store, "--json", "runs", "show", run).stdout)


def points(store, run, key):
    out = json.loads(cli(store, "--json", "metrics", run, key).stdout)
    return [(p["step"], p["value"]) for p in out["points"]]


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    store = tmp_path_factory.mktemp("dist") / "s.db"
    done = train(store, "two", 2, check=False)
    assert done.returncode == 0, done.stderr
    return store


def test_two_ranks_train_one_run_that_learns(two):
    run = show(two, "two")
    assert run["status"] == "finished"
    tags = run["tags"]
    assert tags["dist.world_size"] == "2" and tags["dist.backend"] == "gloo"
    assert len(tags["dist.hosts"].split(",")) == 2 and "dist.replica_mismatch" not in tags
    assert run["params"]["dist.nproc"] == "2"
    # Only rank 0 records: one run in the store, with its checkpoint.
    with sqlite3.connect(two) as db:
        assert db.execute("select count(*) from runs").fetchone()[0] == 1
    assert points(two, "two", "test/accuracy")[-1][1] > 0.4  # chance: 0.1
    assert any(a["name"].endswith(".pt") for a in run["artifacts"])


def test_every_rank_is_timed_in_the_run(two):
    steps = 2048 // 128
    for r in (0, 1):
        assert len(points(two, "two", f"dist/rank{r}/step_ms")) == steps
        comm = points(two, "two", f"dist/rank{r}/comm_ms")
        assert len(comm) == steps and all(v >= 0 for _, v in comm)
        # Each rank's own resources (the ranks are not rank 0's children).
        assert all(100 < v < 4096 for _, v in points(two, "two", f"dist/rank{r}/rss_mib"))
        cpu = points(two, "two", f"dist/rank{r}/cpu_percent")
        assert len(cpu) == steps - 1 and max(v for _, v in cpu) > 10, cpu
    # Rank 0's resource monitor samples the launcher's process tree: the
    # memory of both ranks (and the launcher), not rank 0's alone.
    tree = max(v for _, v in points(two, "two", "proc/rss_mib"))
    rank0 = max(v for _, v in points(two, "two", "dist/rank0/rss_mib"))
    assert tree > 1.8 * rank0, (tree, rank0)
    # The demo CNN's gradients (float32) and the loss, every step.
    n = sum(int(p) for p in [16 * 1 * 9 + 16, 32 * 16 * 9 + 32, 128 * 32 * 7 * 7 + 128, 1290])
    assert {v for _, v in points(two, "two", "dist/bytes_reduced")} == {4.0 * (n + 1)}


def test_one_and_two_ranks_see_the_same_batches(tmp_path, two):
    """The world-size invariant mode: the first loss is the same up to the
    order of a sum, and diff says where the runs part."""
    store = tmp_path / "s.db"
    train(store, "one", 0)
    train(store, "two", 2)
    first = {n: points(store, n, "train/loss")[0][1] for n in ("one", "two")}
    assert abs(first["one"] - first["two"]) <= 1e-6 * abs(first["one"]), first
    d = json.loads(cli(store, "--json", "diff", "one", "two").stdout)
    assert d["have_fingerprints"]
    assert d["bit_identical"] or d["first_diff_step"] >= 1
    acc = [points(store, n, "test/accuracy")[-1][1] for n in ("one", "two")]
    assert abs(acc[0] - acc[1]) < 0.05, acc
    if not d["bit_identical"]:  # one process cannot replay two ranks
        text = cli(store, "diff", "one", "two").stdout
        assert "trained on 2 ranks, which a replay in one process cannot repeat" in text, text
    again = cli(store, "rerun", "two", check=False)
    assert again.returncode == 2 and "--nproc 2" in again.stderr, again.stderr


def test_each_rank_reads_its_own_gpu(tmp_path):
    """Through NVML, loaded at run time: here the test double of the NVML
    library (two GPUs, utilisation 40 and 50 %, 150 and 200 W), as a
    machine with two GPUs would give it. Rank r reads GPU r of its host."""
    store = tmp_path / "s.db"
    env = dict(os.environ, TRAINSCOPE_NVML_LIBRARY=os.environ["TS_FAKE_NVML"])
    args = ["train", DEMO, "--name", "gpus", "--no-progress", "--nproc", "2"]
    for s in SMALL:
        args += ["--set", s]
    done = subprocess.run([CLI, "--store", "sqlite:" + str(store), *args], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    steps = 2048 // 128
    for r, (util, watts) in enumerate(((40, 150), (50, 200))):
        assert {v for _, v in points(store, "gpus", f"dist/rank{r}/gpu_util_percent")} == {util}
        assert {v for _, v in points(store, "gpus", f"dist/rank{r}/gpu_power_w")} == {watts}
        energy = [v for _, v in points(store, "gpus", f"dist/rank{r}/gpu_energy_j")]
        assert len(energy) == steps and energy[0] == 0 and energy == sorted(energy), energy


def test_overlapping_the_all_reduce_with_backward_changes_no_bit(tmp_path):
    """dist.overlap starts each bucket as backward fills it (small buckets:
    the demo CNN's four layers in three); the sums are the same as after
    backward, so the runs are bit-identical at every step."""
    store = tmp_path / "s.db"
    for name, overlap in (("overlap", "true"), ("after", "false")):
        train(store, name, 2, ["dist.bucket_mb=0.1", f"dist.overlap={overlap}",
                               "profile.enabled=true"])
    assert show(store, "overlap")["tags"]["dist.buckets"] == "3"
    d = json.loads(cli(store, "--json", "diff", "overlap", "after").stdout)
    assert d["have_fingerprints"] and d["bit_identical"], d
    # Each rank's step split: forward and backward, all-reduce waited for
    # after backward, and the wait for the slowest rank (0 for it).
    steps = 2048 // 128
    for r in (0, 1):
        compute = points(store, "overlap", f"dist/rank{r}/compute_ms")
        assert len(compute) == steps and all(v > 0 for _, v in compute)
    waits = [points(store, "overlap", f"dist/rank{r}/wait_ms") for r in (0, 1)]
    assert all(min(a[1], b[1]) == 0 and max(a[1], b[1]) >= 0 for a, b in zip(*waits)), waits
    # Each bucket's all-reduce, start to finish, every step; and in the
    # profile, a row per bucket with the time backward's thread waited.
    for b in range(3):
        assert len(points(store, "overlap", f"dist/bucket{b}/allreduce_ms")) == steps
    # No GPU here (no NVML): no GPU series.
    keys = [m["key"] for m in json.loads(cli(store, "--json", "metrics", "overlap").stdout)]
    assert "dist/rank0/step_ms" in keys and not [k for k in keys if "gpu_" in k], keys
    prof = json.loads(cli(store, "--json", "profile", "show", "overlap").stdout)
    rows = {l["layer"]: l for l in prof["layers"]}
    for b in range(3):
        row = rows[f"dist: all-reduce bucket {b}"]
        assert row["backward_us"] > 0 and row["forward_us"] == 0, row
    assert "features.conv1" in rows and "dist: all-reduce bucket 3" not in rows


def rank_pid(launcher, rank):
    """The pid of rank `rank` among the launcher's children."""
    deadline = time.time() + 60
    while time.time() < deadline:
        for child in pathlib.Path("/proc").glob("[0-9]*"):
            try:
                stat = (child / "stat").read_text().rsplit(")", 1)[1].split()
                if int(stat[1]) != launcher:
                    continue
                env = (child / "environ").read_bytes().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue
            if f"TRAINSCOPE_DIST_RANK={rank}".encode() in env:
                return int(child.name)
        time.sleep(0.2)
    raise AssertionError(f"rank {rank} never started")


def test_a_killed_rank_ends_the_training_and_is_named(tmp_path):
    store = tmp_path / "s.db"
    argv = [CLI, "--store", "sqlite:" + str(store), "train", DEMO, "--name", "k", "--nproc", "2",
            "--no-progress", "--set", "train.epochs=20"]
    launcher = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = rank_pid(launcher.pid, 1)
    deadline = time.time() + 120
    while time.time() < deadline:  # until it trains
        out = cli(store, "--json", "metrics", "k", "train/loss", check=False)
        if out.returncode == 0 and json.loads(out.stdout)["points"]:
            break
        time.sleep(0.5)
    os.kill(victim, signal.SIGKILL)
    killed = time.time()
    _, err = launcher.communicate(timeout=90)
    assert time.time() - killed < 60
    assert launcher.returncode == 1, err
    assert f"rank 1 of 2 (pid {victim} on {socket.gethostname()}) was killed by signal 9 " \
           "(SIGKILL); the other ranks were stopped; run " in err, err
    run = show(store, "k")
    assert run["status"] in ("failed", "stopped", "killed") and run["tags"]["dist.failed_rank"] == "1"


def wait_for_steps(store, run, n):
    deadline = time.time() + 120
    while time.time() < deadline:
        out = cli(store, "--json", "metrics", run, "train/loss", check=False)
        if out.returncode == 0 and len(json.loads(out.stdout)["points"]) >= n:
            return
        time.sleep(0.2)
    raise AssertionError(f"run {run} never reached step {n}")


def test_a_stopped_run_resumes_bit_identically(tmp_path):
    """SIGTERM to the launcher: the ranks agree on a step, rank 0
    checkpoints and the run is stopped; resumed at the same world size, it
    ends with the same bits as a run never stopped."""
    store = tmp_path / "s.db"
    sets = ["data.train_subset=8192", "train.epochs=3"]
    train(store, "straight", 2, sets)
    argv = [CLI, "--store", "sqlite:" + str(store), "train", DEMO, "--name", "stopped",
            "--nproc", "2", "--no-progress"]
    for s in SMALL + sets:
        argv += ["--set", s]
    launcher = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_steps(store, "stopped", 10)
    launcher.send_signal(signal.SIGTERM)
    _, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 1 and err.count("stopped by signal") == 1, err
    assert "--nproc 2 --resume" in err and show(store, "stopped")["status"] == "stopped"
    args = ["train", DEMO, "--nproc", "2", "--resume", "stopped", "--no-progress"]
    for s in SMALL + sets:
        args += ["--set", s]
    done = cli(store, *args, check=False)
    assert done.returncode == 0, done.stderr
    d = json.loads(cli(store, "--json", "diff", "straight", "stopped").stdout)
    assert d["bit_identical"] and d["final_accuracy_a"] == d["final_accuracy_b"], d
    assert show(store, "stopped")["status"] == "finished"


SYNTHETIC = ("data: {dataset: synthetic, synthetic: {size: 256}}\nmodel: {name: mlp}\n"
             "train: {epochs: 1, batch_size: 64}\n")


def test_quiet_reaches_every_rank_and_a_config_error_is_one_line(tmp_path):
    """The third hunt (D5, D16): -q did not reach rank 0 (two progress bars
    and the epoch line on stderr), and a config every rank refuses was said
    once per rank and once more by the launcher. Each rank sends its error
    to the launcher, which says one line: the one `train` alone says."""
    config = tmp_path / "c.yaml"
    config.write_text(SYNTHETIC)
    store = tmp_path / "s.db"
    quiet = cli(store, "-q", "train", str(config), "--nproc", "2", "--name", "q", check=False)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert show(store, "q")["status"] == "finished"
    small = ["--set", "data.synthetic.size=3"]
    alone = cli(store, "train", str(config), *small, check=False)
    ranks = cli(store, "train", str(config), "--nproc", "2", *small, check=False)
    assert alone.returncode == 2 and alone.stderr.count("\n") == 1, alone.stderr
    assert ranks.returncode == 2 and ranks.stderr == alone.stderr, ranks.stderr


def test_a_hung_up_launcher_stops_its_ranks_at_a_step(tmp_path):
    """The third hunt (D13): SIGHUP (the terminal closed) is a stop, as
    SIGTERM is: the ranks agree on a step, rank 0 checkpoints, the run is
    stopped and says how to resume."""
    config = tmp_path / "c.yaml"
    config.write_text(SYNTHETIC.replace("size: 256", "size: 4096").replace("epochs: 1",
                                                                           "epochs: 50"))
    store = tmp_path / "s.db"
    argv = [CLI, "--store", "sqlite:" + str(store), "train", str(config), "--name", "hup",
            "--nproc", "2", "--no-progress"]
    launcher = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_steps(store, "hup", 5)
    launcher.send_signal(signal.SIGHUP)
    _, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 1 and err.count("stopped by signal") == 1, err
    assert "--nproc 2 --resume" in err and show(store, "hup")["status"] == "stopped"


def test_a_stop_while_the_ranks_start_blames_no_rank(tmp_path):
    """Issue 51 (fifteenth hunt, noted): SIGTERM to the launcher while its
    ranks started, before they could stop at a step, ended them by that
    signal, and the launcher blamed a rank for it: "rank 1 of 2 (...) was
    killed by signal 15 (SIGTERM); the other ranks were stopped". The
    user's stop is said instead, and no rank is tagged as failed."""
    config = tmp_path / "c.yaml"
    config.write_text(SYNTHETIC)
    store = tmp_path / "s.db"
    argv = [CLI, "--store", "sqlite:" + str(store), "train", str(config), "--name", "early",
            "--nproc", "2", "--no-progress"]
    launcher = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rank_pid(launcher.pid, 1)  # both ranks started; neither has met the other yet
    launcher.send_signal(signal.SIGTERM)
    _, err = launcher.communicate(timeout=120)
    assert launcher.returncode == 1 and err.count("\n") == 1, err
    assert "the other ranks were stopped" not in err, err
    assert "stopped by SIGTERM before the ranks could stop at a step" in err \
        or "stopped by signal" in err, err  # (a rank that did stop at a step says so)
    runs = json.loads(cli(store, "--json", "runs", "list").stdout) if store.exists() else []
    assert all("dist.failed_rank" not in show(store, r["uuid"])["tags"] for r in runs)


def test_bad_worlds_get_one_line(tmp_path):
    store = tmp_path / "s.db"
    done = train(store, "x", 0, ["dist.nproc=200"], check=False)
    assert done.returncode == 2 and "dist.nproc" in done.stderr and "train.batch_size" in \
        done.stderr, done.stderr
    done = train(store, "x", 2, ["dist.backend=nccl"], check=False)
    assert done.returncode == 2 and "dist.backend nccl needs GPUs" in done.stderr, done.stderr
    done = cli(store, "train", DEMO, "--nproc", "0", check=False)
    assert done.returncode == 2 and "--nproc" in done.stderr
    done = cli(store, "train", DEMO, "--nproc", "2", "--resume", "nosuchrun", check=False)
    assert done.returncode == 3 and "nosuchrun" in done.stderr, done.stderr
    # A rank whose rendezvous is not there: one line naming the address.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, TRAINSCOPE_DIST_RANK="1", TRAINSCOPE_DIST_WORLD_SIZE="2",
               TRAINSCOPE_DIST_ADDR="127.0.0.1", TRAINSCOPE_DIST_PORT=str(port))
    done = subprocess.run([CLI, "--store", "sqlite:" + str(store), "train", DEMO, "--set",
                           "dist.nproc=2", "--set", "dist.timeout_s=2"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"could not join the training at 127.0.0.1:{port}" in lines[0], \
        done.stderr
    # Rank 0 hosting the rendezvous (ranks not started by --nproc) on a
    # port in use.
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        env0 = dict(env, TRAINSCOPE_DIST_RANK="0", TRAINSCOPE_DIST_PORT=str(busy))
        done = subprocess.run([CLI, "--store", "sqlite:" + str(store), "train", DEMO, "--set",
                               "dist.nproc=2"], env=env0, capture_output=True, text=True,
                              timeout=60)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert f"rank 0 cannot host the rendezvous on port {busy}" in lines[0], done.stderr
    env["TRAINSCOPE_DIST_WORLD_SIZE"] = "3"
    done = subprocess.run([CLI, "--store", "sqlite:" + str(store), "train", DEMO, "--set",
                           "dist.nproc=2"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "TRAINSCOPE_DIST_WORLD_SIZE=3" in done.stderr, done.stderr


def test_the_world_size_is_a_factor_of_a_study(tmp_path):
    """configs/studies/world_size.yaml, quick and smaller: its 2-rank cell
    is trained by `train --nproc 2` under the study like any run."""
    root = pathlib.Path(DEMO).parent
    spec = (root / "studies" / "world_size.yaml").read_text()
    spec = spec.replace("base: ../demo.yaml", f"base: {DEMO}")
    spec = spec.replace("replicates: 3\n", "replicates: 2\n").replace(
        "data.train_subset: 3000, data.test_subset: 1000", "data.train_subset: 1024, "
        "data.test_subset: 500")
    (tmp_path / "ws.yaml").write_text(spec)
    store = tmp_path / "s.db"
    done = cli(store, "study", "run", str(tmp_path / "ws.yaml"), "--quick", check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(cli(store, "--json", "study", "report", "world_size").stdout)
    assert [c["cell"] for c in report["cells"]] == ["dist.nproc=1", "dist.nproc=2"]
    assert all(c["n"] == 2 for c in report["cells"]), report["cells"]
    two = show(store, "dist.nproc=2/r1")
    assert two["tags"]["dist.world_size"] == "2" and two["parent"]
    assert show(store, "dist.nproc=1/r1")["params"]["seeds.master"] == two["params"]["seeds.master"]
