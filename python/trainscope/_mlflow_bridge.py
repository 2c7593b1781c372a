"""The MLflow half of `trainscope runs export --format mlflow URI` and
`trainscope import mlflow URI`, run by the CLI (src/mlflow/bridge.cc) as

    PYTHON _mlflow_bridge.py export|read REQUEST.json RESULT.json

The real mlflow client (MlflowClient) reads and writes the tracking store;
the CLI reads and writes trainscope's store and hands runs over as JSON
files (non-finite values as the strings "nan", "inf", "-inf"). Not an API:
the request and result shapes are src/mlflow/README.md's. Imports neither
torch nor trainscope's extension, only mlflow (3.x)."""
import json
import logging
import math
import os
import stat
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Run as a file, Python puts this folder first on sys.path, where
# lightning.py and transformers.py would hide the packages mlflow imports.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != HERE]

# trainscope's own facts about a run (its UUID, host, ...) travel as MLflow
# tags under this prefix; `trainscope.run.exported` is written last.
OWN = "trainscope.run."
WHOLE = OWN + "exported"
NO_ROOM = 3  # the exit status when the answer cannot be written
# A stopped run (resumable) is KILLED to MLflow; its tag keeps the status.
TO_MLFLOW = {"finished": "FINISHED", "failed": "FAILED", "killed": "KILLED",
             "stopped": "KILLED"}
FROM_MLFLOW = {"FINISHED": "finished", "FAILED": "failed", "KILLED": "killed"}


class Refused(Exception):
    """One line for the user; `kind` is the CLI's error kind."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def number(v):
    if isinstance(v, str):
        return float(v)  # "nan", "inf", "-inf"
    return float(v)


def jsonable(v, where):
    """A metric value as the CLI takes it; one that is no number (text a
    store holds where MLflow's own writer puts numbers) refused, named."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise Refused("usage", f"{where} holds {str(v)[:40]!r}, not a number; nothing was "
                               "imported")
    v = float(v)
    return v if math.isfinite(v) else ("nan" if v != v else ("inf" if v > 0 else "-inf"))


def client_for(uri, reading):
    # An unreachable server is said after two tries, not after four minutes.
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    try:
        import mlflow  # noqa: F401
        from mlflow.tracking import MlflowClient
    except ImportError as e:
        raise Refused("usage", f"the Python at {sys.executable} cannot import mlflow ({e}): "
                               "install it there (pip install mlflow), or set TRAINSCOPE_PYTHON "
                               "to a Python that has it")
    # MLflow logs its failures (a traceback among them) before it raises:
    # the CLI says each in one line (thirty-fifth hunt, B-D2).
    logging.disable(logging.CRITICAL)
    check_store(uri, reading)
    if "://" not in uri or uri.startswith("file:"):
        # The folder store: deprecated by MLflow 3, still what many hold.
        os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    try:
        return MlflowClient(tracking_uri=uri)
    except Exception as e:  # noqa: BLE001 (MLflow's own message says why)
        raise Refused("usage", f"MLflow cannot open '{uri}': {first_line(e)}")


def local_path(uri):
    """The file or folder of a local MLflow URI (sqlite:///F, file:D, a
    path), else None."""
    if uri is None:
        return None
    if uri.startswith("sqlite:///"):
        return uri[len("sqlite:///"):]
    if uri.startswith("file://"):
        return uri[len("file://"):]
    if uri.startswith("file:"):
        return uri[len("file:"):]
    return None if "://" in uri else uri


def kind_of(mode):
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return name
    return "not a regular file"


def check_folder(folder, what):
    """Every entry under a local folder MLflow will read is a file or a
    folder: a FIFO would block its reader, a device never end (thirty-fifth
    hunt, A-D6, A-D9)."""
    if not folder or not os.path.isdir(folder):
        return
    for top, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(top, name)
            try:
                mode = os.stat(path).st_mode
            except OSError:
                continue  # a link that leads nowhere: MLflow says so
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                raise Refused("usage", f"{what}: '{os.path.relpath(path, folder)}' is "
                                       f"{kind_of(mode)}, not a file; move it away")


