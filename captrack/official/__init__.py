"""The official CapTrack dataset as lm-eval tasks: config declarations, hub/mirror loading, offline builders."""

from captrack.official.configs import CONFIGS, OfficialConfig, get_config, task_name
from captrack.official.mirror import DATA_DIR_ENV, HUB_DATASET, load_config

__all__ = ["CONFIGS", "DATA_DIR_ENV", "HUB_DATASET", "OfficialConfig", "get_config", "load_config", "task_name"]
