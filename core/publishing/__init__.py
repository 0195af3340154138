"""Publishing: the leaderboard (submit, replay, rebuild), reports and figures."""
