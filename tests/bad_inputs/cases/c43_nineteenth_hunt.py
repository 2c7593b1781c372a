"""Issue 51: what the nineteenth hunt found (docs/reliability.md, "A
nineteenth hunt"): a profile's stored trace and layer facts read without
their types and ranges, a stored thread count fitted into a cost model, a
run a job ended itself called left unended; and on the server and the
statuses: means over no run, `Connection: Close`, a study's attempts no
tag sets aside, 405 for no endpoint, a stopped study's failed runs."""

import contextlib
import glob
import hashlib
import json
import os
import shutil
import sqlite3

import c42_eighteenth_hunt  # noqa: E402
from c21_statuses import fixtures as studies  # noqa: E402
from c41_seventeenth_hunt import serve  # noqa: E402


TITLE = "43. A nineteenth hunt (issue 51)"


def uvarint(b, i):
    n = shift = 0
    while True:
        x = b[i]
        i += 1
        n |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            return n, i


def varint(n):
    out = b""
    while True:
        x = n & 0x7F
        n >>= 7
        if not n:
            return out + bytes([x])
        out += bytes([x | 0x80])


def plant_layer(d, name, facts):
    """$DIR/NAME.db: pr43.db with the second layer's stored facts FACTS."""
    shutil.copy(f"{d}/pr43.db", f"{d}/{name}.db")
    with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db:
        p = db.execute("SELECT payload FROM records WHERE kind = 'profile_layers'").fetchone()[0]
        n, i = uvarint(p, 0)
        items = []
        for _ in range(n):
            size, i = uvarint(p, i)
            layer, i = p[i:i + size], i + size
            size, i = uvarint(p, i)
            items.append([layer, p[i:i + size]])
            i += size
        items[1][1] = facts
        out = varint(len(items)) + b"".join(varint(len(a)) + a + varint(len(b)) + b
                                            for a, b in items)
        db.execute("UPDATE records SET payload = ? WHERE kind = 'profile_layers'", (out,))
        db.commit()


def plant_trace(d, name, self_us):
    """$DIR/NAME.db: pr43.db whose trace's first three operators took
    SELF_US, the artifact's hash and size recorded again."""
    shutil.copy(f"{d}/pr43.db", f"{d}/{name}.db")
    shutil.rmtree(f"{d}/{name}-artifacts", ignore_errors=True)
    shutil.copytree(f"{d}/pr43-artifacts", f"{d}/{name}-artifacts")
    path = glob.glob(f"{d}/{name}-artifacts/*/profile_trace.json")[0]
    with open(path) as f:
        trace = json.load(f)
    for e in [e for e in trace["traceEvents"] if e.get("ph") == "X"][:3]:
        e["args"]["self_us"] = self_us
    data = json.dumps(trace).encode()
    with open(path, "wb") as f:
        f.write(data)
    with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db:
        db.execute("UPDATE artifacts SET sha256 = ?, size = ? WHERE name = 'profile_trace.json'",
                   (hashlib.sha256(data).hexdigest(), len(data)))
        db.commit()


def fixtures(d, run):
    if not os.path.exists(f"{d}/h3.db"):  # TS_BAD_INPUTS_ONLY=43: the studies' store
        studies(d, run)
    run("rm -rf $DIR/pr43.db* $DIR/pr43-artifacts && $BARE --store sqlite:$DIR/pr43.db -q profile "
        "$DIR/good.yaml --steps 8 --name pr --set train.epochs=3 > /dev/null")
    plant_trace(d, "tn43", -1e9)
    plant_trace(d, "ts43", "abc")
    plant_layer(d, "lj43", b"xyz{")
    plant_layer(d, "lf43", b'{"flops": -1e300}')
    shutil.copy(f"{d}/pr43.db", f"{d}/th43.db")
    with contextlib.closing(sqlite3.connect(f"{d}/th43.db")) as db:
        db.execute("UPDATE environment SET value = '-5' WHERE key = 'threads.torch.intra_op'")
        db.commit()
    # p42's study with an older attempt of r1 that no tag sets aside.
    if not os.path.exists(f"{d}/p42.db"):  # TS_BAD_INPUTS_ONLY=43
        c42_eighteenth_hunt.fixtures(d, run)
    shutil.copy(f"{d}/p42.db", f"{d}/a43.db")
    with contextlib.closing(sqlite3.connect(f"{d}/a43.db")) as db:
        cols = [c[1] for c in db.execute("PRAGMA table_info(runs)") if c[1] not in ("id", "uuid")]
        older = [f"{c} - 100" if c in ("start_time", "end_time", "heartbeat") else c for c in cols]
        db.execute(f"INSERT INTO runs (uuid, {', '.join(cols)}) SELECT "
                   f"'00000000-0000-4000-8000-000000000043', {', '.join(older)} FROM runs "
                   "WHERE name = 'init/r1'")
        db.commit()
    with open(f"{d}/stop43.py", "w") as f:
        f.write("import os, sys, time, trainscope as t\n"
                "r = t.start_run(config={'lr': 0.1}, record_environment=False)\n"
                "r.log({'loss': 0.3}, step=1)\n"
                "if sys.argv[2] == 'exit':  # each run ended so, the job exits 0\n"
                "    r.finish(sys.argv[1])\n"
                "    sys.exit(0)\n"
                "if os.environ['TRAINSCOPE_RUN_NAME'].endswith('r1'):  # ended so, the job goes on\n"
                "    r.finish(sys.argv[1])\n"
                "time.sleep(60)\n")
    for name, extra in (("stopped43", "stopped exit\nreplicates: 2\nretries: 0"),
                        ("term43", "failed sleep\nreplicates: 2\nretries: 1\nworkers: 2")):
        with open(f"{d}/{name}.yaml", "w") as f:
            f.write(f"study: {name}\ncommand: PYCMD stop43.py {extra}\nsources: [all]\n")
    for name, body in CLIENTS.items():
        with open(f"{d}/{name}.py", "w") as f:
            f.write(HEAD + body)


