"""attnbench.data.cache.Progress: the progress lines of long data builds."""

from attnbench.data import cache


def test_progress_lines_name_the_rate_and_eta(capsys):
    p = cache.Progress(10, "build", unit="molecules", every=0.0)
    p.update(5)
    p.update(10, final=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("[build] 5/10 molecules, ") and "ETA" in lines[0]
    assert lines[1].startswith("[build] 10/10 molecules, ") and "done in" in lines[1]
    quiet = cache.Progress(10, "build", every=3600.0)  # a short build prints nothing
    quiet.update(10, final=True)
    assert capsys.readouterr().err == ""
