"""Issue 51, the third hunt's second tester (D10-D12): a Python run left
open (no `with`) ends with the status of the interpreter's real end. A
sys.exit the script catches (an argparse error included) is not that end;
a sys.excepthook the script sets after start_run does not hide an uncaught
exception (an audit hook sees it); finish() with a status that ends
nothing is a ValueError naming it, and the run goes on."""

TITLE = "25. A Python run's status tells the truth (the third hunt's second tester)"

PYSTATUS = ("$BARE --store sqlite:$DIR/{0}.db --json runs show x | "
            "grep -q '\"status\": \"{1}\"'")


def pyfile(store, body, status, after="", code=0):
    """Writes BODY (after a start_run of run 'x' without `with`) to
    $DIR/STORE.py and runs it in $PY (then AFTER, e.g. a pipe checking its
    output); requires the exit status CODE, then run x to be STATUS."""
    lines = ["import sys, trainscope as t",
             "r = t.start_run(name='x', store=sys.argv[1], record_environment=False)"] + body
    script = " ".join("'" + line.replace("'", "'\\''") + "'" for line in lines)
    return (f"rm -f $DIR/{store}.db*; printf '%s\\n' {script} > $DIR/{store}.py; "
            f"$PY $DIR/{store}.py sqlite:$DIR/{store}.db {after}; test $? -eq {code} && "
            + PYSTATUS.format(store, status), {"ok": True})


CASES = [
    ("Python: sys.exit(3) caught by the script, which then ends normally (finished)",
     *pyfile("pyse", ["try:", "    sys.exit(3)", "except SystemExit:", "    pass"], "finished")),
    ("Python: an argparse error the script catches, then a normal end (finished)",
     *pyfile("pyap", ["import argparse", "p = argparse.ArgumentParser()",
                      "p.add_argument('--n', type=int)", "try:",
                      "    p.parse_args(['--n', 'x'])", "except SystemExit:", "    pass"],
             "finished", "2> /dev/null")),
    ("Python: the script's own sys.excepthook set after start_run, then an uncaught exception "
     "(failed)",
     *pyfile("pyhk", ["sys.excepthook = lambda *a: None", "raise RuntimeError('diverged')"],
             "failed", code=1)),
    ("Python: finish('running'), a status that ends nothing (a ValueError naming it; the run "
     "failed, not left stale)",
     *pyfile("pyfr", ["r.finish('running')"], "failed",
             "2>&1 | tail -1 | grep -q \"^ValueError: status 'running' ends no run\"")),
]
