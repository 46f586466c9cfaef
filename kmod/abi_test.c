// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit: the ABI's tables (abi.c) against the uapi header and the spec.
 * Included at the end of abi.c, which both authorities build (the module's
 * KUnit build, and nxquotad's ledger suite with CONFIG_NXQUOTA_KUNIT_TEST),
 * so that the suite sees what abi.c keeps to itself.
 */
#include <kunit/test.h>

/* Every command: its entry agrees with the header's definition of it. */
static void nxq_abi_test_cmds(struct kunit *test)
{
	static const struct {
		unsigned int cmd;
		u16 ver0;
		u32 flags;
		bool holder;
	} want[] = {
		{ NXQ_IOC_VERSION, NXQ_VERSION_SIZE_VER0, NXQ_ABI_NO_FLAGS,
		  false },
		{ NXQ_IOC_HOLDER_REGISTER, NXQ_HOLDER_REG_SIZE_VER0,
		  NXQ_HOLDER_FLAGS_ALL, false },
		{ NXQ_IOC_HOLDER_UNREGISTER, NXQ_HOLDER_ID_SIZE_VER0, 0, true },
		{ NXQ_IOC_CHARGE, NXQ_CHARGE_SIZE_VER0, NXQ_CHARGE_FLAGS_ALL,
		  true },
		{ NXQ_IOC_UNCHARGE, NXQ_CHARGE_SIZE_VER0, 0, true },
		{ NXQ_IOC_SET_RECLAIMABLE, NXQ_RECLAIMABLE_SIZE_VER0, 0, true },
		{ NXQ_IOC_STATUS, NXQ_STATUS_SIZE_VER0, 0, true },
		{ NXQ_IOC_TICKET_READ, NXQ_TICKET_SIZE_VER0, 0, true },
		{ NXQ_IOC_TICKET_ANSWER, NXQ_TICKET_ANSWER_SIZE_VER0, 0, true },
	};
	const struct nxq_abi_cmd *op;
	unsigned int i, n = 0;

	KUNIT_EXPECT_EQ(test, ARRAY_SIZE(want), ARRAY_SIZE(nxq_abi_cmds));
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		op = nxq_abi_cmd(want[i].cmd);
		KUNIT_ASSERT_NOT_NULL(test, op);
		KUNIT_EXPECT_EQ(test, op->cmd, want[i].cmd);
		KUNIT_EXPECT_EQ(test, op->ksize, _IOC_SIZE(want[i].cmd));
		KUNIT_EXPECT_EQ(test, op->ver0, want[i].ver0);
		KUNIT_EXPECT_LE(test, op->ver0, op->ksize);
		KUNIT_EXPECT_EQ(test, op->flags, want[i].flags);
		KUNIT_EXPECT_EQ(test, op->holder, want[i].holder);
		KUNIT_EXPECT_EQ(test, op->out,
				!!(_IOC_DIR(want[i].cmd) & _IOC_READ));
		KUNIT_EXPECT_LE(test, op->ksize, NXQ_ABI_ARG_MAX);
		/* the size bits do not matter; type and direction do */
		KUNIT_EXPECT_PTR_EQ(test, nxq_abi_cmd(NXQ_ABI_CMDNR(want[i].cmd)),
				    op);
		KUNIT_EXPECT_NULL(test, nxq_abi_cmd(want[i].cmd ^
						    (1U << _IOC_TYPESHIFT)));
		n++;
	}
	KUNIT_EXPECT_EQ(test, n, NXQ_ABI_NR_CMDS);
	KUNIT_EXPECT_EQ(test, _IOC_NR(NXQ_IOC_TICKET_ANSWER) + 1,
			NXQ_ABI_NR_CMDS);
	KUNIT_EXPECT_NULL(test, nxq_abi_cmd(_IOWR(NXQ_IOC_MAGIC, NXQ_ABI_NR_CMDS,
						 struct nxq_version)));
	KUNIT_EXPECT_NULL(test, nxq_abi_cmd(_IOR(NXQ_IOC_MAGIC, 0,
						struct nxq_version)));
	KUNIT_EXPECT_EQ(test, NXQ_ABI_FEATURES,
			NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS |
			NXQ_FEAT_CHARGE_WAIT | NXQ_FEAT_TICKETS |
			NXQ_FEAT_STATUS_V1 | NXQ_FEAT_CHARGE_PROBE |
			NXQ_FEAT_CHARGE_V1);
	/* a refusal is copied back only to a charge of version 1 */
	for (i = 0; i < ARRAY_SIZE(nxq_abi_cmds); i++)
		KUNIT_EXPECT_EQ(test, nxq_abi_cmds[i].err_out,
				nxq_abi_cmds[i].cmd == NXQ_IOC_CHARGE ?
				NXQ_CHARGE_SIZE_VER1 : 0);
	op = nxq_abi_cmd(NXQ_IOC_CHARGE);
	KUNIT_EXPECT_FALSE(test, nxq_abi_err_out(op, NXQ_CHARGE_SIZE_VER0,
						 -EDQUOT));
	KUNIT_EXPECT_TRUE(test, nxq_abi_err_out(op, NXQ_CHARGE_SIZE_VER1,
						-EDQUOT));
	KUNIT_EXPECT_FALSE(test, nxq_abi_err_out(op, NXQ_CHARGE_SIZE_VER1, 0));
	KUNIT_EXPECT_FALSE(test,
			   nxq_abi_err_out(nxq_abi_cmd(NXQ_IOC_UNCHARGE),
					   NXQ_CHARGE_SIZE_VER1, -EINVAL));
	KUNIT_EXPECT_EQ(test, sizeof(struct nxq_charge), NXQ_CHARGE_SIZE_VER1);
}

