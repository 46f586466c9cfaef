# bench/csv2svg.awk - an SVG line chart where gnuplot is absent (the GPU
# machine), for the two CSVs of scripts/demo-gpu.sh:
#   awk -F, -v title=T -f bench/csv2svg.awk charge.csv > charge.svg
#       t_ms,event,group,current_bytes,detail: one step line per group
#       (event "sample"), a dashed vertical line per other event
#   awk -F, -v title=T -v mode=idle -f bench/csv2svg.awk idle.csv > idle.svg
#       t_ms,mode,idle_reserved,unmet,...: a step line per mode's
#       idle_reserved (solid) and unmet (dashed)
# Steps as polylines; no dependency beyond awk.
NR == 1 { next }
{
	t = $1 / 1000
	if (t > tmax) tmax = t
	if (mode == "idle") {
		addpt($2 " idle", t, $3); addpt($2 " unmet", t, $4)
	} else if ($2 == "sample") {
		addpt($3, t, $4)
	} else if ($2 != "ask") {
		ne++; et[ne] = t; el[ne] = $2 " " $3
	}
}
function addpt(s, x, y) {
	if (!(s in np)) { ns++; sname[ns] = s; np[s] = 0 }
	np[s]++; px[s, np[s]] = x; py[s, np[s]] = y
	if (y > ymax) ymax = y
}
END {
	W = 1200; H = 600; L = 80; R = 240; T = 50; B = 60
	if (tmax <= 0) tmax = 1
	if (ymax <= 0) ymax = 1
	ymax *= 1.1
	unit = ymax > 2 * 1073741824 ? 1073741824 : 1048576
	uname = unit == 1048576 ? "MiB" : "GiB"
	printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H
	printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
	printf "<text x=\"%d\" y=\"25\" font-size=\"15\">%s</text>\n", L, title
	pw = W - L - R; ph = H - T - B
	printf "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n", L, T, pw, ph
	for (i = 0; i <= 5; i++) {
		y = T + ph - ph * i / 5; v = ymax * i / 5 / unit
		printf "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>", L, y, L + pw, y
		printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", L - 5, y + 4, v
		x = L + pw * i / 5
		printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%.1f</text>\n", x, T + ph + 18, tmax * i / 5
	}
	printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time (s)</text>\n", L + pw / 2, H - 15
	printf "<text x=\"20\" y=\"%d\" transform=\"rotate(-90 20 %d)\" text-anchor=\"middle\">%s</text>\n", T + ph / 2, T + ph / 2, (mode == "idle" ? "bytes (" uname ")" : "charge (" uname ")")
	split("#2471a3 #c0392b #27ae60 #8e44ad #d35400 #7f8c8d", col, " ")
	lx = -100; ly = T + 4
	for (i = 1; i <= ne; i++) {
		x = L + pw * et[i] / tmax
		# labels of events closer than 12 px go one below the other
		ly = (x - lx < 12) ? ly + 95 : T + 4
		if (ly > T + ph - 90) ly = T + 4
		lx = x
		printf "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"gray\" stroke-dasharray=\"4 3\"/>", x, T, x, T + ph
		printf "<text x=\"%.1f\" y=\"%d\" font-size=\"9\" transform=\"rotate(90 %.1f %d)\">%s</text>\n", x + 3, ly, x + 3, ly, el[i]
	}
	for (i = 1; i <= ns; i++) {
		s = sname[i]; c = col[(i - 1) % 6 + 1]
		if (mode == "idle") c = (s ~ /^static/) ? "#c0392b" : "#2471a3"
		dash = (s ~ /unmet/) ? " stroke-dasharray=\"6 4\"" : ""
		printf "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"", c, dash
		for (k = 1; k <= np[s]; k++) {
			x = L + pw * px[s, k] / tmax; y = T + ph - ph * py[s, k] / ymax
			if (k > 1) printf "%.1f,%.1f ", x, yprev
			printf "%.1f,%.1f ", x, y
			yprev = y
		}
		printf "\"/>\n"
		printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>", W - R + 15, T + 20 * i, W - R + 45, T + 20 * i, c, dash
		printf "<text x=\"%d\" y=\"%d\">%s</text>\n", W - R + 50, T + 20 * i + 4, s
	}
	print "</svg>"
}
