// SPDX-License-Identifier: GPL-2.0
/*
 * Work requests on a connection's QP: Receives posted under RCU against
 * the QP's shutdown, a Call's REG_MRs and Send as one chain, LOCAL_INVs as
 * another, and the drain at the connection's end (ib_drain_qp(), but
 * saying when it could not be posted).  ib_post_send() and ib_post_recv()
 * are static inlines; the chains point into the caller's stack and are
 * unlinked before returning.  With the test hooks, a chained post can be
 * made to fail part-way (chain_cut_every).
 */
#include <linux/completion.h>
#include <linux/rcupdate.h>
#include <rdma/ib_verbs.h>

#include "rpcrdma_rs_helpers.h"
#include "rpcrdma_rs_params.h"

/* ib_post_recv() is a static inline; one buffer, one SGE. */
/*
 * Posts one Receive on *@qp while *@open, under the RCU read lock: the
 * QP's shutdown clears *@open and waits for a grace period before it
 * destroys the QP, so a post either finds it closed or is over by then,
 * without a lock of its own.  *@posted says the QP holds the buffer: set
 * before the post, and cleared again if it fails.
 */
int rpcrdma_rs_post_recv(struct ib_qp *const *qp, const bool *open,
			 bool *posted, struct ib_cqe *cqe, u64 addr, u32 len,
			 u32 lkey)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_recv_wr wr = { .wr_cqe = cqe, .sg_list = &sge, .num_sge = 1 };
	int rc = -ENOTCONN;

	rcu_read_lock();
	/* Acquire: *@qp was set before *@open. */
	if (smp_load_acquire(open)) {
		WRITE_ONCE(*posted, true);
		rc = ib_post_recv(READ_ONCE(*qp), &wr, NULL);
		if (rc)
			WRITE_ONCE(*posted, false);
	}
	rcu_read_unlock();
	return rc;
}

/* After this, no rpcrdma_rs_post_recv() that found its QP open is running. */
void rpcrdma_rs_synchronize_rcu(void)
{
	synchronize_rcu();
}

/*
 * Fills @wr, a region's own work request, as an unsignaled IB_WR_REG_MR of
 * @mr with its current key; @cqe sees it only if it fails or is flushed.
 */
void rpcrdma_rs_prep_reg_wr(struct ib_reg_wr *wr, struct ib_mr *mr,
			    bool writing, struct ib_cqe *cqe)
{
	*wr = (struct ib_reg_wr){
		.wr = {
			.opcode = IB_WR_REG_MR,
			.wr_cqe = cqe,
		},
		.mr = mr,
		.key = mr->rkey,
		.access = writing ?
			  IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE :
			  IB_ACCESS_REMOTE_READ,
	};
}

#ifdef RPCRDMA_RS_TEST_HOOKS
/*
 * The chain_cut_every test hook, as a device that fails a post: it takes
 * the first @k work requests of the chain and names the next as failed,
 * for k from 0 to @nregs, or (k = @nregs + 1) takes them all and names
 * none.
 */
static int rpcrdma_rs_post_cut(struct ib_qp *qp, struct ib_reg_wr *const *regs,
			       u32 nregs, const struct ib_send_wr *send, u32 k,
			       const struct ib_send_wr **bad)
{
	const struct ib_send_wr *next = k < nregs ? &regs[k]->wr : send;
	int rc = 0;

	if (k > nregs) {
		rc = ib_post_send(qp, nregs ? &regs[0]->wr : send, bad);
		if (!rc)
			rc = -EIO;
	} else if (k > 0) {
		regs[k - 1]->wr.next = NULL;
		rc = ib_post_send(qp, &regs[0]->wr, bad);
		/* A failure naming nothing took no more than the prefix. */
		if (rc && !*bad)
			*bad = next;
	}
	if (!rc) {
		*bad = next;
		rc = -EIO;
	}
	return rc;
}
#endif

/* Posts the linked chain, or lets the test hook cut it. */
static int rpcrdma_rs_post_send_chain(struct ib_qp *qp,
				      struct ib_reg_wr *const *regs, u32 nregs,
				      const struct ib_send_wr *send,
				      const struct ib_send_wr **bad)
{
#ifdef RPCRDMA_RS_TEST_HOOKS
	int k = rpcrdma_rs_param_chain_cut(nregs);

	if (k >= 0)
		return rpcrdma_rs_post_cut(qp, regs, nregs, send, k, bad);
#endif
	return ib_post_send(qp, nregs ? &regs[0]->wr : send, bad);
}

/*
 * One ib_post_send() of the @nregs prepared REG_MRs @regs, in order, and
 * then a Send of one buffer (@nregs may be 0), as the C transport's
 * frwr_send() chains them.  Unless @signaled, @cqe sees the Send only if
 * it fails or is flushed.  A device may take a prefix of a chain:
 * *@taken says how many work requests it may have taken, the REG_MRs
 * first (@nregs + 1 when it took them all, as whenever this returns 0).
 */
