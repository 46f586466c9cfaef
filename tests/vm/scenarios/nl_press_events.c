// SPDX-License-Identifier: GPL-2.0
/*
 * nl_press_events: the pressure events on the "events" multicast group.
 *
 * Device of 100M; /nxq-npe-a has min = 60M and sits idle, /nxq-npe-b
 * borrows 90M through a holder B with an eventfd.  A listener joins the
 * events group once this is set up.
 *  1. Lending: B serves its tickets (releases what is asked).  A waits for
 *     40M: the listener sees ticket-issued (device, B's cgroup id, B's
 *     pid, bytes 30M, the generation B read, reason DEVICE), then
 *     ticket-answered (same device, cgroup, pid and generation, bytes
 *     30M), both between A's call and A's grant.
 *  2. Escalation: B stops answering, kill_on_ignore = 1 on B's node; A
 *     waits 1 s for 20M more: ticket-issued to B (20M, reason DEVICE, a
 *     later generation), then at A's deadline killed (B's pid, cgroup,
 *     device, bytes = B's charge, 60M); B dies of SIGKILL and A is granted
 *     after the event's timestamp.
 * No other ticket/killed/denied event on the device arrives, and every
 * timestamp is CLOCK_MONOTONIC and does not go back.
 */
#include "scen.h"
#include "nl_genl.h"

#define KEY	"t-npe"
#define A	"/nxq-npe-a"
#define B	"/nxq-npe-b"
#define M	SC_MIB
#define T_NS	(1000ULL * 1000000)	/* A's wait in step 2: 1 s */
#define EARLY_NS (10ULL * 1000000)
#define LATE_NS	(1500ULL * 1000000)

/* A ticket, kill or denial on our device: what this scenario watches. */
static int watched(const struct nl_event *e)
{
	return !strcmp(e->device, KEY) &&
	       (e->type == NXQUOTA_EVENT_TYPE_TICKET_ISSUED ||
		e->type == NXQUOTA_EVENT_TYPE_TICKET_ANSWERED ||
		e->type == NXQUOTA_EVENT_TYPE_KILLED ||
		e->type == NXQUOTA_EVENT_TYPE_DENIED);
}

/* The next watched event must be of this type (others are skipped). */
static void expect_at(int line, int fd, uint32_t type, struct nl_event *e)
{
	do
		if (!nl_event_recv(fd, e, 5000))
			FAIL("(line %d) no %s event within 5 s", line,
			     nl_event_name(type));
	while (!watched(e));
	if (e->type != type)
		FAIL("(line %d) expected a %s event, got %s (bytes %" PRIu64
		     " pid %u)", line, nl_event_name(type), nl_event_name(e->type), e->bytes,
		     e->pid);
}
#define EXPECT(fd, type, e) expect_at(__LINE__, fd, type, e)

/* The fields naming the holder: device, cgroup, pid. */
static void check_holder_at(int line, const struct nl_event *e, uint64_t cg,
			    pid_t pid)
{
	if (strcmp(e->device, KEY) || e->cgroup != cg || e->pid != (uint32_t)pid)
		FAIL("(line %d) %s event names device %s cgroup %" PRIu64
		     " pid %u, expected %s %" PRIu64 " %d", line,
		     nl_event_name(e->type), e->device, e->cgroup, e->pid, KEY, cg,
		     (int)pid);
}
#define CHECK_HOLDER(e, cg, pid) check_holder_at(__LINE__, e, cg, pid)

/* Pressure events on the kernel's generic netlink socket: the module only (sc_module_only[]). */
FIXTURE(press_events) {
	uint64_t a;
	uint64_t b;
};

FIXTURE_VARIANT(press_events) {};

FIXTURE_VARIANT_ADD(press_events, module) {};

FIXTURE_SETUP(press_events)
{
	CHECK_OK(sc_dev_register_open(KEY, "100M"));
	CHECK_OK(sc_cg_create(A));
	CHECK_OK(sc_cg_create(B));
	self->a = CG_ID(A);
	self->b = CG_ID(B);
}

FIXTURE_TEARDOWN(press_events)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(A));
	CHECK_OK(sc_cg_remove(B));
}

