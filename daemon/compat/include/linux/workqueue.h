/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/workqueue.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_WORKQUEUE_H
#define _UK_LINUX_WORKQUEUE_H
#include <uk/uk.h>
#endif
