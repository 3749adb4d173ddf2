"""C1 code generation (HumanEval, MBPP): pass@1 of the model's program against the unit tests.

The program is run by :mod:`captrack.metrics.sandbox`, in a separate locked-down process; it is
never executed in the evaluating process. A program that times out, runs out of memory or tries to
reach the network, spawn processes or touch files outside its folder scores 0, and the reason is
logged (warning) with the doc id.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from captrack.metrics import extract
from captrack.metrics.registry import scorer
from captrack.metrics.sandbox import SandboxResult, run_program

__all__ = ["code_metrics", "extract_program", "run_tests"]

_LOG = logging.getLogger(__name__)
_FENCE = re.compile(r"```[ \t]*(?:python|py|Python)?[ \t]*\n(.*?)(?:```|$)", re.DOTALL)


def extract_program(doc: Mapping[str, Any], response: str) -> str:
    """The code of a response: its first fenced block (else the whole reply), completed with the prompt.

    When the task has a function to complete (HumanEval's ``entry_point``) and the code does not
    define it, the code is taken as the function's body and appended to the prompt's signature.
    """
    fenced = _FENCE.search(response)
    code = fenced.group(1) if fenced else response
    entry = extract.meta_field(doc, "entry_point")
    if entry and not re.search(rf"^\s*def\s+{re.escape(str(entry))}\s*\(", code, re.MULTILINE):
        code = str(extract.meta_field(doc, "code_prompt", "")) + code
    return code


def run_tests(doc: Mapping[str, Any], response: str) -> SandboxResult:
    """Run the response's program followed by the doc's tests (``gold``) in the sandbox."""
    program = f"{extract_program(doc, response)}\n\n{doc['gold']}"
    return run_program(program)


@scorer("code_tests", produces=("pass_at_1",))
def code_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """1 when the (single, greedy) program passes every test of the item."""
    result = run_tests(doc, response)
    if result.status in ("blocked", "timeout", "error"):
        _LOG.warning("doc %s: program %s (%s); scored 0", doc.get("id", "?"), result.status, result.detail)
    return {"pass_at_1": float(result.passed)}
