"""Issue 29, item 4: readers never write. A run left "running" by a writer
that is gone is shown as stale by every reader (`runs list`, `runs show`,
`runs export`, the dashboard), on a store file that nobody may write, and
the file is not changed; only a writer's open marks such a run killed."""
import sqlite3

TITLE = "4. Readers never write"

# A fresh copy of the store with the crashed run, made read-only.
RO = "cp $DIR/crashed.db $DIR/{0}.db && chmod a-w $DIR/{0}.db && $BARE --store sqlite:$DIR/{0}.db"
SAME = "cmp -s $DIR/crashed.db $DIR/{0}.db"

CASES = [
    ("listing a read-only store whose run's writer is gone (shown stale, file unchanged)",
     f"{RO.format('r1')} runs list --columns name,status | grep -q 'crashed  *stale' && "
     f"{SAME.format('r1')}", {"ok": True}),
    ("showing that run (stale since its last heartbeat, file unchanged)",
     f"{RO.format('r2')} runs show crashed | grep -q "
     "'status      stale (recorded as running; no heartbeat since 2023-11-14T22:13:20' && "
     f"{SAME.format('r2')}", {"ok": True}),
    ("listing only the stale runs, as JSON",
     f"{RO.format('r3')} --json runs list --status stale | grep -q '\"stale\": \"no heartbeat' "
     f"&& {SAME.format('r3')}", {"ok": True}),
    ("a status no run can have", "$TS runs list --status sleeping"),
]


def fixtures(d, run):
    """crashed.db: a store holding `crashed`, a run its writer (pid 4242 on
    node-b) left running; its last heartbeat 2023-11-14 22:13:20 UTC."""
    run(f"$BARE --store sqlite:{d}/crashed.db -q numerics logmap --steps 5 --name crashed")
    db = sqlite3.connect(f"{d}/crashed.db")
    db.execute("UPDATE runs SET status = 'running', end_time = NULL, host = 'node-b', "
               "pid = 4242, pid_start = 1, heartbeat = 1700000000 WHERE name = 'crashed'")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