def check_store(uri, reading):
    """A local store is what it should be before MLflow's client opens it:
    to read, one that exists (a typo made an empty store: A-D8); a SQLite
    store a regular file (a FIFO was retried for two minutes: A-D9)."""
    path = local_path(uri)
    if path is None:
        return
    sqlite = uri.startswith("sqlite:")
    if not os.path.exists(path):
        if reading:
            raise Refused("not_found", f"MLflow store '{uri}' does not exist: check the "
                                       f"{'file' if sqlite else 'folder'}'s name")
        return
    mode = os.stat(path).st_mode
    if sqlite and not stat.S_ISREG(mode):
        raise Refused("usage", f"MLflow store '{uri}' is {kind_of(mode)}, not a SQLite file")
    if not sqlite and not stat.S_ISDIR(mode):
        raise Refused("usage", f"MLflow store '{uri}' is {kind_of(mode)}, not a folder")
    if not sqlite:  # an export reads the folder too (thirty-seventh hunt, A-D3)
        check_folder(path, f"MLflow store '{uri}'")


def say(line):
    """A line on stderr, if it can be said: a closed or full stderr never
    ends the export (A-D11)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def first_line(e):
    """An exception's message as one line (its lines joined), at most 300
    characters."""
    text = " ".join(line.strip() for line in str(e).strip().splitlines() if line.strip())
    text = text or type(e).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def artifact_root(uri):
    """Where a new experiment keeps its artifacts: beside a SQLite file."""
    if uri.startswith("sqlite:///"):
        return os.path.join(os.path.dirname(os.path.abspath(uri[len("sqlite:///"):])),
                            "mlartifacts")
    return None  # MLflow's default for the store


def experiment_id(client, name, root, cache):
    if name in cache:
        return cache[name]
    e = client.get_experiment_by_name(name)
    if e is not None and e.lifecycle_stage != "active":
        raise Refused("conflict", f"MLflow's experiment '{name}' is deleted: restore it "
                                  "(mlflow experiments restore) or export into another store")
    cache[name] = e.experiment_id if e else client.create_experiment(name, root)
    return cache[name]


def exported_before(client):
    """trainscope UUID -> (MLflow run id, whole?) for runs exported before."""
    from mlflow.entities import ViewType
    ids = [e.experiment_id for e in client.search_experiments(view_type=ViewType.ACTIVE_ONLY)]
    found = {}
    token = None
    while ids:
        page = client.search_runs(ids, filter_string=f"tags.`{OWN}uuid` LIKE '%'",
                                  max_results=1000, page_token=token)
        for r in page:
            tags = r.data.tags
            found[tags[OWN + "uuid"]] = (r.info.run_id, tags.get(WHOLE) == "whole")
        token = page.token
        if not token:
            break
    return found


def own_tags(run):
    tags = {OWN + "uuid": run["uuid"], OWN + "host": run.get("host", ""),
            OWN + "pid": str(run.get("pid", 0)), OWN + "status": run["status"],
            OWN + "start_time": repr(run["start_time"]),
            OWN + "end_time": repr(run.get("end_time", 0.0))}
    kinds = json.dumps({a["name"]: a["kind"] for a in run.get("artifacts", [])})
    for key, value in (("command_line", run.get("command_line")), ("config", run.get("config")),
                       ("config_hash", run.get("config_hash")), ("parent", run.get("parent")),
                       ("artifact_kinds", kinds)):
        if value and len(value) <= 8000:  # MLflow's longest tag value; else left out
            tags[OWN + key] = value
    return tags


def check_run(run):
    """MLflow's own rules for every key and value, before anything is written."""
    from mlflow.exceptions import MlflowException
    from mlflow.utils import validation as v
    where = f"run {run['uuid'][:8]} ({run.get('name') or 'unnamed'})"
    try:
        for key in run["metrics"]:
            v._validate_metric_name(key)
        for key, value in run["params"].items():
            v._validate_param(key, value)
        for key, value in run["tags"].items():
            v._validate_tag(key, value)
    except MlflowException as e:
        raise Refused("usage", f"{where} cannot be written to MLflow: {first_line(e)} "
                               "(MLflow's rule for names and values); nothing was exported")


