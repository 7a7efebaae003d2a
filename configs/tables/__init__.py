"""Paper tables as data (`attnbench.papers.tables`): one `<paper>_<table>.py` per published
table."""
