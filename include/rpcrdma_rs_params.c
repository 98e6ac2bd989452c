// SPDX-License-Identifier: GPL-2.0
/*
 * The module parameters of rpcrdma_rs.ko: the C transport's sysctls
 * (net/sunrpc/xprtrdma/transport.c, /proc/sys/sunrpc/rdma_*), with their
 * defaults and bounds from the header C takes them from.  A write out of
 * bounds fails with EINVAL and changes nothing, at load as through
 * /sys/module/rpcrdma_rs/parameters/.  What the values mean, and when a
 * change applies, is for their readers: setup in rpcrdma_rs_sunrpc.c (the
 * slot table) and the Rust transport (rust/xprt/connect.rs).
 * rdma_memreg_strategy has no counterpart: FRWR is the only strategy in
 * 6.12, and the C sysctl changes nothing.  Also the module's version,
 * which the module! macro of 6.12 cannot give (modinfo -F version).
 */
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/errno.h>
#include <linux/kstrtox.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sysfs.h>
#include <linux/sunrpc/xprtrdma.h>

#include "rpcrdma_rs_params.h"

static int rpcrdma_rs_set_inline(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, RPCRDMA_MIN_INLINE,
				     RPCRDMA_MAX_INLINE);
}

static const struct kernel_param_ops rpcrdma_rs_inline_ops = {
	.set = rpcrdma_rs_set_inline,
	.get = param_get_uint,
};

static int rpcrdma_rs_set_slots(const char *val, const struct kernel_param *kp)
{
	return param_set_uint_minmax(val, kp, RPCRDMA_MIN_SLOT_TABLE,
				     RPCRDMA_MAX_SLOT_TABLE);
}

static const struct kernel_param_ops rpcrdma_rs_slots_ops = {
	.set = rpcrdma_rs_set_slots,
	.get = param_get_uint,
};

static unsigned int rpcrdma_rs_max_inline_read = RPCRDMA_DEF_INLINE;
module_param_cb(max_inline_read, &rpcrdma_rs_inline_ops,
		&rpcrdma_rs_max_inline_read, 0644);
__MODULE_PARM_TYPE(max_inline_read, "uint");
MODULE_PARM_DESC(max_inline_read,
		 "Largest reply received inline, in bytes: the receive size offered to the server (1024-65536, default 4096; new connections; C: rdma_max_inline_read)");

static unsigned int rpcrdma_rs_max_inline_write = RPCRDMA_DEF_INLINE;
module_param_cb(max_inline_write, &rpcrdma_rs_inline_ops,
		&rpcrdma_rs_max_inline_write, 0644);
__MODULE_PARM_TYPE(max_inline_write, "uint");
MODULE_PARM_DESC(max_inline_write,
		 "Largest call sent inline, in bytes: the send size offered to the server (1024-65536, default 4096; new connections; C: rdma_max_inline_write)");

static unsigned int rpcrdma_rs_slot_table_entries = RPCRDMA_DEF_SLOT_TABLE;
module_param_cb(slot_table_entries, &rpcrdma_rs_slots_ops,
		&rpcrdma_rs_slot_table_entries, 0644);
__MODULE_PARM_TYPE(slot_table_entries, "uint");
MODULE_PARM_DESC(slot_table_entries,
		 "RPC slots of a transport, and the credits it asks of the server (4-16384, default 128; new transports; C: rdma_slot_table_entries)");

/*
 * The setters store with a plain write under the kernel's parameter lock;
 * readers do not take it: each value is one word, read once.
 */
unsigned int rpcrdma_rs_param_max_inline_read(void)
{
	return READ_ONCE(rpcrdma_rs_max_inline_read);
}

unsigned int rpcrdma_rs_param_max_inline_write(void)
{
	return READ_ONCE(rpcrdma_rs_max_inline_write);
}

unsigned int rpcrdma_rs_param_slot_table_entries(void)
{
	return READ_ONCE(rpcrdma_rs_slot_table_entries);
}

/* The package's version (dkms.conf), from Kbuild. */
MODULE_VERSION(RPCRDMA_RS_VERSION);

#ifdef RPCRDMA_RS_TEST_HOOKS
/*
 * A test hook: exercises the RFC 8797 fallback against a server that
 * sends private data.
 */
static bool rpcrdma_rs_ignore_peer_private;
module_param_named(ignore_peer_private, rpcrdma_rs_ignore_peer_private, bool,
		   0644);
