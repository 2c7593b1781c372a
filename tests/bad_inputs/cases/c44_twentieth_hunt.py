"""Issue 51: what the twentieth hunt found (docs/reliability.md, "A
twentieth hunt"): a stored UUID that is no UUID, a NULL or absurd
heartbeat, a Python value whose __float__ raises, a param given twice, a
checklist that ticks what nothing answers, one number written three ways
grouped three times; and on the server: a multipart tag body, a coding
refused with q=0."""

import contextlib
import shutil
import sqlite3

from c20_one_rule import py  # noqa: E402
from c41_seventeenth_hunt import serve  # noqa: E402

TITLE = "44. A twentieth hunt (issue 51)"

DAMAGED = {
    "u44": "UPDATE runs SET uuid = 'ab' || char(27) || ']0;pwn' || char(7) || 'cd' "
           "WHERE id = (SELECT MIN(id) FROM runs WHERE name = 'twin')",
    "h44": "UPDATE runs SET status = 'running', end_time = NULL, heartbeat = 1e300, "
           "pid = 999999, host = 'other.example' WHERE name = 'lm'",
    "z44": "UPDATE runs SET heartbeat = NULL WHERE name = 'lm'",
}


def plant_copies(d, damaged):
    """$DIR/NAME.db for each of DAMAGED (name: SQL): t.db with the SQL run."""
    for name, sql in damaged.items():
        shutil.copy(f"{d}/t.db", f"{d}/{name}.db")
        with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db:
            db.execute(sql)
            db.commit()


def fixtures(d, run):
    plant_copies(d, DAMAGED)
    run("rm -f $DIR/g44.db* && for lr in 0.1 0.10 1e-1 0.2 0.20; do $BARE --store "
        "sqlite:$DIR/g44.db -q watch --param lr=$lr -- sh -c \"echo trainscope: acc=0.$RANDOM\"; "
        "done")
    write_clients(d, CLIENTS)


def write_clients(d, clients):
    """Each of CLIENTS (name: code) as $DIR/NAME.py, after HEAD."""
    for name, body in clients.items():
        with open(f"{d}/{name}.py", "w") as f:
            f.write(HEAD + body)


HEAD = """import http.client, json, sys
h, p = sys.argv[1].split('/')[2].split(':')
p = int(p)


def read_all(s):  # what the server sends on socket S until it closes
    got = b''
    while True:
        part = s.recv(65536)
        if not part:
            return got
        got += part


"""
CLIENTS = {
    "multipart44": """
body = b'--b\\r\\nContent-Disposition: form-data; name="v"\\r\\n\\r\\nhello\\r\\n--b--\\r\\n'
c = http.client.HTTPConnection(h, p)
c.request('PUT', '/api/runs/lm/tags/m', body=body,
          headers={'Content-Type': 'multipart/form-data; boundary=b'})
r = c.getresponse()
print(r.status, json.load(r)['error'], file=sys.stderr)
""",
    "gzip44": """
c = http.client.HTTPConnection(h, p)
c.request('GET', '/api/runs/lm', headers={'Accept-Encoding': 'br;q=0, gzip; q=0'})
r = c.getresponse()
r.read()
print(r.status, 'coding', r.getheader('Content-Encoding') or 'none', file=sys.stderr)
""",
}

CASES = [
    ("runs list of a store whose run's UUID holds ESC ] ... BEL",
     "$BARE --store sqlite:$DIR/u44.db runs list"),
    ("runs show of a run whose heartbeat is 1e300 (another host's): stale, said without a "
     "301-digit number",
     "$BARE --store sqlite:$DIR/h44.db runs show lm | grep '^status' | tr -s ' ' >&2",
     {"ok": True}),
    ("runs show of a run whose heartbeat is NULL: none, not 1970",
     "$BARE --store sqlite:$DIR/z44.db runs show lm | grep '^heartbeat' | tr -s ' ' >&2",
     {"ok": True}),
    ("Python: a metric whose value's __float__ raises",
     *py("py44a", "r = t.start_run(store=s, record_environment=False); "
         "F = type('BadF', (), {'__float__': lambda self: 1 / 0}); r.log({'e': F()}, step=1)")),
    ("Python: a param given twice with one value ({'a.b': 1, 'a': {'b': 1}}), as watch refuses it",
     *py("py44b", "t.start_run(store=s, record_environment=False).log_params("
         "{'a.b': 1, 'a': {'b': 1}})")),
    ("checklist of a Python run that recorded only environment={'user.x': 'nan'}: the items "
     "nothing answers stay open",
     "rm -f $DIR/pe44.db* && $PY -c \"import sys, trainscope as t; t.start_run(store=sys.argv[1], "
     "name='pe', record_environment=False, environment={'user.x': 'nan'}).finish()\" "
     "sqlite:$DIR/pe44.db && $BARE --store sqlite:$DIR/pe44.db checklist pe | grep '^\\[x\\]' "
     ">&2", {"ok": True}),
    ("stats --by lr of runs whose lr is 0.1, 0.10, 1e-1, 0.2 and 0.20: two groups",
     "$BARE --store sqlite:$DIR/g44.db stats acc --by lr -f csv | cut -d, -f1,2 | tail -n +2 | "
     "tr '\\n' ' ' >&2", {"ok": True}),
    ("a tag PUT with a multipart/form-data body: refused, not written empty",
     serve("t", "multipart44", "--allow-writes"), {"ok": True}),
    ("Accept-Encoding that refuses br and gzip with q=0: the answer is not compressed",
     serve("t", "gzip44"), {"ok": True}),
]
