"""Check: the mmlu-pro-instruct board's Llama-3.1-8B → Instruct counts equal an independent computation.

    python tests/benchmarks/check_mmlu_pro_board.py [--board leaderboards/mmlu-pro-instruct]

Reads the two MMLU-Pro outputs zips from $CAPTRACK_SHARED/data/mmlu_pro_outputs, builds the
mmlu_pro.full rows in memory from $CAPTRACK_SHARED/data/mmlu_pro/test.jsonl, scores each
`generated_text` with captrack's scorer directly (no lm-eval, no import, no store), counts
n11/n10/n01/n00 over the questions both files answer, and prints them beside the board's
transitions.csv row. Exits 1 when they differ.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared_paths import shared_dir

from captrack.metrics import score
from captrack.official.configs import CONFIGS
from captrack.official.mirror import normalise_row
from captrack.official.sources import get_builders
from captrack.official.tasks import scoring_doc

BASE, VARIANT = "Meta-Llama-3_1-8B", "Meta-Llama-3_1-8B-Instruct"
BOARD_VARIANT, TASK = "Meta-Llama-3.1-8B-Instruct", "captrack_mmlu_pro_full"
ROOT = Path(__file__).resolve().parents[2]


def _verdicts(path: Path, docs: dict[str, dict[str, Any]]) -> dict[str, bool]:
    """Question id -> whether captrack's scorer accepts the file's generated_text."""
    with zipfile.ZipFile(path) as archive:
        items = json.loads(archive.read(next(m for m in archive.namelist() if m.endswith(".json"))))
    return {f"mmlu_pro-{int(i['question_id'])}": bool(score("mc_letter", docs[f"mmlu_pro-{int(i['question_id'])}"],
                                                             i["generated_text"])["acc"] == 1.0) for i in items}


def independent(data: Path) -> dict[str, float]:
    """Counts, accuracies, F and BT computed from the two files alone."""
    config = CONFIGS["mmlu_pro.full"]
    rows = [normalise_row(r, config.name) for r in get_builders()[config.name](data, config)]
    docs = {r["id"]: scoring_doc(r) for r in rows}
    folder = data / "mmlu_pro_outputs"
    before = _verdicts(folder / f"model_outputs_{BASE}_5shots.zip", docs)
    after = _verdicts(folder / f"model_outputs_{VARIANT}_5shots.zip", docs)
    common = sorted(set(before) & set(after))
    n11 = sum(before[q] and after[q] for q in common)
    n10 = sum(before[q] and not after[q] for q in common)
    n01 = sum(not before[q] and after[q] for q in common)
    n = len(common)
    return {"n": n, "n_11": n11, "n_10": n10, "n_01": n01, "n_00": n - n11 - n10 - n01,
            "acc_before": (n11 + n10) / n, "acc_after": (n11 + n01) / n, "forgetting": n10 / n, "backward_transfer": n01 / n}


def board_row(board: Path) -> dict[str, float]:
    """The board's transitions.csv row for Llama-3.1-8B-Instruct on captrack_mmlu_pro_full."""
    with (board / "transitions.csv").open(encoding="utf-8") as handle:
        row = next(r for r in csv.DictReader(handle) if r["variant"] == BOARD_VARIANT and r["task"] == TASK)
    counts = {k: int(row[k]) for k in ("n", "n_11", "n_10", "n_01", "n_00")}
    return {**counts, "acc_before": (counts["n_11"] + counts["n_10"]) / counts["n"],
            "acc_after": (counts["n_11"] + counts["n_01"]) / counts["n"],
            "forgetting": float(row["forgetting"]), "backward_transfer": float(row["backward_transfer"])}


def main() -> int:
    """Print both computations side by side; 1 when any figure differs."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", type=Path, default=ROOT / "leaderboards" / "mmlu-pro-instruct")
    args = parser.parse_args()
    data = shared_dir() / "data"
    mine, theirs = independent(data), board_row(args.board)
    print(f"{'figure':18s} {'from the two files':>20s} {'board transitions.csv':>22s}")
    differ = []
    for key in mine:
        same = abs(mine[key] - theirs[key]) < 1e-9
        differ += [] if same else [key]
        fmt = "{:>20d} {:>22d}" if isinstance(mine[key], int) else "{:>20.6f} {:>22.6f}"
        print(f"{key:18s} " + fmt.format(mine[key], theirs[key]) + ("" if same else "   DIFFERENT"))
    print("all equal" if not differ else f"DIFFERENT: {', '.join(differ)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
