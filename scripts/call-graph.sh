#!/bin/sh
# The call graph between the object files of one directory, from nm: file
# A calls file B when A's object leaves undefined a symbol that B's object
# defines.  Prints one line per edge ("A -> B: sym, sym"), then fails
# (exit 1) naming each set of files that call each other, directly or
# through others (a cycle), and exits 0 when there is none.
#
# Usage: call-graph.sh [-q] [-p PREFIX] [-x REGEX] OBJ...
#   -q          print only the cycles (and "no cycle")
#   -p PREFIX   only symbols that start with PREFIX (default: every
#               symbol defined by one of the objects)
#   -x REGEX    leave out the symbols that match (awk ERE): entry points
#               the process calls, which a table of them in a lower file
#               names without calling up (preload/'s interposition)
# lib/Makefile and preload/Makefile run it in `make check`.
set -eu

quiet=0
prefix=
exclude=
while [ $# -gt 0 ]; do
	case $1 in
	-q) quiet=1; shift ;;
	-p) prefix=$2; shift 2 ;;
	-x) exclude=$2; shift 2 ;;
	--) shift; break ;;
	-*) echo "usage: $0 [-q] [-p PREFIX] [-x REGEX] OBJ..." >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-q] [-p PREFIX] [-x REGEX] OBJ..." >&2; exit 2; }

NM=${NM:-nm}
for o in "$@"; do
	[ -f "$o" ] || { echo "$0: $o: no such object" >&2; exit 2; }
	f=$(basename "$o" .o)
	# defined (any global kind but U/w/v) and undefined symbols
	"$NM" -g "$o" | awk -v f="$f" '
		NF == 2 && $1 == "U" { print "U", f, $2; next }
		NF == 3 && $2 != "U" && $2 != "w" && $2 != "v" { print "D", f, $3 }'
done | awk -v quiet="$quiet" -v prefix="$prefix" -v exclude="$exclude" '
	$1 == "D" { if ((prefix == "" || index($3, prefix) == 1) &&
		        (exclude == "" || $3 !~ exclude))
			def[$3] = $2;
		    files[$2] = 1; next }
	$1 == "U" { files[$2] = 1; use[++nu] = $2 " " $3 }
	END {
		for (i = 1; i <= nu; i++) {
			split(use[i], u, " ")
			if (!(u[2] in def) || def[u[2]] == u[1])
				continue
			e = u[1] SUBSEP def[u[2]]
			if (e in syms)
				syms[e] = syms[e] ", " u[2]
			else
				syms[e] = u[2]
			reach[e] = 1
		}
		n = 0
		for (f in files)
			name[++n] = f
		# sort the names: stable output
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && name[j - 1] > name[j]; j--) {
				t = name[j]; name[j] = name[j - 1]; name[j - 1] = t
			}
		if (!quiet)
			for (i = 1; i <= n; i++)
				for (j = 1; j <= n; j++)
					if ((name[i] SUBSEP name[j]) in syms)
						printf "%s -> %s: %s\n", name[i], name[j],
							syms[name[i] SUBSEP name[j]]
		# transitive closure (Warshall): a handful of files
		for (k = 1; k <= n; k++)
			for (i = 1; i <= n; i++)
				if ((name[i] SUBSEP name[k]) in reach)
					for (j = 1; j <= n; j++)
						if ((name[k] SUBSEP name[j]) in reach)
							reach[name[i] SUBSEP name[j]] = 1
		# each cycle once: the files that reach each other
		bad = 0
		for (i = 1; i <= n; i++) {
			if (name[i] in done || !((name[i] SUBSEP name[i]) in reach))
				continue
			line = name[i]
			for (j = i + 1; j <= n; j++)
				if ((name[i] SUBSEP name[j]) in reach &&
				    (name[j] SUBSEP name[i]) in reach) {
					line = line " " name[j]
					done[name[j]] = 1
				}
			printf "CYCLE: %s call each other\n", line
			bad = 1
		}
		if (bad)
			exit 1
		print "call graph: no cycle between " n " files"
	}'
