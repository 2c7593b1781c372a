"""trainscope for PyTorch scripts: record a run of any training.

    import torch, trainscope

    with trainscope.start_run(name="mlp", config={"lr": 0.1}) as run:
        for step in range(100):
            ...
            run.log({"train/loss": loss}, step=step)   # floats or 0-d tensors

The run goes to the store named by `store=`, else $TRAINSCOPE_STORE, else
./trainscope.db, where `trainscope runs show`, `plot`, `stats` and the
dashboard read it like any other. An exception inside the `with` block
ends the run "failed", Ctrl-C "killed"; leaving it normally, "finished".

A thin layer: the recording is trainscope's C++ (`trainscope._trainscope`);
this package turns Python values into its arguments and adds what only
Python knows (the interpreter and the versions of the imported packages).
"""
import hashlib
import importlib.metadata
import os
import platform
import sys

import torch  # first: the module shares libtorch's types with it

from trainscope import _build


def _check_torch():
    """The C++ module links the libtorch it was compiled against: beside
    another torch it would fail to load with an undefined symbol, or load
    and crash. One line instead, before it is loaded."""
    built, found = _build.TORCH_VERSION, torch.__version__
    git = getattr(torch.version, "git_version", "") or ""
    if built != found or (_build.TORCH_GIT and git and git != _build.TORCH_GIT):
        same = f" (git {_build.TORCH_GIT[:12]} against {git[:12]})" if built == found else ""
        raise ImportError(
            f"trainscope was built for torch {built} and this environment has torch "
            f"{found}{same} ({os.path.dirname(torch.__file__)}): rebuild it here with "
            "`pip install --no-cache-dir --force-reinstall .` in trainscope's source folder")
    have = "%d.%d" % sys.version_info[:2]
    if _build.PYTHON_VERSION != have:
        raise ImportError(f"trainscope was built for Python {_build.PYTHON_VERSION}, not {have}: "
                          "rebuild it with this interpreter")


_check_torch()

from trainscope import _trainscope  # noqa: E402 (after the check above)
from trainscope.inputs import TrainerInputs
from trainscope.watch import Watch
from trainscope.settings import STREAMS, Seeds, _flatten, _text, config, setup

Error = _trainscope.Error

__all__ = ["Run", "start_run", "Error", "default_store", "config",
           "setup", "Seeds", "STREAMS", "TrainerInputs"]


def default_store():
    """The store a run goes to when none is given."""
    return _trainscope.default_store()


def python_environment():
    """The interpreter, and the version of every imported distribution
    (importlib.metadata), as environment entries python.*."""
    env = {
        "python.version": platform.python_version(),
        "python.implementation": platform.python_implementation(),
        "python.executable": sys.executable,
    }
    names = {m.split(".")[0] for m in list(sys.modules) if m and not m.startswith("_")}
    for dist, modules in _distributions().items():
        if names.intersection(modules):
            env[f"python.packages.{dist}"] = _version(dist)
    script = sys.argv[0] if sys.argv else ""
    if script and os.path.isfile(script):
        env["python.script"] = os.path.abspath(script)
        with open(script, "rb") as f:
            env["python.script.sha256"] = hashlib.sha256(f.read()).hexdigest()
    return env


def _distributions():
    """distribution name -> the top-level modules it provides."""
    out = {}
    for module, dists in importlib.metadata.packages_distributions().items():
        for d in dists:
            out.setdefault(d, set()).add(module)
    return out


def _version(dist):
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _number(key, value):
    """A metric value: a Python number or a one-element tensor."""
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(f"metric '{key}' is a tensor of {value.numel()} elements; log a "
                             "scalar (a 0-d tensor, .mean(), .item())")
        return float(value.detach().item())
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"metric '{key}' is a {type(value).__name__}, not a number")
    return float(value)


