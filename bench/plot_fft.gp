# bench/plot_fft.gp: the inverse-FFT benchmark's plot. bench/report.py fft runs it:
#   gnuplot -e "dat='DIR/fft.dat'; out='DIR/fft.png'" plot_fft.gp
# fft.dat holds one row per N and three columns per contender (median, min, max microseconds per
# call; "-" where it did not run), contenders in this order: flashkern exact, FFTW MEASURE,
# FFTW MEASURE + 1/N pass, FFTW MEASURE input preserved, OpenBLAS dense sgemv (every N), then the
# two frames (N = 1280 only). The first row names them.
if (!exists("dat") || !exists("out")) {
  print "plot_fft.gp: set dat and out with -e"
  exit status 1
}

set terminal pngcairo size 1200,800 font "sans,10"
set output out
set datafile missing "-"
set logscale xy 2
set logscale y 10
set xrange [200:2600]
set yrange [0.05:*]
set xtics ("256" 256, "512" 512, "1024" 1024, "1280" 1280, "2048" 2048) nomirror
set format y "%g"
set grid xtics ytics mytics lc rgb "#dddddd"
set xlabel "N (inverse real FFT size)"
set ylabel "microseconds per call (median; bars: min to max over repetitions)"
set key outside right top vertical Left reverse noenhanced
set title "Inverse real FFT, hot (L1/L2-resident), 1 thread, pinned: time per transform\nat N = 1280 also one " . \
          "detokenizer frame (polar + iFFT + window + overlap-add + envelope)" noenhanced

med(e) = 2 + 3 * e
plot dat using 1:(column(med(0))):(column(med(0) + 1)):(column(med(0) + 2)) with yerrorlines \
       lw 2 pt 7 lc rgb "#1f77b4" title columnheader(med(0)), \
     dat using 1:(column(med(1))):(column(med(1) + 1)):(column(med(1) + 2)) with yerrorlines \
       lw 2 pt 5 lc rgb "#d62728" title columnheader(med(1)), \
     dat using 1:(column(med(2))):(column(med(2) + 1)):(column(med(2) + 2)) with yerrorlines \
       lw 1 dt 2 pt 4 lc rgb "#d62728" title columnheader(med(2)), \
     dat using 1:(column(med(3))):(column(med(3) + 1)):(column(med(3) + 2)) with yerrorlines \
       lw 1 dt 3 pt 6 lc rgb "#ff7f0e" title columnheader(med(3)), \
     dat using 1:(column(med(4))):(column(med(4) + 1)):(column(med(4) + 2)) with yerrorlines \
       lw 2 pt 9 lc rgb "#2ca02c" title columnheader(med(4)), \
     dat using 1:(column(med(5))):(column(med(5) + 1)):(column(med(5) + 2)) with yerrorbars \
       pt 13 ps 1.8 lc rgb "#17becf" title columnheader(med(5)), \
     dat using 1:(column(med(6))):(column(med(6) + 1)):(column(med(6) + 2)) with yerrorbars \
       pt 11 ps 1.8 lc rgb "#9467bd" title columnheader(med(6))
