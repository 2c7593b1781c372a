"""Issue 51: what the thirty-third hunt found and this stop fixed
(docs/reliability.md, "A thirty-third hunt"): a command study resumed from
what the store alone says; a Python script ended by SIGUSR1 or SIGALRM
that left its run running and lost its points; a callback handed a run
that had ended."""

TITLE = "58. A thirty-third hunt (issue 51)"

S58 = "$BARE --store sqlite:$DIR/s58.db"


def fixtures(d, run):
    # A command study (whose command records nothing: it fails, which is
    # beside the point), then its file moved away.
    run("rm -rf $DIR/s58.db* $DIR/s58 && mkdir -p $DIR/s58 && printf 'study: c58\\ncommand: "
        "\"true\"\\nsources: [all]\\nreplicates: 2\\nretries: 0\\n' > $DIR/s58/c58.yaml; "
        f"{S58} -q study run $DIR/s58/c58.yaml --logs $DIR/s58/logs 2> /dev/null; "
        "mv $DIR/s58/c58.yaml $DIR/s58/c58.away", check=False)


def signalled(store, name, code):
    """A script that logs a point, then is ended by what `code` does; the
    run's status and its point count."""
    return (f"rm -f $DIR/{store}.db*; ($PY -c \"import os, signal, sys, time, trainscope as t; "
            f"r = t.start_run(name='{name}', store=sys.argv[1], record_environment=False); "
            f"r.log({{'loss': 1.0}}, step=1); {code}\" sqlite:$DIR/{store}.db; true) "
            f"2> /dev/null; $BARE --store sqlite:$DIR/{store}.db --json runs show {name} | "
            "grep -o -e '\"status\": \"[a-z]*\"' -e '\"count\": [0-9]*' | paste -sd ' ' >&2",
            {"ok": True})


CASES = [
    ("study resume of a command study whose file is gone (the store alone says the command)",
     f"{S58} study resume c58 --logs $DIR/s58/logs"),
    ("Python: SIGUSR1 to a script with an open run (Slurm's --signal)",
     *signalled("py58a", "usr1", "os.kill(os.getpid(), signal.SIGUSR1)")),
    ("Python: SIGALRM (signal.alarm) with an open run",
     *signalled("py58b", "alrm", "signal.alarm(1); time.sleep(5)")),
    ("Python: the Lightning callback given a run that has ended",
     "$PY -c \"import trainscope as t, sys; from trainscope.lightning import TrainscopeCallback; "
     "r = t.start_run(name='done', store=sys.argv[1], record_environment=False); r.finish(); "
     "TrainscopeCallback(run=r)\" sqlite:$DIR/py58c.db 2>&1 | tail -1 | "
     "sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2", {"ok": True}),
]