class Run:
    """One recorded run. Use `start_run()`; every method on one thread."""

    def __init__(self, native):
        self._run = native
        self._step = 0

    @property
    def uuid(self):
        return self._run.uuid

    @property
    def name(self):
        return self._run.name

    @property
    def store(self):
        return self._run.store

    def log(self, metrics, step=None):
        """Logs a dict of metrics at `step` (default: the step after the
        last one logged). Values are numbers or one-element tensors; a step
        that goes back and a value that is not finite are ValueErrors,
        nothing of the call recorded."""
        if step is None:
            step = self._step
        if isinstance(step, bool) or not isinstance(step, int):
            raise ValueError(f"step {step!r} is not an integer")
        values = {str(k): _number(k, v) for k, v in metrics.items()}
        self._run.log_metrics(values, step)
        self._step = step + 1

    def log_metric(self, key, value, step=None):
        self.log({key: value}, step)

    def log_params(self, params):
        """Params (a dict, nested dicts as dotted keys); a param keeps its
        first value: a different one later is an Error."""
        self._run.set_params(_flatten(params))

    def set_tags(self, tags):
        self._run.set_tags({str(k): _text(v) for k, v in tags.items()})

    def log_artifact(self, path, kind="file", name=""):
        """Copies a file into the run (hashed); returns its name there."""
        return self._run.add_artifact(os.fspath(path), kind, name)

    def watch(self, model, optimizer=None, fingerprint_every=1, profile_every=None,
              profile_warmup=5, probes=None, probes_every=None, monitor_interval=1.0,
              settings=None):
        """Attaches trainscope's units to a model without changing it
        (trainscope.watch has how, and what they cannot see). A step ends
        with `optimizer.step()` (wrapped) or, without an optimizer, with
        `run.step_done()`.

        fingerprint_every  hash every parameter, buffer and the loss every N
                           steps (0: never), for `trainscope diff`
        profile_every      profile the steps profile_warmup + 1 + k * N layer
                           by layer (`trainscope profile show`)
        probes             a preset (economy, standard, full): per-layer
                           signals and alerts (`trainscope probes`), every
                           `probes_every` steps (default: the preset's)
        monitor_interval   seconds between resource samples of the process
                           tree (0: off)
        settings           further trainscope keys of these units, as
                           "key=value" (`trainscope config keys`), e.g.
                           ["probes.layers=conv*"]"""
        if getattr(self, "_watch", None) is not None:
            raise ValueError("this run already watches a model: one model per run")
        sets = [f"fingerprint.every_steps={int(fingerprint_every)}",
                f"monitor.interval_s={float(monitor_interval)}"]
        if profile_every is not None:
            sets += ["profile.enabled=true", f"profile.every={int(profile_every)}",
                     f"profile.warmup_steps={int(profile_warmup)}"]
        if probes is not None:
            sets.append(f"probes.preset={probes}")
            if probes_every is not None:
                sets.append(f"probes.every={int(probes_every)}")
        sets += [str(s) for s in (settings or [])]
        self._watch = Watch(self, model, optimizer, sets)
        if optimizer is not None:
            self._wrap(optimizer)
        return self

    def _wrap(self, optimizer):
        step, zero_grad, watch = optimizer.step, optimizer.zero_grad, self._watch

        def wrapped_step(*args, **kwargs):
            watch.mark("update")
            result = step(*args, **kwargs)
            self.step_done()
            return result

        def wrapped_zero_grad(*args, **kwargs):
            watch.mark("zero_grad")
            return zero_grad(*args, **kwargs)

        optimizer.step, optimizer.zero_grad = wrapped_step, wrapped_zero_grad

    def step_done(self):
        """Ends a training step of the watched model (the wrapped
        optimizer.step calls it: call it yourself only without one)."""
        if getattr(self, "_watch", None) is not None and not self._run.ended:
            self._watch.end_step()

    def finish(self, status="finished"):
        """Ends the run: finished, failed, killed or stopped."""
        watch, self._watch = getattr(self, "_watch", None), None
        if watch is not None and not self._run.ended:
            watch.finish(status)
        self._run.end(status)

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.finish("finished")
        elif issubclass(kind, KeyboardInterrupt):
            self.finish("killed")
        else:
            self.finish("failed")
        return False


def start_run(name="", experiment="", config=None, tags=None, store=None, parent="",
              record_environment=True, environment=None):
    """Starts a run in `store` (default: $TRAINSCOPE_STORE, else
    ./trainscope.db) under `experiment`, with the config dict as its params
    (nested dicts as dotted keys) and tags. Without a name the run is named
    after the script ("train", then "train-2", ...).

    Started by a study (`command:` in a study file), the run is the planned
    run the study started the script for: its name, experiment and parent
    come from the environment the study set ($TRAINSCOPE_RUN_NAME,
    $TRAINSCOPE_EXPERIMENT, $TRAINSCOPE_PARENT, $TRAINSCOPE_STORE) and win
    over the arguments, and its config text is what the study planned for
    it ($TRAINSCOPE_PLANNED). `environment` adds entries of one's own to
    the environment manifest (the script's git commit, the interpreter and
    the imported packages' versions are recorded anyway)."""
    args = _trainscope.RunArgs()
    args.store = store if store is not None else ""
    script = os.path.splitext(os.path.basename(sys.argv[0] if sys.argv and sys.argv[0] else ""))[0]
    planned = os.environ.get("TRAINSCOPE_RUN_NAME", "") if not parent else ""
    if planned:  # a study's run: what the study planned wins over the script's names
        args.name, args.parent = planned, os.environ.get("TRAINSCOPE_PARENT", "")
        args.experiment = os.environ.get("TRAINSCOPE_EXPERIMENT", "") or experiment
        args.config_text = os.environ.get("TRAINSCOPE_PLANNED", "")
        args.store = ""  # the study's ($TRAINSCOPE_STORE)
    else:
        args.name, args.parent, args.experiment = name or script, parent, experiment
    args.unique_name = not name and not planned
    args.command_line = " ".join([sys.executable] + sys.argv)
    args.params = _flatten(config or {})
    # (args' maps are copies on the C++ side: build them, then assign.)
    # A model of the script's own: trainscope cannot build it (no replay).
    args.tags = {"source": "python", "model.custom": "true",
                 **{str(k): _text(v) for k, v in (tags or {}).items()}}
    args.environment = {**python_environment(),
                        **{str(k): _text(v) for k, v in (environment or {}).items()}}
    args.script = args.environment.get("python.script", "")  # its git commit and diff
    args.record_environment = record_environment
    return Run(_trainscope.Run(args))
