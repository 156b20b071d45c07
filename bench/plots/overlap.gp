# overlap.gp — what a split or a merge costs the application: blocking, overlapped (PCM_OVERLAP=1)
# and a stop and restart through raw files moving the same bytes, one group of bars per step.
# gnuplot -c overlap.gp IN.csv OUT.png MIB REPS
# IN.csv (overlap.sh): step, then the median seconds of blocking (visible), overlapped
# (visible), overlapped (inside PCM_Adapt) and the raw-file restart (0 when not measured).
dir = ARG0[:strstrt(ARG0, "overlap.gp") - 1]
load dir . "common.gp"
set output ARG2
set title sprintf("Splits and merges of %s MiB: what the application loses\n{/*0.85 %s; the iterations around the switch less their steady time}", \
                  ARG3, ARG4 == "1" ? "one run each" : "medians of " . ARG4 . " runs each")
set ylabel "seconds (log scale)"
set logscale y
set format y "%g"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top right noenhanced
set yrange [0.01:*]
plot ARG1 using 2:xtic(1) lt 2, '' using 3 lt 1, '' using 4 lt 4, '' using 5 lt 3
