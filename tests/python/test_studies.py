"""A study whose runs are a PyTorch script (`command:`), and the script's
side of it: trainscope.config() and trainscope.setup(). The study is
examples/python/sources.yaml, its script examples/python/train_mlp.py, run
by the CLI as a user would (TS_CLI, PYTHONPATH: set by ctest)."""
import functools
import json
import os
import pathlib
import random
import shutil
import sqlite3
import subprocess
import sys

import pytest
import torch

import trainscope

CLI = os.environ["TS_CLI"]
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def cli(store, *args, check=True):
    return subprocess.run([CLI, "--store", "sqlite:" + str(store), *args], check=check,
                          capture_output=True, text=True)


def first_value(store, run, key):
    out = cli(store, "metrics", run, key, "--format", "csv").stdout
    return float(out.splitlines()[1].split(",")[2])


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """examples/python's sources study, quick, in a folder of its own."""
    tmp = tmp_path_factory.mktemp("study")
    for f in ("train_mlp.py", "sources.yaml"):
        shutil.copy(EXAMPLES / f, tmp / f)
    store = tmp / "s.db"
    done = cli(store, "study", "run", str(tmp / "sources.yaml"), "--quick", "--workers", "2",
               "--logs", str(tmp / "logs"), check=False)
    assert done.returncode == 0, done.stderr + "".join(
        p.read_text() for p in (tmp / "logs").glob("*.log"))
    return store, tmp


def test_every_planned_run_is_the_scripts_run_under_the_study(study):
    store, _ = study
    status = json.loads(cli(store, "--json", "study", "status", "python-sources").stdout)
    assert status["total"]["finished"] == 10 and status["total"]["failed"] == 0, status
    runs = json.loads(cli(store, "--json", "runs", "list", "--experiment", "python-sources").stdout)
    children = [r for r in runs if r["parent"]]
    assert sorted(r["name"] for r in children) == sorted(
        f"{cell}/r{i}" for cell in ("init", "data_order", "dropout", "all", "deterministic")
        for i in (1, 2))
    shown = json.loads(cli(store, "--json", "runs", "show", "init/r2").stdout)
    assert shown["tags"]["source"] == "python"
    # What the study planned for the run is its config, and it reached the script.
    assert "seeds.init: 2" in shown["config"] and "command:" in shown["config"]
    assert shown["params"]["seeds.init"] == "2" and shown["params"]["epochs"] == "1"
    with sqlite3.connect(store) as db:
        script = db.execute("SELECT value FROM environment WHERE run_id = (SELECT id FROM runs "
                            "WHERE uuid = ?) AND key = 'python.script'", (shown["uuid"],))
        assert script.fetchone()[0].endswith("train_mlp.py")


def test_each_source_varies_only_its_stream(study):
    store, _ = study
    init = {c: [first_value(store, f"{c}/r{i}", "init/weight_sum") for i in (1, 2)]
            for c in ("init", "data_order", "dropout", "all", "deterministic")}
    assert init["init"][0] != init["init"][1]  # the init stream differs
    assert init["all"][0] != init["all"][1]  # the master seed: every stream
    for cell in ("data_order", "dropout", "deterministic"):  # the same initial weights
        assert init[cell][0] == init[cell][1], cell
    # Same initial weights, other batches or masks: the trainings part.
    for cell in ("data_order", "dropout"):
        diff = json.loads(cli(store, "--json", "diff", f"{cell}/r1", f"{cell}/r2").stdout)
        assert not diff["bit_identical"] and diff["first_diff_step"] == 1, diff


def test_the_deterministic_cell_is_audited_bit_identical(study):
    store, _ = study
    diff = json.loads(cli(store, "--json", "diff", "deterministic/r1", "deterministic/r2").stdout)
    assert diff["bit_identical"] and diff["common_steps"] == 24, diff
    report = json.loads(cli(store, "--json", "study", "report", "python-sources").stdout)
    cells = {c["cell"]: c for c in report["cells"]}
    assert set(cells) == {"init", "data_order", "dropout", "all", "deterministic"}
    assert all(len(c["values"]) == 2 for c in cells.values())
    assert cells["deterministic"]["audit"]["identical"] == 1, cells["deterministic"]["audit"]


def test_a_finished_study_resumes_without_running_the_script_again(study):
    store, _ = study
    out = cli(store, "study", "resume", "python-sources")
    assert "10 done before, 0 to run" in out.stderr, out.stderr


