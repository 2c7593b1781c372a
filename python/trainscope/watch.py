"""A PyTorch model of one's own under trainscope's units, as a C++ loop's
model is: fingerprints (`trainscope diff`), the per-layer profile
(`trainscope profile show`), probes and alerts (`trainscope probes`,
TensorBoard) and the resource sampler of the process tree (DataLoader
workers included). Attached by `Run.watch()`; the model is not changed.

How: trainscope's C++ units read a mirror of the model (the model's own
parameter and buffer tensors, not copies, in a tree of the same modules),
and this module raises their events:
  - a step begins after the previous optimizer step (or at watch()); what
    comes before the model's forward pass is its data phase;
  - the root module's forward pre-hook and hook: forward, then loss;
  - `Tensor.backward` (wrapped while a model is watched): the loss, the
    backward phase, then the update phase until the step ends;
  - `optimizer.zero_grad` and `optimizer.step` (wrapped); the step ends when
    `optimizer.step()` returns, or at `run.step_done()` without an optimizer.
Layers are named by forward pre-hooks and hooks on every module without
children or with parameters of its own, installed only for the steps a unit
looks at (a profiled or probed step) and removed after them. There are no
backward hooks on modules (they break in-place operations on a module's
output): a layer's output gradient comes from a hook on its output tensor.

What it cannot see: a computation that is not a module (a functional call
in a parent's forward is the parent's, or unattributed at the top level);
operators on other threads (DataLoader workers: the data phase's wall time);
parameters replaced after watch() (watch again); more than one backward
pass per optimizer step (gradient accumulation: the events see the last).
"""
import unicodedata

import torch

from trainscope import _trainscope

# Tensor.backward, wrapped while any model is watched.
_WATCHES = []
_ORIGINAL_BACKWARD = None


def _backward(self, *args, **kwargs):
    watches = [w for w in _WATCHES if w.open]
    for w in watches:
        w.backward_begins(self)
    result = _ORIGINAL_BACKWARD(self, *args, **kwargs)
    for w in watches:
        w.backward_ended()
    return result


def _attach(watch):
    global _ORIGINAL_BACKWARD
    if not _WATCHES:
        _ORIGINAL_BACKWARD = torch.Tensor.backward
        torch.Tensor.backward = _backward
    _WATCHES.append(watch)


def _detach(watch):
    if watch in _WATCHES:
        _WATCHES.remove(watch)
        if not _WATCHES:
            torch.Tensor.backward = _ORIGINAL_BACKWARD


def check_model(model):
    """Refuses, before anything is attached, a model no Watch can hold: a
    TorchScript module, whose hooks torch refuses (Thirtieth hunt, B-D2:
    its RuntimeError came from _hook_root after the native watch was made),
    and a model another run that has not ended watches (B-D8: two runs'
    layer hooks on one model left the first one's profile all zeros)."""
    if isinstance(model, torch.jit.ScriptModule):
        how = "torch.jit.trace" if isinstance(model, torch.jit.TracedModule) else "torch.jit.script"
        raise ValueError(f"model is a TorchScript module ({type(model).__name__}): watch() needs "
                         f"an nn.Module it can hook; watch the module before {how}")
    for w in _WATCHES:
        if w.model is model and not w.run._run.ended:
            raise ValueError(f"model is already watched by run {w.run.uuid[:8]} ({w.run.name}); "
                             "one run watches a model at a time: finish that run first")


def _product(values):
    out = 1
    for v in values:
        out *= v
    return out


_POOL_DIMS = {torch.nn.MaxPool1d: 1, torch.nn.MaxPool2d: 2, torch.nn.MaxPool3d: 3}


def structure(module):
    """A module's type and what trainscope's FLOP formulas take of it."""
    s = {"type": type(module).__name__}
    if isinstance(module, torch.nn.Linear):
        s.update(in_channels=module.in_features, out_channels=module.out_features)
    elif isinstance(module, torch.nn.modules.conv._ConvNd):
        s.update(in_channels=module.in_channels, out_channels=module.out_channels,
                 kernel=module.kernel_size[0], kernel_elems=_product(module.kernel_size),
                 stride=module.stride[0], groups=module.groups)
    elif type(module) in _POOL_DIMS:
        k = module.kernel_size
        k = tuple(k) if isinstance(k, (tuple, list)) else (k,) * _POOL_DIMS[type(module)]
        s.update(kernel=k[0], kernel_elems=_product(k))
    return s


# A layer's name becomes a profile row and the keys of its probes
# (probe/NAME/weights/l2): the names the profile gives its own meaning, and
# what no key takes, are refused (thirty-sixth hunt, B-D1, B-D2).
_RESERVED_LAYERS = ("(wall)", "(other)", "(overhead)")
_LAYER_BYTES = 200  # probe/NAME/weight_gradients/l2 within a key's 256 bytes


def _check_layer_name(path):
    why = ("is a name trainscope's profile gives its own meaning" if path in _RESERVED_LAYERS
           else "holds a control character" if any(unicodedata.category(c) == "Cc" for c in path)
           else f"is longer than {_LAYER_BYTES} bytes"
           if len(path.encode("utf-8", "replace")) > _LAYER_BYTES else "")
    if why:
        shown = path if len(path) <= 64 else path[:61] + "..."
        raise ValueError(f"the model's module {shown!r} {why}: a layer's name becomes a profile "
                         "row and its probes' metric keys (probe/NAME/...); rename the module")


