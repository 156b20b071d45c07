# mpi_scale.gp — PCM's MPI-side costs against the process count P (bench/mpi_scale.sh), log-log.
# gnuplot -c mpi_scale.gp IN.csv OUT.png
# IN.csv (mpi_scale_fit.py): procs,size_mib,split,merge,migrate,ckpt_wait,ckpt_write,restart_read,
# agree_{status,adapt,bcast}[_w0][_spin]_us (_w0: an agreement at every call)
dir = ARG0[:strstrt(ARG0, "mpi_scale.gp") - 1]
load dir . "common.gp"
set terminal pngcairo size 1200,700 font "DejaVu Sans,11" enhanced
set output ARG2
set multiplot layout 1,2 title "PCM's MPI side against P (MPICH ch3, oversubscribed on 2 cores, waits yield the core)"
set logscale xy
set xlabel "processes P"
set key outside below center maxrows 3 spacing 1.1 samplen 2
set ylabel "seconds"
set title "operations (split P -> 2P, merge 2P -> P) at the largest size measured at every P"
plot ARG1 using "procs":"split" with linespoints lt 1 title "split P -> 2P", \
     "" using "procs":"merge" with linespoints lt 2 title "merge 2P -> P", \
     "" using "procs":"migrate" with linespoints lt 3 title "migrate one rank", \
     "" using "procs":"ckpt_write" with linespoints lt 4 title "checkpoint written at once", \
     "" using "procs":"ckpt_wait" with linespoints lt 5 title "checkpoint wait (background)", \
     "" using "procs":"restart_read" with linespoints lt 6 title "restart read"
set ylabel "microseconds per call"
set title "per-iteration agreement"
plot ARG1 using "procs":"agree_status_us" with linespoints lt 1 title "PCM\\_Status (default window)", \
     "" using "procs":"agree_status_w0_us" with linespoints lt 2 title "PCM\\_Status, an agreement every call", \
     "" using "procs":"agree_bcast_us" with linespoints lt 3 title "MPI\\_Bcast 16 B", \
     "" using "procs":"agree_status_w0_spin_us" with points lt 4 pt 6 ps 1.5 title "every call, spinning (no yield)"
unset multiplot
