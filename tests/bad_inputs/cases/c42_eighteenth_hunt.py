"""Issue 51: what the eighteenth hunt found (docs/reliability.md, "An
eighteenth hunt"): predictions files that lie about their size, are empty
or hold NaN logits, and the artifact kinds a script may not log; logmap's
range on the exact decimal, and no hex floats; the carbon tag; trainscope's
own series brought by an import; stats' one rule for NaN; chunks and
summaries that contradict each other; and on the server and the statuses:
a deep parent chain, a stop while a worker computes, an 8 KiB header line,
a second run of a study's script, and a delete that counts what it
deletes."""

import contextlib
import glob
import hashlib
import os
import shutil
import sqlite3
import struct
import uuid

from c20_one_rule import py  # noqa: E402
from tfevents_writer import write_events  # tests/support, on bad_inputs.py's path
from c41_seventeenth_hunt import serve  # noqa: E402

TITLE = "42. An eighteenth hunt (issue 51)"

def plant_series(d, name, damage):
    """$DIR/NAME.db: t.db whose run lm holds metric 'split', steps 1 to 4 in
    two chunks as a writer appends them, then DAMAGE (SQL) run on it."""
    shutil.copy(f"{d}/t.db", f"{d}/{name}.db")
    with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db:
        run_id, = db.execute("SELECT id FROM runs WHERE name = 'lm'").fetchone()
        key_id = db.execute("INSERT INTO metric_keys (run_id, key, count, last_step, last_value, "
                            "min_value, max_value) VALUES (?, 'split', 4, 4, 0.25, 0.25, 2.5)",
                            (run_id,)).lastrowid
        points = [(1, 2.5), (2, 2.0), (3, 0.5), (4, 0.25)]
        for seq in (0, 1):
            chunk = points[2 * seq:2 * seq + 2]
            blob = b"".join(struct.pack("<qdd", step, 1.7e9, v) for step, v in chunk)
            db.execute("INSERT INTO metric_chunks (key_id, seq, n, first_step, last_step, points) "
                       "VALUES (?, ?, 2, ?, ?, ?)", (key_id, seq, chunk[0][0], chunk[1][0], blob))
        db.executescript(damage)
        db.commit()


SPLIT = "(SELECT id FROM metric_keys WHERE key = 'split')"
DAMAGED = {  # the key's two chunks change places (seq is unique: by way of 100)
    "o42": f"UPDATE metric_chunks SET seq = seq + 100 WHERE key_id = {SPLIT}; "
           f"UPDATE metric_chunks SET seq = 101 - seq WHERE key_id = {SPLIT}",
    "m42": f"UPDATE metric_keys SET last_value = -0.123 WHERE id = {SPLIT}",
    "n42": f"UPDATE metric_keys SET last_step = NULL WHERE id = {SPLIT}",
}


def plant_predictions(d, name, mode):
    """$DIR/NAME.db: a copy of the study store p42 whose runs' predictions
    files are rewritten (MODE: huge, zero, nan), their hashes and sizes
    recorded again as a writer would."""
    for f in glob.glob(f"{d}/{name}.db*"):
        os.remove(f)
    shutil.copy(f"{d}/p42.db", f"{d}/{name}.db")
    shutil.rmtree(f"{d}/{name}-artifacts", ignore_errors=True)
    shutil.copytree(f"{d}/p42-artifacts", f"{d}/{name}-artifacts")
    with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db:
        rows = db.execute("SELECT r.id, r.uuid FROM artifacts a JOIN runs r ON r.id = a.run_id "
                          "WHERE a.name = 'predictions/test.bin'").fetchall()
        for run_id, run in rows:
            path = f"{d}/{name}-artifacts/{run}/predictions/test.bin"
            with open(path, "rb") as f:
                orig = f.read()
            n = struct.unpack("<Q", orig[8:16])[0]
            data = {"huge": b"TSPRED01" + struct.pack("<Q", 2**32) + b"\0" * 24,
                    "zero": b"TSPRED01" + struct.pack("<Q", 0),
                    "nan": orig[:16 + 8 * n] + struct.pack("<f", float("nan")) * n}[mode]
            with open(path, "wb") as f:
                f.write(data)
            db.execute("UPDATE artifacts SET sha256 = ?, size = ? WHERE run_id = ? AND name = "
                       "'predictions/test.bin'", (hashlib.sha256(data).hexdigest(), len(data),
                                                  run_id))
        db.commit()