def write_run(client, run, exp, parent_id, made):
    from mlflow.entities import Metric, Param, RunTag
    tags = dict(run["tags"])
    tags.update(own_tags(run))
    if parent_id:
        tags["mlflow.parentRunId"] = parent_id
    m = client.create_run(exp, start_time=round(run["start_time"] * 1000),
                          run_name=run.get("name") or None)
    rid = m.info.run_id
    made.append(rid)
    tag_list = [RunTag(k, v) for k, v in tags.items()]
    params = [Param(k, v) for k, v in run["params"].items()]
    for i in range(0, max(len(params), len(tag_list)), 100):
        client.log_batch(rid, params=params[i:i + 100], tags=tag_list[i:i + 100])
    points = [Metric(key, number(v), round(t * 1000), int(s))
              for key, series in run["metrics"].items() for s, t, v in series]
    for i in range(0, len(points), 1000):
        client.log_batch(rid, metrics=points[i:i + 1000])
    artifacts = 0
    for a in run.get("artifacts", []):
        if os.path.isfile(a["path"]):
            client.log_artifact(rid, a["path"], os.path.dirname(a["name"]) or None)
            artifacts += 1
        else:
            say(f"trainscope: run {run['uuid'][:8]}: artifact '{a['name']}' is missing from "
                "the store's folder; exported without it")
    if run["status"] in TO_MLFLOW:  # ended
        client.set_terminated(rid, TO_MLFLOW[run["status"]],
                              end_time=round(run["end_time"] * 1000))
        client.set_tag(rid, WHOLE, "whole")  # last: the export of this run is whole
    return rid, len(points), artifacts


def write_whole(client, run, exp, parent):
    """write_run, or no run: one it could not finish (a full disk, past the
    file size limit) is deleted, not left RUNNING half-written (A-D12)."""
    made = []
    try:
        return write_run(client, run, exp, parent, made)
    except BaseException:
        for rid in made:
            try:
                client.delete_run(rid)
            except Exception:  # noqa: BLE001 (the first failure is the one said)
                pass
        raise


def export(req):
    client = client_for(req["uri"], reading=False)
    for run in req["runs"]:
        check_run(run)
    before = exported_before(client)
    root, experiments, ids, out = artifact_root(req["uri"]), {}, {}, []
    for run in req["runs"]:  # parents before their children
        rid, whole = before.get(run["uuid"], (None, False))
        row = {"uuid": run["uuid"], "already": whole}
        if rid and not whole:
            client.delete_run(rid)  # an earlier export cut short, or of a run not ended
        if not whole:
            exp = experiment_id(client, run["experiment"], root, experiments)
            parent = ids.get(run.get("parent")) or before.get(run.get("parent"), (None,))[0]
            rid, row["points"], row["artifacts"] = write_whole(client, run, exp, parent)
        ids[run["uuid"]] = row["mlflow_run_id"] = rid
        out.append(row)
        progress(f"[{len(out)}/{len(req['runs'])}] runs exported")
    return {"runs": out}


def progress(line):
    """A line that replaces itself, on a terminal only."""
    if sys.stderr.isatty():
        print(f"\r{line}", end="", file=sys.stderr, flush=True)


def history(client, r, key):
    where = f"MLflow run {r.info.run_id[:8]} ({r.info.run_name or 'unnamed'}): metric {key[:64]!r}"
    try:
        points = client.get_metric_history(r.info.run_id, key)
    except (ValueError, TypeError) as e:  # a value its folder store cannot read as a number
        raise Refused("usage", f"{where} cannot be read: {first_line(e)}; nothing was imported")
    return [[m.step, m.timestamp / 1000.0, jsonable(m.value, where)] for m in points]


