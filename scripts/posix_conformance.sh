#!/usr/bin/env bash
# POSIX conformance of omx's private zone, measured by pjdfstest (issue 15), next to a native directory and
# libfuse's passthrough_ll, in one run on one filesystem.
#
#   scripts/posix_conformance.sh                     the full suite (238 files, ~8,800 subtests: by hand)
#   scripts/posix_conformance.sh --subset            link, mkfifo, mknod, chown, rename, open
#   scripts/posix_conformance.sh --smoke --only omx --expect tests/posix_expected.txt
#                                                    what CI runs, in about a minute: one file or two per syscall
#                                                    of the subset, plus chmod/12 and utimensat/06 (set-ID bits and
#                                                    UTIME_NOW between uids); fails if a file fails more subtests
#                                                    than expected
#
# Why three places: native (the store's own filesystem) is what POSIX means here; passthrough_ll (libfuse's C
# example, mounted allow_other,default_permissions) is what FUSE itself allows; omx runs in agents/alice/ of a
# workspace mounted --allow-other as root (pjdfstest switches uids, so other uids must reach the mount). The target:
# omx fails no more subtests than passthrough_ll.
#
# Prints failed subtests per place and per test file (a file whose run stopped early counts its missing subtests
# as failed). pjdfstest is built once into build/posix/ from data/pjdfstest-*.tar.gz (or $PJDFSTEST_TARBALL); it needs
# autoconf, automake and gcc (scripts/install.sh --dev), prove (perl), and root.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

tarball=${PJDFSTEST_TARBALL:-$repo/data/pjdfstest-85a8aea.tar.gz}
build="$repo/build/posix"
subset=""
only="native,passthrough_ll,omx"
expect=""
while [ $# -gt 0 ]; do
  case "$1" in
    --subset) subset="link mkfifo mknod chown rename open" ;;
    --smoke) subset="link/00.t link/06.t mkfifo/00.t mknod/00.t mknod/11.t chown/05.t chown/07.t rename/00.t
                     rename/09.t open/00.t open/06.t chmod/12.t utimensat/06.t" ;;
    --only) only="$2"; shift ;;
    --expect) expect="$2"; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: $0 [--subset|--smoke] [--only native,passthrough_ll,omx] [--expect FILE]" >&2; exit 2 ;;
  esac
  shift
done

[ "$(id -u)" = 0 ] || { echo "pjdfstest switches uids: run this as root" >&2; exit 2; }
for tool in prove autoreconf make gcc fusermount3; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: scripts/install.sh --dev" >&2; exit 2; }
done

# -- build pjdfstest once ----------------------------------------------------------------------------------------
suite="$build/pjdfstest"
if [ ! -x "$suite/pjdfstest" ]; then
  [ -f "$tarball" ] || { echo "$tarball is missing (set PJDFSTEST_TARBALL)" >&2; exit 2; }
  echo "==> building pjdfstest in $suite" >&2
  rm -rf "$suite" && mkdir -p "$build"
  tar xzf "$tarball" -C "$build"
  (cd "$suite" && autoreconf -ifs && ./configure && make pjdfstest) >"$build/build.log" 2>&1 ||
    { echo "building pjdfstest failed: see $build/build.log" >&2; exit 1; }
fi
if [ -n "$subset" ]; then
  tests=$(for t in $subset; do echo "$suite/tests/$t"; done)
else
  tests="$suite/tests"
fi

# -- the places under test ---------------------------------------------------------------------------------------
run=$(mktemp -d "$build/run.XXXXXX")
daemons=()
mounts=()
cleanup() {
  cd /
  for m in "${mounts[@]}"; do fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null || true; done
  for p in "${daemons[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$run"
}
trap cleanup EXIT

wait_mounted() {  # a mountpoint answers, with a deadline
  for _ in $(seq 100); do mountpoint -q "$1" && return 0; sleep 0.1; done
  echo "$1 did not mount" >&2; return 1
}

