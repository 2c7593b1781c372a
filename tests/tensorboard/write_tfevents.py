#!/usr/bin/python3
"""Writes a TensorBoard log folder as other programs do, with an independent
protobuf runtime (Debian python3-protobuf), the public TensorBoard schema
written here by hand (event.proto, summary.proto, tensor.proto, the fields
used, with their public numbers) and TFRecord framing with masked CRC-32C
computed here: what `import tfevents` must read without trainscope's writer.

   write_tfevents.py OUT_DIR EXPECTED.json

The folder holds two runs, as Keras's TensorBoard callback lays them out:
  keras/train/       two files: TF2-style scalars (DT_FLOAT tensors, values
                     in float_val, the scalars plugin's metadata on a tag's
                     first value only; DT_DOUBLE in tensor_content; a [1]
                     tensor), TF1 simple_values, and values that are not
                     scalars (a histograms-plugin tensor, a string tensor)
  keras/validation/  simple_values, a HistogramProto and a float tensor
                     without metadata (not a scalar to TensorBoard)
and a folder without event files. EXPECTED.json holds, per run folder, every
scalar the files hold: tag -> [[step, wall-time bits, value bits]] (value
widened to double, bits as 16 hex digits), how many values are not scalars,
and the first and last wall time."""
import json
import os
import struct
import sys

# The same hand-written public schema and CRC as the decoder's.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "probes"))
from decode_tfevents import masked, schema  # noqa: E402

Event = schema()


def bits(x):
    return struct.pack(">d", x).hex()


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


class File:
    """One event file; `expected` gathers what a reader must find in it."""

    def __init__(self, folder, name, run, start):
        os.makedirs(folder, exist_ok=True)
        self.out = open(os.path.join(folder, name), "wb")
        self.run = run
        self.described = set()
        ev = Event(wall_time=start, file_version="brain.Event:2")
        self.record(ev)
        self.note_time(start)

    def record(self, ev):
        data = ev.SerializeToString()
        header = struct.pack("<Q", len(data))
        self.out.write(header + struct.pack("<I", masked(header)) + data +
                       struct.pack("<I", masked(data)))

    def note_time(self, t):
        self.run["start"] = min(self.run.get("start", t), t)
        self.run["end"] = max(self.run.get("end", t), t)

    def value(self, step, wall, tag, expected=None, plugin=None, **kw):
        ev = Event(wall_time=wall, step=step)
        v = ev.summary.value.add(tag=tag, **kw)
        if plugin and tag not in self.described:
            v.metadata.plugin_data.plugin_name = plugin
            self.described.add(tag)
        self.record(ev)
        self.note_time(wall)
        if expected is None:
            self.run["skipped"] = self.run.get("skipped", 0) + 1
        else:
            self.run["points"].setdefault(tag, []).append([step, wall, expected])


def tensor(dtype, dims=(), **kw):
    t = {"dtype": dtype, "tensor_shape": {"dim": [{"size": d} for d in dims]}}
    t.update(kw)
    return t


def write_train(root, runs):
    run = runs.setdefault("keras/train", {"points": {}})
    folder = os.path.join(root, "keras", "train")
    a = File(folder, "events.out.tfevents.1700000000.hostA.101.0.v2", run, 1700000000.25)
    for step in range(10):
        wall = 1700000000.5 + step * 1.375
        loss = 2.0 / (step + 1) + 0.1
        a.value(step, wall, "epoch_loss", f32(loss), plugin="scalars",
                tensor=tensor(1, float_val=[loss]))
        lr = 0.1 * 0.9 ** step
        a.value(step, wall, "lr", lr, plugin="scalars",
                tensor=tensor(2, tensor_content=struct.pack("<d", lr)))
        acc = 0.5 + step / 30
        a.value(step, wall, "legacy/acc", f32(acc), simple_value=acc)
        a.value(step, wall, "weights", None, plugin="histograms",
                tensor=tensor(2, (2, 3), double_val=[0, 1, 2, 1, 2, 3]))
        a.value(step, wall, "note", None, plugin="text",
                tensor=tensor(7, string_val=[b"epoch %d" % step]))
    # A second file of the same run (a restart): no metadata this time.
    b = File(folder, "events.out.tfevents.1700000500.hostA.102.0.v2", run, 1700000500.0)
    for step in range(10, 15):
        wall = 1700000500.125 + step
        loss = 2.0 / (step + 1) + 0.1
        b.value(step, wall, "epoch_loss", f32(loss), tensor=tensor(1, (1,),
                tensor_content=struct.pack("<f", loss)))


def write_validation(root, runs):
    run = runs.setdefault("keras/validation", {"points": {}})
    folder = os.path.join(root, "keras", "validation")
    c = File(folder, "events.out.tfevents.1700000001.hostA.101.1.v2", run, 1700000001.0)
    for step in range(0, 10, 3):
        wall = 1700000002.0 + step
        loss = 1.0 / (step + 2) ** 0.5
        c.value(step, wall, "epoch_loss", f32(loss), simple_value=loss)
        c.value(step, wall, "dist", None, histo={"min": 0, "max": 1, "num": 2,
                                                 "bucket_limit": [0.5, 1], "bucket": [1, 1]})
        # A tensor whose tag no plugin claims: TensorBoard does not show it
        # as a scalar, nor does the import read it as one.
        c.value(step, wall, "raw", None, tensor=tensor(1, float_val=[loss]))


def main():
    root = sys.argv[1]
    runs = {}
    write_train(root, runs)
    write_validation(root, runs)
    os.makedirs(os.path.join(root, "empty"), exist_ok=True)
    with open(os.path.join(root, "notes.txt"), "w") as f:
        f.write("not an event file\n")
    for run in runs.values():
        run.setdefault("skipped", 0)
        run["start"], run["end"] = bits(run["start"]), bits(run["end"])
        for points in run["points"].values():
            for p in points:
                p[1], p[2] = bits(p[1]), bits(p[2])
    with open(sys.argv[2], "w") as f:
        json.dump(runs, f, indent=1)


main()