def test_a_changed_command_is_refused_on_resume(study):
    store, tmp = study
    text = (tmp / "sources.yaml").read_text()
    (tmp / "sources.yaml").write_text(text.replace("train_mlp.py", "train_mlp.py --other"))
    try:
        out = cli(store, "study", "resume", "python-sources", check=False)
        assert out.returncode == 4 and "command" in out.stderr, out.stderr
    finally:
        (tmp / "sources.yaml").write_text(text)


def test_a_run_the_study_does_not_plan_cannot_join_it(study, monkeypatch):
    store, _ = study
    monkeypatch.setenv("TRAINSCOPE_STORE", "sqlite:" + str(store))
    monkeypatch.setenv("TRAINSCOPE_PARENT", "python-sources")
    monkeypatch.setenv("TRAINSCOPE_RUN_NAME", "init/r9")
    with pytest.raises(trainscope.Error, match="not a planned run"):
        trainscope.start_run()


def test_bad_command_studies_are_refused_with_the_key(tmp_path):
    store = tmp_path / "s.db"
    cases = {
        "command: ''\n": "command is empty",
        "command: python3 x.py\nbase: ../demo.yaml\n": "cannot be combined with base",
        "command: python3 x.py\nvary: bitflip\ngrid: {lr: [1, 2]}\n": "bitflip needs",
    }
    for body, message in cases.items():
        f = tmp_path / "bad.yaml"
        f.write_text("study: bad\n" + "sources: [init]\n" * ("grid" not in body) + body)
        out = cli(store, "study", "run", str(f), check=False)
        assert out.returncode == 2 and message in out.stderr, (body, out.stderr)
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_config_applies_the_settings_typed_as_the_defaults():
    defaults = {"lr": 0.1, "epochs": 2, "name": "a", "amp": False, "opt": {"beta": 0.9}}
    cfg = trainscope.config(defaults, sets=["lr=0.5", "epochs=3", "amp=true", "opt.beta=1",
                                            "seeds.init=7", "compute.threads=1"])
    assert cfg == {"lr": 0.5, "epochs": 3, "name": "a", "amp": True, "opt": {"beta": 1.0},
                   "seeds": {"init": 7}, "compute": {"threads": 1}}
    assert defaults["lr"] == 0.1  # the defaults are left alone
    with pytest.raises(trainscope.Error, match="'optimizer.lr', which this script's config"):
        trainscope.config(defaults, sets=["optimizer.lr=1"])
    with pytest.raises(trainscope.Error, match="'epochs' is an int"):
        trainscope.config(defaults, sets=["epochs=2.5"])
    with pytest.raises(trainscope.Error, match="give true or false"):
        trainscope.config(defaults, sets=["amp=maybe"])


def test_config_and_setup_say_what_they_take():
    # Twelfth hunt, A-D4..D6: setup([1]) was an AttributeError; a NumPy
    # number was no scalar; setting a section said the config lacked it.
    numpy = pytest.importorskip("numpy")
    assert trainscope.config({"n": numpy.int64(3), "x": numpy.float32(0.5)},
                             sets=["n=5", "x=0.25"]) == {"n": 5, "x": 0.25}
    with pytest.raises(trainscope.Error, match="'n' is an int64"):
        trainscope.config({"n": numpy.int64(3)}, sets=["n=2.5"])
    with pytest.raises(trainscope.Error, match=r"^sets= sets 'opt', a section of this "
                       r"script's config, not a value: set one of its keys \(opt.lr\)$"):
        trainscope.config({"opt": {"lr": 0.1}}, sets=["opt=3"])
    for bad in ([1], "seeds.master=1"):
        with pytest.raises(TypeError, match="^setup\\(\\) takes the config dict trainscope.config"):
            trainscope.setup(bad, apply=False)


def test_config_keys_are_keys_a_setting_can_name():
    # Thirteenth hunt, A-D7/D8: a default key 'a.b' was taken, then its
    # setting refused as missing while the message listed it; a dict nested
    # 5000 deep was a RecursionError in config() and start_run(config=).
    for key in ("a.b", 1, ""):
        with pytest.raises(ValueError, match=r"^config defaults: key .* cannot be set by a "
                           r"setting \(keys are non-empty text without '\.'"):
            trainscope.config({"x": {key: 1}}, sets=[])
    assert trainscope.config({"a": {"b": 1}}, sets=["a.b=2"]) == {"a": {"b": 2}}
    deep = functools.reduce(lambda d, _: {"k": d}, range(5000), 1)
    with pytest.raises(ValueError, match=r"^config key 'k\.k\.k.* is longer than 256 bytes"):
        trainscope.config(deep)
    with pytest.raises(ValueError, match=r"^param 'k\.k\.k.*: a key nested this deep is longer "
                       r"than 256 bytes"):
        trainscope.start_run(store="sqlite:/nonexistent/never.db", record_environment=False,
                             config=deep)


