// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl - the operator's tool for nxquota, over the generic netlink
 * family "nxquota" (libnl-genl-3).  See nxquotactl.8.
 *
 *   nxquotactl [--json] status [DEVICE]
 *   nxquotactl set CGROUP DEVICE FIELD=VALUE...   (the budget table's fields)
 *   nxquotactl clear CGROUP DEVICE
 *   nxquotactl [--json] devices
 *   nxquotactl devices register KEY SIZE | unregister KEY | FIELD KEY VALUE
 *   nxquotactl devices sync [--dry-run]
 *   nxquotactl [--json] events
 *   nxquotactl metrics
 *
 * The authority: the module's generic netlink family if it resolves,
 * else nxquotad's control socket ($NXQUOTA_CONTROL, default
 * /run/nxquota/control.sock), which speaks the same family, one netlink
 * message per SOCK_SEQPACKET message (<linux/nxquotad.h>).  --control PATH
 * asks the daemon at PATH only.  The messages are the same libnl ones
 * either way, and the replies go through the same callbacks.
 *
 * Exit status: 0 success, 1 the request failed, 2 usage, 3 neither the
 * module nor the daemon is there, 4 permission denied.
 *
 * This file: the options and the dispatch.  The commands: status.c,
 * budget.c (set, clear), devices.c, events.c, metrics.c, cdi.c; what
 * they share, nxquotactl.h.  Below them: ctl.c (the transport, either
 * authority), extack.c (the replies and their extended acks), ledger.c
 * (the dumps, parsed), unattr.c (NVML against the ledger), nvml.c,
 * jsonout.c (the --json documents), fmt.c (sizes and labels for people).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <linux/nxquota.h>

#include "cdi.h"
#include "ctl.h"
#include "nxquotactl.h"

bool opt_json;

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--json] [--control PATH] COMMAND [ARGS]\n"
		"  status [DEVICE]                   devices, budget tree, holders;\n"
		"                                    for root, NVML's bytes per process\n"
		"                                    against the ledger's (unattributed)\n"
		"  set CGROUP DEVICE FIELD=VALUE...  a cgroup's budget (set CGROUP\n"
		"                                    DEVICE alone lists the fields)\n"
		"  clear CGROUP DEVICE               drop a cgroup's budget\n"
		"  devices                           list devices\n"
		"  devices register KEY SIZE [MAJ:MIN]  register a device\n"
		"                                    (with its node's dev_t)\n"
		"  devices unregister KEY            unregister a device\n"
		"  devices sync [--dry-run]          register every CUDA GPU\n",
		prog);
	devices_usage(f);	/* FIELD KEY VALUE, from the device table */
	fprintf(f,
		"  events                            follow ledger events\n"
		"  metrics                           Prometheus text exposition\n"
		"  cdi generate [--output FILE]      a CDI spec (nxquota.io/gpu) that\n"
		"                                    gives containers the authority,\n"
		"                                    the shim and nxquota-hook\n"
		"SIZE: bytes, or with a K, M, G, T, P or E suffix, also Ki..Ei (powers of\n"
		"1024, as memory.max reads them); max= also takes \"max\".\n"
		"Bytes are charge, not residency.\n"
		"Authority: the module if loaded, else nxquotad's control socket\n"
		"(NXQUOTA_CONTROL, default " NXQD_CONTROL_PATH ");\n"
		"--control PATH: the daemon at PATH only.  NXQUOTA_NVML=0: no NVML.\n");
}

int main(int argc, char **argv)
{
	struct ctl n = { 0 };
	const char *cmd;
	int rc;

	while (argc > 1 && argv[1][0] == '-') {
		if (!strcmp(argv[1], "--json") || !strcmp(argv[1], "-j")) {
			opt_json = true;
		} else if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
			usage(stdout);
			return EX_OK;
		} else if (!strcmp(argv[1], "--control") && argc > 2) {
			n.control = argv[2];
			argc--;
			argv++;
		} else if (!strncmp(argv[1], "--control=", 10)) {
			n.control = argv[1] + 10;
		} else if (!strcmp(argv[1], "--version")) {
			printf("nxquotactl %s\n", NXQ_VERSION);
			return EX_OK;
		} else {
			usage(stderr);
			return EX_USAGE;
		}
		argc--;
		argv++;
	}
	if (argc < 2) {
		usage(stderr);
		return EX_USAGE;
	}
	cmd = argv[1];
	argc -= 2;
	argv += 2;
	if (strcmp(cmd, "status") && strcmp(cmd, "set") && strcmp(cmd, "clear") &&
	    strcmp(cmd, "devices") && strcmp(cmd, "events") &&
	    strcmp(cmd, "metrics") && strcmp(cmd, "cdi")) {
		warnx_("unknown command \"%s\"", cmd);
		usage(stderr);
		return EX_USAGE;
	}
	rc = ctl_connect(&n);
	if (rc)
		return rc;
	if (!strcmp(cmd, "status"))
		rc = cmd_status(&n, argc, argv);
	else if (!strcmp(cmd, "set"))
		rc = cmd_budget(&n, true, argc, argv);
	else if (!strcmp(cmd, "clear"))
		rc = cmd_budget(&n, false, argc, argv);
	else if (!strcmp(cmd, "devices"))
		rc = cmd_devices(&n, argc, argv);
	else if (!strcmp(cmd, "events"))
		rc = cmd_events(&n, argc);
	else if (!strcmp(cmd, "cdi"))
		rc = cmd_cdi(&n, argc, argv);
	else
		rc = cmd_metrics(&n, argc);
	ctl_close(&n);
	return rc;
}
