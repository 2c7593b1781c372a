"""Issue 51 from Python: one rule for what a run accepts (store/accept.h:
keys, steps, values, tags, params, as every other entry point takes them),
numbers of any Python, NumPy or torch type, errors that name the argument
and its value; and a run left open ends as the interpreter does (failed
after an uncaught exception or sys.exit(3), finished after a normal end).
TS_CLI and PYTHONPATH as ctest sets them."""
import decimal
import fractions
import json
import math
import os
import re
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from tfevents_writer import write_event_file  # noqa: E402

import trainscope

CLI = os.environ["TS_CLI"]
RULE = "a key is 1 to 256 bytes of UTF-8 text without control characters, not only blanks"


def cli(store, *args):
    return subprocess.run([CLI, "--store", "sqlite:" + store, *args], capture_output=True,
                          text=True)


def show(store, name):
    done = cli(store, "--json", "runs", "show", name)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def points(store, name, key):
    out = cli(store, "metrics", name, key, "--format", "csv").stdout
    return [(int(line.split(",")[0]), float(line.split(",")[2])) for line in out.splitlines()[1:]]


@pytest.fixture
def store(tmp_path):
    return str(tmp_path / "t.db")


@pytest.fixture
def run(store):
    r = trainscope.start_run(name="r", store="sqlite:" + store, record_environment=False)
    yield r
    r.finish()


def refused(call, match):
    """`call` raises a ValueError matching `match`, in words of its own."""
    with pytest.raises(ValueError, match=match) as e:
        call()
    assert "incompatible function arguments" not in str(e.value)
    return str(e.value)


def test_keys_every_other_entry_point_refuses_are_refused(run, store):
    refused(lambda: run.log({"": 1.0}, step=0), f"^metric key '' is empty; {RULE}$")
    refused(lambda: run.log({"k\0": 1.0}, step=0), r"metric key 'k\\x00' holds a control char")
    refused(lambda: run.log({"   ": 1.0}, step=0), "metric key '   ' is only blanks")
    refused(lambda: run.log({"k" * 257: 1.0}, step=0), "is longer than 256 bytes")
    refused(lambda: run.set_tags({"": "x"}), f"^tag key '' is empty; {RULE}$")
    refused(lambda: run.set_tags({"k\0": "x"}), r"tag key 'k\\x00' holds a control character")
    refused(lambda: run.log_params({"": 1}), "^param '' is empty")
    refused(lambda: run.log_params({"a\nb": 1}), r"param 'a\\nb' holds a control character")
    refused(lambda: run.log_params({"note": "v" * 4097}),
            "the value of param 'note' is longer than 4096 bytes")
    refused(lambda: run.log({"\ud800": 1.0}, step=0), "is not UTF-8 text")
    refused(lambda: run.set_tags({"t": "\udcff"}), "the value of tag 't'.* is not UTF-8 text")
    # A good call after them: nothing of the refused ones was recorded.
    run.log({"loss": 1.0, "a b": 2.0}, step=0)
    run.set_tags({"team": "vision"})
    run.finish()
    j = show(store, "r")
    assert {m["key"] for m in j["metric_summaries"]} == {"loss", "a b"}
    assert "" not in j["tags"] and "k\0" not in j["tags"] and j["tags"]["team"] == "vision"
    assert j["params"] == {}


def test_a_run_with_a_tag_or_param_no_run_takes_is_not_started(store):
    uri = "sqlite:" + store
    refused(lambda: trainscope.start_run(name="t", store=uri, tags={"": "x"}), "tag key ''")
    refused(lambda: trainscope.start_run(name="t", store=uri, tags={"k\0": "x"}), "tag key 'k")
    refused(lambda: trainscope.start_run(name="t", store=uri, config={"": 1}), "param ''")
    refused(lambda: trainscope.start_run(name=3, store=uri), "^name must be text, not int 3$")
    refused(lambda: trainscope.start_run(name="t", store=uri, config=[1]),
            r"^config must be a dict, not list \[1\]$")
    assert not os.path.exists(store), "refused before the store was opened"


def test_steps_are_integers_from_0_to_2_to_the_53(run, store):
    for bad, shown in [(-1, "-1"), (2**53 + 1, str(2**53 + 1)), (2**64, str(2**64)),
                       (2.5, "2.5"), (True, "True"), ("3", "'3'"), (torch.tensor(-1), "-1"),
                       (float("nan"), "nan")]:
        refused(lambda: run.log({"loss": 1.0}, step=bad),
                f"^step {shown} is not an integer from 0 to 2\\^53$")
    refused(lambda: run.log({"loss": 1.0}, step=torch.tensor([1, 2])),
            r"^step is a tensor of 2 elements \(shape \(2,\)\)")
    run.log({"loss": 1.0}, step=3.0)               # an integer, as JSON has them
    run.log({"loss": 2.0}, step=torch.tensor(4))   # a 0-d tensor
    run.log({"loss": 3.0}, step=2**53)
    refused(lambda: run.log({"loss": 4.0}), f"^step {2**53 + 1} is not")  # the next step
    run.finish()
    assert [p[0] for p in points(store, "r", "loss")] == [3, 4, 2**53]