def mirror(model):
    """Every module (root first, parents before children), with its own
    parameters and buffers: what the C++ side builds its mirror from. A
    module name no layer may have is a ValueError naming it."""
    out = []
    for path, module in model.named_modules():
        _check_layer_name(path)
        params = [(n, p) for n, p in module.named_parameters(recurse=False)]
        buffers = [(n, b) for n, b in module.named_buffers(recurse=False) if b is not None]
        out.append((path, structure(module), params, buffers))
    return out


def layers_of(model):
    """(path, module) of the layers: every module without children, and
    every module with parameters of its own (the root: "" when it is one).
    A module used twice is one layer."""
    out = []
    for path, module in model.named_modules():
        leaf = next(module.children(), None) is None
        own = next(module.parameters(recurse=False), None) is not None
        if leaf or own:
            out.append((path, module))
    return out


def _first_tensor(x):
    if torch.is_tensor(x):
        return x
    if isinstance(x, (tuple, list)):
        for item in x:
            if torch.is_tensor(item):
                return item
    return None


class Watch:
    """The events of one watched model (one per run)."""

    def __init__(self, run, model, optimizer, settings):
        self.run, self.model, self.optimizer = run, model, optimizer
        self.layers = layers_of(model)
        self.handles, self.root_handles = [], []
        self.replaying = False
        self.eval_pass = False
        self.open = False  # a step has begun and not ended
        self.inputs = self.output = self.loss = None
        try:
            self.native = _trainscope.Watch(run._run, settings, mirror(model),
                                            type(model).__name__, self._forward,
                                            self._optimizer_state)
        except ValueError as e:  # the C++ reader's words are for --set
            raise ValueError(str(e).replace("--set ", "watch(): ", 1)) from None
        try:
            self._hook_root()
            _attach(self)
            self.begin_step()
        except BaseException:
            # Ended, its hooks removed: a half-made watch's units went on
            # sampling into the run (Thirtieth hunt, B-D2). The first error
            # is the one to tell.
            try:
                self.finish("failed")
            except Exception:  # noqa: BLE001
                pass
            raise

    # -- the step ---------------------------------------------------------
    def begin_step(self):
        self.native.batch_begin()
        self.open = True
        self.native.phase("data")  # installing the hooks is the step's own time
        if self.native.layers_wanted:
            self._hook_layers()

    def mark(self, phase):
        if self.open and not self.eval_pass and not self.replaying:
            self.native.phase(phase)

    def backward_begins(self, loss):
        if loss.dim() != 0 or self.inputs is None:
            return
        self.loss = loss
        self.native.after_forward(self.inputs, self.output, loss.detach())
        self.mark("backward")

    def backward_ended(self):
        if self.loss is None:
            return
        self.native.after_backward()
        self.mark("update")

    def end_step(self):
        """After optimizer.step() (or run.step_done())."""
        if not self.open:
            return
        self.mark("recording")
        self._unhook_layers()
        lr = 0.0
        if self.optimizer is not None and self.optimizer.param_groups:
            lr = float(self.optimizer.param_groups[0].get("lr", 0.0))
        self.native.after_step(lr)
        self.open = False
        self.inputs = self.output = self.loss = None
        self.begin_step()

    def finish(self, status):
        self._unhook_layers()
        for h in self.root_handles:
            h.remove()
        self.root_handles = []
        _detach(self)
        self.open = False
        self.native.end(status)

    # -- hooks --------------------------------------------------------------
    def _hook_root(self):
        def pre(module, inputs):
            if self.replaying:
                return
            self.eval_pass = not (module.training and torch.is_grad_enabled())
            if not self.eval_pass:
                self.inputs = _first_tensor(inputs)
            self.mark("forward")

        def post(module, inputs, output):
            if self.replaying:
                return
            if not self.eval_pass:
                self.output = _first_tensor(output)
            self.mark("loss")
            self.eval_pass = False

        # One at a time: a hook refused halfway leaves the first to remove.
        self.root_handles = [self.model.register_forward_pre_hook(pre)]
        self.root_handles.append(self.model.register_forward_hook(post))

    def _hook_layers(self):
        if self.handles:
            return
        native = self.native
        for path, module in self.layers:
            name = path or type(module).__name__

            def pre(module, inputs, name=name):
                if not self.eval_pass or self.replaying:
                    native.enter(name)

            def post(module, inputs, output, name=name, path=path):
                if self.eval_pass and not self.replaying:
                    return
                native.leave()
                out = _first_tensor(output)
                if out is not None:
                    ins = [t for t in inputs if torch.is_tensor(t)]
                    native.publish(name, path, ins, out)

            self.handles.append(module.register_forward_pre_hook(pre))
            self.handles.append(module.register_forward_hook(post))

    def _unhook_layers(self):
        for h in self.handles:
            h.remove()
        self.handles = []

    # -- what the units ask for --------------------------------------------------
    def _forward(self, x, training):
        """A forward pass a unit asks for (the layers' facts, a replay)."""
        was, hooked = self.model.training, bool(self.handles)
        self.model.train(training)
        self._hook_layers()
        self.replaying = True
        try:
            return _first_tensor(self.model(x))
        finally:
            self.replaying = False
            if not hooked:
                self._unhook_layers()
            self.model.train(was)

    def _optimizer_state(self):
        if self.optimizer is None:
            return []
        return [(p, t) for p, st in self.optimizer.state.items() for t in st.values()
                if torch.is_tensor(t) and t.dim() > 0]
