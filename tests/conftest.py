"""Shared fixtures: synthetic lm-eval runs written in lm-eval 0.4.13's exact file format."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