def test_numbers_of_any_python_or_torch_type_are_numbers(run, store):
    values = {"bool": True, "int": 7, "float": 0.25, "f16": torch.tensor(1.5, dtype=torch.float16),
              "bf16": torch.tensor(0.5, dtype=torch.bfloat16),
              "i32": torch.tensor(-3, dtype=torch.int32), "tbool": torch.tensor(False),
              "one": torch.ones(1), "grad": torch.tensor(2.0, requires_grad=True) * 2,
              "nan": float("nan"), "inf": float("inf")}
    run.log(values, step=1)
    run.finish()
    want = {"bool": 1, "int": 7, "float": 0.25, "f16": 1.5, "bf16": 0.5, "i32": -3, "tbool": 0,
            "one": 1, "grad": 4, "inf": math.inf}
    for key, value in want.items():
        assert points(store, "r", key) == [(1, value)], key
    assert math.isnan(points(store, "r", "nan")[0][1])


def test_numpy_scalars_are_numbers(run, store):
    np = pytest.importorskip("numpy")
    run.log({"f32": np.float32(0.5), "i64": np.int64(3), "b": np.bool_(True),
             "arr": np.array(2.0)}, step=np.int64(2))
    refused(lambda: run.log({"v": np.zeros(3)}, step=3),
            r"^metric 'v' is a NumPy array of 3 elements \(shape \(3,\)\)")
    refused(lambda: run.log({"v": np.complex64(1)}, step=3), "is a complex, not a number")
    # Twenty-seventh hunt, A-D1: a complex long double has __float__, which
    # dropped its imaginary part (a metric 2.0; a tag '(2+3j)').
    for wide in (np.clongdouble(2 + 3j), np.array([np.clongdouble(2 + 3j)])):
        refused(lambda: run.log({"v": wide}, step=3), "^metric 'v' is a clongdouble, not a number")
    refused(lambda: run.set_tags({"t": np.clongdouble(2 + 3j)}),
            "^the value of tag 't' must be text or a number, not clongdouble")
    run.finish()
    for key, value in {"f32": 0.5, "i64": 3, "b": 1, "arr": 2}.items():
        assert points(store, "r", key) == [(2, value)], key


def test_what_is_not_a_number_is_named(run):
    refused(lambda: run.log({"loss": torch.ones(3)}, step=0),
            r"^metric 'loss' is a tensor of 3 elements \(shape \(3,\)\); log a scalar")
    refused(lambda: run.log({"loss": "low"}, step=0), "^metric 'loss' is a str, not a number$")
    refused(lambda: run.log({"loss": 1j}, step=0), "^metric 'loss' is a complex, not a number$")
    refused(lambda: run.log({"loss": torch.tensor(1j)}, step=0), "is a complex, not a number")
    refused(lambda: run.log({"loss": None}, step=0), "is a NoneType, not a number")
    refused(lambda: run.log({"loss": 10**400}, step=0), r"^metric 'loss' is 1000.*\.\.\., which")
    refused(lambda: run.log([("loss", 1.0)]), "^metrics must be a dict, not list")


def test_values_too_long_for_python_to_write_are_named(run):
    """Fourteenth hunt, D3, and fifteenth, A-D3: an int past Python's 4300
    digits (or a Fraction of one) gave Python's own error, naming nothing."""
    huge = 10**5000
    refused(lambda: run.log_params({"p": huge}),
            r"^the value of param 'p' is an integer of about 5001 digits")
    refused(lambda: run.set_tags({"t": huge}), r"^the value of tag 't' is an integer of about")
    refused(lambda: run.log({"m": huge}, step=1), r"^metric 'm' is <an integer of about 5001 digits>")
    refused(lambda: run.log({"m": 1.0}, step=huge), r"^step <an integer of about 5001 digits> is not")
    refused(lambda: run.log_params({"p": fractions.Fraction(huge, 3)}),
            r"^the value of param 'p' is <a Fraction>, which no double holds$")
    refused(lambda: run.log({"m": 1.0}, step=fractions.Fraction(huge, 3)), r"^step <a Fraction>")
    with pytest.raises(trainscope.Error, match=r"'a' is an int \(default 1\), of at most"):
        trainscope.config({"a": 1}, sets=["a=" + "9" * 5000])


