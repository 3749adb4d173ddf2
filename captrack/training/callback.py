"""`CapTrackCallback`: evaluate the weights being trained with lm-eval every N steps (or on each save),
write an ordinary lm-eval run folder per step, and log per-capability drift against the base through the
trainer's own loggers (whatever ``report_to`` names).

Usable with any transformers ``Trainer``, TRL's SFTTrainer, DPOTrainer and GRPOTrainer included. Like TRL's
own evaluation callbacks it is given the trainer::

    trainer = SFTTrainer(...)
    trainer.add_callback(CapTrackCallback(trainer, tasks=["captrack_probe_c2_logic"], every=50, limit=200))

Training is left exactly as it was: the evaluation runs under ``torch.no_grad``, every module's train/eval
mode is restored, and the Python, NumPy, torch (and CUDA) RNG states are saved before and restored after, so
the final weights are bitwise those of a run without the callback (tests/test_training_callback.py).

**Flags you may stop on (anytime-valid).** Each evaluation is a look at a sequence whose length nobody fixes in
advance: a user may stop training on the first flag. At the k-th look (k = 1, 2, ... counting every step
evaluated into this output folder), capability C is flagged (``captrack/<C>/flag`` = −1 regressed, +1 improved,
else 0) when its verdict against the base is significant *and* its p-value is at most
α_k = α·6/(π²k²) (captrack.analysis.curve_stats.spent_alpha, α = 5%). Since Σ_k α_k = α, the guarantee is:
for a capability that did not change at any step, the probability that it is *ever* flagged, over any number of
looks and whatever rule decides when to stop (on a flag included), is at most α (a union bound over looks, valid
under any dependence between steps, which share the base), as far as each step's p-value is valid. It holds per
capability: over 14 capabilities, up to 14α. The price is power at late looks (α_10 = 0.03%); compare's
first_step_significant, computed once every step is in, uses the window scan over the K steps instead
(captrack.analysis.curve_windows).
"""

from __future__ import annotations

import copy
import logging
import math
import random
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from captrack.errors import InputError
from captrack.training.resume import Resumed, check_writable, clear_run_folder, recorded_resume

__all__ = ["CallbackOptions", "CapTrackCallback"]

LOGGED = ("drift", "forgetting_adj", "backward_transfer_adj")
FLAG_ALPHA = 0.05  # the error spent over all looks, per capability (see the module docstring)
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallbackOptions:
    """What and when to evaluate.

    Attributes:
        tasks: lm-eval task names or globs (captrack's tasks dir is on the include path).
        every: evaluate when the global step is a multiple of this (None: only on saves).
        on_save: also evaluate at every checkpoint save.
        limit: lm-eval --limit per task (None: every item).
        output_dir: where the run folders go (default: <trainer output_dir>/captrack); one ``step-<N>``
            per evaluated step, and ``base`` for the weights at the start of training.
        base_run: an lm-eval run folder of the base (default: evaluate the weights at the start of training).
        batch_size, seed, apply_chat_template, gen_kwargs: as lm-eval's (greedy tasks stay greedy).
    """

    tasks: Sequence[str]
    every: int | None = None
    on_save: bool = True
    limit: int | float | None = None
    output_dir: str | None = None
    base_run: str | None = None
    batch_size: int = 8
    seed: int = 0
    apply_chat_template: bool = True
    gen_kwargs: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


