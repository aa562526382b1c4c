"""The shape of the code, pinned (#21): no import cycles in ``projects`` and ``pipeline`` (imports
inside functions included: a lazy import that closes a cycle is still a cycle), ``projects`` never
imports ``pipeline``, and nothing imports the Celery tasks back: they are the top, found by name."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = ("projects", "pipeline", "novelsite")


def _modules() -> dict[str, Path]:
    modules = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            modules[name] = path
    return modules


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere in its body."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # ``from package import module`` depends on the module, not on the package's __init__
                submodules = [f"{node.module}.{alias.name}" for alias in node.names]
                names = [alias.name for alias in node.names if f"{node.module}.{alias.name}" not in modules]
                targets = [*submodules, *([node.module] if names else [])]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            graph[name] |= {target for target in targets if target in modules and target != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_there_are_no_import_cycles():
    assert _cycles(_imports(_modules())) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_projects_never_imports_pipeline():
    graph = _imports(_modules())
    leaks = {name: sorted(t for t in targets if t.startswith("pipeline")) for name, targets in graph.items()
             if name.startswith("projects")}
    assert {name: targets for name, targets in leaks.items() if targets} == {}


def test_nothing_imports_the_tasks_but_the_app_that_registers_them():
    graph = _imports(_modules())
    importers = sorted(name for name, targets in graph.items() if "pipeline.tasks" in targets)
    assert importers == ["pipeline.apps"]
