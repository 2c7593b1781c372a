"""Issue 51: what the fourteenth and fifteenth hunts found (docs/reliability.md,
"A fourteenth hunt" and "A fifteenth hunt"), the defects fixed in the same
stop: stored numbers no run has (sizes, counts, pids, times, steps), a study's
set: that names no key, Python values too long to write, values that are not
text, a report's control bytes, and a study's stop that reaches its whole
trainings."""

import contextlib
import os
import shutil
import sqlite3

from c20_one_rule import py  # noqa: E402
from c21_statuses import fixtures as studies  # noqa: E402

TITLE = "39. A fourteenth and a fifteenth hunt (issue 51)"

RUN = "(SELECT id FROM runs WHERE name = '{}')"
# Each a copy of a fixture store with one column damaged.
DAMAGED = {
    "a39": ("t", "UPDATE artifacts SET size = -1 WHERE run_id = " + RUN.format("ck")),
    "e39": ("t", "UPDATE runs SET end_time = start_time - 1000 WHERE name = 'lm'"),
    "n39": ("t", "UPDATE metric_keys SET count = 9000000000000000000 WHERE run_id = "
            + RUN.format("lm")),
    "p39": ("t", "UPDATE runs SET pid = -5 WHERE name = 'lm'"),
    "f39": ("t", "UPDATE records SET step = -4 WHERE rowid = (SELECT min(rowid) FROM records "
            "WHERE kind = 'fingerprints' AND run_id = " + RUN.format("ck") + ")"),
    "r39": ("h3", "UPDATE runs SET name = 'x</title>' || char(27) || '[2J' WHERE name = 'shrink'"),
}


def copy_damaged(d, damaged):
    """For each NAME: (SOURCE, SQL) of `damaged`, $DIR/NAME.db: a copy of
    fixture store SOURCE with SQL run on it."""
    for name, (source, sql) in damaged.items():
        shutil.copy(f"{d}/{source}.db", f"{d}/{name}.db")
        with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db:
            db.execute(sql)
            db.commit()


def fixtures(d, run):
    if not os.path.exists(f"{d}/h3.db"):  # TS_BAD_INPUTS_ONLY=39: the studies' store
        studies(d, run)
    copy_damaged(d, DAMAGED)
    with open(f"{d}/s39.yaml", "w") as f:
        f.write(f"study: s39\nbase: {d}/good.yaml\nset: 3\nsources: [init]\n")
    # Command studies stopped while their commands run: one behind a shell
    # (its training a grandchild), one that ignores SIGTERM.
    for name, command in (("w39", "sh -c 'sleep 31.5; true'"),
                          ("i39", "sh -c 'trap \"\" TERM; sleep 32.5; true'")):
        with open(f"{d}/{name}.yaml", "w") as f:
            f.write(f"study: {name}\ncommand: {command}\nsources: [init]\nreplicates: 2\n"
                    "workers: 2\nthreads_per_run: 1\n")


def stopped(name, marker):
    """Stops study NAME 2 s in; what is left of its commands 15 s later at
    most (`marker` a pattern that does not match itself, as the shell
    running it would): nothing, once the study has ended."""
    return (f"rm -f $DIR/{name}s.db*; $BARE --store sqlite:$DIR/{name}s.db study run "
            f"$DIR/{name}.yaml --logs $DIR/{name}-logs > /dev/null 2>&1 & P=$!; sleep 2; "
            f"kill -TERM $P; timeout 15 tail --pid=$P -f /dev/null; sleep 0.5; "
            f"echo left: $(pgrep -fc '{marker}') >&2; kill -KILL $P 2>/dev/null; true",
            {"ok": True})


CASES = [
    # Fourteenth hunt
    ("metrics RUN -f csv lists the run's metrics as CSV",
     "$TS metrics lm -f csv | head -1 >&2", {"ok": True}),
    ("a study whose set: is one value, naming no key",
     "$BARE --store sqlite:$DIR/s39s.db study run $DIR/s39.yaml"),
    ("Python: a param that is an int of 5001 digits",
     *py("py39a", "r = t.start_run(store=s, record_environment=False); "
         "r.log_params({'p': 10**5000})")),
    ("runs show of a run whose stored artifact size is -1", "$BARE --store sqlite:$DIR/a39.db "
     "runs show ck"),
    ("Python: config() with a default key holding a line break",
     *py("py39b", "t.config({'a\\nb': 1})")),
    # Fifteenth hunt
    ("runs list -f csv of a run whose stored end is before its start: no duration",
     "$BARE --store sqlite:$DIR/e39.db runs list --columns name,duration -f csv | grep '^lm' >&2",
     {"ok": True}),
    ("runs show of a run whose stored metric count is 9e18",
     "$BARE --store sqlite:$DIR/n39.db runs show lm"),
    ("Python: a param that is a Fraction of 5000 digits",
     *py("py39c", "import fractions; r = t.start_run(store=s, record_environment=False); "
         "r.log_params({'p': fractions.Fraction(10**5000, 3)})")),
    ("Python: log_artifact of a folder given with a trailing '/'",
     *py("py39d", "r = t.start_run(store=s, record_environment=False); "
         "r.log_artifact('$DIR/')")),
    ("diff of runs whose stored fingerprint step is -4",
     "$BARE --store sqlite:$DIR/f39.db diff ck ck2 --no-replay"),
    ("runs show of a run whose stored pid is -5", "$BARE --store sqlite:$DIR/p39.db runs show lm"),
    ("watch --param with a value that is not UTF-8",
     "$BARE --store sqlite:$DIR/u39.db watch --name u --param \"k=$(printf 'a\\377')\" -- true"),
    ("study report of a study whose stored name holds a terminal's escape",
     "U=$(sqlite3 $DIR/r39.db \"SELECT uuid FROM runs WHERE name LIKE 'x%'\") && "
     "$BARE --store sqlite:$DIR/r39.db study report $U --no-weights "
     "| grep -o 'x&lt;/title&gt;[^<]*' | head -1 >&2", {"ok": True}),
    ("a study stopped while its command is a shell running a training",
     *stopped("w39", "slee[p] 31.5")),
    ("a study stopped while its command ignores SIGTERM", *stopped("i39", "slee[p] 32.5")),
]
