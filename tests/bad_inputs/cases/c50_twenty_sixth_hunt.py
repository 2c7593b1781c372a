"""Issue 51: what the twenty-sixth hunt found and this stop fixed
(docs/reliability.md, "A twenty-sixth hunt"): a path, key or argument
holding a line feed cut or split a message (every error and log line is
now one line whatever text it embeds); Python's Fraction and Decimal NaN
values as text no reader took as the number; a name-vs-prefix note whose
example was the name; a run of another config joining a study under a
planned name."""

import os

from c20_one_rule import py  # noqa: E402

TITLE = "50. A twenty-sixth hunt (issue 51)"

S50 = "$BARE --store sqlite:$DIR/s50.db"


def fixtures(d, run):
    # A damaged event file whose name holds ESC and a line feed.
    os.makedirs(f"{d}/tb50/r1", exist_ok=True)
    with open(f"{d}/tb50/r1/events.out.tfevents.1.h\x1b[2J\nx", "wb") as f:
        f.write(bytes(range(64)))
    # A study of two planned runs (its command records none).
    with open(f"{d}/s50.yaml", "w") as f:
        f.write('study: s50\ncommand: "true"\nreplicates: 2\nsources: [init]\nretries: 0\n')
    run(f"rm -f $DIR/s50.db* && {S50} -q study run $DIR/s50.yaml --logs $DIR/s50logs",
        check=False)
    # A run named with the first 8 digits of another run's UUID.
    run("rm -f $DIR/n50.db* && for n in a b; do $BARE --store sqlite:$DIR/n50.db -q watch "
        "--name $n -- true; done && sqlite3 $DIR/n50.db \"UPDATE runs SET name = "
        "(SELECT substr(uuid, 1, 8) FROM runs WHERE name = 'a') WHERE name = 'b'\"")


CASES = [
    ("import tfevents of a damaged event file whose name holds ESC and a line feed",
     "$TS import tfevents $DIR/tb50"),
    ("config show of a missing file whose name holds a line feed",
     "$TS config show $DIR/nope$'\\n'x.yaml"),
    ("plot of a metric key holding a line feed", "$TS plot lm no$'\\n'key"),
    ("card -o into a folder whose name holds a line feed",
     "$TS card lm -o $DIR/nod$'\\n'ir/c.md"),
    ("--store sqlite: of a folder whose name holds a line feed",
     "$BARE --store sqlite:$DIR/nod$'\\n'ir/x.db runs list"),
    ("runs export -f tfevents into a folder whose name holds a line feed: its summary line",
     "rm -rf $DIR/ex50*; $TS runs export lm -f tfevents -o $DIR/ex50$'\\n'd | head -1 >&2",
     {"ok": True}),
    ("an unexpected argument holding a line feed", "$TS runs show lm no$'\\n'key"),
    ("Python: params 0.5 as a Fraction and NaN as a Decimal: the text a float has",
     "rm -f $DIR/py50.db*; $PY -c \"import sys, fractions, decimal, trainscope as t; "
     "r = t.start_run(name='f', store=sys.argv[1], record_environment=False); "
     "r.log_params({'lr': fractions.Fraction(1, 2), 'n': decimal.Decimal('NaN')}); r.finish()\" "
     "sqlite:$DIR/py50.db && $BARE --store sqlite:$DIR/py50.db runs list -c params.lr,params.n "
     "-f csv | tail -1 >&2", {"ok": True}),
    ("runs show of a run named with another run's first 8 UUID digits: the note's example is "
     "longer than the name",
     "$BARE --store sqlite:$DIR/n50.db runs show \"$(sqlite3 $DIR/n50.db \"SELECT substr(uuid, 1, "
     "8) FROM runs WHERE name = 'a'\")\" 2>&1 >/dev/null | grep -c \"e.g. '[0-9a-f]\\{8\\}-\" >&2",
     {"ok": True}),
    ("train --parent of a study, a planned name, another config",
     S50 + " train $DIR/good.yaml --no-progress --parent s50 --name init/r1"),
    ("Python: start_run(parent=) of a study, a planned name, a config of its own",
     *py("py50b", "t.start_run(store='sqlite:$DIR/s50.db', parent='s50', name='init/r2', "
         "config={'lr': 5.0}, record_environment=False)")),
]