def chain(d, name, n):
    """$DIR/NAME.db: a copy of t.db holding N more runs link0..link(N-1)
    (no hex digit first: no UUID prefix), each the parent of the next (as
    Python's start_run(parent=) makes them)."""
    shutil.copy(f"{d}/t.db", f"{d}/{name}.db")
    with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db:
        exp, = db.execute("SELECT experiment_id FROM runs WHERE name = 'lm'").fetchone()
        first = db.execute("SELECT MAX(id) + 1 FROM runs").fetchone()[0]
        db.executemany("INSERT INTO runs (id, uuid, experiment_id, name, status, start_time, "
                       "end_time, parent_id) VALUES (?, ?, ?, ?, 'finished', 1.7e9, 1.7e9 + 1, ?)",
                       ((first + i, str(uuid.UUID(int=i + 1)), exp, f"link{i}",
                         first + i - 1 if i else None) for i in range(n)))
        db.commit()


def fixtures(d, run):
    for name, damage in DAMAGED.items():
        plant_series(d, name, damage)
    with open(f"{d}/p42.yaml", "w") as f:
        f.write(f"study: p42\nbase: {d}/good.yaml\nsources: [init]\nreplicates: 2\n")
    run("rm -rf $DIR/p42.db* $DIR/p42-artifacts && $BARE --store sqlite:$DIR/p42.db -q study run "
        "$DIR/p42.yaml > /dev/null")
    for mode in ("huge", "zero", "nan"):
        plant_predictions(d, f"p42{mode}", mode)
    shutil.copy(f"{d}/p42.db", f"{d}/c42.db")
    with contextlib.closing(sqlite3.connect(f"{d}/c42.db")) as db:
        db.execute("UPDATE tags SET value = '-5' WHERE key = 'energy.carbon_kg_per_kwh'")
        db.commit()
    write_events(f"{d}/tb42/own", [(1, "energy/total_kwh", -5.0)])
    run("rm -f $DIR/s42.db* && i=1 && for g in a b; do for h in u v; do for r in 1 2; do "
        "$BARE --store sqlite:$DIR/s42.db -q watch --param g=$g --param h=$h -- sh -c "
        "\"echo trainscope: x=0.$i\"; i=$((i + 1)); done; done; done && $BARE --store "
        "sqlite:$DIR/s42.db -q watch --param g=a --param h=u -- sh -c 'echo trainscope: x=nan'")
    chain(d, "deep42", 20000)
    chain(d, "del42", 50)
    with open(f"{d}/two42.py", "w") as f:
        f.write("import trainscope as t\n"
                "with t.start_run(config={'lr': 0.1}, record_environment=False) as r:\n"
                "    r.log({'loss': 0.3}, step=3)\n"
                "with t.start_run(name='extra', record_environment=False) as r2:\n"
                "    r2.log({'loss': 1.0}, step=1)\n")
    with open(f"{d}/two42.yaml", "w") as f:
        f.write("study: two42\ncommand: PYCMD two42.py\nsources: [all]\nreplicates: 2\nretries: 0\n")
    for name, body in CLIENTS.items():
        with open(f"{d}/{name}.py", "w") as f:
            f.write(HEAD + body.replace("DIR", d))


