"""A script's settings and seeds, the same whether it runs alone or as a
planned run of a study (`command:` in a study file).

    cfg = trainscope.config({"lr": 0.1, "epochs": 2, "seeds": {"master": 0}})
    seeds = trainscope.setup(cfg)     # seeds Python, NumPy, torch; threads
    model = Net()                     # initialised from the init stream
    seeds.use("dropout")              # dropout masks from their own stream
    loader = DataLoader(data, shuffle=True, generator=seeds.generator("data_order"))

A study hands each run its settings in $TRAINSCOPE_SET ("key=value"
lines): config() applies them over the script's defaults, so that a grid
over `lr` or a study of the sources (seeds.init, seeds.data_order, ...,
compute.threads) reaches the script unchanged.
"""
import copy
import decimal
import math
import numbers
import os
import random
import re
import sys

import torch

from trainscope import _trainscope

__all__ = ["config", "setup", "Seeds", "STREAMS"]

# The named random streams, as trainscope's trainer has them.
STREAMS = ("init", "data_order", "augment", "dropout")
# Sections of trainscope's own that a study may set without the script
# declaring them (the sources a study varies live there).
_OWN = ("seeds", "compute", "determinism")


def _readable(text):
    """`text` as UTF-8 the C++ side takes: a lone surrogate (a byte of a
    non-UTF-8 argv, path or setting, as Python decodes it) becomes U+FFFD,
    as watch shows such bytes (thirty-seventh hunt, B-D1, B-D2)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            data = text.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            data = text.encode("utf-8", "surrogatepass")
        return data.decode("utf-8", "replace")


def _kind(value):
    """A value's type with its article: 'an int', 'a float'."""
    name = type(value).__name__
    return ("an " if name[:1] in "aeiou" else "a ") + name


def _digits(value):
    """How many decimal digits an int has, without writing it out (Python
    refuses to write an int of more than sys.get_int_max_str_digits())."""
    return max(1, int(abs(int(value)).bit_length() * 0.30102999566398120) + 1)


def _path(what, value):
    """A path argument (str or os.PathLike) as text; one holding a NUL byte,
    which the C++ side would cut there and use, is a ValueError naming it."""
    text = os.fspath(value)
    if not isinstance(text, str):
        raise ValueError(f"{what} must be a text path, not {type(text).__name__} {text!r:.64}")
    if "\0" in text:
        raise ValueError(f"{what} {text!r:.80} holds a NUL byte, which no path holds")
    return text


