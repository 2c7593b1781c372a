"""Issue 51, class 4: a status tells the truth. A Python script that ends
abnormally never leaves its run `finished`, with or without `with`; every
reader of a study's runs counts the same runs; a study says when its
command recorded no run."""

TITLE = "21. A status tells the truth (the third hunt)"

H3 = "$BARE --store sqlite:$DIR/h3.db"  # the studies' own store, so t.db's rows keep their runs


def _study(name, command, n):
    """A shell command writing h3/NAME.yaml (run() puts in $TS and $DIR)."""
    lines = [f"study: {name}", f'command: "{command}"', f"replicates: {n}",
             "sources: [init]", "retries: 0", "workers: 1"]
    return "printf '%s\\n' " + " ".join(f"'{line}'" for line in lines) + f" > $DIR/h3/{name}.yaml"


def fixtures(d, run):
    """h3/: command studies whose command records nothing (`true`), fails
    before it records (`false`), and `shrink`, 3 replicates replanned to 2
    (one run set aside, tagged study.superseded_by)."""
    run("mkdir -p $DIR/h3 && " + _study("silent", "true", 2) + " && " +
        _study("silent2", "false", 2) + " && " +
        _study("shrink", H3 + " -q train $DIR/good.yaml --no-progress", 3))
    run(H3 + " -q study run $DIR/h3/silent2.yaml --logs $DIR/h3/logs", check=False)
    run(H3 + " -q study run $DIR/h3/shrink.yaml --logs $DIR/h3/logs")
    run("sed -i 's/^replicates: 3/replicates: 2/' $DIR/h3/shrink.yaml && "
        + H3 + " -q study resume shrink --replan --logs $DIR/h3/logs")


def py_status(store, name, code, quiet=""):
    """Runs CODE (which opens run NAME without `with`) in $PY, then shows the
    run's status."""
    return (f"rm -f $DIR/{store}.db*; $PY -c \"import sys, trainscope as t; "
            f"r = t.start_run(name='{name}', store=sys.argv[1], record_environment=False); "
            f"{code}\" sqlite:$DIR/{store}.db {quiet}; "
            f"$BARE --store sqlite:$DIR/{store}.db --json runs show {name} | "
            "grep -o '\"status\": \"[a-z]*\"' >&2", {"ok": True})


CASES = [
    ("Python: sys.exit(3) without `with` fails the run", *py_status("py5", "crash", "sys.exit(3)")),
    ("Python: an uncaught exception without `with` fails the run",
     *py_status("py6", "crash", "raise RuntimeError('diverged')", "2> /dev/null")),
    ("Python: sys.exit(0) without `with` still finishes", *py_status("py7", "done", "sys.exit(0)")),
    ("Python: Ctrl-C (KeyboardInterrupt) without `with` ends the run killed",
     *py_status("py11", "ctrlc", "raise KeyboardInterrupt", "2> /dev/null")),
    ("a command study whose command records no run",
     H3 + " -q study run $DIR/h3/silent.yaml --logs $DIR/h3/logs"),
    ("resuming a command study whose command fails before it records a run",
     H3 + " -q study resume silent2 --logs $DIR/h3/logs"),
    ("planned runs that recorded nothing count as failed, not pending (status)",
     H3 + " study status silent2 | grep -q '^init *2 *0 *0 *2 *0$'", {"ok": True}),
    ("stats of a study after --replan set a run aside counts what status counts (N=2)",
     H3 + " stats test/accuracy --study shrink --format csv | grep -q '^test/accuracy,,2,'",
     {"ok": True}),
    ("the same study's runs by experiment (N=2)",
     H3 + " stats test/accuracy -e shrink --format csv | grep -q '^test/accuracy,,2,'", {"ok": True}),
    ("exporting the study's experiment leaves the set-aside run out, and says so",
     H3 + " runs export -e shrink --format csv > /dev/null", {"ok": True}),
    ("a data-parallel epoch whose last batch has fewer rows than ranks",
     H3 + " -q train $DIR/good.yaml --nproc 2 --set data.synthetic.size=257 --no-progress "
     "> /dev/null 2>&1", {"ok": True}),
]
