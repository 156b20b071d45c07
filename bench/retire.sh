#!/usr/bin/env bash
# retire.sh — runs retire_probe's cases (bench/retire_probe.c): do retirees that disconnect
# finalize and exit while the job goes on, and does mpiexec still end cleanly?
#   bash bench/retire.sh PROBE [MPIEXEC [MPIEXEC OPTIONS...]]
# e.g. bash bench/retire.sh build/bench/retire_probe mpiexec
#      bash bench/retire.sh build-openmpi/bench/retire_probe mpiexec.openmpi --oversubscribe
# Each case runs in a session of its own; after mpiexec ends, the processes left in that session
# are counted (and ended by their PIDs). PROBE_CASES (default "a b c d"), PROBE_TIMEOUT (30 s),
# PROBE_STAY (2 s), PROBE_MERGED=free and PROBE_VERBOSE=1 go to the probe.
set -u
probe=$(realpath "$1")
shift
[ $# -gt 0 ] || set -- mpiexec
for c in ${PROBE_CASES:-a b c d}; do
  case $c in a | d) n=2 ;; *) n=1 ;; esac
  out=$(mktemp)
  t0=$(date +%s.%N)
  setsid "$@" -n $n "$probe" $c >"$out" 2>&1 &
  sid=$!
  rc=
  if ! timeout "${PROBE_TIMEOUT:-30}" tail --pid=$sid -f /dev/null; then
    rc="hung (killed after ${PROBE_TIMEOUT:-30} s)"
    for p in $(ps -e -o pid=,sid= | awk -v s=$sid '$2 == s {print $1}'); do kill -9 "$p"; done
  fi
  wait $sid
  rc=${rc:-$?}
  t1=$(date +%s.%N)
  left=$(ps -e -o pid=,sid= | awk -v s=$sid '$2 == s {print $1}')
  grep "^probe:" "$out" | sort -t"[" -k2 -n | sed 's/^probe: /  /'
  grep -v '^probe:' "$out" | head -5 | sed 's/^/  [mpiexec] /'
  printf 'case %s: mpiexec exit %s after %.2f s, %d process(es) left\n' $c "$rc" \
    "$(echo "$t1 - $t0" | bc)" "$(echo "$left" | grep -c .)"
  for p in $left; do kill -9 "$p" 2>/dev/null; done
  rm -f "$out"
done
