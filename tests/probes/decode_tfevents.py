#!/usr/bin/python3
"""Decodes a TensorBoard event file with an independent protobuf runtime
(Debian python3-protobuf) and the public TensorBoard schema, written here by
hand (tensorboard/compat/proto/event.proto, summary.proto, histogram.proto:
the fields trainscope uses, with their public numbers).

   decode_tfevents.py FILE OUT.json

Checks every record's two masked CRC-32Cs and exits non-zero on any bad one.
Writes {"file_version", "scalars": [[tag, step, value]], "histograms":
[{tag, step, min, max, num, sum, sum_squares, bucket_limit, bucket}],
"events": [{tag, step, wall_time, type, plugin, bits}]}: "scalars" holds the
simple_values (non-finite ones as "nan", "inf", "-inf"); "events" every scalar,
simple_value (type "float32") or one-element DT_FLOAT / DT_DOUBLE tensor (type
"float" / "double"), with its value widened to double as 16 hex digits of
its IEEE-754 bits (big-endian), the wall time likewise, and the plugin named by
its tag's metadata."""
import json
import math
import os
import struct
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

# The TFRecord framing's masked CRC-32C, as the tests' event writer computes it.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from tfevents_writer import masked  # noqa: E402

F = descriptor_pb2.FieldDescriptorProto


def field(msg, name, number, ftype, label=F.LABEL_OPTIONAL, type_name=None, oneof=None):
    f = msg.field.add(name=name, number=number, type=ftype, label=label)
    if type_name:
        f.type_name = type_name
    if oneof is not None:
        f.oneof_index = oneof
    return f


def schema():
    fd = descriptor_pb2.FileDescriptorProto(name="tb_test.proto", package="tensorboard",
                                            syntax="proto3")
    h = fd.message_type.add(name="HistogramProto")
    for i, n in enumerate(["min", "max", "num", "sum", "sum_squares"], start=1):
        field(h, n, i, F.TYPE_DOUBLE)
    for n, i in (("bucket_limit", 6), ("bucket", 7)):
        field(h, n, i, F.TYPE_DOUBLE, F.LABEL_REPEATED).options.packed = True
    shape = fd.message_type.add(name="TensorShapeProto")
    dim = shape.nested_type.add(name="Dim")
    field(dim, "size", 1, F.TYPE_INT64)
    field(dim, "name", 2, F.TYPE_STRING)
    field(shape, "dim", 2, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".tensorboard.TensorShapeProto.Dim")
    t = fd.message_type.add(name="TensorProto")
    field(t, "dtype", 1, F.TYPE_INT32)  # types.proto's DataType: 1 DT_FLOAT, 2 DT_DOUBLE
    field(t, "tensor_shape", 2, F.TYPE_MESSAGE, type_name=".tensorboard.TensorShapeProto")
    field(t, "tensor_content", 4, F.TYPE_BYTES)
    field(t, "float_val", 5, F.TYPE_FLOAT, F.LABEL_REPEATED).options.packed = True
    field(t, "double_val", 6, F.TYPE_DOUBLE, F.LABEL_REPEATED).options.packed = True
    field(t, "string_val", 8, F.TYPE_BYTES, F.LABEL_REPEATED)
    md = fd.message_type.add(name="SummaryMetadata")
    pd = md.nested_type.add(name="PluginData")
    field(pd, "plugin_name", 1, F.TYPE_STRING)
    field(pd, "content", 2, F.TYPE_BYTES)
    field(md, "plugin_data", 1, F.TYPE_MESSAGE, type_name=".tensorboard.SummaryMetadata.PluginData")
    field(md, "data_class", 4, F.TYPE_INT32)
    s = fd.message_type.add(name="Summary")
    v = s.nested_type.add(name="Value")
    v.oneof_decl.add(name="value")
    field(v, "node_name", 7, F.TYPE_STRING)
    field(v, "tag", 1, F.TYPE_STRING)
    field(v, "simple_value", 2, F.TYPE_FLOAT, oneof=0)
    field(v, "obsolete_old_style_histogram", 3, F.TYPE_BYTES, oneof=0)
    field(v, "histo", 5, F.TYPE_MESSAGE, type_name=".tensorboard.HistogramProto", oneof=0)
    field(v, "tensor", 8, F.TYPE_MESSAGE, type_name=".tensorboard.TensorProto", oneof=0)
    field(v, "metadata", 9, F.TYPE_MESSAGE, type_name=".tensorboard.SummaryMetadata")
    field(s, "value", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, ".tensorboard.Summary.Value")
    e = fd.message_type.add(name="Event")
    e.oneof_decl.add(name="what")
    field(e, "wall_time", 1, F.TYPE_DOUBLE)
    field(e, "step", 2, F.TYPE_INT64)
    field(e, "file_version", 3, F.TYPE_STRING, oneof=0)
    field(e, "graph_def", 4, F.TYPE_BYTES, oneof=0)
    field(e, "summary", 5, F.TYPE_MESSAGE, type_name=".tensorboard.Summary", oneof=0)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    desc = pool.FindMessageTypeByName("tensorboard.Event")
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4
        return message_factory.GetMessageClass(desc)
    return message_factory.MessageFactory(pool).GetPrototype(desc)


