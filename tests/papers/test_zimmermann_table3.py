"""Paper 000's Table 3 target: presets, budget rule (KITTI switch), smoke reproduction."""

import os
import time

import numpy as np

from unmix.papers import get_target, in_group
from unmix.papers.zimmermann import table3
from unmix.resolve import resolve


def test_presets_carry_the_papers_values():
    presets = in_group("zimmermann-table3")
    assert len(presets) == 10
    p = {x.name: x for x in presets}
    sv = p["zimmermann-table3-dt0.05-slowvae"]
    assert sv.paper["unsupervised"] == (66.1, 4.5) and sv.metric == "mcc_spearman"
    assert sv.setting.model.kind == "slowvae" and sv.setting.data.max_delta_t == 1
    lb = p["zimmermann-table3-dt0.15-laplace-box"]
    assert lb.paper["unsupervised"] == (80.9, 3.8) and lb.setting.data.max_delta_t == 5
    assert lb.setting.objective.p == 1.0 and lb.setting.model.space == "box_sigmoid"
    # the authors' loaders: 10 code dimensions for the 3 factors, in every row
    assert {x.setting.out_dim for x in presets} == {10} and sv.setting.latent.dim == 3
    # the authors' --batch-size 64 counts frames: 32 pairs a step
    assert lb.setting.train.batch_size == 32 and lb.setting.train.steps == 300_000


def test_budget_rule_and_kitti_switch(monkeypatch, tmp_path):
    monkeypatch.delenv(table3.KITTI_ROOT_ENV, raising=False)
    s = resolve("zimmermann-table3-dt0.15-normal-box", "smoke").setting
    assert s.data.kind == "mask_sequences" and s.data.image_size == 32 and s.train.steps == 4
    q = resolve("zimmermann-table3-dt0.15-normal-box", "quick").setting
    assert q.train.batch_size == 64 and q.data.image_size == 64  # KITTI Masks' size
    # the quick recipe's one departure for the box rows: τ = 0.1 (the paper's τ = 1 elsewhere)
    assert q.objective.tau == table3.QUICK_BOX_TAU == 0.1
    assert resolve("zimmermann-table3-dt0.15-normal-box", "paper").setting.objective.tau == 1.0
    assert resolve("zimmermann-table3-dt0.05-laplace-unbounded", "quick").setting.objective.tau == 1
    told = resolve(
        "zimmermann-table3-dt0.05-laplace-box", "quick", overrides={"objective.tau": 0.5}
    )
    assert told.setting.objective.tau == 0.5  # an override still wins
    assert resolve("zimmermann-table3-dt0.05-slowvae", "paper").setting.train.batch_size == 32
    monkeypatch.setenv(table3.KITTI_ROOT_ENV, str(tmp_path))
    k = resolve("zimmermann-table3-dt0.15-normal-box", "smoke").setting
    assert k.data.kind == "kitti_masks" and k.data.root == str(tmp_path)
    assert k.data.max_delta_t == 5 and k.train.steps == 4
    monkeypatch.delenv(table3.KITTI_ROOT_ENV)
    o = resolve(
        "zimmermann-table3-dt0.05-laplace-box",
        "quick",
        overrides={"data.kind": "kitti_masks", "data.root": "/data/kitti", "data.max_delta_t": 1},
    ).setting
    assert o.data.kind == "kitti_masks" and o.data.root == "/data/kitti"


def test_difference_text_is_welch_t_test():
    """The report's significance note: Welch's t from its closed form, p from the t law."""
    from scipy import stats

    a, b = [85.8, 86.9, 82.5, 85.6, 90.5], [89.4, 78.9, 81.8, 82.3, 81.9]
    va, vb = np.var(a, ddof=1) / 5, np.var(b, ddof=1) / 5
    t = (np.mean(a) - np.mean(b)) / np.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / 4 + vb**2 / 4)
    p = 2 * stats.t.sf(abs(t), dof)
    text = table3.difference_text(a, b)
    assert f"{np.mean(a) - np.mean(b):+.1f} points" in text and f"p = {p:.2g}" in text
    assert ("not significant" in text) == (p >= 0.05)
    far = table3.difference_text([90.0, 91.0, 92.0], [60.0, 61.0, 62.5])
    assert far.startswith(" (+29.8 points") and "not significant" not in far
    assert table3.difference_text([90.0], [60.0, 61.0]) == ""
    assert len(table3.ordering_pairs()) == len(table3.orderings({}))


