// SPDX-License-Identifier: GPL-2.0
/*
 * ev_storm_kills: a storm of denials does not cost a listener its kills
 * (issue 22, item 4).
 *
 * Device of 100M (ticket floor 100 ms); /nxq-esk-a has min = 60M, the
 * borrowers in /nxq-esk-b have kill_on_ignore; the tenant /nxq-esk-c has
 * max = 1M and charges 2M in a loop, without waiting, for the whole run:
 * every charge is refused (EDQUOT), a denial event each.
 * A listener -- the "events" multicast group on the module, a subscribed
 * control-socket connection on nxquotad -- reads continuously from before
 * the storm to after it.  Meanwhile, ROUNDS times: a borrower B charges
 * 90M and ignores its tickets; A waits 300 ms for 20M; B is killed at A's
 * deadline and A is granted; A gives the 20M back.
 * The listener must see every kill (B's pid, cgroup, device), and none of
 * the kills may be counted lost (killed 0 in events_dropped_by_type, where the
 * authority has it).  The denials reach it coalesced: far fewer events
 * than denials, at most about one per 10 ms, whose counts plus the
 * denials counted lost (its denied) are exactly the refused
 * charges.
 *
 * Before issue 22 (one ring of 256 per device for every event type), the
 * listener lost kills here: see tests/vm/README.md.
 */
#include "scen.h"
#include "nl_genl.h"

#define KEY	"t-esk"
#define A	"/nxq-esk-a"
#define B	"/nxq-esk-b"
#define C	"/nxq-esk-c"
#define M	SC_MIB
#define ROUNDS	13
#define T_NS	(300ULL * 1000000)	/* A's wait in each round */
/* appended after timestamp-ns (ABI: new attributes go at the end) */
#define EV_A_COUNT	(NXQUOTA_A_EVENT_TIMESTAMP_NS + 1)

/* What the listener saw, shared with the parent. */
struct seen {
	volatile int stop;		/* 1: the storm is over, drain */
	volatile int ready;		/* the listener has joined */
	uint64_t kills, kill_pid[64], kill_cg[64];
	uint64_t denied_events, denied_count, denied_last_count;
	uint64_t overruns;		/* ENOBUFS: the socket overflowed */
	uint64_t events;
	uint64_t first_ns, last_ns;	/* of the denial events */
	uint64_t ts, back;		/* the last timestamp; times it went
					 * back
					 */
};

static struct seen *seen;
static uint64_t *storm_tries, *storm_ok;

/* The listener's socket, joined; 0 when the authority has no events. */
static int ev_join(void)
{
	int fd;

	if (sc_daemon()) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		struct sc_nlreq m;

		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s",
			 sc_control_path());
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&sa,
				      sizeof(sa)) < 0)
			FAIL("control socket %s: %s", sa.sun_path,
			     sc_errname(errno));
		nl_family_id = NXQD_GENL_ID;
		sc_nl_family = NXQD_GENL_ID;
		sc_nl_init(&m, NXQUOTA_CMD_EVENT, 0);
		CHECK_OK(sc_nl_talk_fd(fd, &m, NULL, NULL));
		return fd;
	}
	fd = NL_OPEN();
	CHECK(nl_events_grp != 0);
	if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
		       &nl_events_grp, sizeof(nl_events_grp)) < 0)
		FAIL("join the events group: %s", sc_errname(errno));
	return fd;
}

/* One event message: note what this scenario counts. */
static void ev_note(struct nlmsghdr *h, uint64_t c)
{
	struct nlattr *tb[NL_MAXATTR + 1];
	uint64_t cg = 0, count = 1, ts;
	uint32_t type, pid = 0;

	nl_parse(h, tb);
	if (!tb[NXQUOTA_A_EVENT_TYPE] || !tb[NXQUOTA_A_EVENT_DEVICE] ||
	    strcmp(nl_str(tb[NXQUOTA_A_EVENT_DEVICE]), KEY))
		return;
	seen->events++;
	type = nl_u32(tb[NXQUOTA_A_EVENT_TYPE]);
	ts = tb[NXQUOTA_A_EVENT_TIMESTAMP_NS] ?
		nl_u64(tb[NXQUOTA_A_EVENT_TIMESTAMP_NS]) : 0;
	if (tb[NXQUOTA_A_EVENT_CGROUP_ID])
		cg = nl_u64(tb[NXQUOTA_A_EVENT_CGROUP_ID]);
	if (tb[NXQUOTA_A_EVENT_PID])
		pid = nl_u32(tb[NXQUOTA_A_EVENT_PID]);
	if (EV_A_COUNT <= NL_MAXATTR && tb[EV_A_COUNT])
		count = nl_u64(tb[EV_A_COUNT]);
	if (ts < seen->ts)
		seen->back++;
	seen->ts = ts;
	if (type == NXQUOTA_EVENT_TYPE_KILLED) {
		if (seen->kills < 64) {
			seen->kill_pid[seen->kills] = pid;
			seen->kill_cg[seen->kills] = cg;
		}
		seen->kills++;
		sc_log("listener: killed pid %u cgroup %" PRIu64, pid, cg);
	} else if (type == NXQUOTA_EVENT_TYPE_DENIED && cg == c) {
		if (!seen->denied_events)
			seen->first_ns = ts;
		seen->last_ns = ts;
		seen->denied_events++;
		seen->denied_count += count;
		seen->denied_last_count = count;
	}
}

