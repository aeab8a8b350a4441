import json

import pandas as pd
import pytest
import torch

from unmix import runs
from unmix.errors import CheckpointError, ConfigError, TrainingError
from unmix.experiment import Experiment
from unmix.settings import Setting
from unmix.train import train


def tiny(**train_over) -> Setting:
    t = {
        "steps": 20,
        "batch_size": 64,
        "lr": 1e-3,
        "eval_every": 10,
        "eval_samples": 256,
        "checkpoint_every": 10,
    }
    t.update(train_over)
    return Setting.from_dict(
        {
            "name": "tiny",
            "latent": {"space": "sphere", "dim": 3, "conditional": {"kind": "vmf", "kappa": 5.0}},
            "model": {"hidden": [4, 4]},
            "train": t,
        }
    )


def test_run_directory_files_load_with_pandas(tmp_path):
    result = train(tiny(), tmp_path / "run")
    d = tmp_path / "run"
    for name in (runs.CONFIG, runs.MANIFEST, runs.METRICS, runs.SUMMARY, runs.CHECKPOINT):
        assert (d / name).exists(), name
    df = pd.read_csv(d / runs.METRICS)
    assert list(df["step"]) == [10, 20]
    assert {"loss", "r2", "r2_in_sample", "mcc", "lr", "elapsed_s", "cpu_s"} <= set(df.columns)
    assert df["cpu_s"].is_monotonic_increasing and df["cpu_s"].gt(0).all()
    summary = json.loads((d / runs.SUMMARY).read_text())
    assert summary["cpu_time_s"] >= df["cpu_s"].iloc[-1] > 0
    assert summary["status"] == "finished"
    assert summary["seeds"] == {"data": 0, "train": 0}
    assert summary["r2"] == pytest.approx(result.summary["r2"])
    manifest = json.loads((d / runs.MANIFEST).read_text())
    assert manifest["packages"]["torch"].startswith("2.")
    assert Setting.from_yaml(d / runs.CONFIG) == tiny()


def test_same_seeds_same_numbers():
    a, b = train(tiny()), train(tiny())
    assert a.summary["r2"] == b.summary["r2"] and a.summary["loss"] == b.summary["loss"]


def test_seeds_are_separate():
    s = tiny()
    e0 = Experiment.build(s)
    e_train = Experiment.build(s.replace(**{"seeds.train": 1}))
    e_data = Experiment.build(s.replace(**{"seeds.data": 1}))
    # the training seed changes the initialisation but neither the mixing nor the evaluation data
    assert torch.equal(e0.eval_data(), e_train.eval_data())
    assert all(
        torch.equal(a, b)
        for a, b in zip(
            e0.mixing.state_dict().values(), e_train.mixing.state_dict().values(), strict=False
        )
    )
    w0 = next(e0.encoder.parameters())
    assert not torch.equal(w0, next(e_train.encoder.parameters()))
    # the data seed changes mixing and evaluation data but not the initialisation
    assert not torch.equal(e0.eval_data(), e_data.eval_data())
    assert torch.equal(w0, next(e_data.encoder.parameters()))


def _cut_at_20_and_resume(setting: Setting, run_dir):
    """Train ``setting`` into ``run_dir``, interrupt it at the step-20 evaluation (its last
    checkpoint is at step 10), then resume it; return the resumed run's result."""

    class Stop(Exception):
        pass

    def stop_at_20(row):
        if row["step"] == 20:
            raise Stop

    with pytest.raises(Stop):
        train(setting, run_dir, on_eval=stop_at_20)
    assert not runs.is_finished(run_dir)
    return train(setting, run_dir, resume=True)


def test_resume_gives_the_same_result_as_an_uninterrupted_run(tmp_path):
    full = train(tiny(), tmp_path / "full")
    resumed = _cut_at_20_and_resume(tiny(), tmp_path / "cut")
    assert resumed.summary["resumed_from_step"] == 10
    for key in ("loss", "r2", "mcc"):
        assert resumed.summary[key] == full.summary[key]
    for a, b in zip(
        full.experiment.encoder.state_dict().values(),
        resumed.experiment.encoder.state_dict().values(),
        strict=False,
    ):
        assert torch.equal(a, b)
    assert len(pd.read_csv(tmp_path / "cut" / runs.METRICS)) == 2


