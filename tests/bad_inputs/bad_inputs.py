#!/usr/bin/env python3
"""Bad inputs and faults, each with the exact message and exit code.

docs/bad-inputs.md is generated from the classes of cases (EARLIER and
cases/*.py) by `--write` and checked by the
default mode (ctest BadInputs.EveryDocumentedMessageAndExitCode): every row of
the document is run against the real trainscope executable on a real store,
and its exit code and stderr must be exactly what the document says.

The PostgreSQL cases run against a server this script starts in its
fixture folder (tests/support/pg_server.py).

usage: bad_inputs.py TRAINSCOPE DOC [--write]
"""
import contextlib
import importlib.util
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import pg_server  # noqa: E402

# Classes of bad input, each a list of (what is wrong, command[, options]).
# $TS is trainscope on the fixture store $DIR/t.db; $DIR is the fixture
# folder (see make_fixtures); $PGHOST the host:port of its PostgreSQL server,
# whose password the commands find in $PGPASSWORD. A command is run by bash:
# it may prepare its input first (`cp ... && $TS ...`). Options:
#   {"ok": True}  the command must succeed (exit 0), its stderr a note of at
#                 most one line (e.g. which of two meanings was taken).
# The classes of later issues live in cases/*.py, one module per class, each
# with TITLE, CASES and an optional fixtures(d, run) (see cases/README.md).
EARLIER = [
    ("Commands and arguments", [
        ("a mistyped command", "$TS trian $DIR/good.yaml"),
        ("an unknown option", "$TS runs list --colour"),
        ("a missing argument", "$TS runs show"),
        ("a negative limit", "$TS runs list --limit -1"),
        ("a limit that is not a number", "$TS runs list --limit many"),
        ("an unknown output format", "$TS runs list --format xml"),
        ("a filter cut short", "$TS runs list --filter 'metrics.acc >'"),
        ("a filter with unquoted text", "$TS runs list --filter \"params.optimizer.name = adam\""),
        ("a filter on an unknown field", "$TS runs list --filter \"colour = 'red'\""),
        ("a sort direction that does not exist", "$TS runs list --sort 'start_time sideways'"),
        ("an unknown run", "$TS runs show nosuchrun"),
        ("a name two runs share", "$TS runs show twin"),
        ("deleting without --yes", "$TS runs delete lm"),
        ("a metric the run does not have", "$TS metrics lm no/such/key"),
        ("plotting a metric no run has", "$TS plot lm no/such/key -o $DIR/p.svg"),
        ("exporting runs no filter matches", "$TS runs export --filter \"name = 'nobody'\""),
        ("a run's operator table without a profile", "$TS profile show lm --ops"),
        ("statistics of a metric no run has", "$TS stats no/such/key"),
    ]),
    ("The store", [
        ("a store file that is not a database", "$BARE --store sqlite:$DIR/notadb.db runs list"),
        ("a store in a folder that does not exist",
         "$BARE --store sqlite:$DIR/nope/t.db numerics logmap --steps 5"),
        ("reading a store that does not exist", "$BARE --store sqlite:$DIR/absent.db runs list"),
        ("a store URI with an unknown scheme", "$BARE --store mongodb://host/db runs list"),
        ("a store from a newer trainscope", "$BARE --store sqlite:$DIR/newer.db runs list"),
    ]),
    ("A PostgreSQL store", [
        ("a PostgreSQL server that is not there",
         "$BARE --store postgresql://trainscope@127.0.0.1:1/ts runs list"),
        ("a wrong PostgreSQL password",
         "$BARE --store postgresql://trainscope:wrong@$PGHOST/postgres runs list"),
        ("a PostgreSQL database that does not exist",
         "$BARE --store postgresql://trainscope@$PGHOST/nosuchdb runs list"),
        ("a PostgreSQL database that holds other tables",
         "$BARE --store postgresql://trainscope@$PGHOST/shop runs list"),
        ("reading a PostgreSQL database with no store yet",
         "$BARE --store postgresql://trainscope@$PGHOST/empty runs list"),
        ("a PostgreSQL store from a newer trainscope",
         "$BARE --store postgresql://trainscope@$PGHOST/newer runs list"),
        ("copying into a PostgreSQL store from a newer trainscope",
         "$TS store copy sqlite:$DIR/t.db postgresql://trainscope@$PGHOST/newer"),
        ("a PostgreSQL URI that names no server", "$BARE --store postgresql:// runs list"),
    ]),
    ("The dashboard and store copies", [
        ("a port that is not a number", "$TS serve --port http"),
        ("a port above 65535", "$TS serve --port 70000"),
        ("serving on an address that is not this machine's", "$TS serve --bind 203.0.113.7 --port 0"),
        ("serving a store that does not exist", "$BARE --store sqlite:$DIR/absent.db serve --port 0"),
        ("copying from a store that does not exist",
         "$TS store copy sqlite:$DIR/absent.db sqlite:$DIR/copy.db"),
        ("copying into a store from a newer trainscope",
         "$TS store copy sqlite:$DIR/t.db sqlite:$DIR/newer.db"),
    ]),
    ("Configs and --set", [
        ("a config file that does not exist", "$TS train $DIR/missing.yaml"),
        ("a folder given as the config", "$TS train $DIR/folder"),
        ("a config that is not YAML", "$TS train $DIR/broken.yaml"),
        ("a misspelt key", "$TS train $DIR/typo.yaml"),
        ("a word where a number belongs", "$TS train $DIR/good.yaml --set train.epochs=many"),
        ("zero epochs", "$TS train $DIR/good.yaml --set train.epochs=0"),
        ("a negative learning rate", "$TS train $DIR/good.yaml --set optimizer.lr=-1"),
        ("a string where a section belongs", "$TS train $DIR/section.yaml"),
        ("--set without a value", "$TS train $DIR/good.yaml --set train.epochs"),
        ("--set of a key that does not exist", "$TS train $DIR/good.yaml --set train.epoch=2"),
        ("an unknown model", "$TS train $DIR/good.yaml --set model.name=resnet9000"),
        ("an unknown optimizer", "$TS train $DIR/good.yaml --set optimizer.name=adamw2"),
        ("a boolean that is neither", "$TS train $DIR/good.yaml --set data.hflip=maybe"),
    ]),
    ("Data files", [
        ("a dataset folder that does not exist",
         "$TS train $DIR/good.yaml --set data.dataset=mnist --set data.path=$DIR/nodata"),
        ("IDX files with the wrong magic number",
         "$TS train $DIR/good.yaml --set data.dataset=mnist --set data.path=$DIR/idx_magic"),
        ("a truncated IDX image file",
         "$TS train $DIR/good.yaml --set data.dataset=mnist --set data.path=$DIR/idx_short"),
        ("an IDX label outside 0..9",
         "$TS train $DIR/good.yaml --set data.dataset=mnist --set data.path=$DIR/idx_label"),
        ("a CIFAR batch of the wrong size",
         "$TS train $DIR/good.yaml --set data.dataset=cifar10 --set data.path=$DIR/cifar_bad"),
    ]),
    ("Checkpoints and runs", [
        ("evaluating a run that has no checkpoint", "$TS eval lm"),
        ("a damaged checkpoint", "$TS eval ck"),
        ("resuming a finished run", "$TS train $DIR/good.yaml --resume ck2"),
    ]),
    ("Other commands", [
        ("watching a program that does not exist", "$TS watch -- no-such-program-xyz"),
        ("watch without a program", "$TS watch --"),
        ("a study file that does not exist", "$TS study run $DIR/missing-study.yaml"),
        ("a study with one replicate", "$TS study run $DIR/study_one.yaml"),
        ("a study with an unknown key", "$TS study run $DIR/study_key.yaml"),
        ("profiling every -1 steps", "$TS profile $DIR/good.yaml --every -1"),
        ("profiling fewer steps than the warm-up", "$TS profile $DIR/good.yaml --steps 3"),
        ("a profile of a run that has none", "$TS profile show lm"),
        ("an environment diff with an unknown run", "$TS env diff lm nosuchrun"),
    ]),
]

