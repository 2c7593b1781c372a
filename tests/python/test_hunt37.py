"""Thirty-seventh hunt (docs/reliability.md): what a run accepts is one rule
at every entry point (tfevents' dtypes, a JSON param past the double range,
a hexadecimal setting, a framework's hyperparameter key, a non-UTF-8
argument), -0.0 keeps its sign in every reader, and a trace whose steps end
past the year 9999 is refused. The MLflow cases are in test_mlflow.py."""
import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from hunt_support import CLI, cli, show, store  # noqa: F401 (store: a fixture)
from trainscope._params import flat_params


def run_cli(store, *args):
    return subprocess.run([CLI, "--store", "sqlite:" + store, *args], capture_output=True,
                          text=True)


def test_a_trace_whose_steps_end_past_the_year_9999_is_refused(store, tmp_path):
    """A-D2: taken; every reader then showed the run's end as none."""
    trace = tmp_path / "k.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 3e17,
         "pid": 1, "tid": 1},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 2, "dur": 3, "pid": 1, "tid": 1}]}))
    out = run_cli(store, "profile", "import", str(trace))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "ends past the year 9999; nothing was imported" in out.stderr
    assert json.loads(cli(store, "--json", "runs", "list")) == []


def test_tfevents_scalars_of_every_real_dtype_are_points(store, tmp_path):
    """B-D3: half, integer and bool scalars (TensorBoard reads each as a
    number) were left out as "non-scalar"."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    from tensorboard.util import tensor_util
    values = {"f32": np.float32(0.5), "f16": np.float16(2.5), "f16sub": np.float16(6e-8),
              "i64": np.int64(-7), "i32": np.int32(2 ** 31 - 1), "i8": np.int8(-128),
              "u8": np.uint8(255), "u16": np.uint16(65535), "u32": np.uint32(2 ** 32 - 1),
              "u64": np.uint64(2 ** 53), "b": np.bool_(True), "i16": np.int16(-300)}
    w = EventFileWriter(str(tmp_path / "tb" / "run"))
    md = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    for tag, v in values.items():
        value = summary_pb2.Summary.Value(tag=tag, tensor=tensor_util.make_tensor_proto(v),
                                          metadata=md)
        w.add_event(event_pb2.Event(wall_time=1.7e9, step=1,
                                    summary=summary_pb2.Summary(value=[value])))
    w.close()
    said = cli(store, "import", "tfevents", str(tmp_path / "tb"))
    assert "left out" not in said, said
    got = {m["key"]: m["last"] for m in show(store, "run")["metric_summaries"]}
    assert got == {k: float(v) for k, v in values.items()}


def test_a_json_param_past_the_double_range_is_kept_as_written(store):
    """B-D4: the line was refused as "not a JSON value"; the text form and
    Python keep such a param."""
    script = "import json; print(json.dumps({'params': {'seed': 10**400, 'f': 1e-400}}))"
    cli(store, "-q", "watch", "--name", "p", "--", sys.executable, "-c", script)
    params = show(store, "p")["params"]
    assert params["seed"] == "1" + "0" * 400 and params["f"] == "0.0"


@pytest.mark.parametrize("value", ["0x10", "0x1p-3", "0X1.8p1"])
def test_a_hexadecimal_setting_is_refused_as_every_other_reader_refuses_it(store, value):
    """B-D5: taken as 16, 0.125, 3 where integers and Python's config()
    refuse it."""
    demo = os.path.join(os.path.dirname(__file__), "..", "..", "configs", "demo.yaml")
    out = run_cli(store, "config", "show", demo, "--set", f"optimizer.lr={value}")
    assert out.returncode == 2 and "expected a number" in out.stderr, out.stderr


def test_minus_zero_keeps_its_sign_in_every_summary(store):
    """B-D6: SQLite wrote the summaries' -0.0 as 0; points kept it."""
    import trainscope
    with trainscope.start_run(name="z", store="sqlite:" + store,
                              record_environment=False) as run:
        run.log({"x": 1.0, "y": 0.0}, step=0)
        run.log({"x": -0.0, "y": -0.0}, step=1)
    got = {m["key"]: m for m in show(store, "z")["metric_summaries"]}
    assert math.copysign(1, got["x"]["last"]) == -1 and got["x"]["max"] == 1.0
    assert math.copysign(1, got["x"]["min"]) == -1
    assert math.copysign(1, got["y"]["max"]) == 1  # +0.0 was there too
    listed = json.loads(cli(store, "runs", "list", "-c", "name,metrics.x", "--format", "json"))
    assert math.copysign(1, listed["runs"][0]["metrics.x"]) == -1


@pytest.mark.parametrize("key", ["rtl\u202ekey", "a\u2066b", "sur\ud800"])
def test_a_hyperparameter_key_no_param_takes_is_left_out_with_a_warning(key):
    """B-D1: a bidi control or a lone surrogate in a key ended the fit."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = flat_params({key: 1, "ok": 2})
    assert out == {"ok": 2}
    assert "left out" in " ".join(str(w.message) for w in caught)


def test_a_hyperparameter_value_that_is_no_utf8_is_made_readable():
    """B-D1: a value from a non-UTF-8 argv ended the fit."""
    assert flat_params({"v": "a\udcffb"}) == {"v": "a\ufffdb"}


def test_a_script_given_a_non_utf8_argument_records_its_run(store, tmp_path):
    """B-D2: start_run ended in pybind11's TypeError."""
    code = ("import sys, trainscope as t; "
            f"t.start_run(name='x', store='sqlite:{store}', record_environment=False).finish()")
    done = subprocess.run([sys.executable.encode(), b"-c", code.encode(), b"caf\xe9"],
                          capture_output=True)
    assert done.returncode == 0, done.stderr.decode()[-500:]
    assert "'caf\ufffd'" in show(store, "x")["command_line"]
