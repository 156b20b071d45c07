# heatmap.gp — heat2d's final grid as an image (the file that heat2d --dump writes).
# gnuplot -c heatmap.gp GRID.bin NX NY OUT.png [TITLE]
# GRID.bin: NY rows of NX native doubles, row-major, row 0 (the hot top boundary) first.
dir = ARG0[:strstrt(ARG0, "heatmap.gp") - 1]
load dir . "common.gp"
set output ARG4
nx = int(ARG2)
ny = int(ARG3)
set title (ARGC >= 5 ? ARG5 : sprintf("heat2d: final temperature on the %d x %d grid", nx, ny))
unset key
unset grid
set border 15
set tics out
set size ratio -1
set xrange [-0.5 : nx - 0.5]
set yrange [-0.5 : ny - 0.5]
set xlabel "column"
set ylabel "row (0 = hot top edge)"
# Row 0 is drawn at the top: flipy mirrors the file's rows, and the labels count from the top.
set ytics ()
do for [k = 0:4] { r = (ny - 1) * k / 4; set ytics add (sprintf("%d", r) ny - 1 - r) }
# Linear colours, unless most of the grid is still cold (early in a run on a large grid): heat
# then spreads from the top edge with a long thin tail that a linear scale shows as black, so the
# scale is logarithmic, temperatures below 1e-4 (and the cold edges, 0) taking the coldest colour.
stats ARG1 binary format="%float64" using 1 nooutput
tmin = STATS_median < 1 ? 1e-4 : 0
if (tmin > 0) {
  set logscale cb
  set cbrange [tmin : 100]
  set format cb "10^{%T}"
  set cblabel "temperature (log scale)"
} else {
  set cbrange [0 : 100]
  set cblabel "temperature"
}
set colorbox user origin graph 1.03, graph 0 size character 1.5, graph 1
# An inferno-like ramp: black (cold) through red and orange to pale yellow (hot).
set palette defined (0 "#000004", 0.15 "#280b53", 0.3 "#65156e", 0.45 "#9f2a63", \
                     0.6 "#d44842", 0.75 "#f57d15", 0.9 "#fac127", 1 "#fcffa4")
plot ARG1 binary array=(nx, ny) format="%float64" flipy using ($1 < tmin ? tmin : $1) with image
