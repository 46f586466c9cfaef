#!/bin/bash
# Build mutated copies of single sources through the Makefile's source
# lists (LEDGER_SRCS: the kmod ledger layers, abi.c among them;
# COMPAT_SRCS: the compat layer; DAEMON_SRCS: the daemon), the file
# replaced by its copy and everything else unchanged, and check that the
# userspace KUnit run fails in the cases named, with the message named.
# A mutant the suites do not kill fails this script.  Mutants run
# $NXQ_MUTANT_JOBS at a time (default 3: their cases mostly wait); the
# results are printed in order.  NXQ_MUTANTS='ctl-*' (a shell pattern) or
# ONLY=REGEX runs only the mutants whose names match.
set -eu
cd "$(dirname "$0")"
tmp=$(mktemp -d /tmp/nxq-mutants.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
bad=0
jobs=${NXQ_MUTANT_JOBS:-3}
names=()
# everything a mutant does not replace is built once, before
make -s all >/dev/null

# mutant_run NAME VAR BINVAR FILE SED-EXPR CASE-GLOB WANT-IN-OUTPUT
mutant_run() {
	local name=$1 var=$2 binvar=$3 file=$4 expr=$5 cases=$6 want=$7
	local srcs orig copy msrcs suite rc
	srcs=$(make -s --no-print-directory "print-$var")
	# the source named exactly (client.c is not client_cmd.c's "client_c")
	orig=$(echo "$srcs" | tr ' ' '\n' |
	       awk -v f="$(basename "$file")" '$0 == f || substr($0, length($0) - length(f)) == "/" f' |
	       head -n 1)
	mkdir -p "$tmp/$name"
	copy=$tmp/$name/$(basename "$file")
	sed "$expr" "$orig" >"$copy"
	if cmp -s "$orig" "$copy"; then
		echo "mutant $name: the expression changed nothing in $orig"
		return 1
	fi
	msrcs=$(echo "$srcs" | tr ' ' '\n' |
		awk -v o="$orig" -v c="$copy" '$0 == o { $0 = c } 1' | tr '\n' ' ')
	make -s "$var=$msrcs" "$binvar=$tmp/$name/kunit" "$tmp/$name/kunit" \
		>"$tmp/$name/build.log" 2>&1 || {
		cat "$tmp/$name/build.log"
		echo "mutant $name: does not build"
		return 1
	}
	set +e
	if [ "$var" = DAEMON_SRCS ]; then
		# the daemon is mutated; the transport suite (or, for the
		# control socket's cases, ctl-kunit) runs against it
		suite=build/transport-kunit
		case $cases in nxquotad_ctl*) suite=build/ctl-kunit ;; esac
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
		return 0
	fi
	cat "$tmp/$name/run.log"
	echo "mutant $name: SURVIVED (rc $rc)"
	return 1
}

# mutant NAME ...: mutant_run in the background, $jobs at a time; only
# those whose name matches $NXQ_MUTANTS (a shell pattern, default all)
# and $ONLY (an extended regex, default all)
mutant() {
	# shellcheck disable=SC2254
	case $1 in ${NXQ_MUTANTS:-*}) ;; *) return 0 ;; esac
	[ -z "${ONLY:-}" ] || echo "$1" | grep -qE "$ONLY" || return 0
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
	names+=("$1")
	( set +e; mutant_run "$@" >"$tmp/$1.out" 2>&1; echo $? >"$tmp/$1.rc" ) &
}

# Issue 22, the event queues: one ring for every event, denials not
# coalesced (the code before issue 22): a storm of denials drops kills.
mutant events-one-ring LEDGER_SRCS LEDGER_BIN event.c \
	's/if (type == NXQ_EV_DENIED) {/if (0) {/;s/} else if (nxq_event_vital(type, h)) {/} else if (0) {/' \
	'nxquota-event.nxq_test_event_storm' 'Expected'
# Vital events share the ring of the others: its 256 places hold more
# kills than the vital ring's, so none is dropped as the test expects.
mutant events-vital-shared LEDGER_SRCS LEDGER_BIN event.c \
	's/} else if (nxq_event_vital(type, h)) {/} else if (0) {/' \
	'nxquota-event.nxq_test_event_drops' 'Expected'
# An event queued while the work waits for the next batch of denials does
# not run it: a kill waits for the batch (issue 30: the work slept there).
mutant events-paced-unkicked LEDGER_SRCS LEDGER_BIN event.c \
	's/if (idle || (dev->ev_paced \&\& type != NXQ_EV_DENIED)) {/if (idle) {/' \
	'nxquota-event.nxq_test_event_paced' 'Expected'
