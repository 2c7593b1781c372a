"""The studies' own tables (docs/seeds.md), shortened: every study file of
configs/studies/tables/ runs green with --quick through
scripts/brief_tables.py, resumes, and the tables it writes hold what the
store's reports say (TS_CLI: set by ctest)."""
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "brief_tables.py"
CLI = os.environ["TS_CLI"]
STUDIES = sorted(p.stem for p in (ROOT / "configs" / "studies" / "tables").glob("*.yaml"))


def script(store, *args):
    env = dict(os.environ, TRAINSCOPE=CLI)
    return subprocess.run([sys.executable, str(SCRIPT), args[0], "--store", "sqlite:" + str(store),
                           *args[1:]], capture_output=True, text=True, env=env,
                          cwd=store.parent)


def cli_json(store, *args):
    out = subprocess.run([CLI, "--store", "sqlite:" + str(store), *args], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = tmp_path_factory.mktemp("brief") / "b.db"
    r = script(s, "run", "--quick")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return s


@pytest.fixture(scope="module")
def tables(store):
    r = script(store, "tables")
    assert r.returncode == 0, r.stderr
    return r.stdout


def rows(text, study):
    """The rows of the first table under `### study:` as lists of cells."""
    part = text.split(f"### {study}:")[1].split("\n### ")[0]
    lines = part.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("| "))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return [[c.strip() for c in l.strip("|").split("|")] for l in lines[start + 2:end]]


def test_every_study_file_runs_green_and_has_a_section(store, tables):
    assert len(STUDIES) >= 6
    for name in STUDIES:
        cells = cli_json(store, "--json", "study", "status", name)["cells"]
        assert cells and all(c["planned"] == c["finished"] > 0 for c in cells), (name, cells)
        assert f"### {name}:" in tables


def test_a_second_run_resumes_each_study_and_trains_nothing_again(store):
    before = len(cli_json(store, "--json", "runs", "list", "-a"))
    r = script(store, "run", "--quick")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("== study resume") == len(STUDIES)
    assert len(cli_json(store, "--json", "runs", "list", "-a")) == before


def test_seeds_table_is_the_reports_figures(store, tables):
    rep = cli_json(store, "study", "report", "brief2_seeds", "--format", "json")
    cells = {c["cell"]: c for c in rep["cells"]}
    got = rows(tables, "brief2_seeds")
    assert len(got) == len([c for c in cells if not c.endswith(",deterministic")])
    for opt, seed, n, mean, sd, *_rest, identical in got:
        c = cells[f"optimizer.name={opt},seeds.master={seed}"]
        assert int(n) == c["n"] and float(mean) == pytest.approx(c["mean"], rel=1e-3)
        assert float(sd) == pytest.approx(c["sd"], rel=1e-3, abs=1e-12)
        # A CPU repeats a training bit for bit: the exact-repeat cell says so.
        assert identical.startswith("yes"), (opt, seed, identical)
    # Across seeds, per optimizer: the tests stats --by seeds.master gives.
    section = tables.split("### brief2_seeds:")[1].split("\n### ")[0]
    tests = section.split("--by seeds.master --format json`")[1]
    assert tests.count("Kruskal-Wallis H") == 2, tests


def test_precision_cells_each_repeat_exactly(tables):
    got = rows(tables, "brief1_precision")
    assert {r[0] for r in got} == {"float32", "float64"}
    for r in got:
        assert r[6].startswith("yes"), r


@pytest.mark.parametrize("study", ["brief3_alexnet", "brief3_vgg11"])
def test_every_profiled_run_accounts_for_its_iteration(store, tables, study):
    section = tables.split(f"### {study}:")[1].split("\n### ")[0]
    runs = re.findall(r"profile show ([0-9a-f]{8}) --json", section)
    assert runs, section[:500]
    for run in runs:
        p = cli_json(store, "profile", "show", run, "--json")
        assert p["profiled_iterations"] > 0 and p["coverage_mean"] > 0.99
        assert any(l["backward_us"] > 0 for l in p["layers"])


@pytest.mark.parametrize("study,values", [("brief4_lr", {"0.003", "0.03"}),
                                          ("brief4_batch", {"16", "256"})])
def test_sweep_tables_have_a_row_per_value(tables, study, values):
    got = rows(tables, study)
    assert {r[0] for r in got} == values
    for r in got:
        assert 0 < float(r[2]) <= 1 and float(r[6]) > 0  # accuracy, samples/s


def test_an_unknown_study_name_is_one_clear_line(store):
    r = script(store, "tables", "--only", "nosuch")
    assert r.returncode != 0
    assert r.stderr.strip() == f"brief_tables: no study file nosuch in {ROOT}/configs/studies/tables"


def test_a_learning_rate_100x_too_high_raises_its_alert_and_the_right_one_none(tables):
    got = rows(tables, "brief5_probes")
    assert {r[0] for r in got} == {"data.train_subset=256,optimizer.lr=0.002",
                                   "data.train_subset=256,optimizer.lr=0.2"}
    for cell, _, alerts in got:
        assert ("lr_too_high at step" in alerts) == cell.endswith("lr=0.2"), (cell, alerts)