HEAD = """import http.client, json, socket, subprocess, sys, time
h, p = sys.argv[1].split('/')[2].split(':')
p = int(p)


"""
CLIENTS = {
    "deep42": """
c = http.client.HTTPConnection(h, p, timeout=60)
t0 = time.time()
c.request('GET', '/api/runs?nest=parent&limit=5')
r = c.getresponse()
rows = json.load(r)['runs']
print(r.status, 'answered in', 'under 20 s' if time.time() - t0 < 20 else 'too long', file=sys.stderr)
""",
    "header42": """
c = http.client.HTTPConnection(h, p)
c.putrequest('GET', '/api/info')
c.putheader('X-Long', 'a' * 8192)
c.endheaders()
r = c.getresponse()
print(r.status, json.load(r)['error'], file=sys.stderr)
""",
}
CASES = [
    ("study report of runs whose predictions file claims 2^32 predictions in 40 bytes: each "
     "left out with a note, nothing allocated",
     "(ulimit -v 4000000; $BARE --store sqlite:$DIR/p42huge.db study report p42 -f md) | "
     "grep -c 'left out of the cross-run measures' >&2", {"ok": True}),
    ("study report of runs whose predictions files hold none: no nan shown",
     "$BARE --store sqlite:$DIR/p42zero.db study report p42 -f md | python3 -c \"import sys; "
     "t = sys.stdin.read(); print('nan shown' if 'nan' in t else 'no nan shown', "
     "file=sys.stderr)\"", {"ok": True}),
    ("study report of runs whose top logits are all NaN: no correlation of 1",
     "$BARE --store sqlite:$DIR/p42nan.db study report p42 -f json | python3 -c \"import json, "
     "re, sys; t = sys.stdin.read(); json.loads(t); print('logit correlation', sorted(set("
     "re.findall('logit_correlation.: ([^,}]*)', t))), file=sys.stderr)\"", {"ok": True}),
    ("Python: log_artifact of the kind study report reads as a training's predictions",
     *py("py42", "open('$DIR/pred42.bin', 'wb').write(b'TSPRED01' + bytes(32)); "
         "t.start_run(store=s, record_environment=False).log_artifact('$DIR/pred42.bin', "
         "kind='predictions', name='predictions/test.bin')")),
    ("Python: log_artifact of kind code (env recreate applies its git.diff)",
     *py("py42b", "open('$DIR/diff42', 'w').write('x'); "
         "t.start_run(store=s, record_environment=False).log_artifact('$DIR/diff42', "
         "kind='code', name='git.diff')")),
    ("numerics logmap --x0 just above 1 (1 as a double, not as the decimal the reference reads)",
     "$TS numerics logmap --x0 1.0000000000000000001 --steps 10"),
    ("numerics logmap --r just above 4",
     "$TS numerics logmap --r 4.0000000000000000001 --steps 10"),
    ("numerics logmap --x0 as a hex float (MPFR's base 10 reads it as 0)",
     "$TS numerics logmap --x0 0x1p-2 --steps 10"),
    ("study report of a study whose stored carbon intensity tag is -5",
     "$BARE --store sqlite:$DIR/c42.db study report p42 -f json"),
    ("import tfevents of energy/total_kwh -5 (trainscope's own series, a value its sampler "
     "never records)",
     "rm -f $DIR/i42.db* && $BARE --store sqlite:$DIR/i42.db import tfevents $DIR/tb42"),
    ("stats --compare over a group holding a NaN: left out with a note, as without --compare",
     "$BARE --store sqlite:$DIR/s42.db stats x --by params.g --compare a b | "
     "grep -c 'left out: its x is nan' >&2", {"ok": True}),
    ("stats --by over two keys with that NaN: left out the same way",
     "$BARE --store sqlite:$DIR/s42.db stats x --by params.g --by params.h | "
     "grep -c 'left out: its x is nan' >&2", {"ok": True}),
    ("stats of a run whose two metric chunks changed places",
     "$BARE --store sqlite:$DIR/o42.db stats split lm"),
    ("runs show of a run whose key's last value is below its min",
     "$BARE --store sqlite:$DIR/m42.db runs show lm"),
    ("runs list of a run whose key's last step is NULL",
     "$BARE --store sqlite:$DIR/n42.db runs list -f csv --columns name,metrics.split"),
    ("the API's nested runs over a 20,000-run parent chain: answered",
     serve("deep42", "deep42"), {"ok": True}),
    ("a header line of 8 KiB: 431, naming the limit",
     serve("t", "header42"), {"ok": True}),
    ("a study job whose script starts a second run named 'extra': the training stays the "
     "planned run",
     "cd $DIR && rm -f $DIR/two42.db* && sed \"s|PYCMD |$PY |\" two42.yaml > two42r.yaml && "
     "$BARE --store sqlite:$DIR/two42.db -q study run two42r.yaml > /dev/null && sqlite3 "
     "$DIR/two42.db \"SELECT name, parent_id IS NOT NULL FROM runs ORDER BY name\" | tr '\\n' ' ' "
     ">&2", {"ok": True}),
    ("runs delete --with-children of the head of a 50-run chain: says it deletes 50",
     "$BARE --store sqlite:$DIR/del42.db runs delete link0 --with-children -y | sed "
     "'s/[0-9a-f-]\\{36\\}/UUID/' >&2", {"ok": True}),
]