def test_orderings():
    means = {(dt, m, s): v for dt, t in table3.TABLE3_PAPER.items() for (m, s), (v, _) in t.items()}
    assert all(ok for _, ok in table3.orderings(means))  # the paper's own means
    assert table3.orderings({})[0][1] is None


def test_reproduce_smoke_runs_quickly(tmp_path, monkeypatch):
    from unmix.reproduce import reproduce

    monkeypatch.delenv(table3.KITTI_ROOT_ENV, raising=False)
    t0 = time.perf_counter()
    rep = reproduce("zimmermann-table3", budget="smoke", seeds=1, out=tmp_path)
    assert time.perf_counter() - t0 < 30
    assert not rep.failures and len(rep.rows) == 10
    assert {r["data"] for r in rep.rows} == {"mask_sequences"}
    assert "generated mask sequences" in rep.markdown and "66.1 ± 4.5" in rep.markdown
    assert (tmp_path / "smoke" / "zimmermann-table3.md").exists()
    assert get_target("zimmermann-table3").paper == "zimmermann"


def test_mcc_spearman_is_rank_invariant():
    import numpy as np

    from unmix.registry import METRICS

    z = np.random.default_rng(0).normal(size=(500, 3))
    z_hat = np.exp(z[:, [2, 0, 1]]) * np.array([1.0, -2.0, 3.0])  # monotone per coordinate
    value = METRICS.build(METRICS.validate("mcc_spearman"), z=z, z_hat=z_hat)
    assert abs(value - 1.0) < 1e-12


def test_reproduce_data_root_switches_to_kitti_masks(tmp_path, monkeypatch):
    """``unmix reproduce zimmermann-table3 --data-root FILE`` trains on KITTI Masks (a fixture in
    the authors' layout); a missing path or another target is one line and exit 2."""
    import pickle

    from typer.testing import CliRunner

    from unmix.cli import app

    monkeypatch.delenv(table3.KITTI_ROOT_ENV, raising=False)
    rng = np.random.default_rng(0)
    seqs, lats = [], []
    for _ in range(6):  # boxes that drift and grow, always inside the 64 px frame
        y, x = rng.integers(5, 25, 2)
        frames = np.zeros((30, 64, 64), dtype=bool)
        for t in range(30):
            frames[t, y + t // 3 : y + 12 + t // 2, x + t // 2 : x + 6 + t // 3] = True
        seqs.append(frames)
        lats.append(np.array([[*np.argwhere(f).mean(0), f.sum()] for f in frames], np.float32))
    with open(tmp_path / "kitti_peds_v2.pickle", "wb") as fh:
        pickle.dump({"pedestrians": seqs, "pedestrians_latents": lats}, fh)
    runner = CliRunner()
    out = tmp_path / "res"
    args = ["reproduce", "zimmermann-table3", "--budget", "smoke", "--out", str(out)]
    ok = runner.invoke(app, [*args, "--data-root", str(tmp_path / "kitti_peds_v2.pickle")])
    assert ok.exit_code == 0, ok.output
    assert "KITTI Masks at" in (out / "smoke" / "zimmermann-table3.md").read_text()
    assert table3.KITTI_ROOT_ENV not in os.environ  # set for the call only
    missing = runner.invoke(app, [*args, "--data-root", str(tmp_path / "nope.pickle")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    assert "Traceback" not in missing.output
    other = runner.invoke(
        app, ["reproduce", "zimmermann-table1", "--budget", "smoke", "--data-root", str(tmp_path)]
    )
    assert other.exit_code == 2 and "zimmermann-table3 only" in other.output
