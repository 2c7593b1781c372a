#!/usr/bin/env python3
"""The ring all-reduce cost model against Gloo on this machine (issue 32,
docs/scale-out.md).

Runs bench/allreduce_bench for 2..P local ranks, ROUNDS times with the
order of the world sizes rotated (the machine is shared: no two figures are
taken one after the other), and takes the median over rounds of each
size's median time. Fits the model of a ring all-reduce, the algorithm
Gloo's allreduce runs,

    T(n, p) = 2 (p - 1) alpha + 2 (p - 1) / p * n * beta

(2(p-1) steps of one message each; every rank sends and receives
2(p-1)/p of the n bytes) to the 2-rank figures, predicts the 3..P-rank
ones, and projects the all-reduce of the demo CNN's gradient and of
ResNet-50's to 8-64 nodes on a stated network.

  bench/allreduce.py [BUILD_DIR] [ROUNDS (5)] [MAX_RANKS (4)] [ITERS (40)]
"""
import json
import statistics
import subprocess
import sys

SIZES = [1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216]
DEMO_BYTES = 4 * 206922  # the demo CNN's float32 gradient (docs/benchmarks.md)
RESNET50_BYTES = 4 * 25557032
# The demo's step on one core at the global batch of 128 (bench/dist.sh,
# 1 rank x 1 thread, docs/benchmarks.md): p nodes each compute 128/p rows.
DEMO_STEP_S = 0.02217
# The stated networks of the projection: per-message latency (Gloo over
# TCP, kernel to kernel) and the bandwidth one link gives one flow.
NETWORKS = [("10 GbE", 30e-6, 10e9 / 8 * 0.9), ("100 GbE", 15e-6, 100e9 / 8 * 0.8)]


def measure(build, rounds, max_ranks, iters):
    worlds = list(range(2, max_ranks + 1))
    runs = {(p, n): [] for p in worlds for n in SIZES}
    for r in range(rounds):
        order = worlds[r % len(worlds):] + worlds[:r % len(worlds)]
        for p in order:
            out = subprocess.run([f"{build}/bench/allreduce_bench", str(p), str(iters),
                                  ",".join(map(str, SIZES))], check=True,
                                 capture_output=True, text=True, timeout=600).stdout
            for line in out.splitlines():
                row = json.loads(line)
                runs[(p, row["bytes"])].append(row["median_us"] * 1e-6)
            print(f"round {r + 1}/{rounds}: {p} ranks", file=sys.stderr)
    return worlds, runs


def ring(alpha, beta, n, p):
    return 2 * (p - 1) * alpha + 2 * (p - 1) / p * n * beta


def fit(runs):
    """alpha, beta from the 2-rank medians: T = 2 alpha + n beta, least
    squares on the relative error (weights 1/T), so that small and large
    messages count alike."""
    xs = [(n, statistics.median(runs[(2, n)])) for n in SIZES]
    # minimise sum ((a + b n - t) / t)^2 over a, b
    s11 = sum(1 / t**2 for n, t in xs)
    s12 = sum(n / t**2 for n, t in xs)
    s22 = sum(n * n / t**2 for n, t in xs)
    r1 = sum(1 / t for n, t in xs)
    r2 = sum(n / t for n, t in xs)
    det = s11 * s22 - s12 * s12
    a = (r1 * s22 - r2 * s12) / det
    b = (s11 * r2 - s12 * r1) / det
    return a / 2, b


def fmt_us(s):
    return f"{s * 1e6:,.0f}"


def report(worlds, runs, alpha, beta, rounds):
    print(f"Fitted on 2 ranks (loopback): alpha = {alpha * 1e6:.1f} us per message, "
          f"1/beta = {1 / beta / 1e9:.2f} GB/s\n")
    print("| bytes | " + " | ".join(f"{p} ranks measured [spread] | model" for p in worlds) + " |")
    print("|---:|" + "---:|---:|" * len(worlds))
    for n in SIZES:
        cells = []
        for p in worlds:
            v = runs[(p, n)]
            cells.append(f"{fmt_us(statistics.median(v))} [{fmt_us(min(v))}..{fmt_us(max(v))}]")
            cells.append(fmt_us(ring(alpha, beta, n, p)))
        print(f"| {n:,} | " + " | ".join(cells) + " |")
    print(f"\nTimes in microseconds: median over {rounds} rounds of each round's median, "
          "[min..max] of the round medians.\n")


def project():
    print("| network | gradient | " + " | ".join(f"{p} nodes" for p in (8, 16, 32, 64)) + " |")
    print("|---|---|" + "---:|" * 4)
    for name, alpha, bw in NETWORKS:
        for what, n in (("demo CNN (808 KiB)", DEMO_BYTES), ("ResNet-50 (97.5 MiB)",
                                                              RESNET50_BYTES)):
            cells = [f"{ring(alpha, 1 / bw, n, p) * 1e3:.2f} ms" for p in (8, 16, 32, 64)]
            print(f"| {name} | {what} | " + " | ".join(cells) + " |")
    print("\nThe demo CNN's scaling efficiency on p such nodes, one core each, if the "
          "all-reduce is not hidden: (step/p) / (step/p + all-reduce)\n")
    print("| network | " + " | ".join(f"{p} nodes" for p in (8, 16, 32, 64)) + " |")
    print("|---|" + "---:|" * 4)
    for name, alpha, bw in NETWORKS:
        cells = []
        for p in (8, 16, 32, 64):
            compute = DEMO_STEP_S / p
            cells.append(f"{compute / (compute + ring(alpha, 1 / bw, DEMO_BYTES, p)):.0%}")
        print(f"| {name} | " + " | ".join(cells) + " |")


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    max_ranks = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    iters = int(sys.argv[4]) if len(sys.argv) > 4 else 40
    worlds, runs = measure(build, rounds, max_ranks, iters)
    alpha, beta = fit(runs)
    report(worlds, runs, alpha, beta, rounds)
    project()
    json.dump({"alpha_s": alpha, "beta_s_per_byte": beta,
               "runs": {f"{p}/{n}": v for (p, n), v in runs.items()}},
              open("allreduce.json", "w"), indent=1)


if __name__ == "__main__":
    main()
