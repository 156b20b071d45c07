#!/usr/bin/env bash
# checkpoint_mtbf.sh BUILD — run under with_pcmd.sh. heat2d_pcm (no checkpoints of its own) with
# PCM_CHECKPOINT_MTBF=2: PCM_Adapt writes versions by itself, the first at once, then at Daly's
# interval for the measured cost, which pcmctl status reports (checked against the formula);
# no two versions closer than the interval; killed with SIGKILL mid-run, the job restarts from
# the newest version (on another process count) with the plain run's checksum.
set -uo pipefail
MPIEXEC=${MPIEXEC:-mpiexec}
build=$1
pcmctl=$build/pcmctl
heat=$build/examples/heat2d
job=mtbf-$$
fail() { echo "checkpoint_mtbf: FAIL: $*" >&2; exit 1; }
show() { sed 's/^/  | /' "$1"; }
args=(--nx 64 --ny 48 --iters 3000)
out=$PCM_TEST_DIR/run.out

plain=$(timeout 300 "$MPIEXEC" -n 2 "$heat/heat2d_plain" "${args[@]}" | awk '/^checksum/ {print $2}')
[ -n "$plain" ] || fail "the plain run printed no checksum"

PCM_CHECKPOINT_MTBF=2 PCM_LOG_LEVEL=info PCM_JOB=$job setsid "$MPIEXEC" -n 2 \
  "$heat/heat2d_pcm" "${args[@]}" --throttle-us 2000 >"$out" 2>&1 </dev/null &
mpi=$!
# Until the job has written 4 versions by itself (60 s at most).
for ((i = 0; i < 600; i++)); do
  [ "$(grep -c 'scheduled checkpoint (PCM_CHECKPOINT_MTBF=2): version of iteration' "$out")" -ge 4 ] && break
  kill -0 "$mpi" 2>/dev/null || fail "the job ended: $(show "$out")"
  sleep 0.1
done
"$pcmctl" status "$job" --json >"$PCM_TEST_DIR/status.json" || fail "pcmctl status"
kill -9 -- -"$mpi"
wait "$mpi" 2>/dev/null
# (Open MPI's ranks are not in mpirun's process group: they may still write a version before
# they notice, so the restart resumes from that one or a newer one.)
"$pcmctl" wait "$job" --ended --timeout 30 >/dev/null || fail "pcmd did not notice that the job died"
grep -q '^checksum' "$out" && fail "the job finished before it was killed"
n=$(grep -c 'scheduled checkpoint (PCM_CHECKPOINT_MTBF=2): version of iteration' "$out")
[ "$n" -ge 4 ] || fail "$n versions written by the schedule in 60 s: $(show "$out")"
# The status's schedule is Daly's interval for its cost; versions came no closer than it (the
# log's times, to the millisecond, from the end of one write to the start of the next).
python3 - "$PCM_TEST_DIR/status.json" "$out" <<'PY' || fail "the schedule is wrong"
import json, math, re, sys
s = json.load(open(sys.argv[1]))["jobs"][0]["checkpoint_schedule"]
c, t, m = s["cost_s"], s["interval_s"], s["mtbf_s"]
daly = math.sqrt(2 * c * m) * (1 + math.sqrt(c / (2 * m)) / 3 + c / (2 * m) / 9) - c
assert m == 2 and c > 0 and abs(t - daly) < 1e-9, s
ends = []
for line in open(sys.argv[2]):
    r = re.search(r"\[(\d+):(\d+):([\d.]+)\].*scheduled checkpoint .* (?:written|staged) in ([\d.]+) s", line)
    if r:
        end = int(r[1]) * 3600 + int(r[2]) * 60 + float(r[3])
        ends.append((end - float(r[4]), end))
gaps = [b[0] - a[1] for a, b in zip(ends, ends[1:])]
# The interval at each moment follows the cost measured so far: at least 0.3 x today's.
assert gaps and min(gaps) >= 0.3 * t, (gaps, s)
print(f"checkpoint_mtbf: cost {c:.4f} s, MTBF {m:.0f} s -> interval {t:.4f} s (Daly); "
      f"{len(ends)} versions, gaps {min(gaps):.3f}-{max(gaps):.3f} s")
PY
"$pcmctl" status "$job" | grep -q "checkpoints every .* s of work (cost .* s, MTBF 2 s: Young/Daly)" ||
  fail "pcmctl status does not show the schedule: $("$pcmctl" status "$job")"
newest=$("$pcmctl" checkpoints "$job" --json | python3 -c 'import json,sys; print(max(v["iteration"] for v in json.load(sys.stdin) if v["valid"]))')

r=$PCM_TEST_DIR/restart.out
PCM_RESTART=1 PCM_JOB=$job timeout 300 "$MPIEXEC" -n 3 "$heat/heat2d_pcm" "${args[@]}" \
  >"$r" 2>&1 </dev/null || fail "the restart exited with $?: $(show "$r")"
k=$(sed -n 's/^heat2d: restarted from iteration \([0-9]*\) (2 -> 3 processes)$/\1/p' "$r")
[ -n "$k" ] && [ "$k" -ge "$newest" ] ||
  fail "the restart did not resume from the newest version $newest: $(show "$r")"
got=$(awk '/^checksum/ {print $2}' "$r")
[ "$got" = "$plain" ] || fail "restart: checksum '$got', the plain run's $plain"
echo "checkpoint_mtbf: ok: $n versions by the schedule; restart on 3 from $k: checksum $got"
