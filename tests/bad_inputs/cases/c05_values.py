"""Issue 29, item 5: every config key has a range, checked before anything
runs; a value libtorch would refuse (with a stack trace) is refused first,
in one line naming the key, the value and the range; a check across keys
blames the key that is wrong; nothing is recorded for a config that cannot
train."""
import os
import struct

TITLE = "5. No value reaches libtorch unchecked"

T = "$TS train $DIR/good.yaml --no-progress"
IDX = "--set data.dataset=mnist --set data.path=$DIR/idx_eight"

CASES = [
    ("Adam's beta1 of 1", f"{T} --set optimizer.beta1=1"),
    ("Adam's beta1 above 1", f"{T} --set optimizer.beta1=1.5"),
    ("a negative beta2", f"{T} --set optimizer.beta2=-1"),
    ("a learning rate that is not a number", f"{T} --set optimizer.lr=nan"),
    ("RMSprop's alpha above 1", f"{T} --set optimizer.alpha=2"),
    ("a crop padding beyond any image", f"{T} --set data.crop_padding=100000"),
    ("a crop padding larger than the synthetic images", f"{T} --set data.crop_padding=29"),
    ("a crop padding larger than the dataset's images", f"{T} {IDX} --set data.crop_padding=29"),
    ("2^40 synthetic samples", f"{T} --set data.synthetic.size=1099511627776"),
    ("synthetic images of 100000x100000",
     f"{T} --set data.synthetic.height=100000 --set data.synthetic.width=100000"),
    ("synthetic images within range that do not fit in memory (4 GB allowed)",
     f"ulimit -v 4000000 && {T} --set data.synthetic.height=65536 "
     "--set data.synthetic.width=65536"),
    ("the largest int64 as batch size", f"{T} --set train.batch_size=9223372036854775807"),
    ("a batch size beyond int64", f"{T} --set train.batch_size=9223372036854775808"),
    ("a batch larger than the synthetic training set", f"{T} --set train.batch_size=300"),
    ("a batch larger than the dataset's training set", f"{T} {IDX}"),
    ("a validation split that leaves fewer samples than a batch",
     f"{T} --set data.val_fraction=0.999"),
    ("milestones that go back", f"{T} --set schedule.name=multistep --set schedule.milestones=[3,1]"),
    ("thousands of threads", f"{T} --set compute.threads=5000"),
    ("a sampling interval below 0.05 s", f"{T} --set monitor.interval_s=0.01"),
    ("an empty experiment", f"{T} --set run.experiment="),
    ("probes that select no layer", f"{T} --set probes=standard --set probes.layers=no.such.layer"),
    ("a batch multiple beyond any batch", "$TS tune $DIR/good.yaml --batch-multiples 1e30"),
    ("--code naming nothing", f"{T} --code $DIR/no-such-code"),
]


def fixtures(d, run):
    """An MNIST-format dataset of 8 training and 8 test images of 28x28."""
    os.makedirs(f"{d}/idx_eight", exist_ok=True)
    for prefix in ("train", "t10k"):
        with open(f"{d}/idx_eight/{prefix}-images-idx3-ubyte", "wb") as f:
            f.write(struct.pack(">IIII", 0x803, 8, 28, 28) + bytes(range(8)) * 784)
        with open(f"{d}/idx_eight/{prefix}-labels-idx1-ubyte", "wb") as f:
            f.write(struct.pack(">II", 0x801, 8) + bytes(range(8)))
