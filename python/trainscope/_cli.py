"""The `trainscope` command that `pip install .` puts on PATH: it runs the
C++ command line installed in the package folder (trainscope/bin), the same
program `make` builds, linked against this environment's torch."""
import os
import signal
import sys


def main():
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "trainscope")
    if not os.access(exe, os.X_OK):
        print(f"trainscope: {exe} is missing: this install of the package has no command "
              "line; reinstall it with `pip install .` in trainscope's source folder",
              file=sys.stderr)
        return 127
    # Python ignores SIGPIPE and SIGXFSZ; exec keeps an ignored signal
    # ignored, and trainscope's children (watch's command, a study's
    # trainings) would inherit it. trainscope guards its own output.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    # MLflow's client (`runs export --format mlflow`, `import mlflow`) runs
    # in this Python, the one the user installed trainscope into.
    os.environ.setdefault("TRAINSCOPE_PYTHON", sys.executable)
    os.execv(exe, ["trainscope"] + sys.argv[1:])
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
