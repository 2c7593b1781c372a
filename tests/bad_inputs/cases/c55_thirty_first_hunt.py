"""Issue 51: what the thirty-first hunt found and this stop fixed
(docs/reliability.md, "A thirty-first hunt"): an argument given an empty
value taken as left out (the thirtieth's empty options, for positionals);
an output written over the store it read, or into its artifacts."""

TITLE = "55. A thirty-first hunt (issue 51)"

O55 = "$BARE --store sqlite:$DIR/o55.db"


def fixtures(d, run):
    run("rm -f $DIR/o55.db* && cp $DIR/t.db $DIR/o55.db")


CASES = [
    ("metrics RUN '' (a variable that is not set)", "$TS metrics ck2 ''"),
    ("runs view RUN ''", "$TS runs view ck2 ''"),
    ("env diff RUN ''", "$TS env diff ck2 ''"),
    ("runs show ''", "$TS runs show ''"),
    ("runs export -o the store it reads", f"cd $DIR && {O55} runs export ck2 -o o55.db"),
    ("card -o into the store's artifact folder", "cd $DIR && $TS card ck2 -o t-artifacts/x.md"),
    ("... the store still holds its runs",
     f"{O55} runs list --columns name -f csv | wc -l >&2", {"ok": True}),
]