def records(blob):
    pos = 0
    while pos < len(blob):
        header = blob[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (len_crc,) = struct.unpack("<I", blob[pos + 8:pos + 12])
        if masked(header) != len_crc:
            sys.exit(f"bad length CRC at byte {pos}")
        data = blob[pos + 12:pos + 12 + length]
        (data_crc,) = struct.unpack("<I", blob[pos + 12 + length:pos + 16 + length])
        if len(data) != length or masked(data) != data_crc:
            sys.exit(f"bad data CRC at byte {pos}")
        yield data
        pos += 16 + length


def bits(x):
    return struct.pack(">d", x).hex()


def plain(x):
    return x if math.isfinite(x) else ("nan" if math.isnan(x) else ("inf" if x > 0 else "-inf"))


def tensor_scalar(t):
    """(type, value) of a one-element DT_FLOAT or DT_DOUBLE tensor, else None."""
    n = 1
    for d in t.tensor_shape.dim:
        n *= d.size
    if n != 1 or t.dtype not in (1, 2):
        return None
    kind, vals, fmt = ("float", t.float_val, "<f") if t.dtype == 1 else ("double", t.double_val, "<d")
    if len(vals) == 1:
        return kind, vals[0]
    if len(t.tensor_content) == struct.calcsize(fmt):
        return kind, struct.unpack(fmt, t.tensor_content)[0]
    return None


def main():
    Event = schema()
    out = {"file_version": None, "records": 0, "scalars": [], "histograms": [], "events": []}
    plugins = {}
    with open(sys.argv[1], "rb") as f:
        blob = f.read()
    for i, data in enumerate(records(blob)):
        ev = Event()
        ev.ParseFromString(data)
        out["records"] += 1
        if i == 0:
            out["file_version"] = ev.file_version
            continue
        for v in ev.summary.value:
            if v.HasField("metadata") and v.metadata.plugin_data.plugin_name:
                plugins[v.tag] = v.metadata.plugin_data.plugin_name
            scalar = None
            if v.WhichOneof("value") == "simple_value":
                scalar = ("float32", v.simple_value)
                out["scalars"].append([v.tag, ev.step, plain(v.simple_value)])
            elif v.WhichOneof("value") == "tensor":
                scalar = tensor_scalar(v.tensor)
            if scalar:
                out["events"].append({"tag": v.tag, "step": ev.step, "wall_time": bits(ev.wall_time),
                                      "type": scalar[0], "plugin": plugins.get(v.tag, ""),
                                      "bits": bits(scalar[1])})
            if v.WhichOneof("value") == "histo":
                h = v.histo
                out["histograms"].append({
                    "tag": v.tag, "step": ev.step, "min": h.min, "max": h.max, "num": h.num,
                    "sum": h.sum, "sum_squares": h.sum_squares,
                    "bucket_limit": list(h.bucket_limit), "bucket": list(h.bucket)})
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
