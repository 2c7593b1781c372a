"""Issue 29, item 7: references mean what the user meant. An exact run name
wins over a UUID prefix (as a git ref over an abbreviated hash), with a
one-line note saying how to name the other run; UUID prefixes are read in
any case; a run named twice on one command line counts once; a reference
that names two runs is refused, listing them."""
import sqlite3

TITLE = "7. References mean what the user meant"

REFS = "$BARE --store sqlite:$DIR/refs.db"

CASES = [
    ("a run named like the start of another run's UUID (the name wins, with a note)",
     f"{REFS} runs show cafe > /dev/null", {"ok": True}),
    ("a UUID prefix in capitals", f"{REFS} runs show CAFE0 > /dev/null", {"ok": True}),
    ("a run named twice in an export", f"{REFS} runs export cafe cafe > /dev/null",
     {"ok": True}),
    ("a run named twice in a plot (one curve)",
     f"{REFS} plot other other lyapunov --format csv | grep -c ^cafe00 | grep -qx 1",
     {"ok": True}),
    ("a UUID prefix two runs share, in capitals", f"{REFS} runs show 1111A"),
]


def fixtures(d, run):
    """refs.db: `other` (UUID cafe0000-...), `cafe` (UUID 1111a000-...) and
    `third` (UUID 1111a001-...), each a 5-step numerics run."""
    uuids = {"other": "cafe0000-0000-4000-8000-000000000001",
             "cafe": "1111a000-0000-4000-8000-000000000002",
             "third": "1111a001-0000-4000-8000-000000000003"}
    for name in uuids:
        run(f"$BARE --store sqlite:{d}/refs.db -q numerics logmap --steps 5 --name {name}")
    db = sqlite3.connect(f"{d}/refs.db")
    for name, uuid in uuids.items():
        db.execute("UPDATE runs SET uuid = ? WHERE name = ?", (uuid, name))
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
