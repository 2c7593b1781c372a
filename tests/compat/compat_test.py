"""A store written by the last libtorch 1.13 build (tests/compat/torch113,
made by make_torch113_fixture.sh) read by today's build: every reader prints
what the 1.13 build printed of it, its checkpoints load and evaluate to the
same predictions, and a rerun on today's torch is compared with the 1.13 run
step by step through their fingerprints.

    compat_test.py TRAINSCOPE_EXECUTABLE
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "torch113")
MADE_AT = "/work/main/tests/compat/torch113"  # where the fixture was made (paths in its output)


def run(ts, store, *args, check=True):
    env = dict(os.environ, TRAINSCOPE_STORE="sqlite:" + os.path.join(store, "store.db"))
    p = subprocess.run([ts, *args], cwd=store, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"trainscope {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return p


def expected(name, store):
    with open(os.path.join(FIXTURE, "expected", name)) as f:
        return json.loads(f.read().replace(MADE_AT, store))


def first_difference(a, b, path="$"):
    """Where two JSON values first differ, or None."""
    if type(a) is not type(b):
        return f"{path}: {a!r} against {b!r}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: only in {'the 1.13 output' if k in a else 'today' + chr(39) + 's'}"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} elements against {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r} (1.13) against {b!r} (today)"


def same(name, want, got):
    d = first_difference(want, got)
    if d:
        raise AssertionError(f"{name} differs from what the 1.13 build printed: {d}")
    print(f"ok {name}: as the 1.13 build printed it")


def readers(ts, store):
    """Every reader of the records, against the 1.13 build's output."""
    for r in ("demo113", "mlp113"):
        same(f"runs show {r}", expected(f"runs_show_{r}.json", store),
             json.loads(run(ts, store, "--json", "runs", "show", r).stdout))
        same(f"metrics {r} train/loss", expected(f"metrics_loss_{r}.json", store),
             json.loads(run(ts, store, "metrics", r, "train/loss", "--format", "json").stdout))
    out = os.path.join(store, "export.json")
    run(ts, store, "runs", "export", "demo113", "mlp113", "--format", "json", "--out", out)
    with open(out) as f:
        same("runs export", expected("export.json", store), json.load(f))
    # One change on purpose: profile show's peak is the one the run measured
    # (profile/peak_gflops), where the 1.13 build printed this machine's
    # peak of the day, cached, for any run.
    want = expected("profile_demo113.json", store)
    peak = json.loads(run(ts, store, "metrics", "demo113", "profile/peak_gflops",
                          "--format", "json").stdout)
    want["peak_gflops"] = round(peak["points"][0]["value"], 4)
    got = json.loads(run(ts, store, "--json", "profile", "show", "demo113").stdout)
    got["peak_gflops"] = round(got["peak_gflops"], 4)
    same("profile show", want, got)
    same("probes", expected("probes_demo113.json", store),
         json.loads(run(ts, store, "--json", "probes", "demo113").stdout))
    same("diff of a run with itself (fingerprints)", expected("diff_self.json", store),
         json.loads(run(ts, store, "--json", "diff", "demo113", "demo113").stdout))


def checkpoints(ts, store):
    """The 1.13 checkpoints load (model and optimizer state) and evaluate to
    the same predictions; the mean loss is recomputed by today's kernels,
    equal to float32's rounding."""
    for r in ("demo113", "mlp113"):
        want = expected(f"eval_{r}.json", store)
        got = json.loads(run(ts, store, "--json", "eval", r).stdout)
        loss_w, loss_g = want.pop("loss"), got.pop("loss")
        same(f"eval {r} (all but the loss)", want, got)
        assert abs(loss_w - loss_g) <= 1e-6 * abs(loss_w), (r, loss_w, loss_g)
        print(f"ok eval {r}: loss {loss_g} against {loss_w} (relative {abs(loss_w - loss_g) / loss_w:.1e})")


def rerun_on_today(ts, store):
    """The 1.13 run again on today's torch: its initial weights (trainscope's
    seeded init) are bit-identical, its first update is not (other BLAS and
    oneDNN kernels); diff finds that step from the two runs' fingerprints."""
    p = run(ts, store, "rerun", "demo113", "--verify", check=False)
    assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
    assert "identical up to step 0" in p.stdout, p.stdout
    d = json.loads(run(ts, store, "--json", "diff", "demo113", "demo113-rerun").stdout)
    assert d["have_fingerprints"] and d["first_diff_step"] == 1, d
    env = run(ts, store, "env", "diff", "demo113", "demo113-rerun").stdout
    assert "libraries.torch.version" in env and "1.13" in env, env
    print("ok rerun on today's torch: identical at step 0, parts at step 1; env diff names the torch")


def main():
    ts = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "torch113")
        shutil.copytree(FIXTURE, store)
        readers(ts, store)
        checkpoints(ts, store)
        rerun_on_today(ts, store)
    print("the 1.13 store reads the same")


if __name__ == "__main__":
    main()
