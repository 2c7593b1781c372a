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
