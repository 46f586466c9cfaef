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

/*
 * The limit of a "holders-max=N"-style word (the spec's name, '_' said
 * '-'; limit_defs), or -1.
 */
static int limit_of(const char *w)
{
	size_t i, k, len;

	for (i = 0; i < NXQ_NR_LIMITS; i++) {
		len = strlen(limit_defs[i].name);
		for (k = 0; k < len; k++)
			if (w[k] != (limit_defs[i].name[k] == '_' ? '-' :
				     limit_defs[i].name[k]))
				break;
		if (k == len && w[len] == '=')
			return (int)i;
	}
	return -1;
}

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

static const char *own_max(const struct node *nd, char *buf)
{
	return nd && nd->max_set ? nxq_format_size(nd->max, true, buf) : "-";
}

static const char *own_min(const struct node *nd, char *buf)
{
	return nd && nd->min ? nxq_format_size(nd->min, false, buf) : "-";
}

/*
 * What a set or clear changed, on stdout: each field before and after,
 * then what binds the cgroup now.  Sizes as status shows them.
 */
static void say_changed(const char *path, const char *device,
			const struct node *was, const struct node *now,
			bool lim_given)
{
	char a[NXQ_FMT_SIZE_LEN], b[NXQ_FMT_SIZE_LEN], la[128], lb[128];
	bool any = false;

	printf("%s on %s:", path, device);
	if (strcmp(own_max(was, a), own_max(now, b))) {
		printf(" max %s -> %s", own_max(was, a), own_max(now, b));
		any = true;
	}
	if (strcmp(own_min(was, a), own_min(now, b))) {
		printf("%s min %s -> %s", any ? "," : "", own_min(was, a),
		       own_min(now, b));
		any = true;
	}
	if ((was && was->kill_on_ignore) != (now && now->kill_on_ignore)) {
		printf("%s kill-on-ignore %d -> %d", any ? "," : "",
		       was && was->kill_on_ignore, now && now->kill_on_ignore);
		any = true;
	}
	if (was && now && memcmp(was->lim, now->lim, sizeof(now->lim))) {
		printf("%s limits %s -> %s", any ? "," : "",
		       limits_text(was->lim, la, sizeof(la)),
		       limits_text(now->lim, lb, sizeof(lb)));
		any = true;
	} else if (!was && now && lim_given) {
		printf("%s limits %s", any ? "," : "",
		       limits_text(now->lim, lb, sizeof(lb)));
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

int cmd_budget(struct ctl *n, bool set, int argc, char **argv)
{
	struct vec before = { 0 }, after = { 0 };
	struct node *was, *now;
	bool lim_given = false;
	struct reply r = { 0 };
	struct nl_msg *msg;
	uint64_t v;
	int i, err;

	if (argc < 2 || (set && argc < 3) || (!set && argc != 2)) {
		char lims[256] = "";
		size_t k;

		/* the limits as the spec names them (limit_defs), '-' for '_' */
		for (i = 0; set && i < NXQ_NR_LIMITS; i++) {
			snprintf(lims + strlen(lims), sizeof(lims) - strlen(lims),
				 " [%s=N]", limit_defs[i].name);
			for (k = strlen(lims) - strlen(limit_defs[i].name) - 3;
			     lims[k] && lims[k] != '='; k++)
				if (lims[k] == '_')
					lims[k] = '-';
		}
		if (set)
			warnx_("usage: set CGROUP DEVICE [max=SIZE] [min=SIZE] "
			       "[kill-on-ignore=0|1]%s [overcommit]", lims);
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
	for (i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		bool is_max = !strncmp(argv[i], "max=", 4);
		bool is_kill = !strncmp(argv[i], "kill-on-ignore=", 15);
		int lim = limit_of(argv[i]);

		if (!strcmp(argv[i], "overcommit") ||
		    !strcmp(argv[i], "--overcommit")) {
			nla_put_flag(msg, NXQUOTA_A_BUDGET_OVERCOMMIT);
			continue;
		}
		if (lim >= 0) {
			char *end;
			unsigned long long x = strtoull(eq + 1, &end, 10);

			if (eq[1] < '0' || eq[1] > '9' || *end) {
				warnx_("%s: not a number", argv[i]);
				nlmsg_free(msg);
				return EX_USAGE;
			}
			if (x > limit_defs[lim].max) {
				warnx_("%s: at most %u", argv[i],
				       limit_defs[lim].max);
				nlmsg_free(msg);
				return EX_USAGE;
			}
			nla_put_u32(msg, limit_defs[lim].attr, (uint32_t)x);
			lim_given = true;
			continue;
		}
		if (!eq || (!is_max && !is_kill && strncmp(argv[i], "min=", 4))) {
			warnx_("%s: expected max=SIZE, min=SIZE, "
			       "kill-on-ignore=0|1, a limit or overcommit",
			       argv[i]);
			nlmsg_free(msg);
			return EX_USAGE;
		}
		if (is_kill) {
			if (strcmp(eq + 1, "0") && strcmp(eq + 1, "1")) {
				warnx_("%s: kill-on-ignore is 0 or 1", argv[i]);
				nlmsg_free(msg);
				return EX_USAGE;
			}
			nla_put_u8(msg, NXQUOTA_A_BUDGET_KILL_ON_IGNORE,
				   eq[1] == '1');
			continue;
		}
		err = nxq_size_parse_b(eq + 1, is_max, &v);
		if (err) {
			warnx_("%s: not a size (bytes, or with a K, M, G, T, P "
			       "or E suffix, also Ki..Ei: powers of 1024%s)",
			       argv[i], is_max ? "; or max" : "");
			nlmsg_free(msg);
			return EX_USAGE;
		}
		nla_put_u64(msg, is_max ? NXQUOTA_A_BUDGET_MAX :
			    NXQUOTA_A_BUDGET_MIN, v);
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
