"""`run_theory`: run the grid, check the claims, write tables, figures and claims.md/claims.json."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from captrack.files import write_atomic
from captrack.theory.claims import Claim, evaluate_claims, fit_drift_slope
from captrack.theory.experiments import Grid, run_grid

__all__ = ["claims_markdown", "run_theory"]


def _cell(value: Any) -> str:
    """A compact text rendering of one evidence value for a markdown table."""
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_cell(v)}" for k, v in value.items())
    return f"{value:g}" if isinstance(value, float) else str(value)


def claims_markdown(claims: list[Claim], title: str = "Theory lab: claims") -> str:
    """Render the claims as a markdown table followed by the full evidence of each."""
    lines = [f"# {title}", "", "| claim | supported | numbers | criterion |", "|---|---|---|---|"]
    for c in claims:
        cells = [f"`{c.id}`", "yes" if c.supported else "**no**", c.headline, c.criterion]
        lines.append("| " + " | ".join(cell.replace("|", r"\|") for cell in cells) + " |")
    for c in claims:
        lines += ["", f"## `{c.id}` — {'supported' if c.supported else 'NOT supported'}", "", c.statement, "",
                  f"Criterion: {c.criterion}.", ""]
        lines += [f"- {key}: {_cell(value)}" for key, value in c.evidence.items() if value is not None]
    return "\n".join(lines) + "\n"


def _settings(grid: Grid) -> dict[str, Any]:
    """The grid as JSON-ready data."""
    return json.loads(json.dumps(asdict(grid), default=str))


def run_theory(out: Path, quick: bool = False, progress: bool = False) -> dict[str, Any]:
    """Run the two-mode forgetting lab and write its outputs into `out`.

    Writes runs.csv (one row per training run), trajectories.csv, replay_estimator.csv,
    claims.json, claims.md and three figures (PNG and SVG).

    Args:
        out: output folder (created if missing).
        quick: a smaller grid (two dimensions, one seed, shorter training) for smoke tests.
        progress: show a progress bar.

    Returns:
        {"claims": [...], "all_supported": bool, "drift_fit": {...}, "files": [...]}.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    grid = Grid.quick() if quick else Grid()
    results = run_grid(grid, progress=progress)
    claims = evaluate_claims(results)
    fit = fit_drift_slope(results.runs)
    files: list[Path] = []
    for name, frame in (("runs", results.runs), ("trajectories", results.trajectories),
                        ("replay_estimator", results.estimator)):
        write_atomic(out / f"{name}.csv", frame.to_csv(index=False))
        files.append(out / f"{name}.csv")
    summary: dict[str, Any] = {
        "claims": [asdict(c) for c in claims], "all_supported": all(c.supported for c in claims),
        "drift_fit": asdict(fit), "grid": _settings(grid), "quick": quick,
    }
    write_atomic(out / "claims.json", json.dumps(summary, indent=2, ensure_ascii=False, default=str) + "\n")
    write_atomic(out / "claims.md", claims_markdown(claims))
    files += [out / "claims.json", out / "claims.md"]
    from captrack.theory.plots import plot_all

    files += plot_all(results.runs, results.trajectories, fit, out)
    summary["files"] = [str(p) for p in files]
    return summary

