"""A `lightning.Trainer` fit recorded by trainscope, with one callback.

    cfg = trainscope.config({"lr": 0.1, "epochs": 2, "seeds": {"master": 0}})
    seeds = trainscope.setup(cfg)               # threads; the init stream
    model = LitNet(lr=cfg["lr"])                # its initial weights from it
    loader = DataLoader(data, shuffle=True, generator=seeds.generator("data_order"))
    trainer = lightning.Trainer(callbacks=[TrainscopeCallback(config=cfg)])
    trainer.fit(model, loader)

The callback starts a run when `fit` sets up (`trainscope.start_run`: the
planned run when a study started the script) and ends it when fit ends:
finished, or failed when fit raises (killed by Ctrl-C). On global rank 0
it records:
  - the LightningModule's (and datamodule's) hyperparameters as the params
    hparams.*, the Trainer's settings as trainer.*, and config= as given;
  - every metric the module logs (`self.log`), at the step Lightning hands
    its loggers (every `log_every_n_steps` steps, as for any logger);
  - every checkpoint a ModelCheckpoint saves, as the artifact
    checkpoints/<its file name>, of kind lightning.checkpoint;
  - fingerprints, the per-layer profile, probes and the resource sampler of
    the module (`Run.watch` on it, or on `model=`); a step is an optimizer
    step (with no optimizer or several: a training batch).

Metrics and checkpoints come through a Lightning Logger of its own
(`callback.logger`), which the callback adds to the Trainer's loggers as
fit starts, after ModelCheckpoint has chosen its folder (the Trainer's
folders do not change). The watch sees the batch, the output and the loss
through the module's forward: call `self(x)` in `training_step`. A later
`trainer.test()` or `validate()` is not recorded (the run has ended).
"""
import os

import lightning.pytorch as pl
import torch
from lightning.pytorch.loggers.logger import Logger, rank_zero_experiment

import trainscope
from trainscope._params import flat_params, given_run, open_run, watch_once

__all__ = ["TrainscopeCallback", "TrainscopeLogger", "flat_params"]

# The Trainer's settings recorded as trainer.<name>.
_TRAINER_SETTINGS = ("max_epochs", "min_epochs", "max_steps", "min_steps",
                     "accumulate_grad_batches", "gradient_clip_val", "gradient_clip_algorithm",
                     "check_val_every_n_epoch", "val_check_interval", "log_every_n_steps",
                     "num_devices", "num_nodes", "precision", "limit_train_batches",
                     "limit_val_batches")


def trainer_settings(trainer):
    """The Trainer's settings that shape a fit, as the params trainer.*."""
    out = {name: getattr(trainer, name, None) for name in _TRAINER_SETTINGS}
    out["strategy"] = type(trainer.strategy).__name__
    out["accelerator"] = type(trainer.accelerator).__name__
    out["deterministic_algorithms"] = torch.are_deterministic_algorithms_enabled()
    out["optimizers"] = ",".join(type(o).__name__ for o in trainer.optimizers)
    return flat_params(out, "trainer.")


class TrainscopeLogger(Logger):
    """The Logger side of TrainscopeCallback: hyperparameters, metrics and
    checkpoints into the callback's run (made by the callback:
    `callback.logger`)."""

    def __init__(self, callback):
        super().__init__()
        self._callback = callback

    @property
    def name(self):
        return "trainscope"

    @property
    def version(self):
        run = self._callback.run
        return run.name if run is not None else None

    @property
    @rank_zero_experiment
    def experiment(self):
        return self._callback.run

    def log_hyperparams(self, params, *args, **kwargs):
        run = open_run(self._callback.run)
        if run is not None and params:
            run.log_params(flat_params(params, "hparams."))

    def log_metrics(self, metrics, step=None):
        run = open_run(self._callback.run)
        if run is not None and metrics:
            run.log(metrics, step=step)

    def after_save_checkpoint(self, checkpoint_callback):
        """ModelCheckpoint calls it after each file it saves."""
        path = getattr(checkpoint_callback, "_last_checkpoint_saved", "") or \
            getattr(checkpoint_callback, "last_model_path", "")
        step = getattr(checkpoint_callback, "_last_global_step_saved", 0)
        if open_run(self._callback.run) is not None and path and os.path.isfile(path):
            self._callback.log_checkpoint(path, step)

    def finalize(self, status):
        self._callback.finalize(status)


