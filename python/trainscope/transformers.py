"""A Hugging Face `transformers.Trainer` training recorded by trainscope,
with one `TrainerCallback`.

    cfg = trainscope.config({"lr": 5e-4, "seeds": {"master": 0}})
    seeds = trainscope.setup(cfg)                     # threads; the init stream
    model = BertForSequenceClassification(config)     # its initial weights from it
    args = TrainingArguments("out", learning_rate=cfg["lr"], **trainer_seeds(seeds))
    with TrainscopeCallback(config=cfg) as callback:  # `with`: failed at once if train() raises
        Trainer(model, args, train_dataset=data, callbacks=[callback]).train()

The callback starts a run when training begins (`trainscope.start_run`:
the planned run when a study started the script) and ends it finished
when training ends. On the main process it records:
  - the TrainingArguments as the params args.*, the model's config as
    model.*, and config= as given;
  - every value the Trainer logs (`on_log`: loss, grad_norm, learning_rate,
    epoch, eval_*, the final train_runtime, ...) at its global step, as
    train/<key>, eval/<key> and test/<key> (eval_loss: eval/loss);
  - every checkpoint the Trainer saves (`on_save`), each file of its folder
    as the artifact checkpoints/checkpoint-<step>/<file>, of kind
    transformers.checkpoint;
  - fingerprints, the per-layer profile, probes and the resource sampler of
    the model (`Run.watch`), a step per optimizer step.

A Trainer has no hook for an exception: a train() that raises calls no
callback again. The run is then ended failed by the first of: leaving the
callback's `with` block by the exception, the callback's next train()
(it begins a new run), or the interpreter's end (trainscope's rule for a
run left open: failed by an uncaught exception, killed by Ctrl-C).

The Trainer calls the model with keyword arguments and gets a ModelOutput
back; the watch takes the batch from the keyword `input_ids` (else the
first tensor argument) and the output from `logits` (else the first
tensor of the output). The seeds: TrainingArguments' seed reseeds torch
as train() begins (dropout) and data_seed orders the batches;
`trainer_seeds(seeds)` gives them from trainscope's dropout and data_order
streams, so that a study's seeds reach them as they reach a plain script.
"""
import atexit
import os

import torch
import transformers
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

import trainscope
from trainscope._params import flat_params, given_run, open_run, watch_once
from trainscope.settings import _number_of

__all__ = ["TrainscopeCallback", "trainer_seeds", "flat_params"]



def trainer_seeds(seeds):
    """TrainingArguments' seed and data_seed from trainscope's Seeds (what
    `trainscope.setup()` returns): the dropout and data_order streams, in
    the 32 bits `transformers.set_seed` takes."""
    return {"seed": seeds["dropout"] % 2**32, "data_seed": seeds["data_order"] % 2**32}


def metric_key(key):
    """A key the Trainer logs as trainscope's: eval_loss as eval/loss,
    test_* as test/*, anything else as train/<key>."""
    for split in ("eval", "test"):
        if key.startswith(split + "_"):
            return f"{split}/{key[len(split) + 1:]}"
    return f"train/{key}"


def _first_tensor(values):
    for value in values:
        if torch.is_tensor(value):
            return value
    return None


