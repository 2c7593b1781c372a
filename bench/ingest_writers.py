#!/usr/bin/env python3
"""Many processes writing metric points into one store at once: SQLite
against PostgreSQL, interleaved.

    bench/ingest_writers.py [--rounds 5] [--processes 8] [--points 100000]
                            [--writer build/tests/ts_store_writer]

Each round runs both cases once, rotating which goes first: N writer
processes (tests/support/store_writer_main.cc: a RunRecorder logging as
fast as it can, 4 keys, then a final flush) start together on a fresh store
(a new SQLite file; a new database on a PostgreSQL server this script
starts with fsync on, in a temporary folder). The figure is all points
over the wall time from the first start to the last exit. Every round
checks that every writer exited 0 and that the store holds every point.
Prints median [min..max] per case and the ratio of the medians.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "support"))
import pg_server  # noqa: E402

import interleave  # noqa: E402  (bench/, the script's own folder)

KEYS = 4


def run_writers(writer, uri, processes, points):
    steps = points // KEYS
    start = time.monotonic()
    procs = [subprocess.Popen([writer, uri, f"w{i}", str(steps), str(KEYS)])
             for i in range(processes)]
    codes = [p.wait() for p in procs]
    wall = time.monotonic() - start
    if any(codes):
        sys.exit(f"ingest: a writer failed (exit codes {codes}) on {uri}")
    return wall


def stored_points(case, where):
    sql = "SELECT sum(count) FROM metric_keys"
    if case == "sqlite":
        out = subprocess.run(["sqlite3", where, sql], capture_output=True, text=True, check=True)
    else:
        out = subprocess.run(["psql", "-X", "-At", where, "-c", sql], capture_output=True,
                             text=True, check=True)
    return int(out.stdout.strip() or 0)


def one(case, args, tmp, pg_dir, n):
    if case == "sqlite":
        path = os.path.join(tmp, f"ingest-{n}.db")
        uri, where = "sqlite:" + path, path
    else:
        where = pg_server.createdb(pg_dir, f"ingest_{n}")
        uri = where + "?artifacts=" + os.path.join(tmp, f"artifacts-{n}")
    wall = run_writers(args.writer, uri, args.processes, args.points)
    expected = args.processes * (args.points // KEYS) * KEYS
    got = stored_points(case, where)
    if got != expected:
        sys.exit(f"ingest: {case} holds {got} points, expected {expected}")
    return expected / wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--points", type=int, default=100_000, help="per process")
    ap.add_argument("--writer", default="build/tests/ts_store_writer")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="trainscope-ingest-")
    pg_dir = os.path.join(tmp, "postgres")
    pg_server.start(pg_dir, durable=True)
    try:
        rates = interleave.rotated(args.rounds, ["sqlite", "postgresql"],
                                   lambda case, r: one(case, args, tmp, pg_dir, f"{r}_{case}"),
                                   lambda rate: f"{rate / 1e6:.3f} M points/s")
    finally:
        pg_server.stop(pg_dir)
        shutil.rmtree(tmp, ignore_errors=True)
    med = {c: statistics.median(v) for c, v in rates.items()}
    for c, v in rates.items():
        print(f"{c:11s} {med[c] / 1e6:.3f} M points/s [{min(v) / 1e6:.3f}..{max(v) / 1e6:.3f}] "
              f"({args.processes} processes x {args.points} points, {args.rounds} rounds, "
              "0 lost)")
    print(f"ratio postgresql/sqlite {med['postgresql'] / med['sqlite']:.2f}")


if __name__ == "__main__":
    main()
