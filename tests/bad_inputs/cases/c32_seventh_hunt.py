"""Issue 51: what a seventh tester found in 60 cases on the build with the
sixth hunt's fixes (docs/reliability.md, "A seventh tester"), each fixed."""

import json

from c20_one_rule import START, py  # noqa: E402
from tfevents_writer import write_events  # tests/support, on bad_inputs.py's path

TITLE = "32. A seventh tester (issue 51)"

# A cost model as `costmodel fit` writes it (format 4), for the edits below.
MODEL = {"format": "trainscope-costmodel/4",
         "compute_features": ["vector_mflop", "activation_mbytes", "mparams", "1"],
         "simd_float_lanes": 16, "update_features": ["mparams", "param_tensors"],
         "overhead_features": ["layers", "activation_mbytes"], "unit": "us",
         "coef": {"Conv2d": [10.0, 1.0, 1.0, 5.0], "Linear": [8.0, 1.0, 1.0, 4.0]},
         "generic": [9.0, 1.0, 1.0, 5.0], "update": [20.0, 2.0], "overhead": [3.0, 0.5],
         "samples": 9, "threads": 2}


def model(d, name, **edits):
    m = json.loads(json.dumps(MODEL))
    for key, value in edits.items():
        if key == "conv0":
            m["coef"]["Conv2d"][0] = value
        else:
            m[key] = value
    with open(f"{d}/{name}.json", "w") as f:
        json.dump(m, f)


def fixtures(d, run):
    model(d, "cm32")
    model(d, "cm32-huge", conv0=1e308)
    model(d, "cm32-lanes", simd_float_lanes=2**31 - 1)
    model(d, "cm32-empty", generic=[])
    model(d, "cm32-long", update=[1.0] * 1000)
    model(d, "cm32-names", compute_features=["x"])
    # Scalars-plugin tensors whose shapes hold no one element.
    write_events(f"{d}/tb32/shapes", [(1, "neg", 0.5, 1.7e9, [-1, -1]),
                                  (2, "wrap", 0.25, 1.7e9, [7, 0x6DB6DB6DB6DB6DB7]),
                                  (3, "one", 0.75, 1.7e9, [1, 1])])
    with open(f"{d}/exit32.py", "w") as f:
        f.write("import os, trainscope as t\nr = t.start_run(record_environment=False)\n"
                "r.log({'test/accuracy': 0.5}, step=1)\nos._exit(0)\n")
    # (Through run(), which spells out $PY: the study's command runs in /bin/sh.)
    run("printf 'study: s32\\ncommand: $PY $DIR/exit32.py\\nsources: [all]\\nreplicates: 2\\n"
        "retries: 0\\n' > $DIR/s32.yaml")


CANCEL = ("import asyncio\\nasync def train():\\n    with t.start_run(store=s, name='a', "
          "record_environment=False) as r:\\n        for i in range(100): r.log({'x': i}, "
          "step=i); await asyncio.sleep(0.01)\\nasync def main():\\n    k = "
          "asyncio.create_task(train()); await asyncio.sleep(0.1); k.cancel()\\n    try: await "
          "k\\n    except asyncio.CancelledError: pass\\nasyncio.run(main())\\n")
WATCH = ("import torch; m = torch.nn.Linear(2, 2); o = torch.optim.SGD(m.parameters(), lr=0.1); ")

CASES = [
    # D1: watch(settings=...) is a list of key=value strings
    ("Python: watch(settings='probes.every=2'), a string for a list",
     *py("py32a", START + WATCH + "r.watch(m, o, settings='probes.every=2')")),
    ("Python: watch(settings=[b'probes.every=2'])",
     *py("py32b", START + WATCH + "r.watch(m, o, settings=[b'probes.every=2'])")),
    # D2: a cancelled asyncio task stopped its run
    ("Python: a run in an asyncio task its caller cancels",
     f"rm -f $DIR/py32c.db*; printf \"import sys, trainscope as t; s = sys.argv[1]\\n{CANCEL}\" "
     "> $DIR/py32c.py && $PY $DIR/py32c.py sqlite:$DIR/py32c.db && $BARE --store "
     "sqlite:$DIR/py32c.db runs list --columns name,status --format csv | tail -1 >&2",
     {"ok": True}),
    # D3: a cost model file is untrusted bytes
    ("costmodel predict with a coefficient of 1e308",
     "$TS costmodel predict $DIR/good.yaml --model $DIR/cm32-huge.json"),
    ("costmodel predict with simd_float_lanes 2^31-1",
     "$TS costmodel predict $DIR/good.yaml --model $DIR/cm32-lanes.json"),
    ("costmodel predict with no generic coefficients",
     "$TS costmodel predict $DIR/good.yaml --model $DIR/cm32-empty.json"),
    ("costmodel predict with 1000 update coefficients",
     "$TS costmodel predict $DIR/good.yaml --model $DIR/cm32-long.json"),
    ("costmodel predict with other feature names",
     "$TS costmodel predict $DIR/good.yaml --model $DIR/cm32-names.json"),
    # D4: trainscope's own tags are its own
    ("watch --tag kind=study", "$TS watch --tag kind=study -- true"),
    ("TRAINSCOPE_TAGS=study.superseded_by=x", "TRAINSCOPE_TAGS=study.superseded_by=x $TS watch -- true"),
    ("Python: set_tags({'kind': 'study'})", *py("py32d", START + "r.set_tags({'kind': 'study'})")),
    # D5: what the program leaves running is the program's
    ("watch of a program that exits leaving a process: it ends with the program",
     "$TS -q watch --name left32 -- sh -c 'sleep 1.3 & exit 0' > /dev/null 2>&1; "
     "$TS runs show left32 --json | grep -o '\"watch.left_behind\": \"[^\"]*\"' >&2; "
     "! pgrep -fx 'sleep 1.3'", {"ok": True}),
    # D6: a seed past int64
    ("a seed of 2^63", "$TS config show $DIR/good.yaml --set seeds.master=9223372036854775808"),
    # D7: a tensor's shape must be one element, not a product that wraps to 1
    ("import tfevents of tensors shaped (-1,-1) and (7, 0x6DB6DB6DB6DB6DB7)",
     "$TS import tfevents $DIR/tb32 > /dev/null && $TS metrics shapes | tail -n +2 >&2",
     {"ok": True}),
    # D8: a study counts a run its script left unended as failed, everywhere
    ("study run of a script that leaves its run unended (os._exit)",
     "rm -f $DIR/s32.db*; $BARE --store sqlite:$DIR/s32.db -q study run $DIR/s32.yaml "
     "2> /dev/null; $BARE --store sqlite:$DIR/s32.db study status s32 | tail -1 | "
     "sed -E 's/[0-9a-f]{8}/<id>/g' >&2", {"ok": True}),
    # D9: a nested tensor is no number
    ("Python: log() of a nested tensor",
     *py("py32e", START + "import torch; r.log({'a': torch.nested.nested_tensor("
                  "[torch.tensor([1.0])])}, step=0)")),
    # D10: sys.exit(256) is a status 0, and the run says finished
    ("Python: sys.exit(256) leaves the run finished, as the exit status 0",
     *py("py32f", START + "sys.exit(256)", "; R=$?; echo \"exit $R, run $($BARE --store "
                  "sqlite:$DIR/py32f.db runs list --columns status --format csv | tail -1)\" >&2")),
]
