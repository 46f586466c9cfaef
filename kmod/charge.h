/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, layer 4: the charge path's entry points -- charge,
 * uncharge, reclaimable bytes, tickets read and answered.  Each takes the
 * device lock and composes the layers below (counters, the queue,
 * pressure); it calls nothing of objects.c, its sibling.
 */
#ifndef _NXQ_CHARGE_H
#define _NXQ_CHARGE_H

#include "pressure.h"

int nxq_charge(struct nxq_holder *h, u64 bytes, u64 timeout_ns,
	       u64 *charged);
int nxq_uncharge(struct nxq_holder *h, u64 bytes, u64 *charged);
int nxq_set_reclaimable(struct nxq_holder *h, u64 bytes);
int nxq_ticket_read(struct nxq_holder *h, struct nxq_ticket_state *t);
int nxq_ticket_answer(struct nxq_holder *h, u64 generation, u64 released,
		      u64 *charged);

#endif /* _NXQ_CHARGE_H */
