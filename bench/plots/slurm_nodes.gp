# slurm_nodes.gp — nodes in use over time for the rigid and the malleable run of
# bench/slurm.py, one panel each, on the same time axis.
# gnuplot -c slurm_nodes.gp RIGID.csv MALLEABLE.csv EVENTS.csv OUT.png [TITLE [RIGID_TITLE
#   [MALLEABLE_TITLE]]]
# RIGID.csv, MALLEABLE.csv: time_s,held,busy,waiting — seconds since the run's first submission,
#   nodes that Slurm jobs hold (scontrol's NodeList, pcmd's second allocations included), nodes
#   running heat2d processes (from the jobs' traces), jobs waiting in the queue.
# EVENTS.csv: time_s,kind,label — the malleable run's growths ("grow") and shrinks ("shrink"),
#   drawn as marks at the top of its panel; it may hold only its header.
dir = ARG0[:strstrt(ARG0, "slurm_nodes.gp") - 1]
load dir . "common.gp"
set terminal pngcairo size 1100,720 font "DejaVu Sans,11" enhanced
set output ARG4

stats ARG1 using 1 nooutput
tmax = STATS_max
stats ARG2 using 1 nooutput
tmax = STATS_max > tmax ? STATS_max : tmax
stats ARG1 using 4 nooutput
top = STATS_max
stats ARG2 using 4 nooutput
top = STATS_max > top ? STATS_max : top
top = (top > 3 ? top : 3) + 1.2
mark = top - 0.45
ne = int(system(sprintf("awk -F, 'NR > 1 && NF >= 2' '%s' 2>/dev/null | wc -l", ARG3)))

set xrange [0 : tmax]
set yrange [0 : top]
set ytics 0, 1
set ylabel "nodes / jobs"
set key outside right top vertical noopaque nobox font ",10" width -2
set multiplot layout 2, 1 title (ARGC >= 5 ? ARG5 : "nodes over time") font ",12"
set lmargin 9
set rmargin 24

set title (ARGC >= 6 ? ARG6 : "rigid") noenhanced
unset xlabel
plot ARG1 using 1:2 with fillsteps fc rgb "#c6dbef" fs solid 1.0 noborder title "nodes held (Slurm)", \
     ARG1 using 1:3 with steps lt 1 title "nodes busy (heat2d)", \
     ARG1 using 1:4 with steps lt 2 dt 2 title "jobs waiting"

set title (ARGC >= 7 ? ARG7 : "malleable") noenhanced
set xlabel "seconds since the run's first submission"
if (ne > 0) {
  plot ARG2 using 1:2 with fillsteps fc rgb "#c6dbef" fs solid 1.0 noborder title "nodes held (Slurm)", \
       ARG2 using 1:3 with steps lt 1 title "nodes busy (heat2d)", \
       ARG2 using 1:4 with steps lt 2 dt 2 title "jobs waiting", \
       ARG3 using 1:(strcol(2) eq "grow" ? mark : NaN) with points lt 4 pt 9 ps 1.4 title "growth done", \
       ARG3 using 1:(strcol(2) eq "shrink" ? mark : NaN) with points lt 6 pt 11 ps 1.4 title "shrink decided"
} else {
  plot ARG2 using 1:2 with fillsteps fc rgb "#c6dbef" fs solid 1.0 noborder title "nodes held (Slurm)", \
       ARG2 using 1:3 with steps lt 1 title "nodes busy (heat2d)", \
       ARG2 using 1:4 with steps lt 2 dt 2 title "jobs waiting"
}
unset multiplot
