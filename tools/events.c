// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl events: the multicast group's events, one line (or one JSON
 * object) each, until interrupted.  Owns a second connection for the
 * dumps that name cgroups by path (ev_look), and their cache (ev_nodes),
 * for the life of the process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/netlink.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "fmt.h"
#include "ledger.h"
#include "jsonout.h"
#include "nxquotactl.h"

/*
 * Events name cgroups by id; a second connection's dumps name them by
 * path (as the caller's cgroup namespace shows them), looked up again, at
 * most every 200 ms, when an id is not known yet.
 */
static struct ctl ev_look;
static bool ev_look_ok;
static struct vec ev_nodes = { .size = sizeof(struct node) };
static struct timespec ev_dumped;

static const char *ev_find(const char *dev, uint64_t id)
{
	const struct node *n = ev_nodes.v;
	size_t i;

	for (i = 0; i < ev_nodes.n; i++)
		if (n[i].id == id && !strcmp(n[i].device, dev))
			return n[i].path;
	return NULL;
}

static const char *ev_path(const char *dev, uint64_t id)
{
	struct reply r = { .data = node_cb, .maxattr = NXQUOTA_A_BUDGET_LAST };
	const char *p = ev_find(dev, id);
	struct timespec now;
	struct vec v = { .size = sizeof(struct node) };

	if (p || !ev_look_ok)
		return p;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - ev_dumped.tv_sec) * 1000 +
	    (now.tv_nsec - ev_dumped.tv_nsec) / 1000000 < 200)
		return NULL;
	ev_dumped = now;
	r.arg = &v;
	if (ctl_request(&ev_look, ctl_new(&ev_look, NXQUOTA_CMD_BUDGET_GET,
					  NLM_F_DUMP), &r)) {
		free(v.v);
		return NULL;
	}
	free(ev_nodes.v);
	ev_nodes = v;
	return ev_find(dev, id);
}

static int on_event(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[NXQUOTA_A_EVENT_MAX + 1];
	char when[64], a[NXQ_FMT_SIZE_LEN], b[NXQ_FMT_SIZE_LEN];
	const char *name = "unknown", *dev = "", *path, *by = NULL;
	uint64_t cg, bytes, value, count;
	uint32_t type, pid, reason;
	struct timespec ts;
	struct tm tm;

	(void)arg;
	if (genlmsg_parse(nlmsg_hdr(msg), 0, tb, NXQUOTA_A_EVENT_MAX, NULL) ||
	    !tb[NXQUOTA_A_EVENT_TYPE])
		return NL_OK;
	type = nla_get_u32(tb[NXQUOTA_A_EVENT_TYPE]);
	if (type < sizeof(event_names) / sizeof(event_names[0]) &&
	    event_names[type])
		name = event_names[type];
	if (tb[NXQUOTA_A_EVENT_DEVICE])
		dev = nla_get_string(tb[NXQUOTA_A_EVENT_DEVICE]);
	cg = u64_or(tb[NXQUOTA_A_EVENT_CGROUP_ID], 0);
	pid = u32_or(tb[NXQUOTA_A_EVENT_PID], 0);
	bytes = u64_or(tb[NXQUOTA_A_EVENT_BYTES], 0);
	value = u64_or(tb[NXQUOTA_A_EVENT_VALUE], 0);
	reason = u32_or(tb[NXQUOTA_A_EVENT_REASON], 0);
	/* a denial stands for count of them (1 from older authorities) */
	count = u64_or(tb[NXQUOTA_A_EVENT_COUNT], 1);
	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);

	path = cg ? ev_path(dev, cg) : NULL;
	if (type == NXQUOTA_EVENT_TYPE_DENIED && value)
		by = ev_path(dev, value);
	if (opt_json) {
		char t[96];

		snprintf(t, sizeof(t), "%s.%03ld", when, ts.tv_nsec / 1000000);
		json_event(&(struct json_event){
			.time = t, .type = name, .device = dev,
			.cgroup_id = cg, .path = path,
			.denied = type == NXQUOTA_EVENT_TYPE_DENIED,
			.refused_by = by, .by_device = !value, .count = count,
			.pid = pid, .reason = reason, .bytes = bytes,
			.value = value,
			.timestamp_ns = u64_or(tb[NXQUOTA_A_EVENT_TIMESTAMP_NS], 0),
		});
		return NL_OK;
	}
	printf("%s.%03ld %-15s device=%s", when, ts.tv_nsec / 1000000, name,
	       dev);
	if (path)
		printf(" cgroup=%s", path);
	else if (cg)
		printf(" cgroup=#%" PRIu64, cg);
	if (pid)
		printf(" pid=%u", pid);
	switch (type) {
	case NXQUOTA_EVENT_TYPE_DEVICE_ADDED:
		printf(" capacity=%s", nxq_format_size(bytes, false, a));
		break;
	case NXQUOTA_EVENT_TYPE_BUDGET_CHANGED:
		printf(" max=%s min=%s", nxq_format_size(bytes, true, a),
		       nxq_format_size(value, false, b));
		break;
	case NXQUOTA_EVENT_TYPE_DENIED:
		printf(" bytes=%s error=%s", nxq_format_size(bytes, false, a),
		       nxq_errno_name((int)reason));
		if (by)
			printf(" refused-by=%s", by);
		else if (value)
			printf(" refused-by=#%" PRIu64, value);
		else if (reason == ENOSPC)
			printf(" refused-by=device");
		/* coalesced: the latest of count denials */
		if (count != 1)
			printf(" count=%" PRIu64, count);
		break;
	case NXQUOTA_EVENT_TYPE_TICKET_ISSUED:
		printf(" asked=%s generation=%" PRIu64 " reason=%u",
		       nxq_format_size(bytes, false, a), value, reason);
		break;
	case NXQUOTA_EVENT_TYPE_TICKET_ANSWERED:
		printf(" released=%s generation=%" PRIu64,
		       nxq_format_size(bytes, false, a), value);
		break;
	case NXQUOTA_EVENT_TYPE_KILLED:
		printf(" charge=%s", nxq_format_size(bytes, false, a));
		break;
	case NXQUOTA_EVENT_TYPE_ESCAPED:
		/* nxquotad's backstop: NVML's measure beyond the charges */
		printf(" uncharged=%s subtree-used=%s action=%s",
		       nxq_format_size(bytes, false, a),
		       nxq_format_size(value, false, b),
		       reason == SIGKILL ? "killed" : "named");
		break;
	}
	printf("\n");
	fflush(stdout);
	return NL_OK;
}