def test_config_reads_trainscopes_own_keys_by_the_trainers_rule():
    # Eleventh hunt, A-D6: Python's int() took 1_000 and a fullwidth digit
    # for seeds.*/compute.*, which `train --set` refuses.
    for value in ("1_000", "\uff11", "0.5", "ten"):
        for defaults in ({}, {"seeds": {"master": 0}}):
            with pytest.raises(ValueError, match=f"^setting seeds.master={value}: "):
                trainscope.config(defaults, sets=[f"seeds.master={value}"])
    cfg = trainscope.config({"seeds": {"master": 0}}, sets=["seeds.master=12",
                                                           "determinism.mkldnn=false"])
    assert cfg == {"seeds": {"master": 12}, "determinism": {"mkldnn": False}}
    with pytest.raises(ValueError, match="^setting compute.threads=-3: compute.threads must be"):
        trainscope.config(sets=["compute.threads=-3"])


def test_setup_derives_the_streams_as_the_trainer_and_seeds_every_generator():
    seeds = trainscope.setup({"seeds": {"master": 42}}, apply=False)
    # Derived as config/seeds.cc derives them: the C++ trainer's streams.
    assert seeds.master == 42
    assert len({seeds.init, seeds.data_order, seeds.augment, seeds.dropout}) == 4
    pinned = trainscope.setup({"seeds": {"master": 42, "data_order": 5}}, apply=False)
    assert pinned.data_order == 5 and pinned.init == seeds.init
    a = trainscope.setup({"seeds": {"master": 3}})
    wa, ra = torch.randn(3), random.random()
    trainscope.setup({"seeds": {"master": 3}})
    assert torch.equal(wa, torch.randn(3)) and ra == random.random()
    g1, g2 = a.generator("data_order"), a.generator("data_order")
    assert torch.equal(torch.randperm(10, generator=g1), torch.randperm(10, generator=g2))
    with pytest.raises(KeyError, match="no stream 'shuffle'"):
        a.generator("shuffle")
    with pytest.raises(ValueError, match="setting compute.threads=-3: compute.threads must be"):
        trainscope.setup({"compute": {"threads": -3}})


def test_a_grid_key_the_script_does_not_have_fails_its_runs_with_that_line(tmp_path):
    shutil.copy(EXAMPLES / "train_mlp.py", tmp_path / "train_mlp.py")
    (tmp_path / "typo.yaml").write_text(
        "study: typo\ncommand: " + sys.executable + " train_mlp.py\ngrid: {optimizer.lr: [0.1]}\n"
        "replicates: 2\nretries: 0\n")
    store = tmp_path / "s.db"
    out = cli(store, "study", "run", str(tmp_path / "typo.yaml"), "--logs", str(tmp_path / "logs"),
              check=False)
    assert out.returncode != 0 and "0/2 runs finished, 2 failed" in out.stdout, out.stdout
    log = (tmp_path / "logs" / "optimizer.lr_0.1_r1.log").read_text()
    assert "the study sets 'optimizer.lr', which this script's config does not have" in log, log


def test_a_relative_store_is_the_studys_store_wherever_its_file_is(tmp_path):
    (tmp_path / "here").mkdir()
    (tmp_path / "elsewhere").mkdir()
    shutil.copy(EXAMPLES / "train_mlp.py", tmp_path / "elsewhere" / "train_mlp.py")
    (tmp_path / "elsewhere" / "s.yaml").write_text(
        "study: rel\ncommand: " + sys.executable + " train_mlp.py\nsources: [init]\nreplicates: 2\n"
        "set: {epochs: 1}\n")
    # The default store, ./trainscope.db of the folder the CLI runs in, and
    # the package on a PYTHONPATH relative to it (as the README runs it).
    pkg = pathlib.Path(os.environ["PYTHONPATH"].split(":")[0])
    os.symlink(pkg, tmp_path / "here" / "pkg")
    out = subprocess.run([CLI, "study", "run", "../elsewhere/s.yaml"], cwd=tmp_path / "here",
                         capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH="pkg"))
    assert out.returncode == 0 and "2/2 runs finished" in out.stdout, out.stdout + out.stderr
    assert not (tmp_path / "elsewhere" / "trainscope.db").exists()