def test_existing_run_is_not_overwritten(tmp_path):
    train(tiny(), tmp_path / "run")
    with pytest.raises(CheckpointError, match="already holds a run"):
        train(tiny(), tmp_path / "run")


def test_corrupt_checkpoint_gets_a_readable_error(tmp_path):
    train(tiny(), tmp_path / "run")
    (tmp_path / "run" / runs.CHECKPOINT).write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="corrupt or unreadable"):
        train(tiny(), tmp_path / "run", resume=True)
    assert runs.is_finished(tmp_path / "run")  # results were not lost


def test_resume_with_a_different_setting_is_refused(tmp_path):
    train(tiny(), tmp_path / "run")
    other = tiny().replace(**{"objective.tau": 0.5})
    with pytest.raises(CheckpointError, match=r"objective\.tau changed.*only train\.\* fields"):
        train(other, tmp_path / "run", resume=True)


def test_resume_accepts_new_train_fields_and_records_them(tmp_path):
    train(tiny(steps=20, checkpoint_every=10), tmp_path / "run")
    (tmp_path / "run" / runs.SUMMARY).unlink()  # as if stopped after the step-20 checkpoint
    more = tiny(steps=30, lr=5e-4, checkpoint_every=10)
    result = train(more, tmp_path / "run", resume=True)
    assert result.summary["steps"] == 30 and result.summary["resumed_from_step"] == 20
    manifest = json.loads((tmp_path / "run" / runs.MANIFEST).read_text())
    fields = manifest["resumed_with_changes"]["fields"]
    assert fields["train.lr"] == [1e-3, 5e-4] and fields["train.steps"] == [20, 30]
    assert result.history[-1]["lr"] == pytest.approx(5e-4)  # the new lr, constant schedule


def test_nan_loss_stops_with_a_clear_message_and_keeps_metrics(tmp_path, monkeypatch):
    original = Experiment.loss
    calls = {"n": 0}

    def loss(self, generator, batch_size):
        calls["n"] += 1
        value = original(self, generator, batch_size)
        return value * float("nan") if calls["n"] > 12 else value

    monkeypatch.setattr(Experiment, "loss", loss)
    with pytest.raises(TrainingError, match=r"diverged at step 12: the loss became nan.*train\.lr"):
        train(tiny(), tmp_path / "run")
    assert len(pd.read_csv(tmp_path / "run" / runs.METRICS)) == 1
    summary = json.loads((tmp_path / "run" / runs.SUMMARY).read_text())
    assert summary["status"] == "diverged" and summary["step"] == 12


