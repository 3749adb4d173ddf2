"""The 37 configs of the official CapTrack suite (plus local ones): how each is scored and built offline.

One record per config, declared once. The lm-eval task of config ``gsm8k.subset`` is
``captrack_gsm8k_subset``; its capability membership lives in taxonomy/captrack.yaml. ``size`` and
``seed`` fix the deterministic sample a subset draws from the original files (``None``: every row
the builder keeps); ``reason`` says why a config cannot be built from the original public files.
A config with ``hub=False`` is captrack's own, not one of the hub dataset's 37: only `captrack data
build` makes it (``mmlu_pro.full``, every MMLU-Pro test item, for scoring imported generations).
"""

from __future__ import annotations

from dataclasses import dataclass

from captrack.errors import UnknownNameError

__all__ = ["CONFIGS", "OfficialConfig", "get_config", "task_name"]

_NO_PROMPT = "needs an LLM judge with a prompt for it, which captrack/judges has not got yet; logged as NaN until then"


@dataclass(frozen=True)
class OfficialConfig:
    """One config of the hub dataset ``tri-fair-lab/captrack``.

    Attributes:
        name: the config (``gsm8k.subset``).
        scorers: registered scorers run on each response (empty: lm-eval scores a multiple_choice task).
        judge_metrics: metrics that need a judge no prompt exists for; logged as None (NaN), see
            `unscored_reason`. Metrics a judge scores (captrack/judges/catalog.py) are not listed:
            `captrack judge` writes them beside the run.
        size: rows sampled from the source when building offline (None: all rows kept).
        seed: seed of that sample.
        reason: why it cannot be built from the original files ("" when it can).
        hub: whether the hub dataset ``tri-fair-lab/captrack`` has it (False: built offline only).
    """

    name: str
    scorers: tuple[str, ...]
    judge_metrics: tuple[str, ...] = ()
    size: int | None = None
    seed: int = 1234
    reason: str = ""
    hub: bool = True

    @property
    def task(self) -> str:
        """The lm-eval task name."""
        return task_name(self.name)

    @property
    def family(self) -> str:
        """The benchmark the config comes from (``gsm8k``)."""
        return self.name.split(".")[0]

    def unscored_reason(self, metric: str) -> str | None:
        """Why `metric` is logged as NaN for every item of this config (None: it is always scored)."""
        return _NO_PROMPT if metric in self.judge_metrics else None


def task_name(config: str) -> str:
    """``gsm8k.subset`` -> ``captrack_gsm8k_subset``."""
    return "captrack_" + config.replace(".", "_")


def _missing(what: str) -> str:
    return f"no public copy of {what} under 4 MiB could be had offline (see the data SOURCES.md); use `captrack data mirror`"


_ALL = (
    OfficialConfig("bfcl.subset", ("function_calls",), size=300),
    OfficialConfig("boolq.subset", ("boolq",), size=500),
    OfficialConfig("eli5.subset", ("length",), reason=_missing("ELI5")),
    OfficialConfig("followbench.subset", ("length",), size=300),
    OfficialConfig("gsm8k.subset", ("numeric_answer",), size=500),
    OfficialConfig("gsm8k.rephrased", ("numeric_answer",), size=500),
    OfficialConfig("gsm8k.schema", ("json_schema",), size=500),
    OfficialConfig("gsm8k.table_schema", ("json_schema",), size=500),
    OfficialConfig("harmbench.subset", ("refusal",), size=200),
    OfficialConfig("hellaswag.subset", (), size=500),
    OfficialConfig("hotpotqa.subset", ("hotpotqa",), size=500),
    OfficialConfig("hotpotqa.citation", ("citations",), size=300),
    OfficialConfig("humaneval.full", ("code_tests",)),
    OfficialConfig("ifeval.subset", ("ifeval",), size=300),
    OfficialConfig("livemathbench.full", ("math_answer",), reason=_missing("LiveMathBench")),
    OfficialConfig("longbenchv2.full", ("mc_letter",), reason=_missing("LongBench-v2")),
    OfficialConfig("math.subset", ("math_answer",)),
    OfficialConfig("mbpp.full", ("code_tests",)),
    OfficialConfig("mgsm.subset", ("numeric_answer",), size=275),
    OfficialConfig("mmlu_pro.full", ("mc_letter",), hub=False),
    OfficialConfig("mmlu_pro.subset", ("mc_letter",), size=500),
    OfficialConfig("mmlu_pro.rephrased", ("mc_letter",), size=500),
    OfficialConfig("mmlu_pro.schema", ("json_schema",), size=500),
    OfficialConfig("mmlu_pro.table_schema", ("json_schema",), size=500),
    OfficialConfig("mnms.full", ("function_calls",), reason=_missing("m&m's (MNMS)")),
    OfficialConfig("mtbench.turn1", ("style", "tone")),
    OfficialConfig("mtbench.turn2", ("length",)),
    OfficialConfig("oasst1.full", ("style", "tone")),
    OfficialConfig("popqa.subset", ("alias_answer",), reason=_missing("PopQA")),
    OfficialConfig("qasper.citation", ("citations",), reason=_missing("QASPER")),
    OfficialConfig("ragtruth.subset", ("length",), reason=_missing("RAGTruth")),
    OfficialConfig("ruler.4k", ("compliance",), reason=_missing("RULER (generated from its scripts and corpora)")),
    OfficialConfig("ruler.32k", ("needle",), reason=_missing("RULER (generated from its scripts and corpora)")),
    OfficialConfig("structflowbench.turn2", ("length",), reason=_missing("StructFlowBench")),
    OfficialConfig("supergpqa.subset", ("mc_letter",), reason=_missing("SuperGPQA")),
    OfficialConfig("truthfulqa.full", ()),
    OfficialConfig("winogrande.subset", (), size=500),
    OfficialConfig("xtreme.subset", ("alias_answer",), reason=_missing("XTREME")),
)

CONFIGS: dict[str, OfficialConfig] = {c.name: c for c in _ALL}


def get_config(name: str) -> OfficialConfig:
    """Look a config up by name (``gsm8k.subset``) or by task name (``captrack_gsm8k_subset``).

    Raises:
        UnknownNameError: with the closest config names.
    """
    if name in CONFIGS:
        return CONFIGS[name]
    for config in CONFIGS.values():
        if config.task == name:
            return config
    raise UnknownNameError("CapTrack config", name, CONFIGS)
