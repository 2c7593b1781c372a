"""Issue 29, item 13 (the store's and the dashboard's part): a killed run
lasts until its last heartbeat (runs killed in their first 5 s showed
0.0 s); the dashboard's API counts a series past its end as the series
(it echoed `after`); every API error is a JSON body with a one-line
message and the status of what went wrong (DELETE on a run said "to change
tags")."""
import sqlite3

TITLE = "13. Smaller ones (the store and the dashboard)"

# Starts `trainscope serve` on a free port, runs CHECK with $U its URL,
# stops the server; the case's exit is CHECK's.
SERVE = ("$TS serve --port 0 > $DIR/{0}.out & P=$!; "
         "for i in $(seq 100); do grep -qs http $DIR/{0}.out && break; sleep 0.1; done; "
         "U=$(grep -o 'http://[^ ]*' $DIR/{0}.out); {1}; R=$?; kill $P; wait $P; exit $R")

CASES = [
    ("a killed run's duration (until its last heartbeat, 42 s after its start)",
     "cp $DIR/k13.db $DIR/k13w.db && k() { $BARE --store sqlite:$DIR/k13w.db \"$@\"; } && "
     "k -q numerics logmap --steps 2 --name opener > /dev/null && "
     "k runs show killed | grep -q '^duration    42.0s$'", {"ok": True}),
    ("the API's count of a series asked for points past its end",
     SERVE.format("s13a", "curl -s \"${U}api/runs/lm/metric?key=lyapunov&after=99\" "
                          "> $DIR/s13a.json && grep -q '\"count\":1,' $DIR/s13a.json && "
                          "grep -q '\"downsampled\":false,' $DIR/s13a.json && "
                          "grep -q '\"from\":1,' $DIR/s13a.json"),
     {"ok": True}),
    ("DELETE on a run through the API (405, JSON, not about tags)",
     SERVE.format("s13b", "curl -s -X DELETE ${U}api/runs/lm | "
                          "grep -q '^{\"error\":\"DELETE /api/runs/lm: this endpoint only reads"
                          ".*\"status\":405}$'"),
     {"ok": True}),
    ("a method the API never serves (PATCH: 405, JSON)",
     SERVE.format("s13c", "curl -s -X PATCH -d x ${U}api/runs | grep -q '\"status\":405}$'"),
     {"ok": True}),
    ("a PATCH without a length (an empty body: 405, JSON, as with one)",
     SERVE.format("s13d", "curl -s -X PATCH ${U}api/runs | grep -q '\"status\":405}$'"),
     {"ok": True}),
]


def fixtures(d, run):
    """k13.db: `killed`, a run of node-b started at 1700000000 and last
    heard of 42 s later, left running."""
    run(f"$BARE --store sqlite:{d}/k13.db -q numerics logmap --steps 2 --name killed")
    db = sqlite3.connect(f"{d}/k13.db")
    db.execute("UPDATE runs SET status = 'running', end_time = NULL, host = 'node-b', pid = 4242, "
               "pid_start = 1, start_time = 1700000000, heartbeat = 1700000042 "
               "WHERE name = 'killed'")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
