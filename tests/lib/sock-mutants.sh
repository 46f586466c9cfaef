#!/bin/bash
# make -C lib check-mutants: lib/sock*.c (the socket client) mutated, one
# behaviour at a time, each mutant built into its own libnxquota.a and run
# against the socket client's cases -- test_sock_real.c (the real
# nxquotad) and test_sock.c (fake_srv.h) -- one case at a time
# (NXQ_TEST_FILTER) under a timeout.  Prints which cases kill each mutant;
# a mutant no case kills fails this script, as does a case that fails
# unmutated.
#
#   tests/lib/sock-mutants.sh [TEST.c ...]   other test sources (each
#                     built with its own directory first in the include
#                     path, so an older test_sock.c beside its own
#                     fake_srv.h can be compared)
#   NXQ_MUTANTS='restore-*'  only the mutants whose names match (a shell
#                     pattern)
#
# Needs what test_sock_real needs (root, daemon/build/nxquotad,
# tools/nxquotactl: make -C lib check-mutants builds them).
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/nxq-sockmut.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
CC=${CC:-cc}
only=${NXQ_MUTANTS:-*}
if [ $# -gt 0 ]; then
	srcs=("$@")
else
	srcs=("$top/tests/lib/test_sock_real.c" "$top/tests/lib/test_sock.c")
fi
cppflags=(-I"$top/include" -I"$top/include/uapi" -D_GNU_SOURCE)
cflags=(-O2 -g -Wall -Wno-unused-parameter)
libflags=(-fPIC -fvisibility=hidden -pthread -DNXQ_BUILDING_LIB)
objs=$(sed -n 's/^OBJS *:= *//p' "$top/lib/Makefile")

# The library once, unmutated: every object; a mutant rebuilds one.
mkdir -p "$tmp/lib" "$tmp/base"
cp "$top"/lib/*.c "$top"/lib/*.h "$tmp/lib/"
for o in $objs; do
	"$CC" "${cppflags[@]}" -I"$tmp/lib" "${cflags[@]}" "${libflags[@]}" \
		-c -o "$tmp/base/$o" "$tmp/lib/${o%.o}.c" &
	[ "$(jobs -r | wc -l)" -lt 2 ] || wait -n
done
wait

# build DIR: libnxquota.a from base/ with DIR's objects instead, and the
# tests against it; DIR/cases lists "binary case" lines.
build() {
	local dir=$1 o src bin
	mkdir -p "$dir"
	for o in $objs; do
		[ -f "$dir/$o" ] || cp "$tmp/base/$o" "$dir/$o"
	done
	(cd "$dir" && ar rcs libnxquota.a $objs)
	: >"$dir/cases"
	for src in "${srcs[@]}"; do
		bin=$dir/$(basename "$src" .c)
		"$CC" "${cppflags[@]}" -I"$(dirname "$src")" -I"$tmp/lib" "${cflags[@]}" \
			-DNXQ_TOP="\"$top\"" -o "$bin" "$src" "$dir/libnxquota.a" \
			-lcmocka -ldl -pthread || return 1
		grep -o 'cmocka_unit_test[a-z_]*(test_[a-z0-9_]*' "$src" |
			sed "s|.*(|$bin |" >>"$dir/cases"
	done
}

# run DIR: the names of the cases that fail (or time out), one a line.
run() {
	local dir=$1 bin c rc
	while read -r bin c; do
		set +e
		# (the cases keep their daemon's directory where NXQ_KEEP_TMP
		# is set at all, empty too)
		env -u NXQ_KEEP_TMP NXQ_TEST_FILTER="$c" timeout -k 5 120 "$bin" \
			>"$dir/$c.log" 2>&1
		rc=$?
		set -e
		if [ $rc -ne 0 ] || ! grep -q 'PASSED  \] 1 test' "$dir/$c.log"; then
			echo "$(basename "$bin"):$c"
		fi
	done <"$dir/cases"
}

echo "== unmutated"
build "$tmp/none"
failed=$(run "$tmp/none")
if [ -n "$failed" ]; then
	echo "sock-mutants: these fail without a mutant:" $failed
	exit 1
fi
echo "   every case passes ($(wc -l <"$tmp/none/cases") cases)"

survived=0
# mutant NAME FILE FROM TO WHAT: FROM (literal, exactly once in FILE) made TO
mutant() {
	local name=$1 file=$2 from=$3 to=$4 what=$5 dir=$tmp/m-$1 killed
	# shellcheck disable=SC2254
	case $name in $only) ;; *) return 0 ;; esac
	mkdir -p "$dir"
	FROM=$from TO=$to perl -0777 -ne '
		$n = () = /\Q$ENV{FROM}\E/g;
		die "matched $n times\n" if $n != 1;
		s/\Q$ENV{FROM}\E/$ENV{TO}/; print' \
		"$top/lib/$file" >"$dir/${file%.c}-m.c" || {
		echo "mutant $name: its text is not once in lib/$file"
		exit 1
	}
	# (-w: a mutant may leave a variable unused)
	"$CC" "${cppflags[@]}" -I"$tmp/lib" "${cflags[@]}" -w "${libflags[@]}" \
		-c -o "$dir/${file%.c}.o" "$dir/${file%.c}-m.c" || {
		echo "mutant $name: does not build"
		exit 1
	}
	build "$dir"
	killed=$(run "$dir" | tr '\n' ' ')
	if [ -n "$killed" ]; then
		echo "== $name ($what): killed by $killed"
	else
		echo "== $name ($what): SURVIVED"
		survived=$((survived + 1))
	fi
}

mutant charge-no-retry sock.c \
	'if (++tries > 3)' 'if (++tries > 0)' \
	'a charge lost with the daemon is not asked again'
mutant restore-no-charge sock_restore.c \
	'if (h->charged) {' 'if (0) {' \
	'a restore registers the holder again, charges nothing'
mutant uncharge-sent-again sock.c \
	$'\t/* gone: not sent again: the restore charged without it */\n\treturn sk_settle(ctx, epoch, r, err);' \
	$'\tif (is_gone(r) && !nxq__sk_reconnect(ctx, epoch)) {\n\t\tpthread_rwlock_rdlock(&s->rw);\n\t\tc.holder_id = h->dmn_id;\n\t\tr = nxq__sk_hreq(s, SK_IOC(NXQ_IOC_UNCHARGE), &c, sizeof(c), sizeof(c), &err);\n\t\tpthread_rwlock_unlock(&s->rw);\n\t}\n\treturn sk_settle(ctx, epoch, r, err);' \
	'an uncharge lost in flight is sent again after the restore'
mutant proto-v0 sock_conn.c \
	's->proto = repver < NXQD_PROTO_VERSION ? repver : NXQD_PROTO_VERSION;' 's->proto = 0;' \
	'the version negotiation settles on version 0'
mutant no-restored sock_restore.c \
	'if (!r && s->proto) {' 'if (0) {' \
	'the restore never says NXQD_REQ_RESTORED'
mutant wait-takes-last sock_conn.c \
	's->nwait >= s->cap - 1' 's->nwait >= s->cap' \
	'waiting charges may hold every connection'
mutant refused-is-gone sock_conn.c \
	'if (others > 0) {' 'if (0) {' \
	'a connection the daemon refused counts as the daemon gone'
mutant watcher-idle sock_restore.c \
	'if (s->broken || sk_pool_gone(s))' 'if (0)' \
	'the watcher sees the hang-up and restores nothing'
mutant refusal-unasked sock_restore.c \
	'h->syn_pending = 1;' '' \
	'a refused restore is never asked back through the pressure path'
mutant no-readopt sock.c \
	'if (readopted++ || nxq__sk_readopt(ctx, holder))' 'if (1)' \
	'a holder left out of a restore is never registered again'
mutant reply-len-off-by-one sock_conn.c \
	'if ((size_t)n < sizeof(in.rep) ||' 'if ((size_t)n <= sizeof(in.rep) ||' \
	'a reply of the header alone (every error) is -EPROTO'
mutant ticket-ignored sock.c \
	'r = nxq__sk_hreq(s, SK_IOC(NXQ_IOC_TICKET_READ), t, sizeof(*t), sizeof(*t), &err);' \
	'r = 0; err = -EAGAIN;' \
	'a ticket is never read from the daemon'
mutant status-v0-stale sock.c \
	$'\t\tmemset(st, 0, sizeof(*st));\n\t\tst->size' $'\t\tst->size' \
	"STATUS's fields an older daemon did not send keep the caller's bytes"
mutant reply-fds-kept sock_conn.c \
	'close(x);' '(void)x;' \
	'descriptors that came with a reply stay open'
mutant enoent-not-lost sock_conn.c \
	'if (!r && *errp == -ENOENT)' 'if (0)' \
	'-ENOENT for a holder of ours is an answer, not a lost daemon'
mutant charge-lib-id sock.c \
	$'c.holder_id = h->dmn_id;\n\t\tpthread_mutex_unlock(&s->mu);\n\t\tif (bytes + take' \
	$'c.holder_id = holder;\n\t\tpthread_mutex_unlock(&s->mu);\n\t\tif (bytes + take' \
	"a charge names the library's id, not the daemon's"
mutant notice-as-reply sock_conn.c \
	'if (!s || (m.msg_flags & MSG_TRUNC) || !is_notice(&in, n))' 'if (1)' \
	"a ticket notice before a request's reply is taken for the reply"
mutant watcher-deaf sock_restore.c \
	'if (ev[i].events & EPOLLIN)' 'if (0)' \
	'a notice on a pooled connection is not read until a request takes it'
mutant pooled-unwatched sock_conn.c \
	'conn_epollin(s, c, s->proto >= 2);' 'conn_epollin(s, c, 0);' \
	'EPOLLIN never asked for a pooled connection: an idle one is not read'
mutant eventfd-to-v2 sock_restore.c \
	'if (h->evfd >= 0 && s->proto >= 2) {' 'if (0) {' \
	'a daemon of protocol 2 is given the eventfd (its writer thread)'
mutant restore-unnotified sock_restore.c \
	'rf | nf,' 'rf,' \
	'a restore registers the holder again without NXQD_REQ_NOTIFY: never asked'

if [ "$survived" -ne 0 ]; then
	echo "sock-mutants: $survived mutant(s) survived"
	exit 1
fi
echo "sock-mutants: every mutant killed"
