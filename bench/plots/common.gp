# common.gp — the look shared by every PCM plot (loaded by the other scripts in this folder).
# A PNG of 1000x560 in DejaVu Sans, a light grid, comma-separated input with a header line.
set terminal pngcairo size 1000,560 font "DejaVu Sans,11" enhanced
set datafile separator comma
set key autotitle columnhead
set grid back lc rgb "#dddddd"
set border 3
set tics nomirror out
set key top left opaque box lc rgb "#cccccc"
# Colours, in order: PCM live, checkpoint/restart, raw baseline, others.
set linetype 1 lc rgb "#1f77b4" lw 2 pt 7 ps 0.8
set linetype 2 lc rgb "#d62728" lw 2 pt 5 ps 0.8
set linetype 3 lc rgb "#7f7f7f" lw 2 pt 9 ps 0.8
set linetype 4 lc rgb "#2ca02c" lw 2 pt 11 ps 0.8
set linetype 5 lc rgb "#9467bd" lw 2 pt 13 ps 0.8
set linetype 6 lc rgb "#ff7f0e" lw 2 pt 3 ps 0.8
