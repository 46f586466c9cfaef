// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The tests' hooks (nxqp__test_*, preload.h): hidden, linked into
 * test_preload, not exported by libnxquota-preload.so.
 *
 * Layer 8, the top: may call every file below.
 */
#include "shim.h"

/* ---- for the tests (hidden: linked in, not exported by the .so) ---- */

void nxqp__test_authority(const struct nxq_kops *kops, void *kpriv)
{
	connect_stop();		/* it takes S.lock: before */
	pthread_mutex_lock(&S.lock);
	ticket_thread_stop();
	state_drop_locked(1);
	S.test_set = 1;
	S.test_kops = kops;
	S.test_kpriv = kpriv;
	SAY_RESET();
	S.last_said[0] = 0;
	memset(&S.cnt, 0, sizeof(S.cnt));
	pthread_mutex_unlock(&S.lock);
}

void nxqp__test_counters(struct nxqp_counters *c)
{
	*c = S.cnt;
	c->owed = 0;
	for (int i = 0; i < MAXDEV; i++)
		c->owed += __atomic_load_n(&S.dev[i].owed, __ATOMIC_RELAXED) +
			   __atomic_load_n(&S.dev[i].cowed, __ATOMIC_RELAXED);
	c->tracked = 0;
	for (int i = 0; i < NSHARD; i++) {
		pthread_mutex_lock(&shard[i]);
		c->tracked += tracked[i];
		pthread_mutex_unlock(&shard[i]);
	}
}

int nxqp__test_state(void)
{
	return __atomic_load_n(&S.state, __ATOMIC_ACQUIRE);
}

void nxqp__test_no_nvml(int on)
{
	no_nvml = on;
}

void nxqp__test_gap(uint64_t ns)
{
	S.gap_ns = ns;
}

const char *nxqp__test_last_said(void)
{
	static char copy[sizeof(S.last_said)];

	pthread_mutex_lock(&S.say_mu);
	memcpy(copy, S.last_said, sizeof(copy));
	pthread_mutex_unlock(&S.say_mu);
	return copy;
}
