"""Distributions on latent spaces: marginals p(z) and positive-pair conditionals p(z̃ | z)."""
