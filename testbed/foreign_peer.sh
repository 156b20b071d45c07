#!/usr/bin/env bash
# foreign_peer.sh — shows, with a plain MPI program and no PCM, how a process of one job
# delivers a message into another job under MPICH's ch3:nemesis:tcp (issue 38 item 5: the
# "Invalid root (value given was -540086711)" of MPI_PCM_Init right after a host came back).
#
# MPICH's TCP connection set-up takes a peer's word for who it is: a process that connects to a
# rank of its own job sends only its rank, no job id (socksm.c: pg_id_len 0 means "same process
# group"), and the accepting process files the connection as that rank of *its* job. So:
#   1. job A runs on 2 processes; its rank 1 listens on port P, then closes it and waits: its host
#      is gone and nobody was told (foreign_peer.c; a power-off, as the others see it);
#   2. job B starts, and its rank 1 gets port P (forced here with MPIR_CVAR_CH3_PORT_RANGE; on the
#      namespace hosts a revived host's new process takes whatever port the kernel gives);
#   3. job A's rank 0, a survivor, sends to its rank 1: it connects to P, says "rank 0";
#   4. job B's rank 1 receives that message as one from its own rank 0, which sent nothing.
# Both jobs use TCP between their processes (MPIR_CVAR_NOLOCAL=1, as between hosts).
#
# MPICC and MPIEXEC name the MPI (default: scripts/.env's, else the PATH's). Prints what job B's
# rank 1 received. Exit status 0 when the foreign message arrived (the
# behaviour this documents), 1 when it did not, 77 (SKIPPED) when the MPI is not MPICH's ch3.
# Every process it starts is ended by its PID.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${MPICC:-}" ] && [ -f "$ROOT/scripts/.env" ]; then
  # shellcheck source=/dev/null
  source "$ROOT/scripts/.env"
fi
MPICC=${MPICC:-mpicc}
MPIEXEC=${MPIEXEC:-mpiexec}
version=$(dirname "$(command -v "$MPICC")")/mpichversion
if [ ! -x "$version" ] || ! "$version" | grep -q "ch3:nemesis"; then
  echo "SKIPPED: needs MPICH with ch3:nemesis ($MPICC has no mpichversion saying so)"
  exit 77
fi
tmp=$(mktemp -d)
pids=()
stop_all() {
  local f p
  for f in "$tmp"/old0.pid "$tmp"/old1.pid "$tmp"/new0.pid "$tmp"/new1.listening; do
    [ -s "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do kill -KILL -- "-$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap stop_all EXIT
wait_for() {  # wait_for FILE WHAT: up to 60 s
  local i
  for ((i = 0; i < 600; i++)); do
    [ -s "$1" ] && return 0
    sleep 0.1
  done
  echo "foreign_peer: $2 did not happen within 60 s" >&2
  exit 1
}

"$MPICC" -O1 -o "$tmp/foreign_peer" "$ROOT/testbed/foreign_peer.c"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
export MPIR_CVAR_NOLOCAL=1

setsid "$MPIEXEC" -n 1 "$tmp/foreign_peer" old "$tmp" : \
  -n 1 -env MPIR_CVAR_CH3_PORT_RANGE "$port:$port" "$tmp/foreign_peer" old "$tmp" \
  >"$tmp/a.out" 2>&1 &
pids+=($!)
wait_for "$tmp/old1.pid" "job A's start"
wait_for "$tmp/old0.pid" "job A's start"
old1=$(cat "$tmp/old1.pid")
old0=$(cat "$tmp/old0.pid")
echo "job A: rank 0 is pid $old0; rank 1 (pid $old1) has closed its port $port and waits"

setsid "$MPIEXEC" -n 1 "$tmp/foreign_peer" new "$tmp" : \
  -n 1 -env MPIR_CVAR_CH3_PORT_RANGE "$port:$port" "$tmp/foreign_peer" new "$tmp" \
  >"$tmp/b.out" 2>&1 &
pids+=($!)
wait_for "$tmp/new1.listening" "job B's start"
wait_for "$tmp/new0.pid" "job B's start"
echo "job B: rank 0 is pid $(cat "$tmp/new0.pid") and sends nothing; rank 1 (pid $(cat "$tmp/new1.listening")) listens on port $port"
: >"$tmp/go"
wait_for "$tmp/done" "job B's receive"
echo "job B: rank 1 $(cat "$tmp/done")"
if grep -qx "received 0x50434d21 from pid $old0" "$tmp/done"; then
  echo "foreign_peer: job A's rank 0 (pid $old0) delivered a message into job B, taken as job B's rank 0's"
  exit 0
fi
echo "foreign_peer: no message of job A reached job B"
exit 1
