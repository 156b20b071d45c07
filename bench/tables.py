"""tables.py — the table each benchmark driver prints from its runs (and the CSV its plot reads),
one function per driver, named after it: bench/NAME.sh calls `bench_table NAME ARG...` (bench/lib.sh),
which runs `python3 bench/tables.py NAME ARG...`; argv is [NAME, ARG...], as the driver passes
them. Medians come from benchlib.median (tables.py imports benchlib, never the other way)."""
import csv
import glob
import os
import re
import statistics
import sys

from benchlib import median


def checkpoint(argv):
    d, sizes, can_drop = argv[1], [int(x) for x in argv[2].split()], argv[3] == "1"
    store_sizes = [int(x) for x in argv[4].split()]
    med = median
    def text(name):
        p = os.path.join(d, name)
        return open(p).read() if os.path.exists(p) else ""
    print("\n| what | PCM | baseline, same bytes | baseline/PCM time (>= 0.8 is the target) |")
    print("| --- | --- | --- | --- |")
    for mb in sizes:
        gb = mb * 1024 * 1024 / 1e9
        pairs = [(float(a), float(b)) for a, b in
                 re.findall(r"wrote .*?: ([\d.]+) s, .*?raw write\(\)\+fsync ([\d.]+) s", text(f"w{mb}.txt"))]
        steady = pairs[2:] or pairs
        dd = [float(x) for x in re.findall(r"copied, ([\d.]+) s", text(f"dd{mb}.txt"))]
        dd = dd[2:] or dd
        w = med([p[0] for p in steady])
        ratios = [b / a for a, b in steady]
        print(f"| write {mb} MiB: PCM_Checkpoint (fsync included) vs write()+fsync by the same "
              f"processes | {w:.3f} s ({gb / w:.2f} GB/s) | {med([p[1] for p in steady]):.3f} s | "
              f"{med(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}, {len(steady)} pairs) |")
        print(f"| write {mb} MiB: PCM_Checkpoint vs dd conv=fsync | {w:.3f} s | {med(dd):.3f} s "
              f"({gb / med(dd):.2f} GB/s) | {med(dd) / w:.2f} |")
        for kind, name in (("warm", f"rw{mb}.txt"), ("cold", f"rc{mb}.txt")):
            runs = [(float(a), float(b)) for a, b in
                    re.findall(r"read .*?: ([\d.]+) s, .*?raw read\(\) ([\d.]+) s", text(name))]
            if runs:
                a, b = med([r[0] for r in runs]), med([r[1] for r in runs])
                print(f"| restart read {mb} MiB, page cache {kind}: PCM_Resume (chunks verified) vs "
                      f"read() into new memory by the same processes | {a:.3f} s ({gb / a:.2f} GB/s) | "
                      f"{b:.3f} s | {b / a:.2f} ({len(runs)} run{'s' if len(runs) > 1 else ''}) |")
            elif kind == "cold" and not can_drop:
                print(f"| restart read {mb} MiB, page cache cold | not measured: the page cache was not "
                      f"dropped (not root, or BENCH_COLD=0) | | |")
    for mb in store_sizes:
        gb = mb * 1024 * 1024 / 1e9
        def times(name, warm=0):
            t = [float(x) for x in re.findall(r"(?:wrote .*?: |copied, )([\d.]+) s", text(name))]
            return t[warm:] or t
        def rounds(prefix):  # per round: the steady versions (the first two of each warm up)
            out, r = [], 1
            while text(f"{prefix}{mb}-{r}.txt"):
                out.append(times(f"{prefix}{mb}-{r}.txt", 2))
                r += 1
            return out
        direct, buffered, dd, behind = rounds("sw"), rounds("swb"), rounds("sdd"), rounds("swa")
        old = times(f"so{mb}.txt")
        if not (direct and buffered and dd and old):
            continue
        flat = lambda rs: [t for r in rs for t in r]
        a, ab, b, o = med(flat(direct)), med(flat(buffered)), med(flat(dd)), med(old)
        per_round = lambda rs: " · ".join(f"{med(d) / med(x):.2f}" for x, d in zip(rs, dd))
        print(f"| write {mb} MiB: PCM_Store + PCM_Commit, the ranks write with O_DIRECT "
              f"(PCM_WRITE_DIRECT=1; fsync included) vs dd conv=fsync | {a:.3f} s ({gb / a:.2f} GB/s; {min(flat(direct)):.3f}-"
              f"{max(flat(direct)):.3f}, {len(flat(direct))} versions) | {b:.3f} s ({gb / b:.2f} GB/s) | "
              f"{b / a:.2f} (per round: {per_round(direct)}) |")
        print(f"| write {mb} MiB: the same through the page cache (the default) vs dd "
              f"conv=fsync | {ab:.3f} s ({gb / ab:.2f} GB/s; {min(flat(buffered)):.3f}-"
              f"{max(flat(buffered)):.3f}) | {b:.3f} s | {b / ab:.2f} (per round: {per_round(buffered)}) |")
        if behind:
            aa = med(flat(behind))
            print(f"| write {mb} MiB: PCM_Store + PCM_Commit behind the application (PCM_STORE_ASYNC=1; "
                  f"what the calls wait for, computing between versions; the version is durable later) "
                  f"vs dd conv=fsync | {aa:.3f} s ({min(flat(behind)):.3f}-{max(flat(behind)):.3f}) | "
                  f"{b:.3f} s | {b / aa:.2f} (per round: {per_round(behind)}) |")
        print(f"| write {mb} MiB: PCM_Store + PCM_Commit through pcmd (PCM_CHECKPOINT_DIRECT=0) vs dd "
              f"conv=fsync | {o:.3f} s ({gb / o:.2f} GB/s; {len(old)} versions) | {b:.3f} s | "
              f"{b / o:.2f} (direct is {o / a:.1f}x faster) |")
        r1 = re.search(r"read .*?: ([\d.]+) s", text(f"sr{mb}.txt"))
        r2 = re.search(r"read .*?: ([\d.]+) s", text(f"sro{mb}.txt"))
        if r1 and r2:
            a, b = float(r1.group(1)), float(r2.group(1))
            print(f"| restart read {mb} MiB: PCM_Load of that version, the ranks read the shards "
                  f"(chunks verified) vs through pcmd | {a:.3f} s ({gb / a:.2f} GB/s) | {b:.3f} s | "
                  f"{b / a:.2f} |")
    ow, orr = text("ow.txt"), text("or.txt")
    m1, m2 = re.search(r"wrote .*?: ([\d.]+) s", ow), re.search(r"read .*?: ([\d.]+) s", orr)
    idle = [int(x) / 1000 for x in text("idle-status.txt").split()]
    busy = [int(x) / 1000 for x in text("busy-status.txt").split()]
    if idle and busy:
        print(f"\n`pcmctl status` (a new process each time): idle median {med(idle):.1f} ms; while a "
              f"job stores and commits {sizes[0]} MiB through pcmd: median {med(busy):.1f} ms, max "
              f"{max(busy):.1f} ms ({len(busy)} answers)")
    if m1 and m2:
        print(f"\nthe paper's path through pcmd at {sizes[0]} MiB (PCM_Store + PCM_Commit, PCM_Load): "
              f"write {float(m1.group(1)):.3f} s, read {float(m2.group(1)):.3f} s")


