"""lm-eval's warnings: each at most once per process, and its custom_dataset advice never for captrack's tasks."""

from __future__ import annotations

import logging

import pytest

from captrack.lmeval.quiet import quiet_lm_eval


def test_each_lm_eval_warning_once_and_no_custom_kwargs_advice(caplog: pytest.LogCaptureFixture) -> None:
    import lm_eval.api.task  # noqa: F401  (its logger exists once the module is imported)

    quiet_lm_eval()
    quiet_lm_eval()  # idempotent
    logger = logging.getLogger("lm_eval.api.task")
    with caplog.at_level(logging.INFO, logger="lm_eval"):
        for _ in range(3):
            logger.warning("captrack_probe_c1_facts: Custom kwargs can be passed to `--metadata` in console ...")
            logger.warning("pretrained=x appears to be an instruct or chat variant but chat template is not applied.")
            logger.info("Building contexts for captrack_probe_c1_facts on rank 0...")
    texts = [r.getMessage() for r in caplog.records]
    assert texts.count("pretrained=x appears to be an instruct or chat variant but chat template is not applied.") == 1
    assert not [t for t in texts if "Custom kwargs" in t]
    assert texts.count("Building contexts for captrack_probe_c1_facts on rank 0...") == 3  # info is not a warning
