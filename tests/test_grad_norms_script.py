"""benchmarks/grad_norms.py reports the norm that ``train.grad_clip`` clips (docs/images.md)."""

import torch

from unmix.experiment import Experiment
from unmix.resolve import load_with_budget
from unmix.train import train


def test_grad_norms_match_clip_grad_norm(tmp_path, benchmark_script):
    setting = load_with_budget("reizinger-fig5", "smoke")
    train(setting, tmp_path / "run")
    got = benchmark_script("grad_norms").grad_norms(
        str(tmp_path / "run"), batches=2, batch_size=4, seed=5
    )
    # independent reference: torch's own total norm, on the same batches drawn the same way
    exp = Experiment.from_run(tmp_path / "run")
    gen = torch.Generator().manual_seed(5)
    want = []
    for _ in range(2):
        exp.encoder.zero_grad()
        exp.loss(gen, 4).backward()
        want.append(torch.nn.utils.clip_grad_norm_(exp.encoder.parameters(), float("inf")))
    assert got.shape == (2,)
    torch.testing.assert_close(got.float(), torch.stack(want).float(), rtol=1e-5, atol=1e-6)
    assert bool((got > 0).all())