TEST_F(press_events, lending_then_kill_in_order)
{
	uint64_t a = self->a, b = self->b;
	struct sc_peer pa, pb;
	struct nl_event iss, ans, kil, e;
	struct sc_rep r, s;
	uint64_t t0;
	struct nl_msg m;
	int lis, st;

	lis = NL_OPEN();
	nl_init(&m, nl_family_id, 0, NXQUOTA_CMD_BUDGET_SET);
	nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
	nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, A);
	nl_put_u64(&m, NXQUOTA_A_BUDGET_MIN, 60 * M);
	CHECK_OK(nl_talk(lis, &m, NULL, NULL, NULL));
	CHECK_EQ(NODE_U64(KEY, a, "min"), 60 * M);
	sc_peer_start(&pb, "B", B, KEY, 0, 1);
	sc_peer_start(&pa, "A", A, KEY, 0, 1);
	PEER_OK(&pb, SC_PEER_CHARGE, 90 * M, 0);
	CHECK_EQ(PEER_OK(&pb, SC_PEER_STATUS, 0, 0).v[2], b);
	CHECK_EQ(DEV_U64(KEY, "used"), 90 * M);

	CHECK(nl_events_grp != 0);
	if (setsockopt(lis, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP,
		       &nl_events_grp, sizeof(nl_events_grp)) < 0)
		FAIL("join the events group: %s", sc_errname(errno));

	/* 1. Lending: B answers its ticket releasing the 30M asked. */
	PEER_OK(&pb, SC_PEER_SERVE, SC_SERVE_RELEASE, 0);
	t0 = sc_now_ns();
	r = PEER_CALL(&pa, SC_PEER_CHARGE, 40 * M, 10000ULL * 1000000);
	if (r.rc)
		FAIL("A's wait for 40M with B serving: %s", sc_rcname(r.rc));
	CHECK_EQ(r.v[0], 40 * M);
	CHECK_EQ(NODE_U64(KEY, a, "current"), 40 * M);
	s = PEER_OK(&pb, SC_PEER_STATS, 0, 0);
	CHECK_EQ(s.v[0], 1);			/* B answered one ticket */
	CHECK_EQ(s.v[1], 30 * M);
	CHECK_EQ(s.v[3], 30 * M);

	EXPECT(lis, NXQUOTA_EVENT_TYPE_TICKET_ISSUED, &iss);
	CHECK_HOLDER(&iss, b, pb.pid);
	CHECK_EQ(iss.bytes, 30 * M);
	CHECK_EQ(iss.value, s.v[2]);		/* the generation B read */
	CHECK_EQ(iss.reason, NXQ_TICKET_REASON_DEVICE);
	CHECK(iss.ts >= t0);
	EXPECT(lis, NXQUOTA_EVENT_TYPE_TICKET_ANSWERED, &ans);
	CHECK_HOLDER(&ans, b, pb.pid);
	CHECK_EQ(ans.bytes, 30 * M);
	CHECK_EQ(ans.value, iss.value);
	CHECK(ans.ts >= iss.ts && ans.ts <= r.v[2]);

	/* 2. Escalation: B ignores, its node kills on ignore. */
	PEER_OK(&pb, SC_PEER_SERVE, SC_SERVE_OFF, 0);
	CHECK_OK(sc_write(sc_node_path(KEY, b, "kill_on_ignore"), "1"));
	CHECK_EQ(NODE_U64(KEY, b, "kill_on_ignore"), 1);
	t0 = sc_now_ns();
	r = PEER_CALL(&pa, SC_PEER_CHARGE, 20 * M, T_NS);
	if (r.rc)
		FAIL("A's wait for 20M with kill_on_ignore on B: %s",
		     sc_rcname(r.rc));
	CHECK_EQ(r.v[0], 60 * M);
	st = sc_peer_kill(&pb);
	if (st != 128 + SIGKILL)
		FAIL("B ended with status %d, expected SIGKILL (%d)", st,
		     128 + SIGKILL);

	EXPECT(lis, NXQUOTA_EVENT_TYPE_TICKET_ISSUED, &iss);
	CHECK_HOLDER(&iss, b, pb.pid);
	CHECK_EQ(iss.bytes, 20 * M);
	CHECK(iss.value > ans.value);		/* a new generation */
	CHECK_EQ(iss.reason, NXQ_TICKET_REASON_DEVICE);
	CHECK(iss.ts >= t0);
	EXPECT(lis, NXQUOTA_EVENT_TYPE_KILLED, &kil);
	CHECK_HOLDER(&kil, b, pb.pid);
	CHECK_EQ(kil.bytes, 60 * M);		/* B's charge when killed */
	/* At A's deadline (not before), and before A was granted. */
	if (kil.ts + EARLY_NS < t0 + T_NS || kil.ts > r.v[2] ||
	    kil.ts > t0 + T_NS + LATE_NS)
		FAIL("killed event %lld ms from A's deadline, A granted %lld "
		     "ms after it", ((long long)kil.ts -
				     (long long)(t0 + T_NS)) / 1000000,
		     ((long long)r.v[2] - (long long)kil.ts) / 1000000);
	CHECK_EQ(DEV_U64(KEY, "kills"), 1);

	/* Nothing more on the device: no second kill, no answer, no denial. */
	while (nl_event_recv(lis, &e, 500))
		if (watched(&e))
			FAIL("unexpected %s event after the kill (pid %u bytes "
			     "%" PRIu64 ")", nl_event_name(e.type), e.pid, e.bytes);

	close(lis);
	PEER_STOP(&pa);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
}

TEST_HARNESS_MAIN
