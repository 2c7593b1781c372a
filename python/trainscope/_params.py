"""Nested hyperparameters as the flat params a run takes: what the
Lightning and Hugging Face callbacks (trainscope.lightning,
trainscope.transformers) record of a module's, a Trainer's and a model
config's settings. Imports no framework."""
import argparse
import decimal
import enum
import json
import numbers
import unicodedata
import warnings

import torch

from trainscope import _trainscope
from trainscope.settings import _readable, _scalar

# A param value's most bytes and a key's (the store's rule).
_VALUE_BYTES, _KEY_BYTES = 4096, 256


def _param_value(name, value):
    """A value as a param takes it: a number or text as it is, an enum as
    its value, a tensor, NumPy array or scalar of one element as the number
    it holds (by the package's rule: a meta tensor or a masked element is a
    ValueError naming the param), a list, tuple or set as JSON text (its
    items so converted), anything else as its str(); None stays None (not
    recorded). A complex number, a date or bytes is text: its str()."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (bool, str)) or _real(value):
        return value
    numpy = type(value).__module__.split(".")[0] == "numpy" and hasattr(value, "item")
    one = value.numel() == 1 if torch.is_tensor(value) else getattr(value, "size", 0) == 1
    if (torch.is_tensor(value) or numpy) and one:
        # A complex, a date or bytes is no number: its str(), as a Python
        # one is (thirty-fourth hunt, B-D2).
        number = _scalar(f"param '{name}'", value)
        return number if isinstance(number, bool) or _real(number) else str(value)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        try:
            return json.dumps([_param_value(name, v) for v in items])
        except (TypeError, ValueError):
            pass
    return str(value)


def _real(value):
    """Whether `value` is a real number a param takes as one (an int, a
    float, a Fraction, a Decimal; not a complex)."""
    return isinstance(value, (numbers.Real, decimal.Decimal))


def _cut(text):
    """Text of at most the 4096 bytes a param value holds ("..." at a cut)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= _VALUE_BYTES:
        return text
    return data[:_VALUE_BYTES - 3].decode("utf-8", "ignore") + "..."


def _key_problem(name):
    """Why no param takes the key `name` ("" when one does), by the rule
    every entry point keeps (store/accept.h): longer than 256 bytes, a
    control or bidi character, only blanks, not UTF-8 text."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "is not UTF-8 text (it holds a lone surrogate)"
    problem = _trainscope.param_key_problem(name)  # "param 'K' holds ...; a key is ..."
    return problem.split("; ")[0].rpartition("' ")[2] if problem else ""


def _left_out(name):
    """True, with one warning naming it, for a key no param takes: a
    framework's setting the fit goes on without, said rather than dropped in
    silence or ending the fit (thirty-fourth hunt, noted B-21; thirty-seventh,
    B-D1: a bidi control or a lone surrogate ended it)."""
    why = _key_problem(name)
    if why:
        shown = name[:64].encode("utf-8", "backslashreplace").decode("utf-8")
        warnings.warn(f"trainscope: hyperparameter {shown!r} left out: its key {why}, which "
                      "no param takes", stacklevel=3)
    return bool(why)


def flat_params(tree, prefix="", out=None):
    """A nested mapping (a dict, an argparse Namespace, Lightning's
    AttributeDict) as the flat {dotted key: number or text} that
    `Run.log_params` takes: keys as text, None left out, text cut at 4096
    bytes, a key no param takes (longer than 256 bytes, a control
    character, only blanks) left out with a warning. Two entries that flatten
    to one key ({"a.b": 1, "a": {"b": 2}}) are a ValueError naming it, as
    `start_run(config=)` refuses them."""
    out = {} if out is None else out
    if isinstance(tree, argparse.Namespace):
        tree = vars(tree)
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, argparse.Namespace):
            value = vars(value)
        if isinstance(value, dict):
            flat_params(value, name + ".", out)
            continue
        value = _param_value(name, value)
        if value is None or _left_out(name):
            continue
        value = _cut(_readable(value)) if isinstance(value, str) else value
        if name in out:
            raise ValueError(f"param '{name}' is given twice ({out[name]!r} and {value!r}): "
                             "name each setting once")
        out[name] = value
    return out


def open_run(run):
    """`run` if it is a run that has not ended, else None."""
    return run if run is not None and not run.ended else None


def given_run(run):
    """A run handed to a callback (run=): None, or one that has not ended;
    an ended one is a ValueError (a fit recorded nowhere, without a word:
    thirty-third hunt, B-D7)."""
    if run is not None and run.ended:
        raise ValueError(f"run= is run {run.uuid[:8]} ({run.name}), which has ended: give an "
                         "open run, or none (the callback then starts its own)")
    return run


def watch_once(run, model, optimizer, settings):
    """Run.watch of `model` for a training with `optimizer`; nothing when
    the run already watches both. A run watches one model and its
    optimizer: a second training of the model into one run= (a new
    optimizer) is a ValueError saying so (thirty-third hunt, B-D9: "this
    run already watches a model", of that very model)."""
    current = getattr(run, "_watch", None)
    if current is not None and current.model is model:
        if current.optimizer is optimizer:
            return
        raise ValueError(f"run {run.uuid[:8]} ({run.name}) already watches this model, with the "
                         "optimizer of an earlier training; a run watches one model and one "
                         "optimizer: give this training a run of its own (another run=, or "
                         "none), or pass watch=False")
    run.watch(model, optimizer, **settings)
