/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the Rust transport implements for the C glue in
 * rpcrdma_rs_sunrpc.c.  @transport is the pointer rpcrdma_rs_op_attach
 * returned.  Not read by bindgen: Rust defines these (sunrpc::class_ops!,
 * calling sunrpc::Adapter).  Those given @xprt, the instance @transport
 * was attached to, are called with its write lock (XPRT_LOCKED) held.
 */
#ifndef RPCRDMA_RS_OPS_H
#define RPCRDMA_RS_OPS_H

#include <linux/types.h>

struct rpc_rqst;
struct rpc_xprt;
struct rpcrdma_rs_stats;

/*
 * Creates the transport state of @xprt; NULL when out of memory.
 * @class_data is what rpcrdma_rs_xprt_class_register was given; called with
 * the class mutex held, so the class cannot be unregistered meanwhile.
 */
void *rpcrdma_rs_op_attach(void *class_data, struct rpc_xprt *xprt,
			   unsigned int *max_payload);
/* Tears down the connection and releases the state. */
void rpcrdma_rs_op_detach(void *transport, struct rpc_xprt *xprt);
/* Connects; sleeps.  0 or a negative errno. */
int rpcrdma_rs_op_connect(void *transport, struct rpc_xprt *xprt);
/* True if the last connection attempt failed (the next one backs off). */
bool rpcrdma_rs_op_connect_failed(void *transport);
/*
 * True if the last connection ended at a fault of the server (closing it
 * keeps the reconnect backoff).
 */
bool rpcrdma_rs_op_peer_faulted(void *transport);
/* Tears down the connection; sleeps. */
void rpcrdma_rs_op_close(void *transport, struct rpc_xprt *xprt);
/*
 * Marshals and posts @rqst (a backchannel reply if @bc_reply); 0,
 * -EAGAIN, -ENOTCONN, or another errno.
 */
int rpcrdma_rs_op_send_request(void *transport, struct rpc_xprt *xprt,
			       struct rpc_rqst *rqst, bool bc_reply);
/* An RPC got no reply in time: report the connection lost; sleeps. */
void rpcrdma_rs_op_timer(void *transport);
/* Largest backchannel message the connection carries inline. */
size_t rpcrdma_rs_op_bc_maxpayload(void *transport);
/*
 * The RPC @xid is being freed, or GSS privacy is about to free the pages
 * it encrypted the Call into: invalidate what it registered.  Sleeps.
 */
void rpcrdma_rs_op_buf_free(void *transport, u32 xid);
/* Snapshot of the transport's counters. */
void rpcrdma_rs_op_stats(void *transport, struct rpcrdma_rs_stats *stats);

#endif /* RPCRDMA_RS_OPS_H */