place_dir() {  # sets dir: where pjdfstest runs for place $1 (not in a subshell: it records daemons and mounts)
  case "$1" in
    native) mkdir -p "$run/native" && dir="$run/native" ;;
    passthrough_ll)
      binary=$(.venv/bin/python -c "import sys; sys.path.insert(0, 'scripts'); from pathlib import Path
import bench_fs; print(bench_fs.build_passthrough_ll(Path(sys.argv[1]))[0])" "$build") || return 1
      mkdir -p "$run/pt-src" "$run/pt-mnt"
      "$binary" -f -o "source=$run/pt-src,allow_other,default_permissions" "$run/pt-mnt" >"$run/pt.log" 2>&1 &
      daemons+=($!); mounts+=("$run/pt-mnt")
      wait_mounted "$run/pt-mnt" && dir="$run/pt-mnt" ;;
    omx)
      .venv/bin/omxfs init "$run/ws" --agent alice >/dev/null
      mkdir -p "$run/omx-mnt"
      .venv/bin/omxfs mount "$run/ws" "$run/omx-mnt" --as alice --allow-other --foreground >"$run/omx.log" 2>&1 &
      daemons+=($!); mounts+=("$run/omx-mnt")
      wait_mounted "$run/omx-mnt" && dir="$run/omx-mnt/agents/alice" ;;
    *) echo "unknown place $1 (native, passthrough_ll, omx)" >&2; return 1 ;;
  esac
}

# -- run and count -----------------------------------------------------------------------------------------------
# prove's summary lists each failing file as "<file> (Wstat: W Tests: RAN Failed: F)", then "Parse errors: Bad plan.
# You planned P tests but ran RAN." when the file stopped early: failed = F + (P - RAN).
count_failures() {  # prove output on stdin -> "file failed" lines
  awk -v root="$suite/tests/" '
    /\(Wstat: [0-9]+ Tests: [0-9]+ Failed: [0-9]+\)/ {
      current = $1
      if (index(current, root) == 1) current = substr(current, length(root) + 1)
      match($0, /Failed: [0-9]+/); failed[current] += substr($0, RSTART + 8, RLENGTH - 8) + 0; next
    }
    /You planned [0-9]+ tests but ran [0-9]+/ {
      match($0, /planned [0-9]+/); planned = substr($0, RSTART + 8, RLENGTH - 8) + 0
      match($0, /ran [0-9]+/); ran = substr($0, RSTART + 4, RLENGTH - 4) + 0
      if (planned > ran) failed[current] += planned - ran
    }
    END { for (f in failed) if (failed[f] > 0) print f, failed[f] }' | sort
}

IFS=, read -r -a places <<<"$only"
for place in "${places[@]}"; do
  place_dir "$place"
  echo "==> $place: prove -r in $dir" >&2
  started=$(date +%s)
  # shellcheck disable=SC2086  # tests is a list of paths
  (cd "$dir" && prove --timer -r $tests) >"$run/$place.prove" 2>&1 || true
  count_failures <"$run/$place.prove" >"$build/$place.failed"
  total=$(grep -o 'Tests=[0-9]*' "$run/$place.prove" | tr -dc 0-9 || true)
  echo "    $(($(date +%s) - started)) s, ${total:-?} subtests" >&2
  cp "$run/$place.prove" "$build/$place.prove"
done

# -- the table ---------------------------------------------------------------------------------------------------
echo
printf '%-24s' "failed subtests"; for p in "${places[@]}"; do printf '%16s' "$p"; done; echo
files=$(for p in "${places[@]}"; do cut -d' ' -f1 "$build/$p.failed"; done | sort -u)
for f in $files; do
  printf '%-24s' "$f"
  for p in "${places[@]}"; do printf '%16s' "$(awk -v f="$f" '$1 == f { print $2 }' "$build/$p.failed" | grep . || echo 0)"; done
  echo
done
printf '%-24s' "TOTAL (files)"
for p in "${places[@]}"; do
  printf '%16s' "$(awk '{ s += $2 } END { print s + 0 }' "$build/$p.failed") ($(wc -l <"$build/$p.failed"))"
done
echo

# -- the CI check: nothing that passes now may start failing -----------------------------------------------------
if [ -n "$expect" ]; then
  place=${places[${#places[@]}-1]}
  worse=$(awk 'NR == FNR { if ($0 !~ /^#/ && NF == 2) allowed[$1] = $2; next }
               { if ($2 > allowed[$1] + 0) print $1 ": " $2 " failed, at most " allowed[$1] + 0 " expected" }' \
    "$expect" "$build/$place.failed")
  if [ -n "$worse" ]; then
    echo "$place fails more pjdfstest subtests than $expect allows:" >&2
    echo "$worse" >&2
    exit 1
  fi
  echo "$place: no file fails more subtests than $expect allows" >&2
fi