def test_a_late_nan_gradient_keeps_the_last_good_checkpoint_and_resume_continues(
    tmp_path, monkeypatch
):
    """A finite loss whose gradient turns NaN at step 25: the step-20 checkpoint stays finite and
    loadable, and --resume with a smaller train.lr continues from it to the end."""
    calls = {"n": 0}
    real_backward = torch.Tensor.backward

    def backward(self, *args, **kwargs):
        real_backward(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 26:  # step 25 (0-based)
            p = next(q for q in Experiment._last.encoder.parameters() if q.grad is not None)
            p.grad.fill_(float("nan"))

    build = Experiment.build

    def tracking_build(*args, **kwargs):
        exp = build(*args, **kwargs)
        Experiment._last = exp
        return exp

    monkeypatch.setattr(Experiment, "build", tracking_build)
    monkeypatch.setattr(torch.Tensor, "backward", backward)
    run = tmp_path / "run"
    with pytest.raises(TrainingError, match="diverged at step 25: the gradient became nan") as err:
        train(tiny(steps=40), run)
    monkeypatch.setattr(torch.Tensor, "backward", real_backward)
    # the message names the (first) parameter whose gradient is not finite
    first = next(n for n, q in Experiment._last.encoder.named_parameters() if q.grad is not None)
    assert f"nan (first in {first});" in str(err.value)
    state = runs.load_checkpoint(run / runs.CHECKPOINT)
    assert state["step"] == 20
    assert all(torch.isfinite(v).all() for v in state["encoder"].values())
    summary = json.loads((run / runs.SUMMARY).read_text())
    assert summary["status"] == "diverged" and summary["step"] == 25
    result = train(tiny(steps=40, lr=3e-4), run, resume=True)
    assert result.summary["status"] == "finished" and result.summary["resumed_from_step"] == 20


@pytest.mark.parametrize(
    "space,cond,model,objective",
    [
        ("sphere", {"kind": "normal", "scale": 0.1}, "sphere", {"kind": "infonce"}),
        ("box", {"kind": "laplace", "scale": 0.1}, "box", {"kind": "lp_infonce", "p": 1.0}),
        (
            "box",
            {"kind": "gennorm", "scale": 0.1, "beta": 3.0},
            "box_sigmoid",
            {"kind": "lp_infonce", "p": 3.0},
        ),
        ("box", {"kind": "normal", "scale": 0.1}, "unbounded", {"kind": "supervised"}),
        (
            "sphere",
            {"kind": "vmf", "kappa": 10.0},
            "sphere",
            {"kind": "infonce", "negatives": "external", "n_negatives": 8},
        ),
        (
            "box",
            {"kind": "normal", "scale": 0.1},
            "unbounded",
            {"kind": "lp_infonce", "p": 2.0, "negatives": "shared", "n_negatives": 40},
        ),
        ("sphere", {"kind": "vmf", "kappa": 10.0}, "sphere", {"kind": "align_uniform"}),
    ],
)
def test_every_objective_trains_through_the_same_loop(space, cond, model, objective):
    s = Setting.from_dict(
        {
            "latent": {"space": space, "dim": 3, "conditional": cond},
            "model": {"space": model, "hidden": [4]},
            "objective": objective,
            "train": {"steps": 5, "batch_size": 32, "eval_every": 5, "eval_samples": 128},
        }
    )
    summary = train(s).summary
    assert all(torch.isfinite(torch.tensor(summary[k])) for k in ("loss", "r2", "mcc"))


def test_shared_negatives_are_drawn_once_per_step_from_the_marginal():
    """negatives: shared — the batch holds M negatives (M, obs) for every anchor, drawn from p(z)
    on the training stream; the loss sees B - 1 + M negatives per anchor."""
    from unmix.experiment import Experiment

    s = tiny().replace(**{"objective.negatives": "shared", "objective.n_negatives": 24})
    exp = Experiment.build(s)
    batch = exp.batch(16, exp.stream_generator("train/batches"))
    assert batch.x.shape == (16, 3) and batch.x_neg.shape == (24, 3)
    assert exp.objective.loss.n_candidates(16, 24) == 1 + 15 + 24
    with pytest.raises(ConfigError, match="negatives: shared needs n_negatives >= 1"):
        tiny().replace(**{"objective.negatives": "shared"})


def test_a_negatives_queue_changes_the_run_and_resumes_exactly(tmp_path):
    """negatives: queue — no negatives are drawn (the batch holds pairs only); the queue of
    earlier features is in the checkpoint, so a run cut at step 10 and resumed ends where the
    uninterrupted one does."""
    queue = tiny().replace(**{"objective.negatives": "queue", "objective.n_negatives": 200})
    exp = Experiment.build(queue)
    assert exp.batch(16, exp.stream_generator("train/batches")).x_neg is None
    full = train(queue, tmp_path / "full")
    assert full.experiment.objective.queued().shape == (200, 3)
    assert full.summary["loss"] != train(tiny()).summary["loss"]  # the queue's negatives count
    resumed = _cut_at_20_and_resume(queue, tmp_path / "cut")
    assert resumed.summary["resumed_from_step"] == 10
    for key in ("loss", "r2", "mcc"):
        assert resumed.summary[key] == full.summary[key]
    with pytest.raises(ConfigError, match="negatives: queue needs n_negatives >= 1"):
        tiny().replace(**{"objective.negatives": "queue"})


def test_identity_model_needs_no_training():
    s = tiny().replace(**{"model.kind": "identity"})
    summary = train(s).summary
    assert 0.0 < summary["r2"] < 1.0


def test_resuming_with_another_thread_count_warns(tmp_path):
    train(tiny(steps=20, checkpoint_every=10), tmp_path / "run")
    (tmp_path / "run" / runs.SUMMARY).unlink()
    with pytest.warns(UserWarning, match="threads"):
        train(tiny(steps=30, checkpoint_every=10, threads=2), tmp_path / "run", resume=True)
    manifest = json.loads((tmp_path / "run" / runs.MANIFEST).read_text())
    assert manifest["resumed_with_changes"]["fields"]["train.threads"] == [1, 2]
    assert manifest["torch_threads"] == 2


def _warm(**objective) -> Setting:
    base = tiny().to_dict()
    base["objective"] = {"kind": "infonce", "tau": 0.2, **objective}
    return Setting.from_dict(base)


def test_alignment_warm_up_is_applied_and_resumes_exactly(tmp_path):
    warm = _warm(align_start=0.3, align_warmup=0.8)
    full = train(warm, tmp_path / "full")
    plain = train(_warm(), tmp_path / "plain")
    assert full.summary["loss"] != plain.summary["loss"]  # the schedule changed the path
    # the last step (19 of 20) is past 0.8 · 20 = 16: the objective ends as InfoNCE itself
    assert full.experiment.objective.loss.align_weight == 1.0
    resumed = _cut_at_20_and_resume(warm, tmp_path / "cut")
    assert resumed.summary["resumed_from_step"] == 10  # resumed inside the warm-up
    for key in ("loss", "r2", "mcc"):
        assert resumed.summary[key] == full.summary[key]


def _spy_progress(monkeypatch, cls, read) -> list:
    """Record ``read(objective, step, total)`` after each ``cls.set_progress`` the trainer calls."""
    seen = []
    original = cls.set_progress

    def spy(self, step, total):
        original(self, step, total)
        seen.append(read(self, step, total))

    monkeypatch.setattr(cls, "set_progress", spy)
    return seen


def test_the_trainer_tells_the_objective_each_steps_progress(monkeypatch):
    from unmix.objectives.base import Contrastive

    seen = _spy_progress(monkeypatch, Contrastive, lambda o, s, t: (s, t, o.loss.align_weight))
    train(_warm(align_start=0.5, align_warmup=0.5))
    assert [s for s, _, _ in seen] == list(range(20)) and {t for _, t, _ in seen} == {20}
    weights = [w for _, _, w in seen]
    assert weights[0] == 0.5 and weights[5] == pytest.approx(0.75) and weights[10:] == [1.0] * 10


def _vae_warm(**objective) -> Setting:
    base = tiny().to_dict()
    base["latent"] = {"space": "box", "dim": 2, "low": -0.5, "high": 0.5}
    base["mixing"] = {"kind": "moebius"}
    base["model"] = {"kind": "vae", "hidden": [4], "vae": {"prior": "uniform", "gamma2": 1e3}}
    base["objective"] = {"kind": "elbo", **objective}
    return Setting.from_dict(base)


def test_kl_warm_up_follows_its_schedule_and_resumes_exactly(tmp_path, monkeypatch):
    from unmix.objectives.base import ELBOObjective

    warm = _vae_warm(kl_weight=0.5, kl_start=0.2, kl_warmup=0.5)  # 0.1 → 0.5 over 10 of 20
    seen = _spy_progress(monkeypatch, ELBOObjective, lambda o, s, t: o.elbo.kl_weight)
    full = train(warm, tmp_path / "full")
    assert seen[0] == pytest.approx(0.1) and seen[5] == pytest.approx(0.1 + 0.4 * 5 / 10)
    assert seen[10:] == [0.5] * 10  # after the warm-up: the β-ELBO itself
    plain = train(_vae_warm(kl_weight=0.5), tmp_path / "plain")
    assert full.summary["loss"] != plain.summary["loss"]  # the schedule changed the path
    resumed = _cut_at_20_and_resume(warm, tmp_path / "cut")
    assert resumed.summary["resumed_from_step"] == 10  # resumed at the end of the warm-up
    for key in ("loss", "r2", "mcc"):
        assert resumed.summary[key] == full.summary[key]


def test_kl_start_without_a_warm_up_is_refused_naming_the_field(tmp_path):
    with pytest.raises(ConfigError, match="kl_start.*kl_warmup"):
        train(_vae_warm(kl_start=0.5), tmp_path / "r")


@pytest.mark.parametrize(
    "objective, field",
    [
        ({"align_start": 0.0, "align_warmup": 0.5}, "align_start"),
        ({"align_warmup": 1.5}, "align_warmup"),
        ({"align_start": 0.5}, "set align_warmup too"),  # a start without a warm-up would be lost
        ({"tau_start": 1.0}, "tau_start and tau_warmup go together"),
        ({"tau_warmup": 0.5}, "tau_start and tau_warmup go together"),
        ({"tau_start": 0.0, "tau_warmup": 0.5}, "tau_start"),
        ({"tau_start": 1.0, "tau_warmup": 1.5}, "tau_warmup"),
    ],
)
def test_bad_warm_up_fields_are_refused_naming_the_field(objective, field):
    with pytest.raises(ConfigError, match=field):
        _warm(**objective)


def test_temperature_warm_up_is_applied_and_resumes_exactly(tmp_path, monkeypatch):
    from unmix.objectives.base import Contrastive

    warm = _warm(tau_start=2.0, tau_warmup=0.5)  # τ from 2 to 0.2 over the first 10 of 20 steps
    seen = _spy_progress(monkeypatch, Contrastive, lambda o, s, t: o.loss.tau)
    full = train(warm, tmp_path / "full")
    assert seen[0] == 2.0 and seen[5] == pytest.approx(2.0 * 0.1**0.5) and seen[10:] == [0.2] * 10
    assert full.summary["loss"] != train(_warm(), tmp_path / "plain").summary["loss"]
    resumed = _cut_at_20_and_resume(warm, tmp_path / "cut")
    assert resumed.summary["resumed_from_step"] == 10
    for key in ("loss", "r2", "mcc"):
        assert resumed.summary[key] == full.summary[key]


def test_the_loss_under_a_temperature_warm_up_is_the_loss_at_that_temperature():
    from unmix.objectives.infonce import LpInfoNCE, LpInfoNCESpec
    from unmix.registry import OBJECTIVES

    spec = {"kind": "lp_infonce", "p": 3.0, "tau": 0.01, "tau_start": 1.0, "tau_warmup": 0.4}
    obj = OBJECTIVES.build(LpInfoNCESpec(**spec))
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(12, 4, generator=g), torch.randn(12, 4, generator=g)
    for step, tau in [(0, 1.0), (20, 0.1), (40, 0.01), (99, 0.01)]:
        obj.set_progress(step, 100)
        assert obj.loss.tau == pytest.approx(tau)
        torch.testing.assert_close(obj.loss(a, b), LpInfoNCE(p=3.0, tau=tau)(a, b))


def test_the_warm_up_is_refused_for_features_of_free_scale():
    # lse − w·s_pos with w < 1 falls without bound as unbounded features grow apart
    base = tiny().to_dict()
    base["latent"] = {"space": "box", "dim": 3, "conditional": {"kind": "normal", "scale": 0.1}}
    base["model"] = {"hidden": [4, 4], "space": "unbounded"}
    base["objective"] = {"kind": "lp_infonce", "p": 2.0, "align_start": 0.5, "align_warmup": 0.5}
    for space in ("unbounded", "box", "box_sigmoid"):  # the box heads learn their magnitude
        base["model"]["space"] = space
        with pytest.raises(ConfigError, match="align_start < 1.*fixed radius"):
            Setting.from_dict(base)
    sphere = _warm(align_start=0.5, align_warmup=0.5).to_dict()
    sphere["model"]["learn_radius"] = True
    with pytest.raises(ConfigError, match="learn_radius"):
        Setting.from_dict(sphere)
    sphere["model"]["learn_radius"] = False
    Setting.from_dict(sphere)  # a sphere of fixed radius keeps the loss bounded
    for space in ("box", "box_sigmoid"):  # so does a box head of fixed magnitude
        base["model"].update(space=space, learn_magnitude=False)
        Setting.from_dict(base)


def test_fixed_scale_objectives_are_refused_for_features_of_free_scale_in_one_line():
    """align_uniform without its alignment term and the decoupled estimator fall without bound as
    free-scale features grow apart: refused (naming the fix) unless the model is a sphere of fixed
    radius or a box head of fixed magnitude; align_uniform with an alignment weight is accepted on
    any model space (the alignment term holds the scale)."""
    base = tiny().to_dict()
    base["latent"] = {"space": "box", "dim": 3, "conditional": {"kind": "normal", "scale": 0.1}}
    base["model"] = {"hidden": [4, 4], "space": "box_sigmoid"}
    objectives = [
        ({"kind": "align_uniform", "align_weight": 0.0}, "align_weight 0 needs features of fixed"),
        ({"kind": "lp_infonce", "p": 2.0, "estimator": "decoupled"}, "decoupled needs"),
    ]
    for objective, message in objectives:
        base["objective"] = objective
        for space, fix in (
            ("unbounded", "model.space: sphere"),
            ("box", "learn_magnitude: false"),
            ("box_sigmoid", "learn_magnitude: false"),
        ):
            base["model"].update(space=space, learn_magnitude=True)
            with pytest.raises(ConfigError, match=f"{message}.*{fix}"):
                Setting.from_dict(base)
        for space in ("box", "box_sigmoid"):
            base["model"].update(space=space, learn_magnitude=False)
            assert Setting.from_dict(base).objective.kind == objective["kind"]
    base["objective"] = {"kind": "align_uniform", "align_weight": 100.0}
    for space in ("unbounded", "box", "box_sigmoid"):
        base["model"].update(space=space, learn_magnitude=True)
        assert Setting.from_dict(base).objective.kind == "align_uniform"


def test_weight_decay_is_decoupled_and_zero_keeps_plain_adam():
    from unmix.settings import TrainSpec
    from unmix.train import make_optimizer

    lr, wd = 0.1, 0.5
    theta0 = torch.tensor([1.0, -2.0, 3.0])
    g = torch.tensor([0.3, 0.2, -0.1])
    for decay in (wd, 0.0):
        p = torch.nn.Parameter(theta0.clone())
        opt = make_optimizer([p], TrainSpec(lr=lr, weight_decay=decay))
        p.grad = g.clone()
        opt.step()
        # closed form of Adam's first step, m̂/(√v̂ + ε) = g/(|g| + ε), after the decoupled shrink
        want = theta0 * (1 - lr * decay) - lr * g / (g.abs() + 1e-8)
        torch.testing.assert_close(p.detach(), want)
    with pytest.raises(ValueError):  # pydantic: a negative decay is refused
        TrainSpec(weight_decay=-0.1)


def test_weight_decay_trains_recorded_and_resumes_exactly(tmp_path):
    full = train(tiny(weight_decay=0.05), tmp_path / "full")
    plain = train(tiny(), tmp_path / "plain")
    assert full.summary["loss"] != plain.summary["loss"]  # the decay acts
    resumed = _cut_at_20_and_resume(tiny(weight_decay=0.05), tmp_path / "cut")
    for a, b in zip(
        full.experiment.encoder.state_dict().values(),
        resumed.experiment.encoder.state_dict().values(),
        strict=True,
    ):
        assert torch.equal(a, b)
    import yaml

    saved = yaml.safe_load((tmp_path / "full" / "config.yaml").read_text())
    assert saved["train"]["weight_decay"] == 0.05


def test_fp32_tail_needs_bf16_and_is_refused_naming_the_field():
    with pytest.raises(ConfigError, match=r"train: fp32_tail 0.1 .*set train\.precision=bf16"):
        tiny(fp32_tail=0.1)
    with pytest.raises(ConfigError, match="fp32_tail"):
        tiny(precision="bf16", fp32_tail=1.5)


@pytest.mark.parametrize(
    "over, bf16_steps",
    [
        ({}, 0),
        ({"precision": "bf16"}, 20),
        ({"precision": "bf16", "fp32_tail": 0.25}, 15),
        ({"precision": "bf16", "fp32_tail": 1.0}, 0),
        ({"precision": "bf16", "fp32_tail": 0.01}, 20),  # 0.2 steps round to none
    ],
)
def test_bf16_steps_is_the_run_less_its_float32_tail(over, bf16_steps):
    assert tiny(**over).train.bf16_steps() == bf16_steps


@pytest.mark.filterwarnings("ignore:.*bf16")
def test_the_last_steps_run_in_float32_and_resume_exactly(tmp_path, monkeypatch):
    """train.fp32_tail=0.25 of 30 steps: autocast on for steps 0-21, off for 22-29; a run cut at
    step 20's evaluation and resumed from step 10 ends with the same numbers."""
    seen: list[bool] = []
    original = Experiment.loss

    def spy(self, gen, batch_size):
        seen.append(torch.is_autocast_enabled("cpu"))
        return original(self, gen, batch_size)

    monkeypatch.setattr(Experiment, "loss", spy)
    setting = tiny(steps=30, precision="bf16", fp32_tail=0.25, eval_every=10)
    full = train(setting, tmp_path / "full")
    assert seen == [True] * 22 + [False] * 8  # 30 - round(7.5) = 22
    assert setting.train.bf16_steps() == 22
    all_bf16 = train(tiny(steps=30, precision="bf16", eval_every=10), tmp_path / "bf16")
    assert full.summary["loss"] != all_bf16.summary["loss"]  # the tail changed the path
    resumed = _cut_at_20_and_resume(setting, tmp_path / "cut")
    assert resumed.summary["resumed_from_step"] == 10
    for key in ("loss", "r2", "mcc"):
        assert resumed.summary[key] == full.summary[key]


@pytest.mark.parametrize(
    "objective, field",
    [
        ({"cross_view_negatives": False}, "cross_view_negatives"),
        ({"include_self": True}, "include_self"),
        ({"negatives": "external", "n_negatives": 4, "same_view_negatives": True}, "external"),
    ],
)
def test_bad_candidate_sets_are_refused_naming_the_field(objective, field):
    with pytest.raises(ConfigError, match=field):
        _warm(**objective)


def test_the_reference_candidate_set_reaches_the_loss():
    """``cross_view_negatives: false, same_view_negatives: true, include_self: true`` is the
    reference code's candidate set (positive + every anchor, self included): the built loss is
    the class's with those flags, and it differs from the default's value on the same batch."""
    from unmix.objectives.infonce import LpInfoNCE
    from unmix.registry import OBJECTIVES

    ref = {"cross_view_negatives": False, "same_view_negatives": True, "include_self": True}
    built = OBJECTIVES.build(_warm(**ref).objective).loss
    assert (built.cross_view_negatives, built.same_view_negatives, built.include_self) == (
        False,
        True,
        True,
    )
    spec = {"kind": "lp_infonce", "p": 2.0, "tau": 0.5}
    lp = OBJECTIVES.build(
        Setting.from_dict({**tiny().to_dict(), "objective": {**spec, **ref}}).objective
    ).loss
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(9, 3, generator=g), torch.randn(9, 3, generator=g)
    want = LpInfoNCE(
        p=2.0, tau=0.5, cross_view_negatives=False, same_view_negatives=True, include_self=True
    )
    assert lp(a, b) == pytest.approx(want(a, b).item(), abs=1e-6)
    assert lp(a, b) != pytest.approx(LpInfoNCE(p=2.0, tau=0.5)(a, b).item(), abs=1e-4)


def test_the_divergence_message_says_where_the_gradient_is_not_finite():
    """The message names the first parameter with a non-finite gradient entry, or, when every
    entry is finite and only their squares overflow the norm, the largest entry and its place."""
    from unmix.train import _where_non_finite

    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.Linear(3, 1))
    assert _where_non_finite(net) == ""  # no gradients yet
    for p in net.parameters():
        p.grad = torch.zeros_like(p)
    net[1].weight.grad[0, 1] = 3e25  # finite, but its square overflows float32
    assert _where_non_finite(net) == " (finite entries, the largest |g| = 3e+25 in 1.weight)"
    net[0].bias.grad[2] = float("inf")
    net[1].bias.grad[0] = float("nan")
    assert _where_non_finite(net) == " (first in 0.bias, and 1 more)"


