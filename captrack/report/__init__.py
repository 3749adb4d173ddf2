"""Outputs: the one writer of contract files (``writer``), Markdown reports, figures and leaderboard pages."""