# Denials not coalesced, each queued as an event of its own.
mutant events-denials-uncoalesced LEDGER_SRCS LEDGER_BIN event.c \
	's/if (type == NXQ_EV_DENIED) {/if (0) {/' \
	'nxquota-event.nxq_test_event_storm' 'Expected'
# Drops counted in all but not by type.
mutant events-drops-untyped LEDGER_SRCS LEDGER_BIN event.c \
	's/atomic64_add(n, &ev->dropped_type\[ev->type\]);/;/' \
	'nxquota-event.nxq_test_event_drops' 'Expected'
# A denial held by the gap is overtaken by a later event (the order and
# the timestamps go back), instead of being sent ahead of it.
mutant events-denial-overtaken LEDGER_SRCS LEDGER_BIN event.c \
	's/} else if (best) {/} else if (0) {/' \
	'nxquota-event.nxq_test_event_storm' 'Expected'
# Denials sent as fast as they come: no gap between batches.
mutant events-denials-ungapped LEDGER_SRCS LEDGER_BIN event.c \
	's/if (now < dev->ev_denied_next \&\& !dev->ev_draining) {/if (0) {/' \
	'nxquota-event.nxq_test_event_storm' 'Expected'

# Issue 30 item 4: a waiter the ledger grants (or cancels) is not told,
# so its shell -- a sleeper in the module, a timer in nxquotad -- learns
# of it only at its next wake time.
mutant settle-untold LEDGER_SRCS LEDGER_BIN waitq.c \
	'/^static void nxq_waiter_settle(/,/^}/s/w->done(w);/;/' \
	'nxquota-waitq.nxq_test_charge_split' 'Expected'
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
mutant end-detach-unlocked LEDGER_SRCS LEDGER_BIN holder.c \
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
mutant no-grace-period COMPAT_SRCS COMPAT_BIN uk_work.c \
	'/^void synchronize_rcu(void)/,/^}/{/pthread_rwlock_wrlock(&uk_rcu_gp);/d;/pthread_rwlock_unlock(&uk_rcu_gp);/d}' \
	'uk-compat.uk_test_rcu' 'Expected'
# The compat layer: nla_parse() takes attributes above the policy's.
mutant nla-maxtype-unchecked COMPAT_SRCS COMPAT_BIN nlattr.c \
	's/if (type == 0 || type > maxtype) {/if (type == 0) {/' \
	'uk-compat.uk_test_nla' 'Expected'
# The compat layer: nla_parse() takes a u32 of another length.
mutant nla-length-unchecked COMPAT_SRCS COMPAT_BIN nlattr.c \
	's/if (nla_fixed_len\[pt->type\] \&\& attrlen != nla_fixed_len\[pt->type\]) {/if (nla_fixed_len[pt->type] \&\& 0) {/' \
	'uk-compat.uk_test_nla' 'Expected'
# One ABI: the registration's check lets a reserved field through (both
# authorities compile kmod/abi.c; its suite runs in the ledger's binary).
mutant abi-reserved-unchecked LEDGER_SRCS LEDGER_BIN abi.c \
	's/if (a->priority > NXQ_PRIORITY_MAX || a->reserved)/if (a->priority > NXQ_PRIORITY_MAX)/' \
	'nxquota-abi.nxq_abi_test_args' 'Expected'
# One ABI: a charge may both probe and wait.
mutant abi-probe-wait LEDGER_SRCS LEDGER_BIN abi.c \
	's/if ((a->flags \& NXQ_CHARGE_PROBE) \&\& (a->flags \& NXQ_CHARGE_WAIT))/if (0)/' \
	'nxquota-abi.nxq_abi_test_args' 'Expected'
# Issue 30 item 4: a waiting charge's wake time is not armed on the
# loop, so nothing ever times it out (it was a fiber's sleep before).
mutant wait-timer-unarmed DAEMON_SRCS DAEMON_BIN client_cmd.c \
	'/^static int nxqd_charge_now(/,/^}/{/nxqd_timer_arm/d}' \
	'nxquotad-client.nxqd_test_wait_granted' 'Expected'
# The daemon: bytes it does not know are not checked.
mutant unknown-bytes-ignored DAEMON_SRCS DAEMON_BIN client_cmd.c \
	's/if (msg\[sizeof(\*req) + i\])/if (0 \&\& msg[sizeof(*req) + i])/' \
	'nxquotad-transport.*' 'Expected'
