#!/usr/bin/env python3
"""The hand-written libtorch loop (examples/custom_loop.cc) gets every
capability: it is run three times (two with the same seed, one with
another), then read back with the CLI as a user would.

  custom_loop_check.py CUSTOM_LOOP TRAINSCOPE WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys


def run(*args):
    p = subprocess.run(list(args), capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(args)} exited {p.returncode}:\n{p.stdout}{p.stderr}")
    return p.stdout


def main():
    loop, cli, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    store = "sqlite:" + os.path.join(work, "loop.db")
    for name, seed in (("loop-a", "1"), ("loop-b", "1"), ("loop-c", "2")):
        out = run(loop, store, name, seed)
        assert "recorded run" in out and "64 steps" in out, out

    def ts(*args):
        return json.loads(run(cli, "--store", store, "--json", *args))

    show = ts("runs", "show", "loop-a")
    assert show["status"] == "finished", show["status"]
    records = show["records"]
    for kind in ("fingerprint_tensors", "fingerprints", "profile_steps", "profile_layers",
                 "histograms"):
        assert records.get(kind, 0) > 0, f"no {kind} records: {records}"
    assert records["fingerprints"] == 64, records
    metrics = {m["key"] for m in show["metric_summaries"]}
    for key in ("train/loss", "test/accuracy", "train/epoch_loss", "profile/coverage",
                "probe/conv1/weights/update_ratio", "probe/fc2/weights/l2"):
        assert key in metrics, f"metric {key} missing: {sorted(metrics)}"
    assert show["params"]["model.name"] == "loop-net", show["params"]["model.name"]

    profile = ts("profile", "show", "loop-a")
    assert profile["coverage_min"] >= 0.97, profile["coverage_min"]
    layers = {l["layer"]: l for l in profile["layers"]}
    for layer in ("conv1", "bn1", "conv2", "fc1", "fc2"):
        assert layer in layers, f"layer {layer} not profiled: {sorted(layers)}"
        assert layers[layer]["forward_us"] > 0 and layers[layer]["backward_us"] > 0, layers[layer]
    assert layers["conv1"]["type"] == "Conv2d" and layers["conv1"]["forward_flops"] > 0

    same = ts("diff", "loop-a", "loop-b")
    assert same["have_fingerprints"] and same["bit_identical"], same
    assert same["common_steps"] == 64, same["common_steps"]
    other = ts("diff", "loop-a", "loop-c")
    assert not other["bit_identical"] and other["first_diff_step"] == 1, other
    assert "conv1.weight" in other["differing_tensors"], other["differing_tensors"]
    print("custom loop: metrics, fingerprints, profile (coverage %.3f, %d layers), probes, diff ok"
          % (profile["coverage_min"], len(layers)))


if __name__ == "__main__":
    main()
