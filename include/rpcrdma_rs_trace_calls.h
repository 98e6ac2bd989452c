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
			       size_t op_len, u32 mr, u32 status);
void rpcrdma_rs_trace_device_removal(const char *device, size_t device_len,
				     u32 index);

#endif /* RPCRDMA_RS_TRACE_CALLS_H */