# The daemon: a credential the client names is taken, whoever's it is.
mutant cred-named-by-client DAEMON_SRCS DAEMON_BIN client.c \
	's/^\tif (!nxqd_proc_cred_trusted(r->cred.pid))$/\tif (0)/' \
	'nxquotad-attack.nxqd_test_decoy_creds' 'Expected'
# The daemon: uid 0 without CAP_SYS_ADMIN administers over the control socket.
mutant ctl-root-without-cap DAEMON_SRCS DAEMON_BIN ctl.c \
	'/^static int ctl_admin(/,/^}/s/if (ret == 1)/if (ret >= 0)/' \
	'nxquotad-attack.nxqd_test_ctl_nocap' 'Expected'
# The daemon: CAP_SYS_ADMIN in a user namespace of its own counts.
mutant ctl-userns-admin DAEMON_SRCS DAEMON_BIN proc.c \
	's/same = ns.st_ino == own.st_ino \&\& ns.st_dev == own.st_dev;/same = true;/' \
	'nxquotad-attack.nxqd_test_ctl_nocap' 'Expected'
# The daemon: events given to root without CAP_SYS_ADMIN.
mutant ctl-events-any-root DAEMON_SRCS DAEMON_BIN ctl.c \
	'/the daemon.s own: what joining the "events" group is/,+2s/err = ctl_admin(&r);/err = 0;/' \
	'nxquotad-attack.nxqd_test_ctl_nocap' 'Expected'
# Issue 32: the capability read at accept only (as before issue 32): a
# root that drops it after connecting still adds devices.
mutant ctl-cap-at-accept DAEMON_SRCS DAEMON_BIN ctl.c \
	's/^\tbool subscribed;.*$/&\n\tint admin0;/;s/^\tc->pidfd = pidfd;$/&\n\tc->admin0 = nxqd_proc_admin(cred.pid, pidfd);/;s/\tret = nxqd_proc_admin(r->c->peer.pid, r->c->pidfd);/\tret = r->c->admin0;/' \
	'nxquotad_ctl.ctl_test_cap_dropped' 'Expected'
# Issue 32: the connector checked, not the sender: any root sender is
# taken and the capability read from the process that connected (alive,
# an admin) -- its child without the capability adds a device.
mutant ctl-cap-of-connector DAEMON_SRCS DAEMON_BIN ctl.c \
	's/if (!uc || uc->uid != 0 || uc->pid != c->peer.pid)/if (!uc || uc->uid != 0)/' \
	'nxquotad_ctl.ctl_test_cap_pid_reused' 'Expected'
# Issue 32: the connector known by its pid number, not pinned by its
# pidfd: once it exited, a process given its pid speaks on its connection.
mutant ctl-pid-not-pinned DAEMON_SRCS DAEMON_BIN ctl.c \
	'/^static const char \*ctl_sender(/,/^}/s/if (!nxqd_proc_alive(c->pidfd))/if (0)/' \
	'nxquotad_ctl.ctl_test_cap_pid_reused' 'Expected'
# Issue 32: the connector's pid namespaces not checked: an admin forked
# into one a user namespace owns (whose root could name its pid) changes.
mutant ctl-pidns-unchecked DAEMON_SRCS DAEMON_BIN ctl.c \
	's/if (!r->c->pidns_ok) {/if (0) {/' \
	'nxquotad_ctl.ctl_test_cap_pidns' 'Expected'
# The daemon: a holder usable by any process that names its id.
mutant holder-any-process DAEMON_SRCS DAEMON_BIN client_cmd.c \
	's/if (!e || !r->caller || e->proc != r->caller || e->proc->dead)/if (!e || e->proc->dead)/' \
	'nxquotad-client.nxqd_test_other_process' 'Expected'
# The daemon: more descriptors than the request announces are taken.
mutant fd-count-unchecked DAEMON_SRCS DAEMON_BIN client_cmd.c \
	's/if (r->fds_trunc || r->nr_fds != want)/if (r->fds_trunc || r->nr_fds < want)/' \
	'nxquotad-client.nxqd_test_register_fds' 'Expected'
# The daemon: an O_PATH descriptor of the node proves access.
mutant opath-proves DAEMON_SRCS DAEMON_BIN client_cmd.c \
	's/if (fl < 0 || (fl \& O_PATH) ||/if (fl < 0 ||/' \
	'nxquotad-attack.nxqd_test_opath' 'Expected'
# The daemon: a holder outlives the connection it was registered on.
mutant conn-close-keeps-holders DAEMON_SRCS DAEMON_BIN client.c \
	'/^static void nxqd_conn_close(/,/^}/s/^\t\tnxqd_hent_end(e);/\t\t;/' \
	'nxquotad-client.nxqd_test_sigkill' 'Expected'
