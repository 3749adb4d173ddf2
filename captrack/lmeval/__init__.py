"""The lm-eval integration: task registration (`captrack-eval`, TaskManager) and evaluation entry points.

``integration`` makes lm-eval see captrack's tasks and backends; ``evaluate`` runs lm-eval on one
checkpoint with per-sample logs (the ``captrack run`` evaluate stage and the Python API).
"""

from captrack.lmeval.integration import main, task_manager

__all__ = ["main", "task_manager"]
