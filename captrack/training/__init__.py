"""The demo's post-training: generated target-domain problems, a shared TRL harness, and SFT, DPO and RL.

Modules: ``problems`` (arithmetic word problems as SFT / preference / prompt rows), ``harness``
(config hashing, cached atomic runs, trainer settings), ``sft``, ``preference`` (DPO), ``rl``
(GRPO with verifiable rewards) and ``recipes`` (the ``train:`` methods of experiment manifests).
"""
