"""Exceptions with messages meant for people: they name the field and the fix."""


class UnmixError(Exception):
    """Base class of every error unmix raises on purpose."""


class ConfigError(UnmixError, ValueError):
    """A setting, argument or file is invalid; the message names the field and the fix."""


class TrainingError(UnmixError, RuntimeError):
    """Training cannot continue (e.g. the loss became NaN); the message says why and what to try."""


class CheckpointError(UnmixError, RuntimeError):
    """A checkpoint or run directory is missing, corrupt or belongs to a different setting."""
