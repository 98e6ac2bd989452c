// SPDX-License-Identifier: GPL-2.0
/*
 * The NFSv4.1 backchannel of rpcrdma_rs.ko (the C backchannel.c).
 *
 * The NFSv4.1 backchannel (RFC 8167): the server's callbacks arrive as
 * RDMA_MSG Calls on this connection.  Each is copied into a request from
 * xprt->bc_pa_list (made on demand, up to a limit), queued to the
 * callback service, and its reply sent inline by send_request.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/sunrpc/bc_xprt.h>
#include <linux/sunrpc/sched.h>
#include <linux/sunrpc/svc.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/xdr.h>

#include "rpcrdma_rs_helpers.h"
#include "rpcrdma_rs_ops.h"
#include "rpcrdma_rs_sunrpc.h"
#include "rpcrdma_rs_trace_calls.h"
#define RPCRDMA_RS_BC_MAX_ALLOC		(2 * RPCRDMA_RS_BC_SLOTS)

struct rpcrdma_rs_bc_rqst {
	struct rpc_rqst rqst;
	char rcvbuf[PAGE_SIZE];
	char sndbuf[PAGE_SIZE];
};

int rpcrdma_rs_bc_send_reply(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;
	int rc;

	if (!xprt_connected(xprt))
		return -ENOTCONN;
	if (!rpcrdma_rs_get_cong(xprt, rqst))
		return -EBADSLT;
	rc = rpcrdma_rs_op_send_request(rs_xprt(xprt)->transport, xprt, rqst,
					true);
	if (rc)
		rpcrdma_rs_put_cong(xprt, rqst);
	if (rc == -ENOTCONN) {
		rpcrdma_rs_close(xprt);
		return -ENOTCONN;
	}
	return rc;
}

int rpcrdma_rs_bc_setup(struct rpc_xprt *xprt, unsigned int reqs)
{
	return 0;
}

size_t rpcrdma_rs_bc_maxpayload(struct rpc_xprt *xprt)
{
	return rpcrdma_rs_op_bc_maxpayload(rs_xprt(xprt)->transport);
}

unsigned int rpcrdma_rs_bc_num_slots(struct rpc_xprt *xprt)
{
	return RPCRDMA_RS_BC_SLOTS;
}

void rpcrdma_rs_bc_free_rqst(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;

	spin_lock(&xprt->bc_pa_lock);
	list_add_tail(&rqst->rq_bc_pa_list, &xprt->bc_pa_list);
	spin_unlock(&xprt->bc_pa_lock);
	xprt_put(xprt);
}

void rpcrdma_rs_bc_destroy(struct rpc_xprt *xprt, unsigned int reqs)
{
	struct rpc_rqst *rqst, *tmp;
	LIST_HEAD(doomed);

	/* bc_alloc_count is bc_pa_lock's, as in backchannel_rqst.c. */
	spin_lock(&xprt->bc_pa_lock);
	list_splice_init(&xprt->bc_pa_list, &doomed);
	xprt->bc_alloc_count -= list_count_nodes(&doomed);
	spin_unlock(&xprt->bc_pa_lock);
	list_for_each_entry_safe(rqst, tmp, &doomed, rq_bc_pa_list) {
		list_del(&rqst->rq_bc_pa_list);
		kfree(container_of(rqst, struct rpcrdma_rs_bc_rqst, rqst));
	}
}

/*
 * Queues a backchannel Call (@data, @len bytes, starting at the RPC
 * header) to the callback service.  -ENOPROTOOPT: no callback service,
 * so not a Call for us; -ENOBUFS: the server sent more than it may;
 * -EMSGSIZE: too long; -ENOMEM: no memory for another slot.
 */
int rpcrdma_rs_bc_receive_call(struct rpc_xprt *xprt, const void *data,
			       u32 len)
{
	struct svc_serv *bc_serv = xprt->bc_serv;
	struct rpcrdma_rs_bc_rqst *b;
	struct rpc_rqst *rqst;
	struct xdr_buf *buf;
	bool full = false;

	if (!bc_serv)
		return -ENOPROTOOPT;
	if (len > PAGE_SIZE || len < 4)
		return -EMSGSIZE;

	/*
	 * A new request is counted under the lock before it is allocated,
	 * so that the limit holds against rpcrdma_rs_bc_destroy() too.
	 */
	spin_lock(&xprt->bc_pa_lock);
	rqst = list_first_entry_or_null(&xprt->bc_pa_list, struct rpc_rqst,
					rq_bc_pa_list);
	if (rqst)
		list_del(&rqst->rq_bc_pa_list);
	else if (xprt->bc_alloc_count < RPCRDMA_RS_BC_MAX_ALLOC)
		xprt->bc_alloc_count++;
	else
		full = true;
	spin_unlock(&xprt->bc_pa_lock);
	if (rqst) {
		b = container_of(rqst, struct rpcrdma_rs_bc_rqst, rqst);
	} else {
		if (full)
			return -ENOBUFS;
		b = kzalloc(sizeof(*b), GFP_NOWAIT | __GFP_NOWARN);
		if (!b) {
			spin_lock(&xprt->bc_pa_lock);
			xprt->bc_alloc_count--;
			spin_unlock(&xprt->bc_pa_lock);
			return -ENOMEM;
		}
		rqst = &b->rqst;
		rqst->rq_xprt = xprt;
		INIT_LIST_HEAD(&rqst->rq_bc_pa_list);
		__set_bit(RPC_BC_PA_IN_USE, &rqst->rq_bc_pa_state);
	}

	memcpy(b->rcvbuf, data, len);
	xdr_buf_init(&rqst->rq_snd_buf, b->sndbuf, PAGE_SIZE);
	rqst->rq_reply_bytes_recvd = 0;
	rqst->rq_xid = *(const __be32 *)data;
	rqst->rq_private_buf.len = len;
	buf = &rqst->rq_rcv_buf;
	memset(buf, 0, sizeof(*buf));
	buf->head[0].iov_base = b->rcvbuf;
	buf->head[0].iov_len = len;
	buf->len = len;

	/* Traced before the callback service can see (and answer) it. */
	rpcrdma_rs_trace_cb_call(xprt, be32_to_cpu(rqst->rq_xid), len);
	xprt_get(xprt);
	lwq_enqueue(&rqst->rq_bc_list, &bc_serv->sv_cb_list);
	svc_pool_wake_idle_thread(&bc_serv->sv_pools[0]);
	return 0;
}
