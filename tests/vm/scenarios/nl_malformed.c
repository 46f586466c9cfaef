// SPDX-License-Identifier: GPL-2.0
/*
 * nl_malformed: malformed nxquota netlink requests, sent as root, each get
 * a clean error -- missing, oversized, unterminated, mistyped, unknown and
 * truncated attributes, bad values, unknown commands, a non-zero reserved
 * header field -- and change nothing; the module keeps working after
 * them (the harness fails the run on any kernel splat).
 */
#include "scen.h"
#include "nl_genl.h"

#define KEY	"t-nlm"
#define CG	"/nlm"

static int nfail;

#define EXPECT(what, call, e1, e2) do {					\
	int _r = (call);						\
	if (_r != -(e1) && _r != -(e2)) {				\
		sc_log("%s: expected %s, got %s", what, sc_errname(e1),	\
		       sc_rcname(_r));					\
		nfail++;						\
	} else {							\
		sc_log("%-40s %s%s%s", what, sc_errname(-_r),		\
		       nl_errmsg[0] ? ": " : "", nl_errmsg);		\
	}								\
} while (0)

static struct nl_msg m;

static void dev_msg(uint8_t cmd)
{
	nl_init(&m, nl_family_id, 0, cmd);
}

static void budget_msg(const char *path)
{
	nl_init(&m, nl_family_id, 0, NXQUOTA_CMD_BUDGET_SET);
	nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
	if (path)
		nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, path);
}

static int talk(int fd)
{
	return nl_talk(fd, &m, NULL, NULL, NULL);
}

/* Malformed requests to the kernel's generic netlink socket: the module only (sc_module_only[]). */
FIXTURE(malformed) {};

FIXTURE_VARIANT(malformed) {};

FIXTURE_VARIANT_ADD(malformed, module) {};

FIXTURE_SETUP(malformed)
{
	CHECK_OK(sc_dev_register_open(KEY, "1M"));
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_set_budget(KEY, CG " max=512K"));
}

FIXTURE_TEARDOWN(malformed)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG));
}

