"""Issue 51: what the twenty-ninth hunt found and this stop fixed
(docs/reliability.md, "A twenty-ninth hunt"): a layer name holding '/' read
back as another layer; store copy calling a cut fingerprints record
verified; YAML 1.1 tags under yaml.org's prefix (!!binary,
!!python/object:...) taken as plain text; import tfevents of a file in
place of a folder called not found; and the twenty-eighth's B-D4, a
stopped watch recorded failed."""

TITLE = "53. A twenty-ninth hunt (issue 51)"

P53 = "$BARE --store sqlite:$DIR/p53.db"
# A short UUID shown as <id> (it differs from one fixture to the next).
IDS = " 2>&1 >/dev/null | sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2; exit ${PIPESTATUS[0]}"
BASE = ("run: {experiment: yamltags}\nmodel: {name: mlp}\n"
        "data: {dataset: synthetic, synthetic_train: 64, synthetic_test: 32}\n")


def fixtures(d, run):
    # A layer named 'enc/0' (Python's add_module takes it), probed.
    run("rm -f $DIR/p53.db* && $PY -c \"import sys, torch, trainscope as t; "
        "torch.manual_seed(0); m = torch.nn.Sequential(); "
        "m.add_module('enc/0', torch.nn.Linear(4, 3)); "
        "r = t.start_run(name='slash', store=sys.argv[1], record_environment=False); "
        "r.watch(m, None, probes='economy', probes_every=1, monitor_interval=0); "
        "[(m(torch.randn(5, 4)).sum().backward(), r.step_done()) for _ in range(2)]; "
        "r.finish()\" sqlite:$DIR/p53.db")
    # A run whose fingerprints record was cut to 3 bytes.
    run("rm -f $DIR/c53*.db* && $PY -c \"import sys, trainscope as t; "
        "r = t.start_run(name='cut', store=sys.argv[1], record_environment=False); "
        "r.finish()\" sqlite:$DIR/c53.db && sqlite3 $DIR/c53.db \"INSERT INTO records (run_id, "
        "kind, key, step, wall_time, payload) SELECT id, 'fingerprint_tensors', '', 0, 0, "
        "X'0101' || X'77' FROM runs; INSERT INTO records (run_id, kind, key, step, wall_time, "
        "payload) SELECT id, 'fingerprints', '', 1, 0, X'010203' FROM runs\"")
    for name, tag in (("binary", "!!binary aGVsbG8="), ("pyobj", "!!python/object:os.system x"),
                      ("stamp", "!!timestamp 2001-12-14")):
        with open(f"{d}/tag53{name}.yaml", "w") as f:
            f.write(BASE + f"train: {{max_steps: 2, note: {tag}}}\n")
    with open(f"{d}/events.out.tfevents.53.file", "w") as f:
        f.write("x")


CASES = [
    ("probes of a layer named 'enc/0' (Python's add_module): its own layer",
     P53 + " probes slash --layer 'enc/0' --format json | python3 -c \"import json, sys; "
     "print(sorted({(r['layer'], r['series']) for r in json.load(sys.stdin)}))\" >&2",
     {"ok": True}),
    ("store copy of a run whose fingerprints record is cut",
     "$BARE --store sqlite:$DIR/c53.db -q store copy sqlite:$DIR/c53.db sqlite:$DIR/c53b.db" + IDS),
    ("a config tag !!binary", "$TS train $DIR/tag53binary.yaml --no-progress"),
    ("a config tag !!python/object:os.system", "$TS train $DIR/tag53pyobj.yaml --no-progress"),
    ("a config tag !!timestamp", "$TS train $DIR/tag53stamp.yaml --no-progress"),
    ("import tfevents of a file in place of the folder",
     "$BARE --store sqlite:$DIR/i53.db import tfevents $DIR/events.out.tfevents.53.file"),
    ("import tfevents of a device", "$BARE --store sqlite:$DIR/i53.db import tfevents /dev/null"),
    ("SIGTERM to watch: the run is stopped, as Ctrl-C stops a training",
     "rm -f $DIR/w53.db*; $BARE --store sqlite:$DIR/w53.db -q watch --name w -- sleep 31.5 2> /dev/null & "
     "w=$!; for i in $(seq 200); do pgrep -xf 'sleep 31.5' > /dev/null && break; sleep 0.05; "
     "done; kill -TERM $w; wait $w; c=$?; echo \"watch exited $c, run $(sqlite3 $DIR/w53.db "
     "'SELECT name, status FROM runs')\" >&2", {"ok": True}),
]
