"""Issue 51: what a sixth tester found in 100 cases on the build with the
fifth hunt's fixes (docs/reliability.md, "A sixth tester"), each fixed."""

import contextlib
import glob
import os
import sqlite3

from c20_one_rule import START, py, reason  # noqa: E402
from tfevents_writer import write_events  # tests/support, on bad_inputs.py's path

TITLE = "31. A sixth tester (issue 51)"


def fixtures(d, run):
    write_events(f"{d}/tb-utf8/lm", [(0, "loss", 1.0), (1, b"lo\xffss", 0.5)])
    write_events(f"{d}/tb-wall/lm", [(0, "loss", 1.0), (1, "loss", 0.5, 1e300)])
    write_events(f"{d}/tb-nanwall/lm", [(0, "loss", 1.0, float("nan"))])
    # A store of one run whose last checkpoint lost a byte on disk.
    run("$BARE --store sqlite:$DIR/c31.db -q train $DIR/good.yaml --name dmg --no-progress "
        "--set checkpoint.every_steps=2")
    with contextlib.closing(sqlite3.connect(f"{d}/c31.db")) as db:
        (uuid,) = db.execute("SELECT uuid FROM runs WHERE name = 'dmg'").fetchone()
    last = sorted(glob.glob(f"{d}/c31-artifacts/{uuid}/checkpoints/*.pt"))[-1]
    with open(last, "r+b") as f:
        f.seek(os.path.getsize(last) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 1]))
    # A run whose stdout artifact is 32 MiB, for clients that never read it.
    run("$BARE --store sqlite:$DIR/big31.db -q watch --name big -- head -c 33554432 /dev/zero "
        "> /dev/null")
    with open(f"{d}/s31.yaml", "w") as f:
        f.write("study: s31\nbase: good.yaml\nset: {train.epochs: 100000}\n"
                "grid: {optimizer.lr: [0.01, 0.02]}\nworkers: 2\n")


GEN = ("def g():\n    with t.start_run(name='g', store=s, record_environment=False) as r:\n"
       "        for i in range(10):\n            r.log({'a': i}, step=i); yield i\n"
       "for b in g():\n    if b == 3: break\n")
WATCH = ("import torch; m = torch.nn.Linear(2, 2); o = torch.optim.SGD(m.parameters(), lr=0.1); ")

# Ten clients ask for the 32 MiB artifact twice each and never read; then
# another request must be answered (within 8 s; write_stall alone: 20 s+).
STALL = ("import socket, sys, time, urllib.request; u = sys.argv[1]; "
         "host, port = u.split('/')[2].split(':'); held = [socket.socket() for _ in range(10)]; "
         "[c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096) for c in held]; "
         "[c.connect((host, int(port))) for c in held]; "
         "[c.sendall(b'GET /api/runs/big/artifacts/stdout.txt HTTP/1.1\\r\\nHost: "
         "127.0.0.1\\r\\n\\r\\n' * 2) for c in held]; time.sleep(0.5); "
         "print(urllib.request.urlopen(u + 'api/info', timeout=8).status, file=sys.stderr)")