/* The argument rules: sizes, flags, the charge's and registration's. */
static void nxq_abi_test_args(struct kunit *test)
{
	const struct nxq_abi_cmd *op = nxq_abi_cmd(NXQ_IOC_CHARGE);
	struct nxq_charge c = { .size = sizeof(c) };
	struct nxq_holder_reg r = { .size = sizeof(r), .eventfd = -1 };
	struct nxq_device *dev = kunit_kzalloc(test, sizeof(*dev), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, op);
	KUNIT_ASSERT_NOT_NULL(test, dev);
	dev->devt = 7;
	KUNIT_EXPECT_EQ(test, nxq_abi_size(op, NXQ_CHARGE_SIZE_VER0 - 1),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_size(op, PAGE_SIZE), 0);
	KUNIT_EXPECT_EQ(test, nxq_abi_size(op, PAGE_SIZE + 1), -E2BIG);
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), 0);
	c.flags = 1U << 31;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), -EINVAL);
	c.flags = NXQ_CHARGE_WAIT;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), -EINVAL);
	c.timeout_ns = 1;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), 0);
	c.flags |= NXQ_CHARGE_PROBE;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), -EINVAL);
	c.flags = NXQ_CHARGE_NOWAIT | NXQ_CHARGE_WAIT;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), -EINVAL);
	c.flags = 0;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(nxq_abi_cmd(NXQ_IOC_UNCHARGE), &c),
			-EINVAL);
	/* version 1: a path buffer has a size, and only a charge has one */
	c.timeout_ns = 0;
	c.path = 0x1000;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), -EINVAL);
	c.path_size = 64;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), 0);
	KUNIT_EXPECT_EQ(test, nxq_abi_args(nxq_abi_cmd(NXQ_IOC_UNCHARGE), &c),
			-EINVAL);
	c.path = 0;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), -EINVAL);
	c.path_size = 0;
	c.refused_usage = 1;	/* an out field: a charge sets it */
	KUNIT_EXPECT_EQ(test, nxq_abi_args(op, &c), 0);
	KUNIT_EXPECT_EQ(test, nxq_abi_args(nxq_abi_cmd(NXQ_IOC_UNCHARGE), &c),
			-EINVAL);
	c.refused_usage = 0;
	KUNIT_EXPECT_EQ(test, nxq_abi_args(nxq_abi_cmd(NXQ_IOC_UNCHARGE), &c),
			0);

	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EINVAL);
	strscpy(r.device, "host0", sizeof(r.device));
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), 0);
	r.priority = NXQ_PRIORITY_MAX + 1;
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EINVAL);
	r.priority = 0;
	r.reserved = 1;
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EINVAL);
	r.reserved = 0;
	r.devfd = 3;
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EINVAL);
	r.flags = NXQ_HOLDER_DEVFD;
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), 0);
	r.eventfd = -2;
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EBADF);
	r.eventfd = -1;
	memset(r.device, 'a', sizeof(r.device));
	KUNIT_EXPECT_EQ(test, nxq_abi_register_check(&r), -EINVAL);

	KUNIT_EXPECT_EQ(test, nxq_abi_devnode_check(dev, true, true, 7), 0);
	KUNIT_EXPECT_EQ(test, nxq_abi_devnode_check(dev, false, true, 7),
			-EACCES);
	KUNIT_EXPECT_EQ(test, nxq_abi_devnode_check(dev, true, false, 7),
			-EACCES);
	KUNIT_EXPECT_EQ(test, nxq_abi_devnode_check(dev, true, true, 8),
			-EACCES);
	dev->devt = 0;
	KUNIT_EXPECT_EQ(test, nxq_abi_devnode_check(dev, false, false, 0), 0);
}