def checkpoint_wait(argv):
    d, sizes = argv[1], [int(x) for x in argv[2].split()]
    med = median
    def text(name):
        p = os.path.join(d, name)
        return open(p).read() if os.path.exists(p) else ""
    print("\n| size | PCM_Checkpoint at once (median wait) | in the background (median wait; last "
          "PCM_Checkpoint_wait) | background/at once (<= 0.1 is the target) | dd conv=fsync |")
    print("| --- | --- | --- | --- | --- |")
    for mb in sizes:
        t = text(f"w{mb}.txt")
        s = re.search(r"\(sync\):.*median ([\d.]+) s", t)
        a = re.search(r"\(async\):.*median ([\d.]+) s; last wait ([\d.]+) s", t)
        dd = [float(x) for x in re.findall(r"copied, ([\d.]+) s", text(f"dd{mb}.txt"))]
        if s and a and dd:
            sy, asy, last = float(s[1]), float(a[1]), float(a[2])
            print(f"| {mb} MiB | {sy:.3f} s | {asy:.4f} s; {last:.3f} s | {asy / sy:.3f} | "
                  f"{med(dd):.3f} s |")
    runs = {}
    for line in text("heat.txt").split("\n"):
        if line.strip():
            mode, ms = line.split()
            runs.setdefault(mode, []).append(int(ms) / 1000)
    if runs.get("none"):
        base = med(runs["none"])
        print("\n| heat2d whole run | seconds (median) | against no checkpoints |")
        print("| --- | --- | --- |")
        for mode, label in (("none", "no checkpoints"), ("sync", "a version every k iterations, at once"),
                            ("async", "a version every k iterations, in the background")):
            if runs.get(mode):
                m = med(runs[mode])
                print(f"| {label} | {m:.2f} ({', '.join(f'{x:.2f}' for x in runs[mode])}) | "
                      f"{(m / base - 1) * 100:+.1f} % |")


def compare(argv):
    rows = list(csv.DictReader(open(argv[1])))
    med = median
    print(f"{'mesh':>6} {argv[2] + ' pcm/plain':>20} {'(range)':>13} {'now pcm/plain':>14} {'(range)':>13}")
    for n in dict.fromkeys(r["size"] for r in rows):
        rs = [r for r in rows if r["size"] == n]
        o = [float(r["old_pcm"]) / float(r["old_plain"]) for r in rs]
        q = [float(r["new_pcm"]) / float(r["new_plain"]) for r in rs]
        print(f"{n:>6} {med(o):>20.4f} {f'({min(o):.3f}-{max(o):.3f})':>13} {med(q):>14.4f}"
              f" {f'({min(q):.3f}-{max(q):.3f})':>13}")


