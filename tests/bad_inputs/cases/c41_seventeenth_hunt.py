"""Issue 51: what the seventeenth hunt found (docs/reliability.md, "A
seventeenth hunt"), fixed in the same stop: a stored name written into a
shell command, a run of no experiment left out, an epoch taken by the
binding, layer times no clock gives; and on the server and the statuses: a
search taken as a pattern, a heartbeat from the future taken as an end,
parents in a cycle, a schema raised under the server, a stopped program, a
burst of requests, an artifact changed while it was sent, a stop while a
write waited for a lock."""

import contextlib
import hashlib
import os
import shutil
import sqlite3
import struct
import time

from c20_one_rule import py  # noqa: E402
from c21_statuses import fixtures as studies  # noqa: E402
from c39_fourteenth_and_fifteenth_hunts import copy_damaged  # noqa: E402

TITLE = "41. A seventeenth hunt (issue 51)"

YEAR = 86400 * 365
DAMAGED = {
    "x41": ("t", "UPDATE runs SET experiment_id = 999 WHERE name = 'lm'"),
    "f41": ("t", "UPDATE runs SET status = 'running', end_time = NULL, host = 'other.example', "
                 f"pid = 999998, heartbeat = strftime('%s', 'now') + {YEAR} WHERE name = 'lm'"),
    "c41": ("t", "UPDATE runs SET parent_id = CASE name WHEN 'lm' THEN (SELECT id FROM runs "
                 "WHERE name = 'ck') ELSE (SELECT id FROM runs WHERE name = 'lm') END "
                 "WHERE name IN ('lm', 'ck')"),
}
LAYER = b"classifier.fc1"


def damage_cell(path, us):
    """The first profiled step's time of layer LAYER becomes US."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        rowid, payload = db.execute(
            "SELECT rowid, payload FROM records WHERE kind = 'profile_steps' "
            "ORDER BY rowid LIMIT 1").fetchone()
        at = payload.index(LAYER) + len(LAYER)
        at += 1 + payload[at]  # the phase: a one-byte length, then its text
        payload = payload[:at] + struct.pack("<d", us) + payload[at + 8:]
        db.execute("UPDATE records SET payload = ? WHERE rowid = ?", (payload, rowid))
        db.commit()


def plant_artifact(d, store, name, size):
    """A SIZE-byte artifact NAME of run `ck` in $DIR/STORE.db, as a writer
    records it."""
    with contextlib.closing(sqlite3.connect(f"{d}/{store}.db")) as db:
        run_id, uuid = db.execute("SELECT id, uuid FROM runs WHERE name = 'ck'").fetchone()
        folder = f"{d}/{store}-artifacts/{uuid}"
        os.makedirs(folder, exist_ok=True)
        data = bytes((i * 7919) % 251 for i in range(251)) * (size // 251 + 1)
        data = data[:size]
        with open(f"{folder}/{name}", "wb") as f:
            f.write(data)
        cols = [r[1] for r in db.execute("PRAGMA table_info(artifacts)")]
        row = {"run_id": run_id, "name": name, "kind": "data",
               "sha256": hashlib.sha256(data).hexdigest(), "size": size, "created_time": time.time()}
        db.execute(f"INSERT INTO artifacts ({', '.join(c for c in cols if c in row)}) VALUES "
                   f"({', '.join('?' for c in cols if c in row)})",
                   [row[c] for c in cols if c in row])
        db.commit()


def fixtures(d, run):
    if not os.path.exists(f"{d}/h3.db"):  # TS_BAD_INPUTS_ONLY=41: the studies' store
        studies(d, run)
    copy_damaged(d, DAMAGED)  # foreign keys unchecked: Python's sqlite3 leaves them off
    shutil.copy(f"{d}/h3.db", f"{d}/q41.db")
    with contextlib.closing(sqlite3.connect(f"{d}/q41.db")) as db:
        db.execute("UPDATE runs SET name = 'x; touch /tmp/pwn41 $(id)' WHERE name = 'silent2'")
        db.commit()
    run("rm -f $DIR/pr41.db* && $BARE --store sqlite:$DIR/pr41.db -q profile $DIR/good.yaml "
        "--steps 8 --name pr --set train.epochs=3 > /dev/null")
    damage_cell(f"{d}/pr41.db", -1e9)
    run("rm -f $DIR/w41.db* && for n in a_b axb '50%'; do $BARE --store sqlite:$DIR/w41.db -q "
        "watch --name \"$n\" -- true; done")
    shutil.copy(f"{d}/t.db", f"{d}/a41.db")
    plant_artifact(d, "a41", "big.bin", 16_000_000)
    shutil.copy(f"{d}/t.db", f"{d}/v41.db")
    shutil.copy(f"{d}/t.db", f"{d}/k41.db")
    for name, body in CLIENTS.items():
        with open(f"{d}/{name}.py", "w") as f:
            f.write(HEAD + body.replace("DIR", d))


def serve(store, client, args=""):
    """c34's serve, with client $DIR/CLIENT.py (CLIENTS), the server's own
    lines (a warning) kept in its file."""
    return (f"$BARE --store sqlite:$DIR/{store}.db serve --port 0 {args} > "
            f"$DIR/{store}.out 2>&1 & P=$!; for i in $(seq 100); do grep -qs http "
            f"$DIR/{store}.out && break; sleep 0.1; done; U=$(grep -o 'http://[^ ]*' "
            f"$DIR/{store}.out); python3 $DIR/{client}.py \"$U\"; R=$?; kill $P; wait $P; exit $R")


# Clients of the server: python3 $DIR/NAME.py URL, which print one line to
# stderr. DIR is the fixture folder.
HEAD = """import glob, http.client, json, socket, sqlite3, subprocess, sys, time
h, p = sys.argv[1].split('/')[2].split(':')
p = int(p)