GOOD = ("data: {dataset: synthetic, synthetic: {size: 256}}\n"
        "model: {name: mlp}\ntrain: {epochs: 1, batch_size: 64}\n")


def idx(folder, images, labels):
    os.makedirs(folder)
    for prefix in ("train", "t10k"):
        with open(f"{folder}/{prefix}-images-idx3-ubyte", "wb") as f:
            f.write(images)
        with open(f"{folder}/{prefix}-labels-idx1-ubyte", "wb") as f:
            f.write(labels)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def data_fixtures(d):
    img = struct.pack(">IIII", 0x803, 2, 28, 28) + bytes(2 * 784)
    lab = struct.pack(">II", 0x801, 2) + bytes([1, 2])
    idx(f"{d}/idx_magic", struct.pack(">I", 0x999) + img[4:], lab)
    idx(f"{d}/idx_short", img[:-100], lab)
    idx(f"{d}/idx_label", img, struct.pack(">II", 0x801, 2) + bytes([1, 200]))
    os.makedirs(f"{d}/cifar_bad")
    for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
        with open(f"{d}/cifar_bad/{name}", "wb") as f:
            f.write(bytes(3000))


def config_fixtures(d):
    write(f"{d}/good.yaml", GOOD)
    os.makedirs(f"{d}/folder")
    write(f"{d}/broken.yaml", "train: {epochs: 2\nmodel: [\n")
    write(f"{d}/typo.yaml", GOOD.replace("epochs: 1", "epoch: 1"))
    write(f"{d}/section.yaml", "model: demo_cnn\n")
    write(f"{d}/notadb.db", "this is not a database\n" * 100)
    write(f"{d}/study_one.yaml", f"study: one\nbase: {d}/good.yaml\nreplicates: 1\nsources: [init]\n")
    write(f"{d}/study_key.yaml", f"study: key\nbase: {d}/good.yaml\nreplicates: 2\ncolour: red\n")


