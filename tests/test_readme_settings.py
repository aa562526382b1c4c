"""The README documents every variable read from the environment, and nothing else (#21).

"Documented" means listed, as `NAME` in backticks, in the first column of one of the README's
variable tables (a Markdown table whose first header is "variable": the "Configuration" tables and
the one under "Running the tests"). Both ways:

- every variable ``novelsite/settings.py`` reads (``env(...)``, ``env.<cast>(...)``, ``os.environ``,
  ``os.getenv``; found by parsing the module with ``ast``), and every variable read elsewhere
  (``os.environ`` in the Python code, ``${VAR}`` in the Makefile, ``.ci/run`` and ``docker/``), is in
  a table;
- every variable a table lists is read by the settings or is in ``READ_ELSEWHERE`` below, whose
  entries must still occur in the file they name.

A literal default in the settings (``default=15 * 60``, ``default="5m"``, ``default=[]``) must also
appear in its row's "default" column, so the documented defaults follow the code. The provider keys
named by ``NOVELSITE_LLM_PROVIDERS_JSON`` rows (``key_env``) are configuration, not code: the README
describes that mechanism instead of listing names.
"""
from __future__ import annotations

import ast
import json
import operator
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SETTINGS = ROOT / "novelsite" / "settings.py"

# Variables the README's tables list that the settings module does not read, each with the file
# that reads it (checked: the name must occur there, so an entry cannot outlive its code).
READ_ELSEWHERE = {
    # the test run (README "Running the tests")
    "REQUIRE_SERVICES": "tests/conftest.py",
    "NOVELSITE_CHROMIUM": "tests/conftest.py",  # the browser tests' Chromium
    "PYTEST_WORKERS": "Makefile",  # make test: pytest-xdist processes
    "PYTEST_ARGS": "Makefile",  # make test: extra pytest arguments
    "VENV": "Makefile",  # where make creates the virtualenv
    "PYTHON_FOR_VENV": "Makefile",  # the interpreter make creates it with
    "CI": "Makefile",  # make test fails on "no tests collected"; .ci/run sets it
    # processes and the container stack (README "Processes and the container stack")
    "DJANGO_SETTINGS_MODULE": "manage.py",  # also novelsite/wsgi.py, asgi.py, celery.py
    "POSTGRES_PASSWORD": "docker/compose.yaml",
    "WEB_PORT": "docker/compose.yaml",
    "NOVELSITE_IMAGE": "docker/compose.yaml",
    "RUN_MIGRATIONS": "docker/entrypoint.sh",
    "HEALTHCHECK_PORT": "docker/healthcheck.py",
    "NOVELSITE_UPSTREAM": "docker/nginx/novelsite.conf.template",
    "NGINX_PORT": "docker/nginx/novelsite.conf.template",
}

# Python files scanned for os.environ reads besides the settings (the bench scripts only set
# variables for the processes they start; the other test files copy the environment whole).
PYTHON_SOURCES = ("novelsite", "projects", "pipeline", "docker", "manage.py", "tests/conftest.py")
# Files whose ${VAR} (shell, compose, nginx template) or make variables are read from the environment.
SHELL_SOURCES = ("Makefile", ".ci/run", "docker/compose.yaml", "docker/entrypoint.sh", "docker/Dockerfile",
                 "docker/nginx/novelsite.conf.template")
# Set by the system or the container, not by a deployment.
NOT_OURS = {"HOME", "PATH", "HOSTNAME"}

NAME = re.compile(r"`([A-Z][A-Z0-9_]*)`")


# --- what the code reads ------------------------------------------------------------------------


def _literal(node: ast.expr):
    """The value of a constant expression (``15 * 60``, ``"x"``, ``[]``), else ``...``."""
    operators = {ast.Mult: operator.mul, ast.Add: operator.add, ast.Sub: operator.sub}
    if isinstance(node, ast.BinOp) and type(node.op) in operators:
        left, right = _literal(node.left), _literal(node.right)
        if left is ... or right is ... or not all(isinstance(v, (int, float, str)) for v in (left, right)):
            return ...
        try:
            return operators[type(node.op)](left, right)
        except TypeError:
            return ...
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ...


def _os_environ_read(node: ast.AST) -> str | None:
    """The name in ``os.environ.get("X")``, ``os.getenv("X")`` or ``os.environ["X"]`` (read)."""
    def is_os_environ(expr: ast.AST) -> bool:
        return (isinstance(expr, ast.Attribute) and expr.attr == "environ"
                and isinstance(expr.value, ast.Name) and expr.value.id == "os")

    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = node.func
        if isinstance(func, ast.Attribute) and (
            (func.attr == "get" and is_os_environ(func.value))
            or (func.attr == "getenv" and isinstance(func.value, ast.Name) and func.value.id == "os")
        ):
            return node.args[0].value
    if (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_os_environ(node.value)
            and isinstance(node.slice, ast.Constant)):
        return node.slice.value
    return None