int rpcrdma_rs_post_chain(struct ib_qp *qp, struct ib_reg_wr *const *regs,
			  u32 nregs, struct ib_cqe *cqe, u64 addr, u32 len,
			  u32 lkey, bool signaled, u32 *taken)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_send_wr send = {
		.wr_cqe = cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = signaled ? IB_SEND_SIGNALED : 0,
	};
	const struct ib_send_wr *bad = NULL;
	u32 i;
	int rc;

	for (i = 0; i < nregs; i++)
		regs[i]->wr.next = i + 1 < nregs ? &regs[i + 1]->wr : &send;
	rc = rpcrdma_rs_post_send_chain(qp, regs, nregs, &send, &bad);
	/* The chain's end was on this stack: leave no pointer to it. */
	for (i = 0; i < nregs; i++)
		regs[i]->wr.next = NULL;
	if (!rc) {
		*taken = nregs + 1;
		return 0;
	}
	/*
	 * What came before @bad was taken.  A @bad that is none of the chain
	 * says nothing (siw returns an error after queueing the whole chain
	 * when it cannot start sending it, leaving @bad NULL): count the whole
	 * chain as taken.  Its completions, or the QP's end, then hand back
	 * what it holds; taking a request that was not taken for one that was
	 * only keeps memory mapped longer.
	 */
	if (bad == &send) {
		*taken = nregs;
		return rc;
	}
	for (i = 0; i < nregs && bad != &regs[i]->wr; i++)
		;
	*taken = i < nregs ? i : nregs + 1;
	return rc;
}

/* Fills a region's LOCAL_INV of @rkey, for rpcrdma_rs_post_local_invs. */
void rpcrdma_rs_prep_inv_wr(struct ib_send_wr *wr, u32 rkey,
			    struct ib_cqe *cqe, bool signaled)
{
	*wr = (struct ib_send_wr){
		.opcode = IB_WR_LOCAL_INV,
		.wr_cqe = cqe,
		.ex.invalidate_rkey = rkey,
		.send_flags = signaled ? IB_SEND_SIGNALED : 0,
	};
}

/*
 * Posts the LOCAL_INVs @wrs[0..@n] in one chain (C: frwr_unmap_async);
 * *@taken is how many of them, from the first, the QP may have taken.
 */
int rpcrdma_rs_post_local_invs(struct ib_qp *qp, struct ib_send_wr *const *wrs,
			       u32 n, u32 *taken)
{
	const struct ib_send_wr *bad = NULL;
	u32 i;
	int rc;

	*taken = 0;
	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		wrs[i]->next = i + 1 < n ? wrs[i + 1] : NULL;
	rc = ib_post_send(qp, wrs[0], &bad);
	if (!rc) {
		*taken = n;
		return 0;
	}
	/* Those before the one named failed were taken; none named: unknown. */
	*taken = n;
	for (i = 0; bad && i < n; i++)
		if (wrs[i] == bad) {
			*taken = i;
			break;
		}
	return rc;
}

struct rpcrdma_rs_drain {
	struct ib_cqe cqe;
	struct completion done;
};

static void rpcrdma_rs_drain_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rpcrdma_rs_drain *d =
		container_of(wc->wr_cqe, struct rpcrdma_rs_drain, cqe);

	complete(&d->done);
}

/*
 * ib_drain_qp(), but telling its caller when a drain could not be posted
 * (ib_drain_qp() only warns): then completions may still come, and the
 * caller must not free what they refer to before the QP and its CQs are
 * gone.  A queue whose device drains it its own way is drained so.
 */
int rpcrdma_rs_drain_qp(struct ib_qp *qp)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct rpcrdma_rs_drain sd, rd;
	struct ib_rdma_wr swr = {
		.wr = {
			.wr_cqe = &sd.cqe,
			.opcode = IB_WR_RDMA_WRITE,
		},
	};
	struct ib_recv_wr rwr = { .wr_cqe = &rd.cqe };
	int rc;

	rc = ib_modify_qp(qp, &attr, IB_QP_STATE);
	if (rc)
		return rc;
	if (qp->device->ops.drain_sq) {
		ib_drain_sq(qp);
	} else {
		sd.cqe.done = rpcrdma_rs_drain_done;
		init_completion(&sd.done);
		rc = ib_post_send(qp, &swr.wr, NULL);
		if (rc)
			return rc;
		wait_for_completion(&sd.done);
	}
	if (qp->device->ops.drain_rq) {
		ib_drain_rq(qp);
	} else {
		rd.cqe.done = rpcrdma_rs_drain_done;
		init_completion(&rd.done);
		rc = ib_post_recv(qp, &rwr, NULL);
		if (rc)
			return rc;
		wait_for_completion(&rd.done);
	}
	return 0;
}
