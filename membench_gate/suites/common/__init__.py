"""What every suite shares: the ``Suite`` declaration and what a run gives (``suite``), the options
table (``options``), fixture loading (``fixtures``, ``folders``), scoring helpers (``scoring``) and
seeded shuffles (``seeded``)."""
