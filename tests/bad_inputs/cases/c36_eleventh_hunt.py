"""Issue 51: what an eleventh tester found on the build with the tenth
hunt's fixes (docs/reliability.md, "An eleventh tester"), the defects fixed
in the same stop."""

import os

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
]
