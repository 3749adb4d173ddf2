"""Results: lm-eval's run files, the DuckDB store, and the one pairing of base x variant items.

The only layer that talks SQL or knows lm-eval's file names. ``runfiles`` finds and reads
``results_*.json`` / ``samples_<task>_<date>.jsonl``; ``store`` ingests them into the tidy per-sample
table (recording each task's samples file and its SHA-256); ``pairing.pair_runs`` pairs a variant's
items with the base's (one filter rule, NaN and unmatched items left out and counted); ``samples``
reads per-item texts and per-choice loglikelihoods back from the recorded files.
"""
