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
	KUNIT_EXPECT_TRUE(test, nxq_abi_field_valid(NXQ_BF_PRIORITY_MAX,
						    NXQ_PRIORITY_MAX));
	KUNIT_EXPECT_FALSE(test, nxq_abi_field_valid(NXQ_BF_PRIORITY_MAX,
						     NXQ_PRIORITY_MAX + 1));
	KUNIT_EXPECT_FALSE(test, nxq_abi_field_valid(NXQ_BF_WAIT_MAX_MS,
						     3600 * 1000 + 1));
	KUNIT_EXPECT_FALSE(test, nxq_abi_field_valid(NXQ_BF_HOLDERS_MAX,
						     NXQ_LIMIT_UNSET));
}

/*
 * Every field of the device table, none named here but where the ledger
 * is read: found by its name, its bounds and default kept by the check
 * every door makes (nxq_abi_dfield_parse()), its text read as its parse
 * column says, and each read from the device as the ledger keeps it.
 */
static void nxq_abi_test_dfields(struct kunit *test)
{
	struct nxq_device *dev = kunit_kzalloc(test, sizeof(*dev), GFP_KERNEL);
	char w[32];
	int f;
	u64 v;

	KUNIT_ASSERT_NOT_NULL(test, dev);
	spin_lock_init(&dev->lock);
	dev->capacity = 11;
	dev->default_max = NXQ_UNLIMITED;
	dev->ticket_timeout_ms = 13;
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++) {
		const struct nxq_abi_dfield *d = &nxq_abi_dfields[f];

		KUNIT_EXPECT_EQ(test, nxq_abi_dfield_find(d->name,
							  strlen(d->name)), f);
		KUNIT_EXPECT_EQ(test, d->who, NXQ_WHO_ADMIN);
		KUNIT_EXPECT_TRUE(test, d->set);
		KUNIT_EXPECT_LE(test, d->lo, d->hi);
		KUNIT_EXPECT_TRUE(test, nxq_abi_dfield_valid(f, d->dflt));
		/* its largest value, as text, read back */
		if (d->parse == NXQ_PARSE_SIZE_MAX)
			snprintf(w, sizeof(w), "max");
		else
			snprintf(w, sizeof(w), "%llu",
				 (unsigned long long)d->hi);
		KUNIT_EXPECT_EQ_MSG(test, nxq_abi_dfield_parse(f, w, &v), 0,
				    "%s=%s", d->name, w);
		KUNIT_EXPECT_EQ_MSG(test, v, d->hi, "%s", d->name);
		KUNIT_EXPECT_EQ(test, nxq_abi_dfield_parse(f, "x", &v), -EINVAL);
		KUNIT_EXPECT_EQ(test, nxq_abi_dfield_parse(f, "", &v), -EINVAL);
		if (d->unit != NXQ_UNIT_BYTES) {
			/* just outside its bounds: refused, by parse too */
			KUNIT_EXPECT_FALSE(test, nxq_abi_dfield_valid(f, d->hi + 1));
			snprintf(w, sizeof(w), "%llu",
				 (unsigned long long)d->hi + 1);
			KUNIT_EXPECT_EQ_MSG(test, nxq_abi_dfield_parse(f, w, &v),
					    -EINVAL, "%s=%s", d->name, w);
			if (d->lo) {
				KUNIT_EXPECT_FALSE(test,
					nxq_abi_dfield_valid(f, d->lo - 1));
				snprintf(w, sizeof(w), "%llu",
					 (unsigned long long)d->lo - 1);
				KUNIT_EXPECT_EQ(test,
					nxq_abi_dfield_parse(f, w, &v), -EINVAL);
			}
		}
	}
	KUNIT_EXPECT_EQ(test, nxq_abi_dfield_find("nope", 4), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_dfield_find("key", 3), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_dfield_find("devt", 4), -EINVAL);
	/* the ledger's fields, as the table reads them */
	spin_lock(&dev->lock);
	KUNIT_EXPECT_EQ(test, nxq_abi_dev_get(dev, NXQ_DF_CAPACITY), 11ULL);
	KUNIT_EXPECT_EQ(test, nxq_abi_dev_get(dev, NXQ_DF_DEFAULT_MAX),
			NXQ_UNLIMITED);
	KUNIT_EXPECT_EQ(test, nxq_abi_dev_get(dev, NXQ_DF_TICKET_TIMEOUT_MS),
			13ULL);
	spin_unlock(&dev->lock);
	/* what a device starts with is the spec's */
	KUNIT_EXPECT_EQ(test, nxq_abi_dfields[NXQ_DF_TICKET_TIMEOUT_MS].dflt,
			(u64)NXQUOTA_TICKET_TIMEOUT_MS_DEFAULT);
	KUNIT_EXPECT_TRUE(test, nxq_abi_dfields[NXQ_DF_CAPACITY].add);
}

