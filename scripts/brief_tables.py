#!/usr/bin/env python3
"""The studies' own tables, rerun with trainscope (docs/seeds.md).

  scripts/brief_tables.py run [--quick] [--store URI] [--only NAME ...]
                             [--suffix _cuda --set compute.device=cuda ...]
      trains every study file of configs/studies/tables/ (resumes one the
      store already holds: a stopped run of this script goes on where it
      stopped); --suffix and --set train copies of them as studies of their
      own (the GPU check's rows: scripts/gpu-check.sh --brief)
  scripts/brief_tables.py tables [--store URI] [--only NAME ...] [--suffix S]
                                [--out FILE | --into DOC]
      writes the Markdown tables of docs/seeds.md from what the store holds
      (--into: between the brief_tables markers of DOC)

Every figure in the tables is read from `trainscope study report --format
json`, `trainscope stats --format json` or `trainscope profile show --json`;
this script only picks and formats them (a ratio of two of them at most).
The CLI is $TRAINSCOPE, else build/bin/trainscope, else `trainscope`.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGES = {"dir": None, "link": ""}  # tables --images: where SVGs go, and their path from the page
TABLES = ROOT / "configs" / "studies" / "tables"


def cli():
    if os.environ.get("TRAINSCOPE"):
        return os.environ["TRAINSCOPE"]
    built = ROOT / "build" / "bin" / "trainscope"
    return str(built) if built.exists() else (shutil.which("trainscope") or "trainscope")


def fail(line, code=1):
    """One line on stderr (if it can be said), then exit `code`."""
    try:
        print(f"brief_tables: {line}", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        pass
    sys.exit(code)


def say(line):
    """A line of progress on stdout; a full or closed stdout never stops
    the studies (thirty-eighth hunt, A-D1)."""
    try:
        print(line, flush=True)
    except (OSError, ValueError, AttributeError):
        pass


def ts(store, *args, check=True):
    cmd = [cli(), "--store", store, *args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:  # the CLI's line and exit code
        fail(f"`trainscope {' '.join(cmd[1:])}`: "
             f"{p.stderr.strip().splitlines()[-1] if p.stderr.strip() else 'no word'}",
             p.returncode)
    return p


def ts_json(store, *args):
    return json.loads(ts(store, *args).stdout)


def study_files(only):
    files = sorted(TABLES.glob("*.yaml"))
    if only:
        files = [f for f in files if f.stem in only]
        missing = set(only) - {f.stem for f in files}
        if missing:
            sys.exit(f"brief_tables: no study file {', '.join(sorted(missing))} in {TABLES}")
    return files


def prepared(f, args):
    """The study file to run: `f` itself, or (--set, --suffix: the GPU
    check's rows) a copy under --work with the study renamed NAME+SUFFIX,
    its base made absolute and each KEY: VALUE of --set in its set:."""
    if not args.set and not args.suffix:
        return f
    sets = dict(kv.split("=", 1) for kv in args.set)
    if len(sets) < len(args.set):
        sys.exit("brief_tables: --set names one key twice; give each key once")
    out, in_set = [], False
    for line in f.read_text().splitlines():
        if line.startswith("study: "):
            line = f"study: {f.stem}{args.suffix}"
        elif line.startswith("base: "):
            line = f"base: {(f.parent / line[6:].split('#')[0].strip()).resolve()}"
        if in_set and line.startswith("  ") and line.split(":")[0].strip() in sets:
            continue  # --set wins over the file's own value
        in_set = line.startswith("set:") or (in_set and line.startswith("  "))
        out.append(line)
        if line.startswith("set:"):
            out += [f"  {k}: {v}" for k, v in sets.items()]
    copy = Path(args.work) / f"{f.stem}{args.suffix}.yaml"
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_text("\n".join(out) + "\n")
    return copy


def run(args):
    for f in study_files(args.only):
        name = f.stem + args.suffix
        known = ts(args.store, "study", "status", name, check=False).returncode == 0
        what = ["study", "resume", name] if known else \
            ["study", "run", str(prepared(f, args))] + (["--quick"] if args.quick else [])
        say(f"== {' '.join(what)}")
        rc = subprocess.run([cli(), "--store", args.store, *what]).returncode
        if rc != 0 and not complete(args.store, name):  # exit 2 for a cut output only
            fail(f"{name} ended with exit {rc}; run this again to resume it", rc)


def complete(store, name):
    """Whether every planned run of study `name` finished."""
    p = ts(store, "--json", "study", "status", name, check=False)
    if p.returncode != 0:
        return False
    cells = json.loads(p.stdout)["cells"]
    return bool(cells) and all(c["planned"] == c["finished"] for c in cells)


def fmt(v, digits=4):
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int,)):
        return str(v)
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return text(str(v))


def text(value):
    """Store text as inert Markdown: control characters escaped, '|' and
    '<' made plain (thirty-eighth hunt, A-D5: a run name split a table row
    and put a heading and HTML into the page)."""
    out = []
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp"):
            out.append(ch.encode("unicode_escape").decode("ascii"))
        elif ch in "|\\":
            out.append("\\" + ch)
        elif ch in "<>":
            out.append("&lt;" if ch == "<" else "&gt;")
        else:
            out.append(ch)
    return "".join(out)


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(fmt(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def cell_key(cell, key):
    """The value of `key` in a cell name "a=1,b=2[,deterministic]"."""
    for part in cell.split(","):
        k, _, v = part.partition("=")
        if k == key:
            return v
    return None


def runs_of(store, study):
    """The finished runs the study counts, as every reader of it counts them
    (study status, study report, stats --study): its own planned runs, none
    it set aside (study.superseded_by: a retry, a --replan)."""
    status = ts_json(store, "--json", "study", "status", study)
    cells = {c["cell"] for c in status["cells"]}
    listed = ts_json(store, "runs", "list", "-e", study, "-a", "--format", "json", "-c",
                     "uuid,name,parent,status,tags.study.superseded_by")["runs"]
    return [r for r in listed
            if r["parent"] == status["study"]["uuid"] and r["status"] == "finished"
            and not r["tags.study.superseded_by"] and r["name"].rsplit("/", 1)[0] in cells]


def stats(store, metric, uuids, *extra):
    return ts_json(store, "stats", metric, *uuids, "--format", "json", *extra)


def bit_identical(c):
    """What the cell's audit says of its runs: "yes (2 compared)"."""
    audit = c.get("audit") or {}
    return f"{fmt(audit.get('identical'))} ({audit.get('compared', 0)} compared)"


def report(store, study):
    return ts_json(store, "study", "report", study, "--format", "json")


def cmd_line(*args):
    return "`trainscope " + " ".join(args) + "`"


def t_precision(store, study):
    rep = report(store, study)
    base = {}
    for c in rep["cells"]:
        if cell_key(c["cell"], "compute.dtype") == "float32":
            base[(cell_key(c["cell"], "compute.threads"), cell_key(c["cell"], "determinism.mkldnn"))] = c
    rows = []
    for c in rep["cells"]:
        k = (cell_key(c["cell"], "compute.threads"), cell_key(c["cell"], "determinism.mkldnn"))
        f32 = base.get(k)
        rows.append([cell_key(c["cell"], "compute.dtype"), k[0], k[1], c["n"], c["mean"], c["sd"],
                     bit_identical(c),
                     c["mean_run_s"], c["mean_run_s"] / f32["mean_run_s"] if f32 else None])
    head = ["dtype", "threads", "oneDNN", "runs", "mean test acc.", "SD", "bit-identical",
            "mean run s", "time / float32"]
    return (f"{cmd_line('study report', study, '--format json')}: cells, each repeated exactly\n\n"
            + table(head, rows))


def t_vgg(store, study):
    rep = report(store, study)
    rows = []
    for c in rep["cells"]:
        rows.append([cell_key(c["cell"], "optimizer"), cell_key(c["cell"], "seeds.master"), c["n"],
                     c["mean"], c["min"], c["max"], bit_identical(c),
                     c["mean_run_s"]])
    head = ["optimizer", "seed", "runs", "mean test acc.", "min", "max", "bit-identical",
            "mean run s"]
    terms = [[t["name"], t.get("levels"), t["variance"], t["share"]]
             for t in (rep.get("factor_components") or {}).get("terms", [])]
    return (f"{cmd_line('study report', study, '--format json')}: each cell trained twice\n\n"
            + table(head, rows)
            + "\nVariance components of the test accuracy by factor (`factor_components`):\n\n"
            + table(["term", "levels", "variance", "share"], terms))


def t_seeds_cells(rep):
    rows = []
    det = {c["cell"].replace(",deterministic", ""): c for c in rep["cells"]
           if c["cell"].endswith(",deterministic")}
    for c in rep["cells"]:
        if c["cell"].endswith(",deterministic"):
            continue
        d = det.get(c["cell"], {})
        t = c.get("t_vs_deterministic") or {}
        rows.append([cell_key(c["cell"], "optimizer.name"), cell_key(c["cell"], "seeds.master"),
                     c["n"], c["mean"], c["sd"], c["min"], c["max"], c.get("deterministic_value"),
                     c.get("diff_percent_vs_deterministic"),
                     f"{fmt(t.get('statistic'))}, p {fmt(t.get('p_value'))}" if t else "-",
                     bit_identical(d)])
    head = ["optimizer", "seed", "runs", "mean", "SD (ddof 1)", "min", "max", "deterministic",
            "Diff %", "one-sample t vs det.", "det. bit-identical"]
    return table(head, rows)


def t_seeds_tests(store, study, rep):
    rows = []
    runs = runs_of(store, study)
    for opt in sorted({cell_key(r["name"], "optimizer.name") for r in runs} - {None}):
        ids = [r["uuid"] for r in runs if cell_key(r["name"], "optimizer.name") == opt
               and "deterministic" not in r["name"]]
        comp = stats(store, "test/accuracy", ids, "--by", "seeds.master")["comparison"]
        for test in ("anova", "kruskal_wallis", "brown_forsythe"):
            t = comp.get(test)
            if t:
                df = fmt(t["df"]) + (f", {fmt(t['df2'])}" if t.get("df2") is not None else "")
                rows.append([opt, t["test"], t["statistic"], df, t["p_value"]])
    return table(["optimizer", "test across the 5 seeds", "statistic", "df", "p"], rows)


def t_seeds_weights(rep):
    rows = [[w["cell"], w["step"], w["runs"], w["mean_sd"], w["cosine_min"], w["cosine_mean"],
             w["cosine_max"]]
            for w in rep.get("weights") or []
            if w.get("last_layer") and w["step"] > 0 and not w["cell"].endswith(",deterministic")]
    return table(["cell", "step", "runs", "last layer: mean element SD", "cosine min", "mean",
                  "max"], rows)


def t_seeds(store, study):
    rep = report(store, study)
    return (f"{cmd_line('study report', study, '--format json')}: test accuracy per cell "
            "(5 runs varying the implementation; the exact-repeat cell beside them)\n\n"
            + t_seeds_cells(rep)
            + f"\n{cmd_line('stats test/accuracy RUN... --by seeds.master --format json')} over "
            "each optimizer's implementation runs:\n\n" + t_seeds_tests(store, study, rep)
            + f"\nCost of determinism (`determinism_cost`, time of the exact-repeat cells over "
            f"the others): {fmt(rep.get('determinism_cost'))}x. Energy {fmt(rep.get('energy_kwh'))} "
            f"kWh, CO2 {fmt(rep.get('co2_kg'))} kg at {fmt(rep.get('carbon_kg_per_kwh'))} kg/kWh.\n\n"
            "Weights across each cell's runs per checkpoint (`weights`, last layer):\n\n"
            + t_seeds_weights(rep))


def t_sweep(store, study, key):
    rep = report(store, study)
    rss = {g["group"]: g for g in stats(store, "proc/peak_rss_mib", [], "--study", study, "--by",
                                        key, "--reduce", "max")["groups"]}
    cpu = {g["group"]: g for g in stats(store, "proc/cpu_percent", [], "--study", study, "--by",
                                        key)["groups"]}
    rows = []
    for c in sorted(rep["cells"], key=lambda c: float(cell_key(c["cell"], key))):
        v = cell_key(c["cell"], key)
        rows.append([v, c["n"], c["mean"], c["sd"], c.get("mean_epochs_to_target"),
                     c.get("mean_time_to_target_s"), c.get("mean_samples_per_s"),
                     c.get("mean_epoch_s"), rss.get(v, {}).get("mean"), cpu.get(v, {}).get("mean")])
    head = [key, "runs", "mean test acc. (last epoch)", "SD", "epochs to target",
            "s to target", "samples/s", "s per epoch", "peak RSS MiB", "CPU % (last sample)"]
    comp = rep.get("comparison") or {}
    tests = "; ".join(f"{t['test']} {fmt(t['statistic'])} (df {fmt(t['df'])}"
                      + (f", {fmt(t['df2'])}" if t.get("df2") is not None else "")
                      + f"), p {fmt(t['p_value'])}"
                      for t in (comp.get("anova"), comp.get("kruskal_wallis")) if t)
    firsts = sorted((r for r in runs_of(store, study) if r["name"].endswith("/r1")),
                    key=lambda r: float(cell_key(r["name"].rsplit("/", 1)[0], key) or "inf"))
    curves = image(study, f"test accuracy per epoch, one run per {key}",
                   lambda path: ts(store, "plot", *[r["uuid"] for r in firsts], "test/accuracy",
                                   "--x", "epoch", "-o", path)) if firsts else ""
    return (f"{cmd_line('study report', study, '--format json')} and "
            f"{cmd_line('stats proc/peak_rss_mib --study', study, '--by', key, '--reduce max')}:\n\n"
            + table(head, rows) + (f"\nBetween the cells: {tests}.\n" if tests else "") + curves)


def layers_us(p):
    """What `profile show` prints as "all layers": the layers' sum."""
    return sum(l["forward_us"] + l["backward_us"] + l["update_us"] for l in p["layers"])


def t_profile_cost(store, study, rep, runs):
    rows = []
    by_cell = {c["cell"]: c for c in rep["cells"]}
    for c in rep["cells"]:
        if cell_key(c["cell"], "profile.enabled") != "true":
            continue
        off = by_cell.get(c["cell"].replace("profile.enabled=true", "profile.enabled=false"))
        profs = [ts_json(store, "profile", "show", r["uuid"], "--json") for r in runs
                 if r["name"].startswith(c["cell"] + "/")]
        for p in profs:
            rows.append([c["cell"].replace("profile.enabled=true", "").strip(",") or "-",
                         p["run"][:8], p["step_ms_profiled"], p["step_ms_unprofiled"],
                         p["step_ms_profiled"] / p["step_ms_unprofiled"],
                         c["mean_epoch_s"] / off["mean_epoch_s"] if off else None,
                         1 - layers_us(p) / p["wall_us"], 1 - p["coverage_mean"]])
    head = ["cell", "run", "profiled step ms", "unprofiled step ms (same run)",
            "ratio", "epoch time, profiler on / off (cell means)", "share outside every layer",
            "share no category holds"]
    return table(head, rows)


def t_profile_layers(store, uuid):
    p = ts_json(store, "profile", "show", uuid, "--json")
    layers = sorted(p["layers"], key=lambda l: -(l["forward_us"] + l["backward_us"]
                                                 + l["update_us"]))
    rows = [[l["layer"], l["type"], l["forward_us"], l["backward_us"], l["update_us"],
             l["backward_us"] / l["forward_us"] if l["forward_us"] > 0 else None]
            for l in layers if l["forward_us"] + l["backward_us"] + l["update_us"] > 0]
    return table(["layer", "type", "forward us", "backward us", "update us", "bwd / fwd"], rows)


def image(name, what, make):
    """`make(path)` writes an SVG; a Markdown image line for it, or "" when
    tables was not asked for images."""
    if IMAGES["dir"] is None:
        return ""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name) + ".svg"
    make(str(IMAGES["dir"] / safe))
    return f"\n![{what}]({IMAGES['link']}{safe})\n"


