# bench/idle-chart.gp - figure (c) of make -C bench gpu-story: device memory
# reserved but idle over time, a static split against nxquota with lending,
# and the demand left unmet, from DIR/idle.csv
# (t_ms,mode,idle_reserved,unmet,in_use,stranded).  Called as:
#   gnuplot -e "csv='DIR/idle.csv'; png='DIR/idle.png'; cap=BYTES" bench/idle-chart.gp
set terminal pngcairo size 1200,600 font ",10"
set output png
set datafile separator ","
set title "The same two workloads: GPU memory reserved but idle, and demand left unmet"
set xlabel "time (s)"
set ylabel "% of the device's capacity"
set yrange [0:100]
set key top right
set grid
sel(m) = "< awk -F, '$2 == \"".m."\"' ".csv
plot sel("static") using ($1 / 1000):(100 * $3 / cap) with steps lw 2 lc rgb "#c0392b" title "static split: reserved but idle", \
     sel("nxquota") using ($1 / 1000):(100 * $3 / cap) with steps lw 2 lc rgb "#2471a3" title "nxquota: reserved but idle", \
     sel("static") using ($1 / 1000):(100 * $4 / cap) with steps lw 1 dt 2 lc rgb "#c0392b" title "static split: demand unmet", \
     sel("nxquota") using ($1 / 1000):(100 * $4 / cap) with steps lw 1 dt 2 lc rgb "#2471a3" title "nxquota: demand unmet"
