"""Issue 29, item 3: a run has one writer. A run whose writer still lives
(on this host: its process exists, however long it is silent; on another
host: its heartbeat is fresh) is never reaped, and resuming it is refused
with exit 4, naming the writer; readers show it running and change
nothing."""
import sqlite3

TITLE = "3. A live process's run is never reaped, and a run has one writer"

BUSY = "$BARE --store sqlite:$DIR/busy.db"
# The other host's writer beats: its heartbeat is now when a case starts (a
# heartbeat far in the future is no heartbeat: store_format.md).
BEAT = ("python3 -c \"import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); db.execute("
        "'UPDATE runs SET heartbeat = strftime(?, ?) WHERE name = ?', ('%s', 'now', 'busy')); "
        "db.commit()\" $DIR/busy.db && ")

CASES = [
    ("resuming a run another host's process still writes",
     f"{BEAT}{BUSY} train $DIR/good.yaml --resume busy --no-progress"),
    ("resuming it after a writer opened the store (its reaper spares the run)",
     f"{BEAT}busy() {{ {BUSY} \"$@\"; }}; busy -q numerics logmap --steps 5 --name opener && "
     "busy train $DIR/good.yaml --resume busy --no-progress"),
    ("reading the store shows the run running",
     f"{BEAT}{BUSY} --json runs show busy | grep -q '\"status\": \"running\"'", {"ok": True}),
]


def fixtures(d, run):
    """busy.db: a store holding `busy` (UUID b0b0b0b0-...), a run written by
    pid 4242 on node-b whose heartbeats keep coming (each case beats first:
    BEAT)."""
    run(f"$BARE --store sqlite:{d}/busy.db -q numerics logmap --steps 5 --name busy")
    db = sqlite3.connect(f"{d}/busy.db")
    db.execute("UPDATE runs SET status = 'running', end_time = NULL, host = 'node-b', "
               "pid = 4242, pid_start = 1, heartbeat = strftime('%s', 'now'), "
               "uuid = 'b0b0b0b0-0000-4000-8000-000000000001' WHERE name = 'busy'")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
