"""Issue 51: what the sixteenth hunt found (docs/reliability.md, "A sixteenth
hunt"), fixed in the same stop: a format asked that a listing ignored, a
stored layer name written into an SVG as markup, a Python flag taken by its
truth, a study's damaged plan blamed on its file; and what the fifteenth
hunt's testers noted: --json ignored by commands that write no JSON, times
since a start that is no time, sizes no file has."""

import contextlib
import hashlib
import os
import shutil
import sqlite3

from c20_one_rule import py  # noqa: E402
from c21_statuses import fixtures as studies  # noqa: E402
from c39_fourteenth_and_fifteenth_hunts import copy_damaged  # noqa: E402

TITLE = "40. A sixteenth hunt (issue 51)"

RUN = "(SELECT id FROM runs WHERE name = '{}')"
DAMAGED = {
    "z40": ("t", "UPDATE artifacts SET size = 4611686018427387904 WHERE run_id = "
            + RUN.format("ck")),
    "s40": ("t", "UPDATE runs SET start_time = 1e300 WHERE name = 'lm'"),
}
# Same length as the name it replaces: the records hold each name's length.
LAYER = b"classifier.fc1"
HOSTILE = b"</text><b>\x1b\nxy"


def damage_profile(path):
    with contextlib.closing(sqlite3.connect(path)) as db:
        for rowid, payload in db.execute(
                "SELECT rowid, payload FROM records WHERE kind LIKE 'profile%'").fetchall():
            db.execute("UPDATE records SET payload = ? WHERE rowid = ?",
                       (payload.replace(LAYER, HOSTILE), rowid))
        db.commit()


def damage_plan(path, study):
    """Study STUDY's recorded plan says replicates: 0, its hash matching."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        text = db.execute("SELECT config_text FROM runs WHERE name = ?", (study,)).fetchone()[0]
        text = text.replace("replicates: 2", "replicates: 0")
        db.execute("UPDATE runs SET config_text = ?, config_hash = ? WHERE name = ?",
                   (text, hashlib.sha256(text.encode()).hexdigest(), study))
        db.commit()


def fixtures(d, run):
    if not os.path.exists(f"{d}/h3.db"):  # TS_BAD_INPUTS_ONLY=40: the studies' store
        studies(d, run)
    copy_damaged(d, DAMAGED)
    run("rm -f $DIR/pr40.db* && $BARE --store sqlite:$DIR/pr40.db -q profile $DIR/good.yaml "
        "--steps 8 --name pr --set train.epochs=3 > /dev/null")
    damage_profile(f"{d}/pr40.db")
    shutil.copy(f"{d}/h3.db", f"{d}/q40.db")
    damage_plan(f"{d}/q40.db", "silent2")


def json_summary(expression):
    """Pipes a command's JSON to python3, which prints EXPRESSION of it (j)."""
    return f"| python3 -c \"import json, sys; j = json.load(sys.stdin); print({expression})\" >&2"


CASES = [
    ("runs view RUN -f json: the listing of its views is JSON (here, none)",
     "$TS runs view ck -f json >&2", {"ok": True}),
    ("runs view RUN -f csv: the listing of its views is CSV",
     "$TS runs view ck -f csv >&2", {"ok": True}),
    ("profile show --svg of a stored layer name holding markup and an escape",
     "$BARE --store sqlite:$DIR/pr40.db profile show pr --svg $DIR/pr40.svg > /dev/null 2>&1 && "
     "python3 -c \"import xml.dom.minidom as m; m.parse('$DIR/pr40.svg'); print('well-formed')\""
     " >&2 && ! grep -q '<b>' $DIR/pr40.svg", {"ok": True}),
    ("Python: start_run(record_environment='false')",
     *py("py40a", "t.start_run(store=s, record_environment='false')")),
    ("Python: setup(apply='no')", *py("py40b", "t.setup({}, apply='no')")),
    ("study status of a study whose recorded plan says replicates: 0",
     "$BARE --store sqlite:$DIR/q40.db study status silent2"),
    ("study report of the same study", "$BARE --store sqlite:$DIR/q40.db study report silent2"),
    ("plot --json writes the curves as JSON",
     "$TS --json plot lm x/f64.rx_1mx " + json_summary("j['x'], len(j['curves'])"),
     {"ok": True}),
    ("plot --x time of a run whose stored start is 1e300: no time since it",
     "$BARE --store sqlite:$DIR/s40.db plot lm x/f64.rx_1mx --x time -f json "
     + json_summary("j['curves'][0]['x'][:2]"), {"ok": True}),
    ("card --json (a Model Card is Markdown)", "$TS --json card ck"),
    ("watch --json (it writes no JSON; it runs nothing)", "$TS --json watch --name j40 -- true"),
    ("report throughput -f json: numbers and nulls, not the table's text",
     "$TS report throughput ck -f json " + json_summary("j[0]['steps/s'] is None or "
                                                        "isinstance(j[0]['steps/s'], float)"),
     {"ok": True}),
    ("runs show of a run whose stored artifact size is 2^62",
     "$BARE --store sqlite:$DIR/z40.db runs show ck"),
]
