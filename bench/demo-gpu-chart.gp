# bench/demo-gpu-chart.gp - the chart of make demo-gpu: each group's charge
# over time, from the CSV scripts/demo-gpu.sh writes (the columns of make
# demo's: t_ms,event,group,current_bytes,detail), events as labelled
# vertical lines.  scripts/demo-gpu.sh calls:
#   gnuplot -e "csv='DIR/charge.csv'; png='DIR/charge.png'; ymax=MIB" bench/demo-gpu-chart.gp
set terminal pngcairo size 1200,600 font ",10"
set output png
set datafile separator ","
set title "nxquota on a GPU, nxquotad as the authority: each cgroup's charge over time"
set xlabel "time (s)"
set ylabel "charge (MiB)"
set yrange [0:ymax]
set key top left
set grid
ev = "< awk -F, 'NR > 1 && $2 != \"sample\" && $2 != \"ask\"' ".csv
plot for [g in "inference training"] \
	"< awk -F, '$2 == \"sample\" && $3 == \"".g."\"' ".csv \
	using ($1 / 1000):($4 / 1048576) with steps lw 2 title g, \
	ev using ($1 / 1000):(0):(0):(ymax) with vectors nohead dt 2 lc rgb "gray50" notitle, \
	ev using ($1 / 1000):(ymax * 0.99):(strcol(2)." ".strcol(3)) with labels rotate by -90 left font ",8" offset 0.4,0 notitle