int cmd_events(struct ctl *n, int argc)
{
	int grp, err;

	if (argc) {
		warnx_("usage: events");
		return EX_USAGE;
	}
	/* the connection for paths; without it, events show ids */
	ev_look.control = n->control;
	ev_look_ok = ctl_connect(&ev_look) == EX_OK;
	if (n->ufd >= 0) {
		/* The daemon: an EVENT request subscribes the connection. */
		struct reply r = { 0 };

		if (ctl_request(n, ctl_new(n, NXQUOTA_CMD_EVENT, 0), &r))
			return ctl_report("events", &r);
		nl_socket_disable_seq_check(n->sk);
		nl_socket_modify_cb(n->sk, NL_CB_VALID, NL_CB_CUSTOM, on_event,
				    NULL);
		setsockopt(n->ufd, SOL_SOCKET, SO_RCVBUF, &(int){ 4 << 20 },
			   sizeof(int));
		goto listen;
	}
	grp = genl_ctrl_resolve_grp(n->sk, NXQUOTA_FAMILY_NAME,
				    NXQUOTA_MCGRP_EVENTS);
	if (grp < 0) {
		warnx_("events: the module has no \"%s\" group: %s",
		       NXQUOTA_MCGRP_EVENTS, nl_geterror(grp));
		return EX_FAIL;
	}
	nl_socket_disable_seq_check(n->sk);
	nl_socket_modify_cb(n->sk, NL_CB_VALID, NL_CB_CUSTOM, on_event, NULL);
	err = nl_socket_add_membership(n->sk, grp);
	if (err < 0) {
		if (err == -NLE_PERM) {
			warnx_("events: permission denied (joining the events "
			       "group needs CAP_SYS_ADMIN)");
			return EX_PERM;
		}
		warnx_("events: cannot join the group: %s", nl_geterror(err));
		return EX_FAIL;
	}
	nl_socket_set_buffer_size(n->sk, 4 << 20, 0);
listen:
	for (;;) {
		err = nl_recvmsgs_default(n->sk);
		if (err == -NLE_NOMEM) {	/* ENOBUFS: the kernel dropped */
			warnx_("events lost (receive buffer overrun); "
			       "continuing");
			continue;
		}
		if (err < 0 && err != -NLE_INTR && err != -NLE_AGAIN) {
			warnx_("events: %s", nl_geterror(err));
			return EX_FAIL;
		}
	}
}
