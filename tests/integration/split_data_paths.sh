#!/usr/bin/env bash
# split_data_paths.sh BUILD — run under with_pcmd.sh. A split's new processes read the old
# buffers directly (process_vm_readv) when they share the old processes' host, and receive them
# over MPI otherwise (or with PCM_SPLIT_CMA=0); a merge's processes move the data between their
# buffers directly (reads and process_vm_writev) in the same conditions. Both paths: a split
# 1 -> 2, a split 2 -> 3 and a merge 3 -> 1 of a cyclic map (many short runs per peer), every
# element checked after each; the debug log shows which path each process took. Both again with 48 MiB, whose new buffers ask for huge
# pages. The job runs 2000 iterations of >= 1 ms, far longer than its two splits take, so that
# it is still running for the second.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
out=
# On failure, the job's own output (its debug log) follows the reason.
fail() {
  echo "split_data_paths: FAIL: $*" >&2
  [ -n "$out" ] && [ -f "$out" ] && { echo "--- job output (last 60 lines):" >&2; tail -n 60 "$out" >&2; }
  exit 1
}

# run NAME CMA EXPECTED-PATH [UNITS UNIT-LEN]: a job on 1 process, grown to 2, then to 3 (a
# second split from a world of 2), then merged back to 1; every new process, and every process of
# the merge, must report EXPECTED-PATH.
run() {
  local name=$1 cma=$2 expected=$3 units=${4:-3001} len=${5:-7} job=paths-$1-$$
  out=$PCM_TEST_DIR/$1.out
  PCM_JOB=$job PCM_SPLIT_CMA=$cma PCM_LOG_LEVEL=debug timeout 300 "$MPIEXEC" -n 1 \
    "$build/tests/mpi_reshape" "$units" "$len" cyclic 2000 1000 >"$out" 2>&1 &
  local mpi=$! all took
  "$pcmctl" wait "$job" --iteration 10 --timeout 120 >/dev/null || fail "$name: job did not start"
  "$pcmctl" resize "$job" --to 2 >/dev/null || fail "$name: resize to 2 refused"
  "$pcmctl" wait "$job" --reconfigurations 1 --timeout 120 >/dev/null || fail "$name: split 1 -> 2"
  "$pcmctl" resize "$job" --to 3 >/dev/null || fail "$name: resize to 3 refused"
  "$pcmctl" wait "$job" --reconfigurations 2 --timeout 120 >/dev/null || fail "$name: split 2 -> 3"
  "$pcmctl" resize "$job" --to 1 >/dev/null || fail "$name: resize to 1 refused"
  "$pcmctl" wait "$job" --reconfigurations 3 --timeout 120 >/dev/null || fail "$name: merge 3 -> 1"
  wait $mpi || fail "$name: the job failed: $(cat "$out")"
  grep -q '^reshape: ok: 3 reconfigurations, 1 processes, 0 wrong' "$out" ||
    fail "$name: wrong result: $(cat "$out")"
  # The merge 3 -> 1: the survivor and both leavers move data (or all fall back together).
  all=$(grep -c 'merge: direct moves' "$out")
  took=$(grep -c "merge: direct moves .*($expected;" "$out")
  [ "$all" -eq 3 ] && [ "$took" -eq 3 ] ||
    fail "$name: $took of $all processes (expected 3 of 3) report '$expected' for the merge: $(grep 'merge:' "$out")"
  all=$(grep -c 'split: direct read' "$out")
  took=$(grep -c "split: direct read .*($expected)" "$out")
  [ "$all" -eq 5 ] && [ "$took" -eq 5 ] ||
    fail "$name: $took of $all new processes (expected 5 of 5) report '$expected': $(grep 'split:' "$out")"
  echo "$name: 2 splits, 5 new processes, and a merge 3 -> 1, all '$expected', every element correct"
}
run direct 1 done
run mpi 0 "not possible"
# 48 MiB: the new buffers (24 and 16 MiB) are large enough to ask for transparent huge pages
# (whether the kernel grants them is its affair; the data must be right either way).
run direct-large 1 done 3001 2048
grep -q 'new buffer of .* bytes: huge pages' "$PCM_TEST_DIR/direct-large.out" ||
  fail "direct-large: no new buffer asked for huge pages"
run mpi-large 0 "not possible" 3001 2048
echo "split_data_paths: ok"
