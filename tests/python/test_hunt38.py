"""Thirty-eighth hunt (docs/reliability.md): a Decimal is a number to
Run.watch() as to every other entry point; CSV of probe series and alerts
is exact, as every other CSV export. brief_tables.py's case is in
test_brief.py."""
import csv
import decimal
import io
import json

import torch

import trainscope

from hunt_support import cli, store  # noqa: F401 (store: a fixture)


def test_watch_takes_a_decimal_count_and_duration(store):
    """B-D1: "Decimal('4') is not a whole number of 0 or more"."""
    with trainscope.start_run(name="d", store="sqlite:" + store,
                              record_environment=False) as run:
        run.watch(torch.nn.Linear(2, 1), fingerprint_every=decimal.Decimal("4"),
                  monitor_interval=decimal.Decimal("0.5"))
    for bad, words in ((decimal.Decimal("4.5"), "not a whole number"),
                       (decimal.Decimal("-1"), "not a whole number")):
        with trainscope.start_run(name="e", store="sqlite:" + store,
                                  record_environment=False) as run:
            try:
                run.watch(torch.nn.Linear(2, 1), fingerprint_every=bad)
            except ValueError as e:
                assert words in str(e)
            else:
                raise AssertionError(f"{bad} taken")


def test_csv_of_probe_series_and_alerts_is_exact(store):
    """B-D3: six significant digits (a wall time off by up to 5,000 s)."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.Adam(model.parameters(), lr=5.0)
    with trainscope.start_run(name="p", store="sqlite:" + store,
                              record_environment=False) as run:
        run.watch(model, opt, probes="economy", probes_every=1)
        for step in range(12):
            opt.zero_grad()
            loss = model(torch.randn(16, 4)).pow(2).mean()
            loss.backward()
            opt.step()
            run.log({"loss": loss.item()}, step=step)
    as_json = json.loads(cli(store, "probes", "p", "--alerts", "--format", "json"))
    as_csv = list(csv.DictReader(io.StringIO(cli(store, "probes", "p", "--alerts", "--format",
                                                 "csv"))))
    assert as_json and len(as_csv) == len(as_json)
    for j, c in zip(as_json, as_csv):
        assert float(c["wall_time"]) == j["wall_time"] and c["alert"] == j["alert"]
    points = json.loads(cli(store, "probes", "p", "--format", "json"))
    rows = list(csv.DictReader(io.StringIO(cli(store, "probes", "p", "--format", "csv"))))
    assert [float(r["value"]) for r in rows] == [p["value"] for p in points]


def run_cli(store, *args):
    import subprocess
    from hunt_support import CLI
    return subprocess.run([CLI, "--store", "sqlite:" + store, *args], capture_output=True,
                          text=True)


def probed_run(store, name="p"):
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    opt = torch.optim.Adam(model.parameters(), lr=5.0)
    with trainscope.start_run(name=name, store="sqlite:" + store,
                              record_environment=False) as run:
        run.watch(model, opt, probes="economy", probes_every=1)
        for step in range(8):
            opt.zero_grad()
            model(torch.randn(16, 4)).pow(2).mean().backward()
            opt.step()


def test_an_alerts_damaged_wall_time_is_a_damaged_store(store):
    """A-D8: an events record's time of inf or 1e300 was shown as the
    alert's time (JSON null); histograms and points were checked."""
    import sqlite3
    probed_run(store)
    assert json.loads(cli(store, "probes", "p", "--alerts", "--format", "json"))
    with sqlite3.connect(store) as db:
        db.execute("UPDATE records SET wall_time = 1e300 WHERE kind = 'events'")
    out = run_cli(store, "probes", "p", "--alerts")
    assert out.returncode == 5 and "is not a time of day" in out.stderr, out.stderr


def test_alerts_of_a_run_without_probes_are_refused_as_its_probes_are(store):
    """A-D9: "no alerts", exit 0, for a run the rules never watched."""
    with trainscope.start_run(name="n", store="sqlite:" + store, record_environment=False) as r:
        r.log({"x": 1.0}, step=0)
    for args in ((), ("--alerts",), ("--alerts", "--format", "json")):
        out = run_cli(store, "probes", "n", *args)
        assert out.returncode == 3 and "has no probes" in out.stderr, (args, out.stderr)


def test_a_typed_field_value_its_dtype_cannot_hold_is_left_out(store, tmp_path):
    """A-D10: an int8 of 300, a uint8 of -1, half bits past 16 were points."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
    w = EventFileWriter(str(tmp_path / "tb" / "run"))
    md = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars"))
    cases = [("i8", types_pb2.DT_INT8, {"int_val": [300]}),
             ("u8", types_pb2.DT_UINT8, {"int_val": [-1]}),
             ("half", types_pb2.DT_HALF, {"half_val": [0x12345678]}),
             ("ok", types_pb2.DT_INT8, {"int_val": [-128]})]
    for tag, dtype, field in cases:
        t = tensor_pb2.TensorProto(dtype=dtype, **field)
        value = summary_pb2.Summary.Value(tag=tag, tensor=t, metadata=md)
        w.add_event(event_pb2.Event(wall_time=1.7e9, step=1,
                                    summary=summary_pb2.Summary(value=[value])))
    w.close()
    said = cli(store, "import", "tfevents", str(tmp_path / "tb"))
    assert "3 values that are no scalar number left out" in said, said
    got = {m["key"]: m["last"] for m in json.loads(cli(store, "--json", "runs", "show",
                                                         "run"))["metric_summaries"]}
    assert got == {"ok": -128.0}