MODULE_PARM_DESC(ignore_peer_private,
		 "Test hook: new connections act as if the server sent no RFC 8797 private data (default N)");

bool rpcrdma_rs_param_ignore_peer_private(void)
{
	return READ_ONCE(rpcrdma_rs_ignore_peer_private);
}

/*
 * A test hook: every chain_cut_every-th post of a Send, with the REG_MRs
 * chained before it if any, fails as a device's may: the device takes the
 * first k of its work requests and names the next as failed, or takes
 * them all and names none.  k goes through each of those in turn, so that
 * every way a post can fail comes up; chain_cuts counts the cuts.
 */
static unsigned int rpcrdma_rs_chain_cut_every;
module_param_named(chain_cut_every, rpcrdma_rs_chain_cut_every, uint, 0644);
MODULE_PARM_DESC(chain_cut_every,
		 "Test hook: fail every Nth post of a Send and its chained REG_MRs partway (default 0: never)");
static atomic_t rpcrdma_rs_chain_posts = ATOMIC_INIT(0);
static atomic_t rpcrdma_rs_chain_cut_count = ATOMIC_INIT(0);
static unsigned int rpcrdma_rs_chain_cuts;
module_param_named(chain_cuts, rpcrdma_rs_chain_cuts, uint, 0444);
MODULE_PARM_DESC(chain_cuts, "Test hook: posts failed so far");

/*
 * Test hooks that fail the next N of something, so that what follows such
 * a failure can be tested deterministically: each is an atomic_t count,
 * set from user space, taken one at a time.
 */
static int rpcrdma_rs_fail_count_set(const char *val,
				     const struct kernel_param *kp)
{
	atomic_t *count = kp->arg;
	int n, rc = kstrtoint(val, 0, &n);

	if (rc || n < 0)
		return rc ? rc : -EINVAL;
	atomic_set(count, n);
	return 0;
}

static int rpcrdma_rs_fail_count_get(char *buf, const struct kernel_param *kp)
{
	atomic_t *count = kp->arg;

	return sysfs_emit(buf, "%d\n", atomic_read(count));
}

static const struct kernel_param_ops rpcrdma_rs_fail_count_ops = {
	.set = rpcrdma_rs_fail_count_set,
	.get = rpcrdma_rs_fail_count_get,
};

/*
 * The next fail_connects connection attempts fail at once with ENOMEM, as
 * one whose allocations failed would.
 */
static atomic_t rpcrdma_rs_fail_connects = ATOMIC_INIT(0);
module_param_cb(fail_connects, &rpcrdma_rs_fail_count_ops,
		&rpcrdma_rs_fail_connects, 0644);
__MODULE_PARM_TYPE(fail_connects, "int");
MODULE_PARM_DESC(fail_connects,
		 "Test hook: fail the next N connection attempts with ENOMEM (default 0)");

/* True, taking one, while connection attempts are to fail. */
bool rpcrdma_rs_param_fail_connect(void)
{
	return atomic_add_unless(&rpcrdma_rs_fail_connects, -1, 0);
}

/*
 * The next fail_maps regions to be mapped for an RPC's chunks fail as a
 * DMA mapping does (EIO), before that region is mapped.
 */
static atomic_t rpcrdma_rs_fail_maps = ATOMIC_INIT(0);
module_param_cb(fail_maps, &rpcrdma_rs_fail_count_ops, &rpcrdma_rs_fail_maps,
		0644);
__MODULE_PARM_TYPE(fail_maps, "int");
MODULE_PARM_DESC(fail_maps,
		 "Test hook: fail the next N mappings of a chunk's region with EIO (default 0)");

/* True, taking one, while mappings are to fail. */
bool rpcrdma_rs_param_fail_map(void)
{
	return atomic_add_unless(&rpcrdma_rs_fail_maps, -1, 0);
}

/* -1: post as usual; else how many work requests to take, of @nregs + 1. */
int rpcrdma_rs_param_chain_cut(u32 nregs)
{
	unsigned int every = READ_ONCE(rpcrdma_rs_chain_cut_every);
	unsigned int cut;

	if (!every ||
	    (unsigned int)atomic_inc_return(&rpcrdma_rs_chain_posts) % every)
		return -1;
	cut = atomic_inc_return(&rpcrdma_rs_chain_cut_count);
	WRITE_ONCE(rpcrdma_rs_chain_cuts, cut);
	return (cut - 1) % (nregs + 2);
}
#endif