def granularity(argv):
    rows = list(csv.DictReader(open(argv[1])))
    sizes = list(dict.fromkeys(r["mesh"] for r in rows))
    procs = list(dict.fromkeys(int(r["procs"]) for r in rows))
    med = {(s, p): median(float(r["mcells_per_s"]) for r in rows
                                     if r["mesh"] == s and int(r["procs"]) == p) for s in sizes for p in procs}
    print(f"heat2d throughput, Mcell-updates/s (median); speed-up over 1 process in brackets; {argv[3]} cores")
    print(f"{'procs':>5} " + " ".join(f"{s + 'x' + s:>20}" for s in sizes))
    for p in procs:
        cells = []
        for s in sizes:
            base = med.get((s, procs[0]))
            cells.append(f"{med[s, p]:>10.1f} ({med[s, p] / base:>5.2f}x)")
        print(f"{p:>5} " + " ".join(f"{c:>20}" for c in cells))
    for s in sizes:
        best = max(procs, key=lambda p: med[s, p])
        print(f"mesh {s}x{s}: best on {best} processes ({med[s, best]:.1f} Mcell/s)")
    with open(argv[2], "w") as f:
        w = csv.writer(f)
        w.writerow(["procs"] + [f"{s}x{s}" for s in sizes])
        for p in procs:
            w.writerow([p] + [f"{med[s, p]:.3f}" for s in sizes])


def malleability(argv):
    rows = list(csv.DictReader(open(argv[1])))
    sizes = list(dict.fromkeys(int(r["size_mib"]) for r in rows))
    # (Labels are CSV headers and gnuplot's enhanced text: no commas, no underscores.)
    names = [("live", "paper's calls"), ("ckpt", "PCM checkpoint restart"), ("raw", "raw-file restart"),
             ("live_bg", "paper's calls overlapped"), ("adapt", "PCM Adapt"),
             ("adapt_bg", "PCM Adapt overlapped")]
    series = [(m, d, f"{label} {d.replace('->', '→')}") for m, label in names for d in ("1->2", "2->1")]
    med = {}
    for s in sizes:
        for m, d, _ in series:
            times = [float(r["seconds"]) for r in rows if int(r["size_mib"]) == s and r["method"] == m and r["direction"] == d]
            assert times, f"no {m} {d} measurement at {s} MiB"
            med[s, m, d] = median(times)
    print(f"live reconfiguration against stop-and-restart: seconds end to end, medians of {argv[3]}")
    live = ("live", "live_bg", "adapt", "adapt_bg")
    print(f"{'size':>9} {'direction':>9} {'live':>8} {'live_bg':>8} {'adapt':>8} {'adapt_bg':>8} {'PCM ckpt':>9}"
          f" {'raw file':>9}   {'ckpt/live':>28}   {'raw/live':>28}")
    for s in sizes:
        for d in ("1->2", "2->1"):
            ck, raw = med[s, "ckpt", d], med[s, "raw", d]
            times = [med[s, m, d] for m in live]
            ratios = lambda base: " ".join(f"{base / t:>6.1f}x" for t in times)
            print(f"{s:>5} MiB {d:>9} " + " ".join(f"{t:>8.3f}" for t in times) +
                  f" {ck:>9.3f} {raw:>9.3f}   {ratios(ck)}   {ratios(raw)}")
    print("live, live_bg: the paper's calls (PCM_Split/PCM_Merge), from PCM_Status returning the command to the")
    print("new world holding its data; adapt, adapt_bg: PCM_Adapt, from entering the call that carries the command")
    print("out; _bg: PCM_OVERLAP=1 (the spawn and the new buffers made in the background first); ratios in the")
    print("order live, live_bg, adapt, adapt_bg. Restarts: from the start of the save to the new world holding")
    print("its data (exit, mpiexec, MPI/PCM set-up and load included)")
    print("every move checked every element: all correct")
    with open(argv[2], "w") as f:
        w = csv.writer(f)
        w.writerow(["size_mib"] + [label for _, _, label in series])
        for s in sizes:
            w.writerow([s] + [f"{med[s, m, d]:.6f}" for m, d, _ in series])