def test_a_flag_is_true_or_false_never_a_value_taken_by_its_truth(store):
    """Sixteenth hunt, A-D3: start_run(record_environment='false') recorded
    the whole environment ('false' is true); setup(apply='no') gave the
    binding's "incompatible function arguments". Both are ValueErrors."""
    import numpy
    for value in ("false", "no", 0, 2, None, []):
        refused(lambda: trainscope.start_run(store="sqlite:" + store, record_environment=value),
                r"^record_environment must be True or False, not ")
        refused(lambda: trainscope.setup({}, apply=value), r"^setup\(\)'s apply must be True or")
    assert not os.path.exists(store)  # nothing started
    r = trainscope.start_run(name="np", store="sqlite:" + store,
                             record_environment=numpy.bool_(False))
    r.finish()


def test_config_default_keys_follow_the_params_rule():
    """Fourteenth hunt, D5: config() took keys start_run(config=) refuses."""
    refused(lambda: trainscope.config({"a\nb": 1}), r"param 'a\\nb' holds a control character")
    refused(lambda: trainscope.config({"x": {"\x1b[31m": 1}}), "holds a control character")
    refused(lambda: trainscope.config({"  ": 1}), "is only blanks")


def test_an_artifact_path_ending_in_a_slash_is_named_as_the_path(run, tmp_path):
    """Fifteenth hunt, A-D4: 'dir/' blamed an artifact name '' never given."""
    refused(lambda: run.log_artifact(f"{tmp_path}/"), "it is a folder, not a regular file")


def test_the_artifact_kinds_trainscope_reads_are_not_a_users(run, tmp_path):
    """Eighteenth hunt, A-D2: a script's log_artifact(kind='predictions',
    name='predictions/test.bin') was read by study report as a training's."""
    f = tmp_path / "test.bin"
    f.write_bytes(b"TSPRED01" + b"\0" * 32)
    for kind in ("predictions", "code", "trace", "checkpoint"):
        refused(lambda: run.log_artifact(str(f), kind=kind, name="predictions/test.bin"),
                f"artifact kind '{kind}' is one trainscope writes and reads itself")
    assert run.log_artifact(str(f), kind="file", name="predictions/test.bin")


def test_a_value_whose_float_raises_is_refused_naming_the_metric(run):
    """Twentieth hunt, A-D2: the object's own RuntimeError leaked, the
    metric unnamed."""
    class BadF:
        def __float__(self):
            raise RuntimeError("float boom")
    refused(lambda: run.log({"e": BadF()}, step=1),
            "metric 'e' is a BadF that cannot be read as a number "
            r"\(its __float__ raised RuntimeError\)")


def test_a_param_given_twice_is_refused_as_watch_refuses_it(run):
    """Twentieth hunt, A-D3: {'a.b': 1, 'a': {'b': 1}} was taken by Python
    and refused by a watched script's param line ("appears twice")."""
    for same_or_not in (1, 2):
        refused(lambda: run.log_params({"a.b": 1, "a": {"b": same_or_not}}),
                "param 'a.b' is given twice")


def test_a_path_or_store_holding_nul_is_refused_not_cut(run, tmp_path):
    """Twenty-first hunt, A-D3 and A-D4: 'x.db\\0junk' recorded into x.db,
    and log_artifact's path gave the binding's four-line TypeError."""
    refused(lambda: trainscope.start_run(store=f"sqlite:{tmp_path}/x.db\0junk",
                                         record_environment=False), "holds a NUL byte")
    assert not (tmp_path / "x.db").exists()
    refused(lambda: run.log_artifact(f"{tmp_path}/a\0b"), "path '.*' holds a NUL byte")
    refused(lambda: trainscope.TrainerInputs("mlp.yaml\0garbage"), "config '.*' holds a NUL byte")


def test_a_text_whose_str_raises_is_refused_naming_the_key(run):
    """Twenty-first hunt, A-D1: an int subclass whose __str__ raises gave its
    own RuntimeError, naming no key."""
    class Lying(int):
        def __str__(self):
            raise RuntimeError("str boom")
    refused(lambda: run.log_params({"a": Lying(5)}),
            r"the value of param 'a' is a Lying that cannot be written as text \(its __str__ "
            r"raised RuntimeError\)")


def test_setup_takes_no_object_for_its_own_keys():
    """Twenty-first hunt, A-D1: an object whose __str__ says "7" was seed 7
    to setup(), where start_run(config=) refuses it."""
    class Lie:
        def __str__(self):
            return "7"
    refused(lambda: trainscope.setup({"seeds": {"master": Lie()}}, apply=False),
            "setup\\(\\): config key 'seeds.master' is a Lie, not text or a number")
    assert trainscope.setup({"seeds": {"master": 7}}, apply=False)


