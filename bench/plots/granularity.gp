# granularity.gp — heat2d throughput against process count per mesh (the PCM paper's Figure 1).
# gnuplot -c granularity.gp IN.csv OUT.png CORES [TITLE]
# IN.csv (granularity.sh): procs, then one column of Mcell-updates/s per mesh.
dir = ARG0[:strstrt(ARG0, "granularity.gp") - 1]
load dir . "common.gp"
set output ARG2
set title (ARGC >= 4 ? ARG4 : sprintf("plain heat2d on a %s-core machine: throughput against processes", ARG3))
set xlabel "MPI processes"
set ylabel "Mcell-updates per second (log scale)"
set logscale y
set xtics 1
set key top right
set arrow from first (ARG3 + 0.5), graph 0 to first (ARG3 + 0.5), graph 1 nohead dt 2 lc rgb "#888888"
set label "cores" at first (ARG3 + 0.55), graph 0.95 tc rgb "#666666"
set key noautotitle
stats ARG1 skip 1 nooutput
set key autotitle columnhead
plot for [i=2:STATS_columns] ARG1 using 1:i with linespoints lt (i - 1)
