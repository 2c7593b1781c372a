"""Thirty-third hunt, tester B: the Python package's and the callbacks'
defects B-D1 to B-D9 (docs/reliability.md), read back with the CLI as a
user would. Each script runs in an interpreter of its own."""
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import trainscope
from trainscope._params import flat_params

from hunt_support import cli, show, store  # noqa: F401 (store: a fixture)


def points(store, name, key):
    return {m["key"]: m["count"] for m in show(store, name)["metric_summaries"]}.get(key, 0)


def script(store, body):
    """Runs `body` (TRAINSCOPE_STORE is `store`) as a script file of its own
    (a forkserver or spawn child imports it) in a new interpreter; its exit
    status."""
    env = dict(os.environ, TRAINSCOPE_STORE="sqlite:" + store)
    path = os.path.join(os.path.dirname(store), "script.py")
    with open(path, "w") as f:
        f.write("import os, signal, sys, threading, trainscope\n" + textwrap.dedent(body))
    return subprocess.run([sys.executable, path], env=env, stderr=subprocess.DEVNULL,
                          timeout=120).returncode


@pytest.mark.parametrize("name", ["SIGUSR1", "SIGALRM", "SIGXCPU", "SIGQUIT"])
def test_every_signal_that_ends_a_script_ends_its_run_with_its_points(store, name):
    """B-D1: SIGUSR1 (Slurm's --signal), SIGALRM, SIGXCPU (ulimit -t) left
    the run to be reaped killed and lost its points."""
    signum = getattr(signal, name)
    rc = script(store, f"""
        r = trainscope.start_run(name="s", record_environment=False)
        for i in range(3):
            r.log({{"loss": 1.0}}, step=i)
        os.kill(os.getpid(), {int(signum)})
        """)
    assert rc == -signum
    assert show(store, "s")["status"] == "killed"
    assert points(store, "s", "loss") == 3


def test_a_run_a_thread_opened_ends_with_its_points_at_sigterm(store):
    """B-D2: only runs the main thread opened were ended."""
    rc = script(store, """
        def work():
            r = trainscope.start_run(name="t", record_environment=False)
            for i in range(3):
                r.log({"loss": 1.0}, step=i)
            os.kill(os.getpid(), signal.SIGTERM)
            threading.Event().wait(30)
        t = threading.Thread(target=work)
        t.start()
        t.join()
        """)
    assert rc == -signal.SIGTERM
    assert show(store, "t")["status"] == "killed"
    assert points(store, "t", "loss") == 3


@pytest.mark.parametrize("how, status", [("fork", "finished"), ("fork", "failed"),
                                         ("forkserver", "finished"), ("spawn", "finished")])
def test_a_multiprocessing_childs_own_run_ends_as_the_child_does(store, how, status):
    """B-D3: a fork or forkserver child leaves by os._exit, after its
    finalizers: its run was reaped killed with no points."""
    rc = script(store, f"""
        import multiprocessing as mp
        def child():
            r = trainscope.start_run(name="c", record_environment=False)
            r.log({{"loss": 0.5}}, step=0)
            if {status == "failed"}:
                raise RuntimeError("the child fails")
        if __name__ == "__main__":
            p = mp.get_context("{how}").Process(target=child)
            p.start()
            p.join()
            sys.exit(p.exitcode)
        """)
    assert rc == (1 if status == "failed" else 0)
    assert show(store, "c")["status"] == status
    assert points(store, "c", "loss") == 1


def test_hyperparameters_that_flatten_to_one_key_are_refused():
    """B-D4: {"a.b": 1, "a": {"b": 2}} kept 2 and dropped 1 without a word."""
    with pytest.raises(ValueError, match="param 'h.a.b' is given twice"):
        flat_params({"a.b": 1, "a": {"b": 2}}, "h.")


def test_hyperparameters_of_one_element_are_numbers_by_the_packages_rule():
    """B-D5, B-D6: a one-element array was text, a meta tensor torch's error."""
    got = flat_params({"arr": np.array([0.25]), "t": torch.tensor([3]), "n": np.float32(0.5)})
    assert got == {"arr": 0.25, "t": 3, "n": 0.5}
    with pytest.raises(ValueError, match="param 'm' is a tensor on the meta device"):
        flat_params({"m": torch.empty((), device="meta")})


def test_a_callback_given_a_run_that_has_ended_says_so(store):
    """B-D7: the fit was recorded nowhere, without a word."""
    lightning = pytest.importorskip("lightning")  # noqa: F841
    from trainscope.lightning import TrainscopeCallback
    run = trainscope.start_run(name="done", store="sqlite:" + store, record_environment=False)
    run.finish()
    with pytest.raises(ValueError, match="which has ended"):
        TrainscopeCallback(run=run)


HF = """
    import transformers
    from trainscope.transformers import TrainscopeCallback
    class Fail(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 2:
                raise RuntimeError("step 2 fails")
    model = transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=8, num_labels=2))
    data = [{"input_ids": torch.randint(0, 32, (8,)), "labels": i % 2} for i in range(32)]
    args = transformers.TrainingArguments(output_dir=sys.argv[1], max_steps=4,
        per_device_train_batch_size=8, report_to=[], use_cpu=True, disable_tqdm=True,
        save_strategy="no")
"""


def test_a_transformers_training_that_raised_and_was_caught_ends_failed(store, tmp_path):
    """B-D8: train() raised, the script caught it and exited 0: the run said
    finished, with 1 step of 4."""
    pytest.importorskip("transformers")
    env = dict(os.environ, TRAINSCOPE_STORE="sqlite:" + store)
    code = "import sys, torch\n" + textwrap.dedent(HF) + textwrap.dedent("""
        trainer = transformers.Trainer(model=model, args=args, train_dataset=data,
                                       callbacks=[TrainscopeCallback(name="c"), Fail()])
        try:
            trainer.train()
        except RuntimeError:
            pass
        """)
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert show(store, "c")["status"] == "failed"


def test_a_transformers_callback_given_one_run_trains_one_model_twice(store, tmp_path):
    """B-D9: the second train() of the same model, into the same run=, said
    "this run already watches a model", of that very model. A run watches
    one model and one optimizer: the second training (a new optimizer)
    gets its own run, or is refused saying why."""
    pytest.importorskip("transformers")
    env = dict(os.environ, TRAINSCOPE_STORE="sqlite:" + store)
    code = "import sys, torch, trainscope\n" + textwrap.dedent(HF) + textwrap.dedent("""
        with trainscope.start_run(name="r", record_environment=False) as run:
            for _ in range(2):
                transformers.Trainer(model=model, args=args, train_dataset=data,
                                     callbacks=[TrainscopeCallback(run=run)]).train()
        """)
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "already watches this model, with the optimizer of an earlier training" in done.stderr
    run = show(store, "r")
    assert run["status"] == "failed"  # the script's with block ended by the refusal
    assert run["records"]["fingerprints"] == 4  # the first training, whole
