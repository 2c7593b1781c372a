"""Issue 51, class 3: one rule for what a run accepts (store/accept.h),
called by every entry point: the CLI's --tag/--param and TRAINSCOPE_TAGS,
watch's metric and param lines, the HTTP API, `import tfevents` and the
Python package. A key is 1 to 256 bytes of UTF-8 text without control characters, not
only blanks; a step an integer from 0 to 2^53; a tag's or param's value at
most 4096 bytes; a number is a number whatever its Python type. $PY is the
build's Python with the package on its path."""
from tfevents_writer import write_events  # tests/support, on bad_inputs.py's path

TITLE = "20. One rule for what a run accepts (the third hunt)"


def fixtures(d, run):
    write_events(f"{d}/tb-negstep/lm", [(0, "loss", 1.0), (-1, "loss", 0.5)])
    write_events(f"{d}/tb-emptytag/lm", [(0, "loss", 1.0), (1, "", 0.5)])


def py(store, code, shown="2>&1 | tail -1 >&2"):
    """Runs CODE in $PY with `t` the package and `s` a fresh store."""
    return (f"rm -f $DIR/{store}.db*; $PY -c \"import sys, trainscope as t; s = sys.argv[1]; "
            f"{code}\" sqlite:$DIR/{store}.db {shown}", {"ok": True})


def reason(name, printf):
    return (f"$TS -q watch --name {name} -- printf '{printf}' > /dev/null && "
            f"$TS runs show {name} --json | grep -o "
            f"'\"metric_lines.first_malformed_reason\": \"[^\"]*\"' >&2", {"ok": True})


START = "r = t.start_run(store=s, record_environment=False); "

CASES = [
    ("a --tag whose key is only blanks", "$TS watch --tag ' =1' -- true"),
    ("a --param key holding a tab", "$TS watch --param \"$(printf 'a\\tb=1')\" -- true"),
    ("a --tag key of 300 bytes", "$TS watch --tag \"$(printf '%0300d' 0)=1\" -- true"),
    ("a --param value of 5000 bytes", "$TS watch --param \"lr=$(printf '%05000d' 0)\" -- true"),
    ("TRAINSCOPE_TAGS with an escape character in a key",
     "TRAINSCOPE_TAGS=\"$(printf 'a\\033b=1')\" $TS watch -- true"),
    ("a JSON metric line whose key is a blank", *reason("blankkey", '{"step": 1, " ": 0.5}\\n')),
    ("a param line whose key is a blank", *reason("blankparam", '{"params": {" ": 1}}\\n')),
    ("importing a scalar at step -1", "$TS import tfevents $DIR/tb-negstep"),
    ("importing a scalar with an empty tag", "$TS import tfevents $DIR/tb-emptytag"),
    ("Python: an empty metric key", *py("py1", START + "r.log({'': 1.0}, step=0)")),
    ("Python: a tag key holding a NUL", *py("py2", "t.start_run(store=s, tags={'k\\0': 'x'})")),
    ("Python: an empty tag key", *py("py2", "t.start_run(store=s, tags={'': 'x'})")),
    ("Python: step -1", *py("py3", START + "r.log({'loss': 1.0}, step=-1)")),
    ("Python: a step that is a bool", *py("py9", START + "r.log({'loss': 1.0}, step=True)")),
    ("Python: a step past int64", *py("py10", START + "r.log({'loss': 1.0}, step=2**64)")),
    ("Python: a tensor of 3 elements as a value",
     *py("py4", "import torch; " + START + "r.log({'loss': torch.ones(3)}, step=0)")),
    ("Python: NumPy and bfloat16 numbers are numbers (the value read back)",
     *py("py8", "import numpy, torch; r = t.start_run(name='n', store=s, record_environment="
                "False); r.log({'a': numpy.float32(0.5), 'b': torch.tensor(1.5, dtype=torch."
                "bfloat16), 'c': numpy.bool_(True)}, step=numpy.int64(2)); r.finish()",
         "&& $BARE --store sqlite:$DIR/py8.db metrics n b --format csv | tail -1 | "
         "cut -d, -f1,3 >&2")),
    # A run's name and experiment (the second hunt): one line in every
    # listing, so at most 256 bytes, no control character, not only blanks.
    ("a run name holding a newline", "$TS watch --name \"$(printf 'a\\nb')\" -- true"),
    ("an experiment of blanks only", "$TS watch --experiment '   ' -- true"),
    ("a run name of 300 bytes", "$TS watch --name \"$(printf '%0300d' 0)\" -- true"),
    ("TRAINSCOPE_RUN_NAME with an escape character",
     "TRAINSCOPE_RUN_NAME=\"$(printf 'a\\033b')\" $TS watch -- true"),
    ("TRAINSCOPE_EXPERIMENT of blanks only", "TRAINSCOPE_EXPERIMENT=' ' $TS watch -- true"),
    ("train --name holding a tab", "$TS train $DIR/good.yaml --name \"$(printf 'x\\ty')\""),
    ("a config's run.experiment of blanks only",
     "$TS train $DIR/good.yaml --set 'run.experiment=  '"),
    ("import tfevents into an experiment of blanks only",
     "$TS import tfevents $DIR/tb-negstep --experiment ' '"),
    ("Python: a run name holding a newline",
     *py("py11", "t.start_run(store=s, name='a\\nb', record_environment=False)")),
    ("Python: an experiment holding a NUL",
     *py("py11", "t.start_run(store=s, experiment='e\\0', record_environment=False)")),
    ("watch of a program whose file name holds a newline (the run is named with '_')",
     "ln -sf /bin/true \"$DIR/$(printf 'x\\ny')\" && $TS -q watch -- \"$DIR/$(printf 'x\\ny')\" "
     "&& $TS runs list --columns name --format csv | grep -qx 'x_y'", {"ok": True}),
]