/* The sizes every door reads (nxq_abi_parse_size()). */
static void nxq_abi_test_sizes(struct kunit *test)
{
	static const struct {
		const char *s;
		bool allow_max;
		int err;
		u64 v;
	} c[] = {
		{ "0", false, 0, 0 },
		{ "4096", false, 0, 4096 },
		{ "4G", false, 0, 4ULL << 30 },
		{ "4g", false, 0, 4ULL << 30 },
		{ "4Gi", false, 0, 4ULL << 30 },
		{ "1536K", false, 0, 1536ULL << 10 },
		{ "15E", false, 0, 15ULL << 60 },
		{ "16E", false, -EINVAL },
		{ "18446744073709551615", false, 0, U64_MAX },
		{ "18446744073709551616", false, -EINVAL },
		{ "max", true, 0, NXQ_UNLIMITED },
		{ "max", false, -EINVAL },
		{ "", true, -EINVAL },
		{ "G", false, -EINVAL },
		{ "4GB", false, -EINVAL },
		{ "4Gii", false, -EINVAL },
		{ "4X", false, -EINVAL },
		{ "-1", false, -EINVAL },
		{ "+1", false, -EINVAL },
		{ "0x10", false, -EINVAL },
		{ "1 ", false, -EINVAL },
	};
	unsigned int i;
	u64 v;

	for (i = 0; i < ARRAY_SIZE(c); i++) {
		v = 7;
		KUNIT_EXPECT_EQ_MSG(test, nxq_abi_parse_size(c[i].s, c[i].allow_max,
							     &v), c[i].err,
				    "\"%s\"", c[i].s);
		KUNIT_EXPECT_EQ_MSG(test, v, c[i].err ? 7 : c[i].v, "\"%s\"",
				    c[i].s);
	}
}

/* A field's value as its text: what each door writes and reads back. */
static void nxq_abi_test_text(const struct nxq_abi_field *d, u64 v,
			      char *buf, size_t size)
{
	if (d->parse == NXQ_PARSE_SIZE_MAX && v == NXQ_UNLIMITED)
		snprintf(buf, size, "%s=max", d->name);
	else if (d->parse == NXQ_PARSE_FLAG)
		snprintf(buf, size, "%s", d->name);
	else
		snprintf(buf, size, "%s=%llu", d->name, (unsigned long long)v);
}

/*
 * Every field of the budget table, none named here: found by its name,
 * its bounds and default kept by the check every door makes, its words
 * read into the ledger's request and back, each at most once.  A field
 * the spec has and the request does not (nxq_abi_req_put()) fails here.
 */
