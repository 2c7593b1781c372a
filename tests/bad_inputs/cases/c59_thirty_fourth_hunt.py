"""Issue 51: what the thirty-fourth hunt found and this stop fixed
(docs/reliability.md, "A thirty-fourth hunt"): a study job's log that is
a FIFO or a folder; an event file read whole before its first record was
checked; watch's captured output cut in silence past the file size limit;
a new store past that limit said as a disk gone, its run left running. And
the refusals of MLflow both ways and of `profile import` (issue 50)."""

TITLE = "59. A thirty-fourth hunt (issue 51), and MLflow and torch.profiler traces (issue 50)"

SHORT_IDS = "sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2; exit ${PIPESTATUS[0]}"
# The build's Python, the one $PY runs (MLflow's client runs in it).
PYEXE = "TRAINSCOPE_PYTHON=$($PY -c 'import sys; print(sys.executable)')"
STUDY = "printf 'study: c59\\ncommand: true\\nsources: [init]\\nreplicates: 2\\n'"


def log_in_the_way(name, make):
    """A command study whose first job's log is already something else."""
    return (f"rm -rf $DIR/{name} $DIR/{name}.db*; mkdir -p $DIR/{name}/logs && {make} && "
            f"{STUDY} > $DIR/{name}/c.yaml && $BARE --store sqlite:$DIR/{name}.db study run "
            f"$DIR/{name}/c.yaml --logs $DIR/{name}/logs")


def fixtures(d, run):
    # A store that exists, so that the file size limit meets the capture
    # file first (row: watch past the limit).
    run("rm -f $DIR/w59.db*; $BARE --store sqlite:$DIR/w59.db -q watch --name pre -- true "
        "> /dev/null")


CASES = [
    ("a study job's log is a FIFO (it blocked the study; after SIGTERM the job ran anyway)",
     log_in_the_way("s59a", "mkfifo $DIR/s59a/logs/init_r1.log")),
    ("a study job's log is a folder (the job's output went into the study's own)",
     log_in_the_way("s59b", "mkdir $DIR/s59b/logs/init_r1.log")),
    ("import tfevents of an 8 GB event file of zeros in 3 GB of address space (was: read "
     "whole first, out of memory)",
     "rm -rf $DIR/tb59; mkdir -p $DIR/tb59/r && truncate -s 8G "
     "$DIR/tb59/r/events.out.tfevents.1.h && (ulimit -v 3000000; $BARE --store "
     "sqlite:$DIR/tb59.db import tfevents $DIR/tb59)"),
    ("watch whose captured output passes the file size limit (was: cut in silence, exit 0)",
     "(ulimit -f 200; $BARE --store sqlite:$DIR/w59.db -q watch --name big -- seq 200000 "
     f"> /dev/null) 2>&1 | {SHORT_IDS}"),
    ("that run's tag says what it holds",
     "$BARE --store sqlite:$DIR/w59.db runs show big | grep stdout_cut | tr -s ' ' >&2",
     {"ok": True}),
    ("watch on a new store past the file size limit (was: \"disk full or removed?\" three "
     "times, the run left running)",
     "rm -f $DIR/w59b.db*; (ulimit -f 200; $BARE --store sqlite:$DIR/w59b.db -q watch --name "
     "big -- seq 20 > /dev/null) 2>&1 | tail -1 >&2; exit ${PIPESTATUS[0]}"),
    ("that run is not left running",
     "$BARE --store sqlite:$DIR/w59b.db --json runs show big | grep -o "
     "'\"status\": \"[a-z]*\"' >&2", {"ok": True}),
    ("runs export --format mlflow without --out",
     "$BARE --store sqlite:$DIR/w59.db runs export --format mlflow"),
    ("import mlflow with a Python that has no mlflow",
     "TRAINSCOPE_PYTHON=/usr/bin/python3 $BARE --store sqlite:$DIR/w59.db import mlflow "
     "sqlite:///$DIR/m59.db"),
    ("runs export --format mlflow with a Python that does not exist",
     "TRAINSCOPE_PYTHON=$DIR/no-python $BARE --store sqlite:$DIR/w59.db runs export pre "
     "--format mlflow --out sqlite:///$DIR/m59.db"),
    ("runs export --format mlflow of a metric key MLflow refuses",
     "rm -f $DIR/k59.db*; $PY -c \"import sys, trainscope as t; r = t.start_run(name='k59', "
     "store=sys.argv[1], record_environment=False); r.log({'a|b': 1.0}, step=0); r.finish()\" "
     f"sqlite:$DIR/k59.db && {PYEXE} $BARE --store sqlite:$DIR/k59.db runs export "
     f"--format mlflow --out sqlite:///$DIR/m59k.db 2>&1 >/dev/null | {SHORT_IDS}"),
    ("import mlflow of a file that is no database",
     f"printf 'not a db' > $DIR/m59bad.db && {PYEXE} $BARE --store "
     "sqlite:$DIR/w59.db import mlflow sqlite:///$DIR/m59bad.db 2>&1 >/dev/null | cut -c1-90 "
     ">&2; exit ${PIPESTATUS[0]}"),
    ("profile import of a FIFO where the trace belongs",
     "rm -f $DIR/k59.fifo; mkfifo $DIR/k59.fifo && $BARE --store sqlite:$DIR/w59.db profile "
     "import $DIR/k59.fifo"),
    ("profile import of JSON that is no trace",
     "printf '{\"rows\": []}' > $DIR/k59.json && $BARE --store sqlite:$DIR/w59.db profile "
     "import $DIR/k59.json"),
    ("profile import of a trace whose events have no times",
     "printf '{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"aten::mm\", \"ts\": "
     "\"soon\"}]}' > $DIR/k59t.json && $BARE --store sqlite:$DIR/w59.db profile import "
     "$DIR/k59t.json"),
    ("profile import --run of a run that has a profile",
     "printf '{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": "
     "\"aten::mm\", \"ts\": 1, \"dur\": 2, \"pid\": 1, \"tid\": 1}]}' > "
     "$DIR/k59ok.json && $BARE --store sqlite:$DIR/w59.db -q profile import $DIR/k59ok.json "
     "--name kin > /dev/null && $BARE --store sqlite:$DIR/w59.db profile import "
     "$DIR/k59ok.json --run kin 2>&1 >/dev/null | " + SHORT_IDS),
]