def mpis(argv):
    out, rounds = argv[1], int(argv[2])
    pat = {
        "spawn + merge (split's spawn phase), s": r"^split 1->2 .*?= spawn ([\d.]+) s",
        "split 1->2 total, s": r"^split 1->2 .*?: total ([\d.]+) s",
        "split 1->2 data phase, s": r"^split 1->2 .*?\+ data ([\d.]+) s",
        "merge 2->1 total, s": r"^merge 2->1 .*?: total ([\d.]+) s",
        "migration (median in one heat2d run), s": r"^migration time: median ([\d.]+) s",
        "heat2d launched on 2, ms/iteration": r"launched on 2: ([\d.]+) ms/iter",
        "heat2d after split 1->2, ms/iteration": r"after split 1->2: ([\d.]+) ms/iter",
    }
    vals = {m: {k: [] for k in pat} for m in ("mpich", "openmpi")}
    for m in vals:
        for r in range(1, rounds + 1):
            text = open(f"{out}/{m}-{r}.txt").read()
            for k, p in pat.items():
                for v in re.findall(p, text, re.M):
                    vals[m][k].append(float(v))
    fmt = lambda v: f"{median(v):.4f} ({min(v):.4f}-{max(v):.4f})" if v else "-"
    print(f"{'':44} {'MPICH 4.0.2 ch3':>28} {'Open MPI 4.1':>28} {'Open MPI/MPICH':>15}")
    for k in pat:
        a, b = vals["mpich"][k], vals["openmpi"][k]
        ratio = f"{median(b) / median(a):.2f}" if a and b and median(a) > 0 else "-"
        print(f"{k:44} {fmt(a):>28} {fmt(b):>28} {ratio:>15}")
    print(f"(medians over {rounds} rounds, range in brackets; the MPIs alternate round by round)")


def overhead(argv):
    rows = list(csv.DictReader(open(argv[1])))
    med = median
    print(f"{'mesh':>6} {'iters':>7} {'plain ms/it':>12} {'pcm/plain':>10} {'overhead':>9} {'(range)':>13}"
          f" {'window 0':>9} {'overhead':>9} {'profiling':>10} {'(range)':>13}   (medians of per-repetition ratios;"
          f" profiling: pcm against pcm with PCM_PROFILE_MS=0)")
    out = csv.writer(open(argv[2], "w"))
    out.writerow(["mesh", "overhead_pct", "low_pct", "high_pct", "overhead_w0_pct", "low_w0_pct", "high_w0_pct"])
    for n in dict.fromkeys(r["size"] for r in rows):
        rs = [r for r in rows if r["size"] == n]
        plain = [float(r["plain_ms_per_iter"]) for r in rs]
        q = [float(r["pcm_ms_per_iter"]) / p for r, p in zip(rs, plain)]
        z = [float(r["pcm_w0_ms_per_iter"]) / p for r, p in zip(rs, plain)]
        u = [float(r["pcm_ms_per_iter"]) / float(r["pcm_noprof_ms_per_iter"]) for r in rs]
        print(f"{n:>6} {rs[0]['iterations']:>7} {med(plain):>12.4f} {med(q):>10.4f} {(med(q) - 1) * 100:>+8.2f}%"
              f" {f'({min(q):.3f}-{max(q):.3f})':>13} {med(z):>9.4f} {(med(z) - 1) * 100:>+8.2f}%"
              f" {(med(u) - 1) * 100:>+9.2f}% {f'({min(u):.3f}-{max(u):.3f})':>13}")
        pct = lambda v: f"{(v - 1) * 100:.3f}"
        out.writerow([n, pct(med(q)), pct(min(q)), pct(max(q)), pct(med(z)), pct(min(z)), pct(max(z))])


