# overhead.gp — PCM's overhead against granularity (after the PCM paper's Figure 8).
# gnuplot -c overhead.gp IN.csv OUT.png [TITLE]
# IN.csv (overhead.sh): mesh,overhead_pct,low_pct,high_pct,overhead_w0_pct,low_w0_pct,high_w0_pct
dir = ARG0[:strstrt(ARG0, "overhead.gp") - 1]
load dir . "common.gp"
set output ARG2
set title (ARGC >= 3 ? ARG3 : "heat2d with PCM against plain MPI (no reconfiguration)")
set xlabel "mesh side (cells); larger = more work per iteration"
set ylabel "run time overhead (%), median and range of repetitions"
set logscale x 2
set xtics (64, 128, 256, 512, 1024, 2048, 4096)
set offsets graph 0.05, graph 0.05, 0, 0
set xzeroaxis lt -1 lw 1
set key top right
plot ARG1 using ($1 * 0.97):2:3:4 with yerrorlines lt 1 title "PCM (default PCM\\_Status window)", \
     "" using ($1 * 1.03):5:6:7 with yerrorlines lt 2 title "PCM, agreement at every call (PCM\\_STATUS\\_WINDOW\\_US=0)", \
     1 with lines dt 2 lc rgb "#888888" title "1 % target"
