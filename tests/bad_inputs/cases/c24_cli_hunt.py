"""Issue 51, the third hunt's second tester (docs/reliability.md): what a
command says and does.

- A name a shared store holds is shown escaped wherever a command prints it
  (a note of `stats`, a column of `report throughput`, text or Markdown),
  and a log line or an error escapes what it holds: no stored name sets a
  terminal's title or clears its screen.
- `-q` reaches every rank of `train --nproc N`, and an error every rank
  meets (a config they all refuse) is one line: the ranks send their
  errors to the launcher, which says one.
- A closed terminal (SIGHUP) is a stop, as SIGTERM is: `train` stops at a
  step with its checkpoint, `watch` passes it on to its program and records
  the run's end.
- `checklist` counts a run's repeats as every reader counts runs (never an
  attempt a study set aside), and of a study's own run it says it has none.
- `profile --steps N` of a config that trains too few steps to profile any
  is refused before it trains; one that trains fewer than N, but some past
  the warm-up, is profiled as it is, and says so.

Trainings and watched runs go into their own stores ($DIR/c24.db,
$DIR/hup.db), so that t.db stays as the other classes see it, and no run
left stale by a hang-up reaches another row through the reaper."""

TITLE = "24. What a command says and does (the third hunt's second tester)"

C24 = "$BARE --store sqlite:$DIR/c24.db"
HUP = "$BARE --store sqlite:$DIR/hup.db"
ESC = "$BARE --store sqlite:$DIR/esc.db"  # c18's run whose name holds ESC
ESC_RUN = "U=$(sqlite3 $DIR/esc.db \"select uuid from runs where name like 'e%'\") && "
NO_ESC = " | grep -q \"$(printf '\\033')\""
H3 = "$BARE --store sqlite:$DIR/h3.db"  # c21's study `shrink`, 3 replicates replanned to 2


def until(check):
    """A shell loop that waits (at most 60 s) until CHECK succeeds."""
    return f"for i in $(seq 600); do {check} > /dev/null 2>&1 && break; sleep 0.1; done; "


CASES = [
    # A stored string on a terminal
    ("stats --by name of a run whose stored name holds an escape character (the note shows it "
     "as \\x1b, as the table does)",
     f"! {ESC} stats lyapunov --by name{NO_ESC}", {"ok": True}),
    ("report throughput of a run whose stored name holds an escape character (shown as \\x1b)",
     f"{ESC_RUN}! {ESC} report throughput $U ck2{NO_ESC}", {"ok": True}),
    ("the same as Markdown (`-f md`: its own format, the name Markdown text)",
     f"{ESC_RUN}! {ESC} report throughput $U ck2 -f md{NO_ESC} && {ESC} report throughput $U ck2 "
     "-f md | grep -q '^| metric | e\\\\\\\\x1b'", {"ok": True}),
    # Data-parallel ranks
    ("-q train --nproc 2: nothing on stderr, as with -q train",
     f"{C24} -q train $DIR/good.yaml --nproc 2 --name qdp > /dev/null 2> $DIR/qdp.err && "
     "test ! -s $DIR/qdp.err", {"ok": True}),
    ("a config error of a data-parallel training (one line, not one per rank and the launcher's)",
     f"{C24} train $DIR/good.yaml --nproc 2 --set data.synthetic.size=3"),
    # A closed terminal
    ("watch hung up (SIGHUP, a closed terminal): the run ends, its program is stopped",
     f"{HUP} -q watch --name hupw -- sleep 31.7 2> $DIR/hupw.err & P=$!; "
     + until("pgrep -xf 'sleep 31.7'") +
     "kill -HUP $P; wait $P; sleep 0.2; ! pgrep -xf 'sleep 31.7' > /dev/null && "
     f"{HUP} --json runs show hupw | grep -q '\"status\": \"stopped\"'", {"ok": True}),
    ("train hung up (SIGHUP): stopped at a step, as with SIGTERM",
     f"{HUP} -q train $DIR/good.yaml --name hupt --set data.synthetic.size=20000 "
     "--set train.epochs=20 --no-progress 2> $DIR/hupt.err & P=$!; "
     + until(f"{HUP} metrics hupt train/loss") +
     f"kill -HUP $P; wait $P; {HUP} --json runs show hupt | grep -q '\"status\": \"stopped\"'",
     {"ok": True}),
    # A run's repeats
    ("checklist of a study's run counts what study status counts (2, not the set-aside third)",
     "U=$(sqlite3 $DIR/h3.db \"SELECT r.uuid FROM runs r JOIN runs p ON r.parent_id = p.id "
     "WHERE p.name = 'shrink' AND r.name = 'init/r1'\") && "
     f"{H3} checklist $U | grep -q 'Number of training runs (same config): 2$'", {"ok": True}),
    ("checklist of a study's own run: no count of 0 beside 'only one run', but open, saying why",
     f"{H3} checklist shrink | grep -q '^\\[ \\] Number of training runs (same config): OPEN: "
     "not a training'", {"ok": True}),
    # Steps to profile
    ("profile --steps 40 of a config that trains 4 steps, fewer than the warm-up (refused before "
     "it trains)",
     f"{C24} profile $DIR/good.yaml --steps 40"),
    ("profile --steps 40 of a config that trains 12 steps: profiled as it is, and said",
     f"{C24} profile $DIR/good.yaml --steps 40 --set train.epochs=3 --name prof12 2>&1 "
     ">/dev/null | grep 'fewer than --steps 40' >&2", {"ok": True}),
]
