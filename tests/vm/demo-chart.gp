# tests/vm/demo-chart.gp - the chart of make demo: each group's charge over
# time, from the CSV demo.sh writes (t_ms,event,group,current_bytes,detail),
# events as labelled vertical lines.  run.sh --demo calls:
#   gnuplot -e "csv='build/demo/charge.csv'; png='build/demo/charge.png'" tests/vm/demo-chart.gp
set terminal pngcairo size 1200,600 font ",10"
set output png
set datafile separator ","
set title "nxquota demo: each cgroup's charge (sysfs current) over time"
set xlabel "time (s)"
set ylabel "charge (MiB)"
set yrange [0:1100]
# below the plot: the event labels use the top of it, from t = 0
set key below horizontal
set grid
# Events: a vertical line each, labelled with its name and group.  The
# labels are horizontal, each a line below the last (ten levels, then from
# the top again), so events milliseconds apart do not write over each
# other.
ev = "< awk -F, 'NR > 1 && $2 != \"sample\"' ".csv
plot for [g in "inference training"] \
	"< awk -F, '$2 == \"sample\" && $3 == \"".g."\"' ".csv \
	using ($1 / 1000):($4 / 1048576) with steps lw 2 title g, \
	ev using ($1 / 1000):(0):(0):(1100) with vectors nohead dt 2 lc rgb "gray50" notitle, \
	ev using ($1 / 1000):(1070 - 38 * (int(column(0)) % 10)):(strcol(2)." ".strcol(3)) with labels left font ",8" offset 0.3,0 notitle
