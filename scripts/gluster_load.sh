#!/usr/bin/env bash
# The load test on GlusterFS, outside CI: one store on a one-brick volume mounted twice with the FUSE client, one
# omxfs daemon per mount (scripts/bench_load.py --daemons 2 --store-views MNT0/ws MNT1/ws), checked through a
# third mount, as two machines sharing a volume would run it. Everything is private and on 127.0.0.1: a glusterd
# with its own volfile, working and run directories in a temporary directory (only the brick's socket and logs go
# where glusterfs puts them: /var/run/gluster, /var/log/glusterfs). Installs glusterfs-server and glusterfs-client
# if missing. Prints bench_load's JSON line on stdout, then `omxfs fsck` of the store (findings by kind) on
# stderr; exits with bench_load's status. Tears everything down, also on failure. Needs root.
#
#   scripts/gluster_load.sh [SECONDS] [bench_load options...]     default 30 s; KEEP=1 keeps the directory
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-30}
shift || true
[ "$(id -u)" = 0 ] || { echo "gluster_load.sh: glusterd and its mounts need root" >&2; exit 2; }
if ! command -v glusterd >/dev/null 2>&1 || ! command -v glusterfs >/dev/null 2>&1; then
  echo "==> system packages: glusterfs-server glusterfs-client" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq glusterfs-server glusterfs-client >/dev/null
fi
if ss -ltn | grep -q '127.0.0.1:24007 \|\*:24007 \|0.0.0.0:24007 '; then
  echo "gluster_load.sh: something already listens on port 24007 (another glusterd?): stop it first" >&2
  exit 2
fi

work=$(mktemp -d /tmp/omx-gluster-XXXXXX)
vol=omx$$
mkdir -p "$work"/{wd,run,log,brick,mnt0,mnt1,check}
cli=(gluster --mode=script --glusterd-sock="$work/run/glusterd.socket" --log-file="$work/log/cli.log")

# shellcheck disable=SC2317  # both are called from the EXIT trap
kill_pidfile() { if [ -s "$1" ]; then kill -9 "$(cat "$1")" 2>/dev/null || true; fi; }
# shellcheck disable=SC2317
cleanup() {
  status=$?
  trap - EXIT INT TERM
  for client in mnt0 mnt1 check; do
    umount -l "$work/$client" 2>/dev/null || true  # also a stale mount, which mountpoint(1) cannot tell
    kill_pidfile "$work/run/$client.pid"
  done
  if [ -S "$work/run/glusterd.socket" ]; then
    timeout 60 "${cli[@]}" volume stop "$vol" force >/dev/null 2>&1 || true
  fi
  for pidfile in "$work"/run/vols/"$vol"/*.pid; do kill_pidfile "$pidfile"; done
  if [ -s "$work/run/glusterd.pid" ]; then
    kill "$(cat "$work/run/glusterd.pid")" 2>/dev/null || true
  fi
  if [ -n "${glusterd_pid:-}" ]; then
    kill "$glusterd_pid" 2>/dev/null || true
    wait "$glusterd_pid" 2>/dev/null || true
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "kept $work" >&2; else rm -rf "$work"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

cat >"$work/glusterd.vol" <<EOF
volume management
    type mgmt/glusterd
    option working-directory $work/wd
    option run-directory $work/run
    option glusterd-sockfile $work/run/glusterd.socket
    option transport-type socket
    option transport.address-family inet
    option transport.socket.bind-address 127.0.0.1
    option transport.socket.listen-port 24007
    option ping-timeout 0
    option event-threads 1
end-volume
EOF

wait_for() {  # wait_for WHAT COMMAND...: poll for 30 s
  local what=$1; shift
  for _ in $(seq 300); do "$@" && return 0; sleep 0.1; done
  echo "gluster_load.sh: timed out waiting for $what" >&2
  return 1
}

echo "==> glusterd on 127.0.0.1:24007, state in $work" >&2
glusterd -N -f "$work/glusterd.vol" -p "$work/run/glusterd.pid" -l "$work/log/glusterd.log" &
glusterd_pid=$!
wait_for "glusterd's socket" test -S "$work/run/glusterd.socket" || { tail -20 "$work/log/glusterd.log" >&2; exit 1; }
# The CLI refuses localhost and 127.0.0.1 as a brick's host; 127.1 is the same address. The brick is on the root
# filesystem, which glusterd wants confirmed with force.
"${cli[@]}" volume create "$vol" "127.1:$work/brick" force >&2
"${cli[@]}" volume start "$vol" >&2
# One client per daemon, and a third that only creates the store and checks it afterwards: its caches hold nothing
# stale (a client that served a daemon answers ESTALE for names the other client replaced).
for client in mnt0 mnt1 check; do
  glusterfs --volfile-server=127.1 --volfile-id="$vol" -p "$work/run/$client.pid" -l "$work/log/$client.log" \
    "$work/$client"
  wait_for "the $client mount" mountpoint -q "$work/$client"
done

echo "==> a store on the volume, bench_load for ${seconds}s with one daemon per mount" >&2
.venv/bin/omxfs init "$work/check/ws" --agent agent-0 --agent agent-1 --agent agent-2 --agent agent-3 >&2
set +e
.venv/bin/python scripts/bench_load.py --seconds "$seconds" --daemons 2 --workdir "$work" \
  --store-views "$work/mnt0/ws" "$work/mnt1/ws" --check-store "$work/check/ws" "$@"
result=$?
set -e
echo "==> omxfs fsck of the store (through the checking client)" >&2
.venv/bin/omxfs fsck "$work/check/ws" >"$work/fsck.txt" || true
awk 'NF > 2 && $1 != "checked" {print $1, $2}' "$work/fsck.txt" | sort | uniq -c >&2
tail -1 "$work/fsck.txt" >&2
exit "$result"
