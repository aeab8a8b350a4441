"""Wang & Isola 2020, *Alignment and Uniformity on the Hypersphere* (notes, paper 003): the
``wang-isola`` checks of Theorem 1's limit and rate, the potential identity and the entropy
reading (:mod:`.checks`). Its losses and metrics are stages of their own
(:mod:`unmix.objectives.align_uniform`, :mod:`unmix.metrics.align_uniform`)."""

from unmix.papers.base import Paper, register_paper
from unmix.papers.wang_isola import checks

PAPER = register_paper(
    Paper(
        key="wang-isola",
        title="Wang & Isola 2020, Understanding Contrastive Representation Learning through "
        "Alignment and Uniformity on the Hypersphere",
        checks={"wang-isola": list(checks.CHECKS)},
    )
)
