"""Issue 29, item 8: stores named clearly. An empty store name is a
mistake, not the default store (a `watch` recorded into ./trainscope.db); a
path that is not a regular file is refused before SQLite opens it (a FIFO
hung `runs list` forever, /dev/null got advice that did not apply); a
PostgreSQL port that is not one is a usage error (it was a store error)."""
import os
import socket

TITLE = "8. Stores named clearly"

CASES = [
    ("an empty --store", "cd $DIR && $BARE --store '' watch -- true"),
    # ($TS is the executable and its --store: "$1" is the executable alone.)
    ("an empty TRAINSCOPE_STORE", "cd $DIR && set -- $TS && TRAINSCOPE_STORE= \"$1\" runs list"),
    ("a FIFO as the store", "timeout 20 $BARE --store sqlite:$DIR/fifo.db runs list"),
    ("a FIFO beside the store as its -wal file",
     "timeout 20 $BARE --store sqlite:$DIR/walfifo.db runs list"),
    ("/dev/null as the store", "$BARE --store sqlite:/dev/null runs list"),
    ("/dev/null as the store of a writer", "$BARE --store sqlite:/dev/null numerics logmap --steps 3"),
    ("a socket as the store", "$BARE --store sqlite:$DIR/socket.db runs list"),
    ("a folder as the store", "$BARE --store sqlite:$DIR/folder runs list"),
    ("a PostgreSQL port that is a word",
     "$BARE --store postgresql://trainscope@127.0.0.1:http/ts runs list"),
    ("a PostgreSQL port above 65535",
     "$BARE --store postgresql://trainscope@127.0.0.1:99999/ts runs list"),
    ("a PostgreSQL port in the query string",
     "$BARE --store 'postgresql://trainscope@127.0.0.1/ts?port=5x' runs list"),
    ("an empty store to copy from", "$TS store copy '' sqlite:$DIR/copy-of-nothing.db"),
    ("an empty TRAINSCOPE_STORE beside --store", "TRAINSCOPE_STORE= $TS -q runs list > /dev/null",
     {"ok": True}),
]


def fixtures(d, run):
    os.mkfifo(f"{d}/fifo.db", 0o600)
    open(f"{d}/walfifo.db", "w").close()
    os.mkfifo(f"{d}/walfifo.db-wal", 0o600)
    s = socket.socket(socket.AF_UNIX)
    s.bind(f"{d}/socket.db")
    s.close()
