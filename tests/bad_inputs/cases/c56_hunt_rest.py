"""Issue 51: the defects the thirtieth and thirty-first hunts left open,
fixed (docs/reliability.md): a --set the chosen optimizer never reads; a
checklist that never counted a repeat with other seeds; a point's wall
time that is no time; train --resume with options it ignored; a command
study's job that exited 3 after its run finished; a grid's yes and true;
a study report's missing series shown as 0; a log folder that cannot be
made; a script logging the probes' and the profiler's series; a Run
copied."""

import sqlite3

from c20_one_rule import py  # noqa: E402

TITLE = "56. What the thirtieth and thirty-first hunts left open (issue 51)"

IDS = " 2>&1 >/dev/null | sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2; exit ${PIPESTATUS[0]}"
S56 = "$BARE --store sqlite:$DIR/s56.db"
R56 = "$BARE --store sqlite:$DIR/r56.db"
TRAIN = "train $DIR/good.yaml --no-progress --set train.max_steps=2"
# A script that records its run, then fails; one that records samples_per_s
# only on its first run (a marker file); one that records its run.
EXIT3 = ("import sys, trainscope as t\nwith t.start_run(record_environment=False) as r:\n"
         "    r.log({'test/accuracy': 0.5}, step=1)\nsys.exit(3)\n")
SOME = ("import os, trainscope as t\nfirst = not os.path.exists('once56')\n"
        "open('once56', 'w').close()\nwith t.start_run(record_environment=False) as r:\n"
        "    r.log({'test/accuracy': 0.5}, step=1)\n"
        "    if first: r.log({'samples_per_s': 100.0}, step=1)\n")
OK = ("import trainscope as t\nwith t.start_run(record_environment=False) as r:\n"
      "    r.log({'test/accuracy': 0.5}, step=1)\n")


def study(name, command, extra=""):
    return (f"printf 'study: {name}\\ncommand: {command}\\nsources: [all]\\nretries: 0\\n"
            f"workers: 1\\n{extra}' > $DIR/{name}.yaml")


def fixtures(d, run):
    # Two trainings of one config with other seeds: one is the other's repeat.
    run(f"rm -rf $DIR/r56.db* $DIR/r56-artifacts && {R56} -q {TRAIN} --name a56 && "
        f"{R56} -q {TRAIN} --name b56 --set seeds.master=7")
    # A metric point whose wall time is NaN.
    run("rm -f $DIR/w56.db* && cp $DIR/t.db $DIR/w56.db")
    with sqlite3.connect(f"{d}/w56.db") as db:
        row = db.execute("SELECT c.key_id, c.seq, c.points FROM metric_chunks c JOIN metric_keys "
                         "k ON k.id = c.key_id JOIN runs r ON r.id = k.run_id WHERE r.name = "
                         "'ck2' AND k.key = 'train/loss' ORDER BY c.seq LIMIT 1").fetchone()
        blob = bytearray(row[2])
        blob[8:16] = bytes.fromhex("000000000000f87f")  # the first point's wall time: NaN
        db.execute("UPDATE metric_chunks SET points = ? WHERE key_id = ? AND seq = ?",
                   (bytes(blob), row[0], row[1]))
    for name, text in (("exit56", EXIT3), ("some56", SOME), ("ok56", OK)):
        with open(f"{d}/{name}.py", "w") as f:
            f.write(text)
    run("rm -f $DIR/s56.db* $DIR/once56 && "
        + study("x56", "$PY $DIR/exit56.py", "replicates: 2\\n")
        + " && " + study("m56", "$PY $DIR/some56.py", "replicates: 2\\n")
        + " && " + study("g56", "true", "replicates: 2\\ngrid: {flag: [yes, true]}\\n")
        + " && " + study("l56", "$PY $DIR/ok56.py", "replicates: 2\\n"))


CASES = [
    ("train --set of a key the chosen optimizer never reads (momentum with adam)",
     f"cd $DIR && {R56} {TRAIN} --name c56 --set optimizer.momentum=0.8 > /dev/null",
     {"ok": True}),
    ("checklist: a training repeated with other seeds is its repeat",
     f"{R56} checklist a56 | grep -E 'Number of training runs|Mean and variation' | "
     "cut -c1-42 | paste -sd ' ' >&2",
     {"ok": True}),
    ("metrics RUN KEY of a point whose wall time is NaN",
     "$BARE --store sqlite:$DIR/w56.db metrics ck2 train/loss" + IDS),
    ("runs export --format tfevents of that run",
     "$BARE --store sqlite:$DIR/w56.db runs export ck2 --format tfevents -o $DIR/tb56" + IDS),
    ("train --resume RUN --name other", "$TS train $DIR/good.yaml --resume ck2 --name other"),
    ("train --resume RUN --parent P", "$TS train $DIR/good.yaml --resume ck2 --parent lm"),
    ("a command study whose script finishes its run, then exits 3",
     f"cd $DIR && {S56} -q study run x56.yaml --logs $DIR/l56 && sqlite3 $DIR/s56.db \"SELECT "
     "key, value FROM tags WHERE key = 'study.job_ended'\" | paste -sd ' ' >&2", {"ok": True}),
    ("a study grid listing yes and true for one key", f"{S56} study run $DIR/g56.yaml"),
    ("study report: a series one run of a cell lacks is the mean of those that have it",
     f"cd $DIR && {S56} -q study run m56.yaml --logs $DIR/l56 && {S56} --json study report m56 | "
     "grep -o '\"mean_samples_per_s\": [^,]*' >&2", {"ok": True}),
    ("study run --logs with a folder name too long to make",
     f"{S56} study run $DIR/l56.yaml --logs $DIR/$(printf 'x%.0s' $(seq 300))"),
    ("study run --logs under /proc", f"{S56} study run $DIR/l56.yaml --logs /proc/l56"),
    ("... neither recorded the study, so it runs as planned",
     f"{S56} -q study run $DIR/l56.yaml --logs $DIR/l56 && {S56} runs list --columns name "
     "-e l56 -f csv | paste -sd ' ' >&2", {"ok": True}),
    ("Python: log() of a probe/* series",
     *py("py56a", "t.start_run(store=s).log({'probe/loss': 1})")),
    ("Python: log() of a profile/* series",
     *py("py56b", "t.start_run(store=s).log({'profile/coverage': 1})")),
    ("a watched program's metric line of a probe/* series",
     "$TS -q watch --name pl56 -- printf 'trainscope: step=1 probe/loss=1\\n' > /dev/null && "
     "$TS --json runs show pl56 | grep -o '\"metric_lines.first_malformed_reason\": "
     "\"[^\"]*\"' >&2", {"ok": True}),
    ("Python: copy.copy(run)",
     *py("py56c", "import copy; copy.copy(t.start_run(store=s))",
         "2>&1 | tail -1 | sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2")),
]
