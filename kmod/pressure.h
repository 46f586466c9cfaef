/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, layer 3: pressure.  When a charge is not granted at
 * once, tickets are opened on victims for the shortfall, inside the
 * constraint the charge hit (under a max, that subtree; the device, its
 * borrowers); asks for the same shortfall coalesce; a holder that
 * declines is passed by and the shortfall moves on; only a RECALL whose
 * deadline (never sooner than the device's ticket_timeout_ms) passed can
 * end in a kill.
 *
 * Runs under nxq_device.lock; calls the wait queue, the counters and the
 * events below it, nothing above.
 */
#ifndef _NXQ_PRESSURE_H
#define _NXQ_PRESSURE_H

#include "waitq.h"

/* The most holders one shortfall opens tickets on. */
#define NXQ_MAX_VICTIMS		64

/*
 * The most holders (and nodes) one victim search looks at in its scope:
 * the device's holder list for the device, the holder lists of a
 * subtree's nodes under a max; in at most four passes, so that a search
 * holds the device lock for O(NXQ_SCAN_MAX x depth) whatever the device
 * holds.  A search cut short starts the next one where it stopped
 * (nxq_scan_rotate()): successive searches cover everyone.
 */
#define NXQ_SCAN_MAX		1024

void nxq_ask_for(struct nxq_device *dev, struct nxq_waiter *w, u64 now);
void nxq_reask(struct nxq_device *dev);
void nxq_ask_budget(struct nxq_node *node, u64 excess);
bool nxq_escalate(struct nxq_device *dev, struct nxq_waiter *w);

#endif /* _NXQ_PRESSURE_H */