def pg_host(d):
    with open(f"{d}/pg/port") as f:
        return "127.0.0.1:" + f.read().strip()


def python_of(ts):
    """$PY: the build's Python (TS_PYTHON, else the build's CMakeCache) with
    the package it built (TS_PYTHONPATH, else BUILD/python) on its path."""
    build = os.path.dirname(os.path.dirname(os.path.abspath(ts)))
    exe = os.environ.get("TS_PYTHON")
    if not exe:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            exe = next((line.split("=", 1)[1].strip() for line in f
                        if line.startswith("TRAINSCOPE_PYTHON_EXECUTABLE:")), "python3")
    path = os.environ.get("TS_PYTHONPATH", os.path.join(build, "python"))
    return f"env PYTHONPATH={path} {exe}"


def run(cmd, d, ts, check=True):
    full = cmd.replace("$TS", f"{ts} --store sqlite:{d}/t.db").replace("$DIR", d)
    full = full.replace("$PY ", python_of(ts) + " ")
    full = full.replace("$BARE --store", f"{ts} --store").replace("$PGHOST", pg_host(d))
    r = subprocess.run(["bash", "-c", full], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, TRAINSCOPE_STORE=f"sqlite:{d}/t.db",
                                PGPASSWORD=pg_server.PASSWORD))
    if check and r.returncode != 0:
        sys.exit(f"fixture failed: {full}\n{r.stdout}{r.stderr}")
    return r


def psql(d, db, sql):
    subprocess.run(["psql", "-X", "-q", pg_server.uri(f"{d}/pg", db), "-c", sql], check=True)


def postgres_fixtures(d, ts):
    """A server with a database of another application's tables, an empty
    one, and a store from a newer trainscope."""
    pg_server.start(f"{d}/pg")
    for db in ("shop", "empty", "newer"):
        psql(d, "postgres", f"CREATE DATABASE {db}")
    psql(d, "shop", "CREATE TABLE orders (id int)")
    run("$BARE --store postgresql://trainscope@$PGHOST/newer -q numerics logmap --steps 5", d, ts)
    psql(d, "newer", "INSERT INTO schema_migrations VALUES (999, 'from the future', 0)")


def load_classes():
    """(title, cases, fixtures) of every class: the earlier ones, then cases/*.py
    in the order of their file names."""
    classes = [(title, cases, None) for title, cases in EARLIER]
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases")
    sys.path.insert(0, folder)  # their shared helpers (cases/_*.py)
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".py") or name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(name[:-3], os.path.join(folder, name))
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        classes.append((mod.TITLE, mod.CASES, getattr(mod, "fixtures", None)))
    return classes


