#!/usr/bin/env python3
"""A single-node Slurm cluster in a folder, for tests: munge, slurmctld and
slurmd (Debian's slurm-wlm and munge) with every file under DIR, on free
loopback ports; nothing system-wide is touched.

  slurm_cluster.py start DIR   prints the path of DIR/slurm.conf (SLURM_CONF)
  slurm_cluster.py stop DIR
"""
import os
import signal
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def conf(d):
    mem_mib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20 - 1024
    ctld, slurmd = free_port(), free_port()
    return f"""ClusterName=trainscope-test
SlurmctldHost=localhost
SlurmUser=root
SlurmctldPort={ctld}
SlurmdPort={slurmd}
AuthType=auth/munge
AuthInfo=socket={d}/munge.sock
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
KillWait=10
NodeName=localhost CPUs={os.cpu_count()} RealMemory={max(1024, mem_mib)} State=UNKNOWN
PartitionName=main Nodes=localhost Default=YES MaxTime=INFINITE State=UP
"""


def start(d):
    d = os.path.abspath(d)
    for sub in ("state", "spool"):
        os.makedirs(os.path.join(d, sub), exist_ok=True)
    key = os.path.join(d, "munge.key")
    with open(key, "wb") as f:
        f.write(os.urandom(1024))
    os.chmod(key, 0o400)
    subprocess.run(["munged", "--force", f"--socket={d}/munge.sock", f"--key-file={key}",
                    f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log",
                    f"--seed-file={d}/munge.seed"], check=True)
    path = os.path.join(d, "slurm.conf")
    with open(path, "w") as f:
        f.write(conf(d))
    env = dict(os.environ, SLURM_CONF=path)
    subprocess.run(["slurmctld"], env=env, check=True)  # daemonises, pid file in d
    subprocess.run(["slurmd"], env=env, check=True)
    for _ in range(300):
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True)
        if out.stdout.strip() == "idle":
            print(path)
            return 0
        time.sleep(0.1)
    sys.exit(f"slurm_cluster: the node never became idle; see {d}/slurmctld.log, {d}/slurmd.log")


def stop(d):
    for name in ("slurmd", "slurmctld", "munged"):
        try:
            with open(os.path.join(d, f"{name}.pid")) as f:
                os.kill(int(f.read().split()[0]), signal.SIGTERM)
        except (OSError, ValueError):
            pass
    time.sleep(0.5)
    return 0


if __name__ == "__main__":
    what, folder = sys.argv[1], sys.argv[2]
    sys.exit(start(folder) if what == "start" else stop(folder))