def get(path):
    c = http.client.HTTPConnection(h, p)
    c.request('GET', path)
    return c.getresponse()


"""
CLIENTS = {
    "search41": """
print([x['name'] for x in json.load(get('/api/runs?search=a_b'))['runs']], file=sys.stderr)
""",
    "nested41": """
rows = json.load(get('/api/runs?nest=parent&columns=name&limit=1000'))['runs']
shown = [x['uuid'] for x in rows] + [c['uuid'] for x in rows for c in x['children']]
print('each run once' if len(shown) == len(set(shown)) else shown, file=sys.stderr)
""",
    "schema41": """
db = sqlite3.connect('DIR/v41.db')
db.execute('INSERT INTO schema_migrations VALUES (99, 999, 0)')
db.commit()
r = get('/api/info')
print(r.status, json.load(r)['error'][:64], file=sys.stderr)
""",
    "burst41": """
socks = []
for i in range(40):  # each connects and sends its whole request in turn
    s = socket.create_connection((h, p))
    s.sendall(b'GET /api/info HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n')
    socks.append(s)
print(sorted({s.recv(12)[9:12].decode() for s in socks}), file=sys.stderr)
""",
    "changed41": """
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
s.connect((h, p))
s.sendall(b'GET /api/runs/ck/artifacts/big.bin HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n')
time.sleep(0.5)  # unread, the answer fills the buffers and the server waits
with open(glob.glob('DIR/a41-artifacts/*/big.bin')[0], 'r+b') as f:
    f.seek(15000000)
    f.write(b'x' * 1000)
data = b''
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
body = len(data) - data.index(b'\\r\\n\\r\\n') - 4
print('cut short' if body < 16000000 else 'whole', file=sys.stderr)
""",
    "locked41": """
hold = subprocess.Popen(['python3', '-c', 'import sqlite3, time; c = sqlite3.connect('
                         '"DIR/k41.db", isolation_level=None); c.execute("BEGIN IMMEDIATE"); '
                         'time.sleep(5)'])