# The daemon: a holder outlives its process (the pidfd watch ignored).
mutant exit-keeps-holders DAEMON_SRCS DAEMON_BIN client.c \
	'/^static void nxqd_proc_gone(/,/^}/s/^\t\tnxqd_hent_end(e);/\t\t;/' \
	'nxquotad-client.nxqd_test_sigkill' 'Expected'
# The daemon: a waiting charge is not interrupted when its peer hangs up.
mutant wait-outlives-peer DAEMON_SRCS DAEMON_BIN client.c \
	'/only a hang-up is read while a request is in progress/,+2s/nxqd_conn_close(c);/;/' \
	'nxquotad-client.nxqd_test_close_ends_wait' 'Expected'
# The daemon: a charge does not follow a process to its new cgroup.
mutant no-follow-cgroup DAEMON_SRCS DAEMON_BIN client_cmd.c \
	's/err = nxqd_follow_cgroup(e->h, e->proc);/err = 0 \&\& nxqd_follow_cgroup(e->h, e->proc);/' \
	'nxquotad-client.nxqd_test_migrate' 'Expected'
# The daemon: no bound per cgroup (subtree) on connections.
mutant no-cgroup-cap DAEMON_SRCS DAEMON_BIN conns.c \
	's/^\tif (t->n >= nxqd_conn_per_cgroup)$/\tif (0)/' \
	'nxquotad-attack.nxqd_test_conn_flood' 'Expected'
# The daemon: no bound on connections in all (-N).
mutant no-global-cap DAEMON_SRCS DAEMON_BIN conns.c \
	's/ || nxqd_cn.nr >= nxqd_conns_max))$/))/' \
	'nxquotad-client.nxqd_test_conn_bound_all' 'Expected'
# The daemon: no bound on connections per uid (-U).
mutant no-uid-cap DAEMON_SRCS DAEMON_BIN conns.c \
	's/^\t    (u->n >= nxqd_conn_per_uid || /\t    (0 || /' \
	'nxquotad-client.nxqd_test_conn_bound_uid' 'Expected'
# The daemon: no room kept per subtree (-Q): two uids, or one uid in many
# subtrees, fill the node for everyone's new processes.
mutant no-subtree-reserve DAEMON_SRCS DAEMON_BIN conns.c \
	's/^\tunsigned int reserve = min(nxqd_conn_reserve, nxqd_conn_per_cgroup);$/\tunsigned int reserve = 0;/' \
	'nxquotad-attack.nxqd_test_conn_*' 'Expected'
# The daemon: a delegated subtree's child cgroups count apart (each its
# own bound per cgroup).
mutant delegation-ignored DAEMON_SRCS DAEMON_BIN conns.c \
	's/^\twhile (nxqd_delegated(\&st)) {$/\twhile (0) {/' \
	'nxquotad-attack.nxqd_test_conn_uid_subtrees' 'Expected'
# The daemon: a listener still there at its start is live at once (a
# daemon whose last thread is exiting makes the next one exit 1).
mutant bind-no-wait DAEMON_SRCS DAEMON_BIN loop.c \
	's/if (tries == 20) {/if (tries == 0) {/' \
	'nxquotad-transport.nxqd_test_one_daemon' 'the daemon exited'
# The daemon: the client socket stays root's whatever -g says.
mutant group-ignored DAEMON_SRCS DAEMON_BIN client.c \
	's/gid >= 0 ? 0660 : 0600/0600/' \
	'nxquotad-transport.nxqd_test_group' 'Expected'
# The daemon: an eventfd is written where the ledger signals, under its
# lock (a tenant that made its file block freezes the device).
mutant signal-under-lock DAEMON_SRCS DAEMON_BIN signal.c \
	'/^void nxqd_tsig_signal(/,/^}/s/^\tpthread_mutex_lock(&sig.m);/\t{ u64 one = 1; if (t->fd >= 0 \&\& write(t->fd, \&one, sizeof(one)) < 0) {} }\n&/' \
	'nxquotad-attack.nxqd_test_eventfd_block' 'Expected'
# The daemon: an eventfd write that waits is not cut short.
mutant signal-uncut DAEMON_SRCS DAEMON_BIN signal.c \
	's/\.it_value\.tv_nsec = NXQD_SIGNAL_US \* NSEC_PER_USEC,/.it_value.tv_nsec = 0,/' \
	'nxquotad-attack.nxqd_test_eventfd_block' 'Expected'
