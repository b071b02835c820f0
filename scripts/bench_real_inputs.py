"""The inputs of ``bench_real.py``, made once per run, offline and deterministically, in one plain directory.

- ``tree.tar``: the standard library sources of the interpreter that runs the benchmark (``.py`` files and the data
  the test suite ships, about 2,400 files in 170 directories), without ``__pycache__``, ``site-packages``,
  ``lib-dynload``, ``config-*`` or the wheels bundled with ``ensurepip``; ``--small`` takes only the ``json``,
  ``email`` and ``http`` packages. A real source tree that every machine running this script already has, in name
  order, with the files' own modes and mtimes and owner 0 (``tar --no-same-owner`` extracts it as the caller).
- ``wheels/``: small pure-Python packages ``benchpkgN`` (``__init__`` plus modules), written as wheels with
  ``zipfile`` rather than built: no build backend, no network, byte-identical every run. pip installs them with
  ``--no-index --find-links``.
- ``pip.whl`` (``--small`` only): the pip wheel that ``ensurepip`` installs, so that the small run can make its venv
  ``--without-pip`` and run pip from the wheel, as ``ensurepip`` itself does: installing pip into every venv costs
  seconds and would be most of a smoke test. Absent (no bundled wheel found), the small run installs pip too.
- ``cproj/``: a C project of ``N`` translation units and a ``main.c`` that calls them, with a Makefile: one
  compile a unit, then a link; ``make -j2`` is two compilers at once on the target's files.
"""

from __future__ import annotations

import base64
import ensurepip
import hashlib
import shutil
import sysconfig
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

#: directories of the standard library that are not sources (or not the stdlib's own)
SKIPPED = {"__pycache__", "site-packages", "lib-dynload", "_bundled"}
SMALL_PACKAGES = ("json", "email", "http")
#: a word that ``grep -r`` finds in every tree the benchmark makes, the small one included
GREP_WORD = "import"
WHEEL_DIR = Path("/usr/share/python-wheels")
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold: fixed, so wheels are byte-identical


@dataclass(frozen=True)
class Inputs:
    """Where the inputs are, and what a workload needs to know of them (sizes, for the report)."""

    directory: Path
    tree_files: int
    packages: tuple[str, ...]
    c_units: int
    pip_wheel: Path | None  # pip to run from its wheel, with --small


@dataclass(frozen=True)
class Sizes:
    wheels: int
    modules_per_wheel: int
    c_units: int


FULL = Sizes(wheels=3, modules_per_wheel=20, c_units=60)
SMALL = Sizes(wheels=2, modules_per_wheel=3, c_units=6)


def make_inputs(directory: Path, small: bool) -> Inputs:
    directory.mkdir(parents=True)
    sizes = SMALL if small else FULL
    files = make_tarball(directory / "tree.tar", small)
    packages = tuple(
        make_wheel(directory / "wheels", f"benchpkg{k}", sizes.modules_per_wheel) for k in range(sizes.wheels)
    )
    make_c_project(directory / "cproj", sizes.c_units)
    pip_wheel = next(iter(bundled_pip_wheels()), None) if small else None
    if pip_wheel is not None:
        shutil.copyfile(pip_wheel, directory / "pip.whl")
    return Inputs(directory, files, packages, sizes.c_units, directory / "pip.whl" if pip_wheel else None)


def bundled_pip_wheels() -> list[Path]:
    """Where ``ensurepip`` finds pip: beside it, or where Debian's python3-pip-whl puts it."""
    return sorted([*Path(ensurepip.__file__).parent.glob("_bundled/pip-*.whl"), *WHEEL_DIR.glob("pip-*.whl")])


# -- the source tree --------------------------------------------------------------------------------------------


def source_files(small: bool) -> tuple[Path, list[Path]]:
    """The stdlib directory and its files (relative, sorted): no symlinks, nothing of the skipped directories."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    roots = [stdlib / name for name in SMALL_PACKAGES] if small else [stdlib]
    found = []
    for root in roots:
        for path in root.rglob("*"):
            relative = path.relative_to(stdlib)
            if any(part in SKIPPED or part.startswith("config-") for part in relative.parts):
                continue
            if path.is_file() and not path.is_symlink():
                found.append(relative)
    return stdlib, sorted(found)


def make_tarball(tarball: Path, small: bool) -> int:
    stdlib, files = source_files(small)

    def owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(tarball, "w", format=tarfile.GNU_FORMAT) as tar:
        for relative in files:
            tar.add(stdlib / relative, arcname=str(relative), recursive=False, filter=owned_by_root)
    return len(files)


# -- wheels -----------------------------------------------------------------------------------------------------


def record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def make_wheel(directory: Path, name: str, modules: int) -> str:
    """``directory/NAME-1.0-py3-none-any.whl`` with ``modules`` modules; returns the package's name."""
    directory.mkdir(exist_ok=True)
    info = f"{name}-1.0.dist-info"
    files = {f"{name}/__init__.py": f'"""{name}: a package for bench_real.py."""\n\nVERSION = "1.0"\n'}
    for m in range(modules):
        body = "".join(f"def f{i}(x: int) -> int:\n    return x * {i} + {m}\n\n\n" for i in range(20))
        files[f"{name}/mod{m}.py"] = f'"""Module {m} of {name}."""\n\n\n{body}'
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
    files[f"{info}/WHEEL"] = "Wheel-Version: 1.0\nGenerator: bench_real\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = "".join(f"{path},{record_hash(text.encode())},{len(text.encode())}\n" for path, text in files.items())
    files[f"{info}/RECORD"] = record + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(directory / f"{name}-1.0-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, text in files.items():
            entry = zipfile.ZipInfo(path, ZIP_EPOCH)
            entry.external_attr = 0o644 << 16
            wheel.writestr(entry, text, zipfile.ZIP_DEFLATED)
    return name


# -- the C project ----------------------------------------------------------------------------------------------

MAKEFILE = """\
CFLAGS = -O2 -Wall
SOURCES = $(wildcard src/*.c)
OBJECTS = $(SOURCES:.c=.o)

app: $(OBJECTS)
\t$(CC) -o $@ $^

%.o: %.c include/units.h
\t$(CC) $(CFLAGS) -Iinclude -c -o $@ $<
"""


def make_c_project(directory: Path, units: int) -> None:
    """``units`` files of a few functions each (enough work for the optimiser to notice) and a main that calls them."""
    (directory / "src").mkdir(parents=True)
    (directory / "include").mkdir()
    (directory / "Makefile").write_text(MAKEFILE)
    (directory / "include" / "units.h").write_text("".join(f"long unit{u}(long x);\n" for u in range(units)))
    for u in range(units):
        helpers = "".join(
            f"static long h{i}(long x) {{\n    long s = 0;\n    for (long k = 0; k < x; k++) s += (k ^ {i}) * {u};\n"
            f"    return s;\n}}\n\n"
            for i in range(8)
        )
        calls = " + ".join(f"h{i}(x)" for i in range(8))
        (directory / "src" / f"unit{u}.c").write_text(
            f'#include "units.h"\n\n{helpers}long unit{u}(long x) {{\n    return {calls};\n}}\n'
        )
    calls = "".join(f"    total += unit{u}(argc);\n" for u in range(units))
    (directory / "src" / "main.c").write_text(
        f'#include <stdio.h>\n#include "units.h"\n\nint main(int argc, char **argv) {{\n    (void)argv;\n'
        f'    long total = 0;\n{calls}    printf("%ld\\n", total);\n    return 0;\n}}\n'
    )
