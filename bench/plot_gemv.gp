# bench/plot_gemv.gp: the GEMV benchmark's plot. bench/report.py gemv runs it:
#   gnuplot -e "m1='DIR/gemv_m1.dat'; m4='DIR/gemv_m4.dat'; out='DIR/gemv.png'; ncols=N; probe1='GB/s'" plot_gemv.gp
# Each .dat holds one row per shape and one column per contender: its GB/s over the 1-thread
# read-bandwidth probe's in the same case (the probe turns interleaved with it), cold weights,
# 1 thread; "-" where a contender did not run.
if (!exists("m1") || !exists("m4") || !exists("out")) {
  print "plot_gemv.gp: set m1, m4 and out with -e"
  exit status 1
}
if (!exists("ncols")) ncols = 9
if (!exists("probe1")) probe1 = "?"

set terminal pngcairo size 1400,1000 font "sans,10"
set output out
set datafile missing "-"
set style data histograms
set style histogram clustered gap 1.5
set style fill solid 0.85 border lc rgb "#333333"
set boxwidth 0.9
set grid ytics lc rgb "#dddddd"
set yrange [0:1.1<*]   # autoscaled, but the line at 1 always shows
set ylabel "fraction of probe read bandwidth"
set key outside right top vertical Left reverse noenhanced
set xtics noenhanced nomirror
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 lc rgb "#aa0000"

heading = sprintf("GEMV, cold weights (> 1 GiB rotation), 1 thread: GB/s of weight bytes over the read " . \
                  "probe's in the same case (run median %s GB/s)", probe1)
set multiplot layout 2,1 title heading noenhanced
set title "M = 1"
plot for [c=2:ncols] m1 using c:xtic(1) title columnheader(c)
set title "M = 4"
plot for [c=2:ncols] m4 using c:xtic(1) title columnheader(c)
unset multiplot
