"""Paper tables as data (`core.paper_tables`): one `<paper>_<table>.py` per published table."""
