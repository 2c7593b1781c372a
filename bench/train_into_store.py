#!/usr/bin/env python3
"""Does a PostgreSQL store slow training? The same short training into a
SQLite file and into a PostgreSQL database, interleaved.

    bench/train_into_store.py [--pairs 5] [--steps 1000] [--cli build/bin/trainscope]

Each pair trains the demo CNN on synthetic data (batch 64, libtorch and
OpenBLAS at 1 thread, every step's metrics recorded) once into a new SQLite
file and once into a new database on a PostgreSQL server this script starts
(fsync on, loopback), alternating which goes first. The figure is the
training's wall time as the CLI process sees it, start to exit. Prints median
[min..max] per store and the ratio of the medians.
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

CONFIG = """data: {dataset: synthetic, synthetic: {size: 4096}}
model: {name: demo_cnn}
train: {epochs: 1000, batch_size: 64, max_steps: %d}
compute: {threads: 1}
checkpoint: {every_epochs: 0}
"""


def train(cli, store, config):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    start = time.monotonic()
    subprocess.run([cli, "--store", store, "train", config], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--cli", default="build/bin/trainscope")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="trainscope-train-store-")
    config = os.path.join(tmp, "c.yaml")
    with open(config, "w") as f:
        f.write(CONFIG % args.steps)
    pg_dir = os.path.join(tmp, "postgres")
    pg_server.start(pg_dir, durable=True)
    def measure(case, p):
        if case == "sqlite":
            store = "sqlite:" + os.path.join(tmp, f"t{p}.db")
        else:
            store = (pg_server.createdb(pg_dir, f"train_{p}") + "?artifacts=" +
                     os.path.join(tmp, f"artifacts-{p}"))
        return train(args.cli, store, config)

    try:
        walls = interleave.rotated(args.pairs, ["sqlite", "postgresql"], measure,
                                   lambda wall: f"{wall:.2f} s")
    finally:
        pg_server.stop(pg_dir)
        shutil.rmtree(tmp, ignore_errors=True)
    med = {c: statistics.median(v) for c, v in walls.items()}
    for c, v in walls.items():
        print(f"{c:11s} {med[c]:.2f} s [{min(v):.2f}..{max(v):.2f}] "
              f"({args.steps} steps, {args.pairs} pairs)")
    print(f"ratio postgresql/sqlite {med['postgresql'] / med['sqlite']:.3f}")


if __name__ == "__main__":
    main()
