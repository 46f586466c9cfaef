#!/bin/sh
# Build mutated copies of single sources through the Makefile's source
# lists (LEDGER_SRCS: the kmod ledger layers; COMPAT_SRCS: the compat
# layer), the file replaced by its copy and everything else unchanged, and
# check that the userspace KUnit run fails in the cases named, with the
# message named.  A mutant the suites do not kill fails this script.
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d /tmp/nxq-mutants.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
bad=0

# mutant NAME VAR BINVAR FILE SED-EXPR CASE-GLOB WANT-IN-OUTPUT
mutant() {
	name=$1 var=$2 binvar=$3 file=$4 expr=$5 cases=$6 want=$7
	srcs=$(make -s "print-$var")
	orig=$(echo "$srcs" | tr ' ' '\n' | grep -E "(^|/)$(basename "$file")\$" |
	       head -n 1)
	mkdir -p "$tmp/$name"
	copy=$tmp/$name/$(basename "$file")
	sed "$expr" "$orig" >"$copy"
	if cmp -s "$orig" "$copy"; then
		echo "mutant $name: the expression changed nothing in $orig"
		bad=1
		return
	fi
	msrcs=$(echo "$srcs" | sed "s|$orig|$copy|")
	make -s "$var=$msrcs" "$binvar=$tmp/$name/kunit" "$tmp/$name/kunit" \
		>"$tmp/$name/build.log" 2>&1 || {
		cat "$tmp/$name/build.log"
		echo "mutant $name: does not build"
		bad=1
		return
	}
	set +e
	if [ "$var" = DAEMON_SRCS ]; then
		# the daemon is mutated; the transport suite (or, for the
		# control socket's cases, ctl-kunit) runs against it
		suite=build/transport-kunit
		case $cases in nxquotad_ctl*) suite=build/ctl-kunit ;; esac
		make -s "$suite" >/dev/null 2>&1
		NXQD_BIN=$tmp/$name/kunit ASAN_OPTIONS=detect_leaks=0 \
			UK_KUNIT_TIMEOUT=60 "$suite" "$cases" \
			>"$tmp/$name/run.log" 2>&1
	else
		ASAN_OPTIONS=detect_leaks=0 UK_KUNIT_TIMEOUT=60 \
			"$tmp/$name/kunit" "$cases" >"$tmp/$name/run.log" 2>&1
	fi
	rc=$?
	set -e
	if [ $rc -ne 0 ] && grep -q '^    not ok' "$tmp/$name/run.log" &&
	   grep -q -- "$want" "$tmp/$name/run.log"; then
		echo "mutant $name: killed; failed:" \
			"$(grep '^    not ok' "$tmp/$name/run.log" |
			   awk '{print $4}' | tr '\n' ' ')"
		grep -m 2 -A 2 -E 'FAILED at|WARNING:' "$tmp/$name/run.log" |
			grep -v '^ *#[0-9]' | sed 's/^ */    /'
	else
		cat "$tmp/$name/run.log"
		echo "mutant $name: SURVIVED (rc $rc)"
		bad=1
	fi
}

# A rule of the ledger: the full check (after the fast path declined)
# sees what is already charged, not the new charge.
mutant max-ignores-charge LEDGER_SRCS LEDGER_BIN counter.c \
	's/if (nxq_over_limit(n, bytes, budget_below)) {/if (nxq_over_limit(n, 0, budget_below)) {/' \
	'nxquota-*' 'Expected'
# A lock of the ledger: nxq_uncharge_slow() without the device lock (a
# moved holder's uncharge takes it: nxq_try_uncharge() declines residue).
mutant uncharge-unlocked LEDGER_SRCS LEDGER_BIN charge.c \
	'/^int nxq_uncharge_slow(/,/^}/{/spin_lock(&dev->lock);/d;/spin_unlock(&dev->lock);/d}' \
	'nxquota-objects.nxq_test_rehome' 'lockdep_assert_held(&dev->lock): not held'
# A holder's end in two steps: detached (out of the dump, uncharged) before
# the ledger lock is taken, still counted until its put -- a device's
# removal in between fails with EBUSY although no holder is left.
mutant end-detach-unlocked LEDGER_SRCS LEDGER_BIN objects.c \
	'/^void nxq_holder_end(/,/^}/s/^\tmutex_lock(&l->lock);/\tnxq_holder_detach(h);\n&/' \
	'nxquota-objects.nxq_test_end' 'end_changes_unlocked'
# The compat layer: lockdep_assert_held() satisfied by any holder.
mutant held-by-anyone COMPAT_SRCS COMPAT_BIN uk.c \
	's/if (!uk_lock_held_by_me(l))/if (!uk_lock_is_locked(l))/' \
	'uk-compat.uk_test_lockdep' 'Expected'
