"""The negatives queue (``objective.negatives: queue``) against a loop reference, and its state."""

import math

import pytest
import torch

from unmix.errors import ConfigError
from unmix.objectives import InfoNCE, LpInfoNCE
from unmix.objectives.base import Batch, Contrastive
from unmix.registry import OBJECTIVES


def _loop(sim, h, hp, extra):
    """−log softmax of the positive over: the positive, the other positives (in-batch), and every
    row of ``extra`` — one anchor at a time, in Python floats."""
    total = 0.0
    for i in range(len(h)):
        pos = sim(h[i], hp[i])
        cands = [pos] + [sim(h[i], hp[j]) for j in range(len(h)) if j != i]
        cands += [sim(h[i], v) for v in extra]
        m = max(cands)
        total += m + math.log(sum(math.exp(c - m) for c in cands)) - pos
    return total / len(h)


def _dot(a, b):
    return float((a * b).sum())


def _sql2(a, b):
    return -float(((a - b) ** 2).sum())


def _encoder(seed=0):
    torch.manual_seed(seed)
    return torch.nn.Linear(3, 2).double()


def _batches(steps, b, seed=1):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        x = torch.randn(b, 3, generator=g, dtype=torch.float64)
        out.append(Batch(x=x, x_pos=x + 0.1 * torch.randn(b, 3, generator=g, dtype=torch.float64)))
    return out


@pytest.mark.parametrize(
    "make,sim",
    [
        (lambda: InfoNCE(negatives="shared"), _dot),
        (lambda: LpInfoNCE(p=2.0, negatives="shared"), _sql2),
    ],
)
@pytest.mark.parametrize("fused", [True, False])
def test_each_steps_candidates_are_the_batch_and_the_last_k_earlier_images(make, sim, fused):
    # K = 10 and 2B = 8 images a step: the queue wraps around on the second step
    loss_fn = make()
    loss_fn.fused = fused
    obj, f, k = Contrastive(loss_fn, queue=10), _encoder(), 10
    seen: list[torch.Tensor] = []  # every earlier image's features, oldest first
    for batch in _batches(5, 4):
        loss = obj(f, batch)
        loss.backward()
        with torch.no_grad():
            h, hp = f(batch.x), f(batch.x_pos)
        # the objective takes the loss in float32 (features cast, as under bf16 autocast)
        assert loss.item() == pytest.approx(_loop(sim, h, hp, seen[-k:]), rel=1e-6)
        seen += list(h) + list(hp)
        assert obj.queued().shape == (min(k, len(seen)), 2)


def test_the_first_step_is_the_in_batch_loss_and_later_steps_differ():
    f, (b0, b1) = _encoder(), _batches(2, 6)
    obj = Contrastive(InfoNCE(negatives="shared"), queue=32)
    assert obj.queued() is None
    assert torch.equal(obj(f, b0), Contrastive(InfoNCE())(f, b0))
    assert not torch.equal(obj(f, b1), Contrastive(InfoNCE())(f, b1))  # 12 queued negatives
    assert obj.queued().shape == (24, 2)


def test_the_queue_is_detached_and_only_training_steps_fill_it():
    f, (b0, b1) = _encoder(), _batches(2, 4)
    obj = Contrastive(InfoNCE(negatives="shared"), queue=8)
    obj(f, b0)
    assert not obj.queued().requires_grad
    before = obj.queued().clone()
    with torch.no_grad():
        obj(f, b1)
    obj.eval()
    obj(f, b1)
    assert torch.equal(obj.queued(), before)
    # the gradient reaches the encoder through this step's features only
    obj.train()
    f.zero_grad()
    obj(f, b1).backward()
    ref_f = _encoder()
    ref_loss = InfoNCE(negatives="shared")
    h, hp = ref_f(b1.x).float(), ref_f(b1.x_pos).float()
    ref_loss(h, hp, before).backward()
    for p, q in zip(f.parameters(), ref_f.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-6, atol=1e-7)


