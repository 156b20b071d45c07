#!/usr/bin/env bash
# user_mistakes.sh BUILD — run under with_pcmd.sh. Mistakes a user makes (issue 13): a process
# retired by a merge that calls MPI_Finalize instead of PCM_Exit, or returns from main, must wait
# for the job's end without spinning (under 25 % of one core while it waits) and the job must end
# cleanly; a restart with no saved version must say so (not "no data under that rank and key").
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
prog=$build/tests/mpi_retired_exit
fail() { echo "user_mistakes: FAIL: $*" >&2; exit 1; }

for mode in finalize return; do
  job=mistake-$mode-$$
  PCM_JOB=$job timeout 120 "$MPIEXEC" -n 2 "$prog" "$mode" >"$PCM_TEST_DIR/$mode.out" 2>&1 </dev/null &
  mpi=$!
  "$pcmctl" wait "$job" --iteration 5 --timeout 60 >/dev/null ||
    fail "$mode: the job never ran: $(cat "$PCM_TEST_DIR/$mode.out")"
  "$pcmctl" resize "$job" --to 1 >/dev/null || fail "$mode: resize refused"
  wait $mpi
  rc=$?
  out=$(cat "$PCM_TEST_DIR/$mode.out")
  [ $rc -eq 0 ] || fail "$mode: the job ended with $rc: $out"
  grep -q "^survivor: done" <<<"$out" || fail "$mode: the survivor did not finish: $out"
  line=$(echo "$out" | grep "^retired: .* wall" | head -1)
  [ -n "$line" ] || fail "$mode: the retired process did not report: $out"
  echo "user_mistakes: $mode: $line"
  python3 - "$line" <<'PY' || fail "$mode: the retired process spun: $line"
import re, sys
wall, cpu = map(float, re.search(r"after ([\d.]+) s wall, ([\d.]+) s cpu", sys.argv[1]).groups())
sys.exit(0 if wall > 1.0 and cpu / wall < 0.25 else 1)
PY
  grep -q "without PCM_Exit\|instead of PCM_Exit\|call PCM_Exit" <<<"$out" ||
    fail "$mode: no warning told the user what to call"
done

# A restart of a job that never committed: the message names the missing version.
PCM_RESTART=1 PCM_JOB=never-saved-$$ timeout 60 "$MPIEXEC" -n 1 "$prog" finalize \
  >"$PCM_TEST_DIR/restart.out" 2>&1 </dev/null && fail "a restart without a version started"
out=$(grep "^start failed" "$PCM_TEST_DIR/restart.out")
echo "user_mistakes: restart without a version: $out"
grep -qi "version" <<<"$out" || fail "the restart's message does not mention a version: $out"
grep -q "no data stored under that rank and key" <<<"$out" &&
  fail "the restart's message still says 'no data stored under that rank and key': $out"
echo "user_mistakes: ok"