def _text(value, what="a value"):
    """A value as the store and the config reader take it; an int too long
    to write is a ValueError naming `what` (no value holds it: a value is
    at most 4096 bytes)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    # One text per number whatever its type (twenty-sixth hunt, A-D1): a
    # Fraction was "1/2", which no reader takes as 0.5, and a Decimal NaN
    # "NaN" where a float's is "nan". A fraction is written as the float
    # a reader reads back; a non-finite Decimal as a float's "nan", "inf".
    if isinstance(value, numbers.Rational) and not isinstance(value, numbers.Integral) and \
            value.denominator == 1:
        value = int(value)  # Fraction(5): "5", as 5
    fraction = isinstance(value, numbers.Rational) and not isinstance(value, numbers.Integral)
    if fraction or (isinstance(value, decimal.Decimal) and not value.is_finite()):
        try:
            value = float("nan") if isinstance(value, decimal.Decimal) and value.is_nan() \
                else float(value)
        except OverflowError:
            raise ValueError(f"{what} is {_repr(value)}, which no double holds") from None
    try:
        text = str(value)
    except ValueError as e:  # Python's limit on the digits it writes
        if isinstance(value, numbers.Integral):
            raise ValueError(f"{what} is an integer of about {_digits(value)} digits, longer than "
                             "any value (4096 bytes at most)") from None
        first = (str(e).splitlines() or [""])[0][:120]
        raise ValueError(f"{what} is {_kind(value)} that cannot be written as text "
                         f"({first})") from None
    except Exception as e:  # noqa: BLE001 (an object whose __str__ raises its own)
        raise ValueError(f"{what} is {_kind(value)} that cannot be written as text (its __str__ "
                         f"raised {type(e).__name__})") from None
    return text


def _scalar(what, value):
    """A tensor, NumPy array or NumPy scalar of one element as the Python
    number it holds (of any dtype); anything else as it is."""
    tensor = isinstance(value, torch.Tensor)
    numpy = type(value).__module__.split(".")[0] == "numpy" and hasattr(value, "item")
    if not tensor and not numpy:
        return value
    # numpy.ma.masked (and a masked element): no value, not the NaN NumPy
    # makes of it with a warning (thirty-second hunt, B-D3).
    if not tensor and sys.modules["numpy"].ma.is_masked(value):
        raise ValueError(f"{what} is masked (numpy.ma.masked): it holds no value")
    size = value.numel() if tensor else getattr(value, "size", 1)
    if size != 1:
        kind = "tensor" if tensor else "NumPy array"
        raise ValueError(f"{what} is a {kind} of {size} elements (shape {tuple(value.shape)}); "
                         "log a scalar (a 0-d tensor, .mean(), .item())")
    if tensor and value.is_meta:
        raise ValueError(f"{what} is a tensor on the meta device: it holds no value")
    if tensor and (value.is_nested or value.layout != torch.strided):
        kind = "nested" if value.is_nested else str(value.layout).replace("torch.", "")
        raise ValueError(f"{what} is a {kind} tensor: log a dense scalar (a 0-d tensor, "
                         ".item())")
    try:
        return value.detach().item() if tensor else value.item()
    except (RuntimeError, NotImplementedError, TypeError, ValueError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ValueError(f"{what} cannot be read as one number ({first[:120]})") from None


def _module(what, value):
    """A model argument: a torch.nn.Module instance, else a ValueError
    naming `what` and the value (a class, a number, None)."""
    if isinstance(value, torch.nn.Module):
        return value
    if isinstance(value, type):
        raise ValueError(f"{what} is the class {value.__name__}, not a model: give an instance "
                         f"(e.g. {value.__name__}(...))")
    raise ValueError(f"{what} must be a torch.nn.Module, not {_kind(value)} {_repr(value)}")


def _optimizer(value):
    """An optimizer argument: None or an object with a step() method (a
    torch.optim.Optimizer, or a wrapper of one), else a ValueError."""
    if value is None or (not isinstance(value, type) and callable(getattr(value, "step", None))):
        return value
    if isinstance(value, type):
        raise ValueError(f"optimizer is the class {value.__name__}, not an optimizer: give an "
                         "instance (e.g. torch.optim.SGD(model.parameters(), lr=0.1))")
    raise ValueError(f"optimizer must be a torch.optim.Optimizer (an object with step()), not "
                     f"{_kind(value)} {_repr(value)}")


def _number_of(value):
    """`value` as a Python number when it is one of the numbers the package
    takes (docs/python.md: bool, int, float, Fraction, Decimal, NumPy
    scalars, tensors and arrays of one element), else None."""
    try:
        value = _scalar("value", value)
    except ValueError:
        return None
    if isinstance(value, (numbers.Real, decimal.Decimal)) and not isinstance(value, complex):
        return value
    return None


def _repr(value):
    """A value for a message: its repr, cut at 64 characters; an int too
    long to write, or an object whose repr fails, described instead."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 (an int past Python's digits, a repr that raises)
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return f"<an integer of about {_digits(value)} digits>"
        return f"<{_kind(value)}>"
    return text if len(text) <= 64 else text[:61] + "..."


def _flag(what, value):
    """A True/False argument: a bool (NumPy's too); anything else refused,
    never taken by its truth ("false" is a non-empty string)."""
    if isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool_", "bool"):
        return bool(value)
    raise ValueError(f"{what} must be True or False, not {_kind(value)} {_repr(value)}")


# A key's bytes at most, as the rule of a run's params has it.
_KEY_BYTES = 256


