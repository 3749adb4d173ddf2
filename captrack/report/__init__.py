"""Human-readable outputs: Markdown reports (and, later, leaderboard pages and figures)."""