def overlap(argv):
    tmp, reps, win = argv[1], int(argv[2]), int(argv[3])
    med = median

    def costs(path):
        """(splits, overlap lines): per split (size before, after, extra wall s, extra adapt s)."""
        text = open(path).read()
        rows = [(int(i), float(t), float(a), int(p)) for i, t, a, p in re.findall(
            r"^overlap_cost: it (\d+) t ([\d.]+) adapt ([\d.]+) procs (\d+)", text, re.M)]
        rows.sort(key=lambda r: (r[0], r[1]))  # the old and the new world print concurrently
        out = []
        for k in range(1, len(rows)):
            if rows[k][3] == rows[k - 1][3]:
                continue
            # rows[k - 1]: the old world's line of the switch's iteration; rows[k]: the new world's.
            lo, hi = k - 1 - win, k + win
            if lo < 100 or hi + 100 >= len(rows):
                sys.exit(f"{path}: too few iterations around the split at row {k}")
            # Steady iterations: the median on each side, over the window itself and 100 iterations
            # beyond it (the machine's load drifts; the few slow iterations of a switch do not move
            # a median).
            before = [rows[j + 1][1] - rows[j][1] for j in range(lo - 100, k - 1)]
            after = [rows[j + 1][1] - rows[j][1] for j in range(k, hi + 100)]
            # rows[lo..k-1]: win old iterations; rows[k-1] -> rows[k]: the switch alone (the new world
            # computes iteration K); rows[k..hi]: win new iterations.
            steady = win * med(before) + win * med(after)
            wall = rows[hi][1] - rows[lo][1] - steady
            adapt_med = med(r[2] for r in rows[lo - 100:lo])
            adapt = sum(r[2] for r in rows[lo:hi + 1]) - (hi + 1 - lo) * adapt_med
            out.append((rows[k - 1][3], rows[k][3], wall, adapt))
        over = re.findall(r"(?:spawned|faulted in) in the background in ([\d.]+) s while the "
                          r"application made (\d+) iterations", text)
        return out, over

    res = {}
    for mode in ("0", "1"):
        for r in range(1, reps + 1):
            splits, over = costs(f"{tmp}/{mode}-{r}.out")
            if len(splits) != 4:
                sys.exit(f"{mode}-{r}: {len(splits)} reconfigurations found, not 4")
            if mode == "1" and len(over) != 4:
                sys.exit(f"{mode}-{r}: not every reconfiguration overlapped: {over}")
            if mode == "0" and over:
                sys.exit(f"{mode}-{r}: a reconfiguration overlapped with PCM_OVERLAP=0")
            for n, (a, b, wall, adapt) in enumerate(splits):
                what = "spawn" if b > a else "buffers"
                extra = f"; {what} {float(over[n][0]):.3f} s in the background, {over[n][1]} iterations meanwhile" if mode == "1" else ""
                print(f"rep {r} {'overlapped' if mode == '1' else 'blocking  '} {'split' if b > a else 'merge'} {a}->{b}: "
                      f"visible {wall:.3f} s (inside PCM_Adapt {adapt:.3f} s){extra}")
                res.setdefault((a, b, mode), []).append((wall, adapt))
    for a, b in ((1, 2), (2, 4), (4, 2), (2, 1)):
        blk, ovl = res[(a, b, "0")], res[(a, b, "1")]
        wb, wo = med(w for w, _ in blk), med(w for w, _ in ovl)
        ab, ao = med(x for _, x in blk), med(x for _, x in ovl)
        print(f"{'split' if b > a else 'merge'} {a}->{b} (median of {reps}): blocking {wb:.3f} s, overlapped {wo:.3f} s: "
              f"{wo / wb:.2f} x (inside PCM_Adapt: {ab:.3f} s against {ao:.3f} s, {ao / ab:.2f} x)")
    raws = {}
    for line in open(f"{tmp}/raw.txt"):
        a, b, t = line.split()
        raws.setdefault((int(a), int(b)), []).append(float(t))
    with open(f"{tmp}/plot.csv", "w") as f:
        f.write("step,blocking,overlapped,overlapped: inside PCM_Adapt,raw-file restart\n")
        for a, b in ((1, 2), (2, 4), (4, 2), (2, 1)):
            rt = med(raws[(a, b)]) if raws else 0
            f.write(f"{'split' if b > a else 'merge'} {a}->{b},{med(w for w, _ in res[(a, b, '0')]):.4f},"
                    f"{med(w for w, _ in res[(a, b, '1')]):.4f},{med(x for _, x in res[(a, b, '1')]):.4f},{rt:.4f}\n")
    if raws:
        print("stop and restart through raw files (write + fsync, exit, mpiexec, pread) against live:")
        for a, b in ((1, 2), (2, 4), (4, 2), (2, 1)):
            rt = med(raws[(a, b)])
            blk = med(w for w, _ in res[(a, b, "0")])
            ovl = med(w for w, _ in res[(a, b, "1")])
            ao = med(x for _, x in res[(a, b, "1")])
            print(f"  {a}->{b}: raw-file restart {rt:.3f} s (runs: " + ", ".join(f"{t:.3f}" for t in raws[(a, b)])
                  + f"); blocking live {rt / blk:.1f} x faster, overlapped {rt / ovl:.1f} x (visible), "
                  f"{rt / ao:.1f} x (inside PCM_Adapt)")


def reshape(argv):
    out, memcpy, nbytes = open(argv[1]).read(), open(argv[2]).read(), int(argv[3])
    mem = float(re.search(r"^memcpy: .*? ([\d.]+) GB/s", memcpy, re.M).group(1))
    fresh = float(re.search(r"^memcpy into new memory: .*? ([\d.]+) GB/s", memcpy, re.M).group(1))
    splits = [(float(t), float(s), float(d)) for t, s, d in re.findall(
        r"^reshape: split .*?: ([\d.]+) s \(old rank 0: spawn ([\d.]+) data ([\d.]+)\)", out, re.M)]
    merges = [(float(t), float(d), float(b)) for t, d, b in re.findall(
        r"^reshape: merge .*?: ([\d.]+) s \(rank 0: spawn [\d.]+ data ([\d.]+) rebuild ([\d.]+)\)", out, re.M)]
    med = median
    if splits:
        t, s, d = (med(x) for x in zip(*splits))
        print(f"split 1->2 (median of {len(splits)}): total {t:.3f} s = spawn {s:.3f} s + data {d:.3f} s "
              f"(+ rebuild in the new world); data {nbytes / d / 1e9:.2f} GB/s = {nbytes / d / 1e9 / mem:.3f} x memcpy ({mem:.2f} GB/s), "
              f"{nbytes / d / 1e9 / fresh:.2f} x memcpy into new memory ({fresh:.2f} GB/s)")
    if merges:
        t, d, b = (med(x) for x in zip(*merges))
        print(f"merge 2->1 (median of {len(merges)}): total {t:.3f} s = data {d:.3f} s + rebuild {b:.3f} s; "
              f"data {nbytes / d / 1e9:.2f} GB/s = {nbytes / d / 1e9 / mem:.3f} x memcpy, {nbytes / d / 1e9 / fresh:.2f} x memcpy into new memory")