def test_the_queue_travels_in_the_state_dict():
    f, batches = _encoder(), _batches(3, 4)
    a = Contrastive(InfoNCE(negatives="shared"), queue=6)
    for batch in batches[:2]:
        a(f, batch)
    b = Contrastive(InfoNCE(negatives="shared"), queue=6)
    b.load_state_dict(a.state_dict())
    assert torch.equal(a(f, batches[2]), b(f, batches[2]))
    assert torch.equal(a.queued(), b.queued())
    with pytest.raises(
        ConfigError, match="saved negatives queue has 6 rows, this objective's has 5"
    ):
        Contrastive(InfoNCE(negatives="shared"), queue=5).load_state_dict(a.state_dict())
    empty = Contrastive(InfoNCE(negatives="shared"), queue=6)
    empty.load_state_dict(Contrastive(InfoNCE(negatives="shared"), queue=6).state_dict())
    assert empty.queued() is None


def test_a_queue_needs_shared_negatives_and_no_drawn_ones():
    with pytest.raises(ConfigError, match="negatives='shared'"):
        Contrastive(InfoNCE(), queue=4)
    with pytest.raises(ConfigError, match="negatives='shared'"):
        Contrastive(InfoNCE(negatives="shared"), 3, queue=4)


@pytest.mark.parametrize("kind", [{"kind": "infonce"}, {"kind": "lp_infonce", "p": 1.0}])
def test_the_registered_kinds_build_a_queue_and_draw_no_negatives(kind):
    spec = {**kind, "negatives": "queue", "n_negatives": 64, "symmetric": True}
    obj = OBJECTIVES.build(OBJECTIVES.validate(spec))
    assert obj.queue_size == 64 and obj.n_negatives == 0 and obj.loss.negatives == "shared"
    assert obj.loss.symmetric


@pytest.mark.parametrize("shared", [True, False])
def test_detached_negatives_give_the_same_loss_and_the_gradient_through_the_pairs_only(shared):
    f, (batch,) = _encoder(), _batches(1, 5)
    g = torch.Generator().manual_seed(3)
    m = 7
    shape = (m, 3) if shared else (5, m, 3)
    batch.x_neg = torch.randn(*shape, generator=g, dtype=torch.float64)
    mode = "shared" if shared else "external"
    plain = Contrastive(InfoNCE(negatives=mode), m)
    detached = Contrastive(InfoNCE(negatives=mode), m, detach_negatives=True)
    loss = detached(f, batch)
    assert loss.item() == pytest.approx(plain(f, batch).item(), rel=1e-6)
    loss.backward()
    # reference: the negatives' features as constants
    ref_f = _encoder()
    h, hp = ref_f(batch.x).float(), ref_f(batch.x_pos).float()
    with torch.no_grad():
        neg = ref_f(batch.x_neg).float()
    InfoNCE(negatives=mode)(h, hp, neg).backward()
    for p, q in zip(f.parameters(), ref_f.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-6, atol=1e-7)
    with pytest.raises(ConfigError, match="detach_negatives applies to drawn negatives"):
        Contrastive(InfoNCE(), detach_negatives=True)


def test_detach_negatives_is_refused_without_drawn_negatives():
    with pytest.raises(ConfigError, match="detach_negatives applies to drawn negatives"):
        OBJECTIVES.validate({"kind": "infonce", "detach_negatives": True})
    obj = OBJECTIVES.build(
        OBJECTIVES.validate(
            {"kind": "infonce", "negatives": "shared", "n_negatives": 4, "detach_negatives": True}
        )
    )
    assert obj.detach_negatives and obj.n_negatives == 4


def test_queue_warmup_keeps_the_queue_out_of_the_loss_until_its_fraction_of_the_run():
    f, batches = _encoder(), _batches(4, 4)
    obj = Contrastive(InfoNCE(negatives="shared"), queue=16, queue_warmup=0.5)
    plain = Contrastive(InfoNCE())
    for step, batch in enumerate(batches):  # a 4-step run: the queue joins at step 2
        obj.set_progress(step, 4)
        loss = obj(f, batch)
        if step < 2:
            assert torch.equal(loss, plain(f, batch))
        else:
            assert not torch.equal(loss, plain(f, batch))
        assert obj.queued().shape == (min(16, 8 * (step + 1)), 2)  # filled all along
    with pytest.raises(ConfigError, match="queue_warmup"):
        Contrastive(InfoNCE(negatives="shared"), queue=0, queue_warmup=0.5)
    with pytest.raises(ConfigError, match="queue_warmup is the fraction"):
        OBJECTIVES.validate({"kind": "infonce", "queue_warmup": 0.2})
    spec = {"kind": "infonce", "negatives": "queue", "n_negatives": 8, "queue_warmup": 0.2}
    assert OBJECTIVES.build(OBJECTIVES.validate(spec)).queue_warmup == 0.2
