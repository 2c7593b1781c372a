"""What trainscope's trainer feeds a model for a config, for a loop of
one's own: its initial weights, its batches in order, its test set.

    inputs = trainscope.TrainerInputs("configs/demo.yaml", ["optimizer.name=sgd"])
    inputs.initialise(model)           # the init stream's weights, by name
    for epoch in range(epochs):
        for x, y in inputs.epoch(epoch):   # data_order and augment streams
            ...
    x_test, y_test = inputs.test()

A PyTorch model whose parameters are named as the trainer's model names
them (`trainscope config keys` and `trainscope runs show` list them) then
starts where `trainscope train CONFIG` starts and sees the same data, so
`trainscope diff` between the two runs compares the frameworks alone.
"""
import torch

from trainscope import _trainscope
from trainscope.settings import _module, _path, _settings_lines

__all__ = ["TrainerInputs"]


class TrainerInputs:
    """The inputs of `trainscope train CONFIG --set SETS`, computed by the
    trainer's own C++ (the same data reader, split, normalisation, model
    initialisation and epoch loader)."""

    def __init__(self, config, sets=()):
        self._native = _trainscope.TrainerInputs(_path("config", config), _settings_lines(sets))

    @property
    def params(self):
        """The resolved config as dotted keys, as a training records them."""
        return dict(self._native.params)

    @property
    def data_tags(self):
        """The data files read, as a training tags them (data.file.NAME)."""
        return dict(self._native.data_tags)

    @property
    def data_environment(self):
        """Their SHA-256, as a training records them (data.sha256.PATH):
        give it to start_run(environment=...)."""
        return dict(self._native.data_environment)

    @property
    def config_text(self):
        return self._native.config_text

    @property
    def batches_per_epoch(self):
        return self._native.batches_per_epoch

    @property
    def train_size(self):
        return self._native.train_size

    def initial_state(self):
        """The trainer's model after its initialisation: name -> tensor."""
        return dict(self._native.initial_state())

    def initialise(self, model):
        """Copies the trainer's initial weights into `model`. Its parameters
        and buffers must have the trainer's names and shapes: a name missing
        on either side, or a shape that differs, is a ValueError naming it,
        as is a tensor on the meta device (it holds no values to copy into)."""
        model = _module("model", model)
        state = self.initial_state()
        own = dict(model.named_parameters())
        own.update(model.named_buffers())
        missing = sorted(set(state) - set(own))
        extra = sorted(set(own) - set(state))
        if missing or extra:
            raise ValueError("the model's tensors are not the trainer's: "
                             f"missing {', '.join(missing) or 'none'}; "
                             f"not in the trainer's model {', '.join(extra) or 'none'}")
        with torch.no_grad():
            for name, value in state.items():
                if own[name].shape != value.shape:
                    raise ValueError(f"tensor {name} is {tuple(own[name].shape)} here and "
                                     f"{tuple(value.shape)} in the trainer's model")
                if own[name].is_meta:  # copy_ into it would do nothing (twenty-fifth hunt, A-D2)
                    raise ValueError(f"tensor {name} is on the meta device: it holds no values; "
                                     "give the model storage first (model.to_empty(device='cpu'))")
                own[name].copy_(value)
        return model

    def epoch(self, epoch):
        """The batches (inputs, targets) of epoch `epoch` (from 0): a whole
        number, else a ValueError naming it (never the binding's error)."""
        from trainscope import _whole  # the package's one rule for counts
        return self._native.epoch(_whole("epoch", epoch))

    def test(self):
        """The test set (inputs, targets) as the trainer evaluates it."""
        return self._native.test()