def scale(argv):
    """bench/scale.sh: the emulator's rows (medians per N) with each figure's log-log slope
    against N (least squares over N >= 256, where fixed costs stop dominating), the plot's CSV,
    and with CHECK=1 exit 1 unless every commit took at most 1 s after the last shard record,
    nothing was refused and no request failed. argv: [scale, ALL.csv, PLOT.csv, CHECK]."""
    import math
    rows = list(csv.DictReader(open(argv[1])))
    cols = [("hello_s", "N hellos registered (s)"), ("poll_p50_ms", "rank 0 poll p50 (ms)"),
            ("poll_p99_ms", "rank 0 poll p99 (ms)"), ("records_s", "N shard records taken (s)"),
            ("commit_s", "last record -> committed (s)"), ("deliver_ms", "command -> delivered (ms)"),
            ("report_ms", "report answered (ms)"), ("lost_s", "lost rank noticed (s)"),
            ("restart_ms", "restart registration (ms)"), ("hwm_mb", "pcmd peak RSS (MiB)"),
            ("cpu_s", "pcmd CPU (s)"), ("other_p99_ms", "other job p99 (ms)"),
            ("other_max_ms", "other job max (ms)"),
            ("loop_max_ms", "pcmd's longest loop pass (ms)")]  # -1: not said (an older emulator)
    ns = sorted({int(r["n"]) for r in rows})
    med = {n: {k: median([float(r.get(k) or -1) for r in rows if int(r["n"]) == n])
               for k, _ in cols}
           for n in ns}
    reps = {n: sum(1 for r in rows if int(r["n"]) == n) for n in ns}
    print("\n| N | runs | " + " | ".join(t for _, t in cols) + " |")
    print("| --- " * (len(cols) + 2) + "|")
    for n in ns:
        print(f"| {n} | {reps[n]} | " + " | ".join(f"{med[n][k]:.3g}" for k, _ in cols) + " |")

    def fit(k):
        """Slope and intercept of log(figure) against log(N), least squares over N >= 256."""
        pts = [(math.log(n), math.log(med[n][k])) for n in ns if n >= 256 and med[n][k] > 0]
        if len(pts) < 2:
            return float("nan"), float("nan")
        mx = sum(x for x, _ in pts) / len(pts)
        my = sum(y for _, y in pts) / len(pts)
        b = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
        return b, my - b * mx
    fits = {k: fit(k) for k, _ in cols}
    print("| log-log slope (N >= 256) | | " +
          " | ".join(f"{fits[k][0]:.2f}" for k, _ in cols) + " |")
    print("| the fit at N = 100,000 | | " +
          " | ".join(f"{math.exp(fits[k][1] + fits[k][0] * math.log(1e5)):.3g}" for k, _ in cols)
          + " |")
    with open(argv[2], "w") as f:
        f.write("n," + ",".join(k for k, _ in cols) + "\n")
        for n in ns:
            f.write(f"{n}," + ",".join(str(med[n][k]) for k, _ in cols) + "\n")
    bad = [f"N={r['n']}: commit {float(r['commit_s']):.3f} s, {r['refused']} refused, "
           f"{r['errors']} failed, {r['other_errors']} of the other job failed"
           for r in rows if float(r["commit_s"]) > 1 or int(r["refused"]) or int(r["errors"])
           or int(r["other_errors"])]
    for b in bad:
        print("scale: over the goal: " + b)
    if len(argv) > 3 and argv[3] == "1" and bad:
        return 1
    return 0


