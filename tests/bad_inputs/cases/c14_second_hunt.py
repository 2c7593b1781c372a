"""Issue 29's closing hunt: 217 cases outside this document, across the
classes above and every command, found 29 defects (docs/reliability.md,
"The second hunt"). Each is a row here: numeric options that let NaN, a
wrapped -1 or an out-of-range value through; --set lists read loosely; output
that could not be written reported as success; `watch` waiting for a
daemon its program started; a stale run whose duration kept growing; a study
run twice or given a stray child; messages that named the wrong thing."""
import os
import sqlite3

TITLE = "14. The second hunt"

T = "$TS train $DIR/good.yaml --no-progress"
SERVE = ("$TS serve --port 0 --allow-writes > $DIR/{0}.out & P=$!; "
         "for i in $(seq 100); do grep -qs http $DIR/{0}.out && break; sleep 0.1; done; "
         "U=$(grep -o 'http://[^ ]*' $DIR/{0}.out); {1}; R=$?; kill $P; wait $P; exit $R")
STALE = "cp $DIR/stale14.db $DIR/{0}.db && $BARE --store sqlite:$DIR/{0}.db"

CASES = [
    # Numeric options: checked on their text, NaN and wrap-around included.
    ("serving with more worker threads than a server takes", "$TS serve --port 0 --threads 100000"),
    ("a plan-size limit of -1 (it wrapped to 2^64 - 1 and switched the limit off)",
     "$TS study run $DIR/again/study.yaml --max-runs -1"),
    ("a plan-size limit beyond 2^64", "$TS study run $DIR/again/study.yaml --max-runs 18446744073709551616"),
    ("a sampling interval that is not a number", "$TS watch --interval nan -- true"),
    ("a negative carbon intensity", "$TS watch --carbon -1 -- true"),
    ("a warm-up that is not a number", "$TS resources lm --warmup nan"),
    ("a negative number of operators", "$TS profile show lm --ops -1"),
    # Values that reached libtorch's allocator.
    ("more synthetic classes than an evaluation can tabulate",
     f"{T} --set data.synthetic.classes=100000"),
    ("a model whose weights do not fit in memory",
     f"{T} --set model.hidden=1048576 --set model.width=64"),
    # --set lists read as strictly as YAML lists.
    ("a --set list with an empty entry", f"{T} --set 'schedule.milestones=[1,,2]'"),
    ("a --set list of lists", f"{T} --set 'schedule.milestones=[[1],[[2]],3]'"),
    # Output that cannot be written is an error, not a truncated success.
    ("runs export into a full device", "$TS runs export > /dev/full"),
    ("runs list into a full device", "$TS runs list > /dev/full"),
    ("a Model Card written to a full device", "$TS card lm -o /dev/full"),
    ("a study's output folder under a file", "$TS study run $DIR/logs.yaml --logs $DIR/good.yaml/logs"),
    # watch.
    # (Since the seventh hunt, D5: what it leaves running ends with it.)
    ("a program that leaves a background child holding its output (ended with it)",
     "$TS watch --name held -- sh -c 'sleep 3 & echo started' 2>&1 > /dev/null | "
     "grep -q 'left 1 process(es) running' && $TS runs show held | grep -q 'watch.left_behind'",
     {"ok": True}),
    ("a program killed by a signal", "$TS -q watch --name segv -- sh -c 'kill -SEGV $$'"),
    # Readers: a stale run ends at its last heartbeat; diff reads only.
    ("the duration of a stale run in a runs table (until its last heartbeat)",
     f"{STALE.format('st1')} runs list --columns name,duration --format csv | "
     "grep -q '^stale,1000$'", {"ok": True}),
    ("the Model Card of a stale run says stale",
     f"{STALE.format('st2')} card stale | grep -q 'status stale (no heartbeat since'",
     {"ok": True}),
    ("diff of two runs in a store nobody may write (file unchanged)",
     f"{STALE.format('st3')} diff stale done --no-replay > /dev/null && "
     "cmp -s $DIR/stale14.db $DIR/st3.db", {"ok": True}),
    # Studies.
    ("running a study file a second time", "$TS study run $DIR/again/study.yaml"),
    ("a grid value given twice", "$TS study run $DIR/twice.yaml"),
    ("a run outside a study's plan given the study as its parent",
     f"{T} --parent again --name stray"),
    ("a study whose base config does not exist", "$TS study run $DIR/nobase.yaml"),
    # Runs that are not trainings.
    ("resuming a watch run", f"{T} --resume killedwatch"),
    ("rerunning a numerics run", "$TS rerun lm"),
    # YAML and stores.
    ("a mapping where one value belongs", "$TS train $DIR/lrmap.yaml --no-progress"),
    ("a YAML tag the reader would ignore", "$TS train $DIR/pytag.yaml --no-progress"),
    ("a NUL byte in a config", "$TS train $DIR/nul.yaml --no-progress"),
    ("a config that starts with a comma (yaml-cpp 0.7 read it forever, its memory growing)",
     "$TS train $DIR/comma.yaml --no-progress"),
    ("a config in UTF-16 with its byte order mark",
     "$TS -q train $DIR/u16.yaml --no-progress > /dev/null", {"ok": True}),
    ("a store that is a symbolic link to nothing", "$BARE --store sqlite:$DIR/dangling.db runs list"),
    # The API.
    ("a tag key that is a NUL byte, through the API",
     SERVE.format("s14a", "curl -s -X PUT -d v \"${U}api/runs/lm/tags/%00\" | "
                          "grep -q 'holds a control character.*\"status\":400'"), {"ok": True}),
    ("a tag key with a newline, through the API (400, not 404)",
     SERVE.format("s14b", "curl -s -X PUT -d v \"${U}api/runs/lm/tags/a%0Ab\" | "
                          "grep -q 'holds a control character.*\"status\":400'"), {"ok": True}),
]

