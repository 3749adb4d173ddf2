"""MATH answer equivalence: the last ``\\boxed{}`` answer, normalised, then compared symbolically.

Normalisation follows the MATH paper's ``strip_string`` (units, ``\\left``/``\\right``, ``dfrac``,
``0.5`` vs ``.5``, ``x =`` prefixes, ``\\frac12``); answers that still differ are parsed into sympy
expressions and compared by simplifying their difference, under a time limit (a pathological
expression scores by string comparison alone instead of hanging the evaluation).
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from captrack.metrics import extract
from captrack.metrics.registry import scorer

__all__ = ["equivalent", "math_metrics", "normalize_answer"]

T = TypeVar("T")
SYMPY_SECONDS = 2.0
_UNITS = re.compile(r"\\(?:text|mbox|mathrm)\{\s*[a-zA-Z ]*\}\s*$")
_TEXT = re.compile(r"\\(?:text|textbf|mbox|mathrm)\{([^{}]*)\}")


def _fix_fracs(value: str) -> str:
    """``\\frac12`` -> ``\\frac{1}{2}``, ``\\frac1b`` -> ``\\frac{1}{b}``."""
    parts = value.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if part.startswith("{") or len(part) < 2:
            out += part
            continue
        a, b, rest = part[0], part[1], part[2:]
        out += f"{{{a}}}{{{b}}}{rest}" if b != "{" else f"{{{a}}}{b}{rest}"
    return out


def normalize_answer(value: str) -> str:
    """A MATH answer in canonical string form (MATH's ``strip_string``, slightly extended)."""
    value = value.strip().replace("\n", "").rstrip(".").replace("\\!", "")
    value = value.replace("\\\\", "\\").replace("tfrac", "frac").replace("dfrac", "frac")
    value = value.replace("\\left", "").replace("\\right", "").replace("^{\\circ}", "").replace("^\\circ", "")
    value = value.replace("\\$", "").replace("$", "").replace("\\%", "").replace("%", "")
    value = _UNITS.sub("", value)
    value = _TEXT.sub(r"\1", value)
    value = value.replace(" .", " 0.").replace("{.", "{0.")
    if value.startswith("."):
        value = "0" + value
    if re.fullmatch(r"[a-zA-Z]\s*=.*", value) and value.count("=") == 1:
        value = value.split("=", 1)[1]
    value = re.sub(r"\\sqrt(\w)", r"\\sqrt{\1}", value)
    value = value.replace(" ", "")
    value = _fix_fracs(value)
    if value == "0.5":
        value = "\\frac{1}{2}"
    if re.fullmatch(r"\d+/\d+", value):
        a, b = value.split("/")
        value = f"\\frac{{{a}}}{{{b}}}"
    return re.sub(r"(\d),(\d{3})\b", r"\1\2", value)


def _to_sympy_text(latex: str) -> str:
    expr = latex
    for _ in range(5):
        expr = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"((\1)/(\2))", expr)
        expr = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", expr)
    expr = expr.replace("\\pi", "pi").replace("\\cdot", "*").replace("\\times", "*").replace("^", "**")
    expr = expr.replace("{", "(").replace("}", ")").replace("\\", "")
    return expr


def _with_timeout(function: Callable[[], T], seconds: float) -> T | None:
    """Run `function`, giving up (None) after `seconds` when on the main thread (SIGALRM)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        return None  # no safe way to interrupt sympy here: fall back to string comparison

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return function()
    except TimeoutError:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _sympy_equal(a: str, b: str) -> bool:
    import sympy
    from sympy.parsing.sympy_parser import (
        implicit_multiplication_application,
        parse_expr,
        standard_transformations,
    )

    transformations = (*standard_transformations, implicit_multiplication_application)

    def check() -> bool:
        left = parse_expr(_to_sympy_text(a), transformations=transformations, evaluate=True)
        right = parse_expr(_to_sympy_text(b), transformations=transformations, evaluate=True)
        return bool(sympy.simplify(left - right) == 0)

    try:
        return bool(_with_timeout(check, SYMPY_SECONDS))
    except Exception:  # sympy raises many types on text that is not an expression
        return False


def _split_top(value: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in value:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [*parts, current]


def equivalent(answer: str, gold: str) -> bool:
    """Whether two MATH answers are the same (string after normalisation, else sympy, element-wise for tuples)."""
    a, b = normalize_answer(answer), normalize_answer(gold)
    if a == b:
        return True
    if not a or not b or len(a) > 200:
        return False
    if a[0] + a[-1] == b[0] + b[-1] and a[0] in "([" and "," in b:
        left, right = _split_top(a[1:-1]), _split_top(b[1:-1])
        return len(left) == len(right) and all(equivalent(x, y) for x, y in zip(left, right, strict=True))
    return _sympy_equal(a, b)


@scorer("math_answer", produces=("exact_match",))
def math_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """1 when the last boxed answer (else the first "answer is" text) is equivalent to the gold answer."""
    found = extract.boxed(response) or extract.first_marked(response)
    if found is None:
        return {"exact_match": 0.0}
    return {"exact_match": float(equivalent(found.strip().strip("$"), str(doc["gold"])))}