def t_profile(store, study):
    rep = report(store, study)
    runs = runs_of(store, study)
    out = [f"{cmd_line('study report', study, '--format json')} and "
           f"{cmd_line('profile show RUN --json')} of each profiled run:\n\n",
           t_profile_cost(store, study, rep, runs)]
    for c in rep["cells"]:
        if cell_key(c["cell"], "profile.enabled") != "true":
            continue
        first = sorted(r["name"] for r in runs if r["name"].startswith(c["cell"] + "/"))[:1]
        for r in runs:
            if first and r["name"] == first[0]:
                out.append(f"\nPer layer and iteration, {cmd_line('profile show', r['uuid'][:8], '--json')}"
                           f" ({text(r['name'])}):\n\n" + t_profile_layers(store, r["uuid"]))
                out.append(image(f"{study}-{c['cell']}", f"time per layer, {c['cell']}",
                                 lambda path, u=r["uuid"]: ts(store, "profile", "show", u,
                                                              "--svg", path)))
    return "".join(out)


def t_probes(store, study):
    rep = report(store, study)
    rows = []
    for r in sorted(runs_of(store, study), key=lambda r: r["name"]):
        alerts = ts_json(store, "probes", r["uuid"], "--alerts", "--format", "json")
        said = "; ".join(f"{a['alert']} at step {a['step']}"
                         + (f" ({a['layer']})" if a["layer"] else "") for a in alerts)
        cell, _, replicate = r["name"].rpartition("/")
        rows.append([cell, replicate, said or "none"])
    means = [[c["cell"], c["n"], c["mean"], c["sd"]] for c in rep["cells"]]
    return (f"{cmd_line('probes RUN --alerts --format json')} of each run:\n\n"
            + table(["cell", "run", "alerts (as recorded)"], rows)
            + f"\n{cmd_line('study report', study, '--format json')}:\n\n"
            + table(["cell", "runs", "mean test acc.", "SD"], means))


