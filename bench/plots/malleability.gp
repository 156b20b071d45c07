# malleability.gp — live split/merge against stop-and-restart: end-to-end seconds against the
# data moved, both axes logarithmic, one line per method and direction.
# gnuplot -c malleability.gp IN.csv OUT.png [REPS]
# IN.csv (malleability.sh): size_mib, then the median seconds of each method 1->2 and 2->1: the
# paper's calls, PCM checkpoint restart, raw-file restart, the paper's calls overlapped,
# PCM_Adapt, PCM_Adapt overlapped.
dir = ARG0[:strstrt(ARG0, "malleability.gp") - 1]
load dir . "common.gp"
set output ARG2
set title "Moving data between 1 and 2 processes: live (PCM split/merge) against stop-and-restart" . \
          (ARGC >= 3 ? sprintf("\n{/*0.85 end to end; %s}", ARG3 == "1" ? "one run each" : "medians of " . ARG3 . " runs each") : "")
set xlabel "data moved (MiB, log scale)"
set ylabel "seconds, end to end (log scale)"
set logscale xy
set format y "%g"
set key outside right top
stats ARG1 using 1 nooutput
set xrange [STATS_min / 1.4 : STATS_max * 1.4]
# Colour by method (common.gp: 1 live, 2 checkpoint, 3 raw, 4-6 the others); solid with filled marks for 1->2,
# dashed with open marks for 2->1.
plot for [i=2:13] ARG1 using 1:i:xtic(1) with linespoints lt (i / 2) \
     dt 1 + i % 2 pt (i % 2 ? 6 : 7) ps 1.1
