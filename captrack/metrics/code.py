"""C1 code generation (HumanEval, MBPP): pass@1 of the model's program against the unit tests.

The program and the tests are run by :mod:`captrack.metrics.sandbox` (bubblewrap namespaces, a
read-only file system, rlimits and a seccomp filter); never in the evaluating process. A pass is
reported by the sandbox's harness after the tests returned, never read from an exit status. A program
that fails, exits early, times out, runs out of memory or tries to reach the network, spawn processes
or touch files outside the sandbox scores 0; the reason and the sandbox that ran it (``bwrap`` or the
opt-in ``fallback``) are logged with the doc id. Where bubblewrap cannot run, scoring refuses
(:class:`captrack.metrics.sandbox.SandboxUnavailable`) unless the fallback was asked for.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from captrack.metrics import extract
from captrack.metrics.registry import scorer
from captrack.metrics.sandbox import TIMEOUT_S, SandboxResult, run_batch, run_program

__all__ = ["code_metrics", "extract_program", "run_tests", "run_tests_batch"]

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


def run_tests(doc: Mapping[str, Any], response: str, timeout: float = TIMEOUT_S) -> SandboxResult:
    """Run the response's program, then the doc's tests (``gold``) in its namespace, in the sandbox."""
    return run_program(extract_program(doc, response), str(doc["gold"]), timeout=timeout)


def run_tests_batch(docs: Sequence[Mapping[str, Any]], responses: Sequence[str]) -> list[SandboxResult]:
    """:func:`run_tests` for many items at once, in parallel sandboxes (at most one per CPU core)."""
    jobs = [(extract_program(doc, response), str(doc["gold"])) for doc, response in zip(docs, responses, strict=True)]
    return run_batch(jobs)


@scorer("code_tests", produces=("pass_at_1", "sandbox_isolated"))
def code_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """1 when the (single, greedy) program passes every test of the item; which sandbox ran it, as a number."""
    result = run_tests(doc, response)
    if not result.passed:
        level = logging.DEBUG if result.status == "failed" and result.sandbox == "bwrap" else logging.WARNING
        _LOG.log(level, "doc %s: program %s in the %s sandbox (%s); scored 0",
                 doc.get("id", "?"), result.status, result.sandbox, result.detail.splitlines()[0] if result.detail else "")
    elif result.sandbox != "bwrap":
        _LOG.warning("doc %s: passed in the %s sandbox (weaker than bubblewrap)", doc.get("id", "?"), result.sandbox)
    return {"pass_at_1": float(result.passed), "sandbox_isolated": float(result.sandbox == "bwrap")}