SECTIONS = {
    "brief1_precision": ("§1: float32 against float64 on one CPU", t_precision),
    "brief1_vgg11": ("§1: the VGG-11 recipe, 3 optimizers x 5 seeds, each run twice", t_vgg),
    "brief2_seeds": ("§2: 2 optimizers x 5 seeds x 5 runs, and the exact repeat", t_seeds),
    "brief3_alexnet": ("§3: per-layer time, AlexNet at batch 64 and 128", t_profile),
    "brief3_vgg11": ("§3: per-layer time, VGG-11 at batch 12", t_profile),
    "brief4_lr": ("§4: the learning rate", lambda st, s: t_sweep(st, s, "optimizer.lr")),
    "brief4_batch": ("§4: the batch size", lambda st, s: t_sweep(st, s, "train.batch_size")),
    "brief5_probes": ("§5: pathologies made on purpose, and the probes' alerts", t_probes),
    "brief5_pathologies": ("§5: the same in a PyTorch script of one's own (Run.watch)",
                           t_probes),
}


def tables(args):
    out = ["<!-- written by scripts/brief_tables.py tables; do not edit by hand -->\n"]
    for f in study_files(args.only):
        title, fn = SECTIONS[f.stem]
        name = f.stem + args.suffix
        out.append(f"\n### {name}: {title}\n\n" + fn(args.store, name))
    return "".join(out)


