"""LLM judges: judged metrics scored after generation from lm-eval's per-sample logs.

``make_judge("openai:MODEL")`` (any OpenAI-compatible server) or ``make_judge("hf:PATH")`` (a local
causal LM in-process); ``judge_runs`` writes verdict files that ingest and compare read;
``calibrate`` measures agreement with the team's labelled examples.
"""

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
from captrack.judges.retry import Budget
from captrack.judges.verdicts import Fraction, Labels, Scale, Verdict

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