# Issue 32: the cut's timer fires once: one that fired before the write
# began (the thread preempted in between) leaves the write waiting.
mutant signal-one-shot DAEMON_SRCS DAEMON_BIN signal.c \
	'/^\t\t\.it_interval\.tv_nsec = NXQD_SIGNAL_US \* NSEC_PER_USEC,$/d' \
	'nxquotad-attack.nxqd_test_eventfd_block' 'Expected'
# Issue 30: tickets on the tenant's connection (protocol 2).  A
# registration with NXQD_REQ_NOTIFY gets no signal: it cannot be asked,
# so the asker's refusal asks nobody and nothing is told.
mutant notice-not-askable DAEMON_SRCS DAEMON_BIN client_cmd.c \
	's/^\tif (evfd >= 0 || notify) {$/\tif (evfd >= 0) {/;s/^\tif (notify)$/\tif (notify \&\& sig)/' \
	'nxquotad-notice.nxqd_test_notice' 'Expected'
# ... the eventfd writer starts with the daemon, whatever its clients
# speak (a shared thread for notices too).
mutant notice-thread-always DAEMON_SRCS DAEMON_BIN signal.c \
	's/^\tif (fd >= 0 \&\& nxqd_signal_thread())$/\tif (nxqd_signal_thread())/' \
	'nxquotad-notice.nxqd_test_notice' 'Expected'
# ... every raise is told, read or not (no coalescing).
mutant notice-uncoalesced DAEMON_SRCS DAEMON_BIN client_obj.c \
	's/^\tif (e->noted || !list_empty(&e->note_link))$/\tif (!list_empty(\&e->note_link))/' \
	'nxquotad-notice.nxqd_test_notice_coalesced' 'Expected'
# ... a notice the socket has no room for is dropped.
mutant notice-dropped-when-full DAEMON_SRCS DAEMON_BIN client_obj.c \
	's/^\t\tif (sent < 0 \&\& nxqd_no_room(errno))$/\t\tif (0)/' \
	'nxquotad-notice.nxqd_test_notice_unread' 'Expected'
# ... the loop waits for the tenant to make room (a tenant that does not
# read its connection freezes the daemon).
mutant notice-waits-for-room DAEMON_SRCS DAEMON_BIN client_obj.c \
	's/^\t\tsent = send(c->w.fd, &n, sizeof(n),$/\t\twhile ((sent = send(c->w.fd, \&n, sizeof(n), MSG_DONTWAIT | MSG_NOSIGNAL)) < 0 \&\& errno == EAGAIN)\n\t\t\tusleep(1000);\n\t\tif (0) send(c->w.fd, \&n, sizeof(n),/' \
	'nxquotad-notice.nxqd_test_notice_unread' 'Expected'
# ... nothing is told on a connection while its request is in progress
# (a charge waiting there waits for the ticket it asked for).
mutant notice-not-while-busy DAEMON_SRCS DAEMON_BIN client_obj.c \
	's/^\twhile (!c->closed \&\& !c->out \&\& !list_empty(&c->notes)) {$/\twhile (!c->closed \&\& !c->out \&\& !c->busy \&\& !list_empty(\&c->notes)) {/' \
	'nxquotad-notice.nxqd_test_notice_in_flight' 'Expected'
# ... a budget change is acknowledged before the notices it caused are
# sent (they go at the loop's next turn).
mutant notice-after-ack DAEMON_SRCS DAEMON_BIN signal.c \
	's/^\t\tnxqd_notes_run();$/\t\t;/' \
	'nxquotad-notice.nxqd_test_notice_before_ack' 'Expected'
# Issue 30: a holder follows its process into a cgroup whose holders_max
# is reached (no limit checked on a move).
mutant rehome-unchecked LEDGER_SRCS LEDGER_BIN holder.c \
	's/^\tif (nxq_holders_full(node)) {$/\tif (0) {/' \
	'nxquota-objects.nxq_test_rehome_limits' 'Expected'
# Issue 30: a waiting charge never asks whether its process moved.
mutant wait-unfollowed LEDGER_SRCS LEDGER_BIN charge.c \
	's/^\t    at >= deadline)$/\t    1)/' \
	'nxquota-objects.nxq_test_rehome_waiting' 'Expected'
# The ledger: guarantees summed past NXQ_BYTES_MAX with overcommit (the
# 15 EiB wrap).
mutant claims-unbounded LEDGER_SRCS LEDGER_BIN budget.c \
	's/^\terr = nxq_claims_bounded(node, min, why);/\terr = 0 \&\& nxq_claims_bounded(node, min, why);/' \
	'nxquota-objects.nxq_test_claims_bounded' 'Expected'