# The compat layer: a wake-up before the sleep is lost.
mutant lost-wakeup COMPAT_SRCS COMPAT_BIN uk.c \
	's/if (wq->seq != e->seq) {/if (0) {/' \
	'uk-compat.uk_test_no_lost_wakeup' 'Expected'
# The compat layer: a grace period that does not wait for readers.
mutant no-grace-period COMPAT_SRCS COMPAT_BIN uk.c \
	'/^void synchronize_rcu(void)/,/^}/{/pthread_rwlock_wrlock(&uk_rcu_gp);/d;/pthread_rwlock_unlock(&uk_rcu_gp);/d}' \
	'uk-compat.uk_test_rcu' 'Expected'
# The daemon: bytes it does not know are not checked.
mutant unknown-bytes-ignored DAEMON_SRCS DAEMON_BIN client.c \
	's/if (msg\[sizeof(\*req) + i\])/if (0 \&\& msg[sizeof(*req) + i])/' \
	'nxquotad-transport.*' 'Expected'
# The daemon: identity from itself instead of from the socket.
mutant cred-not-from-socket DAEMON_SRCS DAEMON_BIN client.c \
	's/c->peer.pid, c->peer.uid, c->peer.gid);/getppid(), c->peer.uid, c->peer.gid);/' \
	'nxquotad-transport.*' 'Expected'
# The daemon: a holder usable by any process that names its id.
mutant holder-any-process DAEMON_SRCS DAEMON_BIN client.c \
	's/if (e \&\& e->proc->tgid == pid \&\& !e->proc->dead) {/if (e \&\& !e->proc->dead) {/' \
	'nxquotad-client.nxqd_test_other_process' 'Expected'
# The daemon: more descriptors than the request announces are taken.
mutant fd-count-unchecked DAEMON_SRCS DAEMON_BIN client.c \
	's/if (r->fds_trunc || r->nr_fds != want)/if (r->fds_trunc || r->nr_fds < want)/' \
	'nxquotad-client.nxqd_test_register_fds' 'Expected'
# The daemon: a holder outlives the connection it was registered on.
mutant conn-close-keeps-holders DAEMON_SRCS DAEMON_BIN client.c \
	's/^\tnxqd_end_holders(c, NULL);/\t;/' \
	'nxquotad-client.nxqd_test_sigkill' 'Expected'
# The daemon: a holder outlives its process (the pidfd watcher ignores it).
mutant exit-keeps-holders DAEMON_SRCS DAEMON_BIN client.c \
	's/^\t\t\t\tnxqd_end_holders(NULL, found);/\t\t\t\t;/' \
	'nxquotad-client.nxqd_test_sigkill' 'Expected'
# The daemon: a waiting charge is not interrupted when its peer hangs up.
mutant wait-outlives-peer DAEMON_SRCS DAEMON_BIN client.c \
	's/if (c->serial == serial \&\& c->waiting)/if (0)/' \
	'nxquotad-client.nxqd_test_close_ends_wait' 'Expected'
# The daemon: no grace window after a restart.
mutant no-grace-window DAEMON_SRCS DAEMON_BIN restart.c \
	's/while (nxqd_rs_open_locked() \&\& !(first/while (0 \&\& !(first/' \
	'nxquotad-client.nxqd_test_restart_grace' 'Expected'
# The daemon: a listed client grows during the window, not only restores.
mutant listed-grows-in-grace DAEMON_SRCS DAEMON_BIN restart.c \
	's/!(first \&\& nxqd_rs_find(tgid, start))/!nxqd_rs_find(tgid, start)/' \
	'nxquotad-client.nxqd_test_restart_grace' 'Expected'
# The daemon: a listed client counts as restored at its first charge, not
# after re-registering every holder it had.
mutant restored-too-early DAEMON_SRCS DAEMON_BIN restart.c \
	's/if (e \&\& e->seen >= e->holders \&\& !e->restored) {/if (e \&\& !e->restored) {/' \
	'nxquotad-client.nxqd_test_restart_grace' 'Expected'
# The daemon: a charge does not follow a process to its new cgroup.
mutant no-follow-cgroup DAEMON_SRCS DAEMON_BIN client.c \
	's/err = nxqd_follow_cgroup(h, proc);/err = 0 \&\& nxqd_follow_cgroup(h, proc);/' \
	'nxquotad-client.nxqd_test_migrate' 'Expected'
