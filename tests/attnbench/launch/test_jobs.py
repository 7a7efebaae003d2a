"""`attnbench.launch.jobs.train_command`: the seed of each run index."""

from attnbench.launch import jobs


def _seed(cmd):
    given = [a for a in cmd if a.startswith("--config.seed=")]
    assert len(given) <= 1
    return int(given[0].split("=")[1]) if given else None


def test_run_index_zero_keeps_the_config_seed_and_others_offset_it():
    # language/cifar10.py pins seed 1 (as SSA's fairseq runs): index 1 must not repeat it
    assert _seed(jobs.train_command("language/cifar10.py:preset=smoke", "w", seed=0)) is None
    assert _seed(jobs.train_command("language/cifar10.py:preset=smoke", "w", seed=1)) == 2
    assert _seed(jobs.train_command("lra/listops.py:preset=smoke", "w", seed=1)) == 1
    seeds = {
        _seed(jobs.train_command("graphs/zinc.py:preset=smoke", "w", seed=s)) for s in (1, 2, 3)
    }
    assert seeds == {36, 37, 38}  # the ZINC recipe's own seed is 35


def test_a_seed_override_is_the_base_and_appears_once():
    cmd = jobs.train_command("lra/listops.py", "w", seed=2, overrides={"seed": 7, "lr": 0.1})
    assert _seed(cmd) == 9 and "--config.lr=0.1" in cmd
    assert _seed(jobs.train_command("lra/listops.py", "w", overrides={"seed": 7})) == 7