def test_a_metric_given_twice_in_one_call_is_refused(run):
    """Twenty-first hunt, A-D9: a mapping listing a key twice kept its last,
    where watch's metric lines refuse a key twice."""
    class Twice(dict):
        def items(self):
            return [("loss", 1.0), ("loss", 2.0)]
    refused(lambda: run.log(Twice(), step=1), "metric 'loss' is given twice in one log")


def test_a_str_subclass_is_its_text_whatever_its_methods_do(run, store):
    """Twenty-second hunt, A-D2: a metric key of a str subclass whose
    __str__ raises let the class's RuntimeError out of log(); as a tag or
    param key it was taken as its text."""
    class K(str):
        def __str__(self):
            raise RuntimeError("str boom")

        def __format__(self, spec):
            raise RuntimeError("format boom")

        def encode(self, *args):
            raise RuntimeError("encode boom")
    run.log({K("k"): 1.5}, step=1)
    run.set_tags({K("t"): K("v")})
    run.log_params({K("p"): K("q")})
    refused(lambda: run.log({K("k"): "x"}, step=2), "metric 'k'")
    run.finish()
    assert points(store, "r", "k") == [(1, 1.5)]
    shown = show(store, "r")
    assert shown["tags"]["t"] == "v" and shown["params"]["p"] == "q"


def test_a_parent_that_matches_no_run_is_said_of_parent(store):
    """Twenty-second hunt, A-D6: the LookupError said 'no run matches
    'nosuch'' without saying that the text was parent=, not name=."""
    with pytest.raises(LookupError, match="^parent: no run matches 'nosuch' in sqlite:"):
        trainscope.start_run(name="c", store="sqlite:" + store, parent="nosuch",
                             record_environment=False)
    assert cli(store, "runs", "show", "c").returncode != 0  # nothing started


def test_setup_takes_every_number_the_package_takes():
    """Twenty-third hunt, A-D2: setup() refused seeds.master=Decimal(7) and
    a 0-d tensor as "not text or a number", where Fraction(7) was taken."""
    want = trainscope.setup({"seeds": {"master": 7}}, apply=False).master
    for seven in (decimal.Decimal(7), torch.tensor(7), fractions.Fraction(7), "7"):
        assert trainscope.setup({"seeds": {"master": seven}}, apply=False).master == want, seven
    refused(lambda: trainscope.setup({"seeds": {"master": torch.ones(2)}}, apply=False),
            "config key 'seeds.master' is a Tensor, not text or a number")


def test_a_setting_shows_control_characters_escaped():
    """Twenty-third hunt, A-D3: sets=['a\x1b[2J=1'] put the ESC itself in the
    message (a study's settings come the same way), and said "the study
    sets" of the caller's own sets=."""
    with pytest.raises(trainscope.Error) as e:
        trainscope.config({"lr": 0.1}, sets=["a\x1b[2J=1"])
    assert "\x1b" not in str(e.value) and "'a\\x1b[2J'" in str(e.value), str(e.value)
    assert str(e.value).startswith("sets= sets 'a"), str(e.value)
    with pytest.raises(trainscope.Error) as e:
        trainscope.config({"lr": 0.1}, sets=["lr=\x1b[2J"])
    assert str(e.value).startswith("setting lr=\\x1b[2J: 'lr' is a float"), str(e.value)


def test_watch_checks_every_argument_whatever_the_others(run):
    """Twenty-third hunt, A-D4: profile_warmup='x' and probes_every=-3 were
    taken unseen without profile_every and probes."""
    model = torch.nn.Linear(2, 2)
    refused(lambda: run.watch(model, profile_warmup="x"), "profile_warmup")
    refused(lambda: run.watch(model, probes_every=-3), "probes_every -3")
    refused(lambda: run.watch(model, probes_every=3), "give probes= too")
    # Twenty-fifth hunt, A-D1: a model or optimizer of the wrong type was
    # torch's AttributeError or TypeError, naming neither.
    refused(lambda: run.watch(3), "model must be a torch.nn.Module, not an int 3")
    refused(lambda: run.watch(None), "model must be a torch.nn.Module, not a NoneType")
    refused(lambda: run.watch(torch.nn.Linear), "model is the class Linear, not a model")
    refused(lambda: run.watch(model, optimizer="sgd"),
            "optimizer must be a torch.optim.Optimizer .*, not a str 'sgd'")
    refused(lambda: run.watch(model, optimizer=torch.optim.SGD), "optimizer is the class SGD")
    run.watch(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))  # then taken