def make_fixtures(d, ts, classes):
    config_fixtures(d)
    data_fixtures(d)
    postgres_fixtures(d, ts)
    run("$TS numerics logmap --steps 20 --name lm", d, ts)
    run("$TS numerics logmap --steps 5 --name twin", d, ts)
    run("$TS numerics logmap --steps 5 --name twin", d, ts)
    tiny = "--set train.max_steps=2 --set checkpoint.every_steps=1"
    run(f"$TS -q train $DIR/good.yaml --name ck {tiny} --no-progress", d, ts)
    run(f"$TS -q train $DIR/good.yaml --name ck2 {tiny} --no-progress", d, ts)
    ckpts = sorted(p for p in _walk(f"{d}/t-artifacts") if "/checkpoints/" in p)
    victim = [p for p in ckpts if p.endswith(".pt")]
    run_ck = query(f"{d}/t.db", "SELECT uuid FROM runs WHERE name='ck'")[0][0]
    for p in victim:
        if run_ck in p:
            with open(p, "r+b") as f:
                f.seek(200)
                f.write(b"\x5a")
    shutil.copy(f"{d}/t.db", f"{d}/newer.db")
    with contextlib.closing(sqlite3.connect(f"{d}/newer.db")) as db, db:
        cols = [r[1] for r in db.execute("PRAGMA table_info(schema_migrations)")]
        db.execute(f"INSERT INTO schema_migrations ({', '.join(cols)}) VALUES "
                   f"({', '.join(['999'] + ['0'] * (len(cols) - 1))})")
    for _, _, fixtures in classes:
        if fixtures:
            fixtures(d, lambda cmd, check=True: run(cmd, d, ts, check))


def _walk(root):
    for base, _, files in os.walk(root):
        for f in files:
            yield os.path.join(base, f)


def query(path, sql):
    """Rows of one query on a closed-again connection. A connection left open
    while this process copies or opens the file otherwise loses its locks
    (POSIX locks are per process and file): a trainscope closing the store
    then takes itself for the last user, removes the WAL index, and this
    process's next connection reads a stale one ("malformed")."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


# Stores beside t.db whose runs a message may name (cases/c21: the studies).
# Named, not globbed: opening some of the others (a FIFO as a -wal file)
# would change them.
NAMED_STORES = ["h3.db", "c31.db", "v33.db", "d34.db", "s35.db", "pr41.db", "p42.db", "pr43.db"]


def run_ids(d):
    """(uuid, name) of the runs in t.db, then in NAMED_STORES."""
    ids = query(f"{d}/t.db", "SELECT uuid, name FROM runs")
    for name in NAMED_STORES:
        if os.path.exists(f"{d}/{name}"):
            ids += query(f"{d}/{name}", "SELECT uuid, name FROM runs")
    return ids


def observe(d, ts, classes):
    """Runs every case; run UUIDs in messages become <name> (they differ per run)."""
    rows = []
    for title, cases, _ in classes:
        for case in cases:
            what, cmd, opts = case[0], case[1], (case[2] if len(case) > 2 else {})
            r = run(cmd, d, ts, check=False)
            msg = r.stderr.strip().replace(d, "$DIR").replace(pg_host(d), "$PGHOST")
            msg = msg.replace("port " + pg_host(d).split(":")[1], "port $PGPORT")
            for uuid, name in run_ids(d):  # a case may have made runs
                msg = msg.replace(uuid, f"<{name}>").replace(uuid[:8], f"<{name}>")
            rows.append((title, what, cmd, r.returncode, msg, opts))
    return rows


def cell(s):
    return s.replace("|", "\\|").replace("\n", "<br>")


HEADER = """# Bad inputs and faults

