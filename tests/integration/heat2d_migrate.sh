#!/usr/bin/env bash
# heat2d_migrate.sh BUILD NP "RANK..." [HEAT2D ARGS...] — run under with_pcmd.sh. Runs the plain
# heat2d, then heat2d_pcm on NP processes; while it runs, migrates each listed rank in turn through
# pcmctl (waiting for each to finish before the next). Checks: exit 0, the plain run's checksum,
# one reconfiguration per migration, and that every retired process used almost no CPU.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1 np=$2 ranks=$3
shift 3
args=("$@")
pcmctl=$build/pcmctl
job=heat2d-test-$$
out=$PCM_TEST_DIR/pcm.out
fail() { echo "heat2d_migrate: FAIL: $*" >&2; [ -f "$out" ] && sed 's/^/  | /' "$out" >&2; exit 1; }

plain=$(timeout 300 "$MPIEXEC" -n "$np" "$build/examples/heat2d/heat2d_plain" "${args[@]}" |
        awk '/^checksum/ {print $2}')
[ -n "$plain" ] || fail "the plain run printed no checksum"

PCM_JOB=$job timeout 300 "$MPIEXEC" -n "$np" "$build/examples/heat2d/heat2d_pcm" "${args[@]}" \
  >"$out" 2>&1 </dev/null &
mpi=$!

field() {  # field NAME: a field of this job in `pcmctl status --json`
  "$pcmctl" status "$job" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['jobs'][0]['$1'])"
}

done_count=0
for r in $ranks; do
  "$pcmctl" wait "$job" --iteration 20 --timeout 120 || fail "job $job did not get going"
  "$pcmctl" migrate "$job" "$r" || fail "pcmctl migrate $job $r was refused"
  done_count=$((done_count + 1))
  "$pcmctl" wait "$job" --reconfigurations $done_count --timeout 120 ||
    fail "migration $done_count (rank $r) did not complete"
done
wait $mpi
rc=$?
[ $rc -eq 0 ] || fail "heat2d_pcm exited with $rc"
got=$(awk '/^checksum/ {print $2}' "$out")
[ "$got" = "$plain" ] || fail "checksum $got differs from the plain run's $plain"
n=$(awk '/^reconfigurations/ {print $2}' "$out")
[ "$n" = "$done_count" ] || fail "heat2d reports $n reconfigurations, expected $done_count"
[ "$(field state)" = finished ] || fail "pcmd does not show the job finished"
# Each retired process prints: heat2d: retired parked S s cpu C s
retired=$(grep -c '^heat2d: retired' "$out")
[ "$retired" -eq "$done_count" ] || fail "$retired retired processes reported, expected $done_count"
{ grep '^heat2d: retired' "$out" || true; } | awk '{ if ($4 < 0.5 || $7 / $4 > 0.02) bad = 1 }
  END { exit bad + 0 }' || fail "a retired process used more than 2% CPU while parked"
echo "heat2d_migrate: ok: np $np, migrated ranks [$ranks], checksum $got"
grep -E '^heat2d: (retired|migration)' "$out" || true