# A script that starts a run without `with` and ends as `end` says.
SCRIPT = """
import sys, threading, trainscope
run = trainscope.start_run(name="s", store=sys.argv[1], record_environment=False)
run.log({"loss": 1.0}, step=0)
"""
ENDS = {
    "normal": ("pass", 0, "finished"),
    "exception": ("raise RuntimeError('diverged')", 1, "failed"),
    "exit 3": ("sys.exit(3)", 3, "failed"),
    "exit 0": ("sys.exit(0)", 0, "finished"),
    "exit message": ("sys.exit('bad input')", 1, "failed"),
    "exit()": ("exit(4)", 4, "failed"),
    "Ctrl-C": ("raise KeyboardInterrupt", 130, "killed"),
    "in a function": ("def main():\n    r = trainscope.start_run(name='f', store=sys.argv[1], "
                      "record_environment=False)\n    sys.exit(3)\nrun.finish()\nmain()", 3,
                      "failed"),
    "with, exit 0": ("run.finish()\nwith trainscope.start_run(name='w', store=sys.argv[1], "
                     "record_environment=False):\n    sys.exit(0)", 0, "finished"),
    # Twenty-first hunt, A-D7 / B-D1: past a C long the status is 255, not
    # code & 0xFF (0 for 2**64): the run is failed.
    "with, exit 2**64": ("run.finish()\nwith trainscope.start_run(name='w', store=sys.argv[1], "
                         "record_environment=False):\n    sys.exit(2**64)", 255, "failed"),
    "with, exit -2**70": ("run.finish()\nwith trainscope.start_run(name='w', store=sys.argv[1], "
                          "record_environment=False):\n    sys.exit(-2**70)", 255, "failed"),
}


@pytest.mark.parametrize("end", ENDS)
def test_a_run_left_open_ends_as_the_interpreter_does(tmp_path, end):
    code, exit_code, status = ENDS[end]
    store = str(tmp_path / "t.db")
    done = subprocess.run([sys.executable, "-c", SCRIPT + textwrap.dedent(code),
                           "sqlite:" + store], capture_output=True, text=True)
    assert done.returncode in (exit_code, -2 if exit_code == 130 else exit_code), done.stderr
    name = "f" if end == "in a function" else "w" if end.startswith("with") else "s"
    assert show(store, name)["status"] == status, done.stderr
    if name == "s":
        assert points(store, "s", "loss") == [(0, 1.0)]