def test_clipping_scales_huge_finite_gradients_instead_of_zeroing_them():
    """Entries whose float32 squares overflow (here 1e25) have a finite norm in float64: with
    train.grad_clip they are scaled to the clip norm (torch's float32 clip_grad_norm_ would return
    inf and multiply them by 0); without a clip the float32 norm overflows and the step diverges;
    an infinite entry diverges either way."""
    from unmix.train import _grad_norm

    w = torch.nn.Parameter(torch.zeros(3))
    w.grad = torch.tensor([1e25, -2e25, 0.0])
    norm = _grad_norm([w], 10.0)
    assert norm.dtype == torch.float64 and float(norm) == pytest.approx(5**0.5 * 1e25, rel=1e-6)
    assert float(torch.linalg.vector_norm(w.grad.double())) == pytest.approx(10.0, rel=1e-5)
    torch.testing.assert_close(w.grad, torch.tensor([1.0, -2.0, 0.0]) * 10.0 / 5**0.5)
    w.grad = torch.tensor([3.0, 4.0, 0.0])  # below the clip: unchanged
    assert float(_grad_norm([w], 10.0)) == pytest.approx(5.0)
    assert w.grad.tolist() == [3.0, 4.0, 0.0]
    w.grad = torch.tensor([1e25, 0.0, 0.0])
    assert not torch.isfinite(_grad_norm([w], None))  # no clip: the float32 norm overflows
    w.grad = torch.tensor([float("inf"), 1.0, 0.0])
    assert not torch.isfinite(_grad_norm([w], 10.0))
    assert w.grad[1] == 1.0  # left as it was for the divergence message


