// SPDX-License-Identifier: GPL-2.0
/*
 * The tracepoints of rpcrdma_rs.ko (rpcrdma_rs_trace.h, instantiated
 * here), and the plain functions Rust fires them through
 * (rpcrdma_rs_trace_calls.h): the trace_*() calls are static inline, and
 * their static keys keep them to a patched-out branch while the event is
 * off.  Each function tests its key first, so that a disabled event costs
 * the call and that branch, no RCU read lock.
 */
#include <linux/jiffies.h>
#include <linux/minmax.h>
#include <linux/rcupdate.h>
#include <linux/sunrpc/xprt.h>

#include "rpcrdma_rs_trace_calls.h"

#define CREATE_TRACE_POINTS
#include "rpcrdma_rs_trace.h"

/*
 * The lengths come from Rust, which keeps each string within
 * RPCRDMA_RS_TRACE_STR_MAX; the events hold them to it all the same, as
 * __string_len stores the length in 16 bits.
 */
static size_t rs_len(size_t len)
{
	return min_t(size_t, len, RPCRDMA_RS_TRACE_STR_MAX);
}

/*
 * The server's address as sunrpc shows it.  sysfs (dstaddr) replaces the
 * string and frees the old one after an RCU grace period, as for
 * rpcrdma_rs_xprt_peer(): the caller holds the RCU read lock until the
 * event has copied it.
 */
static const char *rpcrdma_rs_trace_peer(const struct rpc_xprt *xprt)
{
	const char *addr;

	addr = rcu_dereference(xprt->address_strings[RPC_DISPLAY_ADDR]);
	return addr ? addr : "?";
}

