"""The per-layer profile of a PyTorch model, measured by trainscope's C++
profiler: every libtorch operator of a profiled step is charged to a
(layer, phase) cell, so that the layers' forward, backward and update times
and the time outside them add up to the step (`trainscope profile show`).

Attached by `Run.watch(model, optimizer, profile_every=N)`; the model is not
changed. Module hooks (forward pre-hook and forward hook, never a backward
hook: those break in-place operations on a module's output) name the layer
that runs, and are installed only for the profiled steps. The phases come
from wrappers: the root module's forward (forward, then loss),
`Tensor.backward` (backward; what follows it until the step ends is the
update: gradient clipping, `optimizer.step`, a hand-written update),
`optimizer.zero_grad`; what happens between two steps is the next step's
data phase. Backward operators are charged to the layer whose
forward operator created their autograd node, update operators to the layer
owning the parameter, gradient or optimizer state they touch.

What it cannot see: a layer that is not a module (a functional call in a
parent's forward is charged to the parent, or is unattributed at the top
level); operators on other threads than the training thread (a DataLoader's
workers: their time is the data phase's wall time); a step without
`optimizer.step()` (no optimizer: call `run.step_done()` after each step).
"""
import time

import torch

from trainscope import _trainscope

# Tensor.backward, wrapped while any profiler is attached.
_ATTACHED = []
_ORIGINAL_BACKWARD = None


def _backward(self, *args, **kwargs):
    active = [p for p in _ATTACHED if p.native.active]
    for p in active:
        p.mark("backward")
    try:
        return _ORIGINAL_BACKWARD(self, *args, **kwargs)
    finally:
        for p in active:  # what follows until the step ends updates the weights
            p.mark("update")


def _attach(profiling):
    global _ORIGINAL_BACKWARD
    if not _ATTACHED:
        _ORIGINAL_BACKWARD = torch.Tensor.backward
        torch.Tensor.backward = _backward
    _ATTACHED.append(profiling)


def _detach(profiling):
    if profiling in _ATTACHED:
        _ATTACHED.remove(profiling)
        if not _ATTACHED:
            torch.Tensor.backward = _ORIGINAL_BACKWARD


def layers_of(model):
    """(name, module) of the layers the profile names: every module without
    children, and every module with parameters of its own; the root only
    when it is one of those. A module used twice is one layer."""
    out = []
    for name, module in model.named_modules():
        leaf = next(module.children(), None) is None
        own = next(module.parameters(recurse=False), None) is not None
        if leaf or own:
            out.append((name or type(module).__name__, module))
    return out


def _owners(model):
    """(layer, parameter) of every parameter: its module's path."""
    root = type(model).__name__
    return [(n.rpartition(".")[0] or root, p) for n, p in model.named_parameters()]


def _states(optimizer):
    """(parameter, state tensor) of the optimizer (Adam's moments)."""
    if optimizer is None:
        return []
    return [(p, t) for p, st in optimizer.state.items() for t in st.values()
            if torch.is_tensor(t) and t.dim() > 0]


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def _shape(x):
    if torch.is_tensor(x):
        return x
    if isinstance(x, (tuple, list)) and x and torch.is_tensor(x[0]):
        return x[0]
    return None


def layer_facts(name, module, inputs, output):
    """What the profile records of a layer: shapes, parameters, bytes and
    the structure trainscope's FLOP formulas take (profile/types.h)."""
    x, y = _shape(inputs), _shape(output)
    params = list(module.parameters())
    f = {"name": name, "type": type(module).__name__,
         "in_shape": list(x.shape) if x is not None else [],
         "out_shape": list(y.shape) if y is not None else [],
         "params": sum(p.numel() for p in params), "param_tensors": len(params),
         "param_bytes": float(sum(p.numel() * p.element_size() for p in params)),
         "in_bytes": float(x.numel() * x.element_size()) if x is not None else 0.0,
         "activation_bytes": float(y.numel() * y.element_size()) if y is not None else 0.0}
    if isinstance(module, torch.nn.Linear):
        f.update(in_channels=module.in_features, out_channels=module.out_features)
    elif isinstance(module, torch.nn.modules.conv._ConvNd):
        kernel = module.kernel_size
        elems = 1
        for k in kernel:
            elems *= k
        f.update(in_channels=module.in_channels, out_channels=module.out_channels,
                 kernel=kernel[0], kernel_elems=elems, stride=module.stride[0],
                 groups=module.groups)
    elif isinstance(module, (torch.nn.MaxPool1d, torch.nn.MaxPool2d, torch.nn.MaxPool3d)):
        kernel = _pair(module.kernel_size)
        elems = 1
        for k in kernel:
            elems *= k
        f.update(kernel=kernel[0], kernel_elems=elems)
    return f


class Profiling:
    """The profile of one watched model: steps warmup + 1 + k * every."""

    def __init__(self, run, model, optimizer, every, warmup):
        if every < 1 or warmup < 0:
            raise ValueError(f"profile_every {every} must be >= 1 and profile_warmup {warmup} "
                             ">= 0")
        self.run, self.model, self.optimizer = run, model, optimizer
        self.every, self.warmup = every, warmup
        self.native = _trainscope.Profiler()
        self.layers = layers_of(model)
        self.facts = {}
        self.handles = []
        self.phase = "none"
        self.eval_pass = False
        self.step = 0  # optimizer steps done
        self.step_start = time.perf_counter()
        _attach(self)

    def profiled(self, step):
        return step > self.warmup and (step - self.warmup - 1) % self.every == 0

    def mark(self, phase):
        if self.native.active and not self.eval_pass:
            self.phase = phase
            self.native.phase(phase)

    def _begin(self):
        """The step after `self.step` starts: profiled, or not."""
        self.step_start = time.perf_counter()
        if not self.profiled(self.step + 1):
            return
        self._hook()
        self.native.begin(self.step + 1, _owners(self.model), _states(self.optimizer))
        self.mark("data")

    def end_step(self):
        """Ends the current step (after the optimizer's step)."""
        self.step += 1
        profiled = self.native.active
        if profiled:
            self.native.end()
            self._unhook()
        key = "profile/step_ms_profiled" if profiled else "profile/step_ms_unprofiled"
        self.run._run.log_metrics({key: (time.perf_counter() - self.step_start) * 1e3},
                                  self.step)

    def begin_step(self):
        self._begin()

    def _hook(self):
        root = self.model

        def root_pre(module, inputs):
            self.eval_pass = not (module.training and torch.is_grad_enabled())
            self.mark("forward")

        def root_post(module, inputs, output):
            self.mark("loss")
            self.eval_pass = False

        self.handles.append(root.register_forward_pre_hook(root_pre))
        for name, module in self.layers:
            self.handles.append(module.register_forward_pre_hook(self._enter(name)))
            self.handles.append(module.register_forward_hook(self._leave(name)))
        self.handles.append(root.register_forward_hook(root_post))

    def _enter(self, name):
        native = self.native

        def pre(module, inputs):
            if not self.eval_pass:
                native.enter(name)
        return pre

    def _leave(self, name):
        native, facts = self.native, self.facts

        def post(module, inputs, output):
            if self.eval_pass:
                return
            native.leave()
            if name not in facts:
                facts[name] = layer_facts(name, module, inputs, output)
        return post

    def _unhook(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    def finish(self, status):
        """Records the profile (not for a failed run) and detaches."""
        self._unhook()
        _detach(self)
        self.native.discard()  # a step cut short is kept out of the profile
        if status != "failed" and self.native.iterations:
            # The layers in forward order (the order they first ran).
            _trainscope.save_profile(self.run._run, self.native, list(self.facts.values()))
