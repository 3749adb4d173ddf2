"""Analysis: transitions, drift, bootstrap CIs, significance and distribution diagnostics, on paired items.

Pure computations on what captrack.results hands over (PairedItems); no SQL, no file names, and
nothing here imports captrack.report.
"""
