"""The Done-when of issue 31 as a user meets it: examples/python/quickstart.py
(a short PyTorch script of one's own) run twice records runs that `runs
show`, `profile show`, `probes`, `diff` and the dashboard's API display."""
import json
import os
import pathlib
import re
import subprocess
import sys
import urllib.request

import pytest

CLI = os.environ["TS_CLI"]
SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "quickstart.py"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quick")
    env = dict(os.environ, TRAINSCOPE_STORE="sqlite:" + str(tmp / "q.db"))
    for _ in range(2):
        subprocess.run([sys.executable, str(SCRIPT)], cwd=tmp, env=env, check=True)
    listed = json.loads(cli(tmp, "runs", "list").stdout)
    return tmp, [r["uuid"] for r in reversed(listed)]


def cli(tmp, *args):
    return subprocess.run([CLI, "--store", "sqlite:" + str(tmp / "q.db"), "--json", *args],
                          check=True, capture_output=True, text=True)


def test_runs_show_lists_what_the_units_recorded(runs):
    tmp, (a, b) = runs
    shown = json.loads(cli(tmp, "runs", "show", a).stdout)
    assert shown["status"] == "finished" and shown["params"]["lr"] == "0.05"
    assert shown["records"]["fingerprints"] == 8  # every 5th of 40 steps
    assert shown["records"]["profile_steps"] == 7  # steps 6, 11, ..., 36
    assert any(m["key"].startswith("probe/") for m in shown["metric_summaries"])


def test_profile_show_and_probes_name_the_scripts_layers(runs):
    tmp, (a, _) = runs
    p = json.loads(cli(tmp, "profile", "show", a).stdout)
    assert [layer["layer"] for layer in p["layers"]] == ["0", "1", "2", "3", "4"]
    assert p["coverage_min"] >= 0.97
    rows = json.loads(cli(tmp, "probes", a).stdout)
    assert {r["layer"] for r in rows} >= {"0", "1", "4"}


def test_diff_says_two_runs_of_the_script_are_bit_identical(runs):
    tmp, (a, b) = runs
    d = json.loads(cli(tmp, "diff", a, b).stdout)
    assert d["have_fingerprints"] and d["bit_identical"] and d["common_steps"] == 8, d


def test_the_dashboard_serves_the_profile_and_the_probes(runs):
    tmp, (a, _) = runs
    server = subprocess.Popen([CLI, "--store", "sqlite:" + str(tmp / "q.db"), "serve", "--port",
                               "0"], stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        url = re.search(r"http://\S+", line).group(0).rstrip("/")
        for what, key in (("profile", "layers"), ("probes", None)):
            with urllib.request.urlopen(f"{url}/api/runs/{a}/{what}", timeout=30) as r:
                body = json.loads(r.read())
            assert r.status == 200 and body, what
            if key:
                assert [layer["layer"] for layer in body[key]][0] == "0"
    finally:
        server.terminate()
        server.wait(timeout=30)
