"""Issue 51: what the twenty-first hunt found and this stop fixed
(docs/reliability.md, "A twenty-first hunt"): Python values whose __str__
raises, paths and stores holding NUL, an exit status past a C long, a
metric given twice in one call; a user's gpu_util taken for the sampler's,
a migration listed as not applied, hardware counts no machine has, rank
counts read with atoi."""

import contextlib
import hashlib
import shutil
import sqlite3

from c20_one_rule import py  # noqa: E402
from c41_seventeenth_hunt import serve  # noqa: E402

TITLE = "45. A twenty-first hunt (issue 51)"

START = "r = t.start_run(store=s, record_environment=False); "


def fixtures(d, run):
    shutil.copy(f"{d}/t.db", f"{d}/m45.db")
    with contextlib.closing(sqlite3.connect(f"{d}/m45.db")) as db:
        db.execute("DELETE FROM schema_migrations WHERE version = "
                   "(SELECT MAX(version) FROM schema_migrations)")
        db.commit()
    shutil.copy(f"{d}/t.db", f"{d}/c45.db")
    with contextlib.closing(sqlite3.connect(f"{d}/c45.db")) as db:
        db.execute("UPDATE environment SET value = '-5' WHERE key = 'hardware.cpu.logical_cores' "
                   "AND run_id = (SELECT id FROM runs WHERE name = 'ck')")
        db.commit()
    shutil.copy(f"{d}/t.db", f"{d}/r45.db")
    with contextlib.closing(sqlite3.connect(f"{d}/r45.db")) as db:
        run_id, = db.execute("SELECT id FROM runs WHERE name = 'lm'").fetchone()
        db.execute("INSERT INTO tags (run_id, key, value) VALUES (?, 'dist.world_size', '2abc')",
                   (run_id,))
        db.commit()
    shutil.copy(f"{d}/t.db", f"{d}/k45.db")
    shutil.rmtree(f"{d}/k45-artifacts", ignore_errors=True)
    with contextlib.closing(sqlite3.connect(f"{d}/k45.db")) as db:
        ck2, = db.execute("SELECT uuid FROM runs WHERE name = 'ck2'").fetchone()
    shutil.copytree(f"{d}/t-artifacts/{ck2}", f"{d}/k45-artifacts/{ck2}")  # its checkpoints only
    with contextlib.closing(sqlite3.connect(f"{d}/k45.db")) as db:
        text = "model: [1\n"  # no YAML, its hash recorded again as a writer would
        db.execute("UPDATE runs SET config_text = ?, config_hash = ? WHERE name = 'ck2'",
                   (text, hashlib.sha256(text.encode()).hexdigest()))
        db.commit()
    with open(f"{d}/blank45.py", "w") as f:
        f.write("import socket, sys\nh, p = sys.argv[1].split('/')[2].split(':')\n"
                "s = socket.create_connection((h, int(p)))\n"
                "s.sendall(b'\\r\\nGET /api/info HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n"
                "Connection: close\\r\\n\\r\\n')\n"
                "print(s.recv(12).decode(), file=sys.stderr)\n")
    with open(f"{d}/ranks45.py", "w") as f:
        f.write("import http.client, json, sys\nh, p = sys.argv[1].split('/')[2].split(':')\n"
                "c = http.client.HTTPConnection(h, int(p))\nc.request('GET', '/api/runs/lm/ranks')\n"
                "r = c.getresponse()\nprint(r.status, json.load(r)['error'], file=sys.stderr)\n")


CASES = [
    ("Python: a param whose int value's __str__ raises",
     *py("py45a", START + "I = type('RI', (int,), {'__str__': lambda self: 1 / 0}); "
         "r.log_params({'a': I(5)})")),
    ("Python: a store URI holding a NUL byte (the C++ side would cut it and use another store)",
     *py("py45b", "t.start_run(store=s + chr(0) + 'junk', record_environment=False)")),
    ("Python: log_artifact of a path holding a NUL byte",
     *py("py45c", START + "r.log_artifact('$DIR/a' + chr(0) + 'b')")),
    ("Python: a with block left by sys.exit(2**64) (status 255): the run failed",
     "rm -f $DIR/py45d.db*; $PY -c \"import sys, trainscope as t\nwith t.start_run(name='w', "
     "store=sys.argv[1], record_environment=False):\n    sys.exit(2**64)\" sqlite:$DIR/py45d.db; "
     "echo \"exit $?, run $($BARE --store sqlite:$DIR/py45d.db runs list -f csv --columns status "
     "| tail -1)\" >&2", {"ok": True}),
    ("Python: one log() call whose mapping lists a metric twice",
     *py("py45e", START + "D = type('Twice', (dict,), {'items': lambda self: [('x', 1.0), "
         "('x', 2.0)]}); r.log(D(), step=1)")),
    ("resources of a run whose script logged gpu_util (a user's key, not the sampler's gpuN/)",
     "$TS -q watch --name gu45 -- sh -c 'echo trainscope: step=1 gpu_util=-5' && "
     "$TS resources gu45 | grep -c gpu_util >&2; true", {"ok": True}),
    ("a writer on a store whose last schema_migrations row was deleted",
     "$BARE --store sqlite:$DIR/m45.db -q watch -- true"),
    ("checklist of a run whose stored logical core count is -5",
     "$BARE --store sqlite:$DIR/c45.db checklist ck"),
    ("eval of a training whose recorded config (its hash recorded again) does not read",
     "$BARE --store sqlite:$DIR/k45.db eval ck2"),
    ("weights of that training", "$BARE --store sqlite:$DIR/k45.db weights ck2 -o $DIR/w45.pt"),
    ("an empty line before a request line: ignored (RFC 9112 §2.2)",
     serve("t", "blank45"), {"ok": True}),
    ("Python: setup() of seeds.master an object whose __str__ says 7",
     *py("py45f", "L = type('Lie', (), {'__str__': lambda self: '7'}); "
         "t.setup({'seeds': {'master': L()}}, apply=False)")),
    ("the API's ranks of a run whose stored dist.world_size is '2abc'",
     serve("r45", "ranks45"), {"ok": True}),
]
