#!/usr/bin/env bash
# parked_cap.sh BUILD — run under with_pcmd.sh. A job that uses the calls of the paper's Table 1
# (mpi_reshape) with PCM_MAX_PARKED=1: its first migration parks the mover; the second would park
# a second process, so libpcm refuses it (such a job cannot be respawned instead) and pcmctl shows
# why; the job goes on; a growing resize lets the parked process leave, after which a migration is
# carried out again; the data is right at the end.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
fail() { echo "parked_cap: FAIL: $*" >&2; cat "$PCM_TEST_DIR/job.out" >&2; exit 1; }

job=cap-$$
PCM_JOB=$job PCM_MAX_PARKED=1 RESHAPE_STOP_FILE=$PCM_TEST_DIR/stop timeout 300 "$MPIEXEC" -n 2 \
  "$build/tests/mpi_reshape" 40 4 block 100000000 1000 >"$PCM_TEST_DIR/job.out" 2>&1 &
mpi=$!
"$pcmctl" wait "$job" --iteration 10 --timeout 120 || fail "job did not start"
"$pcmctl" migrate "$job" 0 || fail "migration refused by pcmd"
"$pcmctl" wait "$job" --reconfigurations 1 --timeout 60 || fail "the first migration did not complete"
"$pcmctl" migrate "$job" 1 || fail "second migration refused by pcmd"
end=$((SECONDS + 60))
until "$pcmctl" status "$job" --json | grep -q '"pending": null'; do
  [ $SECONDS -lt $end ] || fail "the second migration is still pending"
  sleep 0.1
done
"$pcmctl" status "$job" --json | grep -q 'refused: it would park 2 processes, over the cap of 1' ||
  fail "pcmctl does not say why the migration was refused: $("$pcmctl" status "$job")"
"$pcmctl" status "$job" --json | grep -q '"reconfigurations": 1' || fail "the refused migration ran"
echo "refused as expected: $("$pcmctl" status "$job" --json | grep -o 'migrate of rank 1[^"]*refused[^"]*')"
"$pcmctl" resize "$job" --to 3 || fail "resize refused by pcmd"
"$pcmctl" wait "$job" --reconfigurations 2 --timeout 60 || fail "the resize did not complete"
"$pcmctl" migrate "$job" 2 || fail "migration after the resize refused by pcmd"
"$pcmctl" wait "$job" --reconfigurations 3 --timeout 60 || fail "migration after the resize did not complete"
touch "$PCM_TEST_DIR/stop"
wait $mpi || fail "the job failed"
grep -q '^reshape: ok: 3 reconfigurations, 3 processes, 0 wrong' "$PCM_TEST_DIR/job.out" ||
  fail "wrong result"
echo "parked_cap: ok"