def test_metrics_record_the_gradient_norm_before_clipping(tmp_path):
    """Each evaluation row carries the median and largest gradient norm of the steps since the
    previous one, as PyTorch's ``clip_grad_norm_`` computes it, before ``train.grad_clip``."""
    from unmix.experiment import Experiment

    setting = tiny(steps=1, eval_every=1, grad_clip=1e-4)
    train(setting, tmp_path / "run")
    row = pd.read_csv(tmp_path / "run" / runs.METRICS).iloc[-1]
    # independent reference: the first step's gradient from a fresh build of the same setting
    exp = Experiment.build(setting, "cpu")
    loss = exp.loss(exp.stream_generator("train/batches"), setting.train.batch_size)
    loss.backward()
    want = float(torch.nn.utils.clip_grad_norm_(exp.encoder.parameters(), float("inf")))
    assert row["grad_norm_median"] == pytest.approx(want, rel=1e-5)
    assert row["grad_norm_max"] == pytest.approx(want, rel=1e-5)
    assert want > 1e-3  # far above the clip: the recorded norm is the one before clipping

    df = pd.read_csv(train(tiny(), tmp_path / "two").run_dir / runs.METRICS)
    assert (df["grad_norm_max"] >= df["grad_norm_median"]).all()
    assert (df["grad_norm_median"] > 0).all()
    summary = json.loads((tmp_path / "two" / runs.SUMMARY).read_text())
    assert "grad_norm_max" not in summary  # a training diagnostic, not a result


def test_bench_times_a_queue_objective_as_one_call():
    from unmix.bench import bench_steps

    queue = tiny().replace(**{"objective.negatives": "queue", "objective.n_negatives": 50})
    r = bench_steps(queue, batch_size=16, steps=2, warmup=1)
    assert r.seconds_per_step > 0 and r.stages["forward"] == 0.0  # forward + loss in one call