/* The administration's values. */
static void nxq_abi_test_values(struct kunit *test)
{
	unsigned int maj = 0, min = 0;

	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("195:0", &maj, &min), 0);
	KUNIT_EXPECT_EQ(test, maj, 195U);
	KUNIT_EXPECT_EQ(test, min, 0U);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("4095:1048575", &maj, &min),
			0);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("4096:0", &maj, &min),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("1:1048576", &maj, &min),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("0:0", &maj, &min), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("1:2x", &maj, &min), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("1:", &maj, &min), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt(":1", &maj, &min), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_parse_devt("-1:1", &maj, &min), -EINVAL);
	KUNIT_EXPECT_TRUE(test, nxq_abi_limit_valid(NXQ_LIM_PRIORITY_MAX,
						    NXQ_PRIORITY_MAX));
	KUNIT_EXPECT_FALSE(test, nxq_abi_limit_valid(NXQ_LIM_PRIORITY_MAX,
						     NXQ_PRIORITY_MAX + 1));
	KUNIT_EXPECT_FALSE(test, nxq_abi_limit_valid(NXQ_LIM_WAIT_MAX_MS,
						     3600 * 1000 + 1));
	KUNIT_EXPECT_FALSE(test, nxq_abi_limit_valid(NXQ_LIM_HOLDERS_MAX,
						     NXQ_LIMIT_UNSET));
	KUNIT_EXPECT_FALSE(test, nxq_abi_ticket_timeout_valid(0));
	KUNIT_EXPECT_TRUE(test, nxq_abi_ticket_timeout_valid(3600 * 1000));
	KUNIT_EXPECT_FALSE(test, nxq_abi_ticket_timeout_valid(3600 * 1000 + 1));
}

#if IS_ENABLED(CONFIG_NET)
/*
 * The operations: one per request command of the header, each a do or a
 * dump, the administration's among the do's, each policy as long as its
 * highest attribute and its strings as long as the header's limits.
 */
static void nxq_abi_test_nlops(struct kunit *test)
{
	unsigned int i, a, seen = 0;

	for (i = 0; i < ARRAY_SIZE(nxq_abi_nlops); i++) {
		const struct nxq_abi_nlop *op = &nxq_abi_nlops[i];

		KUNIT_EXPECT_PTR_EQ(test, nxq_abi_nlop(op->cmd), op);
		KUNIT_EXPECT_NE(test, op->doit, op->dumpit);
		KUNIT_EXPECT_EQ(test, !!(op->flags & GENL_CMD_CAP_DO), op->doit);
		KUNIT_EXPECT_EQ(test, !!(op->flags & GENL_CMD_CAP_DUMP),
				op->dumpit);
		KUNIT_EXPECT_TRUE(test, !(op->flags & GENL_ADMIN_PERM) ||
				  op->doit);
		KUNIT_EXPECT_EQ(test, !op->policy, !op->maxattr);
		KUNIT_EXPECT_GT(test, op->cmd, 0);
		KUNIT_EXPECT_LT(test, op->cmd, NXQUOTA_CMD_EVENT);
		seen |= BIT(op->cmd);
		for (a = 1; op->policy && a <= op->maxattr; a++) {
			const struct nla_policy *p = &op->policy[a];

			if (p->type != NLA_NUL_STRING)
				continue;
			KUNIT_EXPECT_TRUE(test, p->len == NXQ_DEVICE_KEY_MAX - 1 ||
					  p->len == PATH_MAX - 1 || p->len == 31);
		}
	}
	/* every command but the event, which is sent, never asked */
	KUNIT_EXPECT_EQ(test, seen, (u32)(GENMASK(NXQUOTA_CMD_MAX, 1) &
					 ~BIT(NXQUOTA_CMD_EVENT)));
	KUNIT_EXPECT_NULL(test, nxq_abi_nlop(NXQUOTA_CMD_EVENT));
	KUNIT_EXPECT_NULL(test, nxq_abi_nlop(0));
	/* the administration: every command that changes something */
	KUNIT_EXPECT_TRUE(test, nxq_abi_nlop(NXQUOTA_CMD_BUDGET_SET)->flags &
			  GENL_ADMIN_PERM);
	KUNIT_EXPECT_FALSE(test, nxq_abi_nlop(NXQUOTA_CMD_BUDGET_GET)->flags &
			   GENL_ADMIN_PERM);
	/* up to the last settable one (measured, escaped: nxquotad's dump only) */
	KUNIT_EXPECT_EQ(test, nxq_abi_nlop(NXQUOTA_CMD_BUDGET_SET)->maxattr,
			(unsigned int)NXQUOTA_A_BUDGET_OVERCOMMIT);
}

