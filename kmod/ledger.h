/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger: what the shells (cdev.c, sysfs.c, netlink.c, cgroup.c)
 * and the KUnit suites include.
 *
 * The ledger is in layers; a file calls only the layers below it:
 *
 *   objects.c   devices, nodes, holders     charge.c   the charge path's
 *   budget.c    (lifetimes, budgets)                   entry points
 *   holder.c
 *        \                                            /
 *         pressure.c   tickets, victims, escalation
 *             |
 *         waitq.c      the fair wait queue, dispatch
 *             |
 *         counter.c    hierarchical counters, effective min, limits
 *         refusal.c    (beside it) a refused charge recorded, counted
 *             |
 *         event.c      events, sent after the locks drop
 *
 * Each has a header of its own and a KUnit suite of its own
 * (<layer>_test.c).  The objects, their fields and their locks are in
 * ledger_types.h.
 */
#ifndef _NXQ_LEDGER_H
#define _NXQ_LEDGER_H

#include "objects.h"
#include "charge.h"
#include "abi.h"

#endif /* _NXQ_LEDGER_H */
