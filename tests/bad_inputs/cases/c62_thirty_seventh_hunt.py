"""Issue 51 (and 50): what the thirty-seventh hunt found and this stop fixed
(docs/reliability.md, "A thirty-seventh hunt"): an MLflow folder store's
bytes refused in one line naming where they are, a trace's steps checked
against the years a reader shows, and one rule for a setting's and a
param's number at every entry point."""

TITLE = "62. A thirty-seventh hunt: MLflow folder stores, traces, numbers (issues 50, 51)"

PYEXE = "env TRAINSCOPE_PYTHON=$($PY -c 'import sys; print(sys.executable)')"
SHORT = "sed -E 's/\\b[0-9a-f]{8,32}\\b/<id>/g' >&2; exit ${PIPESTATUS[0]}"
M62 = f"{PYEXE} MLFLOW_ALLOW_FILE_STORE=true $BARE --store sqlite:$DIR/t62.db"


def fixtures(d, run):
    # One finished MLflow run 'm1' (metric acc at step 0) in a folder store,
    # written by MLflow's own client, and a store with a run exported there.
    run("rm -rf $DIR/ml62 $DIR/t62.db* && env MLFLOW_ALLOW_FILE_STORE=true $PY -c \"import logging, "
        "sys; logging.disable(logging.WARNING); from mlflow.tracking import MlflowClient; "
        "c = MlflowClient(tracking_uri='file://' + sys.argv[1]); "
        "r = c.create_run(c.create_experiment('x'), run_name='m1').info.run_id; "
        "c.log_metric(r, 'acc', 1.0, step=0); c.set_terminated(r, 'FINISHED')\" "
        "$DIR/ml62 2> /dev/null")
    run(f"{M62} import mlflow $DIR/ml62 > /dev/null 2>&1")


def folder_copy(name, edit):
    """A copy of the MLflow folder store with `edit` (a shell command run in
    the run's folder), then imported."""
    return (f"rm -rf $DIR/{name} && cp -r $DIR/ml62 $DIR/{name} && (cd $DIR/{name}/[1-9]*/*[0-9a-f]/ "
            f"&& {edit}) && {M62} import mlflow $DIR/{name} 2>&1 >/dev/null | {SHORT}")


STEP = ('{\\"ph\\": \\"X\\", \\"cat\\": \\"user_annotation\\", \\"name\\": \\"ProfilerStep#1\\", '
        '\\"ts\\": 0, \\"dur\\": 3e17, \\"pid\\": 1, \\"tid\\": 1}')
MM = ('{\\"ph\\": \\"X\\", \\"cat\\": \\"cpu_op\\", \\"name\\": \\"aten::mm\\", \\"ts\\": 2, '
      '\\"dur\\": 3, \\"pid\\": 1, \\"tid\\": 1}')

CASES = [
    ("profile import: steps that end past the year 9999 (was: taken; every reader showed the "
     "run's end as none)",
     f"printf '{{\\\"baseTimeNanoseconds\\\": 1700000000000000000, \\\"traceEvents\\\": "
     f"[{STEP}, {MM}]}}' > $DIR/k62.json && $BARE --store "
     "sqlite:$DIR/k62.db profile import $DIR/k62.json"),
    ("runs export --format mlflow into a folder store holding a FIFO (was: blocked for good)",
     f"rm -rf $DIR/out62 && {M62} -q runs export --format mlflow --out $DIR/out62 && "
     f"rm $DIR/out62/0/meta.yaml && mkfifo $DIR/out62/0/meta.yaml && timeout 60 {M62} runs "
     "export --format mlflow --out $DIR/out62"),
    ("import mlflow: a run's meta.yaml that is no YAML (was: exit 5, MLflow's ParserError)",
     folder_copy("ml62a", "echo '{{{ not yaml' > meta.yaml")),
    ("import mlflow: a metric file named acc% (was: exit 5, \"MLflow failed\", no run named)",
     folder_copy("ml62b", "mv metrics/acc 'metrics/acc%'")),
    ("a hexadecimal number for a float setting (was: 0x10 taken as 16)",
     "$TS config show $DIR/good.yaml --set optimizer.lr=0x10"),
    ("a hexadecimal float in a config file (was: 0x1p-3 taken as 0.125)",
     "printf 'optimizer:\\n  lr: 0x1p-3\\n' > $DIR/hex62.yaml && $TS config show $DIR/hex62.yaml"),
    ("watch: a JSON param past the double range is kept as written (was: the line refused as "
     "\"not a JSON value\")",
     "rm -f $DIR/w62.db* && $BARE --store sqlite:$DIR/w62.db -q watch --name p62 -- $PY -c "
     "\"print('{\\\"params\\\": {\\\"seed\\\": 1e400}}')\" && $BARE --store sqlite:$DIR/w62.db "
     "--json runs show p62 | grep -q '\"seed\": \"1e400\"'", {"ok": True}),
    ("Python: a script given an argument that is no UTF-8 records its run (was: pybind11's "
     "TypeError)",
     "rm -f $DIR/u62.db* && $PY -c \"import sys, trainscope as t; t.start_run(name='u', "
     "store=sys.argv[1], record_environment=False).finish()\" sqlite:$DIR/u62.db $'caf\\xe9' && "
     "$BARE --store sqlite:$DIR/u62.db runs show u > /dev/null", {"ok": True}),
]
