"""The installable package: console scripts, declared dependencies, optional extras imported
only where used, and what the wheel carries. The wheel itself is built, installed into a fresh
virtual environment and run from another directory by `tools/check-wheel` (CI runs it)."""

import ast
import os
import pathlib
import subprocess
import sys
import tomllib

import pytest

import attnbench
from attnbench import cli
from tests.conftest import ROOT

ROOT_PATH = pathlib.Path(ROOT)
PYPROJECT = tomllib.loads((ROOT_PATH / "pyproject.toml").read_text())
# Top-level folders whose code the wheel installs (tests are not installed).
PACKAGES = ("attnbench", "attention", "lra", "vision", "graphs", "pointcloud", "language")
INSTALLED = (*PACKAGES, "configs", "scripts")
# Import name -> distribution name, where they differ.
DISTRIBUTIONS = {
    "PIL": "pillow",
    "absl": "absl-py",
    "ml_collections": "ml-collections",
    "orbax": "orbax-checkpoint",
    "sklearn": "scikit-learn",
    "tensorflow_datasets": "tensorflow-datasets",
    "ml_dtypes": "ml-dtypes",
}


def _name(requirement: str) -> str:
    for stop in "<>=!~[; ":
        requirement = requirement.split(stop)[0]
    return requirement.strip().lower().replace("_", "-")


def _declared() -> tuple[set, dict]:
    core = {_name(r) for r in PYPROJECT["project"]["dependencies"]}
    extras = {
        extra: {_name(r) for r in reqs}
        for extra, reqs in PYPROJECT["project"]["optional-dependencies"].items()
    }
    return core, extras


def _imports(path: pathlib.Path):
    """(top-level module, at module level?) of every absolute import in `path`; imports inside
    functions, and under `if TYPE_CHECKING:`, are not at module level."""
    tree = ast.parse(path.read_text())
    nested = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nested.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            nested.update(id(n) for n in ast.walk(node))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            yield name.split(".")[0], id(node) not in nested


def _third_party(packages):
    local = set(INSTALLED) | {"tests"}
    for package in packages:
        for path in sorted((ROOT_PATH / package).rglob("*.py")):
            for top, module_level in _imports(path):
                if top not in local and top not in sys.stdlib_module_names:
                    yield path.relative_to(ROOT_PATH), top, module_level


def test_console_scripts_are_the_ones_the_cli_names_and_each_has_run():
    scripts = PYPROJECT["project"]["scripts"]
    assert {v.split(":")[0]: k for k, v in scripts.items()} == cli.CONSOLE_SCRIPTS
    for target in scripts.values():
        module, _, func = target.partition(":")
        assert func == "run"
        assert callable(getattr(__import__(module, fromlist=[func]), func))


@pytest.mark.parametrize("module", sorted(cli.CONSOLE_SCRIPTS))
def test_each_console_script_names_itself_in_its_help(module, monkeypatch, capsys):
    console = cli.CONSOLE_SCRIPTS[module]
    monkeypatch.setattr(sys, "argv", [f"/somewhere/bin/{console}", "--help"])
    main = __import__(module, fromlist=["main"]).main
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: {console} ")
    monkeypatch.setattr(sys, "argv", [f"/repo/{module.replace('.', '/')}.py", "--help"])
    with pytest.raises(SystemExit):
        main(["--help"])
    assert capsys.readouterr().out.startswith(f"usage: {module} ")


def test_every_third_party_import_is_declared_and_extras_are_imported_only_where_used():
    core, extras = _declared()
    optional = set().union(*extras.values())
    undeclared, eager = [], []
    for path, top, module_level in _third_party(PACKAGES + ("configs", "scripts")):
        dist = DISTRIBUTIONS.get(top, top).lower().replace("_", "-")
        if dist not in core and dist not in optional:
            undeclared.append(f"{path}: {top}")
        elif dist not in core and module_level:
            eager.append(f"{path}: {top}")
    assert undeclared == [], "imported but not in pyproject.toml's dependencies or extras"
    assert eager == [], "an optional extra imported at module level (import it where it is used)"
    tests_only = {top for _, top, _ in _third_party(["tests"])} - {"pytest"}
    for top in tests_only:
        dist = DISTRIBUTIONS.get(top, top).lower()
        assert dist in core or dist in optional, f"tests import {top}, which nothing declares"


def test_the_wheel_carries_every_package_and_no_module_named_core():
    found = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(p.rstrip("*") for p in found) == sorted(INSTALLED)
    on_disk = {p.parent.name for p in ROOT_PATH.glob("*/__init__.py") if p.parent.name != "tests"}
    assert on_disk == set(INSTALLED)
    assert not (ROOT_PATH / "core").exists()
    for package in INSTALLED:  # setuptools' find needs an __init__.py in every folder of code
        for folder in (ROOT_PATH / package).rglob("*"):
            if folder.is_dir() and any(folder.glob("*.py")) and "__pycache__" not in folder.parts:
                assert (folder / "__init__.py").exists(), f"{folder} has no __init__.py"


def test_license_changelog_and_the_version():
    assert (ROOT_PATH / "LICENSE").read_text().strip().startswith("Apache License")
    assert PYPROJECT["project"]["license"] == "Apache-2.0"
    changelog = (ROOT_PATH / "CHANGELOG.md").read_text()
    assert f"## {attnbench.__version__}" in changelog


def test_without_any_extra_every_domain_registers_and_every_config_loads(tmp_path):
    """RDKit, h5py and TFDS made unimportable: every task is still listed, every config file
    loads, and only using a graph's data asks for the extra (one line, exit status 2)."""
    blocked = tmp_path / "blocked"
    for module in ("rdkit", "h5py", "tensorflow_datasets"):
        (blocked / module).mkdir(parents=True)
        (blocked / module / "__init__.py").write_text(
            f"raise ModuleNotFoundError({'No module named ' + module!r}, name={module!r})\n"
        )
    code = (
        "import pathlib\n"
        "from attnbench import config, tasks\n"
        "print(len(tasks.names()))\n"
        "root = pathlib.Path(config.PACKAGE).resolve()\n"
        "for p in sorted(root.glob('*/*.py')):\n"
        "    if p.parent.name != 'tables' and 'def get_config(' in p.read_text():\n"
        "        config.load(str(p.relative_to(root)))\n"
        "print('ok')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(blocked), JAX_PLATFORMS="cpu")
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["21", "ok"]  # 21 tasks: language.glue is the 21st
    train = subprocess.run(
        [
            sys.executable,
            "-m",
            "scripts.train",
            "--config=graphs/zinc.py:preset=smoke",
            f"--workdir={tmp_path / 'run'}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert train.returncode == 2, train.stderr
    assert train.stderr.strip().splitlines() == [
        "error: the ZINC stand-in (graphs.data.zinc.load) needs RDKit, which is not installed: "
        "pip install 'attnbench[molecules]'"
    ]


def test_no_tracked_file_points_outside_the_repository():
    """The repository stands alone: papers are cited by their own references (arXiv id and
    section, table, ...), never by a path to material beside the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if listed.returncode:
        pytest.skip("not a git checkout")
    outside = ("../" + "shared", "shared/" + "papers", "/work/" + "shared")
    found = []
    for name in filter(None, listed.stdout.split("\0")):
        path = ROOT_PATH / name
        try:
            text = path.read_text()
        except (UnicodeDecodeError, FileNotFoundError):
            continue  # images, and files deleted in the working tree
        for lineno, line in enumerate(text.splitlines(), 1):
            if any(marker in line for marker in outside):
                found.append(f"{name}:{lineno}: {line.strip()[:80]}")
    assert found == []