def test_set_and_suffix_train_copies_as_studies_of_their_own(tmp_path):
    """What the GPU check's --brief mode runs (--set compute.device=cuda)."""
    s = tmp_path / "x.db"
    r = script(s, "run", "--quick", "--only", "brief4_lr", "--suffix", "_x", "--set",
               "eval.batch_size=32", "--work", str(tmp_path / "files"))
    assert r.returncode == 0, r.stderr
    runs = [x for x in cli_json(s, "--json", "runs", "list", "-a") if x.get("parent")]
    assert runs and {x["experiment"] for x in runs} == {"brief4_lr_x"}
    params = cli_json(s, "--json", "runs", "show", runs[0]["uuid"])["params"]
    assert params["eval.batch_size"] == "32"
    r = script(s, "run", "--set", "compute.device=cuda")
    assert r.returncode != 0 and "give --suffix" in r.stderr


def test_a_run_the_study_set_aside_is_in_no_table(store, tmp_path):
    """Thirty-eighth hunt, B-D2: the tables took every finished run of the
    study's experiment, ones study.superseded_by set aside (a retry, a
    --replan) included, which study status, report and stats leave out."""
    import sqlite3
    copy = tmp_path / "c.db"
    with sqlite3.connect(store) as src, sqlite3.connect(copy) as dst:
        src.backup(dst)
    os.symlink(store.parent / f"{store.stem}-artifacts", tmp_path / "c-artifacts")
    before = rows(script(copy, "tables", "--only", "brief5_probes").stdout, "brief5_probes")
    with sqlite3.connect(copy) as db:
        db.execute("INSERT INTO tags (run_id, key, value) SELECT id, 'study.superseded_by', "
                   "'replan' FROM runs WHERE name LIKE '%lr=0.2/r1'")
    after = rows(script(copy, "tables", "--only", "brief5_probes").stdout, "brief5_probes")
    assert len(after) == len(before) - 1
    assert not any(r[0].endswith("lr=0.2") and r[1] == "r1" for r in after)


def test_output_that_cannot_be_written_is_one_line_and_loses_nothing(store, tmp_path):
    """Thirty-eighth hunt, A-D1 to A-D4: a full stdout, a FIFO, the store
    itself as --out, a --into cut by `ulimit -f`: tracebacks, a blocked
    script, a store replaced by Markdown, a document cut in half."""
    import stat
    full = subprocess.run(f"{sys.executable} {SCRIPT} tables --store sqlite:{store} --only "
                          "brief4_lr > /dev/full", shell=True, capture_output=True, text=True,
                          env=dict(os.environ, TRAINSCOPE=CLI))
    assert full.returncode == 2 and full.stderr.count("\n") == 1, full.stderr
    fifo = tmp_path / "ff"
    os.mkfifo(fifo)
    for flag in ("--out", "--into"):
        r = script(store, "tables", "--only", "brief4_lr", flag, str(fifo))
        assert r.returncode == 2 and "not a regular file" in r.stderr, r.stderr
    size = store.stat().st_size
    r = script(store, "tables", "--only", "brief4_lr", "--out", str(store))
    assert r.returncode == 2 and "the store being read" in r.stderr
    assert store.stat().st_size == size and stat.S_ISREG(store.stat().st_mode)
    doc = tmp_path / "doc.md"
    doc.write_text("# d\n" + "precious\n" * 20000 + "<!-- brief_tables: begin -->\n"
                   "<!-- brief_tables: end -->\ntail\n")
    before = doc.read_text()
    cut = subprocess.run(f"ulimit -f 100; {sys.executable} {SCRIPT} tables --store sqlite:{store} "
                         f"--only brief4_lr --into {doc}", shell=True, capture_output=True,
                         text=True, env=dict(os.environ, TRAINSCOPE=CLI))
    assert cut.returncode == 2 and "it is unchanged" in cut.stderr, cut.stderr
    assert doc.read_text() == before and not list(tmp_path.glob(".doc.md.*"))


def test_store_text_is_inert_markdown():
    """A-D5: a name holding '|', a newline and HTML split a table row and
    put a heading and a script into docs/seeds.md."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("brief_tables", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    shown = mod.fmt("a | b\n### pwned <script>x</script>\u202e")
    assert "\n" not in shown and "<" not in shown and " | " not in shown.replace("\\|", "")
    assert shown == "a \\| b\\n### pwned &lt;script&gt;x&lt;/script&gt;\\u202e"


def test_each_pathology_made_in_a_script_raises_its_own_alert(tables):
    """§5 in a PyTorch script of one's own: a learning rate too high, a bad
    initialisation and saturating tanh units each raise their alert; the
    healthy case raises none of them."""
    got = rows(tables, "brief5_pathologies")
    assert {r[0] for r in got} == {"case=healthy", "case=lr_too_high", "case=bad_init",
                                   "case=saturation"}
    for cell, _, alerts in got:
        case = cell.split("=")[1]
        for rule in ("lr_too_high", "bad_init", "saturation"):
            assert (f"{rule} at step" in alerts) == (case == rule), (cell, alerts)


def test_images_are_charts_the_page_shows(store, tmp_path):
    """tables --images: the per-layer charts and the accuracy curves, each
    an SVG the Markdown links to, relative to the page."""
    page = tmp_path / "page.md"
    page.write_text("<!-- brief_tables: begin -->\n<!-- brief_tables: end -->\n")
    (tmp_path / "img").mkdir()
    r = script(store, "tables", "--only", "brief3_vgg11", "brief4_lr", "--into", str(page),
               "--images", str(tmp_path / "img"))
    assert r.returncode == 0, r.stderr
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", page.read_text())
    assert len(links) == 2 and all(l.startswith("img/") for l in links), links
    for link in links:
        svg = (tmp_path / link).read_text()
        assert svg.startswith("<svg") or "<svg" in svg[:200]