/* Read continuously until told to stop, then drain for a second. */
static int listener(void *arg)
{
	static char buf[65536];
	struct pollfd p = { .events = POLLIN };
	uint64_t c = *(uint64_t *)arg, quiet_since = 0;
	struct nlmsghdr *h;
	ssize_t len;

	p.fd = ev_join();
	seen->ready = 1;
	for (;;) {
		if (poll(&p, 1, 100) != 1) {
			if (!seen->stop)
				continue;
			if (!quiet_since)
				quiet_since = sc_now_ms();
			if (sc_now_ms() - quiet_since > 1000)
				break;
			continue;
		}
		quiet_since = 0;
		len = recv(p.fd, buf, sizeof(buf), 0);
		if (len < 0 && errno == ENOBUFS) {
			seen->overruns++;	/* lost; read on */
			continue;
		}
		if (len < 0 && errno == EINTR)
			continue;
		if (len <= 0)
			FAIL("listener: recv: %s", len ? sc_errname(errno) :
			     "closed");
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len))
			if (h->nlmsg_type == nl_family_id &&
			    ((struct genlmsghdr *)NLMSG_DATA(h))->cmd ==
			    NXQUOTA_CMD_EVENT)
				ev_note(h, c);
	}
	close(p.fd);
	return 0;
}

/* The tenant refused in a loop: 2M against its max of 1M, no wait. */
static int storm(void *arg)
{
	uint64_t id;
	int fd;

	(void)arg;
	CHECK_OK(sc_cg_enter(C));
	fd = sc_open();
	CHECK_OK(fd);
	CHECK_OK(sc_register(fd, KEY, -1, 0, &id));
	while (!seen->stop) {
		if (!sc_charge(fd, id, 2 * M, NULL))
			(*storm_ok)++;
		(*storm_tries)++;
	}
	return 0;
}

static uint64_t dropped(const char *type)
{
#ifdef SC_HAVE_EVENTS_DROPPED_TYPE
	return DEV_KEYED(KEY, "events_dropped_by_type", type);
#else
	(void)type;
	return 0;
#endif
}

/* Events under a storm: the module (netlink) and nxquotad (its control socket) alike. */
FIXTURE(storm_kills) {
	uint64_t a;
	uint64_t b;
	uint64_t c;
};

FIXTURE_VARIANT(storm_kills) {};

FIXTURE_VARIANT_ADD(storm_kills, module) {};

FIXTURE_VARIANT_ADD(storm_kills, daemon) {};

FIXTURE_SETUP(storm_kills)
{
	CHECK_OK(sc_dev_register_open(KEY, "100M"));
	CHECK_OK(sc_writef(sc_dev_path(KEY, "ticket_timeout_ms"), "100"));
	CHECK_OK(sc_cg_create(A));
	CHECK_OK(sc_cg_create(B));
	CHECK_OK(sc_cg_create(C));
	self->a = CG_ID(A);
	self->b = CG_ID(B);
	self->c = CG_ID(C);
	CHECK_OK(sc_set_budget(KEY, A " min=60M"));
	CHECK_OK(sc_set_budget(KEY, B " max=100M"));
	CHECK_OK(sc_set_budget(KEY, C " max=1M"));
	CHECK_OK(sc_write(sc_node_path(KEY, self->b, "kill_on_ignore"), "1"));
}

FIXTURE_TEARDOWN(storm_kills)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(A));
	CHECK_OK(sc_cg_remove(B));
	CHECK_OK(sc_cg_remove(C));
}

