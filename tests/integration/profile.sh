#!/usr/bin/env bash
# profile.sh MPIEXEC PCMCTL MPI_PROFILE — run under with_pcmd.sh: the profile pcmd keeps for a
# job (pcmctl profile) holds exactly what tests/mpi/mpi_profile.c did: per rank 4 MPI calls per
# iteration (libpcm's own calls left out), 1000 bytes in one message to world rank r+1 and 24
# bytes to r-1 (sent on a communicator numbered backwards: the destination is translated to the
# world's rank), nothing else; the table prints; PCM_PROFILE_MS=0 sends no profile.
set -euo pipefail
mpiexec=$1 pcmctl=$2 prog=$3
np=3
PCM_JOB=prof PCM_PROFILE_MS=100 "$mpiexec" -n $np "$prog" 1500
"$pcmctl" profile prof --json >"$PCM_TEST_DIR/profile.json"
"$pcmctl" profile prof
python3 - "$PCM_TEST_DIR/profile.json" $np <<'PY'
import json, sys
reply = json.load(open(sys.argv[1])); n = int(sys.argv[2])
p = reply["profile"]
assert p is not None, "no profile"
ranks = p["ranks"]
assert len(ranks) == n, ranks
for r, row in enumerate(ranks):
    iters, iter_s, lo, hi, mpi_s, calls, sent = row
    assert iters > 0, (r, row)
    assert calls == 4 * iters, f"rank {r}: {calls} MPI calls in {iters} iterations, not 4 each"
    assert sent == 1024 * iters, f"rank {r}: {sent} bytes sent in {iters} iterations"
    assert 0 < lo <= iter_s / iters <= hi, (r, row)
    assert 0 <= mpi_s <= iter_s * 1.5, (r, row)
    for c in range(n):
        b, m = p["bytes"][r * n + c], p["messages"][r * n + c]
        want = {(r + 1) % n: (1000, 1), (r - 1) % n: (24, 1)}.get(c, (0, 0))
        assert (b, m) == (want[0] * iters, want[1] * iters), \
            f"rank {r} -> {c}: {b} bytes in {m} messages over {iters} iterations, expected {want}"
print(f"profile: ok ({n} ranks, {ranks[0][0]} iterations in {p['interval_s']:.3f} s on rank 0)")
PY
PCM_JOB=quiet PCM_PROFILE_MS=0 "$mpiexec" -n 2 "$prog" 500
"$pcmctl" profile quiet --json | python3 -c '
import json, sys
assert json.load(sys.stdin)["profile"] is None, "PCM_PROFILE_MS=0 sent a profile"
print("profile: none with PCM_PROFILE_MS=0: ok")'
