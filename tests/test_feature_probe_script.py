"""benchmarks/feature_probe.py: the L∞ head's face share (docs/images.md, "Why seed 2 leaves α out")."""

import numpy as np
import torch

from unmix.models.heads import BoxHead


def test_face_share_counts_the_largest_raw_coordinate_through_the_head(benchmark_script):
    gen = torch.Generator().manual_seed(0)
    y = torch.randn(3000, 5, generator=gen)
    y[:1000, 2] += 4.0  # a third of the images pushed onto feature 2's face
    head = BoxHead(5)
    with torch.no_grad():
        head.magnitude.copy_(torch.tensor([0.5, 1.0, 2.0, 3.0, 1.5]))
        h = head(y).double().numpy()
    got = benchmark_script("feature_probe").face_share(h, head.magnitude.detach().double().numpy())
    # reference: a loop over the raw outputs, the face of each is its largest |y_j|
    want = np.zeros(5)
    for row in y.numpy():
        want[int(np.argmax(np.abs(row)))] += 1
    np.testing.assert_allclose(got, want / len(y))
    assert np.isclose(got.sum(), 1.0) and got[2] > 0.33