class TrainscopeCallback(pl.Callback):
    """Records a `Trainer.fit` into trainscope's store (the module's
    documentation says what).

    name, experiment, config, tags, store   as `trainscope.start_run`'s
    run     a Run of one's own to record into instead (not ended here)
    watch   `Run.watch`'s keyword arguments as a dict (fingerprint_every,
            profile_every, probes, ...); False: no watch
    model   the module to watch (default: the LightningModule)
    """

    def __init__(self, name="", experiment="", config=None, tags=None, store=None,
                 run=None, watch=None, model=None):
        super().__init__()
        self._start = dict(name=name, experiment=experiment, config=config,
                           tags={"framework": "lightning", **(tags or {})}, store=store)
        self._watch = {} if watch is None or watch is True else watch
        self._model = model
        self._own = run is None
        self.run = given_run(run)
        self.logger = TrainscopeLogger(self)
        self._checkpoints = set()
        self._failed = None
        self._step_by_batch = False

    # -- Lightning's hooks ---------------------------------------------------
    def setup(self, trainer, pl_module, stage):
        if stage != "fit" or not trainer.is_global_zero:
            return
        if self._own and open_run(self.run) is None:
            self.run = trainscope.start_run(**self._start)
            self._checkpoints, self._failed = set(), None

    def on_fit_start(self, trainer, pl_module):
        if not self._own:
            given_run(self.run)
        run = open_run(self.run)
        if not trainer.is_global_zero or run is None:
            return
        run.log_params(trainer_settings(trainer))
        if self.logger not in trainer.loggers:  # after ModelCheckpoint chose its folder
            trainer.loggers = list(trainer.loggers) + [self.logger]
        if self._watch is not False:
            optimizer = trainer.optimizers[0] if len(trainer.optimizers) == 1 else None
            watch_once(run, self._model or pl_module, optimizer, self._watch)
            self._step_by_batch = optimizer is None

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if self._step_by_batch and open_run(self.run) is not None:
            self.run.step_done()

    def on_exception(self, trainer, pl_module, exception):
        """Fit raised: Lightning calls this, then its loggers' finalize,
        where the run ends failed (a checkpoint ModelCheckpoint saves on
        the exception is kept); here when the logger is not on the Trainer
        (fit raised before it started)."""
        self._failed = "killed" if isinstance(exception, KeyboardInterrupt) else "failed"
        if self.logger not in trainer.loggers:
            self.finalize("failed")

    def teardown(self, trainer, pl_module, stage):
        if stage == "fit" and self.logger not in trainer.loggers:
            self.finalize("success")

    # -- the run ---------------------------------------------------------------
    def log_checkpoint(self, path, step):
        """Copies a checkpoint file into the run as checkpoints/<its name>;
        one saved again under a name taken (last.ckpt) as
        checkpoints/step-<step>/<its name>."""
        base = os.path.basename(path)
        name = f"checkpoints/{base}"
        if name in self._checkpoints:
            name = f"checkpoints/step-{step}/{base}"
        self._checkpoints.add(name)
        self.run.log_artifact(path, kind="lightning.checkpoint", name=name)

    def finalize(self, status):
        """Ends the run this callback started: finished after a fit that
        returned, failed (killed: Ctrl-C) after one that raised."""
        if not self._own or open_run(self.run) is None:
            return
        self.run.finish(self._failed or ("failed" if status == "failed" else "finished"))
