#!/usr/bin/python3
"""Decodes a TensorBoard event file with an independent protobuf runtime
(Debian python3-protobuf) and the public TensorBoard schema, written here by
hand (tensorboard/compat/proto/event.proto, summary.proto, histogram.proto:
the fields trainscope uses, with their public numbers).

   decode_tfevents.py FILE OUT.json

Checks every record's two masked CRC-32Cs and exits non-zero on any bad one.
Writes {"file_version", "scalars": [[tag, step, value]], "histograms":
[{tag, step, min, max, num, sum, sum_squares, bucket_limit, bucket}]}."""
import json
import struct
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

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
    s = fd.message_type.add(name="Summary")
    v = s.nested_type.add(name="Value")
    v.oneof_decl.add(name="value")
    field(v, "node_name", 7, F.TYPE_STRING)
    field(v, "tag", 1, F.TYPE_STRING)
    field(v, "simple_value", 2, F.TYPE_FLOAT, oneof=0)
    field(v, "obsolete_old_style_histogram", 3, F.TYPE_BYTES, oneof=0)
    field(v, "histo", 5, F.TYPE_MESSAGE, type_name=".tensorboard.HistogramProto", oneof=0)
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


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


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


def main():
    Event = schema()
    out = {"file_version": None, "records": 0, "scalars": [], "histograms": []}
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
            if v.WhichOneof("value") == "simple_value":
                out["scalars"].append([v.tag, ev.step, v.simple_value])
            elif v.WhichOneof("value") == "histo":
                h = v.histo
                out["histograms"].append({
                    "tag": v.tag, "step": ev.step, "min": h.min, "max": h.max, "num": h.num,
                    "sum": h.sum, "sum_squares": h.sum_squares,
                    "bucket_limit": list(h.bucket_limit), "bucket": list(h.bucket)})
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


main()