static void nxq_abi_test_fields(struct kunit *test)
{
	struct nxq_budget_req r;
	char w[64];
	int f, n, lims = 0;
	u64 v, want;

	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		const struct nxq_abi_field *d = &nxq_abi_fields[f];

		KUNIT_EXPECT_EQ(test, nxq_abi_field_find(d->name,
							 strlen(d->name)), f);
		KUNIT_EXPECT_EQ(test, d->who, NXQ_WHO_ADMIN);
		KUNIT_EXPECT_LE(test, d->lo, d->hi);
		if (d->lim >= 0) {
			lims++;
			KUNIT_EXPECT_EQ(test, d->unit == NXQ_UNIT_NUMBER ||
					d->unit == NXQ_UNIT_MS, true);
			KUNIT_EXPECT_LT(test, d->hi, (u64)NXQ_LIMIT_UNSET);
		}
		/* the default is a value the field could be set to */
		if (d->unit != NXQ_UNIT_BYTES) {
			KUNIT_EXPECT_TRUE(test, nxq_abi_field_valid(f, d->dflt));
			KUNIT_EXPECT_TRUE(test, nxq_abi_field_valid(f, d->hi));
			KUNIT_EXPECT_FALSE(test, nxq_abi_field_valid(f, d->hi + 1));
		}
		/* its word, with its largest value, into a request and back */
		want = d->unit == NXQ_UNIT_BYTES ? (d->hi == NXQ_UNLIMITED ?
		       NXQ_UNLIMITED : 3ULL << 30) : d->hi;
		nxq_abi_test_text(d, want, w, sizeof(w));
		memset(&r, 0, sizeof(r));
		KUNIT_EXPECT_EQ_MSG(test, nxq_abi_budget_word(w, &r), 0, "%s", w);
		KUNIT_EXPECT_TRUE_MSG(test, nxq_abi_req_get(&r, f, &v), "%s", w);
		KUNIT_EXPECT_EQ_MSG(test, v, want, "%s", w);
		for (n = 0; n < NXQ_NR_BUDGET_FIELDS; n++)
			if (n != f)
				KUNIT_EXPECT_FALSE(test, nxq_abi_req_get(&r, n, &v));
		KUNIT_EXPECT_EQ_MSG(test, nxq_abi_budget_word(w, &r), -EINVAL,
				    "twice: %s", w);
		if (d->parse == NXQ_PARSE_FLAG) {
			snprintf(w, sizeof(w), "%s=1", d->name);
			KUNIT_EXPECT_EQ(test, nxq_abi_budget_word(w, &r), -EINVAL);
			continue;
		}
		/* above its bound, not a number, no value: refused */
		memset(&r, 0, sizeof(r));
		if (d->unit != NXQ_UNIT_BYTES) {
			nxq_abi_test_text(d, d->hi + 1, w, sizeof(w));
			KUNIT_EXPECT_EQ_MSG(test, nxq_abi_budget_word(w, &r),
					    -EINVAL, "%s", w);
		}
		snprintf(w, sizeof(w), "%s=x", d->name);
		KUNIT_EXPECT_EQ(test, nxq_abi_budget_word(w, &r), -EINVAL);
		KUNIT_EXPECT_EQ(test, nxq_abi_budget_word(d->name, &r), -EINVAL);
		KUNIT_EXPECT_EQ(test, r.set_max || r.set_min || r.set_kill ||
				r.set_lim || r.overcommit, false);
	}
	KUNIT_EXPECT_EQ(test, lims, NXQ_NR_LIMITS);
	KUNIT_EXPECT_EQ(test, nxq_abi_field_find("nope", 4), -EINVAL);
	KUNIT_EXPECT_EQ(test, nxq_abi_field_find("max", 2), -EINVAL);
	/* a size's bound is the ledger's: 2^62 + 1 is read, then refused there */
	memset(&r, 0, sizeof(r));
	KUNIT_EXPECT_EQ(test, nxq_abi_budget_word("min=4611686018427387905",
						  &r), 0);
	KUNIT_EXPECT_EQ(test, nxq_abi_fields[NXQ_BF_MIN].hi, NXQ_BYTES_MAX);
}

#if IS_ENABLED(CONFIG_NET)
/*
 * The table against the netlink policy the spec renders: each field's
 * attribute is in budget-set's policy with the type its unit says, and
 * who may set it is who may send budget-set.
 */
