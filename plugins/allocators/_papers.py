"""The papers whose methods the built-in allocators run, for their leaderboard entries (README.md, The papers)."""

TIERED_WORKSHOP = "https://arxiv.org/abs/2106.02412"  # Shabka & Zervas, NeurIPS 2021 ML for Systems workshop
TIERED_JOURNAL = "https://doi.org/10.1364/JOCN.478944"  # Shabka & Zervas, JOCN 15(2), 2023
TIERED_CODE = "https://github.com/zawaki/nara_revision"  # the journal paper's public code
TIERED_AUTHORS = ("Zacharaya Shabka", "Georgios Zervas")
OCS = "https://doi.org/10.1364/JOCN.562531"  # Liu, Chen, Proietti, Zhu & Yoo, JOCN 17(9), 2025
OCS_AUTHORS = ("Che-Yu Liu", "Xiaoliang Chen", "Roberto Proietti", "Zuqing Zhu", "S. J. Ben Yoo")