def _walk(tree, prefix=""):
    """(dotted key, value, its dict, its own key) of each leaf of a nested
    dict, in order; iterative, and a key past the params' 256 bytes is a
    ValueError naming it, so a dict nested thousands deep ends in one line,
    never a RecursionError."""
    stack = [(prefix, iter(tree.items()), tree)]
    while stack:
        at, items, node = stack[-1]
        entry = next(items, None)
        if entry is None:
            stack.pop()
            continue
        key, value = entry
        name = f"{at}{key}"
        if len(name.encode("utf-8", "surrogatepass")) > _KEY_BYTES:
            raise ValueError(f"config key {_repr(name[:60] + '...')} is longer than "
                             f"{_KEY_BYTES} bytes: nest less deeply, or use shorter keys")
        if isinstance(value, dict):
            stack.append((name + ".", iter(value.items()), value))
        else:
            yield name, value, node, key


def _flatten(tree, prefix=""):
    """A nested dict as dotted keys ("seeds.master"), values as text."""
    return {name: _text(value, f"config key {_repr(name)}")
            for name, value, _, _ in _walk(tree, prefix)}


def _check_defaults(tree):
    """config()'s defaults: keys a setting can name (text without '.', which
    it reads as nesting), so that every key is one a study can set."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for key, value in node.items():
            if not isinstance(key, str) or "." in key or not key:
                raise ValueError(f"config defaults: key {_repr(key)} cannot be set by a setting "
                                 "(keys are non-empty text without '.', which means nesting): "
                                 "give {'a': {'b': ...}} for a.b")
            if isinstance(value, dict):
                stack.append(value)
    # Each key as the param it becomes: its length (_walk), its text.
    for name, _, _, _ in _walk(tree):
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(f"config defaults: key {_repr(name)} is not UTF-8 text") from None
        problem = _trainscope.param_key_problem(name)
        if problem:
            raise ValueError(f"config defaults: {problem}")


def _settings_lines(sets, what="sets"):
    """`sets` checked: a list (or other iterable, not a str) of "key=value"
    strings, each one setting; else a TypeError naming `what` and the value
    (a lone string would be read as its characters). None: $TRAINSCOPE_SET's."""
    if sets is not None:
        if isinstance(sets, (str, bytes)) or not hasattr(sets, "__iter__"):
            raise TypeError(f"{what} must be a list of 'key=value' strings, not "
                             f"{type(sets).__name__} {_repr(sets)}")
        lines = list(sets)
        for line in lines:
            if not isinstance(line, str):
                raise TypeError(f"{what} holds {type(line).__name__} {_repr(line)}: each "
                                 "setting is a 'key=value' string")
        return lines
    text = os.environ.get("TRAINSCOPE_SET", "")
    return [line for line in text.splitlines() if line.strip()]


