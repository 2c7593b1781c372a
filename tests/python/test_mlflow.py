"""MLflow both ways (issue 50), checked with the real `mlflow` client:
`runs export --format mlflow URI` writes what MlflowClient reads back with
the store's values bit for bit, and `import mlflow URI` brings in what
`mlflow.log_*` wrote, so that `stats --by` groups it. Round trips both
ways: trainscope -> MLflow -> trainscope gives back every value, step,
param, tag, status, start and end, parent and artifact (point times to the
millisecond, MLflow's unit); MLflow -> trainscope -> MLflow gives back every
field MLflow holds, bit for bit. Into MLflow's SQLite store (its default)
and its folder store.

Runs are recorded for real: a C++ `train` on synthetic data (checkpoints as
artifacts) and Python runs, a parent with two children, whose metric holds
NaN, -0.0, the smallest subnormal and values float32 would round. TS_CLI,
PYTHONPATH: set by ctest; requirements/interop.txt installs mlflow."""
import json
import math
import os
import struct
import subprocess
import sys

import pytest

pytest.importorskip("mlflow")

import mlflow  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

import trainscope  # noqa: E402

CLI = os.environ["TS_CLI"]
CONFIG = ("data: {dataset: synthetic, synthetic: {size: 256}}\n"
          "model: {name: mlp}\n"
          "train: {epochs: 2, batch_size: 64}\n")
# One a step: NaN, -0, +-inf, the smallest subnormal, what float32 would round.
SPECIAL = [math.nan, -0.0, math.inf, -math.inf, 5e-324, 1e300, 0.1, 1 / 3, -1e-300, 3.5e38]
os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # its folder store, deprecated in MLflow 3
ENV = dict(os.environ, TRAINSCOPE_PYTHON=sys.executable)


def cli(store, *args, check=True):
    r = subprocess.run([CLI, "--store", "sqlite:" + str(store), *args], capture_output=True,
                       text=True, env=ENV)
    if check and r.returncode != 0:
        raise AssertionError(f"{args}: exit {r.returncode}: {r.stderr}")
    return r


def bits(v):
    return struct.pack("<d", float(v))


def held(v, kind):
    """A value as MLflow's store keeps it: its SQLite store (SQLAlchemy's
    REAL column) keeps -0.0 as 0.0 and +-inf as +-DBL_MAX; its folder store
    keeps every value."""
    if kind != "sqlite":
        return v
    if math.isinf(v):
        return math.copysign(sys.float_info.max, v)
    return 0.0 if v == 0 else v


def points(store, uuid):
    """Every metric point of a run as the store gives it: key -> [(step, time, value)]."""
    run = json.loads(cli(store, "runs", "export", "--format", "json", uuid).stdout)
    return {k: [(p["step"], p["wall_time"], float(p["value"])) for p in v]
            for k, v in run["metrics"].items()}, run


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    d = tmp_path_factory.mktemp("mlflow")
    store = d / "ts.db"
    (d / "tiny.yaml").write_text(CONFIG)
    cli(store, "train", str(d / "tiny.yaml"), "--name", "tiny")
    parent = trainscope.start_run(name="sweep", experiment="py", store=f"sqlite:{store}",
                                  tags={"team": "vision"}, record_environment=False)
    kids = []
    for lr in (0.1, 0.01):
        with trainscope.start_run(name=f"lr{lr}", experiment="py", store=f"sqlite:{store}",
                                  parent=parent.uuid, config={"optimizer": {"lr": lr}},
                                  record_environment=False) as r:
            for step, v in enumerate(SPECIAL):
                r.log({"special": v, "loss": 1.0 / (step + 1)}, step=step)
            kids.append(r.uuid)
    parent.finish()
    uuids = [u["uuid"] for u in json.loads(cli(store, "--json", "runs", "list").stdout)]
    return d, store, uuids, parent.uuid, kids


def mlflow_runs(client):
    out = {}
    for e in client.search_experiments():
        for r in client.search_runs([e.experiment_id]):
            out[r.data.tags["trainscope.run.uuid"]] = (e.name, r)
    return out


