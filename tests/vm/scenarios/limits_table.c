// SPDX-License-Identifier: GPL-2.0
/*
 * limits_table: every field of the budget table the spec makes
 * (NXQ_BUDGET_FIELDS: max, min, kill_on_ignore, the per-cgroup limits,
 * overcommit; from Documentation/netlink/specs/nxquota.yaml by
 * daemon/ynl-gen.sh; issue 30 item 1) goes through every front door with
 * its parse rule, its bounds and its default, and reads back the same
 * everywhere.  No field is named here: one added to the spec is walked
 * too.  (nxquotad's state file is the last door: the daemon's suite,
 * daemon/tests/ctl_test.c, walks the table through a restart.)
 *
 * Device of 1G, /lt-a, its node made with the first field the node keeps
 * at its default.  For each field a node keeps:
 *  1. set_budget's words (the module: sysfs; nxquotad: its control
 *     socket), NAME=VALUE as the field's parse column reads it: taken, and
 *     the node's file reads it back (the module's file; the dump);
 *  2. the node's own file, written with the next value (a limit's is
 *     read-only: EACCES);
 *  3. budget-set over generic netlink (the module's family; nxquotad's
 *     control socket) with the attribute the spec gives, of the type its
 *     unit says: taken;
 *  4. nxquotactl set with the word the spec's name gives ("holders-max"):
 *     taken, and in `nxquotactl --json status` under the spec's name
 *     (without the tool, the other doors are walked and the test says
 *     skipped, and why).
 * The values grow from door to door (a min never passes the max set
 * before it).  A modifier of the request (a flag) is taken with a field
 * at each door, alone only as the flag's bare name; never as NAME=1.
 *
 * The bounds (a fresh node): one above each field's largest value is
 * refused at every door and changes nothing -- set_budget's words (EINVAL
 * from sysfs, ERANGE from the netlink policy), netlink (ERANGE),
 * nxquotactl before sending (exit 2) -- save a size's, which the ledger
 * checks itself (a min past NXQ_BYTES_MAX: EOVERFLOW at every door,
 * nxquotactl's exit 1 with the authority's reason).  Before anything is
 * set, each field reads its default from the node's file and from
 * nxquotactl's JSON.
 *
 * The device table likewise (device_every_door, below).
 */
#include "scen.h"

#define KEY	"t-lt"
#define CG	"/lt-a"

struct lt_field {
	const char *name;
	int attr, unit, parse, lim, kept;
	uint64_t hi, dflt;
};

