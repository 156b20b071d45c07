#!/usr/bin/env bash
# kill_tree.sh PID... — kills each PID and every process below it with SIGKILL, by their PIDs, and
# returns once none of them runs any more (zombies count as gone). Tests use it to make a job die
# at one moment, as a crash or a lost host would: a launcher's process group does not hold its
# job (hydra's proxies and ranks each call setsid; Open MPI's ranks are not in mpirun's group), so
# `kill -- -PGID` ends the launcher alone and the ranks run on until their proxy notices, long
# enough to write or report one more version. Every process of the tree is stopped first (a
# stopped proxy cannot act on its children's deaths), the tree walked again until it stops
# growing, and then all are killed.
set -u
if [ "${1:-}" = --tagged ]; then
  # --tagged NAME=VALUE: the roots are the processes whose environment holds NAME=VALUE, except
  # this script, its ancestors and its own children (with_pcmd.sh ends whatever its test left
  # behind this way).
  [ $# -eq 2 ] || { echo "usage: kill_tree.sh --tagged NAME=VALUE" >&2; exit 2; }
  tag=$2
  tagged=$(grep -lzxF -- "$tag" /proc/[0-9]*/environ 2>/dev/null | sed 's|^/proc/||; s|/environ$||')
  mapfile -t roots < <(ps -e -o pid=,ppid= | awk -v me=$$ -v tagged="$tagged" '
    BEGIN { n = split(tagged, t, "\n"); for (i = 1; i <= n; i++) want[t[i]] = 1 }
    { parent[$1] = $2 }
    END {
      for (p = me; p in parent; p = parent[p]) mine[p] = 1
      for (p in want) {
        ok = 1
        for (q = p; q in parent; q = parent[q]) if (q == me || (q == p && p in mine)) { ok = 0; break }
        if (ok && (p in parent)) print p
      }
    }')
  [ ${#roots[@]} -gt 0 ] || exit 0
  echo "kill_tree.sh: ${#roots[@]} processes tagged $tag still ran: ${roots[*]}" >&2
  set -- "${roots[@]}"
fi
[ $# -gt 0 ] || { echo "usage: kill_tree.sh PID... | --tagged NAME=VALUE" >&2; exit 2; }
declare -A seen=()
tree=()
for _ in $(seq 50); do
  # Every process whose ancestry reaches one of the roots or a process already seen.
  mapfile -t found < <(ps -e -o pid=,ppid= | awk -v roots="$* ${tree[*]}" '
    BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
    { parent[$1] = $2 }
    END {
      do { grew = 0
        for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 }
      } while (grew)
      for (p in keep) if (p in parent) print p
    }')
  new=0
  for pid in "${found[@]}"; do
    [ -n "${seen[$pid]:-}" ] && continue
    seen[$pid]=1
    tree+=("$pid")
    kill -STOP "$pid" 2>/dev/null
    new=1
  done
  [ $new -eq 0 ] && break
done
[ ${#tree[@]} -gt 0 ] && kill -KILL "${tree[@]}" 2>/dev/null
for _ in $(seq 200); do
  alive=0
  for pid in "${tree[@]}"; do
    state=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$pid/stat" 2>/dev/null) || continue
    [ -n "$state" ] && [ "$state" != Z ] && alive=1 && break
  done
  [ $alive -eq 0 ] && exit 0
  sleep 0.05
done
echo "kill_tree.sh: processes of ${*} still run after SIGKILL" >&2
exit 1