# The ledger: tenants' RECALL tickets queue in the vital ring again (a
# kill behind a round of them is dropped).
mutant recall-vital LEDGER_SRCS LEDGER_BIN event.c \
	's/^\tcase NXQ_EV_KILLED:$/\tcase NXQ_EV_KILLED:\n\tcase NXQ_EV_TICKET_ISSUED:/' \
	'nxquota-event.nxq_test_event_vital_origin' 'Expected'
# The ledger: a holder's tickets are not coalesced.
mutant tickets-uncoalesced LEDGER_SRCS LEDGER_BIN event.c \
	's/^\tif (!h->ev_ticket_seq ||$/\tif (1 ||/' \
	'nxquota-event.nxq_test_event_vital_origin' 'Expected'
# The ledger: a charge that timed out hands back no refusal, so its reply
# would name nothing (issue 30 item 2).
mutant charge-why-timeout-unsaid LEDGER_SRCS LEDGER_BIN charge.c \
	'/dev->timeouts++;/,/w->said = true;/s/w->said = true;/;/' \
	'nxquota-counter.nxq_test_charge_why' 'Expected'
# The ledger: a refusal at a guarantee is reported as one at a max.
mutant charge-why-min-as-max LEDGER_SRCS LEDGER_BIN refusal.c \
	's/^\t\tr->reason = NXQ_REFUSED_MIN;$/\t\tr->reason = NXQ_REFUSED_MAX;/' \
	'nxquota-counter.nxq_test_charge_why' 'Expected'
# The daemon: no grace window after a restart.
mutant no-grace-window DAEMON_SRCS DAEMON_BIN restart.c \
	'/^enum nxqd_verdict nxqd_grace_charge(/,/^}/s/if (rs.state == RS_CLOSED)/if (1)/' \
	'nxquotad-client.nxqd_test_restart_grace' 'Expected'
# The daemon: a restore is taken for whatever it asks (version 1).
mutant restore-unbounded DAEMON_SRCS DAEMON_BIN restart.c \
	's/if (a->bytes > r->charge - r->restored) {/if (0) {/' \
	'nxquotad-restart.nxqd_test_restore_v1' 'Expected'
# The daemon: a first charge is taken for a restore whatever its size
# (version 0).
mutant restore-v0-unbounded DAEMON_SRCS DAEMON_BIN restart.c \
	's/if (r->claimed || r->charge < bytes || strcmp(r->device, device))/if (r->claimed || strcmp(r->device, device))/' \
	'nxquotad-restart.nxqd_test_restore_bounded' 'Expected'
# The daemon: growth passes in the window (version 1), before others
# have restored.
mutant growth-in-window DAEMON_SRCS DAEMON_BIN restart.c \
	'/^enum nxqd_verdict nxqd_grace_charge(/,/^}/s/return NXQD_HOLD;/return NXQD_PASS;/' \
	'nxquotad-restart.nxqd_test_restore_v1' 'Expected'
# The daemon: a restore from a process the record does not name passes
# (issue 32's "restores from nobody").
mutant restore-from-nobody DAEMON_SRCS DAEMON_BIN restart.c \
	'/^enum nxqd_verdict nxqd_grace_charge(/,/^}/s/if (!a->v1 \&\& !a->timeout_ns)/if (a->restore)\n\t\treturn NXQD_PASS;\n\tif (!a->v1 \&\& !a->timeout_ns)/' \
	'nxquotad-restart.nxqd_test_restore_v1' 'Expected'
# The daemon: a version 0 client counts as restored at its first charge,
# not once every holder it had is back.
mutant restored-too-early DAEMON_SRCS DAEMON_BIN restart.c \
	's/if (++p->settled == p->nr_holders \&\& !p->done) {/if (++p->settled \&\& !p->done) {/' \
	'nxquotad-client.nxqd_test_restart_grace' 'Expected'
# The daemon: the record is written without its holders.
mutant record-empty DAEMON_SRCS DAEMON_BIN restart.c \
	's/^\trs.ops->list(nxqd_record_emit, f);/\t;/' \
	'nxquotad-restart.nxqd_test_restore_v1' 'Expected'
# The daemon: a restored holder's old line is not ended with its new one
# (a second crash would restore it twice).
mutant old-line-kept DAEMON_SRCS DAEMON_BIN restart.c \
	's/if (old \&\& !old->retired) {/if (0) {/' \
	'nxquotad-restart.nxqd_test_restore_v1' 'Expected'
# The daemon: a line cut by the crash is read.
mutant record-cut-read DAEMON_SRCS DAEMON_BIN restart.c \
	"s/if (!len || line\[len - 1\] != '\\\\n')/if (!len)/" \
	'nxquotad-restart.nxqd_test_record_cut' 'Expected'
