/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota-hook's authority, with a deadline (hook_auth.c): the module's
 * generic netlink family or nxquotad's control socket (ctl.h), asked for
 * the ledger and for budgets by requests that each end by the deadline
 * of the phase they belong to (the run's, then an undo's), and a
 * watchdog that ends the process with one line if a call the socket's
 * timeout cannot bound (a connect() to a full backlog, the module) runs
 * past it.
 */
#ifndef NXQ_TOOLS_HOOK_AUTH_H
#define NXQ_TOOLS_HOOK_AUTH_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "ctl.h"
#include "hook.h"
#include "ledger.h"

#define HOOK_TIMEOUT_MS		5000	/* NXQUOTA_HOOK_TIMEOUT's default */
#define HOOK_WATCHDOG_GRACE_MS	500	/* past a deadline, the watchdog */

struct hook_auth {
	struct ctl n;
	const char *control;		/* --control PATH, or NULL */
	unsigned int timeout_ms;	/* each phase's */
	struct timespec deadline;	/* CLOCK_MONOTONIC, this phase's */
	bool up;			/* connected */
	bool dead;			/* a request went unanswered */
	char path[HOOK_PATH_MAX];	/* nxquotad's socket; "" = the module */
	char who[HOOK_PATH_MAX + 32];	/* "nxquotad at PATH", "the module" */
	char left[HOOK_ERR_LEN];	/* what is set now (hook_left()) */
};

void hook_auth_init(struct hook_auth *a, const char *control,
		    unsigned int timeout_ms);
/* A phase begins: its deadline is now + the timeout; the watchdog is
 * armed past it. */
void hook_auth_phase(struct hook_auth *a);
/* Milliseconds left before the deadline (0 when past). */
long hook_auth_left_ms(const struct hook_auth *a);
/* Connect (a new phase): 0, or a negative errno and err. */
int hook_auth_connect(struct hook_auth *a, char *err);
/* The devices, budgets and holders: 0, or a negative errno and err
 * (-ETIMEDOUT: no answer by the deadline). */
int hook_auth_ledger(struct hook_auth *a, struct ledger *l, char *err);
/* hook_ops.budget, hook_ops.undo_begin (a new phase) and hook_ops.note
 * (the watchdog's last word) over a struct hook_auth. */
int hook_auth_budget(void *arg, bool clear, const char *path, const char *key,
		     bool has_max, uint64_t max, bool has_min, uint64_t min,
		     char *why, size_t size);
void hook_auth_undo_begin(void *arg);
void hook_auth_note(void *arg, const char *left);
void hook_auth_close(struct hook_auth *a);

/*
 * The watchdog: SIGALRM at a deadline writes the line last given, to
 * stderr and /dev/log, and exits 1.  prefix starts every line
 * ("nxquota-hook: container ID: ").
 */
void hook_watchdog_init(const char *prefix);
void hook_watchdog_arm(const struct timespec *deadline);
void hook_watchdog_off(void);
void __attribute__((format(printf, 1, 2))) hook_watchdog_line(const char *fmt,
							       ...);

#endif /* NXQ_TOOLS_HOOK_AUTH_H */
