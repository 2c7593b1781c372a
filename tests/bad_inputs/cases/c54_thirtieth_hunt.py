"""Issue 51: what the thirtieth hunt found and this stop fixed
(docs/reliability.md, "A thirtieth hunt"): an option given an empty value
taken as left out; an empty item of --columns dropped; `-o FILE` writing
through a FILE.tmp of the user's; stats --study of a run that is no study;
costmodel fit leaving out a named run; a study's set: and grid: naming one
key, and its quick: section never checked; a data hash that is no hash;
a resumed checkpoint holding another step than its name."""

import glob
import hashlib
import os
import sqlite3

from c20_one_rule import py  # noqa: E402

TITLE = "54. A thirtieth hunt (issue 51)"

# A short UUID shown as <id> (it differs from one fixture to the next).
IDS = " 2>&1 >/dev/null | sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2; exit ${PIPESTATUS[0]}"
R54 = "$BARE --store sqlite:$DIR/r54.db"
TRAIN = ("train $DIR/good.yaml --name sw --no-progress --set train.max_steps=4 "
         "--set checkpoint.every_steps=2")
STUDY = "study: s54\ncommand: \"true\"\nreplicates: 2\n"


def fixtures(d, run):
    # A stopped run whose last checkpoint holds its first one's step.
    run(f"rm -rf $DIR/r54.db* $DIR/r54-artifacts && {R54} -q {TRAIN}")
    with sqlite3.connect(f"{d}/r54.db") as db:
        uuid = db.execute("SELECT uuid FROM runs WHERE name = 'sw'").fetchone()[0]
        ckpts = sorted(glob.glob(f"{d}/r54-artifacts/{uuid}/checkpoints/*.pt"))
        first, last = ckpts[0], ckpts[-1]
        with open(first, "rb") as f:
            data = f.read()
        with open(last, "wb") as f:
            f.write(data)
        db.execute("UPDATE artifacts SET sha256 = ?, size = ? WHERE name = ?",
                   (hashlib.sha256(data).hexdigest(), len(data),
                    "checkpoints/" + os.path.basename(last)))
        db.execute("UPDATE runs SET status = 'stopped'")
    # A run whose data file's recorded hash is no hash.
    run("rm -f $DIR/h54.db* && cp $DIR/t.db $DIR/h54.db && sqlite3 $DIR/h54.db \"INSERT INTO "
        "environment SELECT id, 'data.sha256.train.bin', 'not-a-hash' FROM runs WHERE name = "
        "'ck2'\"")
    # A run named like the chart "loss".
    run("rm -f $DIR/pl54.db* && cp $DIR/t.db $DIR/pl54.db && sqlite3 $DIR/pl54.db \"UPDATE runs "
        "SET name = 'loss' WHERE name = 'lm'\"")
    with open(f"{d}/ns54", "w") as f:
        f.write("echo hi\n")
    with open(f"{d}/bi54", "w") as f:
        f.write("#!/nonexistent/interp\necho hi\n")
    os.chmod(f"{d}/ns54", 0o755)
    os.chmod(f"{d}/bi54", 0o755)
    for name, text in (("both", STUDY + "set: {lr: 0.2}\ngrid: {lr: [0.1, 0.3]}\n"),
                       ("vary", STUDY + "set: {a.b: 1}\nvary: a.b\ngrid: {lr: [0.1]}\n"),
                       ("quick", STUDY + "grid: {lr: [0.1]}\nquick: {colour: 1}\n"),
                       ("quickval", STUDY + "grid: {lr: [0.1]}\nquick: true\n")):
        with open(f"{d}/s54{name}.yaml", "w") as f:
            f.write(text)


CASES = [
    ("runs list --status '' (a variable that is not set)", "$TS runs list --status ''"),
    ("runs list -e ''", "$TS runs list -e ''"),
    ("runs list --columns ''", "$TS runs list --columns ''"),
    ("runs list --columns with an empty item", "$TS runs list --columns 'name,,status'"),
    ("eval --checkpoint ''", "$TS eval ck2 --checkpoint ''"),
    ("weights -o ''", "cd $DIR && $TS weights ck2 -o ''"),
    ("weights -o FILE beside a FILE.tmp of the user's: it is left alone",
     "cd $DIR && echo 'my notes' > w54.pt.tmp && $TS -q weights ck2 -o w54.pt && cat w54.pt.tmp >&2",
     {"ok": True}),
    ("stats --study of a run that is no study", "$TS stats test/accuracy --study ck2"),
    ("costmodel fit naming a run that was not profiled",
     "$TS costmodel fit ck2 -o $DIR/cm54.json"),
    ("a study's set: and grid: giving one key", "$TS study run $DIR/s54both.yaml"),
    ("a study's set: and vary: giving one key", "$TS study run $DIR/s54vary.yaml"),
    ("a study's quick: holding an unknown key, without --quick",
     "$TS study run $DIR/s54quick.yaml"),
    ("a study's quick: that is no map", "$TS study run $DIR/s54quickval.yaml --quick"),
    ("checklist of a run whose data hash is no hash",
     "$BARE --store sqlite:$DIR/h54.db checklist ck2" + IDS),
    ("card of that run", "$BARE --store sqlite:$DIR/h54.db card ck2" + IDS),
    ("Python: an environment entry data.sha256.* that is no hash",
     *py("py54", "t.start_run(store=s, environment={'data.sha256.x': 'abc'})")),
    ("train --resume from a checkpoint holding another step than its name",
     f"{R54} {TRAIN.replace('--name sw ', '')} --resume sw" + IDS),
    ("runs import (a command runs has not)", "$TS runs import x.json"),
    ("costmodel fitt", "$TS costmodel fitt"),
    ("plot RUN loss where a run is named loss",
     "$BARE --store sqlite:$DIR/pl54.db plot ck2 loss -f csv" + IDS),
    ("plot RUN KEY RUN: after a key, the rest are keys",
     "$TS plot ck2 train/loss ck -f csv"),
    ("watch of a script without a #! line", "$BARE --store sqlite:$DIR/ns54.db watch -- $DIR/ns54"),
    ("watch of a script whose #! names no program",
     "$BARE --store sqlite:$DIR/ns54.db watch -- $DIR/bi54"),
    ("... neither recorded a run",
     "$BARE --store sqlite:$DIR/ns54.db runs list 2>&1 | head -1 >&2", {"ok": True}),
    ("... and the run stays stopped",
     "sqlite3 $DIR/r54.db \"SELECT name, status FROM runs\" >&2", {"ok": True}),
]