class CapTrackCallback(TrainerCallback):
    """Evaluate the current weights in process (rank 0) and log captrack/<capability>/{drift, forgetting_adj,
    backward_transfer_adj} against the global step; see the module docstring."""

    def __init__(self, trainer: Any, tasks: Sequence[str], **options: Any) -> None:
        self.trainer = trainer
        self.options = CallbackOptions(tasks=tuple(tasks), **options)
        if not self.options.tasks:
            raise InputError("CapTrackCallback: tasks is empty; name the lm-eval tasks to evaluate (e.g. captrack_probe_c2_logic)")
        _check_options(self.options)
        self.base_folder: Path | None = Path(self.options.base_run) if self.options.base_run else None
        self.evaluated: dict[int, Path] = {}  # step -> run folder
        self.resumed = Resumed()  # what an earlier launch into the same folder recorded (on_train_begin)
        self.logged: dict[int, dict[str, float]] = {}  # step -> the drift measures logged
        self.flags: dict[int, dict[str, float]] = {}  # step -> captrack/<capability>/flag logged beside them
        self.first_flagged: dict[str, int] = {}  # capability -> the first step it was flagged at (this launch)

    @property
    def output_dir(self) -> Path:
        """Where the run folders go."""
        return Path(self.options.output_dir or Path(self.trainer.args.output_dir) / "captrack")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Check the tasks and the output folder, pick up what a launch before this one recorded, then evaluate
        the starting weights as the base (unless a base run was given or training resumes)."""
        if not state.is_world_process_zero:
            return
        from captrack.lmeval.evaluate import match_tasks

        match_tasks(self.options.tasks, self.options.metadata, each=True)  # a typo fails now, not at the first evaluation
        check_writable(self.output_dir)
        start = int(state.global_step)
        self.resumed = recorded_resume(self.output_dir, start)
        self.evaluated.update({step: self.output_dir / f"step-{step}" for step in self.resumed.kept})
        if self.resumed.kept or self.resumed.replaced:
            logger.warning("CapTrackCallback: %s", self.resumed.describe(self.output_dir))
        if self.base_folder is not None:
            return
        if start > 0:
            if not self.resumed.base:
                raise InputError(f"CapTrackCallback: training resumes at step {start}, so the weights at hand are not "
                                 f"the base, and {self.output_dir / 'base'} holds no base run; pass base_run=<the base's "
                                 "lm-eval run folder>")
            self.base_folder = self.output_dir / "base"  # the base the first launch evaluated
            return
        self.base_folder = self._evaluate(kwargs["model"], kwargs.get("processing_class"), "base", None, None)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Every `every` steps: evaluate and log."""
        every = self.options.every
        if every is not None and state.global_step % every == 0:
            self._step(args, state, control, kwargs)

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """At each checkpoint save (with `on_save`): evaluate and log."""
        if self.options.on_save:
            self._step(args, state, control, kwargs)

    def _step(self, args: Any, state: Any, control: Any, kwargs: dict[str, Any]) -> None:
        step = int(state.global_step)
        if step in self.evaluated or not state.is_world_process_zero:
            return
        folder = self._evaluate(kwargs["model"], kwargs.get("processing_class"), f"step-{step}", step, state.epoch)
        self.evaluated[step] = folder
        logs, flags = self._drift(folder, step)
        self.logged[step], self.flags[step] = logs, flags
        if logs or flags:  # what Trainer.log does, minus subclasses' extras (GRPO would flush its own metrics into ours)
            state.log_history.append({**logs, **flags, "step": step})
            should_log = control.should_log  # the handler clears it: the trainer's own log of this step must still run
            self.trainer.callback_handler.on_log(args, state, control, {**logs, **flags})
            control.should_log = should_log

    def _evaluate(self, model: Any, tokenizer: Any, name: str, step: int | None, epoch: float | None) -> Path:
        """Run lm-eval on the model as it is now, leaving its training state untouched; return the run folder."""
        from captrack.lmeval.evaluate import EvalSpec, evaluate_model
        from captrack.results.checkpoints import tag_run_folder

        options = self.options
        spec = EvalSpec(model_args={"pretrained": name}, tasks=options.tasks, limit=options.limit,
                        batch_size=options.batch_size, seed=options.seed, apply_chat_template=options.apply_chat_template,
                        gen_kwargs=options.gen_kwargs, metadata=dict(options.metadata))
        tokenizer = copy.deepcopy(tokenizer if tokenizer is not None else self.trainer.processing_class)
        clear_run_folder(self.output_dir / name)  # a launch before this one evaluated other weights under this name
        with _training_state_kept(model):
            results = evaluate_model(model, tokenizer, spec, self.output_dir / name)
        if step is not None:
            tag_run_folder(results.parent, step, epoch)
        return results.parent

    def _drift(self, folder: Path, step: int) -> tuple[dict[str, float], dict[str, float]]:
        """captrack/<capability>/<measure> of this step vs the base (no bootstrap: point estimates), and each
        capability's anytime-valid flag at this look (captrack/<capability>/flag; see the module docstring)."""
        from captrack.analysis.comparison import CompareOptions
        from captrack.compare.use_case import compare
        from captrack.labels import VariantLabels
        from captrack.results.runfiles import discover_runs
        from captrack.results.store import Store

        if self.base_folder is None:  # on_train_begin ran on another rank only
            raise InputError("CapTrackCallback: no base run to compare with; pass base_run=<the base's lm-eval run folder>")
        with Store() as store:
            store.ingest(discover_runs(self.base_folder), VariantLabels(name="base"))
            store.ingest(discover_runs(folder), VariantLabels(name="model", step=step))
            comparison = compare(store, "base", [VariantLabels(name="model")],
                                 CompareOptions(bootstrap=0, distribution=False, churn=False))
        flags = self._flags(comparison.capabilities, step)
        if comparison.curves is None:
            return {}, flags
        rows = comparison.curves.curves
        rows = rows[rows["level"] == "capability"]
        logs = {}
        for key, drift, f_adj, bt_adj in zip(rows["key"], rows["drift_pct"], rows["forgetting_adj"],
                                             rows["backward_transfer_adj"], strict=True):
            for measure, value in zip(LOGGED, (drift, f_adj, bt_adj), strict=True):
                if value is not None and not math.isnan(float(value)):
                    logs[f"captrack/{key}/{measure}"] = float(value)
        return logs, flags

    def _flags(self, capabilities: Any, step: int) -> dict[str, float]:
        """captrack/<capability>/flag at this step: ∓1 where the verdict is regressed/improved with p ≤ α_k at the
        k-th look (k: this step's place among the steps evaluated into the output folder), else 0."""
        from captrack.analysis.curve_stats import spent_alpha

        look = sorted(self.evaluated).index(step) + 1 if step in self.evaluated else len(self.evaluated) + 1
        threshold = spent_alpha(look, FLAG_ALPHA)
        rows = capabilities[capabilities["level"] == "capability"]
        flags = {}
        for key, verdict, p_value in zip(rows["key"], rows["verdict"], rows["p_value"], strict=True):
            if verdict not in ("regressed", "improved", "inconclusive", "equivalent"):
                continue  # not measured at this step, or neutral
            fired = verdict in ("regressed", "improved") and float(p_value) <= threshold
            flags[f"captrack/{key}/flag"] = (-1.0 if verdict == "regressed" else 1.0) if fired else 0.0
            if fired and key not in self.first_flagged:
                self.first_flagged[str(key)] = step
                logger.warning("CapTrackCallback: %s %s at step %d (look %d: p = %.2g <= %.2g, anytime-valid at %g "
                               "over all looks)", key, verdict, step, look, float(p_value), threshold, FLAG_ALPHA)
        return flags