def text_of(v, where):
    """A name, param or tag value as text; bytes a store holds where MLflow
    writes text (a BLOB) refused, named (thirty-sixth hunt, A-D10)."""
    if v is None or isinstance(v, str):
        return v or ""
    raise Refused("usage", f"{where} holds {type(v).__name__} {str(v)[:40]}, not text; nothing "
                           "was imported")


def millis(v, where):
    """A run's start or end in seconds; a value that is no number of
    milliseconds refused, named (A-D11)."""
    if v is None:
        return 0.0
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise Refused("usage", f"{where} is {str(v)[:40]!r}, not a time in milliseconds; nothing "
                               "was imported")
    return v / 1000.0


def read_run(client, r, experiment, artifacts_dir):
    rid = r.info.run_id
    where = f"MLflow run {rid[:8]}"
    name = text_of(r.info.run_name, f"{where}'s name")
    where = f"MLflow run {rid[:8]} ({name or 'unnamed'})"
    row = {"mlflow_run_id": rid, "experiment": experiment, "name": name,
           "status": FROM_MLFLOW.get(r.info.status, str(r.info.status).lower()),
           "start_time": millis(r.info.start_time, f"{where}: its start"),
           "end_time": millis(r.info.end_time, f"{where}: its end"),
           "params": {k: text_of(v, f"{where}: param {k[:64]!r}")
                      for k, v in r.data.params.items()},
           "tags": {k: text_of(v, f"{where}: tag {k[:64]!r}") for k, v in r.data.tags.items()},
           "metrics": {key: history(client, r, key) for key in r.data.metrics},
           "artifacts": []}
    if artifacts_dir and client.list_artifacts(rid):
        check_folder(local_path(r.info.artifact_uri),
                     f"MLflow run {rid[:8]} ({r.info.run_name or 'unnamed'})'s artifacts")
        dst = os.path.join(artifacts_dir, rid)
        os.makedirs(dst, exist_ok=True)
        try:
            local = client.download_artifacts(rid, "", dst)
        except Exception as e:  # noqa: BLE001 (the run named, MLflow's words after)
            raise Refused("usage", f"MLflow run {rid[:8]} ({r.info.run_name or 'unnamed'}): its "
                                   f"artifacts cannot be read: {first_line(e)}; nothing was "
                                   "imported")
        for folder, _, files in os.walk(local):
            for f in sorted(files):
                path = os.path.join(folder, f)
                row["artifacts"].append({"name": os.path.relpath(path, local), "path": path})
    return row


def read(req):
    client = client_for(req["uri"], reading=True)
    from mlflow.entities import ViewType
    wanted = req.get("experiments") or []
    exps = client.search_experiments(view_type=ViewType.ACTIVE_ONLY)
    missing = sorted(set(wanted) - {e.name for e in exps})
    if missing:
        raise Refused("not_found", f"'{req['uri']}' has no experiment '{missing[0]}' (it has: "
                                   f"{', '.join(sorted(e.name for e in exps)) or 'none'})")
    out = []
    for e in exps:
        if wanted and e.name not in wanted:
            continue
        token = None
        while True:
            page = client.search_runs([e.experiment_id], max_results=1000, page_token=token)
            out += [read_run(client, r, e.name, req.get("artifacts_dir")) for r in page]
            progress(f"{len(out)} MLflow runs read")
            token = page.token
            if not token:
                break
    return {"runs": out}


def die_with_parent():
    """Ends with the CLI that started it: one killed leaves no bridge behind
    blocked on what it read (A-D9)."""
    try:
        import ctypes
        import signal
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the CLI was gone before that
        sys.exit(1)


