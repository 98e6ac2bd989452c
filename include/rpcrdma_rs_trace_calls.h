/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The functions that fire the module's tracepoints (rpcrdma_rs_trace.c;
 * the events are defined in rpcrdma_rs_trace.h, which bindgen does not
 * read).  Read by bindgen; Rust calls them through rust/sunrpc/trace.rs.
 * Each returns at once, having recorded nothing, when its event is not
 * enabled.  Callable in any context: none sleeps.
 *
 * @xprt is a live transport of the class: the event records the server's
 * address as sunrpc shows it.  A string is @..., @..._len bytes, not
 * NUL-terminated, copied into the event; at most
 * RPCRDMA_RS_TRACE_STR_MAX bytes.
 */
#ifndef RPCRDMA_RS_TRACE_CALLS_H
#define RPCRDMA_RS_TRACE_CALLS_H

#include <linux/types.h>

/* The longest string an event records (a trace record is small). */
#define RPCRDMA_RS_TRACE_STR_MAX 128

struct rpc_xprt;

void rpcrdma_rs_trace_connect(const struct rpc_xprt *xprt, const char *device,
			      size_t device_len, int result, u32 credits);
/* Whether the event is on: its string is formatted only if so. */
bool rpcrdma_rs_trace_disconnect_enabled(void);
void rpcrdma_rs_trace_disconnect(const struct rpc_xprt *xprt,
				 const char *reason, size_t reason_len);
bool rpcrdma_rs_trace_private_data_enabled(void);
void rpcrdma_rs_trace_private_data(const struct rpc_xprt *xprt, bool valid,
				   u32 peer_send, u32 peer_recv,
				   bool peer_rinv, u32 inline_send,
				   u32 inline_recv, const char *status,
				   size_t status_len);
bool rpcrdma_rs_trace_reply_error_enabled(void);
void rpcrdma_rs_trace_reply_error(const struct rpc_xprt *xprt, u32 xid,
				  const char *kind, size_t kind_len,
				  const char *detail, size_t detail_len);
void rpcrdma_rs_trace_credits(const struct rpc_xprt *xprt, u32 old, u32 new);
void rpcrdma_rs_trace_mr_error(const struct rpc_xprt *xprt, const char *op,
			       size_t op_len, u32 mr, u32 status,
			       u32 vendor_err);
void rpcrdma_rs_trace_wc_error(const struct rpc_xprt *xprt, const char *op,
			       size_t op_len, u32 status, u32 vendor_err);
/* @delay in jiffies; the C glue's connect op fires it. */
void rpcrdma_rs_trace_op_connect(const struct rpc_xprt *xprt,
				 unsigned long delay);
/* @rtype: 0 inline, 1 Read chunk, 2 Long Call; @wtype: 0 inline, 1 Write
 * chunk, 2 Reply chunk. */
void rpcrdma_rs_trace_marshal(const struct rpc_xprt *xprt, u32 xid, u32 hdr,
			      u32 inline_len, unsigned int rtype,
			      unsigned int wtype);
bool rpcrdma_rs_trace_chunk_enabled(void);
/* @kind: 0 Read, 1 Write, 2 the Write chunk's pad, 3 Reply. */
void rpcrdma_rs_trace_chunk(const struct rpc_xprt *xprt, u32 xid,
			    unsigned int kind, u32 pos, u32 handle, u32 length,
			    u64 offset);
void rpcrdma_rs_trace_reply(const struct rpc_xprt *xprt, u32 xid, u32 credits,
			    u32 proc);
void rpcrdma_rs_trace_mr_wait(const struct rpc_xprt *xprt, u32 xid);
void rpcrdma_rs_trace_map_error(const struct rpc_xprt *xprt, u32 xid,
				int result);
/* Fired by the C glue (rpcrdma_rs_bc_receive_call). */
void rpcrdma_rs_trace_cb_call(const struct rpc_xprt *xprt, u32 xid, u32 len);
void rpcrdma_rs_trace_cb_reply(const struct rpc_xprt *xprt, u32 xid, u32 len);
void rpcrdma_rs_trace_device_removal(const char *device, size_t device_len,
				     u32 index);

#endif /* RPCRDMA_RS_TRACE_CALLS_H */
