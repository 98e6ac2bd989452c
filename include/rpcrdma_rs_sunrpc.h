/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the sunrpc glue files of rpcrdma_rs.ko share: the transport
 * instance and the backchannel's rpc_xprt_ops.  Not read by bindgen.
 */
#ifndef RPCRDMA_RS_SUNRPC_H
#define RPCRDMA_RS_SUNRPC_H

#include <linux/sunrpc/xprt.h>
#include <linux/workqueue.h>

/**
 * struct rpcrdma_rs_xprt - one transport instance
 * @xprt: what sunrpc sees; first, so the two convert by a cast
 * @connect_worker: runs the Rust connect in process context
 * @timeout: private copy for set_connect_timeout
 * @transport: the Rust transport state (an Arc turned into a pointer)
 */
struct rpcrdma_rs_xprt {
	struct rpc_xprt xprt;
	struct delayed_work connect_worker;
	struct rpc_timeout timeout;
	void *transport;
};

static inline struct rpcrdma_rs_xprt *rs_xprt(struct rpc_xprt *xprt)
{
	return container_of(xprt, struct rpcrdma_rs_xprt, xprt);
}

void rpcrdma_rs_close(struct rpc_xprt *xprt);
bool rpcrdma_rs_get_cong(struct rpc_xprt *xprt, struct rpc_rqst *rqst);
void rpcrdma_rs_put_cong(struct rpc_xprt *xprt, struct rpc_rqst *rqst);

/* rpcrdma_rs_backchannel.c */
int rpcrdma_rs_bc_send_reply(struct rpc_rqst *rqst);
int rpcrdma_rs_bc_setup(struct rpc_xprt *xprt, unsigned int reqs);
size_t rpcrdma_rs_bc_maxpayload(struct rpc_xprt *xprt);
unsigned int rpcrdma_rs_bc_num_slots(struct rpc_xprt *xprt);
void rpcrdma_rs_bc_free_rqst(struct rpc_rqst *rqst);
void rpcrdma_rs_bc_destroy(struct rpc_xprt *xprt, unsigned int reqs);

#endif /* RPCRDMA_RS_SUNRPC_H */
