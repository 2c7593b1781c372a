"""Named checks for the Python test drivers: each is printed ok/FAIL as it
is made, and the failures are kept for the verdict at the end."""
import sys


class Checks:
    def __init__(self):
        self.problems = []

    def __call__(self, cond, what):
        print(("ok    " if cond else "FAIL  ") + what, flush=True)
        if not cond:
            self.problems.append(what)

    def verdict(self, name, success):
        """Prints NAME: FAILED (and what) or NAME: SUCCESS; the exit code."""
        if self.problems:
            print(f"{name}: FAILED: " + "; ".join(self.problems))
            return 1
        print(f"{name}: {success}")
        return 0
