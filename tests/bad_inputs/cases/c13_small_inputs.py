"""Issue 29, item 13 (the parts of the train command): a check blames the
--set that is wrong, not the first one given; a run stopped by a signal
says at which step it stopped and that it has no test accuracy (it printed
"test accuracy 0.0000")."""

TITLE = "13. Smaller ones: blame and a stopped run"

T = "$TS train $DIR/good.yaml --no-progress"

# Starts a long training, stops it with SIGINT once it runs, and shows what
# it printed on stdout (the step and time made constant).
STOPPED = ("cd $DIR && ($TS -q train $DIR/long.yaml --name sig --no-progress > sig.out "
           "2> /dev/null & p=$!; "
           "until $TS runs list --filter \"name = 'sig' and status = 'running'\" --format csv "
           "2> /dev/null | grep -q sig; do sleep 0.2; done; sleep 1; kill -INT $p; wait $p; "
           "sed -E 's/step [0-9]+/step N/; s/, [0-9.]+s$/, Ts/' sig.out >&2)")

CASES = [
    ("a bad value after a good one blames the bad one",
     f"{T} --set data.test_subset=256 --set data.train_subset=-3"),
    ("a good value after a bad one blames the bad one",
     f"{T} --set data.train_subset=-3 --set data.test_subset=256"),
    ("a key given twice by --set blames the last", f"{T} --set train.epochs=2 --set train.epochs=0"),
    ("a run stopped by a signal before an evaluation", STOPPED, {"ok": True}),
]


def fixtures(d, run):
    with open(f"{d}/long.yaml", "w") as f:
        f.write("data: {dataset: synthetic, synthetic: {size: 60000}}\n"
                "model: {name: demo_cnn}\ntrain: {epochs: 3, batch_size: 16}\n"
                "compute: {threads: 1}\ncheckpoint: {every_epochs: 0}\n")