def watch_study(tmp_path):
    """A command study whose command is `trainscope watch` (the study's own
    trainscope), run: its store."""
    (tmp_path / "w.yaml").write_text(
        "study: w\ncommand: \"trainscope watch -- sh -c 'echo trainscope: loss=0.5'\"\n"
        "sources: [all]\n"
        "replicates: 2\nretries: 0\n")
    store = tmp_path / "w.db"
    out = cli(store, "study", "run", str(tmp_path / "w.yaml"), "--logs", str(tmp_path / "logs"),
              check=False)
    assert out.returncode == 0 and "2/2 runs finished" in out.stdout, out.stdout + out.stderr
    return store


def runs_of(store):
    with sqlite3.connect(store) as db:
        return db.execute("SELECT name, status, parent_id FROM runs ORDER BY name").fetchall()


# Issue 51, tenth hunt (D8): `trainscope watch` as a study's command is the
# planned run (it said "recorded no run" and left stray runs named after
# the planned ones).
def test_watch_as_a_studys_command_is_the_planned_run(tmp_path):
    store = watch_study(tmp_path)
    runs = runs_of(store)
    study = [r for r in runs if r[0] == "w"]
    assert [r[:2] for r in runs] == [("all/r1", "finished"), ("all/r2", "finished"),
                                    ("w", "finished")], runs
    with sqlite3.connect(store) as db:
        study_id = db.execute("SELECT id FROM runs WHERE name = 'w'").fetchone()[0]
    assert all(r[2] == study_id for r in runs if r[0] != "w"), (runs, study)
    assert "loss" in cli(store, "metrics", "all/r1").stdout


# Eighteenth hunt, B-D4: a script's second start_run(name="extra") took the
# planned name and set the training aside (study.superseded_by).
def test_only_the_first_run_a_script_starts_is_the_planned_run(tmp_path):
    (tmp_path / "two.py").write_text(
        "import trainscope as t\n"
        "with t.start_run(config={'lr': 0.1}, record_environment=False) as r:\n"
        "    r.log({'loss': 0.3}, step=3)\n"
        "with t.start_run(name='extra', record_environment=False) as r2:\n"
        "    r2.log({'loss': 1.0}, step=1)\n")
    (tmp_path / "two.yaml").write_text(
        "study: two\ncommand: " + sys.executable + " two.py\nsources: [all]\nreplicates: 2\n"
        "retries: 0\n")
    store = tmp_path / "two.db"
    out = cli(store, "study", "run", str(tmp_path / "two.yaml"), check=False)
    assert out.returncode == 0 and "2/2 runs finished" in out.stdout, out.stdout + out.stderr
    with sqlite3.connect(store) as db:
        study_id = db.execute("SELECT id FROM runs WHERE name = 'two'").fetchone()[0]
        runs = db.execute("SELECT name, parent_id FROM runs WHERE name <> 'two' ORDER BY name")
        runs = runs.fetchall()
        superseded = db.execute("SELECT count(*) FROM tags WHERE key = 'study.superseded_by'")
        assert superseded.fetchone()[0] == 0
    assert runs == [("all/r1", study_id), ("all/r2", study_id), ("extra", None),
                    ("extra", None)], runs
    assert first_value(store, "all/r1", "loss") == 0.3


# Nineteenth hunt, A-D3 and B-D1: a job that ended its run itself,
# finish('stopped') or finish('killed'), was told it "ended without ending
# its run (... os._exit skips both)".
def test_a_run_the_job_ended_itself_is_not_called_left_unended(tmp_path):
    (tmp_path / "stop.py").write_text(
        "import sys, trainscope as t\n"
        "r = t.start_run(config={'lr': 0.1}, record_environment=False)\n"
        "r.log({'loss': 0.3}, step=1)\n"
        "r.finish(sys.argv[1])\n"
        "sys.exit(0 if sys.argv[1] == 'stopped' else 1)\n")
    for status in ("stopped", "killed"):
        (tmp_path / f"{status}.yaml").write_text(
            f"study: {status}\ncommand: {sys.executable} stop.py {status}\nsources: [all]\n"
            "replicates: 2\nretries: 0\n")
        store = tmp_path / f"{status}.db"
        cli(store, "study", "run", str(tmp_path / f"{status}.yaml"), check=False)
        out = cli(store, "study", "status", status, check=False).stdout
        if status == "stopped":  # only a job ends a run stopped
            assert "was ended stopped by the job (finish('stopped'))" in out, out
            assert "os._exit" not in out, out
        else:  # killed: the job's word or a reaper's, which the study cannot tell apart
            assert "was left killed: ended so by the job, or by a reaper" in out, out


