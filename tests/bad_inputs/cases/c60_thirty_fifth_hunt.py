"""Issue 51 (and 50): what the thirty-fifth hunt found in `import mlflow`
and `runs export --format mlflow` and this stop fixed (docs/reliability.md,
"A thirty-fifth hunt"): an MLflow store's bytes are checked as every entry
point checks them, a store that is not there or not a store is said at
once, and trainscope's own store is never handed to MLflow's client."""

TITLE = "60. A thirty-fifth hunt: MLflow stores as untrusted input (issues 50, 51)"

PYEXE = "TRAINSCOPE_PYTHON=$($PY -c 'import sys; print(sys.executable)')"
SHORT_IDS = "sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2; exit ${PIPESTATUS[0]}"
M60 = f"{PYEXE} $BARE --store sqlite:$DIR/t60.db"


def fixtures(d, run):
    # One finished MLflow run 'm1' (metric loss at steps 0 and 1), written
    # by MLflow's own client, and a copy to edit per row.
    run("rm -rf $DIR/ml60* && $PY -c \"import logging, sys; logging.disable(logging.WARNING); "
        "from mlflow.tracking import MlflowClient; from mlflow.entities import Metric; "
        "c = MlflowClient(tracking_uri='sqlite:///' + sys.argv[1]); "
        "r = c.create_run(c.create_experiment('x'), run_name='m1').info.run_id; "
        "c.log_batch(r, metrics=[Metric('loss', .5, 1700000000000, 0), "
        "Metric('loss', .4, 1700000001000, 1)]); c.set_terminated(r, 'FINISHED')\" "
        "$DIR/ml60.db 2> /dev/null")


def edited(name, sql):
    """A copy of the MLflow store with `sql` applied, then imported."""
    return (f"cp $DIR/ml60.db $DIR/{name}.db && sqlite3 $DIR/{name}.db \"{sql}\" && {M60} import "
            f"mlflow sqlite:///$DIR/{name}.db 2>&1 >/dev/null | {SHORT_IDS}")


CASES = [
    ("import mlflow: a point's timestamp of 9e17 ms (was: imported; every reader then called the "
     "store damaged)",
     edited("ml60a", "UPDATE metrics SET timestamp = 900000000000000000 WHERE step = 1")),
    ("import mlflow: a metric value that is text (was: the bridge's TypeError)",
     edited("ml60b", "UPDATE metrics SET value = 'abc' WHERE step = 1")),
    ("import mlflow: steps that go back in the order of their timestamps (was: sorted and taken)",
     edited("ml60c", "UPDATE metrics SET timestamp = 1600000000000 WHERE step = 1")),
    ("import mlflow: a param value that is not UTF-8 (was: 59 lines of MLflow's traceback)",
     "cp $DIR/ml60.db $DIR/ml60d.db && sqlite3 $DIR/ml60d.db \"INSERT INTO params SELECT 'p', "
     f"CAST(X'61FF62' AS TEXT), run_uuid FROM runs\" && {M60} import mlflow "
     "sqlite:///$DIR/ml60d.db 2>&1 >/dev/null | cut -c1-95 >&2; exit ${PIPESTATUS[0]}"),
    ("import mlflow: a character device among a run's artifacts (was: copied until the disk was "
     "full)",
     "rm -rf $DIR/art60 && mkdir $DIR/art60 && mknod $DIR/art60/zero c 1 5 && "
     + edited("ml60e", "UPDATE runs SET artifact_uri = '$DIR/art60'")),
    ("import mlflow of a store that is not there (was: an empty MLflow store made, \"imported 0 "
     "runs\")",
     f"{M60} import mlflow sqlite:///$DIR/typo/mlfow.db; rc=$?; test ! -e $DIR/typo || echo "
     "'made typo' >&2; exit $rc"),
    ("import mlflow of a FIFO as the SQLite file (was: two minutes of MLflow's retries)",
     f"rm -f $DIR/ff60 && mkfifo $DIR/ff60 && {M60} import mlflow sqlite:///$DIR/ff60"),
    ("runs export --format mlflow into the command's own store (was: MLflow's tables added to it)",
     f"{M60} -q watch --name w60 -- true > /dev/null && {M60} runs export --format mlflow --out "
     "sqlite:///$DIR/t60.db"),
    ("runs export --format mlflow of an artifact whose bytes changed (was: exported without a "
     "word)",
     "f=$(ls $DIR/t60-artifacts/*/stdout.txt | head -1) && chmod u+w $f && echo changed > $f && "
     f"{M60} runs export w60 --format mlflow --out sqlite:///$DIR/o60.db 2>&1 >/dev/null | "
     "sed -E 's/[0-9a-f-]{36}/<uuid>/' >&2; exit ${PIPESTATUS[0]}"),
    ("TRAINSCOPE_PYTHON that is no Python (was: exit 5, a store error)",
     "TRAINSCOPE_PYTHON=/bin/true $BARE --store sqlite:$DIR/t60.db import mlflow "
     "sqlite:///$DIR/ml60.db 2>&1 | sed -E 's#[^ ]*/_mlflow_bridge.py#BRIDGE#' >&2; "
     "exit ${PIPESTATUS[0]}"),
]
