"""The import layering, checked (`make lint`; README "Architecture" draws the same plan).

Every module of queueing/, horizon/ and standalone/ stands on one floor of FLOORS. It may
import its own floor and the floors below, never one above; and no modules import each
other in a circle. Every import counts: a deferred one inside a function and one under
``if TYPE_CHECKING:`` too (a type-only back-reference becomes a Protocol in the lower
module). Read with ``ast``, nothing is imported. Our own ~90 lines of logic rather than
import-linter: one more tool to install and configure for two rules that fit here, and
the floors stay one table a reader finds beside the rule.

    python .ci/layers.py [ROOT]      # exit 1, one line per breach, when the plan is broken
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGES = ("queueing", "horizon", "standalone")
DRIVERS = "queueing.drivers"  # each package inside is one driver, entered by its __init__
# Bottom-up; a module stands on the floor of its longest matching prefix (one ending in $
# names that module alone: a new module at queueing/'s root must be placed). Floor 3's rooms
# are in the order their imports allow; queueing/__init__ (the public API, which installs
# the worker's early signals), apps.py and the commands stand above the worker.
FLOORS: list[tuple[str, tuple[str, ...]]] = [
    ("1 ground", ("queueing.entries", "queueing.settings", "queueing.observability",
                  "queueing.contract", "queueing.errors", "queueing.models",
                  "queueing.signals", "queueing.version")),
    ("2 drivers", ("queueing.drivers",)),
    ("3a core: connections", ("queueing.connections",)),
    ("3b core: middleware", ("queueing.middleware",)),
    ("3bb core: results", ("queueing.results",)),
    ("3c core: dispatching", ("queueing.dispatching",)),
    ("3d core: state", ("queueing.state",)),
    ("3e core: failover", ("queueing.failover",)),
    ("3f core: batches", ("queueing.batches",)),
    ("3g core: workflows", ("queueing.workflows",)),
    ("3h core: tasks", ("queueing.tasks",)),
    ("3i core: checks, migrations", ("queueing.checks", "queueing.migrations")),
    ("4 worker", ("queueing.worker",)),
    ("4z queueing's door: API, app, commands", ("queueing$", "queueing._moved",
                                                "queueing.apps", "queueing.management")),
    ("5a operator: state, supervisor, schedules", ("horizon",)),
    ("5b operator: dashboard", ("horizon.dashboard", "horizon.templatetags",
                                "horizon.security")),
    ("5c operator: app, checks, commands", ("horizon.apps", "horizon.checks",
                                            "horizon.management")),
    ("6 site", ("standalone",)),
]
# Edges another branch of issue 49 removes: passed over until it lands (the lead empties
# this at merge). Every one is a type-only or deferred import of today's tree.
PENDING: dict[tuple[str, str], str] = {
}


def modules(root: Path) -> dict[str, Path]:
    """Every module under the packages, by dotted name (a package by its __init__)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The known modules ``name`` imports anywhere in its file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative (ruff bans them; read right all the same)
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            targets.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                           for alias in node.names)
    return {target for target in targets if target in known and target != name}


def floor(name: str) -> int:
    """The index in FLOORS of the module's floor (ValueError when it has none)."""
    matches = [(len(prefix), index) for index, (_, prefixes) in enumerate(FLOORS)
               for prefix in prefixes if name == prefix.rstrip("$")
               or not prefix.endswith("$") and name.startswith(prefix + ".")]
    if not matches:
        raise ValueError(f"{name}: on no floor; place it in FLOORS ({__file__})")
    return max(matches)[1]


def reaches_inside_a_driver(name: str, target: str) -> bool:
    """A module outside queueing/drivers/ importing a module inside one driver's package
    (queueing.drivers.redis.keys, not queueing.drivers.redis or drivers.state_store): a
    driver's package __init__ is its one door."""
    return (not name.startswith(DRIVERS + ".") and target.startswith(DRIVERS + ".")
            and len(target.split(".")) > len(DRIVERS.split(".")) + 1)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def breaches(root: Path) -> list[str]:
    """One line per upward import, cycle and module on no floor."""
    known = modules(root)
    graph = {name: imports(name, path, known) for name, path in known.items()}
    found = [f"stale PENDING entry (the import is gone): {source} -> {target}"
             for source, target in PENDING if target not in graph.get(source, {target})]
    for source, target in PENDING:
        graph.get(source, set()).discard(target)
    floors = {}
    for name in sorted(graph):
        try:
            floors[name] = floor(name)
        except ValueError as problem:
            found.append(str(problem))
    for name, targets in sorted(graph.items()):
        for target in sorted(targets):
            if name in floors and target in floors and floors[target] > floors[name]:
                found.append(f"upward import: {name} (floor {FLOORS[floors[name]][0]}) imports "
                             f"{target} (floor {FLOORS[floors[target]][0]})")
            if reaches_inside_a_driver(name, target):
                found.append(f"driver internals: {name} imports {target}; import the name "
                             f"from {'.'.join(target.split('.')[:3])} (the driver's door)")
    return found + [f"import cycle: {' <-> '.join(group)}" for group in cycles(graph)]


if __name__ == "__main__":
    problems = breaches(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
    print("\n".join(problems) or "layers: every import goes down a floor or stays on its own")
    sys.exit(1 if problems else 0)
