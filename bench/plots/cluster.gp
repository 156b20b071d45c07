# cluster.gp — bench/cluster.sh's summary: mean turnaround and mean wait of each share of
# malleable jobs, as ratios to rigid EASY on the same workload, one line per workload and
# reconfiguration cost (malleable jobs chosen at random).
# gnuplot -c cluster.gp RATIOS.csv OUT.png
# RATIOS.csv: workload,pick,cost_factor,share,turnaround,wait (ratios to rigid EASY), sorted by
#   workload, pick, cost, share.
dir = ARG0[:strstrt(ARG0, "cluster.gp") - 1]
load dir . "common.gp"
set terminal pngcairo size 1100,520 font "DejaVu Sans,11" enhanced
set output ARG2
set key autotitle noenhanced
set multiplot layout 1,2 title "NASA iPSC/860 log on 128 simulated nodes: pcmd's policy against rigid EASY"
set xlabel "malleable jobs (%)"
set xrange [-5:105]
set xtics 0, 20, 100
set key bottom left
workloads = system(sprintf("awk -F, 'NR > 1 && $2 == \"random\" { print $1 }' '%s' | sort -u | tr '\\n' ' '", ARG1))
series(w, c) = sprintf("< awk -F, 'NR == 1 || ($1 == \"%s\" && $2 == \"random\" && $3 == %s)' '%s'", w, c, ARG1)
set ylabel "mean turnaround / rigid EASY"
set yrange [0:1.8]
plot for [w in workloads] for [i = 1:2] series(w, word("1 10", i)) using 4:5 \
       with linespoints dt i title sprintf("%s, cost x%s", w, word("1 10", i)), \
     1 with lines lc rgb "#999999" dt 3 notitle
# The wait: not for a workload whose rigid wait is a few seconds (the log as it is: x1), where
# the ratio of small numbers runs off the scale.
set ylabel "mean wait / rigid EASY (workloads with a queue)"
set yrange [0:1.2]
set key off
plot for [w in workloads] for [i = 1:2] series(w, word("1 10", i)) \
       using 4:(w[1:2] eq "x1" ? NaN : $6) \
       with linespoints dt i title sprintf("%s, cost x%s", w, word("1 10", i)), \
     1 with lines lc rgb "#999999" dt 3 notitle
unset multiplot
