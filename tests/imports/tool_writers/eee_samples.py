"""Write Every-Eval-Ever instance-level logs with its own lm-eval converter, and what it reports per sample.

Run by the Python 3.12 tool environment (tests/imports/conftest.py), not by captrack's:
``python eee_samples.py SPEC.json``. SPEC: a list of ``{"samples": lm-eval samples_<task>.jsonl, "model": id,
"task": name, "out": folder}``. Each is converted by ``LMEvalInstanceLevelAdapter.transform_and_save`` (the
package's writer of ``<uuid>_samples.jsonl``); ``<out>/reported.json`` lists the converter's own rows:
``[evaluation_name, evaluation_result_id, sample_id, evaluation.score]``.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

from every_eval_ever.converters.lm_eval.instance_level_adapter import LMEvalInstanceLevelAdapter


def main(spec_path: str) -> None:
    adapter = LMEvalInstanceLevelAdapter()
    for job in json.loads(Path(spec_path).read_text(encoding="utf-8")):
        evaluation_id = f"{job['model']}/{job['task']}"
        adapter.transform_and_save(job["samples"], evaluation_id, job["model"], job["task"], output_dir=job["out"],
                                   file_uuid=str(uuid.uuid4()), collection="captrack-tests", developer="captrack")
        logs = adapter.transform_samples(job["samples"], evaluation_id, job["model"], job["task"])
        rows = [[log.evaluation_name, log.evaluation_result_id, log.sample_id, log.evaluation.score] for log in logs]
        (Path(job["out"]) / "reported.json").write_text(json.dumps(rows), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