static void nxq_abi_test_field_policy(struct kunit *test)
{
	const struct nxq_abi_nlop *op = nxq_abi_nlop(NXQUOTA_CMD_BUDGET_SET);
	static const u8 type[] = {
		[NXQ_UNIT_BYTES] = NLA_U64, [NXQ_UNIT_MS] = NLA_U32,
		[NXQ_UNIT_NUMBER] = NLA_U32, [NXQ_UNIT_BOOL] = NLA_U8,
		[NXQ_UNIT_FLAG] = NLA_FLAG,
	};
	int f;

	KUNIT_ASSERT_NOT_NULL(test, op);
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		const struct nxq_abi_field *d = &nxq_abi_fields[f];

		KUNIT_ASSERT_LE(test, d->attr, op->maxattr);
		KUNIT_EXPECT_EQ_MSG(test, op->policy[d->attr].type,
				    type[d->unit], "%s", d->name);
		KUNIT_EXPECT_EQ(test, d->who == NXQ_WHO_ADMIN,
				!!(op->flags & GENL_ADMIN_PERM));
	}
}

/*
 * The device table against the policies: each field's attribute is in
 * device-set's policy (and device-add's, where the table says it adds)
 * with the type its unit says and the table's bounds, and who may set it
 * is who may send them.
 */
static void nxq_abi_test_dfield_policy(struct kunit *test)
{
	const struct nxq_abi_nlop *set = nxq_abi_nlop(NXQUOTA_CMD_DEVICE_SET);
	const struct nxq_abi_nlop *add = nxq_abi_nlop(NXQUOTA_CMD_DEVICE_ADD);
	const struct nla_policy *p;
	int f;

	KUNIT_ASSERT_NOT_NULL(test, set);
	KUNIT_ASSERT_NOT_NULL(test, add);
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++) {
		const struct nxq_abi_dfield *d = &nxq_abi_dfields[f];

		KUNIT_ASSERT_LE(test, d->attr, set->maxattr);
		p = &set->policy[d->attr];
		KUNIT_EXPECT_EQ_MSG(test, p->type, d->unit == NXQ_UNIT_BYTES ?
				    NLA_U64 : NLA_U32, "%s", d->name);
		if (p->validation_type == NLA_VALIDATE_RANGE_PTR) {
			KUNIT_EXPECT_EQ(test, p->range->min, d->lo);
			KUNIT_EXPECT_EQ(test, p->range->max, d->hi);
		} else {
			KUNIT_EXPECT_EQ_MSG(test, d->unit, NXQ_UNIT_BYTES,
					    "%s has no range", d->name);
		}
		KUNIT_EXPECT_EQ(test, d->add, d->attr <= add->maxattr &&
				add->policy[d->attr].type != NLA_UNSPEC);
		KUNIT_EXPECT_EQ(test, d->who == NXQ_WHO_ADMIN,
				!!(set->flags & GENL_ADMIN_PERM));
	}
}

/*
 * The operations: one per request command of the header, each a do or a
 * dump, the administration's among the do's, each policy as long as its
 * highest attribute and its strings as long as the header's limits.
 */
static void nxq_abi_test_nlops(struct kunit *test)
{
	unsigned int i, a, last, seen = 0;

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
	/*
	 * up to the last settable one, the budget table's last attribute
	 * (measured, escaped: nxquotad's dump only)
	 */
	for (i = 0, last = NXQUOTA_A_BUDGET_CGROUP_PATH;
	     i < NXQ_NR_BUDGET_FIELDS; i++)
		last = max_t(unsigned int, last, nxq_abi_fields[i].attr);
	KUNIT_EXPECT_EQ(test, nxq_abi_nlop(NXQUOTA_CMD_BUDGET_SET)->maxattr,
			last);
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
	KUNIT_CASE(nxq_abi_test_sizes),
	KUNIT_CASE(nxq_abi_test_fields),
	KUNIT_CASE(nxq_abi_test_dfields),
#if IS_ENABLED(CONFIG_NET)
	KUNIT_CASE(nxq_abi_test_field_policy),
	KUNIT_CASE(nxq_abi_test_dfield_policy),
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
