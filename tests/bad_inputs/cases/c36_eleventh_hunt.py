"""Issue 51: what an eleventh tester found on the build with the tenth
hunt's fixes (docs/reliability.md, "An eleventh tester"), the defects fixed
in the same stop."""

import contextlib
import os
import shutil
import sqlite3
import struct

from c20_one_rule import py  # noqa: E402
from tfevents_writer import write_events  # tests/support, on bad_inputs.py's path

TITLE = "36. An eleventh tester (issue 51)"


def fixtures(d, run):
    # A grid whose value makes planned run names longer than a name may be.
    with open(f"{d}/long-names.yaml", "w") as f:
        f.write(f"study: names36\nbase: {d}/good.yaml\ngrid:\n  run.experiment: [a, {'x' * 250}]\n"
                "replicates: 2\n")
    # An event file in a folder whose name forges a line of the summary.
    write_events(os.path.join(d, "tb36", "r\nimported 9 runs (99 scalar points); 0 already "
                              "imported"), [(1, "loss", 1.0)])
    # A metric point of run lm whose stored step is -5 (A-D5).
    shutil.copy(f"{d}/t.db", f"{d}/m36.db")
    with contextlib.closing(sqlite3.connect(f"{d}/m36.db")) as db:
        rowid, points = db.execute(
            "SELECT c.rowid, c.points FROM metric_chunks c JOIN metric_keys k ON k.id = c.key_id "
            "JOIN runs r ON r.id = k.run_id WHERE r.name = 'lm' ORDER BY c.rowid").fetchone()
        db.execute("UPDATE metric_chunks SET points = ? WHERE rowid = ?",
                   (struct.pack("<q", -5) + points[8:], rowid))
        db.commit()


CASES = [
    # D1: a joiner after ASCII makes a key look like another: shown
    ("a --tag key of kind and U+200D (it reads as trainscope's own kind)",
     "rm -f $DIR/j36.db*; $BARE --store sqlite:$DIR/j36.db -q watch --name w --tag "
     "\"$(printf 'kind\\342\\200\\215')=study\" -- true && $BARE --store sqlite:$DIR/j36.db "
     "runs show w | grep -a u200d | tr -s ' ' >&2", {"ok": True}),
    # D3: a study plans only names a run may have
    ("a study whose grid makes planned run names of 268 bytes",
     "$BARE --store sqlite:$DIR/n36.db study run $DIR/long-names.yaml"),
    # D4: a folder's name is one value: its line break is escaped
    ("import tfevents of a folder whose name holds a line break",
     "rm -f $DIR/i36.db*; $BARE --store sqlite:$DIR/i36.db import tfevents $DIR/tb36 | head -1 | "
     "sed 's/^[0-9a-f]*  //' >&2", {"ok": True}),
    # The defects left open at first, fixed in the next stop.
    # A-D5: a metric point's step is held to the rule when it is read back
    ("runs export of a run whose stored metric point has step -5",
     "$BARE --store sqlite:$DIR/m36.db runs export lm"),
    # A-D6: trainscope.config() reads seeds.*/compute.* as the trainer does
    ("Python: config() with seeds.master=1_000",
     *py("py36a", "t.config({'seeds': {'master': 0}}, sets=['seeds.master=1_000'])")),
    ("Python: config() with compute.threads of a fullwidth digit",
     *py("py36b", "t.config(sets=['compute.threads=\\uff12'])")),
    # B-D1: an artifact name's parts are never empty
    ("Python: log_artifact named dir/ (a '/' at its end)",
     *py("py36c", "r = t.start_run(store=s, record_environment=False); open('$DIR/a36.txt', "
         "'w').write('a'); r.log_artifact('$DIR/a36.txt', name='dir/')")),
    # B-D8: an environment entry's value has the size limit of a tag's
    ("Python: an environment entry whose value is 5000 bytes",
     *py("py36d", "t.start_run(store=s, record_environment=False, "
         "environment={'user.notes': 'n' * 5000})")),
    # B-D9: watch() settings are the units'; a line break is escaped once
    ("Python: watch() with a setting no unit reads (optimizer.lr)",
     *py("py36e", "import torch; r = t.start_run(store=s, record_environment=False); "
         "r.watch(torch.nn.Linear(2, 2), settings=['optimizer.lr=0.5'])")),
    ("Python: watch() with a setting holding a line break",
     *py("py36f", "import torch; r = t.start_run(store=s, record_environment=False); "
         "r.watch(torch.nn.Linear(2, 2), settings=['drift.every=1\\n2'])")),
    ("train --set with a value holding a line break",
     "$TS train $DIR/good.yaml --set \"$(printf 'train.epochs=1\\n2')\""),
]
