"""Issue 51, class 2: output is not the run. A stdout or stderr that is
closed, full, or read by a program that stopped reading never kills a
command nor loses a record: the command runs to its end, records its run
in full, says once on stderr that its output was cut (when it can) and
exits 2. A command that records nothing and whose reader merely left
(`runs list | head -1`) ends quietly with 141, as SIGPIPE would have ended
it. Each row also requires the run to be `finished` afterwards (the
command fails otherwise); where trainscope's stderr is what was cut, the
row requires exit 2 and shows the run's status."""

TITLE = "19. Output is not the run (the third hunt)"

LINES = "for i in $(seq 10000); do echo \"trainscope: step=$i loss=0.5\"; done"


def finished(name, parsed=None):
    """Passes on trainscope's exit code when run NAME finished (with PARSED
    metric lines); fails otherwise."""
    check = f"$TS runs show {name} --json | grep -q '\"status\": \"finished\"'"
    if parsed is not None:
        check += f" && $TS runs show {name} --json | grep -q '\"metric_lines.parsed\": \"{parsed}\"'"
    return f"c=$?; {check} && exit $c"


def cut_stderr(cmd, name):
    """CMD cuts trainscope's own stderr: exit 2 required, the status shown."""
    return (f"{cmd}; test $? -eq 2 && $TS runs show {name} --json | "
            "grep -o '\"status\": \"[^\"]*\"' >&2", {"ok": True})


CASES = [
    ("watch whose reader stops reading (`| head -1`): all 10000 metric lines recorded",
     f"$TS -q watch --name pipew -- sh -c '{LINES}' | head -1 > /dev/null; "
     f"(exit ${{PIPESTATUS[0]}}); {finished('pipew', 10000)}"),
    ("watch into a full device", f"$TS -q watch --name fullw -- seq 1000 > /dev/full; "
                                 f"{finished('fullw')}"),
    ("watch with stdout closed", f"$TS -q watch --name shutw -- seq 1000 >&-; {finished('shutw')}"),
    ("watch with stderr closed, the program writing to it (exit 2)",
     *cut_stderr("$TS -q watch --name errw -- sh -c 'echo to-stderr >&2' 2>&-", "errw")),
    ("watch of a failing program, its output cut: the program's code stands",
     "$TS -q watch --name failw -- sh -c 'seq 100000; exit 3' 2> $DIR/failw.err | head -1 "
     "> /dev/null; c=${PIPESTATUS[0]}; tail -1 $DIR/failw.err >&2; exit $c"),
    ("watch whose stderr reader stops reading: exit 2, the program drained, its stderr kept whole",
     "$TS -q watch --name errpipe -- sh -c 'seq 100000 >&2; echo done' 2>&1 > /dev/null "
     "| head -1 > /dev/null; test ${PIPESTATUS[0]} -eq 2 && "
     "$TS runs show errpipe --json | grep -A3 '\"name\": \"stderr.txt\"' | "
     "grep -o '\"size\": [0-9]*' >&2", {"ok": True}),
    ("a watched program gets SIGPIPE's default though trainscope was started with it ignored",
     "python3 -c 'import os, signal, sys; signal.signal(signal.SIGPIPE, signal.SIG_IGN); "
     "os.execvp(sys.argv[1], sys.argv[1:])' $TS -q watch --name yesw -- sh -c 'yes | head -1' "
     "> /dev/null", {"ok": True}),
    ("runs list whose reader left: quiet, exit 141 (it records nothing)",
     "{ sleep 0.3; $TS runs list; } | true; test ${PIPESTATUS[0]} -eq 141", {"ok": True}),
    ("runs show whose reader found what it wanted (`| grep -q`): quiet",
     "$TS runs show lm | grep -q '^name'", {"ok": True}),
    ("runs export with stdout closed", "$TS runs export >&-"),
    ("numerics logmap whose reader left: the run recorded",
     "$TS -q numerics logmap --steps 5 --name pipel | true; (exit ${PIPESTATUS[0]}); "
     + finished("pipel")),
    ("runs export past the file size limit (was: killed by SIGXFSZ)",
     f"$TS -q watch --name bigw -- sh -c '{LINES}' > /dev/null && "
     "(ulimit -f 64; $TS runs export bigw > $DIR/big.csv)"),
    ("train whose reader left",
     f"$TS -q train $DIR/good.yaml --name pipet | true; (exit ${{PIPESTATUS[0]}}); "
     + finished("pipet")),
    ("train whose progress reader left (the issue's case): exit 2, finished, its accuracy kept",
     "$TS train $DIR/good.yaml --name pipep 2>&1 > /dev/null | true; test ${PIPESTATUS[0]} -eq 2 "
     "&& $TS runs show pipep --json | grep -q '\"status\": \"finished\"' && "
     "$TS metrics pipep test/accuracy --format csv | tail -n +2 | wc -l >&2", {"ok": True}),
    ("train with stderr closed (exit 2)",
     *cut_stderr("$TS train $DIR/good.yaml --name shutp > /dev/null 2>&-", "shutp")),
    ("train into a full device",
     f"$TS -q train $DIR/good.yaml --name fullt > /dev/full; {finished('fullt')}"),
    ("rerun whose reader left", "$TS -q rerun ck2 | true; exit ${PIPESTATUS[0]}"),
]