# Nineteenth hunt, B-D6: a study stopped while a job's run had already
# failed said "0 failed", where every reader counts that run failed.
def test_a_stopped_study_counts_failed_runs_as_its_readers_do(tmp_path):
    import signal
    import time
    (tmp_path / "s.py").write_text(
        "import os, time, trainscope as t\n"
        "r = t.start_run(config={'lr': 0.1}, record_environment=False)\n"
        "if os.environ['TRAINSCOPE_RUN_NAME'].endswith('r1'):\n"
        "    r.finish('failed')\n"
        "time.sleep(60)\n")
    (tmp_path / "stopme.yaml").write_text(
        f"study: stopme\ncommand: {sys.executable} s.py\nsources: [all]\nreplicates: 2\n"
        "retries: 1\nworkers: 2\n")
    store = tmp_path / "stop.db"
    study = subprocess.Popen([CLI, "--store", "sqlite:" + str(store), "-q", "study", "run",
                              str(tmp_path / "stopme.yaml")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    query = "SELECT count(*) FROM runs WHERE name = 'all/r1' AND status = 'failed'"
    for _ in range(600):
        time.sleep(0.1)
        if store.exists():
            with sqlite3.connect(store) as db:
                if db.execute(query).fetchone()[0] == 1:
                    break
    study.send_signal(signal.SIGTERM)
    out, err = study.communicate(timeout=120)
    assert "0/2 runs finished, 1 failed" in out, out + err
    status = json.loads(cli(store, "study", "status", "stopme", "--json", check=False).stdout)
    assert status["total"]["failed"] == 1, status


def set_running(store, name, pid, silent_s=0):
    """Marks run `name` running by `pid`, its last heartbeat `silent_s` ago."""
    with sqlite3.connect(store) as db:
        db.execute("UPDATE runs SET status = 'running', end_time = NULL, pid = ?, pid_start = 0, "
                   "heartbeat = strftime('%s', 'now') - ? WHERE name = ?", (pid, silent_s, name))


# Issue 51, tenth hunt (D3): a planned run another process is training now
# is left alone by `study resume` (it was trained again, and the live run
# set aside); `study task` of it refuses.
def test_resume_leaves_a_planned_run_another_process_is_training_alone(tmp_path):
    store = watch_study(tmp_path)
    live = subprocess.Popen(["sleep", "60"])
    try:
        set_running(store, "all/r1", live.pid)
        out = cli(store, "study", "resume", "w", "--logs", str(tmp_path / "logs"), check=False)
        assert out.returncode == 1, out.stderr
        assert "1 running elsewhere" in out.stderr, out.stderr
        last = out.stderr.strip().splitlines()[-1]
        assert "left alone" in last and f"all/r1 (pid {live.pid} on " in last, last
        task = cli(store, "study", "task", "w", "all/r1", check=False)
        assert task.returncode == 4 and "running now in another process" in task.stderr, task.stderr
        # The study is not finished while a planned run is not (eleventh
        # hunt, D5): stopped, as one a signal stopped, for a later resume.
        assert [r[:2] for r in runs_of(store)] == [("all/r1", "running"), ("all/r2", "finished"),
                                                   ("w", "stopped")]
        with sqlite3.connect(store) as db:
            assert db.execute("SELECT count(*) FROM tags WHERE key = 'study.superseded_by'"
                              ).fetchone()[0] == 0
    finally:
        live.kill()
        live.wait()


# Issue 51, tenth hunt (D12): a study whose own process died is stale to
# every reader, its status JSON included.
def test_a_crashed_study_is_stale_in_its_status_json(tmp_path):
    store = watch_study(tmp_path)
    dead = subprocess.Popen(["true"])
    dead.wait()
    set_running(store, "w", dead.pid, silent_s=3600)
    out = cli(store, "--json", "study", "status", "w")
    status = json.loads(out.stdout)
    assert status["study"]["status"] == "stale", status["study"]
    assert status["study"]["stale"], status["study"]
