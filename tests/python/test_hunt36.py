"""Thirty-sixth hunt, tester B, D1 and D2 (docs/reliability.md): a model's
module names become the profile's rows and the probes' metric keys
(probe/NAME/...); a name no key takes, or one the profile gives its own
meaning, is refused at watch() naming the module, where it was stored
(keys every entry point refuses) or lost its time."""
import pytest
import torch

import trainscope

from hunt_support import store  # noqa: F401 (store: a fixture)


@pytest.mark.parametrize("name, words", [
    ("a\x1bb", "holds a control character"),
    ("x" * 300, "longer than 200 bytes"),
    ("(wall)", "gives its own meaning"),
    ("(other)", "gives its own meaning"),
])
def test_a_module_name_no_layer_may_have_is_refused_at_watch(store, name, words):
    model = torch.nn.Sequential()
    model.add_module(name, torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with trainscope.start_run(name="w", store="sqlite:" + store,
                              record_environment=False) as run:
        with pytest.raises(ValueError, match="rename the module") as e:
            run.watch(model, opt, probes="standard", probes_every=1)
        assert words in str(e.value)
