"""What the hunts' Python tests (test_hunt*.py) share: the CLI of the build
(TS_CLI, set by ctest) run on a store as a user runs it, and a fresh store
per test."""
import json
import os
import subprocess

import pytest

CLI = os.environ["TS_CLI"]


def cli(store, *args):
    """`trainscope --store sqlite:STORE ARGS...`, which must exit 0; its
    stdout."""
    done = subprocess.run([CLI, "--store", "sqlite:" + store, *args], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def show(store, name):
    """`runs show NAME --json`, parsed."""
    return json.loads(cli(store, "--json", "runs", "show", name))


@pytest.fixture
def store(tmp_path):
    return str(tmp_path / "h.db")
