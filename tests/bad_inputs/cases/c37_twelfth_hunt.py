"""Issue 51: what a twelfth hunt found on the build with the eleventh
hunt's fixes (docs/reliability.md, "A twelfth hunt"), the defects fixed in
the same stop: a store damaged in its number and status columns, setup()
and config() of the Python package, and two of the server's answers."""

import contextlib
import hashlib
import os
import shutil
import sqlite3

from c20_one_rule import py  # noqa: E402
from c34_ninth_hunt import HOST, serve  # noqa: E402

TITLE = "37. A twelfth hunt (issue 51)"

# Each a copy of the fixture store with one column of run lm damaged.
DAMAGED = {
    "k37": "UPDATE metric_keys SET count = -5 WHERE run_id = "
           "(SELECT id FROM runs WHERE name = 'lm')",
    "t37": "UPDATE runs SET start_time = 'yesterday' WHERE name = 'lm'",
    "v37": "UPDATE metric_keys SET last_value = 'abc' WHERE run_id = "
           "(SELECT id FROM runs WHERE name = 'lm')",
    "b37": "UPDATE runs SET status = 'bogus' WHERE name = 'lm'",
}


def fixtures(d, run):
    for name, sql in DAMAGED.items():
        shutil.copy(f"{d}/t.db", f"{d}/{name}.db")
        with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db:
            db.execute("PRAGMA ignore_check_constraints = 1")
            db.execute(sql)
            db.commit()
    # A run whose artifact's file name (planted in the store and on disk)
    # holds a terminal's escapes (B-D2).
    run("rm -rf $DIR/a37.db* $DIR/a37-artifacts; $BARE --store sqlite:$DIR/a37.db -q watch "
        "--name r -- true > /dev/null")
    with contextlib.closing(sqlite3.connect(f"{d}/a37.db")) as db:
        rid, uuid = db.execute("SELECT id, uuid FROM runs WHERE name = 'r'").fetchone()
        folder = f"{d}/a37-artifacts/{uuid}"
        os.makedirs(folder, exist_ok=True)
        name = "e\x1b]0;PWNED\x07.txt"
        with open(os.path.join(folder, name), "wb") as f:
            f.write(b"hello")
        db.execute("INSERT INTO artifacts VALUES (?, ?, ?, ?, ?, ?)",
                   (rid, name, "note", hashlib.sha256(b"hello").hexdigest(), 5, 1.0))
        db.commit()


def get(target, show):
    return (HOST + "c = http.client.HTTPConnection(h, int(p)); c.request('GET', " + target +
            "); r = c.getresponse(); print(" + show + ", file=sys.stderr)")


CASES = [
    # A-D1..D3: a store damaged in a count, a number column or a status
    ("runs show of a run whose stored metric count is -5",
     "$BARE --store sqlite:$DIR/k37.db runs show lm"),
    ("runs list with a run whose start_time is the text 'yesterday'",
     "$BARE --store sqlite:$DIR/t37.db runs list"),
    ("runs show of a run whose metric's last value is the text 'abc'",
     "$BARE --store sqlite:$DIR/v37.db runs show lm"),
    ("runs list with a run whose stored status is 'bogus'",
     "$BARE --store sqlite:$DIR/b37.db runs list"),
    # A-D4..D6: setup() and config() say what they take
    ("Python: setup() given a list", *py("py37a", "t.setup([1], apply=False)")),
    ("Python: config() with a NumPy integer default",
     *py("py37b", "import numpy; print(t.config({'n': numpy.int64(3)}, sets=['n=5']), "
         "file=sys.stderr)")),
    ("Python: config() setting a key that is a section",
     *py("py37c", "t.config({'opt': {'lr': 0.1}}, sets=['opt=3'])")),
    # B-D1: a chart of width 1 is 3 points, not the whole series
    ("GET a metric's chart with width=1",
     serve("t", get("'/api/runs/lm/metric?key=x/reference&width=1'",
                    "r.status, len(json.load(r).get('steps', []))")), {"ok": True}),
    # B-D2: a stored file name never puts a control byte in a header
    ("GET an artifact whose stored file name holds a terminal's escapes",
     serve("a37", get("'/api/runs/r/artifacts/e%1B%5D0%3BPWNED%07.txt'",
                      "r.status, ascii(r.getheader('Content-Disposition'))")), {"ok": True}),
]
