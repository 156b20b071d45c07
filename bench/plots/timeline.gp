# timeline.gp — a malleable heat2d run over time (after the PCM paper's Figures 9 and 10):
# throughput per progress interval, the process count, the reconfigurations and outside events.
# gnuplot -c timeline.gp TRACE.csv EVENTS.csv OUT.png [TITLE]
# TRACE.csv: what heat2d --trace writes (time_s,iteration,procs,ms_per_iter,event); rows with an
#   empty ms_per_iter are events (start, migrate, split, merge, restart).
# EVENTS.csv: time_s,label — things that happened outside the job (epoch seconds, as the trace).
#   It may hold only its header, or not exist. A label ending in "starts" opens a shaded span that
#   the next label ending in "ends" closes (or the end of the run): "competing load starts" ...
#   "competing load ends" shades the span and names it "competing load" in the key.
# Time is in seconds from the trace's first row; events outside the run are drawn at its edges.
dir = ARG0[:strstrt(ARG0, "timeline.gp") - 1]
load dir . "common.gp"
set output ARG3
trace = ARG1
events = ARG2

# One pass over the trace into arrays (plot, and stats where a using spec names $4, drop the
# event rows, whose ms_per_iter is empty; column(4) keeps them): time, iteration, processes,
# ms/iteration (NaN in event rows) and event.
set key noautotitle
nr = 0
stats trace using (nr = nr + 1, 0) skip 1 nooutput
array T[nr]
array IT[nr]
array P[nr]
array MS[nr]
array EV[nr]
k = 0
stats trace using (k = k + 1, T[k] = $1, IT[k] = $2, P[k] = $3, \
      MS[k] = valid(4) ? column(4) : NaN, EV[k] = valid(4) ? "" : strcol(5), 0) skip 1 nooutput
t0 = T[1]
tend = T[nr] - t0
pmax = 1
do for [i = 1:nr] { T[i] = T[i] - t0; pmax = P[i] > pmax ? P[i] : pmax }
clamp(t) = t < 0 ? 0 : t > tend ? tend : t

# Throughput at the middle of each interval (which began at the previous row's iteration); an
# event row breaks the line, so a reconfiguration shows as a gap.
array X[nr]
array Y[nr]
do for [i = 1:nr] {
  X[i] = MS[i] == MS[i] && i > 1 ? T[i] - (IT[i] - IT[i - 1]) * MS[i] / 2000.0 : NaN
  Y[i] = MS[i] == MS[i] && i > 1 ? 1000.0 / MS[i] : NaN
}

# The job's own events (not "start").
is_event(s) = s ne "" && s[1:5] ne "start"
nj = sum [i = 1:nr] (is_event(EV[i]) ? 1 : 0)
array jt[nj > 0 ? nj : 1]
array jl[nj > 0 ? nj : 1]
k = 0
# A label is the event up to its reason ("split 1->2 0.412s; policy: ..." shows "split 1->2 0.412s").
head(s) = strstrt(s, ";") > 0 ? s[1:strstrt(s, ";") - 1] : s
do for [i = 1:nr] { if (is_event(EV[i])) { k = k + 1; jt[k] = T[i]; jl[k] = head(EV[i]) } }

# Outside events (counted first: stats refuses a file without data).
no = int(system(sprintf("awk -F, 'NR > 1 && NF >= 2' '%s' 2>/dev/null | wc -l", events)))
array ot[no > 0 ? no : 1]
array ol[no > 0 ? no : 1]
k = 0
if (no > 0) {
  stats events using (k = k + 1, ot[k] = $1 - t0, ol[k] = strcol(2), 0) skip 1 nooutput
}

ends_with(s, w) = strlen(s) >= strlen(w) && s[strlen(s) - strlen(w) + 1:] eq w
shade = "#fbe3d6"
span_name = ""
open = -1
do for [i = 1:no] {
  if (ends_with(ol[i], "starts") && open < 0) {
    open = clamp(ot[i])
    span_name = ol[i][1:strlen(ol[i]) - 7]
  }
  if (ends_with(ol[i], "ends") && open >= 0) {
    set object rect from first open, graph 0 to first clamp(ot[i]), graph 1 \
        behind fc rgb shade fs solid 1.0 noborder
    open = -1
  }
}
if (open >= 0) {
  set object rect from first open, graph 0 to first tend, graph 1 \
      behind fc rgb shade fs solid 1.0 noborder
}

# Event lines: the job's reconfigurations (labelled from the top), outside events (from the
# bottom), each label beside its line and behind the data.
do for [i = 1:nj] {
  set arrow from first jt[i], graph 0 to first jt[i], graph 1 nohead front lc rgb "#2ca02c" lw 1.5
  set label jl[i] at first jt[i], graph 0.98 rotate by 90 right back noenhanced \
      offset character 1.6, 0 font ",9" tc rgb "#1e7a1e"
}
do for [i = 1:no] {
  set arrow from first clamp(ot[i]), graph 0 to first clamp(ot[i]), graph 1 nohead front \
      lc rgb "#9467bd" dt 2 lw 1.5
  set label ol[i] at first clamp(ot[i]), graph 0.02 rotate by 90 left back noenhanced \
      offset character 1.6, 0 font ",9" tc rgb "#6a3d9a"
}

set title (ARGC >= 4 ? ARG4 : "heat2d with PCM: throughput and processes over time")
set xlabel "seconds since the start of the run"
set ylabel "throughput (iterations per second), per progress interval"
set y2label "MPI processes"
set xrange [0 : tend]
set yrange [0 : *]
set y2range [0 : pmax + 1]
set y2tics 1 nomirror out
set ytics nomirror
set border 11
set key below horizontal noopaque nobox

plot sample [i = 1:nr:1] "+" using (X[i]):(Y[i]) with linespoints lt 1 pt 7 ps 0.6 \
       title "throughput", \
     [i = 1:nr:1] "+" using (T[i]):(P[i]) axes x1y2 with steps lt 6 lw 2.5 \
       title "processes", \
     NaN with lines lc rgb "#2ca02c" lw 1.5 title "reconfiguration (heat2d's trace)", \
     NaN with lines lc rgb "#9467bd" dt 2 lw 1.5 title "outside event", \
     NaN with filledcurves y1=0 fc rgb shade fs solid 1.0 title span_name
