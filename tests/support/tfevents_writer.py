"""TensorBoard event files written byte by byte, as any writer could make
them (trainscope's own writer refuses what some of these hold: a step that
goes back, a negative step, an empty tag). Shared by the bad-input cases
(tests/bad_inputs/cases/c20_one_rule.py, c29) and the Python tests
(tests/python/test_accept.py)."""
import os
import struct


def _crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(data):
    """TFRecord's masked CRC-32C of DATA (also what tests/probes/decode_tfevents.py checks)."""
    crc = _crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def _varint(n):
    n &= (1 << 64) - 1  # an int64 as protobuf writes it: a negative one in 10 bytes
    out = b""
    while True:
        out += bytes([(n & 0x7F) | (0x80 if n > 0x7F else 0)])
        n >>= 7
        if not n:
            return out


def _field(number, kind, payload):
    return _varint(number << 3 | kind) + payload


def _ld(number, payload):
    return _field(number, 2, _varint(len(payload)) + payload)


def _tensor(value, dims, content=None):
    """A scalars-plugin Summary.Value's metadata and a float TensorProto of
    shape DIMS (any int64s) holding VALUE once, as tf.summary.scalar writes
    (and CONTENT, a float, as its tensor_content too when given)."""
    shape = b"".join(_ld(2, _field(1, 0, _varint(d))) for d in dims)
    proto = _field(1, 0, _varint(1)) + _ld(2, shape)
    if content is not None:
        proto += _ld(4, struct.pack("<f", content))
    proto += _ld(5, struct.pack("<f", value))
    return _ld(9, _ld(1, _ld(1, b"scalars"))) + _ld(8, proto)


def _event(step, tag, value, wall=1.7e9, dims=None, content=None):
    """A TensorBoard Event: wall_time, step, one simple_value scalar (a
    tag of bytes is written as it is: not UTF-8, say); with DIMS, the value
    as a scalars-plugin tensor of that shape instead."""
    tag = tag if isinstance(tag, bytes) else tag.encode()
    body = (_field(2, 5, struct.pack("<f", value)) if dims is None
            else _tensor(value, dims, content))
    v = _field(1, 2, _varint(len(tag)) + tag) + body
    summary = _field(1, 2, _varint(len(v)) + v)
    return (_field(1, 1, struct.pack("<d", wall)) + _field(2, 0, _varint(step)) +
            _field(5, 2, _varint(len(summary)) + summary))


def write_event_file(path, scalars):
    """An event file at PATH of (step, tag, value), (step, tag, value,
    wall_time), (step, tag, value, wall_time, dims) or (..., dims, content)
    scalars, framed as TFRecords."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        for scalar in scalars:
            data = _event(*scalar)
            head = struct.pack("<Q", len(data))
            f.write(head + struct.pack("<I", masked(head)) + data +
                    struct.pack("<I", masked(data)))


def write_events(folder, scalars):
    """write_event_file as FOLDER/events.out.tfevents.0.fixture."""
    write_event_file(os.path.join(folder, "events.out.tfevents.0.fixture"), scalars)
