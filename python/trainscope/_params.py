"""Nested hyperparameters as the flat params a run takes: what the
Lightning and Hugging Face callbacks (trainscope.lightning,
trainscope.transformers) record of a module's, a Trainer's and a model
config's settings. Imports no framework."""
import argparse
import enum
import json
import numbers

import torch

# A param value's most bytes and a key's (the store's rule).
_VALUE_BYTES, _KEY_BYTES = 4096, 256


def _param_value(value):
    """A value as a param takes it: a number or text as it is, an enum as
    its value, a one-element tensor as its number, a list, tuple or set as
    JSON text (its items so converted), anything else as its str(); None
    stays None (not recorded)."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, (bool, str, numbers.Number)):
        return value
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return value.detach().cpu().item()
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        try:
            return json.dumps([_param_value(v) for v in items])
        except (TypeError, ValueError):
            pass
    return str(value)


def _cut(text):
    """Text of at most the 4096 bytes a param value holds ("..." at a cut)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= _VALUE_BYTES:
        return text
    return data[:_VALUE_BYTES - 3].decode("utf-8", "ignore") + "..."


def flat_params(tree, prefix=""):
    """A nested mapping (a dict, an argparse Namespace, Lightning's
    AttributeDict) as the flat {dotted key: number or text} that
    `Run.log_params` takes: keys as text, None left out, text cut at 4096
    bytes, a key longer than 256 bytes left out."""
    if isinstance(tree, argparse.Namespace):
        tree = vars(tree)
    out = {}
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, argparse.Namespace):
            value = vars(value)
        if isinstance(value, dict):
            out.update(flat_params(value, name + "."))
            continue
        value = _param_value(value)
        if value is None or len(name.encode("utf-8", "replace")) > _KEY_BYTES:
            continue
        out[name] = _cut(value) if isinstance(value, str) else value
    return out


def open_run(run):
    """`run` if it is a run that has not ended, else None."""
    return run if run is not None and not run.ended else None
