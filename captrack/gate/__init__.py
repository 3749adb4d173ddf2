"""Release gates of a comparison: `--fail-on` (captrack.gate.fail_on) and a policy file (`captrack gate POLICY.yaml`,
`--gate POLICY.yaml`: captrack.gate.policy reads it, captrack.gate.outcomes decides, captrack.gate.report_files writes
Markdown, JSON and JUnit XML, captrack.gate.cli wires the command line)."""

from __future__ import annotations

from captrack.gate.fail_on import GATE_EXIT, WARN_EXIT, gate, gate_method

__all__ = ["GATE_EXIT", "WARN_EXIT", "gate", "gate_method"]

