// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota: the ioctl ABI's transport-free rules (see abi.h), shared by
 * the module's character device and nxquotad's client socket.
 */
#include <linux/errno.h>
#include <linux/compiler.h>

#include "abi.h"

/**
 * nxq_abi_charge_check() - the rules of NXQ_IOC_CHARGE's flags
 * @karg: a struct nxq_charge, copied in
 *
 * NXQ_CHARGE_NOWAIT and NXQ_CHARGE_WAIT exclude each other, and so do
 * NXQ_CHARGE_PROBE and NXQ_CHARGE_WAIT; a timeout is given exactly when
 * NXQ_CHARGE_WAIT is.
 *
 * Context: any.
 * Return: 0, or -EINVAL.
 */
int nxq_abi_charge_check(const void *karg)
{
	const struct nxq_charge *a = karg;

	if ((a->flags & NXQ_CHARGE_NOWAIT) && (a->flags & NXQ_CHARGE_WAIT))
		return -EINVAL;
	if ((a->flags & NXQ_CHARGE_PROBE) && (a->flags & NXQ_CHARGE_WAIT))
		return -EINVAL;
	if (!!(a->flags & NXQ_CHARGE_WAIT) != !!a->timeout_ns)
		return -EINVAL;
	return 0;
}

/**
 * nxq_abi_uncharge_check() - the rules of NXQ_IOC_UNCHARGE's arguments
 * @karg: a struct nxq_charge, copied in
 *
 * Context: any.
 * Return: 0, or -EINVAL for a timeout (an uncharge never waits).
 */
int nxq_abi_uncharge_check(const void *karg)
{
	const struct nxq_charge *a = karg;

	return a->timeout_ns ? -EINVAL : 0;
}

/**
 * nxq_abi_status() - fill NXQ_IOC_STATUS's answer
 * @h: the caller's holder
 * @a: the struct to fill
 *
 * Context: process context; takes the device lock.
 * Return: 0.
 */
int nxq_abi_status(struct nxq_holder *h, struct nxq_status *a)
{
	struct nxq_refusal_rec r;
	struct nxq_budget b;

	nxq_holder_status(h, &b, &a->holder_charge, &a->holder_reclaimable,
			  &a->room, &a->limit, &r);
	a->cgroup_id = READ_ONCE(h->node)->id;
	a->node_current = b.current_bytes;
	a->node_max = b.max;
	a->node_min = b.min;
	a->node_effective_min = b.effective_min;
	a->headroom = b.headroom;
	a->device_capacity = b.capacity;
	a->device_used = b.used;
	/* version 1 */
	a->node_effective_max = b.effective_max;
	a->last_error = r.err;
	a->last_level = r.level;
	a->last_bytes = r.bytes;
	a->last_limit = r.limit;
	a->last_min = r.min;
	a->last_usage = r.usage;
	a->last_ns = r.ns;
	return 0;
}

/**
 * nxq_abi_ticket_read() - fill NXQ_IOC_TICKET_READ's answer
 * @h: the caller's holder
 * @a: the struct to fill
 *
 * Context: process context; takes the device lock.
 * Return: 0, or nxq_ticket_read()'s -EAGAIN when no ticket is open.
 */
int nxq_abi_ticket_read(struct nxq_holder *h, struct nxq_ticket *a)
{
	struct nxq_ticket_state t;
	int err;

	err = nxq_ticket_read(h, &t);
	if (err)
		return err;
	a->generation = t.generation;
	a->bytes = t.bytes;
	a->deadline_ns = t.deadline_ns;
	a->reason = t.reason;
	a->level = t.level;
	return 0;
}

/**
 * nxq_abi_ticket_answer() - carry out NXQ_IOC_TICKET_ANSWER
 * @h: the caller's holder
 * @a: the answer; its charged field is set
 *
 * Context: process context; takes the device lock.
 * Return: nxq_ticket_answer()'s.
 */
int nxq_abi_ticket_answer(struct nxq_holder *h, struct nxq_ticket_answer *a)
{
	return nxq_ticket_answer(h, a->generation, a->released, &a->charged);
}