# A setting's number by the one rule of settings, the trainer's reader's
# (`--set`): ASCII digits, no '_', finite. Python's int() and float() also
# take 1_0, Arabic-Indic or fullwidth digits, 'infinity' and 1e999 (inf),
# which every other entry point refuses (Thirtieth hunt, B-D5).
_INT_TEXT = re.compile(r"[-+]?[0-9]+", re.ASCII)
_NUMBER_TEXT = re.compile(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?", re.ASCII)
_BLANKS = " \t\r\n\f\v"  # around a number, as Python's int() and float() take them


def _python_number(text):
    """Whether Python's float() reads `text` as a number (as int() and
    float() of a type of NumPy's read it)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _not_plain(shown, key, default):
    """The refusal of a number's text that only Python reads as one."""
    kind = "untyped (default None)" if default is None else \
        f"{_kind(default)} (default {_repr(default)})"
    example = "a whole number such as 3" if isinstance(default, numbers.Integral) else \
        "a number such as 0.5"
    text = ", or text that reads as no number" if default is None else ""
    # trainscope.Error, as _typed's other refusals of a script's value.
    return _trainscope.Error(f"{shown}: '{key}' is {kind}; give {example}, in ASCII digits "
                             f"without '_', finite{text}")


def _finite(value):
    """Whether a number is finite (one past a double's range is not)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _check_number(shown, key, text, default):
    """Refuses, for a number default, the text of a number that only Python
    reads (1_0, a fullwidth digit, inf); a plain number, or no number at
    all (a fraction for an int included), goes on to the type's reading."""
    if _NUMBER_TEXT.fullmatch(text.strip(_BLANKS)) or not _python_number(text):
        return
    raise _not_plain(shown, key, default)


def _parse(text, shown="", key=""):
    """A value a study wrote, for a key the defaults do not type: a bool, a
    number by the settings' rule, else text; text that only Python reads
    as a number (1_0, inf) is refused, naming the setting `shown`."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    plain = text.strip(_BLANKS)
    if _NUMBER_TEXT.fullmatch(plain):
        try:
            value = int(plain) if _INT_TEXT.fullmatch(plain) else float(plain)
        except ValueError:  # an int past Python's digits
            value = math.inf
        if math.isfinite(value):
            return value
    elif not _python_number(text):
        return text
    raise _not_plain(shown, key, None)


def _plain(text):
    """`text` for a message: a control character (ESC, a line break) or
    other unprintable one as its escape (\\x1b), as the C++ side shows
    stored text; a study's settings are not the user's to trust."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _typed(key, text, default):
    """`text` as the type of the default it replaces."""
    shown = f"setting {_plain(key)}={_plain(text if len(text) <= 64 else text[:61] + '...')}"
    key = _plain(key)
    if default is None:
        return _parse(text, shown, key)
    if isinstance(default, bool):
        low = text.strip().lower()
        if low not in ("true", "false"):
            raise _trainscope.Error(f"{shown}: '{key}' is a bool; give true or false")
        return low == "true"
    # A number of NumPy's (numpy.int64, numpy.float32) is a scalar too.
    if isinstance(default, (int, float, str, numbers.Integral, numbers.Real)):
        number = not isinstance(default, str)
        if number:
            _check_number(shown, key, text, default)
        try:
            value = type(default)(text)
        except (ValueError, OverflowError):
            long = isinstance(default, numbers.Integral) and len(text) > sys.get_int_max_str_digits()
            raise _trainscope.Error(
                f"{shown}: '{key}' is {_kind(default)} (default {_repr(default)})" +
                (f", of at most {sys.get_int_max_str_digits()} digits" if long else "")) from None
        if number and not isinstance(default, numbers.Integral) and not _finite(value):
            raise _not_plain(shown, key, default)  # 1e999: inf (Thirtieth hunt, B-D5)
        return value
    raise _trainscope.Error(f"{shown}: '{key}' is {_kind(default)}, which "
                            "a setting cannot replace: give the study scalar keys")


def _as_setting(error):
    """The C++ reader's ValueError, whose words are for --set, as a
    setting's."""
    return ValueError(str(error).replace("--set ", "setting ", 1))


def _own(key, text):
    """A value of trainscope's own sections, read by the trainer's rule."""
    try:
        return _parse(_trainscope.own_setting(f"{key}={text}"), f"setting {_plain(key)}",
                      _plain(key))
    except ValueError as e:
        raise _as_setting(e) from None


def _apply(tree, line, who):
    """Sets `line` ("key=value") in `tree`; `who` says where it came from in
    a refusal ("the study sets", "sets= sets")."""
    key, sep, text = line.partition("=")
    if not sep or not key:
        raise _trainscope.Error(f"setting '{_plain(line)}' is not key=value")
    *path, leaf = key.split(".")
    own = bool(path) and path[0] in _OWN
    node = tree
    for part in path:
        nxt = node.get(part)
        if nxt is None and path[0] in _OWN:
            nxt = node[part] = {}
        if not isinstance(nxt, dict):
            break
        node = nxt
    else:
        if leaf in node and not isinstance(node[leaf], dict):
            node[leaf] = _own(key, text) if own else _typed(key, text, node[leaf])
            return
        if isinstance(node.get(leaf), dict) and not own:
            inner = ", ".join(sorted(_flatten(node[leaf], key + "."))) or "none"
            raise _trainscope.Error(
                f"{who} '{_plain(key)}', a section of this script's config, not a value: set "
                f"one of its keys ({_plain(inner)})")
        if own:
            node[leaf] = _own(key, text)
            return
    known = ", ".join(sorted(_flatten(tree))) or "none"
    raise _trainscope.Error(
        f"{who} '{_plain(key)}', which this script's config does not have (its keys: "
        f"{_plain(known)}): add it to the defaults given to trainscope.config(), or fix the "
        f"{'study' if who.startswith('the study') else 'setting'}'s key")


def config(defaults=None, sets=None):
    """The script's config: a copy of `defaults` (a nested dict) with the
    settings of this run applied: `sets` ("key=value" strings), else those a
    study planned for it ($TRAINSCOPE_SET). A key the defaults do not have
    is an Error naming it (a study's typo must not pass unnoticed), except
    in trainscope's own sections seeds, compute and determinism, whose
    values are read by the trainer's rule (an Error as `--set` gives). A
    value takes the type of the default it replaces."""
    if defaults is not None and not isinstance(defaults, dict):
        raise TypeError(f"config defaults are a dict, not a {type(defaults).__name__}")
    if defaults:
        _check_defaults(defaults)
    tree = copy.deepcopy(defaults) if defaults else {}
    who = "the study sets" if sets is None else "sets= sets"
    for line in _settings_lines(sets):
        _apply(tree, line, who)
    return tree


class Seeds:
    """The named streams' seeds of one run, derived from seeds.master (and
    seeds.<stream> when set) exactly as trainscope's trainer derives them."""

    def __init__(self, seeds):
        self.master = seeds["master"]
        self._seeds = {name: seeds[name] for name in STREAMS}

    def __getitem__(self, stream):
        if stream not in self._seeds:
            raise KeyError(f"no stream '{stream}': the streams are {', '.join(STREAMS)}")
        return self._seeds[stream]

    def __getattr__(self, stream):
        if stream.startswith("_"):
            raise AttributeError(stream)
        try:
            return self[stream]
        except KeyError as e:
            raise AttributeError(e.args[0]) from None

    def generator(self, stream):
        """A new torch.Generator seeded with `stream`'s seed (for a
        DataLoader's shuffle, a random crop, ...)."""
        return torch.Generator().manual_seed(self._torch_seed(stream))

    def use(self, stream):
        """Seeds torch's global generator with `stream`: what draws from it
        next (weight initialisation, dropout) comes from that stream."""
        torch.manual_seed(self._torch_seed(stream))
        return self

    def _torch_seed(self, stream):
        # torch.manual_seed takes a 64-bit seed; keep it in range.
        return self[stream] & 0x7FFF_FFFF_FFFF_FFFF

    def __repr__(self):
        streams = ", ".join(f"{k}={v}" for k, v in self._seeds.items())
        return f"Seeds(master={self.master}, {streams})"


def setup(cfg=None, apply=True):
    """One call before the model is built. From `cfg`'s sections seeds,
    compute and determinism (trainscope's keys; `trainscope config keys`
    lists them): sets libtorch's and its BLAS's threads and the determinism
    switches as the trainer does, seeds torch's global generator with the
    init stream (so the model's initial weights come from it), and Python's
    `random` and NumPy's global generator (when NumPy is installed) with the
    augment stream. Returns the Seeds; `apply=False` only computes them."""
    apply = _flag("setup()'s apply", apply)
    if cfg is not None and not isinstance(cfg, dict):
        raise TypeError(f"setup() takes the config dict trainscope.config() returns, not "
                        f"{type(cfg).__name__} {_repr(cfg)}")
    own = []
    for name, value, _, _ in _walk(cfg or {}):  # trainscope's keys: text or numbers only
        if name.split(".")[0] not in _OWN:
            continue
        number = _number_of(value)  # a Decimal, a 0-d tensor: numbers, as everywhere
        if not isinstance(value, str) and number is None:
            raise ValueError(f"setup(): config key {_repr(name)} is {_kind(value)}, not text or "
                             "a number (its text is not taken)")
        own.append(f"{name}={value if isinstance(value, str) else number}")
    try:
        derived = _trainscope.apply_settings(own, apply)
    except ValueError as e:
        raise _as_setting(e) from None
    seeds = Seeds(derived)
    if apply:
        seeds.use("init")
        random.seed(seeds.augment)
        numpy = sys.modules.get("numpy")
        if numpy is None:
            try:
                import numpy  # noqa: F401 (seeded when present)
            except ImportError:
                numpy = None
        if numpy is not None:
            numpy.random.seed(seeds.augment % 2**32)
    return seeds
