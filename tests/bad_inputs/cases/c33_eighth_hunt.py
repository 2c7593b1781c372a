"""Issue 51: what an eighth tester found in 51 cases on the build with the
seventh hunt's fixes (docs/reliability.md, "An eighth tester"), each fixed;
with it, the capabilities' views (issue 47) met bad bytes."""

import contextlib
import json
import sqlite3

from c20_one_rule import py  # noqa: E402
from tfevents_writer import write_events  # tests/support, on bad_inputs.py's path

TITLE = "33. An eighth tester, and the capabilities' views (issues 51, 47)"

MODEL = {"format": "trainscope-costmodel/4",
         "compute_features": ["vector_mflop", "activation_mbytes", "mparams", "1"],
         "simd_float_lanes": 16, "update_features": ["mparams", "param_tensors"],
         "overhead_features": ["layers", "activation_mbytes"], "unit": "us",
         "coef": {"Conv2d": [10.0, 1.0, 1.0, 5.0]}, "generic": [9.0, 1.0, 1.0, 5.0],
         "update": [20.0, 2.0], "overhead": [3.0, 0.5], "samples": 9, "threads": 2}


def fixtures(d, run):
    for name, key, value in [("cm33-lanes", "simd_float_lanes", 16.9),
                             ("cm33-samples", "samples", "9")]:
        with open(f"{d}/{name}.json", "w") as f:
            json.dump({**MODEL, key: value}, f)
    # A scalar tensor holding 1.0 in float_val and 2.0 in tensor_content.
    write_events(f"{d}/tb33/both", [(1, "x", 1.0, 1.7e9, [], 2.0)])
    # A run with drift records, one of them damaged (from_step 2^64-1).
    run("$BARE --store sqlite:$DIR/v33.db -q train $DIR/good.yaml --name dr --no-progress "
        "--set drift.every=2")
    with contextlib.closing(sqlite3.connect(f"{d}/v33.db")) as db, \
            contextlib.closing(sqlite3.connect(f"{d}/v33ok.db")) as whole:
        db.backup(whole)  # the run undamaged, for the dashboard's sample
        db.execute("UPDATE records SET payload = x'973C22F3ED20903FFFFFFFFFFFFFFFFFFF01' WHERE "
                   "rowid = (SELECT min(rowid) FROM records WHERE kind = 'drift')")
        db.commit()
    # A study whose tag slurm.jobs was planted with terminal escapes.
    run("printf 'study: s33\\ncommand: true\\nsources: [all]\\nreplicates: 2\\nretries: 0\\n' "
        "> $DIR/s33.yaml; $BARE --store sqlite:$DIR/s33.db -q study run $DIR/s33.yaml "
        "> /dev/null 2>&1; true")
    with contextlib.closing(sqlite3.connect(f"{d}/s33.db")) as db:
        (rid,) = db.execute("SELECT id FROM runs WHERE name = 's33'").fetchone()
        db.execute("INSERT INTO tags(run_id, key, value) VALUES (?, 'slurm.jobs', ?)",
                   (rid, "1\x1b[2J\x1b]0;pwn\x07,2"))
        db.commit()


PARAMS = ("import torch; m = torch.nn.Module(); m.register_parameter(NAME, "
          "torch.nn.Parameter(torch.randn(2, 2))); o = torch.optim.SGD(m.parameters(), lr=0.1); "
          "r = t.start_run(store=s, record_environment=False); "
          "r.watch(m, o, settings=['drift.every=1'], monitor_interval=0); "
          "o.zero_grad(); m.get_parameter(NAME).sum().backward(); o.step(); r.finish(); "
          "print('finished', file=sys.stderr)")
PUT = ("import http.client, sys; h, p = sys.argv[1].split('/')[2].split(':'); "
       "c = http.client.HTTPConnection(h, int(p)); c.request('PUT', '/api/runs/dr/tags/t', 'x', "
       "{'Content-Range': 'bytes 5-5/10'}); print(c.getresponse().status, file=sys.stderr)")
SAMPLE = ("import json, sys, urllib.request; v = json.load(urllib.request.urlopen(sys.argv[1] + "
          "'api/runs/dr/views/drift?max_rows=3')); print(len(v['rows']), v['total_rows'], "
          "v['sampled'], file=sys.stderr)")


def serve(store, client):
    return (f"$BARE --store sqlite:$DIR/{store}.db serve --port 0 --allow-writes > "
            f"$DIR/{store}.out & P=$!; for i in $(seq 100); do grep -qs http $DIR/{store}.out && "
            f"break; sleep 0.1; done; U=$(grep -o 'http://[^ ]*' $DIR/{store}.out); python3 -c "
            f"\"{client}\" \"$U\"; R=$?; kill $P; wait $P; exit $R")


CASES = [
    # D1: a view's numbers are checked as its writer wrote them
    ("runs view of a drift record whose from_step is 2^64-1",
     "$BARE --store sqlite:$DIR/v33.db runs view dr drift"),
    ("runs view NAME that is no view", "$BARE --store sqlite:$DIR/v33.db runs view dr nope"),
    ("runs view of a view the run holds no record of", "$TS runs view lm drift"),
    # D2, D3: a record's key follows a rule; a unit leaves out a tensor no key can name
    ("Python: drift of a parameter whose name holds a terminal escape",
     *py("py33a", "NAME = 'w\\x1b]0;pwned\\x07x'; " + PARAMS, "2>&1 | tail -2 | tr '\\n' ' ' >&2")),
    ("Python: drift of a parameter named by 600 bytes",
     *py("py33b", "NAME = 'L' * 600; " + PARAMS, "2>&1 | tail -2 | tr '\\n' ' ' >&2")),
    # D4: runs view's listing goes where -o says
    ("runs view RUN -o a full device", "$BARE --store sqlite:$DIR/v33.db runs view dr -o /dev/full"),
    # D5, D6: slurm.jobs is trainscope's; a planted one is shown escaped
    ("watch --tag slurm.jobs=9", "$TS watch --tag slurm.jobs=9 -- true"),
    ("study status of a study whose slurm.jobs holds terminal escapes",
     "$BARE --store sqlite:$DIR/s33.db study status s33 | grep Slurm | cut -c1-40 >&2",
     {"ok": True}),
    # D7: a cost model's numbers have their types
    ("costmodel predict with simd_float_lanes 16.9",
     "$TS costmodel predict $DIR/good.yaml --model $DIR/cm33-lanes.json"),
    ("costmodel predict with samples \"9\"",
     "$TS costmodel predict $DIR/good.yaml --model $DIR/cm33-samples.json"),
    # D8: no partial update
    ("a tag PUT with Content-Range", serve("v33", PUT), {"ok": True}),
    # D9: the dashboard's view is a sample of a chart's size
    ("GET a view with max_rows=3", serve("v33ok", SAMPLE), {"ok": True}),
    # D10: tensor_content first, as TensorFlow reads it
    ("import tfevents of a tensor holding 1.0 in float_val and 2.0 in tensor_content",
     "$TS import tfevents $DIR/tb33 > /dev/null && $TS metrics both x | tail -1 | "
     "tr -s ' ' >&2", {"ok": True}),
]
