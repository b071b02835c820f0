"""The files of a workspace folder as a python step's code is given them: each file's path, size and date.

Asked for the names, sizes or dates of a folder's files, code that lists the folder itself is one more thing a small
model can get wrong; given them as data it only filters, sorts or counts. omx lists the folder itself, recursively,
files only (no link followed, none listed), each as ``{"path": ..., "name": ..., "size": ..., "modified": ...}``:
its path from the workspace's root (as the code opens it), its own name, its size in bytes and its modification date
(``YYYY-MM-DD``, local time), folder by folder and by name, at most ``MOST_FILES``. Which of them a task means,
where it names them by extension ("every .md file", "*.txt"), ``extensions`` reads from its words.
"""

from __future__ import annotations

import os
import re
import stat
from datetime import date
from pathlib import Path

__all__ = ["MOST_FILES", "FolderFiles", "extensions", "files_in", "folder_files"]

#: the most files of a folder given to code (enough for a person's folder, short enough for a small model's request)
MOST_FILES = 100

#: a folder's files, each a dict of its path, size and date, and whether there were more than ``MOST_FILES``
FolderFiles = tuple[list[dict[str, str | int]], bool]

_EXT = r"\.[A-Za-z0-9]{1,8}"
#: a pattern of names by extension: ``*.md``, ``notes/*.txt``
_GLOB = re.compile(rf"\*({_EXT})(?![\w.])")
#: extensions before "file(s)": ``.txt files``, ``every .py file``, ``the .md and .txt files``
_BEFORE_FILES = re.compile(rf"(?<![\w.*/])({_EXT}(?:\s*(?:,|\band\b|\bor\b)\s*{_EXT})*)\s+files?\b", re.IGNORECASE)
#: the extensions people name a kind of file by, as a word ("the PDF files", "all PDFs", "log files")
_KNOWN_EXTENSIONS = frozenset(
    {"pdf", "png", "jpg", "jpeg", "gif", "svg", "webp", "bmp", "tif", "tiff", "heic", "csv", "tsv", "json", "yaml",
     "yml", "xml", "html", "htm", "txt", "md", "rst", "log", "py", "js", "ts", "sh", "c", "cpp", "java", "go", "rs",
     "rb", "php", "sql", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "ods", "zip", "tar", "gz", "tgz", "mp3",
     "mp4", "wav", "flac", "mov", "avi", "mkv", "ini", "toml", "cfg", "conf", "bak", "tmp"}
)  # fmt: skip
#: the names of formats and languages spelled out, and their extensions
_FORMAT_NAMES = {"python": (".py",), "markdown": (".md",), "javascript": (".js",), "typescript": (".ts",),
                 "yaml": (".yaml", ".yml"), "yml": (".yaml", ".yml"), "jpeg": (".jpg", ".jpeg"),
                 "jpg": (".jpg", ".jpeg"), "tiff": (".tif", ".tiff"), "html": (".html", ".htm")}  # fmt: skip
_FORMAT = r"[A-Za-z][A-Za-z0-9]{0,9}"
#: formats named as words before a kind of file, or as a plural: "the PDF files", "CSV and JSON files", "all PDFs",
#: "Python scripts", "JPEG images"
_FORMAT_WORDS = re.compile(
    rf"(?<![\w./*-])({_FORMAT}(?:\s*(?:,|\band\b|\bor\b)\s*{_FORMAT})*)"
    r"(?:\s+(?:files?|images?|documents?|scripts?|sources?|photos?|pictures?)\b|(?<=[A-Z])s\b)"
)
#: images named as such, not by a format ("the pictures", "some photos", "images"; not the folder ``images/``)
_IMAGE_WORDS = re.compile(r"(?<![\w/.-])(?:images?|pictures?|photos?|photographs?|pics)(?![\w/.-])", re.IGNORECASE)
_IMAGES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".tif", ".tiff", ".heic")


def folder_files(workspace: Path, folder: str) -> FolderFiles | None:
    """The files under ``folder`` (see the module); None where ``folder`` is no directory of the workspace reached
    through no symlink (missing, a file, a link, outside the workspace)."""
    root = workspace.resolve()
    name = os.path.normpath(folder)
    if os.path.isabs(name) or name == ".." or name.startswith("../"):
        return None
    path = root / name
    if not path.is_dir() or Path(os.path.realpath(path)) != path or not path.is_relative_to(root):
        return None
    files: list[dict[str, str | int]] = []
    for where, dirs, names in os.walk(path):  # links to folders are not walked into
        dirs.sort()
        for entry in sorted(names):
            full = Path(where) / entry
            try:
                info = os.lstat(full)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue
            if len(files) == MOST_FILES:
                return files, True
            modified = date.fromtimestamp(info.st_mtime).isoformat()
            path_from_root = full.relative_to(root).as_posix()
            files.append({"path": path_from_root, "name": entry, "size": info.st_size, "modified": modified})
    return files, False


def files_in(root: Path, folder: str) -> list[str]:
    """The names of the files right in ``folder`` of ``root`` (no link, no directory), sorted; none where it cannot
    be listed."""
    try:
        return sorted(entry.name for entry in os.scandir(root / folder) if entry.is_file(follow_symlinks=False))
    except OSError:
        return []


def extensions(task: str) -> frozenset[str]:
    """The file extensions the task's pattern of files names, lower case with their dot (``{".md"}`` for "every
    .md file" or "*.md", ``{".pdf"}`` for "the PDF files" or "all PDFs", ``{".py"}`` for "Python files", every
    image format's for "the pictures" or "photos", where no format names them: "PNG images" are ``{".png"}``);
    empty where it names none (every file)."""
    found = {match.group(1) for match in _GLOB.finditer(task)}
    for match in _BEFORE_FILES.finditer(task):
        found |= set(re.findall(_EXT, match.group(1)))
    formats: list[tuple[int, int]] = []  # where a format is named: its images are of that format
    for match in _FORMAT_WORDS.finditer(task):
        for word in re.findall(_FORMAT, match.group(1)):
            name = word.lower()
            if name in _FORMAT_NAMES or name in _KNOWN_EXTENSIONS:
                found |= set(_FORMAT_NAMES.get(name, (f".{name}",)))
                formats.append(match.span())
    if any(not any(start <= m.start() < end for start, end in formats) for m in _IMAGE_WORDS.finditer(task)):
        found |= set(_IMAGES)
    return frozenset(ext.lower() for ext in found)
