"""The official CapTrack dataset as lm-eval tasks: config declarations, hub/mirror loading, offline builders."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use below, so `captrack --help` does not load the heavy modules
    from captrack.official.configs import CONFIGS, OfficialConfig, get_config, task_name
    from captrack.official.mirror import DATA_DIR_ENV, HUB_DATASET, load_config

_EXPORTS = {
    'CONFIGS': 'captrack.official.configs',
    'OfficialConfig': 'captrack.official.configs',
    'get_config': 'captrack.official.configs',
    'task_name': 'captrack.official.configs',
    'DATA_DIR_ENV': 'captrack.official.mirror',
    'HUB_DATASET': 'captrack.official.mirror',
    'load_config': 'captrack.official.mirror',
}


def __getattr__(name: str) -> Any:
    """Import a public name's module on first access (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

__all__ = ["CONFIGS", "DATA_DIR_ENV", "HUB_DATASET", "OfficialConfig", "get_config", "load_config", "task_name"]
