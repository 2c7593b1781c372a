#!/usr/bin/env python3
"""Runs commands side by side, interleaved, and compares them.

    bench/interleave.py [--rounds N] [--trainscope BIN] [--json FILE]
                        --case NAME 'shell command' [--case NAME 'command' ...]

Every round runs each case once, rotating which goes first, so that a slow
spell of a shared machine hits all cases alike (never compare two figures
taken one after the other). Per run it measures the child's wall time,
user and system CPU and peak RSS (wait4), and collects figures the command
reports:
  - a line "bench: key=value key=value ..." on stdout (bench/bare_loop and
    bench/py_train_step.py print one);
  - for a command holding "{store}": a fresh SQLite store is put there and,
    after the run, the newest run's train/step_ms (median after the first 10
    steps), epoch_time_s (first epoch), steps and proc/cpu_percent (mean)
    are read back with `trainscope metrics`.
Prints, per case, median [min..max] of every figure and the ratio of its
median to the first case's.
"""
import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--trainscope", default="build/bin/trainscope")
    ap.add_argument("--json", help="also write every sample here")
    ap.add_argument("--case", nargs=2, action="append", metavar=("NAME", "COMMAND"), required=True)
    return ap.parse_args()


def metric_points(ts, store, run, key):
    out = subprocess.run([ts, "--store", "sqlite:" + store, "metrics", run, key, "--json"],
                         capture_output=True, text=True)
    if out.returncode != 0:
        return []
    return [(p["step"], p["value"]) for p in json.loads(out.stdout)["points"]
            if isinstance(p["value"], (int, float))]


def trainscope_figures(ts, store):
    runs = subprocess.run([ts, "--store", "sqlite:" + store, "runs", "list", "--json"],
                          capture_output=True, text=True, check=True)
    run = json.loads(runs.stdout)[0]["uuid"]
    fig = {}
    steps = [v for s, v in metric_points(ts, store, run, "train/step_ms") if s > 10]
    if steps:
        fig["step_ms"] = statistics.median(steps)
        fig["steps"] = len(steps) + 10
    epochs = metric_points(ts, store, run, "epoch_time_s")
    if epochs:
        fig["epoch_s"] = epochs[0][1]
    cpu = [v for s, v in metric_points(ts, store, run, "proc/cpu_percent")]
    if cpu:
        fig["monitor_cpu_pct"] = statistics.mean(cpu)
    return fig


def run_once(ts, command):
    tmp = None
    if "{store}" in command:
        tmp = tempfile.mkdtemp(prefix="trainscope-bench-")
        command = command.replace("{store}", os.path.join(tmp, "b.db"))
    t0 = time.monotonic()
    proc = subprocess.Popen(command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    out = proc.stdout.read()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"interleave: '{command}' failed with {os.waitstatus_to_exitcode(status)}")
    fig = {"wall_s": wall, "user_s": ru.ru_utime, "sys_s": ru.ru_stime,
           "rss_mib": ru.ru_maxrss / 1024.0,
           "cpu_pct": (ru.ru_utime + ru.ru_stime) / wall * 100}
    for line in out.splitlines():
        if line.startswith("bench:"):
            for kv in line[6:].split():
                k, v = kv.split("=", 1)
                fig[k] = float(v)
    if tmp:
        fig.update(trainscope_figures(ts, os.path.join(tmp, "b.db")))
        subprocess.run(["rm", "-rf", tmp])
    return fig


def report(cases, samples):
    keys = []
    for name, _ in cases:
        for s in samples[name]:
            keys += [k for k in s if k not in keys]
    base = cases[0][0]
    print(f"{len(samples[base])} rounds, interleaved, order rotated each round")
    print(f"{'case':<28}{'figure':<16}{'median':>11}{'min':>11}{'max':>11}{'/ ' + base[:10]:>14}"
          f"{'paired':>9}{'[min..max]':>16}")
    for name, _ in cases:
        for k in keys:
            vals = [s[k] for s in samples[name] if k in s]
            if not vals:
                continue
            bvals = [s[k] for s in samples[base] if k in s]
            ratio = statistics.median(vals) / statistics.median(bvals) if bvals and statistics.median(bvals) else float("nan")
            # Paired: the ratio within each round (the runs of one round ran
            # next to each other), then its median and range.
            pairs = [a[k] / b[k] for a, b in zip(samples[name], samples[base])
                     if k in a and k in b and b[k]]
            paired = (f"{statistics.median(pairs):>9.3f}{f'[{min(pairs):.3f}..{max(pairs):.3f}]':>16}"
                      if pairs else "")
            print(f"{name:<28}{k:<16}{statistics.median(vals):>11.4g}{min(vals):>11.4g}"
                  f"{max(vals):>11.4g}{ratio:>14.3f}{paired}")


def rotated(rounds, names, measure, show=lambda _: "done"):
    """Calls measure(name, round) once per name each round, rotating which
    goes first; prints show(figure) per run as progress. Returns
    {name: [figure per round]}. The other bench scripts loop through this."""
    samples = {n: [] for n in names}
    for r in range(rounds):
        for k in range(len(names)):
            name = names[(k + r) % len(names)]
            samples[name].append(measure(name, r))
            print(f"round {r + 1}/{rounds}: {name} {show(samples[name][-1])}", file=sys.stderr)
    return samples


def main():
    args = parse_args()
    cases = [(n, c) for n, c in args.case]
    commands = dict(cases)
    samples = rotated(args.rounds, [n for n, _ in cases],
                      lambda name, _: run_once(args.trainscope, commands[name]))
    report(cases, samples)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cases": cases, "samples": samples}, f, indent=1)


if __name__ == "__main__":
    main()