@pytest.mark.parametrize("kind", ["sqlite", "folder"])
def test_trainscope_to_mlflow_and_back(recorded, kind):
    d, store, uuids, parent, kids = recorded
    uri = f"sqlite:///{d}/{kind}.db" if kind == "sqlite" else str(d / f"{kind}-mlruns")
    out = cli(store, "runs", "export", "--format", "mlflow", "--out", uri)
    assert f"wrote {len(uuids)} runs" in out.stdout, out.stdout
    client = MlflowClient(tracking_uri=uri)
    got = mlflow_runs(client)
    assert set(got) == set(uuids)
    for uuid in uuids:
        mine, run = points(store, uuid)
        exp, r = got[uuid]
        assert exp == run["experiment"] and r.info.run_name == run["name"]
        assert r.info.status == run["status"].upper()
        assert r.data.params == run["params"]
        assert {k: v for k, v in r.data.tags.items()
                if not k.startswith(("trainscope.run.", "mlflow."))} == run["tags"]
        for key, series in mine.items():
            hist = client.get_metric_history(r.info.run_id, key)
            assert [(m.step, m.timestamp) for m in hist] == \
                [(s, round(t * 1000)) for s, t, _ in series], key
            assert [bits(m.value) for m in hist] == [bits(held(v, kind)) for _, _, v in series], key
        names = sorted(a["name"] for a in run["artifacts"])
        listed = sorted(f.path for f in client.list_artifacts(r.info.run_id, "checkpoints"))
        assert listed == [n for n in names if n.startswith("checkpoints/")]
    for k in kids:  # a parent and its children, as MLflow nests runs
        assert got[k][1].data.tags["mlflow.parentRunId"] == got[parent][1].info.run_id

    again = cli(store, "runs", "export", "--format", "mlflow", "--out", uri)
    assert f"{len(uuids)} exported before, left as they are" in again.stdout

    back = d / f"back-{kind}.db"
    out = cli(back, "import", "mlflow", uri)
    assert f"imported {len(uuids)} runs" in out.stdout, out.stdout + out.stderr
    for uuid in uuids:
        mine, run = points(store, uuid)
        theirs, run2 = points(back, uuid)  # the same UUID: it came back
        for field in ("name", "experiment", "status", "start_time", "end_time", "parent",
                      "params", "config", "command_line", "host", "pid"):
            assert run2[field] == run[field], field
        assert {k: v for k, v in run2["tags"].items() if not k.startswith("import.")} == \
            run["tags"]
        assert set(theirs) == set(mine)
        for key in mine:
            assert [(s, bits(v)) for s, _, v in theirs[key]] == \
                [(s, bits(held(v, kind))) for s, _, v in mine[key]], key
            assert all(abs(a[1] - b[1]) <= 0.0005 for a, b in zip(theirs[key], mine[key]))
        assert sorted((a["name"], a["sha256"], a["kind"]) for a in run2["artifacts"]) == \
            sorted((a["name"], a["sha256"], a["kind"]) for a in run["artifacts"])
    assert "exported from here" in cli(store, "import", "mlflow", uri).stderr


