"""Issue 51: what the twenty-third hunt found and this stop fixed
(docs/reliability.md, "A twenty-third hunt"): a maximum over no common
step, setup()'s numbers, a setting's control characters, watch()'s
arguments checked whatever the others, a format that probes' SVG ignored,
histogram and fingerprint records no writer makes; and on the server: a
body that stops arriving answered with Keep-Alive."""

import contextlib
import math
import shutil
import sqlite3
import struct

from c20_one_rule import py  # noqa: E402
from c41_seventeenth_hunt import serve  # noqa: E402
from c44_twentieth_hunt import write_clients  # noqa: E402

TITLE = "47. A twenty-third hunt (issue 51)"

START = "r = t.start_run(store=s, record_environment=False); "


def plant_records(d, name, records):
    """$DIR/NAME.db: t.db whose run lm holds RECORDS (kind, key, step,
    payload) in place of its own of those kinds."""
    shutil.copy(f"{d}/t.db", f"{d}/{name}.db")
    with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db:
        run_id, = db.execute("SELECT id FROM runs WHERE name = 'lm'").fetchone()
        for kind in {r[0] for r in records}:
            db.execute("DELETE FROM records WHERE run_id = ? AND kind = ?", (run_id, kind))
        for kind, key, step, payload in records:
            db.execute("INSERT INTO records (run_id, kind, key, step, wall_time, payload) "
                       "VALUES (?, ?, ?, ?, 1.7e9, ?)", (run_id, kind, key, step, payload))
        db.commit()


def histogram(low, high, count):
    return struct.pack("<dd", low, high) + bytes([0, 0, 0, 1]) + leb128(count)


def leb128(n):
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def fixtures(d, run):
    plant_records(d, "n47", [("histograms", "l/weights", 1, histogram(math.nan, 1.0, 5))])
    plant_records(d, "c47", [("histograms", "l/weights", 1, histogram(0.0, 1.0, 1 << 63))])
    names = leb128(2) + leb128(1) + b"w" + leb128(4) + b"loss"
    plant_records(d, "f47", [("fingerprint_tensors", "", 0, names),
                             ("fingerprints", "", 1, struct.pack("<3Q", 1, 2, 3))])
    run("rm -f $DIR/v47.db* && $BARE --store sqlite:$DIR/v47.db -q watch --name va -- echo "
        "'trainscope: step=1 train/loss=0.5' && $BARE --store sqlite:$DIR/v47.db -q watch --name "
        "vb -- echo 'trainscope: step=2 train/loss=0.5'")
    write_clients(d, CLIENTS)


CLIENTS = {
    "late47": """
import socket
s = socket.create_connection((h, p))
s.sendall(b'PUT /api/runs/lm/tags/x HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Length: 10'
          b'\\r\\n\\r\\nabc')
head = read_all(s).split(b'\\r\\n\\r\\n')[0].decode().split('\\r\\n')
print(head[0], [x for x in head if x.startswith(('Connection', 'Keep-Alive'))], file=sys.stderr)
""",
}

CASES = [
    ("diff of two runs with no train/loss step in common: no maximum over nothing",
     "$BARE --store sqlite:$DIR/v47.db diff va vb | grep 'metric curves' >&2", {"ok": True}),
    ("diff --json of those runs: max_loss_diff is null",
     "$BARE --store sqlite:$DIR/v47.db diff va vb --json | grep max_loss_diff >&2",
     {"ok": True}),
    ("Python: setup() of seeds.master Decimal(7), as everywhere a number",
     *py("py47a", "from decimal import Decimal; print(t.setup({'seeds': {'master': "
         "Decimal(7)}}, apply=False).master == t.setup({'seeds': {'master': 7}}, "
         "apply=False).master, file=sys.stderr)")),
    ("Python: config(sets=) of a key holding ESC: escaped, and said of sets=",
     *py("py47b", "t.config({'lr': 0.1}, sets=['a' + chr(27) + '[2J=1'])")),
    ("Python: watch(probes_every=-3) without probes=",
     *py("py47c", START + "import torch; r.watch(torch.nn.Linear(2, 2), probes_every=-3)")),
    ("Python: watch(profile_warmup='x') without profile_every=",
     *py("py47d", START + "import torch; r.watch(torch.nn.Linear(2, 2), profile_warmup='x')")),
    ("probes --histogram with -f json (an SVG is drawn)",
     "$BARE --store sqlite:$DIR/t.db probes lm --histogram l/weights -f json"),
    ("probes --svg with --json", "$BARE --store sqlite:$DIR/t.db --json probes lm --svg $DIR/p47.svg"),
    ("probes --histogram of a record whose low bound is NaN",
     "$BARE --store sqlite:$DIR/n47.db probes lm --histogram l/weights -o $DIR/n47.svg"),
    ("probes --histogram of a record holding a count of 2^63",
     "$BARE --store sqlite:$DIR/c47.db probes lm --histogram l/weights -o $DIR/c47.svg"),
    ("diff of a run whose step record holds 3 hashes for 2 named tensors",
     "$BARE --store sqlite:$DIR/f47.db diff lm lm"),
    ("the API: a body that stops arriving: 408 and Connection: close, no Keep-Alive",
     serve("t", "late47", "--allow-writes"), {"ok": True}),
]
