#!/usr/bin/env python3
"""A PostgreSQL server for tests: Debian's postgresql (initdb, pg_ctl) with
its data, socket and log in a folder of its own under the system temp dir
(named in DIR/home), listening on a free loopback port; nothing
system-wide is touched. Password authentication
(scram-sha-256) for user `trainscope`, so that tests can give a wrong
password too.

  pg_server.py start DIR [--durable]   prints the server's URI and writes it
                           to DIR/uri (--durable: fsync on, as a real server;
                           tests run without it)
  pg_server.py stop DIR
  pg_server.py createdb DIR NAME   prints the URI of a new empty database
  pg_server.py psql DIR NAME ARGS...  runs psql on database NAME as the test
                           user (-f FILE loads a dump, -At -c SQL queries)

PostgreSQL refuses to run as root: as root, the server runs as the
`postgres` user that Debian's package creates.
"""
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile

USER = "trainscope"
PASSWORD = "trainscope-test-password"


def bin_dir():
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        sys.exit("pg_server: initdb not found; install Debian's postgresql (scripts/install-deps.sh)")
    return os.path.dirname(found[-1])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def as_server_user(cmd):
    """The command as the user the server runs as (not root)."""
    if os.getuid() != 0:
        return cmd
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] + cmd


def uri(d, db="postgres", password=PASSWORD):
    with open(os.path.join(d, "port")) as f:
        port = f.read().strip()
    return f"postgresql://{USER}:{password}@127.0.0.1:{port}/{db}"


def start(d, durable=False):
    """The server's own files (data, socket, log) go to a new folder under
    the system temp dir, which the `postgres` user can reach wherever DIR is
    (a clone under /root, say); DIR holds its port, URI and that folder's
    name."""
    d = os.path.abspath(d)
    stop(d, quiet=True)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    home = tempfile.mkdtemp(prefix="trainscope-pg-")
    with open(os.path.join(d, "home"), "w") as f:
        f.write(home)
    data = os.path.join(home, "data")
    pwfile = os.path.join(home, "pw")
    with open(pwfile, "w") as f:
        f.write(PASSWORD + "\n")
    if os.getuid() == 0:
        pg = pwd.getpwnam("postgres")
        for p in (home, pwfile):
            os.chown(p, pg.pw_uid, pg.pw_gid)
    b = bin_dir()
    subprocess.run(as_server_user([f"{b}/initdb", "-D", data, "-U", USER, f"--pwfile={pwfile}",
                                   "--auth=scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8"]),
                   check=True, stdout=subprocess.DEVNULL)
    port = free_port()
    with open(os.path.join(d, "port"), "w") as f:
        f.write(str(port))
    opts = (f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={home} "
            f"-c fsync={'on' if durable else 'off'} -c max_connections=200 "
            "-c shared_buffers=128MB")
    subprocess.run(as_server_user([f"{b}/pg_ctl", "-D", data, "-l", os.path.join(home, "log"),
                                   "-o", opts, "-w", "-t", "60", "start"]),
                   check=True, stdout=subprocess.DEVNULL)
    u = uri(d)
    with open(os.path.join(d, "uri"), "w") as f:
        f.write(u + "\n")
    return u


def stop(d, quiet=False):
    """Stops the server and removes its files."""
    try:
        with open(os.path.join(os.path.abspath(d), "home")) as f:
            home = f.read().strip()
    except OSError:
        return 0
    data = os.path.join(home, "data")
    code = 0
    if os.path.exists(os.path.join(data, "postmaster.pid")):
        code = subprocess.run(as_server_user([f"{bin_dir()}/pg_ctl", "-D", data, "-m", "fast",
                                              "-w", "stop"]), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL if quiet else None).returncode
    shutil.rmtree(home, ignore_errors=True)
    return code


def createdb(d, name):
    """A new empty database, through psql as the test user."""
    env = dict(os.environ, PGPASSWORD=PASSWORD)
    with open(os.path.join(d, "port")) as f:
        port = f.read().strip()
    subprocess.run(["psql", "-q", "-h", "127.0.0.1", "-p", port, "-U", USER, "-d", "postgres",
                    "-c", f'CREATE DATABASE "{name}"'], env=env, check=True)
    return uri(d, name)


def psql(d, name, args):
    """psql on database NAME as the test user; its exit code."""
    env = dict(os.environ, PGPASSWORD=PASSWORD)
    with open(os.path.join(d, "port")) as f:
        port = f.read().strip()
    return subprocess.run(["psql", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", port,
                           "-U", USER, "-d", name] + args, env=env).returncode


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "start":
        print(start(sys.argv[2], "--durable" in sys.argv[3:]))
        return 0
    if len(sys.argv) >= 3 and sys.argv[1] == "stop":
        return stop(sys.argv[2])
    if len(sys.argv) >= 4 and sys.argv[1] == "createdb":
        print(createdb(sys.argv[2], sys.argv[3]))
        return 0
    if len(sys.argv) >= 4 and sys.argv[1] == "psql":
        return psql(sys.argv[2], sys.argv[3], sys.argv[4:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
