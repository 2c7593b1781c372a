"""Issue 29, item 6: every output path is checked the same way. A folder
given where a file is written, a folder that does not exist, a file where a
folder belongs: every command that writes a file refuses it before any
work, exit 2, one line naming the path and what to do (it was "cannot
create 'DIR': Success", exit 1)."""

TITLE = "6. Every output path is checked the same way"

CASES = [
    ("plotting into a folder", "$TS plot lm lyapunov -o $DIR/folder"),
    ("exporting into a folder", "$TS runs export lm -o $DIR/folder"),
    ("a Model Card into a folder", "$TS card lm -o $DIR/folder"),
    ("statistics into a folder", "$TS stats lyapunov -o $DIR/folder"),
    ("a plot into a folder that does not exist", "$TS plot lm lyapunov -o $DIR/nope/loss.svg"),
    ("an export under a file", "$TS runs export lm -o $DIR/good.yaml/points.csv"),
    ("a probes chart into a folder", "$TS probes lm --svg $DIR/folder"),
    ("a profile trace into a folder", "$TS profile show lm --trace $DIR/folder"),
    ("a cost model into a folder that does not exist", "$TS costmodel fit -o $DIR/nope/m.json"),
    ("the numerics lab's output folder is a file",
     "$TS numerics logmap --steps 5 --out $DIR/good.yaml"),
    ("an export to a FIFO is written in place",
     "mkfifo $DIR/fifo6 && (cat $DIR/fifo6 > /dev/null &) && $TS runs export lm -o $DIR/fifo6 "
     "&& test -p $DIR/fifo6", {"ok": True}),
]
