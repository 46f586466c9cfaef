#!/bin/sh
# The documentation says what is true of the code:
#  1. every C code block in README.md and Documentation/ (.md, .rst) is
#     marked, on the line before it, as a complete example or a fragment:
#       Markdown:  <!-- example: compile -->   then ```c ... ```
#       reST:      .. example: compile         then .. code-block:: c
#     ("compile", "run" or "fragment").  "compile" examples must compile
#     and link against the in-tree library with -Wall -Wextra -Werror;
#     "run" examples must also run and exit 0 here (no module: they must
#     work unmanaged).  An unmarked C block fails, so nothing is skipped by
#     accident.  Shell blocks (```sh, code-block:: sh) must parse (sh -n).
#  2. every reST file parses with docutils without a warning;
#  3. every man page (man/man*/, tools/*.[1-8]) renders with
#     `man --warnings` without a warning; section-3 pages have NAME,
#     SYNOPSIS, DESCRIPTION, RETURN VALUE and SEE ALSO; every function
#     exported by include/nxquota.h has its page, and every page names an
#     exported function.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
tmp=$(mktemp -d /tmp/nxq-docs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { echo "docs: FAIL: $*"; bad=1; }

# docutils: Debian's python3-docutils, or whichever python3 has it.
py=""
for p in /usr/bin/python3 python3; do
	if "$p" -c 'import docutils' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "docs: FAIL: no python3 with docutils (scripts/deps.sh)"; exit 1; }

make -s -C lib >"$tmp/lib.log" 2>&1 || { cat "$tmp/lib.log"; echo "docs: FAIL: lib build"; exit 1; }

docs=$( (ls README.md; find Documentation -name '*.rst' -o -name '*.md') | sort)

# ---- 1. code blocks -------------------------------------------------------
# Extract blocks as $tmp/blocks/NNN.{c,sh} with a .where file (FILE:LINE
# and the marker); unmarked C blocks are reported by the extractor.
mkdir -p "$tmp/blocks"
# shellcheck disable=SC2086
"$py" - "$tmp/blocks" $docs <<'EOF' || bad=1
import os, re, sys
out, files = sys.argv[1], sys.argv[2:]
n, unmarked = 0, 0
LANG = {"c": "c", "sh": "sh"}

def marker(lines, i, pat):
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    m = re.match(pat, lines[j].strip()) if j >= 0 else None
    return m.group(1) if m else None

def emit(path, line, lang, mark, body):
    global n, unmarked
    if lang == "c" and mark not in ("compile", "run", "fragment"):
        print(f"docs: FAIL: {path}:{line}: C block not marked "
              "'example: compile|run|fragment'")
        unmarked += 1
        return
    n += 1
    base = os.path.join(out, "%03d" % n)
    with open(base + "." + lang, "w") as f:
        f.write(body)
    with open(base + ".where", "w") as f:
        f.write(f"{path}:{line} {mark or '-'}\n")

for path in files:
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        l = lines[i]
        if path.endswith(".md"):
            m = re.match(r"^```(\w+)\s*$", l)
            if m and m.group(1) in LANG:
                mark = marker(lines, i, r"<!--\s*example:\s*(\w+)\s*-->")
                j = i + 1
                while j < len(lines) and not lines[j].startswith("```"):
                    j += 1
                emit(path, i + 1, LANG[m.group(1)], mark,
                     "\n".join(lines[i + 1:j]) + "\n")
                i = j
        else:
            m = re.match(r"^(\s*)\.\. (?:code-block|code|sourcecode)::\s*(\w+)\s*$", l)
            if m and m.group(2) in LANG:
                ind = len(m.group(1))
                mark = marker(lines, i, r"\.\.\s+example:\s*(\w+)\s*$")
                j = i + 1
                while j < len(lines) and (not lines[j].strip() or
                        (len(lines[j]) - len(lines[j].lstrip())) > ind):
                    j += 1
                body = [x for x in lines[i + 1:j]]
                # drop directive options (":linenos:") and dedent
                while body and (not body[0].strip() or body[0].strip().startswith(":")):
                    body.pop(0)
                dent = min((len(x) - len(x.lstrip()) for x in body if x.strip()), default=0)
                emit(path, i + 1, LANG[m.group(2)], mark,
                     "\n".join(x[dent:] for x in body) + "\n")
                i = j - 1
        i += 1
