"""Thirty-fourth hunt, tester B: the callbacks' defects B-D1 and B-D2 and
the noted B-21 (docs/reliability.md), read back with the CLI as a user
would: a Trainer's Decimal and 0-d NumPy metrics are recorded, and
hyperparameters that are no number (complex, dates, bytes) or whose key
no param takes do not end the fit."""
import decimal
import warnings

import numpy as np
import pytest
import torch
from torch import nn

pytest.importorskip("lightning")
pytest.importorskip("transformers")

import lightning.pytorch as pl  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402

from trainscope import lightning as ts_lightning  # noqa: E402
from trainscope import transformers as ts_transformers  # noqa: E402
from trainscope._params import flat_params  # noqa: E402

from hunt_support import cli, show, store  # noqa: E402,F401 (store: a fixture)


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, input_ids=None, labels=None):
        logits = self.lin(input_ids)
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


class Rows(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return {"input_ids": torch.randn(4, generator=g), "labels": torch.tensor(i % 2)}


def test_a_trainers_decimal_and_0d_array_metrics_are_recorded(store, tmp_path):
    """B-D1: on_log kept only numbers.Real and tensors, dropping a Decimal
    and a 0-d NumPy array in silence."""
    def metrics(_):
        return {"dec": decimal.Decimal("0.5"), "arr0": np.array(0.25), "f": 0.75,
                "name": "cosine"}
    args = TrainingArguments(str(tmp_path / "out"), num_train_epochs=1, eval_strategy="epoch",
                             per_device_train_batch_size=8, report_to=[], save_strategy="no",
                             use_cpu=True, disable_tqdm=True)
    callback = ts_transformers.TrainscopeCallback(name="hf", store="sqlite:" + store, watch=False)
    Trainer(model=Tiny(), args=args, train_dataset=Rows(), eval_dataset=Rows(),
            compute_metrics=metrics, callbacks=[callback]).train()
    got = {m["key"]: m["last"] for m in show(store, "hf")["metric_summaries"]}
    assert got["eval/dec"] == 0.5 and got["eval/arr0"] == 0.25 and got["eval/f"] == 0.75
    assert "eval/name" not in got  # text is no metric


class Net(pl.LightningModule):
    def __init__(self, **hp):
        super().__init__()
        self.save_hyperparameters()
        self.lin = nn.Linear(4, 2)

    def training_step(self, batch, i):
        x, y = batch
        return nn.functional.cross_entropy(self.lin(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_hyperparameters_that_are_no_number_are_their_text_and_the_fit_trains(store):
    """B-D2: complex, np.complex64, np.datetime64 and np.bytes_ ended the
    fit with log_params' ValueError before a step; interop.md says any
    other object is its str()."""
    hp = {"c": 1 + 2j, "nc": np.complex64(1 + 2j), "d": np.datetime64("2024-01-01"),
          "b": np.bytes_(b"xy"), "dec": decimal.Decimal("0.5"), "n": np.float32(0.25)}
    data = torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randint(0, 2, (16,)))
    callback = ts_lightning.TrainscopeCallback(name="pl", store="sqlite:" + store, watch=False)
    pl.Trainer(max_epochs=1, callbacks=[callback], logger=False, enable_progress_bar=False,
               enable_model_summary=False, enable_checkpointing=False,
               accelerator="cpu").fit(Net(**hp), torch.utils.data.DataLoader(data, batch_size=8))
    run = show(store, "pl")
    assert run["status"] == "finished"
    params = run["params"]
    assert params["hparams.c"] == "(1+2j)" and params["hparams.nc"] == "(1+2j)"
    assert params["hparams.d"] == "2024-01-01" and params["hparams.b"] == "b'xy'"
    assert float(params["hparams.dec"]) == 0.5 and float(params["hparams.n"]) == 0.25


def test_a_key_no_param_takes_is_left_out_with_a_warning_naming_it():
    """Noted B-21: a key with a control character ended the fit; one over
    256 bytes was left out in silence. Both are now left out, said."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = flat_params({"a\nb": 1, "x" * 300: 2, "  ": 3, "ok": 4})
    assert out == {"ok": 4}
    said = " ".join(str(w.message) for w in caught)
    assert "control character" in said and "longer than 256 bytes" in said
    assert "only blanks" in said