HEAD = """import http.client, json, socket, sys, time
h, p = sys.argv[1].split('/')[2].split(':')
p = int(p)


"""
CLIENTS = {
    "close43": """
s = socket.create_connection((h, p))
s.sendall(b'GET /api/info HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: keep-alive, Close\\r\\n\\r\\n')
s.settimeout(3)  # the idle timeout is 5 s
data = b''
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    print(data[:12].decode(), 'then closed', file=sys.stderr)
except socket.timeout:
    print(data[:12].decode(), 'kept open', file=sys.stderr)
""",
    "nosuch43": """
c = http.client.HTTPConnection(h, p)
c.request('PUT', '/api/runs/lm/nosuch', body=b'x')
r = c.getresponse()
print(r.status, json.load(r)['error'], file=sys.stderr)
""",
}

# Runs a study in the background, sends it SIGTERM once its r1 failed.
TERM = ("cd $DIR && rm -f term43.db* && sed \"s|PYCMD |$PY |\" term43.yaml > term43r.yaml && "
        "($BARE --store sqlite:$DIR/term43.db -q study run term43r.yaml > term43.out 2>&1 & "
        "P=$!; for i in $(seq 600); do [ \"$(sqlite3 term43.db \"SELECT count(*) FROM runs WHERE "
        "name = 'all/r1' AND status = 'failed'\" 2> /dev/null)\" = 1 ] && break; sleep 0.1; "
        "done; kill -TERM $P; wait $P; grep 'runs finished' term43.out | sed -E "
        "'s/[0-9a-f-]{36}/UUID/' >&2)")

CASES = [
    ("profile show --ops of a trace whose operators took -1e9 us",
     "$BARE --store sqlite:$DIR/tn43.db profile show pr --ops 3 2>&1 | sed 's|/[^ ]*/|.../|' >&2",
     {"ok": True}),
    ("profile show --ops of a trace whose operator's self time is the text 'abc'",
     "$BARE --store sqlite:$DIR/ts43.db profile show pr --ops 3 -f json 2>&1 | "
     "sed 's|/[^ ]*/|.../|' >&2", {"ok": True}),
    ("profile show of a run whose layer's stored facts are not JSON",
     "$BARE --store sqlite:$DIR/lj43.db profile show pr"),
    ("costmodel fit over a layer whose stored FLOP count is -1e300",
     "$BARE --store sqlite:$DIR/lf43.db costmodel fit -o $DIR/cm43.json"),
    ("costmodel fit over a run whose stored thread count is -5",
     "$BARE --store sqlite:$DIR/th43.db costmodel fit -o $DIR/cm43.json"),
    ("study status of a job that ended its run stopped itself: not 'left unended'",
     "cd $DIR && rm -f stopped43.db* && sed \"s|PYCMD |$PY |\" stopped43.yaml > stopped43r.yaml && "
     "$BARE --store sqlite:$DIR/stopped43.db -q study run stopped43r.yaml > /dev/null 2>&1; "
     "$BARE --store sqlite:$DIR/stopped43.db study status stopped43 | grep -o 'its run.*job[^)]*)' "
     "| sed -E 's/[0-9a-f]{8}/<id>/' >&2", {"ok": True}),
    ("study report -f json of cells with no finished run: no mean of 0",
     "$BARE --store sqlite:$DIR/h3.db study report silent2 -f json | python3 -c \"import json, "
     "sys; c = json.load(sys.stdin)['cells'][0]; print(c['runs'], c['mean_run_s'], "
     "c['mean_samples_per_s'], c['energy_kwh'], file=sys.stderr)\"", {"ok": True}),
    ("Connection: keep-alive, Close: the connection closes after the answer",
     serve("t", "close43"), {"ok": True}),
    ("PUT to a path under a run that is no endpoint: 404, as GET",
     serve("t", "nosuch43", "--allow-writes"), {"ok": True}),
    ("a study with an older attempt no tag sets aside: status and stats agree",
     "echo \"set aside $($BARE --store sqlite:$DIR/a43.db study status p42 --json | python3 -c "
     "'import json, sys; print(json.load(sys.stdin)[\"set_aside\"])'); $($BARE --store "
     "sqlite:$DIR/a43.db stats test/accuracy --study p42 | grep -o '[0-9]* finished run(s) left "
     "out')\" >&2", {"ok": True}),
    ("SIGTERM to study run once a job's run failed: its last line counts it failed",
     TERM, {"ok": True}),
]