BEGIN, END = "<!-- brief_tables: begin -->", "<!-- brief_tables: end -->"


def store_files(store):
    """The files of a sqlite: store (the database and its companions)."""
    if not store.startswith("sqlite:"):
        return set()
    db = os.path.realpath(store[len("sqlite:"):])
    return {db} | {db + suffix for suffix in ("-wal", "-shm", "-journal", "-reserve")}


def checked_target(path, what, store):
    """`path` if tables may be written there: never the store being read
    (thirty-eighth hunt, A-D4: it was replaced by Markdown), never a FIFO or
    a device (A-D3: it blocked), in a folder that exists."""
    if os.path.realpath(path) in store_files(store):
        fail(f"{what} '{path}' is the store being read; give another path", 2)
    if os.path.lexists(path) and not os.path.isfile(path):
        fail(f"{what} '{path}' is not a regular file (a FIFO, a folder, a device?); give a "
             "file's path", 2)
    if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        fail(f"{what} '{path}': its folder does not exist", 2)
    return Path(path)


def write_whole(path, body):
    """`body` into `path` whole or not at all: written beside it, then
    renamed over it (A-D2: a full disk or `ulimit -f` cut docs/seeds.md)."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            f.write(body)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except OSError as e:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)
        fail(f"cannot write '{path}': {e.strerror or e}; it is unchanged", 2)


BEGIN, END = "<!-- brief_tables: begin -->", "<!-- brief_tables: end -->"


def into(path, tables_text, store):
    if not os.path.lexists(path):
        fail(f"--into '{path}' does not exist: give the Markdown file to write into "
             "(docs/seeds.md)", 3)
    path = checked_target(path, "--into", store)
    doc = path.read_text()
    head, _, rest = doc.partition(BEGIN)
    if BEGIN not in doc or END not in rest:
        fail(f"{path} has no {BEGIN} ... {END} markers to write between", 2)
    write_whole(path, head + BEGIN + "\n" + tables_text + rest[rest.index(END):])


def to_stdout(body):
    try:
        sys.stdout.write(body)
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError) as e:  # full, closed, a reader gone
        try:
            sys.stdout = None  # nothing more is written to it at exit
        finally:
            fail(f"the tables were cut: stdout {getattr(e, 'strerror', None) or 'is closed'}", 2)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("run", "tables"):
        p = sub.add_parser(name)
        p.add_argument("--store", default=os.environ.get("TRAINSCOPE_STORE", "sqlite:brief-tables.db"))
        p.add_argument("--only", nargs="*", default=[], help="study names (file stems)")
        p.add_argument("--suffix", default="", help="the studies' names end so (_cuda)")
        if name == "run":
            p.add_argument("--quick", action="store_true", help="each file's quick: section")
            p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                           help="set in every study (compute.device=cuda; a key its quick: "
                                "section sets keeps that value under --quick); needs --suffix")
            p.add_argument("--work", default="brief-tables",
                           help="folder for the study files --set and --suffix write")
        else:
            p.add_argument("--out", help="write here instead of stdout")
            p.add_argument("--into", help="replace the tables between the markers of this "
                                          "Markdown file (docs/seeds.md)")
            p.add_argument("--images", help="write charts (SVG) into this folder and show them "
                                            "in the tables (docs/images/seeds)")
    args = ap.parse_args()
    if args.cmd == "run" and args.set and not args.suffix:
        sys.exit("brief_tables: --set changes what the studies train: give --suffix (_cuda) so "
                 "that they are studies of their own")
    if args.cmd == "run" and any("=" not in kv for kv in args.set):
        sys.exit("brief_tables: --set takes KEY=VALUE, e.g. compute.device=cuda")
    if args.cmd == "run":
        run(args)
    else:
        if args.out:
            checked_target(args.out, "--out", args.store)  # before the work
        if args.images:
            if not os.path.isdir(args.images):
                fail(f"--images '{args.images}' is not a folder: make it first", 2)
            page = os.path.dirname(os.path.abspath(args.into or args.out or "."))
            IMAGES["dir"] = Path(args.images)
            IMAGES["link"] = os.path.relpath(os.path.abspath(args.images), page) + "/"
        body = tables(args)
        if args.into:
            into(args.into, body, args.store)
        elif args.out:
            write_whole(checked_target(args.out, "--out", args.store), body)
        else:
            to_stdout(body)


if __name__ == "__main__":
    main()