What trainscope answers to {n} bad inputs and faults: the exact message on
stderr and the exit code (0 success; 1 the job failed; 2 usage or bad input;
3 not found; 4 conflict; 5 store error; 127 a program to run does not
exist; 141 a reading command whose reader stopped reading). `$TS` is `trainscope --store sqlite:$DIR/t.db`, `$BARE` is
`trainscope`, `$PY` the build's Python with its package; `$DIR` a folder of
fixtures (a store with runs `lm`, `twin` twice, `ck` with a damaged
checkpoint, `ck2`; configs; broken dataset files; a PostgreSQL server at
`$PGHOST` with databases `shop` (another application's tables), `empty`
and `newer` (a store from a newer trainscope), its password in
`$PGPASSWORD`), made by `tests/bad_inputs/bad_inputs.py`. A run's UUID (or
its first 8 characters) is shown as `<name>`.

Every row is a test: `ctest -R BadInputs` runs each command against the real
executable and requires exactly this exit code and message. After a change
to a message, regenerate this file with
`tests/bad_inputs/bad_inputs.py build/bin/trainscope docs/bad-inputs.md --write`
and review the diff. A full disk (`watch` on a nearly full tmpfs) is tested by
`DiskFullTest` (tests/cli/disk_full_test.cc), and a crash at any moment by the
crash campaign (docs/reliability.md).

The cases come in classes: a class is a kind of mistake, and every command
that can meet it answers the same way. A row whose exit is 0 is a case that
must succeed, with at most a one-line note on stderr.
"""


TABLE_HEAD = "| # | bad input or fault | command | exit | message |\n|---|---|---|---|---|\n"


def write_doc(path, rows):
    with open(path, "w") as f:
        f.write(HEADER.format(n=len(rows)))
        title = None
        for i, (cls, what, cmd, code, msg, _) in enumerate(rows, 1):
            if cls != title:
                title = cls
                f.write(f"\n## {title}\n\n{TABLE_HEAD}")
            f.write(f"| {i} | {cell(what)} | `{cell(cmd)}` | {code} | {cell(msg)} |\n")


def read_doc(path):
    rows = []
    for line in open(path):
        if not line.startswith("| ") or line.startswith("| #"):
            continue
        parts = [p.strip() for p in line.strip().strip("|").replace("\\|", "\x00").split("|")]
        parts = [p.replace("\x00", "|") for p in parts]
        rows.append((parts[1], parts[3], parts[4].replace("<br>", "\n")))
    return rows


def one_line(code, msg, opts):
    """Whether a case's outcome has the documented shape: an error is one
    line starting 'trainscope: ' with a non-zero exit; an ok case exits 0
    with at most one line on stderr."""
    if opts.get("ok"):
        return code == 0 and "\n" not in msg
    return code != 0 and "\n" not in msg and msg.startswith("trainscope: ")


def main():
    ts, doc = os.path.abspath(sys.argv[1]), sys.argv[2]
    d = tempfile.mkdtemp(prefix="trainscope-bad-")
    classes = load_classes()
    # TS_BAD_INPUTS_ONLY=31: one class and the earlier fixtures, while
    # writing its cases (the document is written and checked whole).
    if os.environ.get("TS_BAD_INPUTS_ONLY") and "--write" not in sys.argv:
        only = os.environ["TS_BAD_INPUTS_ONLY"] + "."
        classes = [c for c in classes if c[0].startswith(only)]
    try:
        make_fixtures(d, ts, classes)
        rows = observe(d, ts, classes)
        if "--write" in sys.argv:
            write_doc(doc, rows)
            print(f"wrote {doc}: {len(rows)} cases")
            return 0
        documented = read_doc(doc)
        failures = 0
        if len(documented) != len(rows):
            print(f"{doc} has {len(documented)} rows, the cases are {len(rows)}: regenerate it")
            failures += 1
        for (_, what, _, code, msg, _), (dwhat, dcode, dmsg) in zip(rows, documented):
            if what != dwhat or str(code) != dcode or msg != dmsg:
                print(f"FAIL {what}: documented exit {dcode} '{dmsg}', got {code} '{msg}'")
                failures += 1
        for _, what, _, code, msg, opts in rows:
            if not one_line(code, msg, opts):
                print(f"FAIL {what}: exit {code}, not the documented shape: {msg!r}")
                failures += 1
        print(f"{len(rows) - failures}/{len(rows)} bad inputs as documented")
        return 1 if failures else 0
    finally:
        pg_server.stop(f"{d}/pg", quiet=True)
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
