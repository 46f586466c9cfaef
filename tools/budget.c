// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl set and clear: one cgroup's budget on one device, and the
 * line that says what changed.  Owns nothing past the call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/netlink.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "fmt.h"
#include "ledger.h"
#include "nxquotactl.h"
#include "size.h"

/* The budget node of @path on @device as a dump shows it, or NULL. */
static struct node *find_node(struct ctl *n, const char *device,
			      const char *path, struct vec *v)
{
	struct reply r = { .data = node_cb, .arg = v,
			   .maxattr = NXQUOTA_A_BUDGET_LAST };
	struct nl_msg *msg = ctl_new(n, NXQUOTA_CMD_BUDGET_GET, NLM_F_DUMP);
	struct node *nd;
	size_t i;

	/* Quiet: a missing device is the set's own error to report. */
	*v = (struct vec){ .size = sizeof(struct node) };
	nla_put_string(msg, NXQUOTA_A_BUDGET_DEVICE, device);
	if (ctl_request(n, msg, &r))
		return NULL;
	for (i = 0, nd = v->v; i < v->n; i++, nd++)
		if (!strcmp(nd->path, path))
			return nd;
	return NULL;
}

/*
 * A field of the budget table as set's line shows it, as status does: a
 * size "-" when none is the cgroup's own (no node, no max in the dump, a
 * min of 0), another field its value, or its default without a node.
 */
static const char *own(const struct node *nd, int f, char *buf)
{
	const struct field_def *d = &field_defs[f];

	if (d->unit == NXQ_UNIT_BYTES && (!nd || !nd->has_field[f] ||
	    (d->parse == NXQ_PARSE_SIZE && nd->field[f] == d->dflt)))
		return "-";
	return field_text(f, nd ? nd->field[f] : d->dflt, buf);
}

/*
 * What a set or clear changed, on stdout: each field of the budget table
 * before and after (the limits together, as status shows them), then
 * what binds the cgroup now.
 */
static void say_changed(const char *path, const char *device,
			const struct node *was, const struct node *now,
			bool lim_given)
{
	char a[NXQ_FMT_SIZE_LEN], b[NXQ_FMT_SIZE_LEN], la[128], lb[128];
	char w[64];
	bool any = false, lim = false;
	int f;

	printf("%s on %s:", path, device);
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS; f++) {
		if (!field_defs[f].kept)
			continue;
		if (field_defs[f].lim >= 0) {
			lim |= was && now && was->field[f] != now->field[f];
			continue;
		}
		if (!strcmp(own(was, f, a), own(now, f, b)))
			continue;
		printf("%s %s %s -> %s", any ? "," : "",
		       field_word(f, w, sizeof(w)), own(was, f, a),
		       own(now, f, b));
		any = true;
	}
	if (lim) {
		printf("%s limits %s -> %s", any ? "," : "",
		       limits_text(was, la, sizeof(la)),
		       limits_text(now, lb, sizeof(lb)));
		any = true;
	} else if (!was && now && lim_given) {
		printf("%s limits %s", any ? "," : "",
		       limits_text(now, lb, sizeof(lb)));
		any = true;
	}
	if (!any)
		printf(" unchanged");
	if (now)
		printf("; effective max %s, effective min %s%s",
		       nxq_format_size(now->emax, true, a),
		       nxq_format_size(now->emin, false, b),
		       now->overcommitted ? "; its children overcommit it" :
		       "");
	else
		printf("; no budget node left");
	printf("\n");
}

/* "[max=SIZE] [min=SIZE] ... [overcommit]": the table's words, into buf. */
static const char *set_words(char *buf, size_t n)
{
	char w[64];
	size_t len = 0;
	int f;

	buf[0] = 0;
	for (f = 0; f < NXQ_NR_BUDGET_FIELDS && len < n; f++)
		len += snprintf(buf + len, n - len, "%s[%s%s%s]", f ? " " : "",
				field_word(f, w, sizeof(w)),
				field_value_hint(f) ? "=" : "",
				field_value_hint(f) ? field_value_hint(f) : "");
	return buf;
}

/* A field's attribute in msg, of the type its unit says. */
static void put_field(struct nl_msg *msg, int f, uint64_t v)
{
	switch (field_defs[f].unit) {
	case NXQ_UNIT_BYTES:
		nla_put_u64(msg, field_defs[f].attr, v);
		break;
	case NXQ_UNIT_BOOL:
		nla_put_u8(msg, field_defs[f].attr, (uint8_t)v);
		break;
	case NXQ_UNIT_FLAG:
		nla_put_flag(msg, field_defs[f].attr);
		break;
	default:
		nla_put_u32(msg, field_defs[f].attr, (uint32_t)v);
	}
}

int cmd_budget(struct ctl *n, bool set, int argc, char **argv)
{
	struct vec before = { 0 }, after = { 0 };
	struct node *was, *now;
	bool lim_given = false;
	struct reply r = { 0 };
	unsigned int given = 0;
	struct nl_msg *msg;
	uint64_t v = 1;
	int i, err;

	if (argc < 2 || (set && argc < 3) || (!set && argc != 2)) {
		char words[512];

		if (set)
			warnx_("usage: set CGROUP DEVICE %s",
			       set_words(words, sizeof(words)));
		else
			warnx_("usage: clear CGROUP DEVICE");
		return EX_USAGE;
	}
	if (argv[0][0] != '/') {
		warnx_("%s: a cgroup is a path from the cgroup2 root, such as "
		       "/kubepods/pod1", argv[0]);
		return EX_USAGE;
	}
	msg = ctl_new(n, set ? NXQUOTA_CMD_BUDGET_SET : NXQUOTA_CMD_BUDGET_CLEAR,
		     0);
	nla_put_string(msg, NXQUOTA_A_BUDGET_CGROUP_PATH, argv[0]);
	nla_put_string(msg, NXQUOTA_A_BUDGET_DEVICE, argv[1]);
	/* each word a field of the budget table, read as the table says */
	for (i = 2; i < argc; i++) {
		/* "--overcommit": how it was once spelt */
		const char *a = strcmp(argv[i], "--overcommit") ? argv[i] :
				argv[i] + 2;
		char why[256], words[512];
		const char *val = NULL;
		int f = field_of_word(a, &val);

		err = f < 0 ? -EINVAL : (given & (1U << f)) ? -EEXIST :
		      val ? field_parse(f, val, &v, why, sizeof(why)) : 0;
		if (err) {
			if (f < 0)
				warnx_("%s: expected one of %s", argv[i],
				       set_words(words, sizeof(words)));
			else if (err == -EEXIST)
				warnx_("%s: given twice", argv[i]);
			else
				warnx_("%s: %s", argv[i], why);
			nlmsg_free(msg);
			return EX_USAGE;
		}
		given |= 1U << f;
		put_field(msg, f, v);
		lim_given |= field_defs[f].lim >= 0;
	}
	was = find_node(n, argv[1], argv[0], &before);
	if (ctl_request(n, msg, &r)) {
		free(before.v);
		return ctl_report(set ? "set" : "clear", &r);
	}
	now = find_node(n, argv[1], argv[0], &after);
	say_changed(argv[0], argv[1], was, now, lim_given);
	free(before.v);
	free(after.v);
	return EX_OK;
}
