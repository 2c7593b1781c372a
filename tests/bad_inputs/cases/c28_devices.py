"""Issue 48: compute.device and the GPU settings. A device that is not a
device, a GPU asked of a machine without one (CI's), and the TF32 and
determinism switches with values they do not take. On a GPU machine
scripts/gpu-check.sh checks cuda:N past the GPUs there (device_test)."""

TITLE = "28. Devices (issue 48)"

CASES = [
    ("compute.device gpu (not a device name)",
     "$TS train $DIR/good.yaml --set compute.device=gpu"),
    ("compute.device cuda:01 (an index with a leading zero)",
     "$TS train $DIR/good.yaml --set compute.device=cuda:01"),
    ("compute.device cuda:1024 (past the largest index)",
     "$TS train $DIR/good.yaml --set compute.device=cuda:1024"),
    ("compute.device cuda on a machine without a GPU: one line, nothing recorded",
     "$BARE --store sqlite:$DIR/c28.db train $DIR/good.yaml --set compute.device=cuda; rc=$?; "
     "$BARE --store sqlite:$DIR/c28.db runs list 2>&1 | grep -qv '^no runs match' && echo recorded >&2; exit $rc"),
    ("compute.tf32 maybe",
     "$TS train $DIR/good.yaml --set compute.tf32=maybe"),
    ("determinism.warn_only sometimes",
     "$TS train $DIR/good.yaml --set determinism.warn_only=sometimes"),
]
CASES += [
    ("data-parallel ranks on a GPU (NCCL is not in this build yet)",
     "$TS train $DIR/good.yaml --nproc 2 --set dist.nproc=2 --set compute.device=cuda"),
    ("compute.autocast with float64 weights",
     "$TS train $DIR/good.yaml --set compute.autocast=bf16 --set compute.dtype=float64"),
    ("compute.autocast fp8 (not a type it lowers to)",
     "$TS train $DIR/good.yaml --set compute.autocast=fp8"),
]
CASES += [
    ("the per-layer profiler on a GPU (it times layers on the host)",
     "$TS profile $DIR/good.yaml --set compute.device=cuda"),
]
