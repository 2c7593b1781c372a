"""Issues 50 and 51: what the thirty-sixth hunt found in `profile import`,
`import mlflow` and Python's `watch` and this stop fixed
(docs/reliability.md, "A thirty-sixth hunt"): a trace is untrusted input,
checked as the profile's readers check it before anything is written."""

TITLE = "61. A thirty-sixth hunt: torch.profiler traces as untrusted input (issues 50, 51)"

K61 = "$BARE --store sqlite:$DIR/k61.db"
SHORT_IDS = "sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2; exit ${PIPESTATUS[0]}"


def event(cat, name, ts, dur):
    return (f'{{\\"ph\\": \\"X\\", \\"cat\\": \\"{cat}\\", \\"name\\": \\"{name}\\", '
            f'\\"ts\\": {ts}, \\"dur\\": {dur}, \\"pid\\": 1, \\"tid\\": 1}}')


def trace(name, *events):
    """printf of a trace file $DIR/NAME.json, then its import."""
    body = '{\\"traceEvents\\": [' + ", ".join(events) + "]}"
    return f"printf '{body}' > $DIR/{name}.json && {K61} profile import $DIR/{name}.json"


STEP = "ProfilerStep#1"

CASES = [
    ("profile import: a scope named (wall) (was: its time lost)",
     trace("k61a", event("user_annotation", STEP, 1, 100),
           event("user_annotation", "(wall)", 10, 40))),
    ("profile import: an operator of 1e18 us (was: a store its reader calls damaged)",
     trace("k61b", event("cpu_op", "aten::mm", 1, "1e18"))),
    ("profile import: a step number past 2^53",
     trace("k61c", event("user_annotation", "ProfilerStep#99999999999999999999", 1, 10),
           event("cpu_op", "aten::mm", 2, 3))),
    ("profile import: one step number twice (was: one step kept, \"imported 2 steps\")",
     trace("k61d", event("user_annotation", "ProfilerStep#5", 1, 10),
           event("cpu_op", "aten::mm", 2, 3), event("user_annotation", "ProfilerStep#5", 20, 10),
           event("cpu_op", "aten::mm", 22, 3))),
    ("profile import: a step of no width (was: -nan% shares)",
     trace("k61e", event("user_annotation", STEP, 1, 0), event("cpu_op", "aten::mm", 1, 0))),
    ("profile import: a file of zeros (was: read whole first)",
     f"rm -f $DIR/k61z.json && truncate -s 64M $DIR/k61z.json && {K61} profile import "
     "$DIR/k61z.json"),
    ("profile import --run of a run still running (was: written beside its writer)",
     # The script holds its run open until the row says it is done (60 s at most).
     "rm -f $DIR/k61l.db* $DIR/k61done && ($PY -c \"import os, sys, time, trainscope as t; "
     "r = t.start_run(name='live', store=sys.argv[1], record_environment=False); "
     "[time.sleep(0.1) for _ in range(600) if not os.path.exists(sys.argv[2])]; r.finish()\" "
     "sqlite:$DIR/k61l.db $DIR/k61done &) && for i in $(seq 300); do $BARE --store "
     "sqlite:$DIR/k61l.db runs show live > /dev/null 2>&1 && break; sleep 0.1; done && "
     + trace("k61f", event("cpu_op", "aten::mm", 1, 2)).replace(K61, "$BARE --store "
                                                                 "sqlite:$DIR/k61l.db")
     + " --run live 2>&1 >/dev/null | sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2; "
     "rc=${PIPESTATUS[0]}; touch $DIR/k61done; exit $rc"),
    ("a config of 20 MB (was: read whole before its first byte was judged)",
     "rm -f $DIR/big61.yaml && truncate -s 20M $DIR/big61.yaml && $BARE --store "
     "sqlite:$DIR/k61.db train $DIR/big61.yaml"),
]