BASE = ("data: {dataset: synthetic, synthetic: {size: 256}}\n"
        "model: {name: mlp, hidden: 16}\ntrain: {epochs: 1, batch_size: 64}\n"
        "monitor: {interval_s: 0}\n")


def write(path, text, mode="w"):
    with open(path, mode) as f:
        f.write(text)


def stores(d, run):
    """stale14.db: `stale`, left running by a writer that is gone, 1000 s
    from its start to its last heartbeat (2023-11-14), and `done`.
    The main store gets `killedwatch`, a watch run that was killed."""
    s = f"$BARE --store sqlite:{d}/stale14.db -q"
    run(f"{s} numerics logmap --steps 5 --name stale")
    run(f"{s} numerics logmap --steps 5 --name done")
    db = sqlite3.connect(f"{d}/stale14.db")
    db.execute("UPDATE runs SET status = 'running', end_time = NULL, host = 'node-b', "
               "pid = 4242, pid_start = 1, start_time = 1699999000, heartbeat = 1700000000 "
               "WHERE name = 'stale'")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    run("$TS -q watch --name killedwatch -- true")
    db = sqlite3.connect(f"{d}/t.db")
    db.execute("UPDATE runs SET status = 'killed' WHERE name = 'killedwatch'")
    db.commit()
    db.close()


def fixtures(d, run):
    os.makedirs(f"{d}/again")
    write(f"{d}/again/base.yaml", BASE)
    write(f"{d}/again/study.yaml",
          "study: again\nbase: base.yaml\nsources: [init]\nreplicates: 2\nworkers: 2\n")
    run(f"$TS -q study run {d}/again/study.yaml")
    write(f"{d}/twice.yaml",
          f"study: twice\nbase: {d}/again/base.yaml\ngrid:\n  optimizer.lr: [0.01, 0.01]\n")
    write(f"{d}/logs.yaml", f"study: logs\nbase: {d}/again/base.yaml\nsources: [init]\n")
    write(f"{d}/nobase.yaml", f"study: nobase\nbase: {d}/nobase-base.yaml\nsources: [init]\n")
    write(f"{d}/lrmap.yaml", BASE + "optimizer:\n  lr: {a: 1}\n")
    write(f"{d}/pytag.yaml", BASE + "run: !python/object:os.system {experiment: x}\n")
    write(f"{d}/nul.yaml", BASE + "run: {experiment: a\0b}\n")
    write(f"{d}/comma.yaml", ", a\n")
    write(f"{d}/u16.yaml", BASE.encode("utf-16"), "wb")
    os.symlink(f"{d}/nowhere/x.db", f"{d}/dangling.db")
    stores(d, run)