class TrainscopeCallback(transformers.TrainerCallback):
    """Records a `Trainer.train()` into trainscope's store (the module's
    documentation says what).

    name, experiment, config, tags, store   as `trainscope.start_run`'s
    run     a Run of one's own to record into instead (not ended here)
    watch   `Run.watch`'s keyword arguments as a dict (fingerprint_every,
            profile_every, probes, ...); False: no watch
    """

    def __init__(self, name="", experiment="", config=None, tags=None, store=None,
                 run=None, watch=None):
        self._start = dict(name=name, experiment=experiment, config=config,
                           tags={"framework": "transformers", **(tags or {})}, store=store)
        self._watch = {} if watch is None or watch is True else watch
        self._own = run is None
        self.run = given_run(run)
        self._exit_hook = False
        self._hooks = []

    # -- the Trainer's events ------------------------------------------------
    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        if not state.is_world_process_zero:
            return
        if self._own:
            if open_run(self.run) is not None:  # the last train() raised: it never ended
                self.finish("failed")
            self.run = trainscope.start_run(**self._start)
            if not self._exit_hook:  # after the package's: atexit runs it first
                atexit.register(self._at_exit)
                self._exit_hook = True
        else:
            given_run(self.run)
        run = open_run(self.run)
        if run is None:
            return
        params = flat_params(args.to_dict(), "args.")
        config = getattr(model, "config", None)
        if config is not None and hasattr(config, "to_dict"):
            params.update(flat_params(config.to_dict(), "model."))
        run.log_params(params)
        if self._watch is not False and model is not None:
            inner = getattr(optimizer, "optimizer", optimizer)  # accelerate's wrapper
            watch_once(run, model, inner if hasattr(inner, "step") else optimizer, self._watch)
            self._hook_model(model)

    def on_log(self, args, state, control, logs=None, **kwargs):
        run = open_run(self.run)
        if run is None or not state.is_world_process_zero or not logs:
            return
        # Numbers by the package's rule: a Decimal, a 0-d NumPy array too
        # (thirty-fourth hunt, B-D1); text (a learning-rate schedule's name) is no metric.
        values = {metric_key(k): v for k, v in logs.items() if _number_of(v) is not None}
        if values:
            run.log(values, step=state.global_step)

    def on_save(self, args, state, control, **kwargs):
        run = open_run(self.run)
        if run is None or not state.is_world_process_zero:
            return
        folder = os.path.join(args.output_dir, f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
        for top, _, files in sorted(os.walk(folder)):
            for file in sorted(files):
                path = os.path.join(top, file)
                name = os.path.relpath(path, args.output_dir).replace(os.sep, "/")
                run.log_artifact(path, kind="transformers.checkpoint", name=f"checkpoints/{name}")

    def on_train_end(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            self.finish("finished")

    # -- the run ---------------------------------------------------------------
    def finish(self, status="finished"):
        """Ends the run this callback started (a run given as run= is left
        to its owner), and removes its hooks from the model."""
        for handle in self._hooks:
            handle.remove()
        self._hooks = []
        if self._own and open_run(self.run) is not None:
            self.run.finish(status)

    def _at_exit(self):
        """As the interpreter ends: a run whose train() raised and never
        came to on_train_end ends failed (killed by Ctrl-C), even when the
        script caught the exception and exits 0 (thirty-third hunt, B-D8)."""
        if self._own and open_run(self.run) is not None:
            self.finish(trainscope._ending or "failed")

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        """Ends the run failed (killed: Ctrl-C) when train() raised inside
        the block; leaving it normally changes nothing."""
        if kind is not None:
            self.finish("killed" if issubclass(kind, KeyboardInterrupt) else "failed")
        return False

    def _hook_model(self, model):
        """What the watch's own root hooks cannot take from a Trainer's
        call, model(**batch) -> ModelOutput: the batch (input_ids, else the
        first tensor keyword) and the output (logits, else the first
        tensor); in a forward pass the watch replays itself (model(x)), the
        output as that tensor."""
        watch = self.run._watch

        def training(module):  # as the watch tells a training pass from an evaluation
            return module.training and torch.is_grad_enabled() and not watch.replaying

        def pre(module, args, kwargs):
            if training(module) and watch.inputs is None:
                ids = kwargs.get("input_ids")
                watch.inputs = ids if torch.is_tensor(ids) else _first_tensor(kwargs.values())

        def post(module, args, kwargs, output):
            logits = getattr(output, "logits", None)
            if not torch.is_tensor(logits) and hasattr(output, "to_tuple"):
                logits = _first_tensor(output.to_tuple())
            if watch.replaying:
                return logits if torch.is_tensor(logits) else None
            if training(module) and watch.output is None and torch.is_tensor(logits):
                watch.output = logits
            return None

        self._hooks = [model.register_forward_pre_hook(pre, with_kwargs=True),
                       model.register_forward_hook(post, with_kwargs=True)]
