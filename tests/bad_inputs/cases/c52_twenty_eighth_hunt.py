"""Issue 51: what the twenty-eighth hunt found and this stop fixed
(docs/reliability.md, "A twenty-eighth hunt"): a profile grid listing a
value twice; numerics thresholds given twice, infinite, or never crossed
(recorded as -1); env diff taking a value "(absent)" for none; a study's
mean run time and a cell's mean with no finished run as 0; the
dashboard's 404 with a raw line feed; a rank's negative time; a mostly-NaN
series answered past the chart's limit."""

from c41_seventeenth_hunt import serve  # noqa: E402
from c44_twentieth_hunt import write_clients  # noqa: E402

TITLE = "52. A twenty-eighth hunt (issue 51)"

S52 = "$BARE --store sqlite:$DIR/s52.db"
LOGMAP = "$TS numerics logmap --steps 20 --variants f64.rx_1mx"
PY_RUN = ("$PY -c \"import sys, trainscope as t; r = t.start_run(name='{name}', store=sys.argv[1], "
          "record_environment=False{extra}); {body}; r.finish()\" sqlite:$DIR/{store}.db")


def fixtures(d, run):
    with open(f"{d}/s52.yaml", "w") as f:
        f.write('study: s52\ncommand: "true"\nreplicates: 2\nsources: [init]\nretries: 0\n')
    run(f"rm -f $DIR/s52.db* && {S52} -q study run $DIR/s52.yaml --logs $DIR/s52logs", check=False)
    run("rm -f $DIR/e52.db* && " + PY_RUN.format(
        name="e1", store="e52", extra=", environment={'user.note': '(absent)'}", body="pass")
        + " && " + PY_RUN.format(name="e2", store="e52", extra="", body="pass"))
    # A run of rank series, one time negative, planted as data-parallel.
    run("rm -f $DIR/r52.db* && " + PY_RUN.format(
        name="dd", store="r52", extra="", body="[r.log({'dist/rank0/step_ms': v, "
        "'dist/rank0/compute_ms': 1.0}, step=i) for i, v in enumerate([3.0, -5.0])]")
        + " && sqlite3 $DIR/r52.db \"INSERT INTO tags SELECT id, 'dist.world_size', '1' FROM "
        "runs WHERE name = 'dd'\"")
    # A series of 9,000 points, 2 of them finite.
    run("rm -f $DIR/m52.db* && " + PY_RUN.format(
        name="holes", store="m52", extra="", body="[r.log({'m': float('nan') if i % 4500 != 7 "
        "else 1.0}, step=i) for i in range(9000)]"))
    write_clients(d, CLIENTS)


GET = """

def get(path):
    c = http.client.HTTPConnection(h, p)
    c.request('GET', path)
    return c.getresponse()

"""
CLIENTS = {
    "page52": GET + """
r = get('/x%0Ay%1B[31m')
print(r.status, json.load(r)['error'], file=sys.stderr)
""",
    "ranks52": GET + """
r = get('/api/runs/dd/ranks')
why = json.load(r)['error']
print(r.status, why.replace(why.split()[1], '<dd>', 1), file=sys.stderr)  # its UUID varies
""",
    "holes52": GET + """
c = json.load(get('/api/runs/holes/metric?key=m&width=1'))
print(len(c['values']), c['nonfinite'], c['count'], file=sys.stderr)
""",
}

CASES = [
    ("profile grid listing a model twice",
     "printf 'models: [mlp, mlp]\\nbatch_sizes: [16]\\n' > $DIR/g52.yaml && "
     "$BARE --store sqlite:$DIR/g52.db profile grid $DIR/g52.yaml"),
    ("numerics logmap --thresholds 0.1 given twice", LOGMAP + " --thresholds 0.1 --thresholds 0.1"),
    ("numerics logmap --thresholds inf", LOGMAP + " --thresholds inf"),
    ("numerics logmap: a threshold never crossed is null, not step -1",
     "$TS -q --json numerics logmap --steps 20 --variants f64.rx_1mx --thresholds 10 | python3 -c "
     "\"import json, sys; print(json.load(sys.stdin)['variants']['f64.rx_1mx']['first_over'])\" "
     ">&2", {"ok": True}),
    ("env diff of a run whose entry is the text '(absent)' and one without it",
     "$BARE --store sqlite:$DIR/e52.db --json env diff e1 e2 | python3 -c \"import json, sys; "
     "print([(d['key'], d['a'], d['b']) for d in json.load(sys.stdin)])\" >&2", {"ok": True}),
    ("study status --json of a study with no finished run: no mean run time",
     S52 + " --json study status s52 | grep -o '\"mean_run_s\": [^,]*' >&2", {"ok": True}),
    ("study report -f json of a cell with no finished run: no mean, min or max",
     S52 + " study report s52 -f json | python3 -c \"import json, sys; c = json.load(sys.stdin)"
     "['cells'][0]; print(c['n'], c['mean'], c['min'], c['max'])\" >&2", {"ok": True}),
    ("the dashboard's 404 for a path holding a line feed and ESC",
     serve("t", "page52"), {"ok": True}),
    ("the API's ranks of a run whose rank time is negative",
     serve("r52", "ranks52"), {"ok": True}),
    ("the API's chart of 9,000 points of which 2 are finite, width=1",
     serve("m52", "holes52"), {"ok": True}),
]
