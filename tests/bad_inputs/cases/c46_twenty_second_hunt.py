"""Issue 51: what the twenty-second hunt found and this stop fixed
(docs/reliability.md, "A twenty-second hunt"): a chunk copied after the
last, trainscope's own series holding values its sampler never records,
means of huge finite values, runs that lack a --by field grouped with a
value "(unset)", a Python str subclass as a metric key, a parent= that
matches no run; and on the server: a column named many times, a long tag
key cut inside a character."""

import contextlib
import shutil
import sqlite3
import struct

from c20_one_rule import py  # noqa: E402
from c41_seventeenth_hunt import serve  # noqa: E402
from c44_twentieth_hunt import write_clients  # noqa: E402

TITLE = "46. A twenty-second hunt (issue 51)"

START = "r = t.start_run(store=s, record_environment=False); "


def plant_key(d, name, key, values, chunks=1):
    """$DIR/NAME.db: t.db whose run lm holds metric KEY with VALUES at steps
    1, 2, ... in CHUNKS chunks, its row's count and summary as a writer
    keeps them."""
    shutil.copy(f"{d}/t.db", f"{d}/{name}.db")
    with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db:
        run_id, = db.execute("SELECT id FROM runs WHERE name = 'lm'").fetchone()
        db.execute("DELETE FROM metric_keys WHERE run_id = ? AND key = ?", (run_id, key))
        key_id = db.execute("INSERT INTO metric_keys (run_id, key, count, last_step, last_value, "
                            "min_value, max_value) VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (run_id, key, len(values), len(values), values[-1], min(values),
                             max(values))).lastrowid
        points = list(enumerate(values, start=1))
        size = -(-len(points) // chunks)
        for seq in range(chunks):
            chunk = points[seq * size:(seq + 1) * size]
            blob = b"".join(struct.pack("<qdd", step, 1.7e9 + step, v) for step, v in chunk)
            db.execute("INSERT INTO metric_chunks (key_id, seq, n, first_step, last_step, points) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (key_id, seq, len(chunk), chunk[0][0], chunk[-1][0], blob))
        db.commit()


def fixtures(d, run):
    plant_key(d, "d46", "split", [2.5, 2.0, 0.5, 0.25], chunks=2)
    with contextlib.closing(sqlite3.connect(f"{d}/d46.db")) as db:  # the last chunk, twice
        db.execute("INSERT INTO metric_chunks SELECT key_id, seq + 1, n, first_step, last_step, "
                   "points FROM metric_chunks WHERE seq = 1 AND key_id = "
                   "(SELECT id FROM metric_keys WHERE key = 'split')")
        db.commit()
    plant_key(d, "e46", "energy/total_kwh", [-5.0, -5.0])
    plant_key(d, "x46", "exit_code", [-7.0])
    plant_key(d, "b46", "proc/threads", [1e308] * 12)
    run("rm -f $DIR/g46.db* && for g in '(unset)' '' '(unset)' '' '-'; do $BARE --store "
        "sqlite:$DIR/g46.db -q watch ${g:+--tag grp=\"$g\"} -- echo trainscope: m=1; done")
    run("rm -f $DIR/h46.db* && for i in 1 2 3; do $BARE --store sqlite:$DIR/h46.db -q watch -- "
        "echo trainscope: m=1e308; done")
    write_clients(d, CLIENTS)


CLIENTS = {
    "cols46": """
c = http.client.HTTPConnection(h, p)
c.request('GET', '/api/runs?limit=1&columns=' + ','.join(['name', 'name'] + ['params.*'] * 50))
cols = json.load(c.getresponse())['columns']
print(len(cols), 'columns,', len(set(cols)), 'different', file=sys.stderr)
""",
    "long46": """
from urllib.parse import quote
c = http.client.HTTPConnection(h, p)
c.request('PUT', '/api/runs/lm/tags/' + quote('\\u20ac' * 86), body=b'x')
r = c.getresponse()
print(r.status, json.load(r)['error'], file=sys.stderr)
""",
}

CASES = [
    ("metrics of a key whose last chunk was copied after itself (its count says 4)",
     "$BARE --store sqlite:$DIR/d46.db metrics lm split"),
    ("runs export of that run", "$BARE --store sqlite:$DIR/d46.db runs export lm -f csv"),
    ("checklist of a run whose energy/total_kwh is -5 (its sampler never records it)",
     "$BARE --store sqlite:$DIR/e46.db checklist lm"),
    ("report throughput of that run", "$BARE --store sqlite:$DIR/e46.db report throughput lm"),
    ("runs show of that run (its metrics' summaries)",
     "$BARE --store sqlite:$DIR/e46.db runs show lm"),
    ("card of a run whose exit_code is -7", "$BARE --store sqlite:$DIR/x46.db card lm"),
    ("resources of twelve samples of proc/threads 1e308: the mean is 1e+308, not inf",
     "$BARE --store sqlite:$DIR/b46.db resources lm | grep proc/threads | tr -s ' ' >&2",
     {"ok": True}),
    ("stats of three runs of 1e308: left out (a variance overflows), said so",
     "$BARE --store sqlite:$DIR/h46.db stats m 2>&1 | sed -E 's/run [0-9a-f]{8}/run UUID/' >&2",
     {"ok": True}),
    ("stats --by a tag: runs without it (null) apart from the value '(unset)'",
     "$BARE --store sqlite:$DIR/g46.db stats m --by tags.grp -f json | python3 -c \"import "
     "json, sys; print(sorted((str(g['group']), g['n']) for g in json.load(sys.stdin)"
     "['groups']), file=sys.stderr)\"", {"ok": True}),
    ("Python: a metric key of a str subclass whose __str__ raises: its text",
     *py("py46a", START + "K = type('K', (str,), {'__str__': lambda self: 1 / 0}); "
         "r.log({K('k'): 1.0}, step=1); print('logged', file=sys.stderr)")),
    ("Python: start_run(parent=) that matches no run",
     *py("py46b", "t.start_run(store=s, parent='nosuch', record_environment=False)")),
    ("train --parent that matches no run: the same words",
     "$BARE --store sqlite:$DIR/t.db train $DIR/good.yaml --no-progress --parent nosuchparent"),
    ("the API: a column named 52 times is one column each",
     serve("t", "cols46"), {"ok": True}),
    ("the API: a 258-byte tag key of euro signs: the rule's words, cut at a character",
     serve("t", "long46", "--allow-writes"), {"ok": True}),
]