def test_what_mlflow_log_wrote_imports_groups_and_goes_back_bit_for_bit(tmp_path):
    uri = f"sqlite:///{tmp_path}/theirs.db"
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("mnist")
    runs = []
    with mlflow.start_run(run_name="sweep") as sweep:
        for i, (opt, acc) in enumerate([("adam", 0.91), ("adam", 0.92), ("adam", 0.90),
                                        ("sgd", 0.85), ("sgd", 0.86), ("sgd", 0.84)]):
            with mlflow.start_run(run_name=f"{opt}-{i}", nested=True) as r:
                mlflow.log_params({"optimizer": opt, "lr": 10 ** -(i % 3)})
                mlflow.set_tag("seed", str(i))
                for step in range(5):
                    mlflow.log_metric("test/accuracy", acc - 0.1 / (step + 1) + 1e-17 * step,
                                      step=step, timestamp=1_700_000_000_123 + 1000 * step + i)
                mlflow.log_metric("odd", [math.nan, -0.0, 5e-324][i % 3], step=0)
                runs.append(r.info.run_id)
    mlflow.set_tracking_uri("")  # what other tests of this process see

    store = tmp_path / "ts.db"
    out = cli(store, "import", "mlflow", uri, "--from", "mnist")
    assert "imported 7 runs" in out.stdout, out.stdout + out.stderr
    stats = json.loads(cli(store, "--json", "stats", "test/accuracy", "--by",
                           "params.optimizer").stdout)
    text = json.dumps(stats)
    assert '"adam"' in text and '"sgd"' in text, text
    listed = json.loads(cli(store, "--json", "runs", "list").stdout)
    sweep_uuid = next(r["uuid"] for r in listed if r["name"] == "sweep")
    assert sum(r.get("parent") == sweep_uuid for r in listed) == 6

    again = tmp_path / "again.db"
    cli(store, "runs", "export", "--format", "mlflow", "--out", f"sqlite:///{again}")
    a, b = MlflowClient(tracking_uri=uri), MlflowClient(tracking_uri=f"sqlite:///{again}")
    ra = {r.info.run_name: r for r in a.search_runs([a.get_experiment_by_name("mnist")
                                                      .experiment_id])}
    rb = {r.info.run_name: r for r in b.search_runs([b.get_experiment_by_name("mnist")
                                                      .experiment_id])}
    assert set(ra) == set(rb)
    for name, x in ra.items():
        y = rb[name]
        for f in ("status", "start_time", "end_time"):
            assert getattr(x.info, f) == getattr(y.info, f), (name, f)
        assert x.data.params == y.data.params
        # What came back, less trainscope's own facts and where it was imported from.
        assert {k: v for k, v in y.data.tags.items()
                if not k.startswith(("trainscope.run.", "import.")) and k != "mlflow.parentRunId"} == \
            {k: v for k, v in x.data.tags.items() if k != "mlflow.parentRunId"}
        assert ("mlflow.parentRunId" in x.data.tags) == ("mlflow.parentRunId" in y.data.tags)
        for key in x.data.metrics:
            hx = a.get_metric_history(x.info.run_id, key)
            hy = b.get_metric_history(y.info.run_id, key)
            assert [(m.step, m.timestamp, bits(m.value)) for m in hx] == \
                [(m.step, m.timestamp, bits(m.value)) for m in hy], (name, key)
    assert "imported before" in cli(store, "import", "mlflow", uri).stderr


def test_what_mlflow_cannot_hold_is_refused_before_anything_is_written(tmp_path):
    store = tmp_path / "ts.db"
    with trainscope.start_run(name="odd", store=f"sqlite:{store}",
                              record_environment=False) as r:
        r.log({"a|b": 1.0}, step=0)  # MLflow's names: letters, digits, _ - . space / :
    uri = f"sqlite:///{tmp_path}/m.db"
    out = cli(store, "runs", "export", "--format", "mlflow", "--out", uri, check=False)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "run " + r.uuid[:8] in out.stderr and "a|b" in out.stderr
    assert "nothing was exported" in out.stderr
    client = MlflowClient(tracking_uri=uri)
    assert not client.search_runs([e.experiment_id for e in client.search_experiments()])


def test_a_python_without_mlflow_is_named(tmp_path):
    store = tmp_path / "ts.db"
    with trainscope.start_run(name="r", store=f"sqlite:{store}", record_environment=False) as r:
        r.log({"loss": 1.0}, step=0)
    env = dict(ENV, TRAINSCOPE_PYTHON="/usr/bin/python3")  # Debian's: no mlflow
    out = subprocess.run([CLI, "--store", f"sqlite:{store}", "import", "mlflow",
                          f"sqlite:///{tmp_path}/m.db"], capture_output=True, text=True, env=env)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "cannot import mlflow" in out.stderr and "TRAINSCOPE_PYTHON" in out.stderr
    env["TRAINSCOPE_PYTHON"] = str(tmp_path / "no-such-python")
    out = subprocess.run([CLI, "--store", f"sqlite:{store}", "runs", "export", "--format",
                          "mlflow", "--out", f"sqlite:///{tmp_path}/m.db"], capture_output=True,
                         text=True, env=env)
    assert out.returncode == 2 and "cannot run" in out.stderr, out.stderr


# --- the thirty-fifth hunt, tester B: what an MLflow store may hold ----------