# The daemon: growth is answered before the record has it (the record
# as a timer wrote it before issue 32).
mutant growth-unrecorded DAEMON_SRCS DAEMON_BIN client_cmd.c \
	's/^\terr = nxqd_record_note(&l, e->rec);/\terr = 0; (void)l;/' \
	'nxquotad-restart.nxqd_test_record_before_ack' 'Expected'
# The control socket: a change is acknowledged before the tickets it asked
# for are signalled (press_budget's race against nxquotad).
mutant ack-before-tickets DAEMON_SRCS DAEMON_BIN ctl.c \
	's/^\tnxqd_signal_flush();/\t;/' \
	'nxquotad-attack.nxqd_test_ticket_before_ack' 'Expected'
# The signal thread: a holder's eventfd stays marked queued until its write
# is done, and a ticket opened meanwhile is never signalled.
mutant queued-through-write DAEMON_SRCS DAEMON_BIN signal.c \
	's/^\t\te->queued = false;$/\t\t;/; s/^\t\tsig.done++;$/\t\te->queued = false; sig.done++;/' \
	'nxquotad-attack.nxqd_test_ticket_during_write' 'Expected'
# The loop: a subtree that passes descriptors no command takes is read at
# once again (each such request costs twice a plain one).
mutant fds-unpenalized DAEMON_SRCS DAEMON_BIN conns.c \
	's/^\tt->park_until = nxqd_now() + NXQD_PENALTY_US \* NSEC_PER_USEC;$/\treturn;/' \
	'nxquotad-attack.nxqd_test_fds_penalty' 'Expected'
# The loop: a penalized subtree's connections are never polled again.
mutant park-forever DAEMON_SRCS DAEMON_BIN conns.c \
	's/^\tnxqd_timer_arm(&t->unpark, t->park_until);$/\t;/' \
	'nxquotad-attack.nxqd_test_fds_penalty' 'Expected'
# The control socket: a connection root made serves whoever sends on it.
mutant ctl-any-sender DAEMON_SRCS DAEMON_BIN ctl.c \
	's/if (!uc || uc->uid != 0 || uc->pid != c->peer.pid)/if (0)/' \
	'nxquotad-attack.nxqd_test_ctl_passed' 'Expected'
# The control socket: a peer that is not root is served (only the mode
# kept it out).
mutant ctl-any-uid DAEMON_SRCS DAEMON_BIN ctl.c \
	's/    cred.uid != 0 ||/    cred.uid == 12345 ||/' \
	'nxquotad_ctl.ctl_test_root_only' 'Expected'
# The control socket: the genl header's reserved byte not checked.
mutant ctl-reserved-unchecked DAEMON_SRCS DAEMON_BIN ctl.c \
	's/if (r.gh->reserved) {/if (0) {/' \
	'nxquotad_ctl.ctl_test_validation' 'Expected'
# Events a full subscriber refused are not counted in events_dropped.
mutant ctl-drops-uncounted DAEMON_SRCS DAEMON_BIN ctl.c \
	's/^\t\tnxq_event_lost(ev);/\t\t;/' \
	'nxquotad_ctl.ctl_test_events' 'Expected'
# A control socket passed by systemd is ignored.
mutant ctl-no-activation DAEMON_SRCS DAEMON_BIN ctl.c \
	's/int fd = nxqd_listen_fds("control"), on = 1;/int fd = -1, on = 1;/' \
	'nxquotad_ctl.ctl_test_socket_activation' 'Expected'
# The control socket: no bound on its connections.
mutant ctl-conns-unbounded DAEMON_SRCS DAEMON_BIN ctl.c \
	's/ctl.nconns >= NXQD_CTL_CONNS/ctl.nconns >= 100000/' \
	'nxquotad_ctl.ctl_test_bounds' 'Expected'
# A budget change that could not be saved is acknowledged all the same.
mutant unsaved-acked DAEMON_SRCS DAEMON_BIN ctl_ops.c \
	'/^static int ctl_budget(/,/^}/s/^\terr = nxqd_state_save(NULL);/\tnxqd_state_save(NULL); err = 0;/' \
	'nxquotad-attack.nxqd_test_durability' 'Expected'
# The new state is written but never renamed into place.
mutant state-not-renamed DAEMON_SRCS DAEMON_BIN state.c \
	's/if (!err \&\& rename(tmp, dst))/if (!err \&\& unlink(tmp))/' \
	'nxquotad_ctl.ctl_test_restart' 'Expected'
