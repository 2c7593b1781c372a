"""Thirty-second hunt, tester B: the Python package's defects B-D1, B-D2
and B-D3 (docs/reliability.md), read back with the CLI as a user would."""
import os
import shlex
import signal
import subprocess
import sys

import numpy as np
import pytest

import trainscope

from hunt_support import cli, show, store  # noqa: F401 (store: a fixture)


def script(store, body):
    """Runs `body` after `r = start_run(name='s')` in a new interpreter;
    its exit status."""
    code = ("import os, signal, trainscope\n"
            f"r = trainscope.start_run(name='s', store={('sqlite:' + store)!r}, "
            "record_environment=False)\n" + body)
    return subprocess.run([sys.executable, "-c", code], env=os.environ).returncode


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_that_ends_the_script_ends_its_run_killed_with_every_point(store, signum):
    """B-D1: SIGTERM (Slurm, Kubernetes, a stopping study) left the run
    running, reaped killed later, and its last 100 points lost."""
    rc = script(store, "for i in range(1, 101):\n    r.log({'loss': 1.0 / i}, step=i)\n"
                f"os.kill(os.getpid(), {int(signum)})\n")
    assert rc == -signum  # the signal still ends the process
    run = show(store, "s")
    assert run["status"] == "killed"
    loss = {m["key"]: m for m in run["metric_summaries"]}["loss"]
    assert loss["count"] == 100 and loss["last_step"] == 100


def test_a_handler_of_the_scripts_own_is_left_alone(store):
    rc = script(store, "import sys\nsignal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
                "r.log({'loss': 1.0}, step=1)\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert rc == 7
    assert show(store, "s")["status"] == "failed"  # its handler's sys.exit(7)


def test_a_param_given_again_as_the_same_number_is_nothing_new(store):
    """B-D2: 1 then 1.0 (or a 0-d float tensor) was refused as another
    value, where --filter and stats --by take them as one."""
    import torch
    with trainscope.start_run(name="p", store="sqlite:" + store, config={"e": 1, "lr": 0.1},
                              record_environment=False) as run:
        run.log_params({"e": 1.0, "lr": torch.tensor(0.1, dtype=torch.float64)})
        with pytest.raises(ValueError, match="already '1'; params are immutable"):
            run.log_params({"e": 2})
    assert show(store, "p")["params"]["e"] == "1"


def test_a_watched_programs_param_line_may_repeat_a_number_written_otherwise(store):
    line = "trainscope: param lr=0.10 e=1.0"
    cli(store, "-q", "watch", "--name", "w", "--param", "lr=0.1", "--param", "e=1", "--", "sh",
        "-c", f"echo {shlex.quote(line)}; echo 'trainscope: step=1 a=1'")
    tags = show(store, "w")["tags"]
    assert tags.get("metric_lines.malformed", "0") == "0", tags


def test_a_masked_value_is_refused_not_recorded_as_nan(store):
    """B-D3: numpy.ma.masked was recorded as NaN with NumPy's warning."""
    with trainscope.start_run(name="m", store="sqlite:" + store,
                              record_environment=False) as run:
        with pytest.raises(ValueError, match="masked"):
            run.log({"ma": np.ma.masked}, step=1)
        run.log({"ok": np.ma.masked_array([2.0], mask=[False])}, step=1)
    assert [m["key"] for m in show(store, "m")["metric_summaries"]] == ["ok"]


def test_the_recorded_command_line_runs_what_ran(store):
    """A-D1: the command was recorded as its words joined by spaces."""
    with trainscope.start_run(name="c", store="sqlite:" + store,
                              record_environment=False):
        pass
    words = shlex.split(show(store, "c")["command_line"])
    assert words[0] == sys.executable
