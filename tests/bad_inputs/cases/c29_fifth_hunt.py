"""Issue 51: what a fifth tester found in 90 cases on the build with the
fourth hunt's fixes and the GPU work (docs/reliability.md), each fixed. The
crafted loss scales of checkpoints are seeds of tests/fuzz_torch
(loss-scale-*.pt); the rest are here."""

import contextlib
import glob
import os
import sqlite3

TITLE = "29. A fifth tester (issue 51)"


def fixtures(d, run):
    for name in ("h1", "h2"):
        run(f"$TS -q train $DIR/good.yaml --name {name} --no-progress")
    # h2 as if it had trained elsewhere: a hash tag of another kind, holding
    # a terminal escape (a client of `serve --allow-writes` can set tags).
    with contextlib.closing(sqlite3.connect(f"{d}/t.db")) as db, db:
        (rid,) = db.execute("SELECT id FROM runs WHERE name = 'h2'").fetchone()
        db.execute("INSERT OR REPLACE INTO tags (run_id, key, value) VALUES (?, ?, ?)",
                   (rid, "fingerprint.hash", "x\x1b]0;pwned\x07"))
    # h3's checkpoint replaced by a FIFO.
    run("$TS -q train $DIR/good.yaml --name h3 --no-progress")
    with contextlib.closing(sqlite3.connect(f"{d}/t.db")) as db:
        (uuid,) = db.execute("SELECT uuid FROM runs WHERE name = 'h3'").fetchone()
    for ck in glob.glob(f"{d}/t-artifacts/{uuid}/checkpoints/*.pt"):
        os.remove(ck)
        os.mkfifo(ck)
    with open(f"{d}/s29.yaml", "w") as f:
        f.write("study: s29\nbase: good.yaml\ngrid: {compute.device: [cuda]}\n"
                "replicates: 2\nretries: 2\nworkers: 1\n")


CASES = [
    ("diff of runs whose fingerprints use different hashes, one tag holding a terminal escape",
     "$TS diff h1 h2 --no-replay | grep -c $'\\x1b' | grep -qx 0", {"ok": True}),
    ("rerun --verify of a run whose fingerprints use another hash than its rerun's",
     "$TS -q rerun h2 --verify > /dev/null"),
    ("a study of GPU runs on a machine without one: refused once per run, not retried",
     "$TS -q study run $DIR/s29.yaml"),
]

CASES += [
    ("eval of a run whose checkpoint was replaced by a FIFO (said so, not 'missing')",
     "timeout 20 $TS eval h3"),
    ("import tfevents of a folder whose name holds a terminal escape and a line break",
     "D=\"$DIR/tb29/$(printf 'r\\033]0;x\\007\\nz')\" && mkdir -p \"$D\" && "
     "cp $DIR/tb/*/events.out.tfevents.* \"$D/\" 2>/dev/null; "
     "$BARE --store sqlite:$DIR/c29tb.db import tfevents $DIR/tb29 | grep -c $'\\x1b' | grep -qx 0",
     {"ok": True}),
]

from _serve import serve  # noqa: E402
from c20_one_rule import START, py, reason, write_events  # noqa: E402

_fixtures_first = fixtures


def fixtures(d, run):  # noqa: F811
    _fixtures_first(d, run)
    write_events(f"{d}/tb-back/lm", [(5, "loss", 1.0), (3, "loss", 0.5)])


NONBLOCK = ("python3 -c 'import fcntl, os, sys; fcntl.fcntl(1, fcntl.F_SETFL, "
            "fcntl.fcntl(1, fcntl.F_GETFL) | os.O_NONBLOCK); os.execvp(sys.argv[1], sys.argv[1:])'")
RAW = "curl -s --max-time 5 telnet://$(echo $U | cut -d/ -f3) 2>/dev/null"

