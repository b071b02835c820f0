#!/usr/bin/env bash
# Install omx on a Debian/Ubuntu machine: FUSE 3 and its headers (pyfuse3 compiles against them), bubblewrap
# (the sandbox for omx's tools where the kernel has no Landlock), then a Python virtual environment in .venv
# with omx installed in it. Re-running it is safe.
#
#   scripts/install.sh          the product
#   scripts/install.sh --dev    plus the test, lint and benchmark tools
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."  # the checkout, also when scripts/ is reached through a link

extras=""
dev_packages=""
case "${1:-}" in
  --dev) extras="[dev,bench]"; dev_packages="vim nano tmux git sqlite3 sshfs openssh-server openssh-client bindfs rsync autoconf automake libtool chromium redis-server" ;;
  "") ;;
  *) echo "usage: scripts/install.sh [--dev]" >&2; exit 2 ;;
esac

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if command -v apt-get >/dev/null 2>&1; then
  # The tests drive real editors and tools through the mount: vim, nano (under tmux), git, sqlite3; and they put
  # a store on a shared filesystem seen by two clients on this machine: sshfs to a private sshd on 127.0.0.1, bindfs.
  # rsync -aX is one of the copies tested in a private zone; autoconf, automake and libtool build pjdfstest
  # (scripts/posix_conformance.sh). chromium runs the dashboard's browser tests (tests/ui/); redis-server is the
  # metadata engine of the JuiceFS volume the store is tested on (tests/shared_fs/test_juicefs.py).
  echo "==> system packages: fuse3 libfuse3-dev pkg-config python3-venv python3-dev gcc attr bubblewrap $dev_packages" >&2
  as_root apt-get update -qq
  # shellcheck disable=SC2086  # dev_packages is a list of words
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    fuse3 libfuse3-dev pkg-config python3-venv python3-dev gcc attr bubblewrap $dev_packages >/dev/null
elif [ "$(uname)" = Darwin ]; then
  echo "==> macOS: install macFUSE, Python and pkg-config with 'brew bundle' (see Brewfile); the mount is Linux-only today" >&2
else
  echo "==> no apt-get: install FUSE 3 (fuse3, libfuse3-dev), pkg-config and Python 3.11+ yourself" >&2
fi

python=${PYTHON:-python3}
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "omx needs Python 3.11 or newer; $("$python" --version 2>&1) found (set PYTHON=/path/to/python3.11)" >&2
  exit 1
}
echo "==> Python environment in .venv" >&2
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".${extras}"
echo "==> done: .venv/bin/omxfs --help" >&2
