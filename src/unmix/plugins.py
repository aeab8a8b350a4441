"""Loading a user's own module of registered kinds (``--plugin`` on the CLI, ``UNMIX_PLUGINS``).

A plugin is an ordinary Python module that calls :func:`unmix.register_mixing`,
:func:`unmix.register_objective`, :func:`unmix.register_metric` (…) at import. It is imported
only when the user names it — on the command line (``unmix train my.yaml --plugin my_kinds.py``)
or in the environment (``UNMIX_PLUGINS=my_kinds.py:other_module``) — never because a setting file
or a checkpoint mentions it: a YAML file or a run directory from elsewhere cannot run code.
Run directories record the plugins of their run in ``manifest.json``.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from unmix.errors import ConfigError

ENV = "UNMIX_PLUGINS"
LOADED: list[str] = []
"""The plugins imported in this process, in order (recorded in each run's manifest)."""


def load_plugins(names: list[str] | tuple[str, ...] | None = None) -> list[str]:
    """Import each plugin of ``names`` and of ``$UNMIX_PLUGINS`` (colon-separated): a ``.py``
    file path or an importable module name. Returns the plugins loaded so far."""
    wanted = [n for n in (names or []) if n]
    wanted += [n for n in os.environ.get(ENV, "").split(os.pathsep) if n.strip()]
    for name in wanted:
        key = str(Path(name).resolve()) if name.endswith(".py") else name
        if key in LOADED:
            continue
        _import(name)
        LOADED.append(key)
    return list(LOADED)


def _import(name: str) -> None:
    import unmix.settings  # noqa: F401  (the built-in kinds register before the user's)

    if name.endswith(".py"):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ConfigError(f"--plugin {name}: no such file (give a .py file or a module name)")
        mod_name = f"unmix_plugin_{path.stem}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise ConfigError(f"--plugin {name}: cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = module
        try:
            spec.loader.exec_module(module)
        except ConfigError:
            raise
        except Exception as err:
            del sys.modules[mod_name]
            raise ConfigError(
                f"--plugin {name} failed on import: {type(err).__name__}: {err}"
            ) from None
        return
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as err:
        raise ConfigError(f"--plugin {name}: no module named '{err.name}'") from None