sys.exit(1 if unmarked else 0)
EOF

nc=0; nr=0; ns=0; nf=0
for w in "$tmp"/blocks/*.where; do
	[ -e "$w" ] || continue
	b=${w%.where}
	read -r where mark <"$w"
	if [ -f "$b.sh" ]; then
		sh -n "$b.sh" 2>"$b.err" || fail "$where: shell block does not parse: $(cat "$b.err")"
		ns=$((ns + 1))
		continue
	fi
	[ "$mark" = fragment ] && { nf=$((nf + 1)); continue; }
	if ! cc -std=gnu11 -Wall -Wextra -Werror -Iinclude -Iinclude/uapi \
		-o "$b" "$b.c" -Llib -lnxquota -ldl -pthread 2>"$b.err"; then
		fail "$where: example does not compile and link:"
		sed 's/^/    /' "$b.err"
		continue
	fi
	nc=$((nc + 1))
	if [ "$mark" = run ]; then
		if ! LD_LIBRARY_PATH=lib NXQ_DEV=/nonexistent/nxquota NXQUOTA_SOCKET= timeout 20 "$b" \
			>"$b.out" 2>&1; then
			fail "$where: example exits non-zero:"
			sed 's/^/    /' "$b.out"
		fi
		nr=$((nr + 1))
	fi
done
echo "docs: C examples: $nc compiled and linked ($nr of them run), $nf fragments; $ns shell blocks parse"
[ "$nc" -gt 0 ] || fail "no compiled C example found (README.md has one)"

# ---- 2. reST parses -------------------------------------------------------
nrst=0
for f in $docs; do
	case "$f" in *.rst) ;; *) continue ;; esac
	nrst=$((nrst + 1))
	"$py" -c '
import sys, io, docutils.core
err = io.StringIO()
docutils.core.publish_doctree(open(sys.argv[1]).read(), source_path=sys.argv[1],
    settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": err})
sys.stdout.write(err.getvalue())
sys.exit(1 if err.getvalue() else 0)' "$f" >"$tmp/rst.err" 2>&1 ||
		{ fail "$f: reST warnings:"; sed 's/^/    /' "$tmp/rst.err"; }
done
echo "docs: reST: $nrst files parsed"

# ---- 3. man pages ---------------------------------------------------------
nman=0
for m in man/man*/*.[1-8] tools/*.[1-8]; do
	[ -f "$m" ] || continue
	nman=$((nman + 1))
	LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$m" >/dev/null 2>"$tmp/man.err" ||
		fail "$m: man failed"
	[ ! -s "$tmp/man.err" ] || { fail "$m: man --warnings:"; sed 's/^/    /' "$tmp/man.err"; }
	case "$m" in
	*.3)
		for s in NAME SYNOPSIS DESCRIPTION "RETURN VALUE" "SEE ALSO"; do
			grep -Eq "^\.SH \"?$s\"?\$" "$m" || fail "$m: no $s section"
		done ;;
	esac
done
grep '^NXQ_API ' include/nxquota.h | sed 's/(.*//; s/.*[ *]//' | sort >"$tmp/api"
(for m in man/man3/*.3; do basename "$m" .3; done) | sort >"$tmp/pages"
comm -23 "$tmp/api" "$tmp/pages" | while read -r f; do
	echo "docs: FAIL: $f is exported by include/nxquota.h and has no man/man3/$f.3"
done
comm -13 "$tmp/api" "$tmp/pages" | while read -r f; do
	echo "docs: FAIL: man/man3/$f.3 names no function of include/nxquota.h"
done
cmp -s "$tmp/api" "$tmp/pages" || bad=1
echo "docs: man: $nman pages render without warnings; $(wc -l <"$tmp/api") exported functions, $(wc -l <"$tmp/pages") section-3 pages"

[ "$bad" -eq 0 ] || { echo "docs: FAILED"; exit 1; }
echo "docs: ok"
