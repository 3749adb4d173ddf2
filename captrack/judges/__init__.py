"""LLM judges: judged metrics scored after generation from lm-eval's per-sample logs.

``make_judge("openai:MODEL")`` (any OpenAI-compatible server) or ``make_judge("hf:PATH")`` (a local
causal LM in-process); ``judge_runs`` writes verdict files that ingest and compare read;
``calibrate`` measures agreement with the team's labelled examples.
"""

from typing import TYPE_CHECKING

from captrack.lazy import lazy_getattr

if TYPE_CHECKING:  # imported on first use below, so `captrack --help` does not load the heavy modules
    from captrack.judges.base import (
        Judge,
        JudgeError,
        JudgeOptions,
        RetryableError,
        judge_backend,
        make_judge,
    )
    from captrack.judges.cache import JudgeCache
    from captrack.judges.calibration import calibrate
    from captrack.judges.catalog import JudgedMetric, all_judged, declare_judged, judged_for_task
    from captrack.judges.judging import judge_runs
    from captrack.judges.reply_parsing import Fraction, Labels, Scale, Verdict
    from captrack.judges.retry import Budget

_EXPORTS = {
    'Judge': 'captrack.judges.base',
    'JudgeError': 'captrack.judges.base',
    'JudgeOptions': 'captrack.judges.base',
    'RetryableError': 'captrack.judges.base',
    'judge_backend': 'captrack.judges.base',
    'make_judge': 'captrack.judges.base',
    'JudgeCache': 'captrack.judges.cache',
    'calibrate': 'captrack.judges.calibration',
    'JudgedMetric': 'captrack.judges.catalog',
    'all_judged': 'captrack.judges.catalog',
    'declare_judged': 'captrack.judges.catalog',
    'judged_for_task': 'captrack.judges.catalog',
    'judge_runs': 'captrack.judges.judging',
    'Budget': 'captrack.judges.retry',
    'Fraction': 'captrack.judges.reply_parsing',
    'Labels': 'captrack.judges.reply_parsing',
    'Scale': 'captrack.judges.reply_parsing',
    'Verdict': 'captrack.judges.reply_parsing',
}


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())

__all__ = [
    "Budget",
    "Fraction",
    "Judge",
    "JudgeCache",
    "JudgeError",
    "JudgeOptions",
    "JudgedMetric",
    "Labels",
    "RetryableError",
    "Scale",
    "Verdict",
    "all_judged",
    "calibrate",
    "declare_judged",
    "judge_backend",
    "judge_runs",
    "judged_for_task",
    "make_judge",
]