/* Each ledger event is sent as the header names it, or not at all. */
static void nxq_abi_test_events(struct kunit *test)
{
	struct nxq_event ev = { .type = NXQ_EV_DENIED, .device = "d",
				.cgroup_id = 5, .tgid = 9, .bytes = 7,
				.count = 3 };
	struct nxq_abi_msg m;

	KUNIT_EXPECT_EQ(test, nxq_abi_event_type(NXQ_EV_DEVICE_ADDED),
			NXQUOTA_EVENT_TYPE_DEVICE_ADDED);
	KUNIT_EXPECT_EQ(test, nxq_abi_event_type(NXQ_EV_KILLED),
			NXQUOTA_EVENT_TYPE_KILLED);
	KUNIT_EXPECT_EQ(test, nxq_abi_event_type(NXQ_EV_TICKET_ANSWERED),
			NXQUOTA_EVENT_TYPE_TICKET_ANSWERED);
	KUNIT_EXPECT_EQ(test, nxq_abi_event_type(NXQ_EV_HOLDER_ADDED), 0U);
	KUNIT_EXPECT_EQ(test, nxq_abi_event_msg(&ev, &m),
			NXQUOTA_EVENT_TYPE_DENIED);
	/* a denial carries the count it stands for, last */
	KUNIT_EXPECT_EQ(test, m.n, 9U);
	KUNIT_EXPECT_EQ(test, m.a[0].type, NXQUOTA_A_EVENT_TYPE);
	KUNIT_EXPECT_STREQ(test, m.a[1].s, "d");
	KUNIT_EXPECT_EQ(test, m.a[8].type, NXQUOTA_A_EVENT_COUNT);
	KUNIT_EXPECT_EQ(test, m.a[8].v, 3ULL);
	ev.type = NXQ_EV_KILLED;
	KUNIT_EXPECT_EQ(test, nxq_abi_event_msg(&ev, &m),
			NXQUOTA_EVENT_TYPE_KILLED);
	KUNIT_EXPECT_EQ(test, m.n, 8U);
	ev.type = NXQ_EV_HOLDER_REMOVED;
	KUNIT_EXPECT_EQ(test, nxq_abi_event_msg(&ev, &m), 0U);
	KUNIT_EXPECT_EQ(test, m.n, 0U);
}
#endif

static struct kunit_case nxq_abi_cases[] = {
	KUNIT_CASE(nxq_abi_test_cmds),
	KUNIT_CASE(nxq_abi_test_args),
	KUNIT_CASE(nxq_abi_test_values),
#if IS_ENABLED(CONFIG_NET)
	KUNIT_CASE(nxq_abi_test_nlops),
	KUNIT_CASE(nxq_abi_test_events),
#endif
	{}
};

static struct kunit_suite nxq_abi_suite = {
	.name = "nxquota-abi",
	.test_cases = nxq_abi_cases,
};

kunit_test_suite(nxq_abi_suite);