CASES = [
    # D10: a client that does not read holds a worker no longer than its share
    ("ten clients that never read a 32 MiB answer: another request is answered",
     "$BARE --store sqlite:$DIR/big31.db serve --port 0 > $DIR/big31.out & P=$!; "
     "for i in $(seq 100); do grep -qs http $DIR/big31.out && break; sleep 0.1; done; "
     "U=$(grep -o 'http://[^ ]*' $DIR/big31.out); python3 -c \"" + STALL + "\" \"$U\"; R=$?; "
     "kill $P; wait $P; exit $R", {"ok": True}),
    # D1, D2: an event file's text and times are untrusted bytes
    ("importing a scalar whose tag is not UTF-8: one line, the rule's words",
     "$TS import tfevents $DIR/tb-utf8"),
    ("importing an event whose wall time is 1e300", "$TS import tfevents $DIR/tb-wall"),
    ("importing an event whose wall time is NaN", "$TS import tfevents $DIR/tb-nanwall"),
    # D3, D5, D6: one rule for numbers and params, whatever their Python type
    ("Python: a Decimal past the double range is refused, not stored as inf",
     *py("py31a", START + "import decimal; r.log({'a': decimal.Decimal('1e400')}, step=0)")),
    ("Python: a NumPy long double past the double range",
     *py("py31b", START + "import numpy; r.log({'a': numpy.longdouble('1e400')}, step=0)")),
    ("Python: a param given twice, as a dotted key and a nested dict",
     *py("py31c", "t.start_run(store=s, record_environment=False, "
                  "config={'a.b': 1, 'a': {'b': 2}})")),
    ("Python: watch(fingerprint_every='ten')",
     *py("py31d", START + WATCH + "r.watch(m, o, fingerprint_every='ten')")),
    ("Python: watch(fingerprint_every=2.5) is not truncated to 2",
     *py("py31e", START + WATCH + "r.watch(m, o, fingerprint_every=2.5)")),
    ("--param given two values", "$TS watch --param a=1 --param a=2 -- true"),
    # D7: the keys trainscope records itself in a watched run
    ("a metric line under the sampler's key proc/rss_mib",
     *reason("own31", "trainscope: step=1000 proc/rss_mib=1\\n")),
    ("a metric line under exit_code", *reason("own31b", "trainscope: step=5 exit_code=0\\n")),
    ("Python: log() under the sampler's key energy/total_kwh",
     *py("py31f", START + "r.log({'energy/total_kwh': 1.0}, step=0)")),
    ("Python: gpu_util is a key of one's own (not gpuN/)",
     *py("py31g", START + "r.log({'gpu_util': 1.0}, step=0); print('taken')", "2>&1 >&2")),
    # D8: a generator closed by its consumer stopped its run, not failed it
    ("Python: a run in a generator its consumer leaves with break",
     f"rm -f $DIR/py31h.db*; $PY -c \"import sys, trainscope as t; s = sys.argv[1]\n{GEN}\" "
     "sqlite:$DIR/py31h.db && $BARE --store sqlite:$DIR/py31h.db runs list --columns name,status "
     "--format csv | tail -1 >&2", {"ok": True}),
    # D9: SIGHUP to watch ends what the program started too
    ("watch sent SIGHUP: what the program started does not run on",
     "$TS -q watch --name hup31 -- sh -c 'sleep 31.7; echo late' > /dev/null 2>&1 & P=$!; "
     "for i in $(seq 100); do pgrep -fx 'sleep 31.7' > /dev/null && break; sleep 0.1; done; "
     "kill -HUP $P; { wait $P; } 2> /dev/null; sleep 0.3; ! pgrep -fx 'sleep 31.7'",
     {"ok": True}),
    # D11: a run is copied whole or not at all
    ("store copy of a run whose checkpoint was damaged on disk",
     "rm -f $DIR/c31-copy.db*; $BARE --store sqlite:$DIR/c31.db store copy sqlite:$DIR/c31.db sqlite:$DIR/c31-copy.db"),
    ("... leaves no half-copied run in the destination",
     "rm -f $DIR/c31-copy2.db*; $BARE --store sqlite:$DIR/c31.db store copy sqlite:$DIR/c31.db sqlite:$DIR/c31-copy2.db "
     "2> /dev/null; $BARE --store sqlite:$DIR/c31-copy2.db runs list >&2", {"ok": True}),
    # D12: a study passes its SIGTERM on at once
    ("study run sent SIGTERM: its trainings stop at their next step",
     "rm -f $DIR/s31.db*; $BARE --store sqlite:$DIR/s31.db -q study run $DIR/s31.yaml "
     "> /dev/null 2>&1 & P=$!; for i in $(seq 600); do test \"$($BARE --store "
     "sqlite:$DIR/s31.db runs list --status running --format csv 2>/dev/null | tail -n +2 | wc -l)\" -ge 3 "
     "&& break; sleep 0.1; done; kill -TERM $P; timeout 60 tail --pid=$P -f /dev/null; "
     "$BARE --store sqlite:$DIR/s31.db runs list --columns status --format csv | tail -n +2 | sort | "
     "uniq -c | tr -s ' ' >&2", {"ok": True}),
]