def timeline(argv):
    rows = list(csv.DictReader(open(argv[1])))
    events = [(float(r["time_s"]), r["label"]) for r in csv.DictReader(open(argv[2]))]
    cells = int(argv[3]) * int(argv[4])
    t0 = float(rows[0]["time_s"])
    # Progress intervals: (start, end, procs, it/s); an interval starts at the previous row.
    intervals, prev = [], None
    for r in rows:
        if r["ms_per_iter"] and prev is not None:
            n, ms = int(r["iteration"]) - int(prev["iteration"]), float(r["ms_per_iter"])
            end = float(r["time_s"])
            intervals.append((end - n * ms / 1000, end, int(r["procs"]), 1000 / ms))
        prev = r
    reconf = [(float(r["time_s"]), r["event"]) for r in rows if r["event"] and not r["event"].startswith("start")]
    bounds = sorted({t0, float(rows[-1]["time_s"])} | {t for t, _ in events if t > t0} | {t for t, _ in reconf})
    print("reconfigurations: " + "; ".join(f"{e} at {t - t0:.2f} s" for t, e in reconf))
    print(f"{'phase':>5} {'from s':>7} {'to s':>7} {'procs':>5} {'load':>5} {'intervals':>9} "
          f"{'median it/s':>11} {'Mcell/s':>8} {'vs phase 1':>10}")
    base, k = None, 0
    for a, b in zip(bounds, bounds[1:]):
        inside = [iv for iv in intervals if iv[0] >= a - 1e-3 and iv[1] <= b + 1e-3]
        if not inside:
            continue  # a transition: the reaction to an outside event, or a reconfiguration
        k += 1
        before = [l for t, l in events if t <= a + 1e-6]
        load = "yes" if before and before[-1].endswith("starts") else "no"
        procs = statistics.mode(iv[2] for iv in inside)
        med = median(iv[3] for iv in inside)
        base = base or med
        print(f"{k:>5} {a - t0:>7.2f} {b - t0:>7.2f} {procs:>5} {load:>5} {len(inside):>9} "
              f"{med:>11.1f} {med * cells / 1e6:>8.1f} {med / base:>9.2f}x")


def wire(argv):
    runs = [(float(a), float(b)) for a, b in
            re.findall(r"store ([\d.]+) s .*load ([\d.]+) s", open(argv[1]).read())]
    runs = runs[1:] or runs
    gb = int(argv[2]) * 2**20 / 1e9
    s, l = median(r[0] for r in runs), median(r[1] for r in runs)
    print(f"store/load {argv[2]} MiB through pcmd: store median {s:.3f} s ({gb / s:.2f} GB/s), "
          f"load median {l:.3f} s ({gb / l:.2f} GB/s), {len(runs)} runs")