def where_in_folder(uri, name):
    """Where under a local folder store the entry called `name` is (its
    experiment and run folders), for a message naming the run; else ""."""
    folder = local_path(uri)
    if not folder or not name or not os.path.isdir(folder):
        return ""
    for top, dirs, files in os.walk(folder):
        if name in dirs or name in files:
            return f", at '{os.path.relpath(os.path.join(top, name), folder)}'"
    return ""


def unreadable(req, e, text):
    """Bad input MLflow's client refuses to read: a file of a folder store
    that is no YAML, a key MLflow never writes (thirty-seventh hunt, A-D5,
    B-D7); None when `e` is none of these."""
    uri = req.get("uri", "?")
    tail = "nothing more was exported" if req.get("direction") == "export" else \
        "nothing was imported"
    if type(e).__module__.split(".")[0] == "yaml":
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        path = getattr(mark, "name", "") or "a file"
        shown = os.path.relpath(path, local_path(uri) or ".") if path != "a file" else path
        where = f", line {mark.line + 1}" if mark is not None else ""
        why = getattr(e, "problem", None) or text[:120]
        return {"error": f"MLflow's store '{uri}': '{shown}' is not YAML ({why}{where}); move it "
                         f"away or restore it; {tail}", "kind": "usage"}
    if getattr(e, "error_code", "") == "INVALID_PARAMETER_VALUE":
        bad = text.split('"')[1] if text.count('"') >= 2 else ""
        return {"error": f"MLflow's client refuses what '{uri}' holds{where_in_folder(uri, bad)} "
                         f"({text.split(' supplied:')[0][:160]}); {tail}", "kind": "usage"}
    return None


def failure(req, e):
    """MLflow's exception as the CLI's error: text that is not UTF-8 in the
    store (its client cannot decode it) is bad input, anything else a store
    error."""
    text = first_line(e)
    if refused := unreadable(req, e, text):
        return refused
    if "decode" in text.lower() and "utf-8" in text.lower():
        return {"error": f"MLflow's store '{req.get('uri', '?')}' holds text that is not UTF-8, "
                         f"which its client cannot read ({text[:160]}); nothing was imported",
                "kind": "usage"}
    hint = ""
    if any(w in text.lower() for w in ("disk i/o error", "disk is full", "no space left")):
        hint = " (a full disk, or past the file size limit: `ulimit -f`?)"
    if isinstance(e, (TypeError, ValueError, KeyError, AttributeError)) or \
            "could not get string corresponding to run status" in text.lower():
        # Values MLflow's own client cannot make sense of: the store holds
        # what its writer never writes (A-D11).
        return {"error": f"MLflow's client cannot read '{req.get('uri', '?')}' ({type(e).__name__}: "
                         f"{text[:200]}): the store holds values its writer never writes; nothing "
                         "was imported", "kind": "usage"}
    return {"error": f"MLflow failed: {type(e).__name__}: {text}{hint}", "kind": "store"}


def main(argv):
    if len(argv) != 4 or argv[1] not in ("export", "read"):
        print("usage: _mlflow_bridge.py export|read REQUEST.json RESULT.json", file=sys.stderr)
        return 2
    die_with_parent()
    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"  # ours is the CLI's
    try:
        with open(argv[2], encoding="utf-8") as f:
            req = json.load(f)
        req["direction"] = argv[1]
        result = export(req) if argv[1] == "export" else read(req)
    except Refused as e:
        result = {"error": str(e), "kind": e.kind}
    except Exception as e:  # noqa: BLE001 (MLflow's failure, said in one line)
        result = failure(req if "req" in locals() else {}, e)
    progress("\033[K")  # the progress line, cleared
    try:
        text = json.dumps(result, allow_nan=False)
    except (TypeError, ValueError) as e:  # a value the checks above let through
        text = json.dumps({"error": f"MLflow's answer cannot be handed over: {first_line(e)}",
                           "kind": "store"})
    try:
        with open(argv[3], "w", encoding="utf-8") as f:
            f.write(text)
    except OSError:
        return NO_ROOM  # the CLI says it (src/mlflow/bridge.cc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