time.sleep(1)
s = socket.create_connection((h, p))
s.sendall(b'PUT /api/runs/ck/tags/held HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n'
          b'Content-Length: 2\\r\\n\\r\\nhi')
time.sleep(1)  # waiting for the lock
""",
}

CASES = [
    ("study report of an incomplete study whose stored name is a shell command: the study "
     "is named by its UUID",
     "$BARE --store sqlite:$DIR/q41.db study report \"$(sqlite3 $DIR/q41.db \"SELECT uuid FROM "
     "runs WHERE name LIKE 'x;%'\")\" -f md | grep -i 'resume' >&2",
     {"ok": True}),
    ("runs list of a store whose run names an experiment it does not hold",
     "$BARE --store sqlite:$DIR/x41.db runs list"),
    ("store copy of that store", "rm -f $DIR/x41c.db* && "
     "$BARE --store sqlite:$DIR/x41.db store copy sqlite:$DIR/x41.db sqlite:$DIR/x41c.db"),
    ("Python: TrainerInputs.epoch(0.5)",
     *py("py41a", "t.TrainerInputs('$DIR/good.yaml').epoch(0.5)")),
    ("profile show of a profile whose stored layer time is -1e9 us",
     "$BARE --store sqlite:$DIR/pr41.db profile show pr"),
    ("runs list of a run whose heartbeat is a year ahead (another host's clock): no "
     "duration of a year",
     "$BARE --store sqlite:$DIR/f41.db runs list -f csv --columns name,duration | grep '^lm,' | "
     "python3 -c \"import sys; d = sys.stdin.read().split(',')[1]; "
     "print('under an hour' if float(d) < 3600 * 24 else d, file=sys.stderr)\"", {"ok": True}),
    ("the reaper ends that run now, not a year ahead",
     "$BARE --store sqlite:$DIR/f41.db -q watch --name reap41 -- true && sqlite3 $DIR/f41.db "
     "\"SELECT status, end_time < strftime('%s', 'now') + 1 FROM runs WHERE name = 'lm'\" >&2",
     {"ok": True}),
    ("watch whose program stopped itself (SIGSTOP), sent SIGTERM: it ends (143)",
     "$TS -q watch --name st41 -- sh -c 'kill -STOP $$; sleep 30' & p=$!; sleep 1; "
     "kill -TERM $p; wait $p"),
    ("the API's search=a_b: the name holding a_b, not a pattern",
     serve("w41", "search41"), {"ok": True}),
    ("the API's nested runs of a store whose runs are each other's parents: each run once",
     serve("c41", "nested41"), {"ok": True}),
    ("the store's schema raised to 99 while serve runs: 500, as the CLI's exit 5",
     serve("v41", "schema41"), {"ok": True}),
    ("40 complete requests at once from one address: each answered 200",
     serve("t", "burst41"), {"ok": True}),
    ("an artifact changed in place while it is sent: the answer is cut short",
     serve("a41", "changed41"), {"ok": True}),
    ("SIGTERM to serve --allow-writes while a tag PUT waits for another process's lock: "
     "prompt, the tag not written",
     "$BARE --store sqlite:$DIR/k41.db serve --port 0 --allow-writes > $DIR/k41.out 2>&1 & P=$!; "
     "for i in $(seq 100); do grep -qs http $DIR/k41.out && break; sleep 0.1; done; "
     "U=$(grep -o 'http://[^ ]*' $DIR/k41.out); python3 $DIR/locked41.py \"$U\"; "
     "t0=$(date +%s); kill $P; wait $P; S=$(( $(date +%s) - t0 )); echo \"stopped $([ $S -lt 5 ] "
     "&& echo at once || echo after $S s); tags 'held': $(sqlite3 $DIR/k41.db \"SELECT count(*) FROM tags WHERE key = 'held'\")\" >&2",
     {"ok": True}),
]
