#!/usr/bin/env bash
# split_giveup_leak.sh BUILD [N] — run under with_pcmd.sh. N (100) splits given up in one job leave
# nothing behind (libpcm/leftovers.h): tests/mpi_register with REGISTER_STALL_FILE, whose new rank 1
# of every split waits before PCM_Resume, so that the old world gives each split up when its
# bound (PCM_RECONFIG_TIMEOUT_S=3: 2 s would end the job where one spawn took over 2 s on a busy 2-core machine) nears, with a reduction on the intercommunicator still running
# (an orphan); every new process ends at the verdict. No process is killed: hydra 4.0.2 itself
# dies now and then with a killed process (split_rollback.sh), which 100 kills would meet.
# Each old process writes a debug line per give-up (its orphans, those left after the drain, the
# requests libpcm has open, its VmRSS). Checked: every give-up leaves no orphan and exactly as many
# requests open as before the first (none), some give-ups did orphan a request (the path is the
# one the fix is for), each rank's VmRSS after give-up N exceeds that after give-up 10 by at most
# LEAK_RSS_KB (1024 kB, about 11 kB per give-up), and the job's data is right at the end.
# MPICH only (hydra's -disable-auto-cleanup): SKIPPED elsewhere.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
n=${2:-100}
bound_kb=${LEAK_RSS_KB:-1024}
pcmctl=$build/pcmctl
prog=$build/tests/mpi_register
fail() { echo "split_giveup_leak: FAIL: $*" >&2; exit 1; }
show() { tail -n 40 "$1" | sed 's/^/  | /'; }

version=$("$MPIEXEC" --version 2>&1 || true)
if [[ $version != *HYDRA* ]]; then
  echo "SKIPPED: $MPIEXEC is not MPICH's hydra (the test needs -disable-auto-cleanup)"
  exit 77
fi

job=giveup-$$
out=$PCM_TEST_DIR/job.out
stall=$PCM_TEST_DIR/stall
stop=$PCM_TEST_DIR/stop
: >"$stall"
start=$SECONDS
PCM_JOB=$job PCM_LOG_LEVEL=debug REGISTER_STALL_FILE=$stall REGISTER_STOP_FILE=$stop \
  PCM_RECONFIG_TIMEOUT_S=3 timeout 900 \
  "$MPIEXEC" -disable-auto-cleanup -n 2 "$prog" 100000000 2000 >"$out" 2>&1 &
mpi=$!
"$pcmctl" wait "$job" --iteration 10 --timeout 120 || fail "job did not start: $(show "$out")"
lines() { grep -c "\] split given up: " "$out"; }
for i in $(seq "$n"); do
  # Refused while pcmd still has the last command pending (its report comes with the line).
  end=$((SECONDS + 30))
  until "$pcmctl" split "$job" 0 --into 2 >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || fail "split $i refused for 30 s: $("$pcmctl" status "$job")
$(show "$out")"
    kill -0 $mpi 2>/dev/null || fail "the job ended before split $i: $(show "$out")"
    sleep 0.05
  done
  end=$((SECONDS + 60))
  until [ "$(lines)" -ge $((2 * i)) ]; do
    [ $SECONDS -lt $end ] || fail "split $i was not given up: $("$pcmctl" status "$job")
$(show "$out")"
    kill -0 $mpi 2>/dev/null || fail "the job ended during split $i: $(show "$out")"
    sleep 0.05
  done
  echo >>"$stall"  # the stalled new process goes on, and ends at the verdict
  # The next spawn once the 3 new processes have said they end: in 2 of 3 runs here without this
  # wait (hydra 4.0.2, a busy machine) one spawn, started as the last group was ending, was stuck
  # in MPI_Comm_spawn past the bound, which ends the job (why is not known).
  end=$((SECONDS + 60))
  until [ "$(grep -c 'the split it was spawned for did not happen' "$out")" -ge $((3 * i)) ]; do
    [ $SECONDS -lt $end ] || fail "the new processes of split $i did not end: $(show "$out")"
    sleep 0.05
  done
done
secs=$((SECONDS - start))
touch "$stop"
wait $mpi || fail "the job exited $?: $(show "$out")"
grep -q '^register: ok: 0 reconfigurations, 2 processes, 0 wrong' "$out" ||
  fail "wrong result: $(show "$out")"
"$pcmctl" status "$job" --json | grep -q '"state": "finished"' ||
  fail "pcmd does not show the job finished: $("$pcmctl" status "$job")"
grep -q 'did not finish their part in time' "$out" ||
  fail "no split was given up on its bound: $(show "$out")"

# [rank R] split given up: O orphaned requests, L left after T s; Q libpcm requests open; VmRSS K kB
python3 - "$out" "$n" "$bound_kb" <<'PY' || fail "see above"
import re, sys
out, n, bound = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pat = re.compile(r"\[rank (\d+)\] split given up: (\d+) orphaned requests, (\d+) left after "
                 r"[0-9.]+ s; (-?\d+) libpcm requests open; VmRSS (-?\d+) kB")
per = {}
for line in open(out, errors="replace"):
    m = pat.search(line)
    if m:
        r, orphaned, left, open_, kb = map(int, m.groups())
        per.setdefault(r, []).append((orphaned, left, open_, kb))
ok = True
orphaned_total = 0
for r in sorted(per):
    rows = per[r]
    if len(rows) != n:
        print(f"rank {r}: {len(rows)} give-ups, not {n}"); ok = False; continue
    orphaned_total += sum(x[0] for x in rows)
    bad = [i + 1 for i, x in enumerate(rows) if x[1] != 0 or x[2] != 0]
    if bad:
        print(f"rank {r}: requests left after give-ups {bad[:10]}: "
              f"{[rows[i - 1][1:3] for i in bad[:10]]} (left, open)"); ok = False
    k10, kn = rows[min(9, n - 1)][3], rows[-1][3]
    if k10 < 0:
        print(f"rank {r}: no VmRSS (no /proc)"); ok = False; continue
    grew = kn - k10
    print(f"rank {r}: VmRSS after give-up 10: {k10} kB, after {n}: {kn} kB ({grew:+d} kB; "
          f"bound {bound} kB); requests open after each: {sorted(set(x[2] for x in rows))}; "
          f"orphaned and drained: {sum(x[0] for x in rows)}")
    if grew > bound:
        print(f"rank {r}: VmRSS grew {grew} kB between give-ups 10 and {n}"); ok = False
if sorted(per) != [0, 1]:
    print(f"lines from ranks {sorted(per)}, not 0 and 1"); ok = False
if orphaned_total == 0:
    print("no give-up left a request running: the test does not test the path"); ok = False
sys.exit(0 if ok else 1)
PY
echo "split_giveup_leak: $n splits given up in one job in ${secs} s; the job finished, every element right"
echo "split_giveup_leak: ok"
