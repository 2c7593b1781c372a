"""Issue 51: what the twenty-seventh hunt found and this stop fixed
(docs/reliability.md, "A twenty-seventh hunt"): a complex long double
taken as a number; stats --compare's header with a group's raw text; a
profile grid file's values taken by yaml-cpp's defaults; an artifact's
damaged time as "-" in JSON and its damaged hash blamed on the file; a
cost model in other units or with a key given twice; a killed keeper
recorded as the program's SIGKILL; a diverged training's NaN drift called
damage."""

from c20_one_rule import py  # noqa: E402
from c44_twentieth_hunt import plant_copies  # noqa: E402

TITLE = "51. A twenty-seventh hunt (issue 51)"

V51 = "$BARE --store sqlite:$DIR/v51.db"
GRID = "printf 'models: [mlp]\\nbatch_sizes: [16]\\n%s\\n' {} > $DIR/g51.yaml && " \
       "$BARE --store sqlite:$DIR/g51.db profile grid $DIR/g51.yaml"
MODEL = ('{{"format": "trainscope-costmodel/4", "unit": {unit}, "coef": {coef}, "generic": [], '
         '"update": [], "overhead": [], "simd_float_lanes": 1}}')
PREDICT = "$TS costmodel predict $DIR/good.yaml --model $DIR/{}.json"

DAMAGED = {
    "a51": "UPDATE artifacts SET created_time = -1e300",
    "h51": "UPDATE artifacts SET sha256 = upper(sha256)",
}


def fixtures(d, run):
    plant_copies(d, DAMAGED)
    # Two groups of two runs; one group's tag holds ESC and a line feed.
    run(f"rm -f $DIR/v51.db* && for v in 1 2 3 4; do g=plain; [ $v -gt 2 ] && g=evil; "
        f"{V51} -q watch --tag fa=$g -- echo trainscope: acc=0.$v; done && "
        "sqlite3 $DIR/v51.db \"UPDATE tags "
        "SET value = 'x' || char(27) || '[2J' || char(10) || '=1' WHERE value = 'evil'\"")
    for name, unit, coef in (("s51", '"s"', "{}"), ("k51", '"us"', '{"Linear": [1], "Linear": [2]}')):
        with open(f"{d}/{name}.json", "w") as f:
            f.write(MODEL.format(unit=unit, coef=coef))


CASES = [
    ("Python: a metric that is a complex long double (NumPy clongdouble)",
     *py("py51", "import numpy; r = t.start_run(store=s, record_environment=False); "
         "r.log({'v': numpy.clongdouble(2 + 3j)}, step=1)")),
    ("stats --compare of a group whose stored text holds ESC and a line feed",
     V51 + " stats acc --by tags.fa --compare plain \"$(sqlite3 $DIR/v51.db \"SELECT value FROM "
     "tags WHERE value LIKE 'x%' LIMIT 1\")\" | head -1 >&2", {"ok": True}),
    ("profile grid whose steps are a list", GRID.format("'steps: [1, 2]'")),
    ("profile grid whose steps are 0 (no limit to the trainer)", GRID.format("'steps: 0'")),
    ("profile grid whose repeats are a word", GRID.format("'repeats: three'")),
    ("profile grid with an unknown key", GRID.format("'step: 3'")),
    ("profile grid whose batch size is 16.5",
     "printf 'models: [mlp]\\nbatch_sizes: [16.5]\\n' > $DIR/g51.yaml && "
     "$BARE --store sqlite:$DIR/g51.db profile grid $DIR/g51.yaml"),
    ("runs show --json of an artifact whose stored time is -1e300: null",
     "$BARE --store sqlite:$DIR/a51.db runs show lm --json | grep -o '\"created_time\": [^,]*' | "
     "sort -u >&2", {"ok": True}),
    ("runs show of an artifact whose stored SHA-256 is in upper case",
     "$BARE --store sqlite:$DIR/h51.db runs show lm"),
    ("costmodel predict with a cost model in seconds", PREDICT.format("s51")),
    ("costmodel predict with a coefficient given twice", PREDICT.format("k51")),
    ("watch whose keeper is killed (as the OOM killer may): the program's own end, SIGTERM",
     "rm -f $DIR/kk51.db*; $BARE --store sqlite:$DIR/kk51.db watch --name kk -- sh -c "
     "'sleep 30.5; true' 2> $DIR/kk51.err & w=$!; for i in $(seq 200); do "
     "pgrep -P $w -x trainscope-keep > /dev/null && pgrep -xf 'sleep 30.5' > /dev/null && break; "
     "sleep 0.05; done; pkill -KILL -P $w -x trainscope-keep; wait $w; c=$?; "
     "grep '^trainscope:' $DIR/kk51.err >&2; exit $c"),
    ("runs view drift of a training whose weights went NaN",
     "rm -f $DIR/d51.db*; $BARE --store sqlite:$DIR/d51.db -q train $DIR/good.yaml --no-progress "
     "--name dv --set drift.every=1 --set optimizer.lr=1e30 --set train.max_steps=4 "
     "2> /dev/null; $BARE --store sqlite:$DIR/d51.db runs view dv drift -f csv | grep -c nan >&2",
     {"ok": True}),
]