CASES += [
    # D3: one rule for a key's steps, in every entry point
    ("importing a scalar whose step goes back (a restarted writer)",
     "$TS import tfevents $DIR/tb-back"),
    ("a metric line whose step goes back", *reason("back29", "trainscope: step=5 a=1\\ntrainscope: step=3 a=2\\n")),
    ("Python: a step that goes back",
     *py("py29a", START + "r.log({'a': 1.0}, step=5); r.log({'a': 2.0}, step=3)")),
    # D12: a step is an integral number of any type
    ("Python: Decimal and Fraction steps holding integers are steps (the last read back)",
     *py("py29b", "import decimal, fractions; r = t.start_run(name='d', store=s, record_environment=False); "
         "r.log({'a': 1.0}, step=decimal.Decimal(107)); r.log({'a': 2.0}, step=fractions.Fraction(216, 2)); "
         "r.finish()", "&& $BARE --store sqlite:$DIR/py29b.db metrics d a --format csv | tail -1 | cut -d, -f1,3 >&2")),
    ("Python: a Decimal step with a fraction",
     *py("py29c", "import decimal; " + START + "r.log({'a': 1.0}, step=decimal.Decimal('107.5'))")),
    # D9: stale is one status for every reader
    ("--filter status = 'stale' finds the run --status stale lists",
     "cp $DIR/crashed.db $DIR/st29a.db && $BARE --store sqlite:$DIR/st29a.db runs list --filter \"status = 'stale'\" "
     "--columns name,status --format csv | grep -qx 'crashed,stale'", {"ok": True}),
    ("--status running lists no run whose writer is gone",
     "cp $DIR/crashed.db $DIR/st29b.db && $BARE --store sqlite:$DIR/st29b.db runs list --status running",
     {"ok": True}),
    ("the API's status=stale finds the stale run",
     "cp $DIR/crashed.db $DIR/st29c.db; $BARE --store sqlite:$DIR/st29c.db serve --port 0 > $DIR/st29c.out & P=$!; "
     "for i in $(seq 100); do grep -qs http $DIR/st29c.out && break; sleep 0.1; done; "
     "U=$(grep -o 'http://[^ ]*' $DIR/st29c.out); curl -s \"${U}api/runs?status=stale\" | grep -q '\"name\":\"crashed\"'; "
     "R=$?; kill $P; wait $P; exit $R", {"ok": True}),
    # D4: a non-blocking stdout is waited for, not cut
    ("runs export into a non-blocking stdout with a slow reader: all of it",
     f"{NONBLOCK} $TS runs export lm --format json | (sleep 1; wc -c) > $DIR/nb29.count; "
     "c=${PIPESTATUS[0]}; test \"$(cat $DIR/nb29.count)\" -eq \"$($TS runs export lm --format json | wc -c)\" && exit $c",
     {"ok": True}),
    ("a non-blocking stdout whose reader left is still a reader that left: 141, quietly",
     f"{{ sleep 0.3; {NONBLOCK} $TS runs export lm; }} | true; test ${{PIPESTATUS[0]}} -eq 141",
     {"ok": True}),
    # D5: no "wrote" line after a failed stdout
    ("weights -o - into a full device: one line, no 'wrote stdout'", "$TS weights ck2 -o - > /dev/full"),
    ("weights -o - whose reader left: 141, quietly, no 'wrote stdout'",
     "{ sleep 0.3; $TS weights ck2 -o -; } | true; test ${PIPESTATUS[0]} -eq 141", {"ok": True}),
    # D6: one Host, and a host
    ("two Host headers on a write: 400, the tag not set",
     serve("s29a", "printf 'PUT /api/runs/ck/tags/hh HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nHost: evil.example\\r\\n"
                   "Content-Length: 1\\r\\n\\r\\nv' | " + RAW + " | grep -q '\"status\":400}$' && "
                   "! curl -s ${U}api/runs/ck | grep -q '\"hh\"'", "--allow-writes"), {"ok": True}),
    ("a Host holding a list: 400",
     serve("s29b", "printf 'GET /api/info HTTP/1.1\\r\\nHost: 127.0.0.1, evil.example\\r\\n\\r\\n' | "
                   + RAW + " | grep -q '\"status\":400}$'"), {"ok": True}),
    # D11: a chunked body has the limit of a Content-Length
    ("a chunk-size line announcing 2 MiB: 413 at once",
     serve("s29c", "printf 'PUT /api/runs/ck/tags/c9 HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nTransfer-Encoding: "
                   "chunked\\r\\n\\r\\n200000\\r\\n' | " + RAW + " | grep -q '\"status\":413}$'",
           "--allow-writes"), {"ok": True}),
    ("one chunk of 1 MiB + 1, sent: 413, not read",
     serve("s29d", "{ printf 'PUT /api/runs/ck/tags/c9 HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nTransfer-Encoding: "
                   "chunked\\r\\n\\r\\n100001\\r\\n'; head -c 1048577 /dev/zero | tr '\\\\0' v; "
                   "printf '\\r\\n0\\r\\n\\r\\n'; } | " + RAW + " | grep -q '\"status\":413}$'",
           "--allow-writes"), {"ok": True}),
]
