"""Issue 51's third hunt (D10-D12): a Python run's status tells how the
script ended. A sys.exit the script catches (an argparse error included)
does not fail the run; a sys.excepthook the script sets after start_run
does not hide an uncaught exception; finish() with a status that ends
nothing is a ValueError and leaves the run going. test_accept.py has each
ordinary way a script ends. TS_CLI and PYTHONPATH as ctest sets them."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import trainscope

CLI = os.environ["TS_CLI"]
START = """
import sys, trainscope
run = trainscope.start_run(name="x", store=sys.argv[1], record_environment=False)
run.log({"loss": 1.0}, step=0)
"""


def show(store, name="x"):
    done = subprocess.run([CLI, "--store", "sqlite:" + store, "--json", "runs", "show", name],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def script(tmp_path, code, *python_args, stdin=None):
    """Runs START + `code` (the store's URI as argv[1]) in a fresh
    interpreter; returns the store and the finished process."""
    store = str(tmp_path / "t.db")
    path = tmp_path / "script.py"
    path.write_text(START + textwrap.dedent(code))
    try:
        done = subprocess.run([sys.executable, *python_args, str(path), "sqlite:" + store],
                              capture_output=True, text=True, timeout=120, input=stdin,
                              cwd=tmp_path)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the script did not end in 120 s: {e.stdout!r} {e.stderr!r}")
    return store, done


# D10: a SystemExit the script catches is not the interpreter's end.
CAUGHT = {
    "sys.exit(3) caught": ("""
        try:
            sys.exit(3)
        except SystemExit:
            pass
        """, 0, "finished"),
    "caught in a function, its code read": ("""
        def main():
            try:
                sys.exit(3)
            except SystemExit as e:
                return e.code
        print(main())
        """, 0, "finished"),
    "an argparse error caught": ("""
        import argparse
        p = argparse.ArgumentParser()
        p.add_argument("--n", type=int)
        try:
            p.parse_args(["--n", "x"])
        except SystemExit:
            pass
        """, 0, "finished"),
    "exit(4) caught": ("""
        try:
            exit(4)
        except SystemExit:
            pass
        """, 0, "finished"),
    "caught, then sys.exit(5)": ("""
        try:
            sys.exit(3)
        except SystemExit:
            pass
        sys.exit(5)
        """, 5, "failed"),
    "caught, then an exception": ("""
        try:
            sys.exit(3)
        except SystemExit:
            pass
        raise RuntimeError("diverged")
        """, 1, "failed"),
    "sys.exit(0) caught, then sys.exit(3)": ("""
        try:
            sys.exit(0)
        except SystemExit:
            sys.exit(3)
        """, 3, "failed"),
    "sys.exit(3) caught, then sys.exit(0)": ("""
        try:
            sys.exit(3)
        except SystemExit:
            sys.exit(0)
        """, 0, "finished"),
    "sys.exit(3) through a finally": ("""
        try:
            sys.exit(3)
        finally:
            print("cleaned up")
        """, 3, "failed"),
    "sys.exit(3) while a thread still runs": ("""
        import threading, time
        threading.Thread(target=time.sleep, args=(1,)).start()
        sys.exit(3)
        """, 3, "failed"),
    "a thread's sys.exit(3), then a normal end": ("""
        import threading
        t = threading.Thread(target=sys.exit, args=(3,))
        t.start()
        t.join()
        """, 0, "finished"),
    "sys.exit(3) in an atexit handler (Python ignores it)": ("""
        import atexit
        atexit.register(sys.exit, 3)
        """, 0, "finished"),
}


@pytest.mark.parametrize("end", CAUGHT)
def test_a_caught_sys_exit_is_not_the_end(tmp_path, end):
    code, exit_code, status = CAUGHT[end]
    store, done = script(tmp_path, code)
    assert done.returncode == exit_code, done.stderr
    assert show(store)["status"] == status, done.stderr


@pytest.mark.parametrize("caught", [True, False])
def test_a_caught_sys_exit_under_python_m(tmp_path, caught):
    body = "try:\n    sys.exit(3)\nexcept SystemExit:\n    pass\n" if caught else "sys.exit(3)\n"
    (tmp_path / "mod.py").write_text(START + body)
    store = str(tmp_path / "t.db")
    done = subprocess.run([sys.executable, "-m", "mod", "sqlite:" + store], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                              [str(tmp_path), os.environ.get("PYTHONPATH", "")])))
    assert done.returncode == (0 if caught else 3), done.stderr
    assert show(store)["status"] == ("finished" if caught else "failed"), done.stderr


# D11: the script's own sys.excepthook, set after start_run, chained or not.
HOOKS = {
    "a hook that does not chain": ("sys.excepthook = lambda *a: print('own hook', file=sys.stderr)",
                                   "raise RuntimeError('diverged')", 1, "failed"),
    "a hook that chains": ("previous = sys.excepthook\n"
                           "sys.excepthook = lambda *a: (print('own hook', file=sys.stderr), "
                           "previous(*a))", "raise RuntimeError('diverged')", 1, "failed"),
    "Ctrl-C under a hook that does not chain": (
        "sys.excepthook = lambda *a: print('own hook', file=sys.stderr)",
        "raise KeyboardInterrupt", 130, "killed"),
    "the default hook put back": ("sys.excepthook = sys.__excepthook__",
                                  "raise RuntimeError('diverged')", 1, "failed"),
    "a hook, then a normal end": ("sys.excepthook = lambda *a: None", "pass", 0, "finished"),
}


@pytest.mark.parametrize("hook", HOOKS)
def test_the_scripts_own_excepthook_does_not_hide_how_it_ended(tmp_path, hook):
    install, end, exit_code, status = HOOKS[hook]
    store, done = script(tmp_path, install + "\n" + end + "\n")
    assert done.returncode in (exit_code, -2 if exit_code == 130 else exit_code), done.stderr
    if exit_code:
        assert "own hook" in done.stderr or "Traceback" in done.stderr, done.stderr
    assert show(store)["status"] == status, done.stderr


def test_a_threading_excepthook_set_before_a_later_run_is_chained(tmp_path):
    # Replaced between two runs (without chaining): the second run chains
    # it again, so a thread's exception still fails the run it started.
    store, done = script(tmp_path, """
        import threading
        threading.excepthook = lambda args: print("own thread hook", file=sys.stderr)
        def work():
            trainscope.start_run(name="t", store=sys.argv[1], record_environment=False)
            raise ValueError("in a thread")
        t = threading.Thread(target=work)
        t.start()
        t.join()
        """)
    assert done.returncode == 0, done.stderr
    assert "own thread hook" in done.stderr
    assert show(store, "t")["status"] == "failed"
    assert show(store)["status"] == "finished"


def test_an_error_in_the_interactive_interpreter_ends_a_command_not_the_run(tmp_path):
    store = str(tmp_path / "t.db")
    commands = (f"import trainscope\nrun = trainscope.start_run(name='x', store='sqlite:{store}', "
                "record_environment=False)\nundefined_name\nrun.log({'loss': 1.0}, step=0)\n")
    done = subprocess.run([sys.executable, "-i"], input=commands, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "NameError" in done.stderr
    j = show(store)
    assert j["status"] == "finished", done.stderr
    assert {m["key"] for m in j["metric_summaries"]} == {"loss"}


# D12: finish() with what ends no run.
ENDS_NOTHING = "ends no run: finish\\(\\) takes 'finished', 'failed', 'killed' or 'stopped'$"


@pytest.mark.parametrize("status", ["running", "created", "bogus", "Finished", ""])
def test_finish_with_a_status_that_ends_nothing_is_refused_and_the_run_goes_on(tmp_path, status):
    store = str(tmp_path / "t.db")
    run = trainscope.start_run(name="x", store="sqlite:" + store, record_environment=False)
    run.log({"loss": 1.0}, step=0)
    with pytest.raises(ValueError, match=f"^status {status!r} " + ENDS_NOTHING):
        run.finish(status)
    assert show(store)["status"] == "running"
    run.log({"loss": 2.0}, step=1)
    run.finish()
    j = show(store)
    assert j["status"] == "finished"
    assert [m["count"] for m in j["metric_summaries"] if m["key"] == "loss"] == [2]


def test_the_binding_refuses_a_status_that_ends_nothing_before_it_ends_the_run(tmp_path):
    store = str(tmp_path / "t.db")
    run = trainscope.start_run(name="x", store="sqlite:" + store, record_environment=False)
    with pytest.raises(ValueError, match="^run status 'running' ends no run"):
        run._run.end("running")
    assert not run._run.ended
    run.log({"loss": 1.0}, step=0)
    run.finish("stopped")
    assert show(store)["status"] == "stopped"


def test_finish_running_left_uncaught_fails_the_run(tmp_path):
    store, done = script(tmp_path, "run.finish('running')\n")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith("ValueError: status 'running' ends no run")
    assert show(store)["status"] == "failed", done.stderr


# Tenth hunt (D10): a daemon thread's run that is still at work when the
# interpreter ends was cut off there: killed, in a `with` block or not;
# one whose thread ended before keeps the interpreter's status.
@pytest.mark.parametrize("opened", ["with", "start_run"])
def test_a_daemon_threads_run_cut_off_by_the_interpreters_end_is_killed(tmp_path, opened):
    body = {"with": """
        def work():
            with trainscope.start_run(name="d", store=sys.argv[1],
                                      record_environment=False) as r:
                for step in range(10 ** 6):
                    r.log({"loss": 1.0}, step=step)
                    started.set()
                    time.sleep(0.01)
        """, "start_run": """
        def work():
            r = trainscope.start_run(name="d", store=sys.argv[1], record_environment=False)
            for step in range(10 ** 6):
                r.log({"loss": 1.0}, step=step)
                started.set()
                time.sleep(0.01)
        """}[opened]
    store, done = script(tmp_path, """
        import threading, time
        started = threading.Event()
        """ + body + """
        threading.Thread(target=work, daemon=True).start()
        started.wait(60)
        run.finish()
        """)
    assert done.returncode == 0, done.stderr
    assert show(store, "d")["status"] == "killed", done.stderr
    assert show(store, "x")["status"] == "finished", done.stderr


# Issue 51, twelfth hunt (B-D3): a SystemExit raised by the script itself
# (not through sys.exit, so no hook sees its code) with a run left open
# was recorded "finished" whatever its status. The process's exit status
# now has the last word: the run ends as the process exits.
RAISED = {
    "raise SystemExit(3)": ("raise SystemExit(3)", 3, "failed"),
    "raise SystemExit('bye')": ("raise SystemExit('bye')", 1, "failed"),
    "raise SystemExit(0)": ("raise SystemExit(0)", 0, "finished"),
    "raise SystemExit": ("raise SystemExit", 0, "finished"),
    "raise SystemExit(256), status 0": ("raise SystemExit(256)", 0, "finished"),
    "raise SystemExit(257), status 1": ("raise SystemExit(257)", 1, "failed"),
    "SystemExit(3) from a function": ("def leave():\n    raise SystemExit(3)\nleave()", 3,
                                      "failed"),
    "SystemExit(3) caught, then a normal end": (
        "try:\n    raise SystemExit(3)\nexcept SystemExit:\n    pass", 0, "finished"),
}


@pytest.mark.parametrize("end", RAISED)
def test_a_raised_system_exit_ends_the_run_with_the_exit_status(tmp_path, end):
    code, exit_code, status = RAISED[end]
    store, done = script(tmp_path, code + "\nrun.log({'loss': 2.0}, step=1)\n" if "caught" in end
                         else code + "\n")
    assert done.returncode == exit_code, done.stderr
    shown = show(store)
    assert shown["status"] == status, done.stderr
    assert shown["end_time"], shown
    points = subprocess.run([CLI, "--store", "sqlite:" + store, "--json", "metrics", "x", "loss"],
                            capture_output=True, text=True)
    assert points.returncode == 0, points.stderr
    assert len(json.loads(points.stdout)["points"]) == (2 if "caught" in end else 1), points.stdout


# Thirteenth hunt, A-D1 and A-D2: a run left open when the script called
# C's exit() (ctypes, an extension) was left running, and one started in
# an atexit handler of a script that exited 3 was recorded finished. The
# exit's own handler ends every run still open with the status.
OTHER_ENDS = {
    "C's exit(9)": ("import ctypes\nctypes.CDLL(None).exit(9)", 9, {"x": "failed"}),
    "C's exit(0)": ("import ctypes\nctypes.CDLL(None).exit(0)", 0, {"x": "finished"}),
    "a run started in an atexit handler, then sys.exit(3)": ("""
        import atexit
        def late():
            global kept
            kept = trainscope.start_run(name="late", store=sys.argv[1], record_environment=False)
        atexit.register(late)
        sys.exit(3)
        """, 3, {"x": "failed", "late": "failed"}),
    "the first run, started in an atexit handler and dropped, then sys.exit(3)": ("""
        import atexit
        def first():
            r = trainscope.start_run(name="first", store=sys.argv[1],
                                     record_environment=False)
            r.log({"a": 1.0}, step=0)
        atexit.register(first)
        sys.exit(3)
        """, 3, {"x": "failed", "first": "failed"}),
    "a run started in an atexit handler, then a normal end": ("""
        import atexit
        def late():
            global kept
            kept = trainscope.start_run(name="late", store=sys.argv[1], record_environment=False)
        atexit.register(late)
        """, 0, {"x": "finished", "late": "finished"}),
}


@pytest.mark.parametrize("end", OTHER_ENDS)
def test_every_run_still_open_ends_with_the_exit_status(tmp_path, end):
    code, exit_code, statuses = OTHER_ENDS[end]
    store, done = script(tmp_path, code)
    assert done.returncode == exit_code, done.stderr
    for name, status in statuses.items():
        assert show(store, name)["status"] == status, (name, done.stderr)


def test_the_first_run_started_in_an_atexit_handler_ends_with_the_exit_status(tmp_path):
    # A-D2 as the tester wrote it: no run before the handler's, so none of
    # the package's exit hooks was installed when the script exited 3.
    path, store = tmp_path / "late.py", str(tmp_path / "t.db")
    path.write_text(textwrap.dedent("""
        import sys, atexit, trainscope
        def late():
            r = trainscope.start_run(name="late", store=sys.argv[1], record_environment=False)
            r.log({"a": 1.0}, step=0)
        atexit.register(late)
        sys.exit(3)
        """))
    done = subprocess.run([sys.executable, str(path), "sqlite:" + store], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert show(store, "late")["status"] == "failed", done.stderr
