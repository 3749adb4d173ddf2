"""The official CapTrack dataset as lm-eval tasks: config declarations, hub/mirror loading, offline builders."""

from typing import TYPE_CHECKING

from captrack.lazy import lazy_getattr

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


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())

__all__ = ["CONFIGS", "DATA_DIR_ENV", "HUB_DATASET", "OfficialConfig", "get_config", "load_config", "task_name"]