def mlflow_run(uri, name="r", tags=None, params=None, points=(), artifact=None):
    """One finished MLflow run written by MLflow's client; its id."""
    client = MlflowClient(tracking_uri=uri)
    e = client.get_experiment_by_name("e")
    exp = e.experiment_id if e else client.create_experiment("e")
    r = client.create_run(exp, run_name=name, tags=tags or {}).info.run_id
    for k, v in (params or {}).items():
        client.log_param(r, k, v)
    for key, value, ts, step in points:
        client.log_batch(r, metrics=[mlflow.entities.Metric(key, value, ts, step)])
    if artifact:
        client.log_artifact(r, str(artifact))
    client.set_terminated(r, "FINISHED")
    return r


def refused(store, uri, *words):
    out = cli(store, "import", "mlflow", uri, check=False)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    for w in words:
        assert w in out.stderr, out.stderr
    assert "nothing was imported" in out.stderr
    assert json.loads(cli(store, "--json", "runs", "list").stdout) == []


def test_a_timestamp_that_is_no_time_of_day_is_refused(tmp_path):
    """B-D1: 2^62 ms was imported; every reader then called the store damaged."""
    uri = f"sqlite:///{tmp_path}/m.db"
    mlflow_run(uri, points=[("loss", 1.0, 2 ** 62, 1)])
    refused(tmp_path / "ts.db", uri, "metric 'loss' at step 1", "no time of day")


@pytest.mark.parametrize("value, words", [
    # Thirty-fifth hunt, B-D2: bytes that are not UTF-8 printed 59 lines.
    ("CAST(X'61FF62' AS TEXT)", ["not UTF-8"]),
    # Thirty-sixth hunt, A-D10: a BLOB, 25 lines of traceback and a wrong cause.
    ("x'00ff41'", ["param 'p'", "not text"]),
])
def test_param_bytes_mlflow_never_writes_are_one_line(tmp_path, value, words):
    uri = f"sqlite:///{tmp_path}/m.db"
    mlflow_run(uri, params={"p": "1"})
    import sqlite3
    with sqlite3.connect(tmp_path / "m.db") as db:
        db.execute(f"UPDATE params SET value = {value}")
    refused(tmp_path / "ts.db", uri, *words)


def test_steps_that_go_back_in_time_are_refused(tmp_path):
    """B-D3: sorted by step and taken; Python and import tfevents refuse them."""
    uri = f"sqlite:///{tmp_path}/m.db"
    mlflow_run(uri, points=[("loss", 1.0, 1_700_000_001_000, 5), ("loss", 0.5, 1_700_000_002_000, 3)])
    refused(tmp_path / "ts.db", uri, "goes back")


def test_another_programs_series_named_as_trainscopes_are_kept_aside(tmp_path):
    """B-D4: exit_code and probe/* from another program read as trainscope's."""
    uri = f"sqlite:///{tmp_path}/m.db"
    mlflow_run(uri, points=[("exit_code", 3.0, 1_700_000_001_000, 0),
                            ("probe/fc1/weights/l2", 5.0, 1_700_000_001_000, 0)])
    store = tmp_path / "ts.db"
    cli(store, "import", "mlflow", uri)
    keys = {m["key"] for m in json.loads(cli(store, "--json", "runs", "show", "r").stdout)
            ["metric_summaries"]}
    assert keys == {"mlflow/exit_code", "mlflow/probe/fc1/weights/l2"}


def test_an_import_cut_short_is_replaced_however_the_uri_is_spelled(tmp_path, monkeypatch):
    """B-D5: a run an import killed midway (no import.mlflow_run_id) was
    kept beside a second import under another spelling of the URI."""
    mlflow_run(str(tmp_path / "ml"), points=[("loss", 1.0, 1_700_000_001_000, 1)])
    store = tmp_path / "ts.db"
    monkeypatch.chdir(tmp_path)
    cli(store, "import", "mlflow", "ml")
    import sqlite3
    with sqlite3.connect(store) as db:  # as a SIGKILL before its last write leaves it
        db.execute("DELETE FROM tags WHERE key = 'import.mlflow_run_id'")
    out = cli(store, "import", "mlflow", str(tmp_path / "ml"))
    assert "imported 1 run" in out.stdout and "replacing run" in out.stderr, out.stderr
    assert len(json.loads(cli(store, "--json", "runs", "list").stdout)) == 1


