#!/usr/bin/env python3
"""Runs one study into a fresh store and compares its wall time with the
compute bound: the sum of its runs' training time divided by its workers.

    bench/study_bound.py TRAINSCOPE STUDY_FILE [study run options...]

A run's training time is the sum of its epochs (epoch_time_s, evaluation
excluded), as the study issue defines the bound. Prints one line
    bench: study_wall_s=... train_s=... eval_s=... bound_s=... ratio=... runs=... workers=...
which bench/interleave.py collects, e.g. warm workers against --cold:
    bench/interleave.py --rounds 5 \\
      --case warm 'bench/study_bound.py build/bin/trainscope configs/studies/sources.yaml --quick' \\
      --case cold 'bench/study_bound.py build/bin/trainscope configs/studies/sources.yaml --quick --cold'
eval_s sums eval_time_s where the runs record it (0 otherwise).
"""
import csv
import io
import re
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ts, study = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="trainscope-study-bench-") as tmp:
        store = f"sqlite:{tmp}/s.db"
        t0 = time.monotonic()
        out = subprocess.run([ts, "--store", store, "study", "run", study, "--logs", f"{tmp}/logs",
                              *sys.argv[3:]], capture_output=True, text=True)
        wall = time.monotonic() - t0
        if out.returncode != 0:
            sys.exit(f"study_bound: the study failed ({out.returncode}):\n{out.stderr[-2000:]}")
        workers = int(re.search(r"(\d+) worker\(s\)", out.stderr).group(1))
        points = subprocess.run([ts, "--store", store, "runs", "export", "-f", "csv"],
                                capture_output=True, text=True, check=True).stdout
        train = evals = 0.0
        runs = set()
        for row in csv.DictReader(io.StringIO(points)):
            if row["key"] == "epoch_time_s":
                train += float(row["value"])
                runs.add(row["run"])
            elif row["key"] == "eval_time_s":
                evals += float(row["value"])
    bound = train / workers
    print(f"bench: study_wall_s={wall:.3f} train_s={train:.3f} eval_s={evals:.3f} "
          f"bound_s={bound:.3f} ratio={wall / bound:.3f} runs={len(runs)} workers={workers}")


if __name__ == "__main__":
    main()
