"""Data-parallel training (`train --nproc N`, issue 32): a world the batch
cannot feed, a backend this build has not, a rank started by hand with the
wrong world or no rendezvous, srun tasks that are not the world, a
data-parallel run rerun in one process."""

TITLE = "16. Data-parallel training"

CASES = [
    ("zero ranks", "$TS train $DIR/good.yaml --nproc 0"),
    ("more ranks than samples in a batch", "$TS train $DIR/good.yaml --nproc 65"),
    ("the GPU backend on this CPU build", "$TS train $DIR/good.yaml --nproc 2 --set dist.backend=nccl"),
    ("a rank whose world size is not the config's",
     "TRAINSCOPE_DIST_RANK=0 TRAINSCOPE_DIST_WORLD_SIZE=3 TRAINSCOPE_DIST_PORT=1 "
     "$TS train $DIR/good.yaml --nproc 2"),
    ("a rank variable that is not a number",
     "TRAINSCOPE_DIST_RANK=first TRAINSCOPE_DIST_WORLD_SIZE=2 TRAINSCOPE_DIST_PORT=1 "
     "$TS train $DIR/good.yaml --nproc 2"),
    ("a rank whose rendezvous is not there",
     "TRAINSCOPE_DIST_RANK=1 TRAINSCOPE_DIST_WORLD_SIZE=2 TRAINSCOPE_DIST_PORT=1 "
     "$TS train $DIR/good.yaml --nproc 2 --set dist.timeout_s=1"),
    ("a rendezvous host that does not resolve",
     "TRAINSCOPE_DIST_RANK=1 TRAINSCOPE_DIST_WORLD_SIZE=2 TRAINSCOPE_DIST_PORT=29500 "
     "TRAINSCOPE_DIST_ADDR=no-such-host.invalid $TS train $DIR/good.yaml --nproc 2"),
    ("srun tasks that are not the config's world size",
     "SLURM_PROCID=0 SLURM_NTASKS=3 SLURM_JOB_NODELIST=localhost "
     "$TS train $DIR/good.yaml --nproc 2"),
    ("a Slurm node list that cannot be read",
     "SLURM_PROCID=0 SLURM_NTASKS=2 SLURM_JOB_NODELIST='n[01-' "
     "$TS train $DIR/good.yaml --nproc 2"),
    ("resuming a data-parallel run that does not exist",
     "$TS train $DIR/good.yaml --nproc 2 --resume nosuchrun"),
]


def fixtures(d, run):
    pass
