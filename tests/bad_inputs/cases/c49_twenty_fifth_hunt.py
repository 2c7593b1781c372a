"""Issue 51: what the twenty-fifth hunt found and this stop fixed
(docs/reliability.md, "A twenty-fifth hunt"): Python's watch() and
TrainerInputs.initialise() of a model or optimizer of the wrong type, or
of a model on the meta device; tune's batch multiples that give no batch
or the same batch twice; a run UUID stored in upper case."""

from c20_one_rule import py  # noqa: E402
from c44_twentieth_hunt import plant_copies  # noqa: E402

TITLE = "49. A twenty-fifth hunt (issue 51)"

DAMAGED = {"u49": "UPDATE runs SET uuid = upper(uuid) WHERE name = 'lm'"}

# A model with the trainer's tensor names and shapes, on the meta device.
META = """import sys, torch, trainscope as t
inputs = t.TrainerInputs(sys.argv[1])
model = torch.nn.Module()
for name, value in inputs.initial_state().items():
    *path, leaf = name.split('.')
    at = model
    for part in path:
        if not hasattr(at, part):
            at.add_module(part, torch.nn.Module())
        at = getattr(at, part)
    at.register_parameter(leaf, torch.nn.Parameter(torch.empty(value.shape, device='meta')))
inputs.initialise(model)
"""


def fixtures(d, run):
    plant_copies(d, DAMAGED)
    with open(f"{d}/meta49.py", "w") as f:
        f.write(META)


START = "r = t.start_run(store=s, record_environment=False); "
# The upper-case UUID shown as <LM> (it differs from one fixture to the next).
UPPER = " 2>&1 >/dev/null | sed 's/[0-9A-F]\\{8\\}-[0-9A-F-]\\{27\\}/<LM>/' >&2; exit ${PIPESTATUS[0]}"

CASES = [
    ("Python: run.watch(3)", *py("py49a", START + "r.watch(3)")),
    ("Python: run.watch(torch.nn.Linear), the class",
     *py("py49b", "import torch; " + START + "r.watch(torch.nn.Linear)")),
    ("Python: run.watch(model, optimizer='sgd')",
     *py("py49c", "import torch; " + START + "r.watch(torch.nn.Linear(2, 2), optimizer='sgd')")),
    ("Python: TrainerInputs.initialise(3)",
     *py("py49d", "t.TrainerInputs('$DIR/good.yaml').initialise(3)")),
    ("Python: TrainerInputs.initialise() of a model on the meta device",
     "$PY $DIR/meta49.py $DIR/good.yaml 2>&1 | tail -1 >&2", {"ok": True}),
    ("tune --batch-multiples 1e-9 (a batch below 1)",
     "$TS tune $DIR/good.yaml --steps 30 --rounds 1 --no-profile --batch-multiples 1e-9"),
    ("tune --batch-multiples 2,2,2.001: batch 128 tried once",
     "$TS --json tune $DIR/good.yaml --steps 30 --rounds 1 --no-profile --batch-multiples 2,2,2.001 "
     "2>/dev/null | grep -c '\"setting\": \"batch 128\"' >&2", {"ok": True}),
    ("runs list of a store holding a run UUID in upper case", "$BARE --store sqlite:$DIR/u49.db "
     "runs list" + UPPER),
    ("runs show lm of that store", "$BARE --store sqlite:$DIR/u49.db runs show lm" + UPPER),
]
