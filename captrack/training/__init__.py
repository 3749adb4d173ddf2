"""The demo's post-training: generated target-domain problems, a shared TRL harness, and SFT, DPO and RL.

Modules: ``problems`` (arithmetic word problems as SFT / preference / prompt rows), ``harness``
(config hashing, cached atomic runs, trainer settings), ``sft``, ``preference`` (DPO), ``rl``
(GRPO with verifiable rewards) and ``recipes`` (the ``train:`` methods of experiment manifests);
``callback.CapTrackCallback`` evaluates the weights during any transformers/TRL training (drift over training).
"""

from typing import TYPE_CHECKING

from captrack.lazy import lazy_getattr

if TYPE_CHECKING:  # imported on first use, so `import captrack.training` does not load transformers
    from captrack.training.callback import CallbackOptions, CapTrackCallback

_EXPORTS = {"CapTrackCallback": "captrack.training.callback", "CallbackOptions": "captrack.training.callback"}
__all__ = ["CallbackOptions", "CapTrackCallback"]
__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