def test_another_programs_run_is_not_made_one_of_a_studys_runs(tmp_path):
    """B-D6: a foreign child of an exported study counted as a planned run."""
    uri = f"sqlite:///{tmp_path}/m.db"
    study = mlflow_run(uri, name="s1", tags={"trainscope.run.uuid": "0" * 8 + "-0000-4000-8000-"
                                             + "0" * 12, "kind": "study"})
    mlflow_run(uri, name="lr=0.1/r2", tags={"mlflow.parentRunId": study},
               points=[("acc", 0.9, 1_700_000_001_000, 1)])
    store = tmp_path / "ts.db"
    cli(store, "import", "mlflow", uri)
    runs = {r["name"]: r for r in json.loads(cli(store, "--json", "runs", "list").stdout)}
    assert runs["lr=0.1/r2"].get("parent") in (None, "")
    shown = json.loads(cli(store, "--json", "runs", "show", "lr=0.1/r2").stdout)
    assert shown["tags"]["mlflow.parentRunId"] == study


def test_a_bad_artifact_kind_or_name_is_refused_before_any_run_is_written(tmp_path):
    """B-D7, B-D8: a kind Python refuses was caught while writing (a run
    written before it stayed), and a refused name was not named."""
    uri = f"sqlite:///{tmp_path}/m.db"
    (tmp_path / "a.txt").write_text("x")
    mlflow_run(uri, name="good", points=[("loss", 1.0, 1_700_000_001_000, 1)])
    mlflow_run(uri, name="bad", artifact=tmp_path / "a.txt",
               tags={"trainscope.run.uuid": "1" * 8 + "-0000-4000-8000-" + "0" * 12,
                     "trainscope.run.artifact_kinds": json.dumps({"a.txt": "Bad Kind"})})
    refused(tmp_path / "ts.db", uri, "(bad)", "artifact kind 'Bad Kind'")


def test_keys_kept_aside_may_not_meet_keys_already_there(tmp_path):
    """Thirty-sixth hunt, B-D8: kind and mlflow.tag.kind became one tag,
    exit_code and mlflow/exit_code one series."""
    uri = f"sqlite:///{tmp_path}/m.db"
    mlflow_run(uri, tags={"kind": "x", "mlflow.tag.kind": "y"})
    refused(tmp_path / "ts.db", uri, "would both be kept as 'mlflow.tag.kind'")
    uri2 = f"sqlite:///{tmp_path}/m2.db"
    mlflow_run(uri2, points=[("exit_code", 3.0, 1_700_000_001_000, 0),
                             ("mlflow/exit_code", 4.0, 1_700_000_001_000, 0)])
    refused(tmp_path / "ts2.db", uri2, "would both be kept as 'mlflow/exit_code'")


def test_an_import_never_replaces_a_run_another_importer_made(tmp_path):
    """Thirty-seventh hunt, A-D1: a tfevents folder whose path ended in
    " run X" was taken for an MLflow import of run X cut short, and deleted
    by the import of an MLflow run whose id was X."""
    from torch.utils.tensorboard import SummaryWriter
    rid = mlflow_run(f"sqlite:///{tmp_path}/m.db", points=[("loss", 1.0, 1_700_000_001_000, 1)])
    folder = tmp_path / "tb" / f"lr0.1 run {rid}"
    with SummaryWriter(str(folder)) as w:
        w.add_scalar("loss", 0.5, 0)
    store = tmp_path / "ts.db"
    cli(store, "import", "tfevents", str(tmp_path / "tb"))
    out = cli(store, "import", "mlflow", f"sqlite:///{tmp_path}/m.db")
    assert "replacing" not in out.stderr and "imported 1 run" in out.stdout, out.stderr
    names = sorted(r["name"] for r in json.loads(cli(store, "--json", "runs", "list").stdout))
    assert names == sorted(["r", f"lr0.1 run {rid}"])


