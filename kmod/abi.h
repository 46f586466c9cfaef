/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, on top: the ioctl ABI's rules that do not depend on the
 * transport -- the checks of a command's arguments and the translation
 * between the uapi structs and the ledger's calls.  The module's
 * /dev/nxquota (cdev.c) and nxquotad's client socket (daemon/client.c)
 * both use them, so both apply one set of rules.  Copying, sizes, flags
 * and holder lookup stay in each shell.
 */
#ifndef _NXQ_ABI_H
#define _NXQ_ABI_H

#include "charge.h"

int nxq_abi_charge_check(const void *karg);
int nxq_abi_uncharge_check(const void *karg);
int nxq_abi_status(struct nxq_holder *h, struct nxq_status *a);
int nxq_abi_ticket_read(struct nxq_holder *h, struct nxq_ticket *a);
int nxq_abi_ticket_answer(struct nxq_holder *h, struct nxq_ticket_answer *a);

#endif /* _NXQ_ABI_H */