#define LT_FIELD(n, N, a, u, p, lo, hi, d, w, lim, kept)		\
	{ #n, a, u, p, lim, kept, hi, d },
static const struct lt_field lt_fields[] = { NXQ_BUDGET_FIELDS(LT_FIELD) };
#undef LT_FIELD
#define LT_N	(sizeof(lt_fields) / sizeof(lt_fields[0]))

/* The field a node is made with: the first it keeps, at its default. */
static size_t lt_first(void)
{
	size_t i;

	for (i = 0; !lt_fields[i].kept; i++)
		;
	return i;
}

/* A flag's companion at each door: the first field a node keeps. */
#define LT_FLAG_WITH	lt_first()

/* "NAME=VALUE" of a field (the bare name of a flag), '-' for '_' if tool. */
static const char *lt_word(const struct lt_field *l, uint64_t v, int tool,
			   char *buf, size_t n)
{
	size_t k;

	if (l->parse == NXQ_PARSE_FLAG)
		snprintf(buf, n, "%s", l->name);
	else if (l->parse == NXQ_PARSE_SIZE_MAX && v == NXQ_UNLIMITED)
		snprintf(buf, n, "%s=max", l->name);
	else
		snprintf(buf, n, "%s=%llu", l->name, (unsigned long long)v);
	for (k = 0; tool && buf[k] && buf[k] != '='; k++)
		if (buf[k] == '_')
			buf[k] = '-';
	return buf;
}

/* What the node's file of a field reads for v. */
static const char *lt_text(const struct lt_field *l, uint64_t v, char *buf,
			   size_t n)
{
	if ((l->parse == NXQ_PARSE_SIZE_MAX && v == NXQ_UNLIMITED) ||
	    (l->lim >= 0 && v == UINT32_MAX))
		snprintf(buf, n, "max");
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
	return buf;
}

/* The value of a field at door d (0..2): growing, within any bound. */
static uint64_t lt_value(const struct lt_field *l, int d)
{
	if (l->unit == NXQ_UNIT_BYTES)
		return (uint64_t)(d + 1) * 32 * SC_MIB;
	if (l->unit == NXQ_UNIT_BOOL || l->unit == NXQ_UNIT_FLAG)
		return (uint64_t)((d + 1) & 1);
	return l->hi - 2 + (uint64_t)d;
}

/* budget-set over netlink: a field's attribute; a flag with its companion. */
static int lt_nl_set(size_t f, uint64_t v)
{
	struct sc_nlreq m;

	sc_nl_init(&m, NXQUOTA_CMD_BUDGET_SET, 0);
	sc_nl_put_str(&m, NXQUOTA_A_BUDGET_DEVICE, KEY);
	sc_nl_put_str(&m, NXQUOTA_A_BUDGET_CGROUP_PATH, CG);
	sc_field_put(&m, (int)f, v);
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

/* Whether CG's budget in lt_out (JSON) has the member k, whole. */
static int lt_json_has(const char *k)
{
	const char *b = strstr(lt_out, "\"path\":\"" CG "\""), *e, *p;
	size_t n = strlen(k);

	e = b ? strchr(b, '}') : NULL;	/* a budget's object is flat */
	for (p = b; p && (p = strstr(p, k)) && p < e; p += n)
		if (p[n] == ',' || p[n] == '}')
			return 1;
	return 0;
}

/* The field reads v in its node file, and in nxquotactl's JSON if tool. */
#define LT_READS(id, l, v, tool) do {					\
	char t_[32], k_[96], r_[64];					\
	int n_ = sc_read(sc_node_path(KEY, (id), (l)->name), r_, sizeof(r_)); \
									\
	ASSERT_OK(n_ < 0 ? n_ : 0);					\
	lt_text((l), (v), t_, sizeof(t_));				\
	if (strcmp(r_, t_))						\
		FAIL("%s reads %s, not %s", (l)->name, r_, t_);		\
	if (tool) {							\
		ASSERT_EQ(lt_run("--json", "status", KEY, NULL, NULL), 0); \
		if ((l)->unit == NXQ_UNIT_BOOL)				\
			snprintf(k_, sizeof(k_), "\"%s\":%s", (l)->name, \
				 (v) ? "true" : "false");		\
		else if ((l)->parse == NXQ_PARSE_SIZE_MAX &&		\
			 (v) == NXQ_UNLIMITED)				\
			snprintf(k_, sizeof(k_), "\"%s\":null", (l)->name); \
		else							\
			snprintf(k_, sizeof(k_), "\"%s\":%llu", (l)->name, \
				 (unsigned long long)(v));		\
		if (!lt_json_has(k_))					\
			FAIL("nxquotactl --json status has no %s in " CG \
			     "'s budget: %.300s", k_, lt_out);		\
	}								\
} while (0)

FIXTURE(lt) {
	uint64_t id;
	int tool;
};

FIXTURE_VARIANT(lt) {};

FIXTURE_VARIANT_ADD(lt, module) {};

FIXTURE_VARIANT_ADD(lt, daemon) {};

FIXTURE_SETUP(lt)
{
	const struct lt_field *l = &lt_fields[lt_first()];
	char w[96];

	ASSERT_OK(sc_dev_register(KEY, "1G"));
	ASSERT_OK(sc_cg_create(CG));
	ASSERT_OK(sc_set_budget(KEY, CG " %s", lt_word(l, l->dflt, 0, w,
							 sizeof(w))));
	self->id = CG_ID(CG);
	self->tool = !access(lt_tool(), X_OK);
}

/* The other doors were walked; without the tool, say so, not "pass". */
#define LT_TOOL_OR_SKIP()						\
	do {								\
		if (!self->tool)					\
			SKIP("no %s (make -C tools static; NXQ_CTL names " \
			     "it beside nxquotad): every door walked but "	\
			     "nxquotactl's", lt_tool());		\
	} while (0)

FIXTURE_TEARDOWN(lt)
{
	ASSERT_OK(sc_dev_unregister(KEY));
	ASSERT_OK(sc_cg_remove(CG));
}

TEST_F(lt, every_door)
{
	char w[96], with[96], line[256];
	size_t i;

	ASSERT_EQ(LT_N, (size_t)NXQ_NR_BUDGET_FIELDS);
	for (i = 0; i < LT_N; i++) {
		const struct lt_field *l = &lt_fields[i];
		const struct lt_field *c = &lt_fields[LT_FLAG_WITH];
		/* the companion at the value its walk left (no change) */
		uint64_t cv = lt_value(c, self->tool ? 2 : 1);

		if (!l->kept) {
			/* a flag rides with a field, as its bare name only */
			lt_word(c, cv, 0, with, sizeof(with));
			snprintf(line, sizeof(line), CG " %s %s", with, l->name);
			ASSERT_OK(sc_set_budget(KEY, "%s", line));
			snprintf(line, sizeof(line), CG " %s %s=1", with, l->name);
			ASSERT_ERR(sc_set_budget(KEY, "%s", line), EINVAL);
			snprintf(line, sizeof(line), CG " %s %s %s", with,
				 l->name, l->name);
			ASSERT_ERR(sc_set_budget(KEY, "%s", line), EINVAL);
			/* netlink: alone it sets nothing */
			ASSERT_ERR(lt_nl_set(i, 1), EINVAL);
			if (self->tool) {
				lt_word(c, cv, 1, with, sizeof(with));
				lt_word(l, 1, 1, w, sizeof(w));
				if (lt_run("set", CG, KEY, with, w))
					FAIL("nxquotactl set %s %s %s %s: %s", CG,
					     KEY, with, w, lt_out);
				snprintf(line, sizeof(line), "%s=1", w);
				ASSERT_EQ(lt_run("set", CG, KEY, with, line), 2);
			}
			continue;
		}

		/* 1. set_budget's words */
		lt_word(l, lt_value(l, 0), 0, w, sizeof(w));
		ASSERT_OK(sc_set_budget(KEY, CG " %s", w));
		LT_READS(self->id, l, lt_value(l, 0), 0);
		snprintf(line, sizeof(line), CG " %s=x", l->name);
		ASSERT_ERR(sc_set_budget(KEY, "%s", line), EINVAL);
		snprintf(line, sizeof(line), CG " %s %s", w, w);
		ASSERT_ERR(sc_set_budget(KEY, "%s", line), EINVAL);
		LT_READS(self->id, l, lt_value(l, 0), 0);

		/* 2. its own file: written as the word's value, or read-only */
		lt_text(l, lt_value(l, 1), w, sizeof(w));
		if (l->lim >= 0) {
			ASSERT_ERR(sc_write(sc_node_path(KEY, self->id, l->name),
					    w), EACCES);
		} else {
			ASSERT_OK(sc_write(sc_node_path(KEY, self->id, l->name),
					   w));
			LT_READS(self->id, l, lt_value(l, 1), 0);
		}

		/* 3. netlink, the spec's attribute */
		ASSERT_OK(lt_nl_set(i, lt_value(l, 1)));
		LT_READS(self->id, l, lt_value(l, 1), 0);

		/* 4. nxquotactl, the spec's name with '-' */
		if (!self->tool)
			continue;
		lt_word(l, lt_value(l, 2), 1, w, sizeof(w));
		if (lt_run("set", CG, KEY, w, NULL))
			FAIL("nxquotactl set %s %s %s: %s", CG, KEY, w, lt_out);
		LT_READS(self->id, l, lt_value(l, 2), 1);
	}
	LT_TOOL_OR_SKIP();
}

TEST_F(lt, bounds_and_defaults)
{
	char w[96], tw[96];
	size_t i;

	for (i = 0; i < LT_N; i++) {
		const struct lt_field *l = &lt_fields[i];
		uint64_t top = l->unit == NXQ_UNIT_BYTES ? UINT64_MAX :
			       l->unit == NXQ_UNIT_BOOL ? 255 : UINT32_MAX;

		if (!l->kept)
			continue;
		/* nothing set: the default, at the node's file and the tool */
		LT_READS(self->id, l, l->dflt, self->tool);
		if (l->hi >= top)
			continue;	/* all it can hold: no bound to pass */
		lt_word(l, l->hi + 1, 0, w, sizeof(w));
		lt_word(l, l->hi + 1, 1, tw, sizeof(tw));
		if (l->unit == NXQ_UNIT_BYTES) {
			/* the ledger's bound, its errno at every door */
			ASSERT_ERR(sc_set_budget(KEY, CG " %s", w), EOVERFLOW);
			ASSERT_ERR(lt_nl_set(i, l->hi + 1), EOVERFLOW);
			if (self->tool) {
				ASSERT_EQ(lt_run("set", CG, KEY, tw, NULL), 1);
				if (!strstr(lt_out, "EOVERFLOW"))
					FAIL("nxquotactl set %s: %.300s", tw,
					     lt_out);
			}
		} else {
			ASSERT_ERR2(sc_set_budget(KEY, CG " %s", w), EINVAL,
				    ERANGE);
			ASSERT_ERR(lt_nl_set(i, l->hi + 1), ERANGE);
			if (self->tool)	/* refused before anything is sent */
				ASSERT_EQ(lt_run("set", CG, KEY, tw, NULL), 2);
		}
		LT_READS(self->id, l, l->dflt, 0);
		/* its largest value is taken (a size's only where all fits) */
		if (l->unit != NXQ_UNIT_BYTES) {
			lt_word(l, l->hi, 0, w, sizeof(w));
			ASSERT_OK(sc_set_budget(KEY, CG " %s", w));
			LT_READS(self->id, l, l->hi, 0);
		}
	}
	LT_TOOL_OR_SKIP();
}

/*
 * The device table (NXQ_DEVICE_FIELDS: every setting of device-add and
 * device-set) through every door, none named here: the device's file
 * (the module's sysfs; nxquotad: its control socket), device-set over
 * netlink with the attribute the spec gives, nxquotactl devices FIELD KEY
 * VALUE (read back from its JSON too), and register for a field
 * device-add takes; one past either bound refused at each (EINVAL from
 * sysfs, ERANGE from the policy, exit 2 from the tool) and changing
 * nothing; a device just registered reads each default.
 */
#define KEY2	"t-lt2"

struct lt_dfield {
	const char *name;
	int attr, unit, parse, add;
	uint64_t lo, hi, dflt;
};

#define LT_DFIELD(n, N, a, u, p, lo, hi, d, w, add, set)	\
	{ #n, a, u, p, add, lo, hi, d },
static const struct lt_dfield lt_dfields[] = {
	NXQ_DEVICE_FIELDS(LT_DFIELD)
};
#undef LT_DFIELD
#define LT_DN	(sizeof(lt_dfields) / sizeof(lt_dfields[0]))

/* What a device field's file (and the tool's word) says for v. */
static const char *lt_dtext(const struct lt_dfield *l, uint64_t v, char *buf,
			    size_t n)
{
	if (l->parse == NXQ_PARSE_SIZE_MAX && v == NXQ_UNLIMITED)
		snprintf(buf, n, "max");
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
	return buf;
}

/* The value of a device field at door d (0..3): each a change. */
static uint64_t lt_dvalue(const struct lt_dfield *l, int d)
{
	if (l->unit == NXQ_UNIT_BYTES)
		return (uint64_t)(d + 2) * 64 * SC_MIB;
	return l->hi - 3 + (uint64_t)d;
}

/* device-set over netlink: one field's attribute, of its unit's type. */
static int lt_dnl_set(const struct lt_dfield *l, uint64_t v)
{
	struct sc_nlreq m;

	sc_nl_init(&m, NXQUOTA_CMD_DEVICE_SET, 0);
	sc_nl_put_str(&m, NXQUOTA_A_DEVICE_KEY, KEY);
	if (l->unit == NXQ_UNIT_BYTES)
		sc_nl_put_u64(&m, l->attr, v);
	else
		sc_nl_put_u32(&m, l->attr, (uint32_t)v);
	return sc_nl_talk(&m, NULL, NULL);
}

/* The tool's word of a device field: its name with '-'. */
static const char *lt_dword(const struct lt_dfield *l, char *buf, size_t n)
{
	size_t k;

	snprintf(buf, n, "%s", l->name);
	for (k = 0; buf[k]; k++)
		if (buf[k] == '_')
			buf[k] = '-';
	return buf;
}

/* Device key's field reads v in its file, and in the tool's JSON if tool. */
#define LT_DREADS(key, l, v, tool) do {					\
	char t_[32], k_[96], r_[64], *p_;				\
	int n_ = sc_read(sc_dev_path((key), (l)->name), r_, sizeof(r_)); \
									\
	ASSERT_OK(n_ < 0 ? n_ : 0);					\
	lt_dtext((l), (v), t_, sizeof(t_));				\
	if (strcmp(r_, t_))						\
		FAIL("%s/%s reads %s, not %s", (key), (l)->name, r_, t_); \
	if (tool) {							\
		ASSERT_EQ(lt_run("--json", "status", (key), NULL, NULL), 0); \
		if ((l)->parse == NXQ_PARSE_SIZE_MAX && (v) == NXQ_UNLIMITED) \
			snprintf(k_, sizeof(k_), "\"%s\":null", (l)->name); \
		else							\
			snprintf(k_, sizeof(k_), "\"%s\":%llu", (l)->name, \
				 (unsigned long long)(v));		\
		p_ = strstr(lt_out, k_);				\
		if (!p_ || (p_[strlen(k_)] != ',' && p_[strlen(k_)] != '}')) \
			FAIL("nxquotactl --json status %s has no %s: %.300s", \
			     (key), k_, lt_out);			\
	}								\
} while (0)

TEST_F(lt, device_every_door)
{
	char w[64], t[32], word[64];
	size_t i;

	ASSERT_EQ(LT_DN, (size_t)NXQ_NR_DEVICE_FIELDS);
	/* a device just registered: each default (what register sets aside) */
	ASSERT_OK(sc_dev_register(KEY2, "1G"));
	for (i = 0; i < LT_DN; i++)
		if (!lt_dfields[i].add)
			LT_DREADS(KEY2, &lt_dfields[i], lt_dfields[i].dflt,
				  self->tool);
	ASSERT_OK(sc_dev_unregister(KEY2));

	for (i = 0; i < LT_DN; i++) {
		const struct lt_dfield *l = &lt_dfields[i];
		uint64_t now;

		/* 1. the device's file */
		lt_dtext(l, lt_dvalue(l, 0), t, sizeof(t));
		ASSERT_OK(sc_write(sc_dev_path(KEY, l->name), t));
		LT_DREADS(KEY, l, lt_dvalue(l, 0), 0);
		ASSERT_ERR(sc_write(sc_dev_path(KEY, l->name), "x"), EINVAL);
		ASSERT_ERR(sc_write(sc_dev_path(KEY, l->name), "1 2"), EINVAL);

		/* 2. device-set over netlink, the spec's attribute */
		ASSERT_OK(lt_dnl_set(l, lt_dvalue(l, 1)));
		LT_DREADS(KEY, l, lt_dvalue(l, 1), 0);
		now = lt_dvalue(l, 1);

		/* 3. nxquotactl devices FIELD KEY VALUE */
		if (self->tool) {
			lt_dtext(l, lt_dvalue(l, 2), t, sizeof(t));
			lt_dword(l, word, sizeof(word));
			if (lt_run("devices", word, KEY, t, NULL))
				FAIL("nxquotactl devices %s %s %s: %s", word,
				     KEY, t, lt_out);
			LT_DREADS(KEY, l, lt_dvalue(l, 2), 1);
			now = lt_dvalue(l, 2);
		}

		/* 4. register, for a field device-add takes */
		if (l->add) {
			lt_dtext(l, lt_dvalue(l, 3), t, sizeof(t));
			ASSERT_OK(sc_dev_register(KEY2, t));
			LT_DREADS(KEY2, l, lt_dvalue(l, 3), 0);
			ASSERT_OK(sc_dev_unregister(KEY2));
			ASSERT_ERR(sc_dev_register(KEY2, "x"), EINVAL);
		}

		/* the bounds: one past either, refused at each door */
		if (l->unit == NXQ_UNIT_BYTES)
			continue;	/* a size: none of its own */
		for (int b = 0; b < 2; b++) {
			uint64_t bad = b ? l->hi + 1 : l->lo - 1;

			if (!b && !l->lo)
				continue;
			lt_dtext(l, bad, t, sizeof(t));
			ASSERT_ERR(sc_write(sc_dev_path(KEY, l->name), t),
				   EINVAL);
			ASSERT_ERR(lt_dnl_set(l, bad), ERANGE);
			if (self->tool) {
				lt_dword(l, word, sizeof(word));
				snprintf(w, sizeof(w), "%s", t);
				ASSERT_EQ(lt_run("devices", word, KEY, w, NULL),
					  2);
			}
			LT_DREADS(KEY, l, now, 0);
		}
	}
	LT_TOOL_OR_SKIP();
}

TEST_HARNESS_MAIN
