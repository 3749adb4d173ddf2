"""The comparison use case (`captrack compare`, `captrack run`'s boards, `captrack leaderboard`): read
from captrack.results once (inputs), analyse (captrack.analysis), render (captrack.report)."""
