# scale.gp — pcmd's costs against the number of emulated ranks N (bench/scale.sh), log-log.
# gnuplot -c scale.gp IN.csv OUT.png
# IN.csv (tables.py scale): n,hello_s,poll_p50_ms,poll_p99_ms,records_s,commit_s,deliver_ms,
# report_ms,lost_s,restart_ms,hwm_mb,cpu_s,other_p99_ms,other_max_ms
dir = ARG0[:strstrt(ARG0, "scale.gp") - 1]
load dir . "common.gp"
set terminal pngcairo size 1200,560 font "DejaVu Sans,11" enhanced
set output ARG2
set multiplot layout 1,2 title "pcmd against N emulated ranks of one job (one pcmd, 2 cores)"
set logscale xy
set xlabel "ranks N"
set xtics (64, 256, 1024, 4096, 16384)
set key top left
set ylabel "seconds"
set title "times of whole operations"
plot ARG1 using 1:2 with linespoints lt 1 title "N hellos registered", \
     "" using 1:5 with linespoints lt 2 title "N shard records taken", \
     "" using 1:6 with linespoints lt 3 title "last record -> committed", \
     "" using 1:($10/1000) with linespoints lt 4 title "restart registration", \
     "" using 1:12 with linespoints lt 5 title "pcmd CPU seconds (whole run)", \
     1 with lines dt 2 lc rgb "#888888" title "1 s goal (commit)"
set ylabel "milliseconds, MiB"
set title "latencies while N ranks are connected, and memory"
set key bottom right
plot ARG1 using 1:4 with linespoints lt 1 title "rank 0 poll p99 (ms)", \
     "" using 1:7 with linespoints lt 2 title "command -> delivered (ms)", \
     "" using 1:13 with linespoints lt 3 title "other job p99 (ms)", \
     "" using 1:11 with linespoints lt 4 title "pcmd peak RSS (MiB)", \
     "" using 1:15 with linespoints lt 5 title "pcmd's longest loop pass (ms)", \
     10 with lines dt 2 lc rgb "#888888" title "10 ms goal (poll p99)", \
     50 with lines dt 3 lc rgb "#888888" title "50 ms goal (one request)"
unset multiplot
