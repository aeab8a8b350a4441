"""Test-suite settings: one torch thread (small ops on a loaded 2-core machine run faster so)."""

import matplotlib
import torch

matplotlib.use("Agg")
torch.set_num_threads(1)
