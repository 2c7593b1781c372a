"""Issue 51: what a thirteenth hunt found on the build with the twelfth
hunt's fixes (docs/reliability.md, "A thirteenth hunt"), the defects fixed
in the same stop: CSV fields of stored text, a study's grid keys, a store
whose parents form a cycle, config() keys, a query's repeated parameters."""

import contextlib
import shutil
import sqlite3

from c20_one_rule import py  # noqa: E402
from c34_ninth_hunt import HOST, serve  # noqa: E402

TITLE = "38. A thirteenth hunt (issue 51)"


def fixtures(d, run):
    # Runs a damaged store made their own parent (A-D5).
    shutil.copy(f"{d}/t.db", f"{d}/c38.db")
    with contextlib.closing(sqlite3.connect(f"{d}/c38.db")) as db:
        db.execute("UPDATE runs SET parent_id = id WHERE name = 'lm'")
        db.commit()
    for name, key in (("g38", '"note=x"'), ("e38", '""')):
        with open(f"{d}/{name}.yaml", "w") as f:
            f.write(f"study: {name}\nbase: {d}/good.yaml\ngrid:\n  {key}: [1, 2]\n")
    # A param holding a terminal's escapes (A-D3), as Python accepts it.
    run("rm -f $DIR/p38.db*; $PY -c \"import sys, trainscope as t; t.start_run(store=sys.argv[1], "
        "name='pv', record_environment=False, config={'note': 'x\\x1b]0;pwn\\x07'}).finish()\" "
        "sqlite:$DIR/p38.db")


def get(target, show):
    return (HOST + "c = http.client.HTTPConnection(h, int(p)); c.request('GET', " + target +
            "); r = c.getresponse(); print(" + show + ", file=sys.stderr)")


CASES = [
    # A-D3: a CSV field is shown as the table shows it
    ("runs list -f csv of a param holding a terminal's escapes",
     "$BARE --store sqlite:$DIR/p38.db runs list --columns name,params.note --format csv "
     "| tail -1 >&2", {"ok": True}),
    # A-D4: a grid key is a config key
    ("a study whose grid key holds '='", "$BARE --store sqlite:$DIR/g38s.db study run $DIR/g38.yaml"),
    ("a study whose grid key is empty", "$BARE --store sqlite:$DIR/e38s.db study run $DIR/e38.yaml"),
    # A-D5: a family whose parents form a cycle
    ("runs delete --with-children of a run that is its own parent",
     "$BARE --store sqlite:$DIR/c38.db runs delete lm -y --with-children", {"ok": True}),
    # A-D7, A-D8: config() keys a setting can name, nested without bound
    ("Python: config() with a default key holding '.'",
     *py("py38a", "t.config({'a.b': 1}, sets=['a.b=2'])")),
    ("Python: config() of a dict nested 5000 deep",
     *py("py38b", "import functools; t.config(functools.reduce(lambda d, i: {'k': d}, "
         "range(5000), 1))")),
    # B-D1: a parameter given twice
    ("GET /api/runs with limit given twice",
     serve("t", get("'/api/runs?limit=1&limit=2'", "r.status, json.load(r)['error']")),
     {"ok": True}),
]
