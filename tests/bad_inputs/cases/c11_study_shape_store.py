"""Issue 29, item 11 (the store's part): studies keep their shape. Deleting
a study's parent run is refused (exit 4, how many children, which flag)
unless --with-children or --keep-children says what becomes of them; a
run left "running" by a writer that is gone is copied by `store copy` as
it is, once (it was marked killed and copied again on every pass)."""
import sqlite3

TITLE = "11. Studies keep their shape"

S11 = "$BARE --store sqlite:$DIR/{0}.db"
COPY = "$TS store copy sqlite:$DIR/stale.db sqlite:$DIR/stale-copy.db"

CASES = [
    ("deleting a study's parent run", f"{S11.format('s11')} runs delete seeds --yes"),
    ("deleting it with both --with-children and --keep-children",
     f"{S11.format('s11')} runs delete seeds --yes --with-children --keep-children"),
    ("deleting it and keeping its children",
     f"cp $DIR/s11.db $DIR/s11k.db && {S11.format('s11k')} runs delete seeds --yes "
     "--keep-children", {"ok": True}),
    ("deleting it with its children",
     f"cp $DIR/s11.db $DIR/s11w.db && {S11.format('s11w')} runs delete seeds --yes "
     "--with-children", {"ok": True}),
    ("copying a store twice that holds a run left running by a crash",
     f"{COPY} > /dev/null && {COPY} | grep -q '1 already there, 0 copied again'",
     {"ok": True}),
]

UUIDS = {"seeds": "5eed0000-0000-4000-8000-000000000000",
         "seeds/r1": "5eed0000-0000-4000-8000-000000000001",
         "seeds/r2": "5eed0000-0000-4000-8000-000000000002"}


def fixtures(d, run):
    """s11.db: a study `seeds` (UUID 5eed0000-...-000) with two trainings
    seeds/r1 and seeds/r2; stale.db: a run `crashed` that its writer (pid
    4242 on node-b, silent since 2023) left running."""
    for name in UUIDS:
        run(f"$BARE --store sqlite:{d}/s11.db -q numerics logmap --steps 5 --name {name}")
    db = sqlite3.connect(f"{d}/s11.db")
    for name, uuid in UUIDS.items():
        db.execute("UPDATE runs SET uuid = ? WHERE name = ?", (uuid, name))
    db.execute("UPDATE runs SET parent_id = (SELECT id FROM runs WHERE name = 'seeds') "
               "WHERE name LIKE 'seeds/%'")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    run(f"$BARE --store sqlite:{d}/stale.db -q numerics logmap --steps 5 --name crashed")
    db = sqlite3.connect(f"{d}/stale.db")
    db.execute("UPDATE runs SET status = 'running', end_time = NULL, host = 'node-b', "
               "pid = 4242, pid_start = 1, heartbeat = 1700000000 WHERE name = 'crashed'")
    db.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