# A budget's own max is not saved as its own (written "max=-").
mutant state-own-max-lost DAEMON_SRCS DAEMON_BIN state.c \
	's/if (!nxq_abi_req_get(&r, i, &v))/if (i == NXQ_BF_MAX || !nxq_abi_req_get(\&r, i, \&v))/' \
	'nxquotad_ctl.ctl_test_restart' 'Expected'
# A field of the budget table (the booleans: kill_on_ignore) is left out
# of the state file, as a copy of the names that missed one would.
mutant state-field-dropped DAEMON_SRCS DAEMON_BIN state.c \
	's/if (!d->kept)$/if (!d->kept || d->unit == NXQ_UNIT_BOOL)/' \
	'nxquotad_ctl.ctl_test_state_fields' 'Expected'
# Loading, a field of the table read as "-" (none of its own).
mutant state-field-unread DAEMON_SRCS DAEMON_BIN state.c \
	's/if (strcmp(eq, "=-") \&\& nxq_abi_budget_word(w\[i\], \&r))/if (0)/' \
	'nxquotad_ctl.ctl_test_state_fields' 'Expected'
# The daemon does not say it is ready (sd_notify).
mutant not-ready DAEMON_SRCS DAEMON_BIN nxquotad.c \
	's/"READY=1/"X=1/' \
	'nxquotad-attack.nxqd_test_notify' 'Expected'
# Issue 28, the backstop (backstop.c): a pid NVML listed is taken for
# whatever process has it when it is read (no start-time check): the
# process given a dead escaper's pid is killed in its place.
mutant backstop-pid-reuse DAEMON_SRCS DAEMON_BIN backstop.c \
	's/nxqd_proc_pin(e->pid, -1, ticks ? ticks - 1 : 0, \&e->start)/nxqd_proc_pin(e->pid, -1, ~0ULL, \&e->start)/' \
	'nxquotad-backstop.bs_test_pid_reuse' 'Expected'
# The whole group over its max is named and killed, charged or not.
mutant backstop-group-killed DAEMON_SRCS DAEMON_BIN backstop.c \
	's/^\t\t    bs_uncharged(e))$/\t\t    1)/;s/i < n \&\& cover < over;/i < n;/' \
	'nxquotad-backstop.bs_test_neighbour' 'Expected'
# A process's own holders' charges are not held against its measure.
mutant backstop-charges-ignored DAEMON_SRCS DAEMON_BIN backstop.c \
	's/e->charged = bs_add(e->charged, h->charge);/;/' \
	'nxquotad-backstop.bs_test_neighbour' 'Expected'
# No allowance per process in the group's measure.
mutant backstop-no-allowance DAEMON_SRCS DAEMON_BIN backstop.c \
	's/bs_mul(nxqd_backstop_allow, g\[i\].processes)/bs_mul(0, g[i].processes)/' \
	'nxquotad-backstop.bs_test_within' 'Expected'
# A max lowered below the charge counts alone (being asked back taken
# for escaping).
mutant backstop-max-only DAEMON_SRCS DAEMON_BIN backstop.c \
	's/max(g\[i\].limit, g\[i\].charged)/g[i].limit/' \
	'nxquotad-backstop.bs_test_within' 'Expected'
# -k kills nothing.
mutant backstop-no-kill DAEMON_SRCS DAEMON_BIN backstop.c \
	's/if (nxqd_backstop_kill \&\&/if (0 \&\&/' \
	'nxquotad-backstop.bs_test_killed' 'Expected'
# The same escape said again at every poll.
mutant backstop-said-each-poll DAEMON_SRCS DAEMON_BIN backstop.c \
	's/if (was \&\& (was->killed || !killed))/if (0)/' \
	'nxquotad-backstop.bs_test_flagged' 'Expected'
# The budget dump (nxquotactl status, metrics) without the measure.
mutant backstop-not-in-dump DAEMON_SRCS DAEMON_BIN backstop.c \
	's/m->n + 2 > NXQ_ABI_MSG_ATTRS)/1)/' \
	'nxquotad-backstop.bs_test_flagged' 'Expected'
# Processes with no budget are not held against default_max.
mutant backstop-no-default-max DAEMON_SRCS DAEMON_BIN backstop.c \
	's/if (dev->default_max == NXQ_UNLIMITED)/if (1)/' \
	'nxquotad-backstop.bs_test_default_max' 'Expected'
wait
for n in "${names[@]}"; do
	cat "$tmp/$n.out"
	[ "$(cat "$tmp/$n.rc" 2>/dev/null)" = 0 ] || bad=1
done

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