TEST_F_TIMEOUT(storm_kills, every_kill_seen, 55)
{
	uint64_t a = self->a, b = self->b, c = self->c;
	pid_t victims[ROUNDS], pl, ps;
	uint64_t kills0, t0, ms, dd, dk, lost;
	struct sc_peer pa, pb;
	struct sc_rep r;
	int i, j, st, missing = 0;

	seen = sc_shared(sizeof(*seen) + 4096);
	storm_tries = (uint64_t *)(seen + 1);
	storm_ok = storm_tries + 1;
	sc_peer_start(&pa, "A", A, KEY, 0, 1);
	kills0 = DEV_U64(KEY, "kills");

	pl = sc_spawn(listener, &c);
	for (i = 0; i < 2000 && !seen->ready; i++)
		usleep(10 * 1000);
	CHECK(seen->ready);
	t0 = sc_now_ms();
	ps = sc_spawn(storm, NULL);
	usleep(300 * 1000);	/* the storm is on */

	for (i = 0; i < ROUNDS; i++) {
		sc_peer_start(&pb, "B", B, KEY, 0, 1);
		PEER_OK(&pb, SC_PEER_CHARGE, 90 * M, 0);
		r = PEER_CALL(&pa, SC_PEER_CHARGE, 20 * M, T_NS);
		if (r.rc)
			FAIL("round %d: A's wait for 20M with B ignoring: %s",
			     i, sc_rcname(r.rc));
		victims[i] = pb.pid;
		st = sc_peer_kill(&pb);
		if (st != 128 + SIGKILL)
			FAIL("round %d: B ended with status %d, expected "
			     "SIGKILL (%d)", i, st, 128 + SIGKILL);
		PEER_OK(&pa, SC_PEER_UNCHARGE, 20 * M, 0);
	}
	usleep(300 * 1000);
	seen->stop = 1;
	CHECK_CHILD_OK(ps);
	ms = sc_now_ms() - t0;
	CHECK_CHILD_OK(pl);

	dd = dropped("denied");
	dk = dropped("killed");
	lost = DEV_U64(KEY, "events_dropped");
	sc_log("%d kills in %llu ms under %llu refused charges (%llu/s): the "
	       "listener saw %llu kills, %llu denial events standing for %llu "
	       "denials, %llu events in all, %llu overruns; events_dropped "
	       "%llu (denied %llu, killed %llu)", ROUNDS,
	       (unsigned long long)ms, (unsigned long long)*storm_tries,
	       (unsigned long long)(*storm_tries * 1000 / (ms ? ms : 1)),
	       (unsigned long long)seen->kills,
	       (unsigned long long)seen->denied_events,
	       (unsigned long long)seen->denied_count,
	       (unsigned long long)seen->events,
	       (unsigned long long)seen->overruns, (unsigned long long)lost,
	       (unsigned long long)dd, (unsigned long long)dk);
	CHECK_EQ(*storm_ok, 0);
	CHECK(*storm_tries > 1000);
	CHECK_EQ(DEV_U64(KEY, "kills") - kills0, ROUNDS);

	/* Every kill reached the listener, naming its victim. */
	for (i = 0; i < ROUNDS; i++) {
		for (j = 0; j < (int)seen->kills && j < 64; j++)
			if (seen->kill_pid[j] == (uint64_t)victims[i] &&
			    seen->kill_cg[j] == b)
				break;
		if (j == (int)seen->kills || j == 64) {
			sc_log("kill of round %d (pid %d) not seen", i,
			       (int)victims[i]);
			missing++;
		}
	}
	if (missing || seen->kills != ROUNDS)
		FAIL("the listener saw %llu kill events of %d, %d victims "
		     "missing (events_dropped %llu, %llu socket overruns)",
		     (unsigned long long)seen->kills, ROUNDS, missing,
		     (unsigned long long)lost,
		     (unsigned long long)seen->overruns);
	CHECK_EQ(dk, 0);

	/* The denials, coalesced: every one counted, seen or lost. */
	CHECK_EQ(seen->denied_count + dd, *storm_tries);
	if (seen->denied_events * 10 > *storm_tries)
		FAIL("%llu denial events for %llu denials: not coalesced",
		     (unsigned long long)seen->denied_events,
		     (unsigned long long)*storm_tries);
	/*
	 * A batch at most every 10 ms (sleeps are never short), and one
	 * sent early ahead of each other event (a kill, a ticket).
	 */
	if (seen->denied_events > 5 + ms / 10 +
	    (seen->events - seen->denied_events))
		FAIL("%llu denial events in %llu ms: more than one per 10 ms",
		     (unsigned long long)seen->denied_events,
		     (unsigned long long)ms);
	CHECK_EQ(seen->overruns, 0);
	CHECK_EQ(seen->back, 0);	/* timestamps never went back */

	PEER_STOP(&pa);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 0);
}

TEST_HARNESS_MAIN
