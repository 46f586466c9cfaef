// SPDX-License-Identifier: GPL-2.0
/*
 * limits_table: every per-cgroup limit the spec names (NXQ_LIMITS, made
 * from Documentation/netlink/specs/nxquota.yaml by daemon/ynl-gen.sh;
 * issue 30 item 1) goes through every front door, with the spec's bound,
 * and reads back the same everywhere.  The limits are not listed here:
 * a limit added to the spec is walked too.
 *
 * Device of 1G, /lt-a.  For each limit:
 *  1. set_budget's words (the module: sysfs; nxquotad: its control
 *     socket): the spec's max is taken, one above it is refused
 *     (EINVAL from sysfs, ERANGE from the netlink policy) and changes
 *     nothing; the node reads it back (the node's file; the dump);
 *  2. budget-set over generic netlink (the module's family; nxquotad's
 *     control socket) with the attribute the spec gives: taken; above
 *     the max: ERANGE, nothing changed;
 *  3. nxquotactl set with the word the spec's name gives ("holders-max"):
 *     taken, and in `nxquotactl --json status` under the spec's name;
 *     above the max: exit 2 (its EX_USAGE), nothing sent.
 */
#include "scen.h"

#define KEY	"t-lt"
#define CG	"/lt-a"

struct lt_limit {
	const char *name;
	int attr;
	uint32_t max;
};

#define LT_LIMIT(n, N, a, m)	{ #n, a, m },
static const struct lt_limit lt_limits[] = { NXQ_LIMITS(LT_LIMIT) };
#define LT_N	(sizeof(lt_limits) / sizeof(lt_limits[0]))

/* budget-set over netlink: one limit's attribute, as the spec names it. */
static int lt_nl_set(const struct lt_limit *l, uint32_t v)
{
	struct sc_nlreq m;

	sc_nl_init(&m, NXQUOTA_CMD_BUDGET_SET, 0);
	sc_nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
	sc_nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, CG);
	sc_nl_put_u32(&m, l->attr, v);
	return sc_nl_talk(&m, NULL, NULL);
}

/* The tool: /tools/nxquotactl in the VM, $NXQ_CTL beside nxquotad. */
static const char *lt_tool(void)
{
	const char *t = getenv("NXQ_CTL");

	return t && *t ? t : "/tools/nxquotactl";
}

static char lt_out[1 << 16];

/* Run the tool; its stdout and stderr into lt_out; its exit status. */
static int lt_run(const char *a1, const char *a2, const char *a3,
		  const char *a4, const char *a5)
{
	const char *argv[] = { lt_tool(), a1, a2, a3, a4, a5, NULL };
	size_t len = 0;
	int p[2];
	ssize_t r;
	pid_t pid;

	ASSERT_OK(pipe(p) ? -errno : 0);
	pid = th_fork();
	if (pid == 0) {
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[0]);
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	close(p[1]);
	while ((r = read(p[0], lt_out + len, sizeof(lt_out) - 1 - len)) > 0)
		len += r;
	lt_out[len] = 0;
	close(p[0]);
	return th_wait(pid);
}

FIXTURE(lt) {
	uint64_t id;
};

FIXTURE_VARIANT(lt) {};

FIXTURE_VARIANT_ADD(lt, module) {};

FIXTURE_VARIANT_ADD(lt, daemon) {};

FIXTURE_SETUP(lt)
{
	ASSERT_OK(sc_dev_register(KEY, "1G"));
	ASSERT_OK(sc_cg_create(CG));
	ASSERT_OK(sc_set_budget(KEY, CG " max=1G"));
	self->id = CG_ID(CG);
}

FIXTURE_TEARDOWN(lt)
{
	ASSERT_OK(sc_dev_unregister(KEY));
	ASSERT_OK(sc_cg_remove(CG));
}

TEST_F(lt, words_and_netlink)
{
	char w[128];
	size_t i;

	ASSERT_EQ(LT_N, (size_t)NXQ_NR_LIMITS);
	for (i = 0; i < LT_N; i++) {
		const struct lt_limit *l = &lt_limits[i];

		/* 1. the words */
		snprintf(w, sizeof(w), CG " %s=%u", l->name, l->max);
		ASSERT_OK(sc_set_budget(KEY, w));
		ASSERT_EQ(NODE_U64(KEY, self->id, l->name), l->max);
		snprintf(w, sizeof(w), CG " %s=%llu", l->name,
			 (unsigned long long)l->max + 1);
		ASSERT_ERR2(sc_set_budget(KEY, w), EINVAL, ERANGE);
		ASSERT_EQ(NODE_U64(KEY, self->id, l->name), l->max);

		/* 2. netlink, the spec's attribute */
		ASSERT_OK(lt_nl_set(l, l->max / 2));
		ASSERT_EQ(NODE_U64(KEY, self->id, l->name), l->max / 2);
		ASSERT_ERR(lt_nl_set(l, l->max + 1), ERANGE);
		ASSERT_EQ(NODE_U64(KEY, self->id, l->name), l->max / 2);
	}
}

TEST_F(lt, nxquotactl)
{
	char word[96], key[96];
	size_t i, k;

	if (access(lt_tool(), X_OK))
		SKIP("no %s (make -C tools; NXQ_CTL names it beside nxquotad)",
		     lt_tool());
	for (i = 0; i < LT_N; i++) {
		const struct lt_limit *l = &lt_limits[i];
		uint32_t v = l->max / 3;

		/* the tool's word: the spec's name, '-' for '_' */
		snprintf(word, sizeof(word), "%s=%u", l->name, v);
		for (k = 0; word[k] != '='; k++)
			if (word[k] == '_')
				word[k] = '-';
		if (lt_run("set", CG, KEY, word, NULL))
			FAIL("nxquotactl set %s %s %s: %s", CG, KEY, word,
			     lt_out);
		ASSERT_EQ(NODE_U64(KEY, self->id, l->name), v);
		ASSERT_EQ(lt_run("--json", "status", KEY, NULL, NULL), 0);
		snprintf(key, sizeof(key), "\"%s\":%u", l->name, v);
		if (!strstr(lt_out, key))
			FAIL("nxquotactl --json status has no %s: %.300s", key,
			     lt_out);
		snprintf(word + (strchr(word, '=') - word) + 1,
			 sizeof(word) - (strchr(word, '=') - word) - 1, "%llu",
			 (unsigned long long)l->max + 1);
		ASSERT_EQ(lt_run("set", CG, KEY, word, NULL), 2);	/* EX_USAGE */
		ASSERT_EQ(NODE_U64(KEY, self->id, l->name), v);
	}
}

TEST_HARNESS_MAIN
