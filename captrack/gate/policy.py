"""A release gate's policy file (`captrack gate POLICY.yaml`, `--gate POLICY.yaml`), read strictly.

```yaml
version: 1
margin: 5            # default margin, in the verdicts' units (points; percent of the base mean for count metrics)
relative: 0.2        # optional default relative guard of task rules: margin = min(margin, 0.2 x base score)
strict: false        # true: a `warn` decision exits 4 (captrack.gate.WARN_EXIT)
rules:
  - {group: CAN, tier: critical}
  - {capability: W1, tier: supporting, margin: 3}
  - {task: my_lm_eval_task, metric: acc, tier: critical, required: true, relative: 0.25}
```

Each rule names exactly one of `capability`, `group` or `task` (a task in the taxonomy or outside it),
a `tier` (critical, supporting or advisory), and optionally its own `margin`, `relative` guard (task rules
only: a capability's base value is a mean over members on different scales), `metric` (task rules only;
default: each of the task's metrics that has a better side) and `required` (its target missing from the
comparison fails the gate). Unknown keys, tiers and values are errors naming the key; names of
capabilities, groups, tasks and metrics are checked against the comparison (captrack.gate.outcomes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt

from captrack.bounded import load_yaml, read_text
from captrack.errors import InputError
from captrack.schemas import Margin, parse_config

__all__ = ["TIERS", "Policy", "PolicyFile", "Rule", "RuleEntry", "load_policy"]

TIERS = ("critical", "supporting", "advisory")
Tier = Annotated[Literal["critical", "supporting", "advisory"], Field(description="critical, supporting or advisory")]
Relative = Annotated[StrictFloat | StrictInt, Field(gt=0, le=1, description=(
    "a share of the base score in (0, 1], e.g. 0.2: the margin becomes min(margin, share x base score)"))]
Name = Annotated[str, Field(min_length=1, max_length=300, description="a name (text), e.g. C1, CAN or a task name")]


class _Strict(BaseModel):
    """Unknown keys are errors; a number given as a name becomes text."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True, frozen=True)


class RuleEntry(_Strict):
    """One entry of `rules:`."""

    capability: Name | None = None
    group: Name | None = None
    task: Name | None = None
    metric: Name | None = Field(None, description="a metric of the task (text; task rules only), e.g. acc")
    tier: Tier
    margin: Margin | None = None
    relative: Relative | None = None
    required: StrictBool = Field(False, description="true or false: the target missing from the comparison fails the gate")


class PolicyFile(_Strict):
    """A gate policy file."""

    version: Literal[1] = Field(1, description="1")
    margin: Margin = 5.0
    relative: Relative | None = None
    strict: StrictBool = Field(False, description="true or false: a `warn` decision exits 4")
    rules: list[RuleEntry] = Field(min_length=1, description="a list of rules, e.g. [{group: CAN, tier: critical}]")


@dataclass(frozen=True)
class Rule:
    """One rule, resolved: its target, tier, margin (defaults applied), relative guard, metric and whether it is required."""

    index: int  # position in `rules:` (0-based)
    kind: str  # capability, group or task
    target: str
    tier: str
    margin: float
    relative: float | None
    metric: str | None
    required: bool

    @property
    def label(self) -> str:
        """``critical group CAN``, ``supporting task mmlu/acc``: the rule as one line (a JUnit test case's name)."""
        metric = f"/{self.metric}" if self.metric else ""
        return f"{self.tier} {self.kind} {self.target}{metric}"

    @property
    def gating(self) -> bool:
        """Whether the rule can fail the gate (advisory rules never do)."""
        return self.tier != "advisory"


@dataclass(frozen=True)
class Policy:
    """A policy file, validated: its rules in order, and whether a `warn` decision exits non-zero."""

    source: str
    rules: tuple[Rule, ...]
    strict: bool


def load_policy(path: str | Path) -> Policy:
    """Read and validate a policy file.

    Raises:
        InputError: the file is missing or unreadable, is not YAML, has an unknown key or a value out of range,
            or a rule names no target, several, or a key its target does not take; the message names the key.
    """
    path = Path(path)
    try:
        raw = load_yaml(read_text(path))
    except OSError as exc:
        raise InputError(f"{path}: cannot read the gate policy ({exc.strerror or exc}); give a policy YAML file") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: not a YAML gate policy ({str(exc).splitlines()[0]})") from None
    file = parse_config(PolicyFile, raw, path, "gate policy")
    rules = tuple(_rule(path, i, entry, file) for i, entry in enumerate(file.rules))
    seen: dict[tuple[str, str, str | None], int] = {}
    for rule in rules:
        key = (rule.kind, rule.target, rule.metric)
        if key in seen:
            raise InputError(f"{path}: rules[{rule.index}]: {rule.kind} {rule.target!r} already has a rule "
                             f"(rules[{seen[key]}]); give each target one rule")
        seen[key] = rule.index
    return Policy(source=str(path), rules=rules, strict=file.strict)


def _rule(path: Path, index: int, entry: RuleEntry, file: PolicyFile) -> Rule:
    where = f"{path}: rules[{index}]"
    targets = [(kind, value) for kind, value in (("capability", entry.capability), ("group", entry.group),
                                                 ("task", entry.task)) if value is not None]
    if len(targets) != 1:
        named = ", ".join(f"'{kind}'" for kind, _ in targets) or "none"
        raise InputError(f"{where}: a rule names exactly one of 'capability', 'group' or 'task' (found {named})")
    kind, target = targets[0]
    for key in ("metric", "relative"):
        if kind != "task" and getattr(entry, key) is not None:
            why = ("a capability's or group's base value is a mean over members on different scales"
                   if key == "relative" else "a capability or group is gated on its own aggregated change")
            raise InputError(f"{where}: key '{key}' applies to task rules only ({kind} {target!r}: {why})")
    relative = entry.relative if entry.relative is not None else (file.relative if kind == "task" else None)
    return Rule(index=index, kind=kind, target=str(target), tier=entry.tier,
                margin=float(entry.margin if entry.margin is not None else file.margin),
                relative=float(relative) if relative is not None else None,
                metric=entry.metric, required=entry.required)