def test_an_exception_that_ends_a_thread_fails_the_runs_it_started(tmp_path):
    store = str(tmp_path / "t.db")
    code = SCRIPT + textwrap.dedent("""
        def work():
            r = trainscope.start_run(name="t", store=sys.argv[1], record_environment=False)
            raise ValueError("in a thread")
        t = threading.Thread(target=work)
        t.start()
        t.join()
        """)
    done = subprocess.run([sys.executable, "-c", code, "sqlite:" + store], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    assert show(store, "t")["status"] == "failed"
    assert show(store, "s")["status"] == "finished"


def test_keys_and_values_that_are_not_text_are_refused_not_turned_into_their_repr(run, store):
    refused(lambda: run.log({b"bytes": 1.0}, step=0), r"^metric key b'bytes' is not text \(str\)$")
    refused(lambda: run.log({1: 1.0}, step=0), r"^metric key 1 is not text \(str\)$")
    refused(lambda: run.set_tags({b"k": "x"}), r"^tag key b'k' is not text \(str\)$")
    refused(lambda: run.set_tags({"k": b"\xff\xfe"}),
            r"^the value of tag 'k' must be text or a number, not bytes b'\\xff\\xfe'$")
    refused(lambda: run.set_tags({"k": None}),
            "^the value of tag 'k' must be text or a number, not NoneType None$")
    refused(lambda: run.log_params({"opt": {"lr": None}}), "^the value of param 'opt.lr' must be")
    refused(lambda: run.log_params({"opt": {2: 1}}), r"^param key 2 is not text \(str\)$")
    refused(lambda: run.log_params({"k": b"x"}), "^the value of param 'k' must be text or a")
    # Text, bools and numbers of any type are values (as their text).
    run.log_params({"opt": {"lr": 0.5, "nesterov": True, "steps": torch.tensor(3), "name": "sgd"}})
    run.set_tags({"team": "vision", "gpus": 2})
    run.log({"loss": 1.0}, step=0)
    run.finish()
    j = show(store, "r")
    assert {m["key"] for m in j["metric_summaries"]} == {"loss"}
    assert j["params"] == {"opt.lr": "0.5", "opt.nesterov": "true", "opt.steps": "3",
                           "opt.name": "sgd"}
    assert j["tags"]["team"] == "vision" and j["tags"]["gpus"] == "2"
    assert not {"b'k'", "k"} & set(j["tags"])


def test_a_number_has_one_text_whatever_its_type(run, store):
    """Twenty-sixth hunt, A-D1: a Fraction param was stored as '1/2', which
    `--filter 'params.lr = 0.5'` and `stats --by` did not take as 0.5, and
    a Decimal NaN as 'NaN' beside a float's 'nan'."""
    half = (0.5, fractions.Fraction(1, 2), decimal.Decimal("0.5"), torch.tensor(0.5))
    nans = (float("nan"), decimal.Decimal("NaN"), decimal.Decimal("sNaN"),
            torch.tensor(float("nan")))
    run.log_params({f"h{i}": v for i, v in enumerate(half)} |
                   {f"n{i}": v for i, v in enumerate(nans)} |
                   {"whole": fractions.Fraction(10, 2), "inf": decimal.Decimal("-Infinity")})
    run.set_tags({"third": fractions.Fraction(1, 3)})
    run.finish()
    j = show(store, "r")
    assert {j["params"][f"h{i}"] for i in range(len(half))} == {"0.5"}, j["params"]
    assert {j["params"][f"n{i}"] for i in range(len(nans))} == {"nan"}, j["params"]
    assert j["params"]["whole"] == "5" and j["params"]["inf"] == "-inf"
    assert j["tags"]["third"] == repr(1 / 3)
    found = cli(store, "runs", "list", "--filter", "params.h1 = 0.5", "-f", "csv", "-c", "name")
    assert found.stdout.split() == ["name", "r"], found


def test_a_run_with_a_key_or_value_that_is_not_text_is_not_started(store):
    uri = "sqlite:" + store
    refused(lambda: trainscope.start_run(name="t", store=uri, tags={b"k": "x"}),
            r"^tag key b'k' is not text \(str\)$")
    refused(lambda: trainscope.start_run(name="t", store=uri, tags={"k": None}),
            "^the value of tag 'k' must be text or a number, not NoneType None$")
    refused(lambda: trainscope.start_run(name="t", store=uri, config={"k": b"\xff"}),
            "^the value of param 'k' must be text or a number, not bytes")
    refused(lambda: trainscope.start_run(name="t", store=uri, config={1: 2}),
            r"^param key 1 is not text \(str\)$")
    refused(lambda: trainscope.start_run(name="t", store=uri, environment={"k": None}),
            "^the value of environment 'k' must be text or a number")
    # Eleventh hunt, B-D8: an environment entry's value had no size limit.
    refused(lambda: trainscope.start_run(name="t", store=uri, environment={"user.k": "v" * 4097}),
            "^the value of environment entry 'user.k' is 4097 bytes, longer than 4096; record a "
            "file as an artifact instead$")
    assert not os.path.exists(store), "refused before the store was opened"


def script(tmp_path, code, timeout=120):
    """Runs `code` (the store's URI as argv[1]) in a fresh interpreter; a
    hang is a failure, not a hung test."""
    store = str(tmp_path / "t.db")
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), "sqlite:" + store],
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the script did not end in {timeout} s: {e.stdout!r} {e.stderr!r}")
    return store, done


# A run whose object is dropped before the script ends (a function's run,
# a thread's) ends as the interpreter does, not "finished" when collected.
DROPPED = {
    "sys.exit(main())": ("""
        import sys, trainscope
        def main():
            run = trainscope.start_run(name="f", store=sys.argv[1], record_environment=False)
            run.log({"loss": 1.0}, step=0)
            return 3
        sys.exit(main())
        """, 3, "failed"),
    "main() then an exception": ("""
        import gc, sys, trainscope
        def main():
            run = trainscope.start_run(name="f", store=sys.argv[1], record_environment=False)
            run.log({"loss": 1.0}, step=0)
        main()
        gc.collect()
        raise RuntimeError("diverged")
        """, 1, "failed"),
    "a thread's run, then sys.exit(4)": ("""
        import gc, sys, threading, trainscope
        def work():
            run = trainscope.start_run(name="f", store=sys.argv[1], record_environment=False)
            run.log({"loss": 1.0}, step=0)
        t = threading.Thread(target=work)
        t.start()
        t.join()
        del t
        gc.collect()
        sys.exit(4)
        """, 4, "failed"),
    "main() then Ctrl-C": ("""
        import gc, sys, trainscope
        def main():
            run = trainscope.start_run(name="f", store=sys.argv[1], record_environment=False)
            run.log({"loss": 1.0}, step=0)
        main()
        gc.collect()
        raise KeyboardInterrupt
        """, 130, "killed"),
    "main() then a normal end": ("""
        import gc, sys, trainscope
        def main():
            run = trainscope.start_run(name="f", store=sys.argv[1], record_environment=False)
            run.log({"loss": 1.0}, step=0)
        main()
        gc.collect()
        """, 0, "finished"),
}