void rpcrdma_rs_trace_connect(const struct rpc_xprt *xprt, const char *device,
			      size_t device_len, int result, u32 credits)
{
	if (!trace_rpcrdma_rs_connect_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_connect(rpcrdma_rs_trace_peer(xprt), device,
				 rs_len(device_len), result, credits);
	rcu_read_unlock();
}

bool rpcrdma_rs_trace_disconnect_enabled(void)
{
	return trace_rpcrdma_rs_disconnect_enabled();
}

void rpcrdma_rs_trace_disconnect(const struct rpc_xprt *xprt,
				 const char *reason, size_t reason_len)
{
	if (!trace_rpcrdma_rs_disconnect_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_disconnect(rpcrdma_rs_trace_peer(xprt), reason,
				    rs_len(reason_len));
	rcu_read_unlock();
}

bool rpcrdma_rs_trace_private_data_enabled(void)
{
	return trace_rpcrdma_rs_private_data_enabled();
}

void rpcrdma_rs_trace_private_data(const struct rpc_xprt *xprt, bool valid,
				   u32 peer_send, u32 peer_recv,
				   bool peer_rinv, u32 inline_send,
				   u32 inline_recv, const char *status,
				   size_t status_len)
{
	if (!trace_rpcrdma_rs_private_data_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_private_data(rpcrdma_rs_trace_peer(xprt), valid,
				      peer_send, peer_recv, peer_rinv,
				      inline_send, inline_recv, status,
				      rs_len(status_len));
	rcu_read_unlock();
}

bool rpcrdma_rs_trace_reply_error_enabled(void)
{
	return trace_rpcrdma_rs_reply_error_enabled();
}

void rpcrdma_rs_trace_reply_error(const struct rpc_xprt *xprt, u32 xid,
				  const char *kind, size_t kind_len,
				  const char *detail, size_t detail_len)
{
	if (!trace_rpcrdma_rs_reply_error_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_reply_error(rpcrdma_rs_trace_peer(xprt), xid, kind,
				     rs_len(kind_len), detail,
				     rs_len(detail_len));
	rcu_read_unlock();
}

void rpcrdma_rs_trace_credits(const struct rpc_xprt *xprt, u32 old, u32 new)
{
	if (!trace_rpcrdma_rs_credits_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_credits(rpcrdma_rs_trace_peer(xprt), old, new);
	rcu_read_unlock();
}

void rpcrdma_rs_trace_mr_error(const struct rpc_xprt *xprt, const char *op,
			       size_t op_len, u32 mr, u32 status,
			       u32 vendor_err)
{
	if (!trace_rpcrdma_rs_mr_error_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_mr_error(rpcrdma_rs_trace_peer(xprt), op,
				  rs_len(op_len), mr, status, vendor_err);
	rcu_read_unlock();
}

void rpcrdma_rs_trace_wc_error(const struct rpc_xprt *xprt, const char *op,
			       size_t op_len, u32 status, u32 vendor_err)
{
	if (!trace_rpcrdma_rs_wc_error_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_wc_error(rpcrdma_rs_trace_peer(xprt), op,
				  rs_len(op_len), status, vendor_err);
	rcu_read_unlock();
}

void rpcrdma_rs_trace_op_connect(const struct rpc_xprt *xprt,
				 unsigned long delay)
{
	if (!trace_rpcrdma_rs_op_connect_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_op_connect(rpcrdma_rs_trace_peer(xprt),
				    jiffies_to_msecs(delay));
	rcu_read_unlock();
}

void rpcrdma_rs_trace_marshal(const struct rpc_xprt *xprt, u32 xid, u32 hdr,
			      u32 inline_len, unsigned int rtype,
			      unsigned int wtype)
{
	if (!trace_rpcrdma_rs_marshal_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_marshal(rpcrdma_rs_trace_peer(xprt), xid, hdr,
				 inline_len, rtype, wtype);
	rcu_read_unlock();
}

bool rpcrdma_rs_trace_chunk_enabled(void)
{
	return trace_rpcrdma_rs_chunk_enabled();
}

void rpcrdma_rs_trace_chunk(const struct rpc_xprt *xprt, u32 xid,
			    unsigned int kind, u32 pos, u32 handle, u32 length,
			    u64 offset)
{
	if (!trace_rpcrdma_rs_chunk_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_chunk(rpcrdma_rs_trace_peer(xprt), xid, kind, pos,
			       handle, length, offset);
	rcu_read_unlock();
}

void rpcrdma_rs_trace_reply(const struct rpc_xprt *xprt, u32 xid, u32 credits,
			    u32 proc)
{
	if (!trace_rpcrdma_rs_reply_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_reply(rpcrdma_rs_trace_peer(xprt), xid, credits, proc);
	rcu_read_unlock();
}

void rpcrdma_rs_trace_mr_wait(const struct rpc_xprt *xprt, u32 xid)
{
	if (!trace_rpcrdma_rs_mr_wait_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_mr_wait(rpcrdma_rs_trace_peer(xprt), xid);
	rcu_read_unlock();
}

void rpcrdma_rs_trace_map_error(const struct rpc_xprt *xprt, u32 xid,
				int result)
{
	if (!trace_rpcrdma_rs_map_error_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_map_error(rpcrdma_rs_trace_peer(xprt), xid, result);
	rcu_read_unlock();
}

void rpcrdma_rs_trace_cb_call(const struct rpc_xprt *xprt, u32 xid, u32 len)
{
	if (!trace_rpcrdma_rs_cb_call_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_cb_call(rpcrdma_rs_trace_peer(xprt), xid, len);
	rcu_read_unlock();
}

void rpcrdma_rs_trace_cb_reply(const struct rpc_xprt *xprt, u32 xid, u32 len)
{
	if (!trace_rpcrdma_rs_cb_reply_enabled())
		return;
	rcu_read_lock();
	trace_rpcrdma_rs_cb_reply(rpcrdma_rs_trace_peer(xprt), xid, len);
	rcu_read_unlock();
}

void rpcrdma_rs_trace_device_removal(const char *device, size_t device_len,
				     u32 index)
{
	trace_rpcrdma_rs_device_removal(device, rs_len(device_len), index);
}
