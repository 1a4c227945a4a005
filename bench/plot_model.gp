# bench/plot_model.gp: the whole-model benchmark's plot. bench/report.py runs it:
#   gnuplot -e "dat='DIR/model.dat'; out='DIR/model.png'" plot_model.gp
# model.dat (bench/report.py) holds one row per case (metric and thread count) and one
# column per contender (median over the run; "-" where it did not run), in this order: flashkern
# exact, flashkern fast, torch f32, torch bf16, and llama.cpp bf16 in a run that has it (report.py
# passes cols, the number of contenders: 4 or 5, and prefill = 1 when the rows include the LM
# prefill measure). The first row names them.
if (!exists("dat") || !exists("out")) {
  print "plot_model.gp: set dat and out with -e"
  exit status 1
}
if (!exists("cols")) cols = 4
if (!exists("prefill")) prefill = 0

set terminal pngcairo size 1200,760 font "sans,10"
set output out
set datafile missing "-"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border rgb "#444444"
set boxwidth 0.9
set logscale y 10
set yrange [1:*]
set format y "%g"
set grid ytics mytics lc rgb "#dddddd"
set xtics rotate by 30 right nomirror noenhanced
set ylabel "per second (median; higher is faster), log scale"
set key outside right top vertical Left reverse noenhanced
set title "Whole LFM2 models, same machine, same run: flashkern's runtime (bf16 weights) against\n" . \
          "transformers / liquid-audio on PyTorch CPU (float32, bfloat16)" . (cols > 4 ? " and llama.cpp (bf16)" : "") . \
          (prefill ? "; decode and prefill tokens/s, detokenizer frames/s" : "; decode tokens/s, detokenizer frames/s") \
          noenhanced

if (cols > 4) {
  plot dat using 2:xtic(1) title columnheader(2) lc rgb "#1f77b4", \
       ''  using 3 title columnheader(3) lc rgb "#17becf", \
       ''  using 4 title columnheader(4) lc rgb "#d62728", \
       ''  using 5 title columnheader(5) lc rgb "#ff7f0e", \
       ''  using 6 title columnheader(6) lc rgb "#2ca02c"
} else {
  plot dat using 2:xtic(1) title columnheader(2) lc rgb "#1f77b4", \
       ''  using 3 title columnheader(3) lc rgb "#17becf", \
       ''  using 4 title columnheader(4) lc rgb "#d62728", \
       ''  using 5 title columnheader(5) lc rgb "#ff7f0e"
}
