"""Named seed streams: derived by SeedSequence from (seed, name), never by offsets."""

import numpy as np
import pytest
import torch

from unmix import seeds as sd
from unmix.errors import ConfigError
from unmix.experiment import Experiment
from unmix.settings import Setting


def test_streams_are_deterministic_and_distinct_across_names_and_seeds():
    names = [f"data/{n}" for n in sd.DATA_STREAMS] + [f"train/{n}" for n in sd.TRAIN_STREAMS]
    values = {(s, n): sd.stream_seed(s, n) for s in range(20) for n in names}
    assert len(set(values.values())) == len(values)  # no two (seed, name) pairs coincide
    assert all(0 <= v < 2**63 for v in values.values())
    assert sd.stream_seed(3, "train/init") == sd.stream_seed(3, "train/init")


def test_stream_seed_is_the_seed_sequence_state():
    # independent reference: the documented SeedSequence construction, by hand
    name = b"train/batches"
    words = [len(name)] + [
        int.from_bytes(name[i : i + 4], "little") for i in range(0, len(name), 4)
    ]
    lo, hi = np.random.SeedSequence([7, 0, *words]).generate_state(2, np.uint32)
    assert sd.stream_seed(7, "train/batches") == (int(hi) << 32 | int(lo)) & (2**63 - 1)


def test_no_additive_offset_relation():
    # with offsets, stream(s, a) == stream(s + k, b) for some fixed k; named streams never align
    a = [sd.stream_seed(s, "data/eval") for s in range(50)]
    b = [sd.stream_seed(s, "data/mixing") for s in range(50)]
    assert not set(a) & set(b)


@pytest.mark.parametrize("bad", [-1, 2**63, 1.5, True, "3"])
def test_bad_seeds_are_one_line(bad):
    with pytest.raises(ConfigError, match="seed"):
        sd.stream_seed(bad, "data/eval")


def test_first_training_batch_is_not_the_evaluation_set():
    s = Setting.from_dict(
        {
            "latent": {"space": "sphere", "dim": 3, "conditional": {"kind": "vmf", "kappa": 1}},
            "train": {"eval_samples": 64},
            "seeds": {"data": 5, "train": 5},
        }
    )
    exp = Experiment.build(s)
    batch = exp.batch(64, exp.stream_generator("train/batches"))
    assert not torch.allclose(batch.z, exp.eval_data())
    manifest = sd.manifest_streams(s.seeds)
    assert manifest["data/mixing"] != manifest["train/init"] != manifest["train/batches"]
