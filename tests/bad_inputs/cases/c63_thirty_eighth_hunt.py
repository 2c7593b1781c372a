"""Issue 51 (and 52): what the thirty-eighth hunt found in `probes
--alerts`, `import tfevents` and Python's `Run.watch` and this stop fixed
(docs/reliability.md, "A thirty-eighth hunt"). scripts/brief_tables.py's
cases are tests of their own (tests/python/test_brief.py)."""

TITLE = "63. A thirty-eighth hunt: alerts, typed tfevents values, Decimal counts (issues 51, 52)"

P63 = "$BARE --store sqlite:$DIR/p63.db"
PROBED = ("rm -f $DIR/p63.db* && $PY -c \"import sys, torch, trainscope as t; "
          "m = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)); "
          "o = torch.optim.Adam(m.parameters(), lr=5.0); "
          "r = t.start_run(name='p', store=sys.argv[1], record_environment=False); "
          "r.watch(m, o, probes='economy', probes_every=1); "
          "[(o.zero_grad(), m(torch.randn(16, 4)).pow(2).mean().backward(), o.step()) "
          "for _ in range(8)]; r.finish()\" sqlite:$DIR/p63.db 2>/dev/null")


def tfevents(name, dtype, field, value):
    """An event file of one scalar tensor of `dtype` whose typed `field`
    holds `value`, then its import."""
    return ("rm -rf $DIR/" + name + " && $PY -c \"import sys; "
            "from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, types_pb2; "
            "from tensorboard.summary.writer.event_file_writer import EventFileWriter; "
            "w = EventFileWriter(sys.argv[1]); "
            "md = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData("
            "plugin_name='scalars')); "
            f"t = tensor_pb2.TensorProto(dtype=types_pb2.{dtype}, {field}=[{value}]); "
            "v = summary_pb2.Summary.Value(tag='x', tensor=t, metadata=md); "
            "w.add_event(event_pb2.Event(wall_time=1.7e9, step=1, "
            "summary=summary_pb2.Summary(value=[v]))); w.close()\" $DIR/" + name + "/run && "
            f"$BARE --store sqlite:$DIR/{name}.db import tfevents $DIR/{name} | "
            "grep -q '1 values that are no scalar number left out'")


CASES = [
    ("probes --alerts of a run without probes (was: \"no alerts\", exit 0)",
     "rm -f $DIR/n63.db* && $BARE --store sqlite:$DIR/n63.db -q watch --name n -- true && "
     "$BARE --store sqlite:$DIR/n63.db probes n --alerts 2>&1 >/dev/null | "
     "sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2; exit ${PIPESTATUS[0]}"),
    ("probes --alerts: an alert whose stored time is 1e300 (was: shown as its time)",
     f"{PROBED} && sqlite3 $DIR/p63.db \"UPDATE records SET wall_time = 1e300 WHERE kind = "
     f"'events'\" && {P63} probes p --alerts 2>&1 >/dev/null | "
     "sed -E 's/\\b[0-9a-f]{8}\\b/<id>/g' >&2; exit ${PIPESTATUS[0]}"),
    ("import tfevents: an int8 scalar whose typed field holds 300 is left out (was: the point "
     "300)", tfevents("i63", "DT_INT8", "int_val", 300), {"ok": True}),
    ("import tfevents: half bits past 16 is left out (was: the point 103.5)",
     tfevents("h63", "DT_HALF", "half_val", "0x12345678"), {"ok": True}),
    ("Python: Run.watch(fingerprint_every=Decimal('4')) is taken (was: \"not a whole number\")",
     "rm -f $DIR/d63.db* && $PY -c \"import decimal, sys, torch, trainscope as t; "
     "r = t.start_run(name='d', store=sys.argv[1], record_environment=False); "
     "r.watch(torch.nn.Linear(2, 1), fingerprint_every=decimal.Decimal('4')); r.finish()\" "
     "sqlite:$DIR/d63.db", {"ok": True}),
]