def test_an_earlier_imports_markers_carried_by_a_run_are_not_this_imports(tmp_path):
    """A-D4: a run imported from MLflow, exported again and imported into a
    third store carried the first import's import.* tags over its own: the
    provenance named the first store, and a cut-short import was skipped
    as whole forever."""
    first = f"sqlite:///{tmp_path}/m1.db"
    mlflow_run(first, points=[("loss", 1.0, 1_700_000_001_000, 1)])
    cli(tmp_path / "a.db", "import", "mlflow", first)
    second = f"sqlite:///{tmp_path}/m2.db"
    cli(tmp_path / "a.db", "runs", "export", "--format", "mlflow", "--out", second)
    rid2 = MlflowClient(tracking_uri=second).search_runs(
        [MlflowClient(tracking_uri=second).get_experiment_by_name("e").experiment_id])[0].info.run_id
    store = tmp_path / "c.db"
    cli(store, "import", "mlflow", second)
    tags = json.loads(cli(store, "--json", "runs", "show", "r").stdout)["tags"]
    assert tags["import.source"] == f"{second} run {rid2}"
    assert tags["import.mlflow_run_id"] == rid2
    import sqlite3
    with sqlite3.connect(store) as db:  # as a SIGKILL before its last write leaves it
        db.execute("DELETE FROM tags WHERE key = 'import.mlflow_run_id'")
    out = cli(store, "import", "mlflow", second)
    assert "replacing run" in out.stderr and "imported 1 run" in out.stdout, out.stderr


def test_an_export_into_a_folder_store_holding_a_fifo_is_refused_at_once(tmp_path):
    """A-D3: the export's first read of the folder blocked on the FIFO."""
    store = tmp_path / "ts.db"
    mlflow_run(str(tmp_path / "src"), points=[("loss", 1.0, 1_700_000_001_000, 1)])
    cli(store, "import", "mlflow", str(tmp_path / "src"))
    out_dir = tmp_path / "out"
    cli(store, "runs", "export", "--format", "mlflow", "--out", str(out_dir))
    (out_dir / "0" / "meta.yaml").unlink()
    os.mkfifo(out_dir / "0" / "meta.yaml")
    r = subprocess.run([CLI, "--store", f"sqlite:{store}", "runs", "export", "--format",
                        "mlflow", "--out", str(out_dir)], capture_output=True, text=True,
                       env=ENV, timeout=60)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "'0/meta.yaml' is a FIFO (named pipe), not a file" in r.stderr


def test_a_file_of_a_folder_store_that_is_no_yaml_is_one_line_naming_it(tmp_path):
    """A-D5: exit 5 (a damaged trainscope store) and MLflow's ParserError."""
    rid = mlflow_run(str(tmp_path / "ml"))
    meta = next((tmp_path / "ml").glob(f"*/{rid}/meta.yaml"))
    meta.write_text("{{{ not yaml")
    out = cli(tmp_path / "ts.db", "import", "mlflow", str(tmp_path / "ml"), check=False)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"'{meta.relative_to(tmp_path / 'ml')}' is not YAML" in out.stderr


def test_a_key_mlflows_client_refuses_names_where_it_is(tmp_path):
    """B-D7: "MLflow failed: MlflowException", exit 5, no run named."""
    rid = mlflow_run(str(tmp_path / "ml"), points=[("acc", 1.0, 1_700_000_001_000, 0)])
    metrics = next((tmp_path / "ml").glob(f"*/{rid}/metrics"))
    (metrics / "acc").rename(metrics / "acc%")
    out = cli(tmp_path / "ts.db", "import", "mlflow", str(tmp_path / "ml"), check=False)
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert f"/{rid}/metrics/acc%'" in out.stderr and "nothing was imported" in out.stderr


def test_a_pid_that_is_not_digits_alone_is_no_pid(tmp_path):
    """Thirty-eighth hunt, A-D11: trainscope.run.pid '12abc' became pid 12."""
    src = tmp_path / "src.db"
    rid = mlflow_run(f"sqlite:///{tmp_path}/m0.db")
    cli(src, "import", "mlflow", f"sqlite:///{tmp_path}/m0.db")
    uri = f"sqlite:///{tmp_path}/m.db"
    cli(src, "runs", "export", "--format", "mlflow", "--out", uri)
    import sqlite3
    with sqlite3.connect(tmp_path / "m.db") as db:
        db.execute("UPDATE tags SET value = '12abc' WHERE key = 'trainscope.run.pid'")
        assert db.execute("SELECT changes()").fetchone()[0] == 1, rid
    store = tmp_path / "ts.db"
    cli(store, "import", "mlflow", uri)
    assert json.loads(cli(store, "--json", "runs", "show", "r").stdout)["pid"] == 0