# The daemon: holder_signal writes the tenant's eventfd as it finds it.
mutant signal-may-block DAEMON_SRCS DAEMON_BIN client.c \
	'/^void nxqd_holder_signal(/,/^}/s/^\tif (!e)$/\tif (!e || write(e->fd, \&one, sizeof(one)) || 1)/' \
	'nxquotad-client.nxqd_test_eventfd_full' 'Expected'
# The control socket: a peer that is not root is served (only the mode
# kept it out).
mutant ctl-any-uid DAEMON_SRCS DAEMON_BIN ctl.c \
	's/cred.uid != 0) {/cred.uid == 12345) {/' \
	'nxquotad_ctl.ctl_test_root_only' 'Expected'
# The control socket: attributes above the command's maxattr accepted.
mutant ctl-maxattr-unchecked DAEMON_SRCS DAEMON_BIN ctl.c \
	's/if (type == 0 || type > maxattr) {/if (type == 0) {/' \
	'nxquotad_ctl.ctl_test_validation' 'Expected'
# The control socket: the genl header's reserved byte not checked.
mutant ctl-reserved-unchecked DAEMON_SRCS DAEMON_BIN ctl.c \
	's/if (r.gh->reserved) {/if (0) {/' \
	'nxquotad_ctl.ctl_test_validation' 'Expected'
# Events a full subscriber refused are not counted in events_dropped.
mutant ctl-drops-uncounted DAEMON_SRCS DAEMON_BIN ctl.c \
	's/if (dropped \&\& ev->dropped)/if (0 \&\& dropped \&\& ev->dropped)/' \
	'nxquotad_ctl.ctl_test_events' 'Expected'
# A control socket passed by systemd is ignored.
mutant ctl-no-activation DAEMON_SRCS DAEMON_BIN ctl.c \
	's/int fd = nxqd_listen_fds("control");/int fd = -1;/' \
	'nxquotad_ctl.ctl_test_socket_activation' 'Expected'
# The control socket: no bound on its connections.
mutant ctl-conns-unbounded DAEMON_SRCS DAEMON_BIN ctl.c \
	's/ctl_nconns >= NXQD_CTL_CONNS/ctl_nconns >= 100000/' \
	'nxquotad_ctl.ctl_test_bounds' 'Expected'
# The new state is written but never renamed into place.
mutant state-not-renamed DAEMON_SRCS DAEMON_BIN state.c \
	's/if (!err \&\& rename(tmp, dst))/if (!err \&\& unlink(tmp))/' \
	'nxquotad_ctl.ctl_test_restart' 'Expected'
# A budget's own max is not restored as its own.
mutant state-own-max-lost DAEMON_SRCS DAEMON_BIN state.c \
	's/\t\tr.set_max = true;/\t\tr.set_max = false;/' \
	'nxquotad_ctl.ctl_test_restart' 'Expected'
# The daemon: the client socket stays root's whatever -g says.
mutant group-ignored DAEMON_SRCS DAEMON_BIN client.c \
	's/^\t\tmode = 0660;/\t\tmode = 0600;/' \
	'nxquotad-transport.nxqd_test_group' 'Expected'
# The runner itself: a suite meant to fail must fail exactly so.
make -s COMPAT_TESTS=compat/kunit_selftest.c COMPAT_BIN="$tmp/selftest" \
	"$tmp/selftest" >"$tmp/selftest.build" 2>&1 || {
	cat "$tmp/selftest.build"
	bad=1
}
set +e
ASAN_OPTIONS=detect_leaks=0 "$tmp/selftest" >"$tmp/selftest.log" 2>&1
rc=$?
set -e
want="    # selftest_assert_ends_case: ASSERTION FAILED at compat/kunit_selftest.c:17
    not ok 1 selftest_assert_ends_case
    # selftest_expect_goes_on: EXPECTATION FAILED at compat/kunit_selftest.c:24
    not ok 2 selftest_expect_goes_on
    # selftest_thread_assert: ASSERTION FAILED at compat/kunit_selftest.c:34
    not ok 3 selftest_thread_assert
    ok 4 selftest_skip # SKIP
    ok 5 selftest_last_runs
1 skipped
1 passed, 3 failed"
got=$(grep -E '^    (not )?ok|FAILED at|passed|skipped$' "$tmp/selftest.log" |
      sed 's/ # [0-9]* ms$//')
if [ $rc -eq 1 ] && [ "$got" = "$want" ]; then
	echo "runner selftest: as expected (assert ends the case or its thread," \
		"expect goes on, skip, later cases run)"
else
	cat "$tmp/selftest.log"
	echo "runner selftest: NOT as expected (rc $rc)"
	bad=1
fi
exit $bad