def young_daly(argv):
    rows = [l.split() for l in open(argv[1])]
    tmp, iters, every = argv[2], int(argv[3]), int(argv[4])
    med = {v: median(float(r[1]) for r in rows if r[0] == v) for v in ("none", "mtbf", "fixed")}
    def written(v):
        if v == "none":
            return []
        if v == "fixed":
            return [iters // every]
        return [len(re.findall(r"scheduled checkpoint .* written in", open(f).read()))
                for f in glob.glob(f"{tmp}/{v}-*.out")]
    print("\n| variant | median s | overhead | versions per run | mean spacing s | expected loss per failure s |")
    print("| --- | --- | --- | --- | --- | --- |")
    for v in ("none", "mtbf", "fixed"):
        w = written(v)
        n = median(w) if w else None
        spacing = med[v] / n if n else None
        ov = (med[v] / med["none"] - 1) * 100
        print(f"| {v} | {med[v]:.2f} | {ov:+.1f} % | {n if n is not None else '-'} | "
              f"{'-' if spacing is None else f'{spacing:.2f}'} | "
              f"{'half the run' if spacing is None else f'{spacing / 2:.2f}'} |")


def restart_reshape(argv):
    """bench/restart_reshape.sh: per size and operation, the median seconds from the command to
    the job iterating again, live, by restart reshape (with its phases) and by hand, and the ratio
    restart / live. argv: [restart_reshape, CSV]."""
    with open(argv[1]) as f:
        rows = list(csv.DictReader(f))
    keys = []
    for r in rows:
        if (int(r["size_mib"]), r["op"]) not in keys:
            keys.append((int(r["size_mib"]), r["op"]))

    def med(size, op, way, col="total_s"):
        v = [float(r[col]) for r in rows
             if int(r["size_mib"]) == size and r["op"] == op and r["way"] == way and r[col]]
        return median(v) if v else None

    def show(v):
        return "-" if v is None else f"{v:.2f}"

    print("\n| size | operation | live s | restart reshape s (version, stop, start, read) | "
          "by hand s | restart / live | by hand / restart |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for size, op in keys:
        live, rr, hand = (med(size, op, w) for w in ("live", "restart", "by hand"))
        phases = ", ".join(show(med(size, op, "restart", c))
                           for c in ("version_s", "stop_s", "start_s", "read_s"))
        ratio = f"{rr / live:.2f}x" if rr and live else "-"
        hand_ratio = f"{hand / rr:.2f}x" if hand and rr else "-"
        print(f"| {size} MiB | {op} | {show(live)} | {show(rr)} ({phases}) | {show(hand)} | "
              f"{ratio} | {hand_ratio} |")


def preempt(argv):
    """bench/preempt.sh: per size, the median seconds from the signal to the last version committed
    and to mpiexec's exit with PCM's stop, and the iterations lost with it and without it (killed:
    back to the job's own last version). argv: [preempt, CSV]."""
    with open(argv[1]) as f:
        rows = list(csv.DictReader(f))
    sizes = []
    for r in rows:
        if int(r["size_mib"]) not in sizes:
            sizes.append(int(r["size_mib"]))

    def med(size, way, col):
        v = [float(r[col]) for r in rows if int(r["size_mib"]) == size and r["way"] == way and r[col]]
        return median(v) if v else None

    def show(v, fmt="{:.2f}"):
        return "-" if v is None else fmt.format(v)

    print("\n| size | signal -> version committed s | signal -> exit s | iterations lost with "
          "the stop | without (killed) | version interval |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for size in sizes:
        interval = next(r["interval"] for r in rows if int(r["size_mib"]) == size)
        print(f"| {size} MiB | {show(med(size, 'stop', 'version_s'))} | "
              f"{show(med(size, 'stop', 'exit_s'))} | {show(med(size, 'stop', 'lost'), '{:.0f}')} | "
              f"{show(med(size, 'kill', 'lost'), '{:.0f}')} | {interval} |")


def preempt_timeline(argv):
    """bench/preempt_timeline.sh: one preempt-requeue-resume cycle on the Slurm test cluster, from
    heat2d's trace (TRACE.csv; event rows have no ms_per_iter) and the outside events (EVENTS.csv:
    time_s,label). argv: [preempt_timeline, TRACE.csv, EVENTS.csv]."""
    with open(argv[1]) as f:
        trace = list(csv.DictReader(f))
    with open(argv[2]) as f:
        events = {r["label"]: float(r["time_s"]) for r in csv.DictReader(f)}
    need = ("preempting job submitted", "last version (SIGTERM)", "preempting job starts",
            "preempting job ends")
    missing = [n for n in need if n not in events]
    if missing:
        sys.exit(f"preempt_timeline: no event {', '.join(missing)} in {argv[2]}")
    stop = events["last version (SIGTERM)"]
    restart = next((r for r in trace if r["event"].startswith("restart")), None)
    if restart is None:
        sys.exit(f"preempt_timeline: the trace {argv[1]} shows no restart")
    resumed = float(restart["time_s"])
    before = [r for r in trace if r["ms_per_iter"] and float(r["time_s"]) <= stop]
    after = [r for r in trace if r["ms_per_iter"] and float(r["time_s"]) > resumed]
    t0 = float(trace[0]["time_s"])
    end = float(trace[-1]["time_s"])
    print("\n| moment | seconds from the start | from the preempting job's submission |")
    print("| --- | ---: | ---: |")
    for label, at in sorted(list(events.items()) + [("resumed (heat2d's restart)", resumed)],
                            key=lambda x: x[1]):
        print(f"| {label} | {at - t0:.1f} | {at - events['preempting job submitted']:+.1f} |")
    print(f"| the run ends | {end - t0:.1f} | {end - events['preempting job submitted']:+.1f} |")
    last = int(before[-1]["iteration"]) if before else 0
    print(f"\nsubmission -> last version: {stop - events['preempting job submitted']:.1f} s; "
          f"last version -> resumed: {resumed - stop:.1f} s (the preempting job ran "
          f"{events['preempting job ends'] - events['preempting job starts']:.1f} s of it); "
          f"resumed from iteration {restart['iteration']} (the last progress row before the stop: "
          f"{last}); {len(after)} progress rows after the resume")


def demo(argv):
    """scripts/demo.sh: the throughput at each process count of heat2d's trace (TRACE.csv:
    time_s,iteration,procs,ms_per_iter,event; event rows have no ms_per_iter), the median of the
    progress intervals, against one process's. argv: [demo, TRACE.csv, CORES]."""
    trace, cores = argv[1], int(argv[2])
    ms = {}
    with open(trace) as f:
        for row in csv.DictReader(f):
            if row["ms_per_iter"]:
                ms.setdefault(int(row["procs"]), []).append(float(row["ms_per_iter"]))
    base = None
    for procs in sorted(ms):
        m = median(ms[procs])
        base = base or m
        print(f"throughput: {procs} process{'es' if procs > 1 else ''} on {cores} cores: "
              f"{m:.2f} ms per iteration, {1000 / m:.0f} iterations/s "
              f"({base / m:.2f}x one process)")


def main(argv):
    name = argv[0] if argv else ""
    fn = globals().get(name)
    if not callable(fn) or name.startswith("_") or name == "main":
        sys.exit(f"tables.py: no table {name!r} (usage: tables.py NAME ARG...)")
    return fn(argv) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
