"""The layering the house style asks for, checked on the source (AST), so a change that breaks it fails here.

- ``omxfs/fuse/`` is a view: no call that changes a file or a directory (``os.mkdir``, ``os.write``… any
  ``os.open``, ``open`` for writing), and no store-layout name spelled as a literal (``omxfs.store.layout`` names
  them). The disk and the rules are the store's.
- ``omxfs/store/``, ``omxfs/crdt/`` and ``omxfs/checkpoints/`` (store data, beside the store) import nothing from
  ``omxfs/fuse/``; ``omxfs/checkpoints/`` nothing from ``omxfs/view/`` either (views call it, not the reverse).
- No import cycle between the modules of ``omxfs``, ``agent`` and ``cli`` (imports at module level, outside
  ``TYPE_CHECKING``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from omxfs.store import layout

OMXFS = Path(__file__).resolve().parent.parent / "omxfs"
FUSE = OMXFS / "fuse"

MUTATING_OS = frozenset(
    {
        "mkdir",
        "makedirs",
        "rmdir",
        "removedirs",
        "unlink",
        "remove",
        "rename",
        "renames",
        "replace",
        "link",
        "symlink",
        "chmod",
        "fchmod",
        "lchmod",
        "chown",
        "fchown",
        "lchown",
        "utime",
        "truncate",
        "ftruncate",
        "setxattr",
        "removexattr",
        "mknod",
        "mkfifo",
        "write",
        "pwrite",
        "pwritev",
        "writev",
        "fsync",
        "fdatasync",
        "open",
    }
)
#: (file below omxfs/fuse, function, call) that change something outside the store, each with its reason
EXEMPT = {
    # the daemon tells ``omxfs mount`` (its parent) that it is ready through a pipe the parent made: not the store
    ("mounts.py", "report_ready", "os.write"),
    # the caller's identity is read from /proc/<pid>/ (read-only): the kernel's view of a process, not the store
    ("identity.py", "_open", "os.open"),
    # a dead daemon's guardian aborts its FUSE connection through the kernel's fusectl file: not the store
    ("guardian.py", "fusectl", "os.open"),
    ("guardian.py", "open", "os.open"),
    ("guardian.py", "abort", "os.write"),
}


def _modules(root: Path) -> Iterator[tuple[str, Path]]:
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(OMXFS.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        yield ".".join(parts), path


def _calls(tree: ast.AST) -> Iterator[tuple[str, ast.Call]]:
    """Every call with the name of the function (or method) it is in, ``""`` at module level."""

    def walk(node: ast.AST, where: str) -> Iterator[tuple[str, ast.Call]]:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else where
            if isinstance(child, ast.Call):
                yield where, child
            yield from walk(child, inner)

    yield from walk(tree, "")


def _writes(call: ast.Call) -> str | None:
    """``os.<name>`` for a mutating os call, ``open`` for a builtin open that may write, else None."""
    func = call.func
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "os":
        return f"os.{func.attr}" if func.attr in MUTATING_OS else None
    if isinstance(func, ast.Name) and func.id == "open":
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        if mode is None:
            return None
        if not isinstance(mode, ast.Constant) or not isinstance(mode.value, str) or set(mode.value) & set("wax+"):
            return "open"
    return None


def test_the_fuse_package_changes_nothing_on_disk_itself() -> None:
    found = []
    for _, path in _modules(FUSE):
        for where, call in _calls(ast.parse(path.read_text("utf-8"))):
            name = _writes(call)
            if name is not None and (path.name, where, name) not in EXEMPT:
                found.append(f"{path.relative_to(OMXFS)}:{call.lineno} {where}(): {name}")
    assert not found, "disk changes belong in omxfs/store/:\n" + "\n".join(found)


def test_every_exemption_is_still_needed() -> None:
    used = set()
    for _, path in _modules(FUSE):
        for where, call in _calls(ast.parse(path.read_text("utf-8"))):
            name = _writes(call)
            if name is not None:
                used.add((path.name, where, name))
    assert set(EXEMPT) <= used, sorted(set(EXEMPT) - used)


def _layout_names() -> set[str]:
    names = {v for k, v in vars(layout).items() if k.isupper() and isinstance(v, str)}
    names |= {str(v) for k, v in vars(layout).items() if k.isupper() and isinstance(v, tuple | frozenset) for v in v}
    names |= {str(layout.STATE_DIR), str(layout.CONFIG)}
    return names - {""}


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _is_layout_path(text: str, names: set[str]) -> bool:
    """A literal made only of layout names joined by ``/`` (``".versions"``, ``"collaborative/current/"``), or
    an ``user.omx.`` attribute name."""
    if text.startswith(layout.OMX_XATTRS):
        return True
    parts = [p for p in text.split("/") if p]
    return bool(parts) and all(p in names for p in parts)


def test_the_fuse_package_spells_no_store_layout_name() -> None:
    names = _layout_names()
    found = []
    for _, path in _modules(FUSE):
        tree = ast.parse(path.read_text("utf-8"))
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or id(node) in docstrings:
                continue
            value = node.value.decode("utf-8", "replace") if isinstance(node.value, bytes) else node.value
            if isinstance(value, str) and _is_layout_path(value, names):
                found.append(f"{path.relative_to(OMXFS)}:{node.lineno} {value!r}")
    assert not found, "import these from omxfs.store.layout:\n" + "\n".join(found)


def _imports(path: Path, module: str, known: set[str]) -> set[str]:
    """The ``known`` modules ``module`` imports when it is loaded (not in functions, not under ``TYPE_CHECKING``)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                test = node.test
                if not (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name in known)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    found.add(target if target in known else base)

    visit(ast.parse(path.read_text("utf-8")).body)
    return {m for m in found if m in known and m != module}


def _graph(*roots: Path) -> dict[str, set[str]]:
    """The load-time imports between the modules under ``roots`` (default: omxfs)."""
    modules = {name: path for root in roots or (OMXFS,) for name, path in _modules(root)}
    known = set(modules)
    return {name: _imports(path, name, known) for name, path in modules.items()}


def test_the_store_and_the_crdts_know_nothing_of_the_mount() -> None:
    bad = [
        f"{module} imports {target}"
        for module, targets in _graph().items()
        if module.startswith(("omxfs.store", "omxfs.crdt", "omxfs.checkpoints"))
        for target in targets
        if target.startswith("omxfs.fuse")
    ]
    assert not bad, bad


def test_the_checkpoints_know_nothing_of_views_or_the_cli() -> None:
    graph = _graph(OMXFS, OMXFS.parent / "cli")
    assert any(m.startswith("omxfs.checkpoints") for m in graph)  # the package is there to be checked
    bad = [
        f"{module} imports {target}"
        for module, targets in graph.items()
        if module.startswith("omxfs.checkpoints")
        for target in targets
        if target.startswith(("omxfs.view", "omxfs.fuse", "cli"))
    ]
    assert not bad, bad


def test_no_import_cycles() -> None:
    graph = _graph(OMXFS, OMXFS.parent / "agent", OMXFS.parent / "cli")  # issue 17: agent/ had one (context, prompting)
    packages = {m for m in graph if (OMXFS.parent / m.replace(".", "/") / "__init__.py").exists()}
    # A package's __init__ re-exporting its modules is how Python packages work, not a cycle between concepts.
    edges = {m: {t for t in targets if t not in packages} for m, targets in graph.items() if m not in packages}
    cycles = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in state:
                visit(target)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert not cycles, cycles