@pytest.mark.parametrize("end", DROPPED)
def test_a_dropped_run_ends_as_the_interpreter_does(tmp_path, end):
    code, exit_code, status = DROPPED[end]
    store, done = script(tmp_path, code)
    assert done.returncode in (exit_code, -2 if exit_code == 130 else exit_code), done.stderr
    assert show(store, "f")["status"] == status, done.stderr
    assert points(store, "f", "loss") == [(0, 1.0)]


# A child of os.fork() inherits an open run: it neither ends it nor hangs
# at its exit (the recorder's threads are the parent's), and the parent
# goes on recording into it. The parent kills a child that hangs.
FORK = """
import os, sys, time, trainscope
run = trainscope.start_run(name="fk", store=sys.argv[1], record_environment=False)
run.log({"loss": 1.0}, step=0)
pid = os.fork()
if pid == 0:
%s
deadline = time.monotonic() + 60
while True:
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        print("the child hung at its exit")
        sys.exit(9)
    time.sleep(0.05)
print("child", os.waitstatus_to_exitcode(status), flush=True)
run.log({"loss": 2.0}, step=1)
%s
"""
CHILDREN = {
    "sys.exit(0)": ("sys.exit(0)", 0),
    "finish()": ("run.finish('failed')\nsys.exit(0)", 0),
    "an exception": ("raise RuntimeError('in the child')", 1),
    "a refused log": ("try:\n    run.log({'loss': 5.0}, step=2)\nexcept ValueError as e:\n"
                      "    print(e, file=sys.stderr)\n    sys.exit(0 if 'forked child' in str(e)"
                      " else 8)\nsys.exit(7)", 0),
    "a run of its own": ("own = trainscope.start_run(name='child', store=sys.argv[1], "
                         "record_environment=False)\nown.log({'x': 1.0}, step=0)\nsys.exit(0)", 0),
}


@pytest.mark.parametrize("child", CHILDREN)
@pytest.mark.parametrize("parent_end", ["run.finish()", "pass"])
def test_a_forked_child_leaves_the_parents_run_alone(tmp_path, child, parent_end):
    code, child_code = CHILDREN[child]
    body = textwrap.indent(code, "    ")
    store, done = script(tmp_path, FORK % (body, parent_end))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"child {child_code}" in done.stdout, done.stdout + done.stderr
    j = show(store, "fk")
    assert j["status"] == "finished", done.stderr
    assert points(store, "fk", "loss") == [(0, 1.0), (1, 2.0)]
    if child == "a run of its own":
        assert show(store, "child")["status"] == "finished"


# Issue 51, the fifth hunt.

def test_a_step_is_any_number_whose_value_is_an_integer(run, store):
    """D12: numbers are numbers whatever their type, steps too: a Decimal or
    Fraction holding an integer is that step, as a float holding one is;
    one with a fraction is refused, named."""
    run.log({"loss": 1.0}, step=decimal.Decimal(107))
    run.log({"loss": 2.0}, step=fractions.Fraction(214, 2))  # 107 again
    run.log({"loss": 3.0}, step=decimal.Decimal("108.0"))
    run.log({"loss": 4.0}, step=fractions.Fraction(109))
    for bad in [decimal.Decimal("109.5"), fractions.Fraction(219, 2), decimal.Decimal("NaN"),
                decimal.Decimal("-Infinity"), decimal.Decimal(-1), decimal.Decimal(2**53 + 1),
                fractions.Fraction(2**64), complex(110, 0)]:
        refused(lambda: run.log({"loss": 5.0}, step=bad),
                f"^step {re.escape(repr(bad))} is not an integer from 0 to 2\\^53$")
    run.log({"loss": 5.0})  # the step after the last
    run.finish()
    assert [p[0] for p in points(store, "r", "loss")] == [107, 107, 108, 109, 110]


BACK = ("metric '{key}' at step 3 goes back: it was logged at step 5 before; steps of a key only "
        "go forward")


