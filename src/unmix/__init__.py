"""unmix: identifiable representation learning — generate, train, score.

The package follows the data flow of an experiment:

latent space & distributions (:mod:`unmix.spaces`, :mod:`unmix.distributions`)
→ mixing (:mod:`unmix.mixing`) → model (:mod:`unmix.models`) → objective
(:mod:`unmix.objectives`) → training (:mod:`unmix.train`) → metrics (:mod:`unmix.metrics`)
→ runs & results (:mod:`unmix.runs`) → reports (:mod:`unmix.reproduce`, :mod:`unmix.verify`).
"""

__version__ = "0.1.0"