TEST_F(malformed, each_refused_nothing_changed)
{
	static char big[5000];
	uint32_t u32 = 1;
	uint8_t u8 = 2;
	int fd;

	fd = NL_OPEN();

	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, SC_MIB);
	EXPECT("device-add without key", talk(fd), EINVAL, EINVAL);

	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, "t-nlm2");
	EXPECT("device-add without capacity", talk(fd), EINVAL, EINVAL);

	memset(big, 'k', 64);
	big[64] = 0;
	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, big);
	nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, SC_MIB);
	EXPECT("device-add, 64-character key", talk(fd), EINVAL, ERANGE);

	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	nl_put(&m, NXQUOTA_A_DEVICE_KEY, "t-nlm2", 6);	/* no NUL */
	nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, SC_MIB);
	EXPECT("device-add, unterminated key", talk(fd), EINVAL, EINVAL);

	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, "bad key");
	nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, SC_MIB);
	EXPECT("device-add, key with a space", talk(fd), EINVAL, EINVAL);
	CHECK(strstr(nl_errmsg, "characters") != NULL);

	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, "t-nlm2");
	nl_put(&m, NXQUOTA_A_DEVICE_CAPACITY, &u32, sizeof(u32));
	EXPECT("device-add, u32 capacity", talk(fd), EINVAL, ERANGE);

	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, "t-nlm2");
	nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, SC_MIB);
	nl_put_u64(&m, 30, 1);
	EXPECT("device-add, unknown attribute", talk(fd), EINVAL, EINVAL);

	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, "t-nlm2");
	nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY | NLA_F_NESTED, SC_MIB);
	EXPECT("device-add, nested flag on a u64", talk(fd), EINVAL, EINVAL);

	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, "t-nlm2");
	nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, SC_MIB);
	m.nlh.nlmsg_len -= 4;	/* the last attribute is cut short */
	EXPECT("device-add, truncated attribute", talk(fd), EINVAL, ERANGE);

	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, "t-nlm2");
	nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, SC_MIB);
	((struct genlmsghdr *)NLMSG_DATA(&m.nlh))->reserved = 1;
	EXPECT("device-add, reserved header field", talk(fd), EINVAL, EINVAL);

	dev_msg(NXQUOTA_CMD_DEVICE_ADD);
	m.nlh.nlmsg_len = NLMSG_HDRLEN;	/* no genl header at all */
	EXPECT("message without a genl header", talk(fd), EINVAL, EINVAL);

	dev_msg(99);
	EXPECT("unknown command", talk(fd), EOPNOTSUPP, EOPNOTSUPP);

	dev_msg(NXQUOTA_CMD_EVENT);
	EXPECT("the event command sent to the kernel", talk(fd),
	       EOPNOTSUPP, EOPNOTSUPP);

	dev_msg(NXQUOTA_CMD_DEVICE_DEL);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, KEY);
	nl_put_u64(&m, NXQUOTA_A_DEVICE_CAPACITY, SC_MIB);
	EXPECT("device-del with a capacity", talk(fd), EINVAL, EINVAL);

	budget_msg(NULL);
	nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, SC_MIB);
	EXPECT("budget-set without path", talk(fd), EINVAL, EINVAL);

	budget_msg(CG);
	EXPECT("budget-set with nothing to set", talk(fd), EINVAL, EINVAL);

	budget_msg("nlm");
	nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, SC_MIB);
	EXPECT("budget-set, relative path", talk(fd), EINVAL, EINVAL);

	budget_msg("/nlm-none");
	nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, SC_MIB);
	EXPECT("budget-set, no such cgroup", talk(fd), ENOENT, ENOENT);

	budget_msg("/nlm/cgroup.procs");
	nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, SC_MIB);
	EXPECT("budget-set, path of a file", talk(fd), ENOTDIR, ENOENT);

	memset(big, 'p', sizeof(big) - 1);
	big[0] = '/';
	big[sizeof(big) - 1] = 0;
	budget_msg(big);
	nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, SC_MIB);
	EXPECT("budget-set, 4999-byte path", talk(fd), EINVAL, ERANGE);

	budget_msg(CG);
	nl_put(&m, NXQUOTA_A_BUDGET_KILL_ON_IGNORE, &u8, sizeof(u8));
	EXPECT("budget-set, kill-on-ignore 2", talk(fd), ERANGE, EINVAL);

	budget_msg(CG);
	nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, SC_MIB);
	nl_put_u64(&m, NXQUOTA_A_BUDGET_EFFECTIVE_MIN, 1); /* read-only */
	EXPECT("budget-set, effective-min", talk(fd), EINVAL, EINVAL);

	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_DEVICE_GET);
	nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, KEY);
	EXPECT("device dump with an attribute", talk(fd), EINVAL, EINVAL);

	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_HOLDER_GET);
	nl_put_u64(&m, NXQUOTA_A_HOLDER_CHARGE, 1);
	EXPECT("holder dump, unknown filter", talk(fd), EINVAL, EINVAL);

	nl_init(&m, nl_family_id, NLM_F_DUMP, NXQUOTA_CMD_BUDGET_GET);
	nl_put(&m, NXQUOTA_A_BUDGET_DEVICE, KEY, strlen(KEY)); /* no NUL */
	EXPECT("budget dump, unterminated filter", talk(fd), EINVAL, EINVAL);

	nl_init(&m, nl_family_id, 0, NXQUOTA_CMD_BUDGET_GET);
	EXPECT("budget-get without NLM_F_DUMP", talk(fd), EOPNOTSUPP,
	       EOPNOTSUPP);

	if (nfail)
		FAIL("%d malformed request(s) got the wrong answer", nfail);

	/* Nothing changed, and the family still works. */
	CHECK(!sc_dev_exists("t-nlm2"));
	CHECK_EQ(NODE_U64(KEY, CG_ID(CG), "max"), 512 * SC_KIB);
	CHECK_EQ(NODE_U64(KEY, CG_ID(CG), "kill_on_ignore"), 0);
	budget_msg(CG);
	nl_put_u64(&m, NXQUOTA_A_BUDGET_MAX, SC_MIB);
	CHECK_OK(talk(fd));
	CHECK_EQ(NODE_U64(KEY, CG_ID(CG), "max"), SC_MIB);

	close(fd);
}

TEST_HARNESS_MAIN