def test_a_step_that_goes_back_is_refused_by_every_entry_point(tmp_path, run, store):
    """D3: one rule (store::StepOrder): Python refuses the call, `watch`
    counts the line malformed, `import tfevents` refuses the folder in one
    line naming the file, the tag and the step; the same step again is
    taken by each."""
    run.log({"a": 1.0}, step=5)
    refused(lambda: run.log({"a": 2.0, "b": 1.0}, step=3), f"^{re.escape(BACK.format(key='a'))}$")
    run.log({"a": 2.0}, step=5)
    run.finish()
    assert points(store, "r", "a") == [(5, 1.0), (5, 2.0)]
    assert points(store, "r", "b") == []

    done = cli(store, "-q", "watch", "--name", "w", "--", "printf",
               'trainscope: step=5 a=1\n{"step": 3, "a": 2}\ntrainscope: step=3 a=3\n'
               "trainscope: step=5 a=4\ntrainscope: a=5\n")
    assert done.returncode == 0, done.stderr
    assert points(store, "w", "a") == [(5, 1.0), (5, 4.0), (6, 5.0)]
    tags = show(store, "w")["tags"]
    assert tags["metric_lines.malformed"] == "2"
    assert tags["metric_lines.first_malformed_reason"] == BACK.format(key="a")

    # A writer that restarted in its folder: its second file goes back.
    folder = tmp_path / "tb" / "restarted"
    write_event_file(str(folder / "events.out.tfevents.1.a"), [(4, "loss", 1.0), (5, "loss", 0.5)])
    write_event_file(str(folder / "events.out.tfevents.2.a"), [(3, "loss", 0.75)])
    write_event_file(str(tmp_path / "tb" / "fine" / "events.out.tfevents.1.a"), [(0, "loss", 1.0)])
    done = cli(store, "import", "tfevents", str(tmp_path / "tb"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (
        f"trainscope: {os.path.realpath(folder)}/events.out.tfevents.2.a: the scalar 'loss': "
        f"{BACK.format(key='loss')}; if its writer restarted, move the event files it wrote since "
        "into a folder of their own (another run); nothing was imported\n")
    names = [r["name"] for r in json.loads(cli(store, "--json", "runs", "list").stdout)]
    assert sorted(names) == ["r", "w"], "nothing was imported"
    # Its later file in a folder of its own: another run, going forward.
    os.makedirs(tmp_path / "tb" / "restarted-2")
    os.rename(folder / "events.out.tfevents.2.a",
              tmp_path / "tb" / "restarted-2" / "events.out.tfevents.2.a")
    done = cli(store, "-q", "import", "tfevents", str(tmp_path / "tb"))
    assert done.returncode == 0, done.stderr
    assert points(store, "restarted-2", "loss") == [(3, 0.75)]


STALE = """
import os, sys, trainscope
run = trainscope.start_run(name="lost", store=sys.argv[1], record_environment=False)
run.log({"loss": 1.0}, step=0)
os._exit(0)  # the run stays "running", its writer gone
"""


def test_stale_means_the_same_to_status_filter_and_the_api(tmp_path):
    """D9: a run whose writer is gone is shown "stale", and `runs list
    --status`, `--filter status` and the API's `status=` all find it by
    that word, and none of them as "running"."""
    # The live run first: a writer's open marks a stale run killed.
    live = trainscope.start_run(name="live", store="sqlite:" + str(tmp_path / "t.db"),
                                record_environment=False)
    try:
        store, done = script(tmp_path, STALE)
        assert done.returncode == 0, done.stderr

        def listed(*how):
            done = cli(store, "runs", "list", "--columns", "name,status", "--format", "csv",
                       "--sort", "name", *how)
            assert done.returncode == 0, done.stderr
            return done.stdout.splitlines()[1:]

        assert listed() == ["live,running", "lost,stale"]
        assert listed("--status", "stale") == ["lost,stale"]
        assert listed("--filter", "status = 'stale'") == ["lost,stale"]
        assert listed("--status", "running") == ["live,running"]
        assert listed("--filter", "status = 'running'") == ["live,running"]
        server = subprocess.Popen([CLI, "--store", "sqlite:" + store, "serve", "--port", "0"],
                                  stdout=subprocess.PIPE, text=True)
        try:
            url = re.search(r"http://\S+", server.stdout.readline()).group(0).rstrip("/")

            def api(status):
                with urllib.request.urlopen(f"{url}/api/runs?status={status}", timeout=30) as r:
                    return [(x["name"], x["status"]) for x in json.loads(r.read())["runs"]]

            assert api("stale") == [("lost", "stale")]
            assert api("running") == [("live", "running")]
            with pytest.raises(urllib.error.HTTPError) as e:
                api("sleeping")
            assert e.value.code == 400
            assert json.loads(e.value.read())["error"] == (
                "unknown run status 'sleeping'; valid: created, running, finished, failed, "
                "killed, stopped, stale")
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        live.finish()
