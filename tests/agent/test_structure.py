"""The shape of ``agent/`` (issue 17: by concept, not by seed), checked on the source (AST), so a change that breaks
it fails here. Every import counts, at module level, inside functions and under ``TYPE_CHECKING`` alike: a cycle
hidden in a lazy import is still two packages that cannot be understood, or moved, one without the other.

- ``agent.context`` (seed 003's parts) and ``agent.prompting`` (seed 002's) do not import each other: prompting's
  session uses the context's reversible compression, so the context imports nothing of prompting, nor of the chat
  loop that wires both in.
- Nothing outside ``agent.seed_only`` imports it: its modules are the seed cases the product does not call.
- The packages of ``agent`` depend on each other one way only (chat and plan_run on the parts below them), so no
  import cycle joins two concepts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

AGENT = Path(__file__).resolve().parents[2] / "agent"


def _modules(package: str) -> Iterator[tuple[str, Path]]:
    root = AGENT.parent / package.replace(".", "/")
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(AGENT.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        yield ".".join(parts), path


def _imports(module: str, path: Path) -> set[str]:
    """Every module name ``module`` imports anywhere in its source, relative imports resolved."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join([*parts[: len(parts) - node.level + 1], base]).strip(".")
            found.update(f"{base}.{alias.name}" for alias in node.names)
            found.add(base)
    return found


def _imported_from(package: str, target: str) -> list[str]:
    """``module imports name`` for every import of ``target`` (or a module below it) by a module of ``package``."""
    return [
        f"{module} imports {name}"
        for module, path in _modules(package)
        for name in sorted(_imports(module, path))
        if name == target or name.startswith(target + ".")
    ]


def test_the_context_package_imports_neither_prompting_nor_the_chat_loop() -> None:
    found = _imported_from("agent.context", "agent.prompting") + _imported_from("agent.context", "agent.chat")
    assert not found, "agent.context is below agent.prompting and agent.chat:\n" + "\n".join(found)


def test_context_and_prompting_do_not_import_each_other() -> None:
    both = _imported_from("agent.context", "agent.prompting") and _imported_from("agent.prompting", "agent.context")
    assert not both, "agent.context and agent.prompting import each other (a cycle)"


def test_the_prompting_package_does_not_import_the_chat_loop() -> None:
    found = _imported_from("agent.prompting", "agent.chat")
    assert not found, "agent.chat uses agent.prompting, not the other way:\n" + "\n".join(found)


def test_the_product_calls_no_seed_only_module() -> None:
    found = [
        line
        for package in ("agent", "cli")
        for line in _imported_from(package, "agent.seed_only")
        if not line.startswith("agent.seed_only")
    ]
    assert not found, "agent.seed_only holds what the product does not call; move a module out to wire it in:\n" + (
        "\n".join(found)
    )


def _package_edges() -> dict[str, set[str]]:
    """``agent``'s packages (and top-level modules), each with the others it imports."""
    edges: dict[str, set[str]] = {}
    for module, path in _modules("agent"):
        source = module.split(".")[1] if "." in module else ""
        for name in _imports(module, path):
            parts = name.split(".")
            if source and parts[0] == "agent" and len(parts) > 1 and parts[1] != source:
                edges.setdefault(source, set()).add(parts[1])
    return edges


def test_no_import_cycle_between_the_packages_of_agent() -> None:
    edges = _package_edges()
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        for target in sorted(edges.get(node, ())):
            if target in path:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            else:
                visit(target, [*path, target])

    for start in sorted(edges):
        visit(start, [start])
    assert not cycles, sorted(set(cycles))


def test_the_checks_see_imports() -> None:
    """The checks above pass vacuously if the parser finds nothing: prompting's session must be seen using the
    context's compression, and the chat loop using both."""
    assert _imported_from("agent.prompting", "agent.context.compression")
    assert _imported_from("agent.chat", "agent.prompting") and _imported_from("agent.chat", "agent.context")
    assert {"context", "prompting", "model", "record"} <= _package_edges()["chat"]
