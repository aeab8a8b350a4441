"""Image settings end to end: renderer mixings, finite rendered data sets, image encoders and the
image reproductions (Table 4, Fig. 5) at the smoke budget."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from typer.testing import CliRunner

from unmix import papers as presets
from unmix.cli import app
from unmix.errors import ConfigError
from unmix.experiment import Experiment
from unmix.render import SpritesRenderer
from unmix.render.module import RenderMixing
from unmix.resolve import load_with_budget
from unmix.settings import Setting

runner = CliRunner()


@pytest.fixture(autouse=True)
def _data_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UNMIX_DATA_DIR", str(tmp_path / "cache"))


def _table4(budget="smoke", **updates):
    return load_with_budget("zimmermann-table4-row1", budget).replace(**updates)


def test_render_mixing_is_the_renderer_and_clamps_only_rounding():
    r = SpritesRenderer(size=16)
    z = torch.tensor([[0.2, 0.5, 0.5, 0.3], [1.0 + 1e-7, 0.0, 0.5, 0.9]])
    mix = RenderMixing(r)
    assert torch.equal(mix(z), r.render(z.clamp(0, 1)))
    assert mix(z).shape == (2, 3, 16, 16) and mix.image_shape == (3, 16, 16)
    mix.flatten = True
    assert mix(z).shape == (2, 3 * 16 * 16)
    with pytest.raises(ConfigError, match="outside the unit interval"):
        mix(torch.tensor([[1.5, 0.5, 0.5, 0.5]]))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"latent.dim": 3}, "unit box"),
        ({"model.backbone": "mlp"}, "observations are images"),
        ({"model.hidden": [10, 10]}, "at most one layer"),
        ({"data.kind": "store"}, "needs data.root"),
    ],
)
def test_image_settings_are_validated(change, message):
    with pytest.raises(ConfigError, match=message):
        _table4(**change)


def test_vector_settings_refuse_image_backbones():
    with pytest.raises(ConfigError, match="needs image observations"):
        load_with_budget("zimmermann-table1-row2", "smoke").replace(
            **{"model.backbone": "conv", "model.hidden": [10]}
        )


def test_rendered_data_set_is_made_once_and_split_by_the_data_seed(tmp_path):
    from unmix.datasets import data_root

    s = _table4()
    exp = Experiment.build(s)
    root = data_root(s)
    assert root.parent == tmp_path / "cache"
    train, test = exp.data.train, exp.data.test
    assert len(train) == 256 and len(test) == 64 and train.image_shape == (3, 32, 32)
    assert not torch.equal(train.latents[:64], test.latents)
    # the stored images are the renders of the stored latents (to 8-bit precision)
    x = exp.mixing(test.latents[:5])
    assert (test.images(torch.arange(5)) - x).abs().max() <= 0.5 / 255 + 1e-6
    stamp = (root / "train" / "images.npy").stat().st_mtime_ns
    Experiment.build(s)  # reused, not re-rendered
    assert (root / "train" / "images.npy").stat().st_mtime_ns == stamp
    other = Experiment.build(s.replace(**{"seeds.data": 1}))
    assert data_root(s.replace(**{"seeds.data": 1})) != root
    assert not torch.equal(other.data.train.latents, train.latents)


def test_nearest_latent_pairs_are_neighbours_of_a_conditional_draw():
    s = _table4()
    exp = Experiment.build(s)
    lat = exp.data.train.latents
    g = torch.Generator().manual_seed(5)
    z, x, x_pos = exp.data.pairs(64, g, exp.device)
    assert z.shape == (64, 10) and x.shape == x_pos.shape == (64, 3, 32, 32)
    # recover the indices: every anchor image is a training image with latent z
    idx = torch.cdist(z, lat).argmin(1)
    assert torch.equal(lat[idx], z)
    pos = torch.stack(
        [
            (exp.data.train.images(torch.arange(len(lat))) - p).abs().flatten(1).sum(1).argmin()
            for p in x_pos
        ]
    )
    assert (pos != idx).all()  # the anchor itself is never its own positive
    # positives are much closer in latent space than random pairs (σ = 0.1 per factor)
    d_pos = (lat[pos] - z).norm(dim=1).mean()
    d_rand = (lat[torch.randperm(len(lat))[:64]] - z).norm(dim=1).mean()
    assert d_pos < 0.75 * d_rand
    again = exp.data.pairs(64, torch.Generator().manual_seed(5), exp.device)
    assert torch.equal(again[2], x_pos)


def test_augmented_pairs_use_no_conditional():
    s = load_with_budget("zimmermann-table4-row5", "smoke")
    assert s.latent.conditional is None and s.data.positives == "augment"
    exp = Experiment.build(s)
    z, x, x_pos = exp.data.pairs(8, torch.Generator().manual_seed(0), exp.device)
    assert x.shape == x_pos.shape == (8, 3, 32, 32) and not torch.equal(x, x_pos)


def test_finite_data_is_scored_on_its_test_split_with_per_factor_numbers():
    exp = Experiment.build(_table4())
    z = exp.eval_data()
    assert torch.equal(z, exp.data.test.latents)
    scores = exp.evaluate(z)
    assert {"r2", "mcc", "r2_factor0", "mcc_factor9"} <= scores.keys()
    with pytest.raises(ConfigError, match="test split"):
        exp.evaluate(z[:10])


def test_image_vae_has_conv_nets_and_flat_observations():
    s = load_with_budget("reizinger-fig5", "smoke")
    exp = Experiment.build(s)
    assert s.latent.marginal.kind == "beta" and exp.mixing.flatten
    x = exp.mixing(exp.process.sample(3, torch.Generator().manual_seed(0)))
    assert x.shape == (3, 3 * 32 * 32)
    mu, logvar = exp.encoder.encode(x)
    assert mu.shape == logvar.shape == (3, 4)
    assert exp.encoder.decode(mu).shape == x.shape
    scores = exp.evaluate(exp.eval_data(16))
    assert {"mcc", "c_ima", "mcc_factor3"} <= scores.keys()


def test_image_vae_takes_the_broadcast_decoder():
    from unmix.models.conv import BroadcastDecoder, ConvDecoder

    s = load_with_budget("reizinger-fig5", "smoke")  # the quick recipe's decoder
    assert isinstance(
        Experiment.build(s.replace(**{"model.vae.decoder": "mlp"})).encoder.decoder[0], ConvDecoder
    )
    exp = Experiment.build(s)
    assert isinstance(exp.encoder.decoder[0], BroadcastDecoder)
    x = exp.mixing(exp.process.sample(3, torch.Generator().manual_seed(0)))
    mu, _ = exp.encoder.encode(x)
    assert exp.encoder.decode(mu).shape == x.shape == (3, 3 * 32 * 32)
    assert {"mcc", "c_ima"} <= exp.evaluate(exp.eval_data(16)).keys()


def test_fig5_latents_are_the_reference_data_sets_beta_shapes():
    # the reference's draw: NumPy's legacy generator at its data seed 1, 8 numbers U(2, 15) read as
    # (α, β) pairs of x, y, scale, hue (docstring of FIG5_DATA_SHAPES)
    from unmix.papers.reizinger.presets import FIG5_DATA_SHAPES

    draw = np.random.RandomState(1).uniform(2, 15, 8).astype(np.float32).reshape(4, 2)
    np.testing.assert_allclose(np.array(FIG5_DATA_SHAPES), draw, atol=1e-4)
    for budget in ("smoke", "quick", "paper"):
        s = load_with_budget("reizinger-fig5", budget)
        assert s.latent.marginal.shapes == FIG5_DATA_SHAPES
    # so every data seed draws its factors from the same Beta marginals
    a = Experiment.build(load_with_budget("reizinger-fig5", "smoke").replace(**{"seeds.data": 3}))
    b = Experiment.build(load_with_budget("reizinger-fig5", "smoke"))
    torch.testing.assert_close(a.process.marginal.alpha, b.process.marginal.alpha)


def test_render_command_pre_renders_and_resumes(tmp_path):
    root = tmp_path / "scenes"
    args = [
        "render",
        "zimmermann-table4-row1",
        "--budget",
        "smoke",
        "--root",
        str(root),
        "--n-train",
        "40",
        "--n-test",
        "20",
        "--size",
        "16",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (root / "train" / "meta.json").exists() and (root / "test" / "images.npy").exists()
    again = runner.invoke(app, args)
    assert again.exit_code == 0 and "40 + 20 images" in again.output
    bad = runner.invoke(app, ["render", "zimmermann-table1-row1"])
    assert bad.exit_code == 2 and "nothing to pre-render" in bad.output


def test_table4_smoke_reproduction(tmp_path):
    out = tmp_path / "results"
    result = runner.invoke(
        app, ["reproduce", "zimmermann-table4", "--budget", "smoke", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    df = pd.read_csv(out / "smoke" / "zimmermann-table4.csv")
    assert len(df) == 5 + 1  # five rows + the supervised baseline (no Identity for images)
    assert set(df["column"]) == {"unsupervised", "supervised"}
    md = (out / "smoke" / "zimmermann-table4.md").read_text()
    assert "96.73 ± 0.10" in md and "99.33 ± 0.01" in md and "Augm." in md
    assert "Per-factor R²" in md


def test_fig5_smoke_reproduction(tmp_path):
    out = tmp_path / "results"
    result = runner.invoke(
        app, ["reproduce", "reizinger-fig5", "--budget", "smoke", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    md = (out / "smoke" / "reizinger-fig5.md").read_text()
    assert "| scale |" in md and "0.933" in md
    assert "Spearman correlation with MCC over training" in md
    assert (out / "smoke" / "reizinger-fig5.png").exists()
    assert (out / "smoke" / "reizinger-fig5-traversal.png").exists()


def test_every_image_preset_is_valid_at_every_budget():
    for p in presets.PRESETS.values():
        if p.group in ("zimmermann-table4", "reizinger-fig5"):
            for budget in ("smoke", "quick", "paper"):
                s = load_with_budget(p.name, budget)
                assert isinstance(s, Setting) and s.observes_images
    paper = load_with_budget("zimmermann-table4-row1", "paper")
    assert paper.model.backbone == "resnet18" and paper.mixing.image_size == 224
    assert paper.train.steps == 200_000 and paper.data.n_train == 250_000


def test_table4_conditional_scale_is_the_references_at_paper_and_the_measured_one_at_quick():
    # the reference applies σ = 0.1 to latents in [−1, 1]^10: 0.05 on unmix's unit box
    from unmix.papers.zimmermann import images

    assert images.TABLE4_SCALE == 0.05 and images.TABLE4_QUICK_SCALE == 0.1
    for row, kind in ((1, "normal"), (3, "laplace"), (4, "normal")):
        for budget, scale in (("paper", 0.05), ("quick", 0.1)):
            c = load_with_budget(f"zimmermann-table4-row{row}", budget).latent.conditional
            assert (c.kind, c.scale) == (kind, scale)
    # row 5's positives are augmentations: no conditional to scale, at any budget
    assert load_with_budget("zimmermann-table4-row5", "quick").latent.conditional is None


def test_table4_report_names_the_conditional_the_budget_drew_from():
    from unmix.papers.base import get_target

    report = get_target("zimmermann-table4").report  # what `unmix reproduce` writes
    quick, paper = report([], Path("."), "quick", 1), report([], Path("."), "paper", 1)
    assert "| 1 | Normal(σ=0.1) |" in quick and "| 3 | Laplace(λ=0.1) |" in quick
    assert "| 1 | Normal(σ=0.05) |" in paper and "| 3 | Laplace(λ=0.05) |" in paper
    assert "| 5 | Augm. |" in quick and "| 5 | Augm. |" in paper


def test_table4_quick_supervised_column_trains_longer_on_more_images_same_test_split():
    from unmix.resolve import resolve

    seeds = {"data": 3, "train": 3}
    sup = resolve("zimmermann-table4-row2", "quick", column="supervised", seeds=seeds).setting
    row = resolve("zimmermann-table4-row2", "quick", seeds=seeds).setting
    assert sup.objective.kind == "supervised" and sup.model.space == "unbounded"
    assert (sup.data.n_train, sup.train.steps) == (200_000, 20_000)
    assert (row.data.n_train, row.train.steps) == (60_000, 6_000)
    # the rest of the recipe is the rows' own: the same scenes, test split size and optimiser
    assert sup.data.n_test == row.data.n_test and sup.mixing == row.mixing
    assert sup.train.lr == row.train.lr and sup.train.batch_size == row.train.batch_size
    # the test split has its own stream of the data seed, so a larger training split leaves the
    # test scenes as they are: the Supervised column is scored on the other rows' test images
    small = Experiment.build(_table4(**{"data.n_train": 20, "data.n_test": 16}))
    large = Experiment.build(_table4(**{"data.n_train": 40, "data.n_test": 16}))
    assert torch.equal(small.data.test.latents, large.data.test.latents)
    assert torch.equal(
        small.data.test.images(torch.arange(5)), large.data.test.images(torch.arange(5))
    )


def test_bench_times_a_finite_data_set_on_a_small_render():
    from unmix.bench import BENCH_IMAGES, bench_steps
    from unmix.datasets import data_root

    s = load_with_budget("zimmermann-table4-row5", "smoke")  # augmentations, sphere model
    r = bench_steps(s, batch_size=8, steps=1, warmup=1)
    assert r.seconds_per_step > 0 and set(r.stages) == {"sample", "forward", "loss", "backward"}
    small = s.replace(**{"data.n_train": BENCH_IMAGES, "data.n_test": 64})
    assert (data_root(small) / "train" / "meta.json").exists()  # the small set, not the preset's
    assert not data_root(s).exists()


def test_per_factor_scores_of_a_permuted_sign_flipped_copy_are_one():
    import numpy as np

    from unmix.metrics import mcc, r2_affine
    from unmix.metrics.registered import per_factor_scores

    z = np.random.default_rng(0).random((2000, 4))
    z_hat = -3.0 * z[:, [2, 0, 3, 1]] + 1.0
    scores = per_factor_scores(r2_affine(z, z_hat), mcc(z, z_hat))
    assert all(abs(scores[f"mcc_factor{i}"] - 1) < 1e-12 for i in range(4))
    assert all(abs(scores[f"r2_factor{i}"] - 1) < 1e-9 for i in range(4))
    # a code that holds factor 0 and independent noise explains factor 0 only
    partial = np.column_stack([z[:, 0], np.random.default_rng(1).random((2000, 3))])
    scores = per_factor_scores(r2_affine(z, partial), mcc(z, partial))
    assert scores["r2_factor0"] > 0.999 and scores["mcc_factor0"] > 0.999
    assert all(scores[f"r2_factor{i}"] < 0.01 for i in (1, 2, 3))


def test_fig5_cima_trend_is_spearmans_rho_over_every_evaluation(tmp_path):
    """The report's C_IMA sentence: Spearman's ρ of MCC with each statistic, pooled over the
    runs' metrics.csv rows, as scipy computes it; a sign says which way the statistic moves."""
    from scipy.stats import spearmanr

    from unmix.papers.reizinger.images import cima_trend

    mcc = [0.2, 0.5, 0.6, 0.8, 0.3, 0.7]
    glob = [0.1, 0.4, 0.3, 0.9, 0.2, 0.5]  # rises with MCC
    mean_jac = [0.9, 0.5, 0.6, 0.1, 0.8, 0.4]  # falls
    rows = []
    for k in range(2):
        d = tmp_path / f"run{k}"
        d.mkdir()
        lines = ["step,mcc,c_ima,c_ima_mean_jacobian"]
        for i in range(3):
            j = 3 * k + i
            lines.append(f"{i},{mcc[j]},{glob[j]},{mean_jac[j]}")
        (d / "metrics.csv").write_text("\n".join(lines) + "\n")
        rows.append({"run_dir": str(d)})
    text = cima_trend(rows)
    rho_g = spearmanr(mcc, glob).statistic
    rho_m = spearmanr(mcc, mean_jac).statistic
    assert f"(`c_ima`) rises as MCC rises (ρ = {rho_g:+.2f}, 6 evaluations)" in text
    assert f"(`c_ima_mean_jacobian`) falls as MCC rises (ρ = {rho_m:+.2f}, 6 evaluations)" in text
    (tmp_path / "run1" / "metrics.csv").write_text("step,mcc,c_ima\n0,0.5,0.1\n")
    assert "fewer than 3 evaluations" in cima_trend([rows[1]])


def test_a_finite_data_set_draws_shared_negatives_from_its_training_images():
    from unmix.train import train

    s = _table4(**{"data.n_train": 40, "data.n_test": 32, "train.steps": 2})
    shared = s.replace(
        **{
            "objective.negatives": "shared",
            "objective.n_negatives": 6,
            "objective.detach_negatives": True,
        }
    )
    exp = Experiment.build(shared)
    batch = exp.batch(4, exp.stream_generator("train/batches"))
    assert batch.x_neg.shape == (6, *batch.x.shape[1:])
    train_images = exp.data.train.images(torch.arange(40)).flatten(1)
    for x in batch.x_neg.flatten(1):  # each negative is one of the training images
        assert (train_images == x).all(dim=1).any()
    assert torch.isfinite(torch.tensor(train(shared).summary["loss"]))
    per_anchor = s.replace(**{"objective.negatives": "external", "objective.n_negatives": 3})
    exp = Experiment.build(per_anchor)
    with pytest.raises(ConfigError, match="set objective.negatives: shared"):
        exp.batch(4, exp.stream_generator("train/batches"))