def settings_reads() -> dict[str, list]:
    """Every variable ``novelsite/settings.py`` reads, with the literal defaults it is read with
    (``...`` for a default computed at start-up, none for a read without default)."""
    reads: dict[str, list] = {}
    for node in ast.walk(ast.parse(SETTINGS.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            func = node.func
            through_env = ((isinstance(func, ast.Name) and func.id == "env")
                           or (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                               and func.value.id == "env"))
            if through_env:
                name_node = (node.args[0] if node.args
                             else next((k.value for k in node.keywords if k.arg == "var"), None))
                if isinstance(name_node, ast.Constant) and isinstance(name_node.value, str):
                    cast = func.attr if isinstance(func, ast.Attribute) else "str"
                    defaults = reads.setdefault(name_node.value, [])
                    for keyword in node.keywords:
                        if keyword.arg == "default":
                            defaults.append((cast, _literal(keyword.value)))
                continue
        name = _os_environ_read(node)
        if name is not None:
            reads.setdefault(name, [])
    return reads


def _python_files() -> list[Path]:
    files: list[Path] = []
    for source in PYTHON_SOURCES:
        path = ROOT / source
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return [f for f in files if "migrations" not in f.parts and f != SETTINGS]


def elsewhere_reads() -> dict[str, str]:
    """Variables read outside the settings module: name → the first file found reading it."""
    found: dict[str, str] = {}
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = _os_environ_read(node)
            if name is not None:
                found.setdefault(name, str(path.relative_to(ROOT)))
    for source in SHELL_SOURCES:
        text = (ROOT / source).read_text(encoding="utf-8")
        names = re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", text)
        if source == "Makefile":  # make variables a caller may set, and the recipes' shell variables
            names += re.findall(r"^([A-Z_][A-Z0-9_]*)\s*\?=", text, flags=re.MULTILINE)
            names += re.findall(r"\$\$\{?([A-Z_][A-Z0-9_]*)", text)
        for name in names:
            if name not in NOT_OURS:
                found.setdefault(name, source)
    return found


# --- what the README documents ------------------------------------------------------------------


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def readme_rows() -> list[tuple[list[str], dict[str, str]]]:
    """The rows of every variable table: (names in the first column, cells by header)."""
    rows: list[tuple[list[str], dict[str, str]]] = []
    lines = README.read_text(encoding="utf-8").splitlines()
    fenced = False
    header: list[str] | None = None
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        if fenced or not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = [cell.lower() for cell in cells]
        elif header[0] == "variable" and not set(line) <= set("|-: "):
            rows.append((NAME.findall(cells[0]), dict(zip(header, cells))))
    return rows


def documented() -> dict[str, dict[str, str]]:
    table: dict[str, dict[str, str]] = {}
    for names, cells in readme_rows():
        for name in names:
            table.setdefault(name, cells)
    return table


# --- the tests ----------------------------------------------------------------------------------


def test_the_readme_has_variable_tables():
    assert len(readme_rows()) > 50, "the README's variable tables were not found (header 'variable')"
    assert "DEBUG" in settings_reads() and "REQUIRE_SERVICES" in elsewhere_reads()


def test_every_variable_the_settings_read_is_documented():
    missing = sorted(set(settings_reads()) - set(documented()))
    assert not missing, (f"novelsite/settings.py reads {', '.join(missing)} from the environment, but no "
                         "variable table in README.md lists it (as `NAME` in its first column)")


def test_every_variable_read_elsewhere_is_documented_and_allow_listed():
    found = elsewhere_reads()
    settings = settings_reads()
    undocumented = sorted(f"{name} ({where})" for name, where in found.items() if name not in documented())
    assert not undocumented, f"read from the environment but not in README.md's variable tables: {undocumented}"
    unlisted = sorted(f"{name} ({where})" for name, where in found.items()
                      if name not in settings and name not in READ_ELSEWHERE)
    assert not unlisted, f"read outside novelsite/settings.py but missing from READ_ELSEWHERE here: {unlisted}"


def test_every_documented_variable_is_read():
    settings = settings_reads()
    stale = sorted(name for name in documented() if name not in settings and name not in READ_ELSEWHERE)
    assert not stale, (f"README.md's variable tables list {', '.join(stale)}, which nothing reads any more "
                       "(remove the row, or add the reader to READ_ELSEWHERE in this file)")


@pytest.mark.parametrize("name, source", sorted(READ_ELSEWHERE.items()))
def test_read_elsewhere_entries_still_occur_in_their_file(name, source):
    assert re.search(rf"\b{name}\b", (ROOT / source).read_text(encoding="utf-8")), (
        f"READ_ELSEWHERE says {source} reads {name}, but it does not mention it any more")


def _shown(cast: str, value) -> list[str]:
    """How the README may write a literal default: in backticks, or 'empty' for nothing."""
    if value in ("", []) and cast in ("str", "list"):
        return ["empty"]
    if isinstance(value, bool):
        return [f"`{str(value).lower()}`"]
    if isinstance(value, float) and value.is_integer():
        return [f"`{value}`", f"`{int(value)}`"]
    if isinstance(value, list) and cast == "list":
        return [f"`{','.join(value)}`"]
    if isinstance(value, (list, dict)):
        return [f"`{json.dumps(value)}`"]
    return [f"`{value}`"]


def test_literal_defaults_match_the_readme():
    table = documented()
    wrong = []
    for name, defaults in sorted(settings_reads().items()):
        cells = table.get(name)
        if cells is None:
            continue  # reported by test_every_variable_the_settings_read_is_documented
        probe = len(defaults) > 1  # also read with default "" only to ask whether it is set
        for cast, value in defaults:
            if value is ... or (probe and value == ""):
                continue  # computed at start-up (DEBUG-dependent, a path, another variable), or a probe
            if not any(shown in cells.get("default", "") for shown in _shown(cast, value)):
                wrong.append(f"{name}: the code's default is {value!r}, README says {cells.get('default')!r}")
    assert not wrong, "README.md's defaults differ from novelsite/settings.py:\n" + "\n".join(wrong)


def test_each_variable_has_one_row():
    names = [name for row_names, _cells in readme_rows() for name in row_names]
    twice = sorted({name for name in names if names.count(name) > 1})
    assert not twice, f"listed in more than one row of README.md's variable tables (keep one): {twice}"