def _check_options(options: CallbackOptions) -> None:
    """The options by the rules the experiment file's keys follow (captrack.schemas): "2", 1.5 or True are no step count.

    Raises:
        InputError: ``CapTrackCallback: every: '2' (str) is not allowed: ...``.
    """
    from captrack.schemas import Count, Every, Seed, check_value

    if options.every is not None:
        check_value(Every, options.every, "CapTrackCallback: every")
    check_value(Count, options.batch_size, "CapTrackCallback: batch_size")
    check_value(Seed, options.seed, "CapTrackCallback: seed")
    if not isinstance(options.on_save, bool) or not isinstance(options.apply_chat_template, bool):
        raise InputError("CapTrackCallback: on_save and apply_chat_template are true or false")


@contextmanager
def _training_state_kept(model: Any) -> Any:
    """Evaluate without a trace: no_grad, each module's mode restored, the Python/NumPy/torch/CUDA RNGs restored."""
    import numpy as np
    import torch

    modes = [(module, module.training) for module in model.modules()]
    states = (random.getstate(), np.random.get_state(), torch.get_rng_state(),
              torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None)
    try:
        with torch.no_grad():
            model.eval()
            yield
    finally:
        for module, training in modes:
            module.training = training
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if states[3] is not None:
            torch.cuda.set_rng_state_all(states[3])
