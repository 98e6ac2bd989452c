// SPDX-License-Identifier: GPL-2.0
/*
 * The requests' xdr_bufs for rpcrdma_rs.ko (from the C rpc_rdma.c):
 * describing both buffers for chunk planning, reading a Call, placing an
 * inline Reply (rpcrdma_inline_fixup), and finding, completing and
 * releasing requests by XID.
 */
#include <linux/highmem.h>
#include <linux/sunrpc/auth.h>
#include <linux/sunrpc/sched.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/xdr.h>
#include <linux/unaligned.h>

#include "rpcrdma_rs_helpers.h"

u32 rpcrdma_rs_rqst_xid(const struct rpc_rqst *rqst)
{
	return be32_to_cpu(rqst->rq_xid);
}

void rpcrdma_rs_rqst_rcv_room(const struct rpc_rqst *rqst, u32 *buflen,
			      u32 *page_len)
{
	*buflen = rqst->rq_rcv_buf.buflen;
	*page_len = rqst->rq_rcv_buf.page_len;
}

struct rpc_rqst *rpcrdma_rs_lookup_pin(struct rpc_xprt *xprt, u32 xid)
{
	struct rpc_rqst *rqst;

	spin_lock(&xprt->queue_lock);
	rqst = xprt_lookup_rqst(xprt, cpu_to_be32(xid));
	if (rqst)
		xprt_pin_rqst(rqst);
	spin_unlock(&xprt->queue_lock);
	return rqst;
}

static int rpcrdma_rs_alloc_sparse_pages(struct xdr_buf *buf)
{
	unsigned int i, npages;

	if (!(buf->flags & XDRBUF_SPARSE_PAGES) || !buf->page_len)
		return 0;
	npages = (buf->page_base + buf->page_len + PAGE_SIZE - 1) >> PAGE_SHIFT;
	for (i = buf->page_base >> PAGE_SHIFT; i < npages; i++) {
		if (buf->pages[i])
			continue;
		buf->pages[i] = alloc_page(GFP_NOWAIT | __GFP_NOWARN);
		if (!buf->pages[i])
			return -ENOMEM;
	}
	return 0;
}

static void rpcrdma_rs_describe(const struct xdr_buf *buf, bool ddp,
				bool ddp_allowed,
				struct rpcrdma_rs_xdr_layout *out)
{
	out->buf = NULL;
	out->head = buf->head[0].iov_base;
	out->head_len = buf->head[0].iov_len;
	out->pages = buf->pages;
	out->page_base = buf->page_base;
	out->page_len = buf->page_len;
	out->tail = buf->tail[0].iov_base;
	out->tail_len = buf->tail[0].iov_len;
	out->buflen = buf->buflen;
	out->len = buf->len;
	out->ddp = ddp;
	out->ddp_allowed = ddp_allowed;
}

/*
 * Describes the Call's send buffer into @call and, unless @reply is NULL
 * (a backchannel reply expects none), the Reply's receive buffer into
 * @reply, for chunk planning and registration: one call per Call.  Sparse
 * receive pages are allocated first: they are about to be registered; if
 * that fails, the error is returned and @reply must not be used.  Only
 * @call names its xdr_buf, for rpcrdma_rs_xdr_read(): the send buffer
 * does not change while the Call is transmitted, and a reply to an
 * earlier transmission may be placed in the receive buffer meanwhile.
 */
int rpcrdma_rs_rqst_layouts(struct rpc_rqst *rqst,
			    struct rpcrdma_rs_xdr_layout *call,
			    struct rpcrdma_rs_xdr_layout *reply)
{
	/*
	 * Security flavors that checksum or encrypt the payload (krb5i,
	 * krb5p) forbid DDP.  RPCAUTH_AUTH_DATATOUCH is a bit number.
	 */
	bool allowed = !(rqst->rq_cred &&
			 test_bit(RPCAUTH_AUTH_DATATOUCH,
				  &rqst->rq_cred->cr_auth->au_flags));
	struct xdr_buf *snd = &rqst->rq_snd_buf, *rcv = &rqst->rq_rcv_buf;
	int rc;

	rpcrdma_rs_describe(snd, !!(snd->flags & XDRBUF_WRITE), allowed, call);
	call->buf = snd;
	if (!reply)
		return 0;
	rc = rpcrdma_rs_alloc_sparse_pages(rcv);
	rpcrdma_rs_describe(rcv, !!(rcv->flags & XDRBUF_READ), allowed, reply);
	return rc;
}

int rpcrdma_rs_xdr_read(const struct xdr_buf *buf, u32 offset, void *out,
			u32 len)
{
	return read_bytes_from_xdr_buf(buf, offset, out, len);
}

static void rpcrdma_rs_copy_to_pages(struct page **pages, unsigned int base,
				     const char *src, unsigned int len)
{
	while (len) {
		struct page *page = pages[base >> PAGE_SHIFT];
		unsigned int off = offset_in_page(base);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - off);

		memcpy_to_page(page, off, src, n);
		src += n;
		base += n;
		len -= n;
	}
}

/*
 * Copies the inline part of an RPC Reply (@len bytes at @data) into the
 * request's receive buffer: the head first, then the pages (unless
 * @writelist bytes of the Reply were placed there by RDMA Write), then the
 * tail.  A head left partly empty by such a reduced Reply is trimmed so
 * that the decoder does not move the placed data.  What does not fit the
 * tail is left out, as the C transport and TCP do (the upper layer sized
 * the buffer for the largest reply it can decode): *@dropped says how
 * much.  Returns the bytes copied into pages, or -ENOMEM with nothing
 * written.
 */
int rpcrdma_rs_rqst_deliver(struct rpc_rqst *rqst, const void *data, u32 len,
			    u32 writelist, u32 *dropped)
{
	struct xdr_buf *rcv = &rqst->rq_rcv_buf;
	struct xdr_buf *priv = &rqst->rq_private_buf;
	const char *src = data;
	unsigned int copy_len = len, curlen, delta, fixup = 0;
	int rc;

	rc = rpcrdma_rs_alloc_sparse_pages(priv);
	if (rc)
		return rc;

	curlen = rcv->head[0].iov_len;
	if (curlen > copy_len) {
		if (writelist) {
			delta = curlen - copy_len;
			rcv->head[0].iov_len = copy_len;
			priv->head[0].iov_len = copy_len;
			rcv->buflen -= delta;
			priv->buflen -= delta;
		}
		curlen = copy_len;
	}
	memcpy(rcv->head[0].iov_base, src, curlen);
	src += curlen;
	copy_len -= curlen;

	/*
	 * With a Write chunk the pages hold the data item, placed by the
	 * server: what follows the head inline follows that item in the XDR
	 * stream, and goes to the tail, never into the pages (C's
	 * rpcrdma_inline_fixup copies it over the start of the data). No
	 * upper layer decodes past such an item (a READ's data ends its
	 * reply), so it is kept only to be out of the data's way. A head the
	 * upper layer sized larger than what precedes the item takes such
	 * bytes in instead, and its decoder shifts the data by them: a Write
	 * chunk has no position, so the transport cannot tell where the item
	 * was cut out.
	 */
	if (copy_len && rcv->page_len && !writelist) {
		unsigned int n = min(copy_len, rcv->page_len);

		rpcrdma_rs_copy_to_pages(rcv->pages, rcv->page_base, src, n);
		src += n;
		copy_len -= n;
		fixup = n;
	}
	*dropped = 0;
	if (copy_len) {
		/*
		 * The Write chunk's data has an implicit XDR pad, which the
		 * reply's length counts and xdr_read_pages() skips at the
		 * start of the tail: what follows goes after it.
		 */
		unsigned int tail = rcv->tail[0].iov_len;
		unsigned int pad = min_t(unsigned int, xdr_pad_size(writelist), tail);
		unsigned int n = min_t(unsigned int, copy_len, tail - pad);

		memset(rcv->tail[0].iov_base, 0, pad);
		memmove(rcv->tail[0].iov_base + pad, src, n);
		*dropped = copy_len - n;
	}
	return fixup;
}

/*
 * Reads the first word of @rqst's receive buffer, where the RPC message a
 * Reply chunk carries starts (its XID); false if the head has none.
 */
bool rpcrdma_rs_rqst_rcv_word0(const struct rpc_rqst *rqst, u32 *word)
{
	const struct kvec *head = &rqst->rq_rcv_buf.head[0];

	if (!head->iov_base || head->iov_len < sizeof(__be32))
		return false;
	*word = get_unaligned_be32(head->iov_base);
	return true;
}

/*
 * Completes a pinned request with @result bytes received, or fails it with
 * @result as a negative errno (as the C transport does for a bad reply).
 */
void rpcrdma_rs_complete_unpin(struct rpc_rqst *rqst, int result)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;

	spin_lock(&xprt->queue_lock);
	if (result < 0) {
		rqst->rq_task->tk_status = result;
		result = 0;
	}
	xprt_complete_rqst(rqst->rq_task, result);
	xprt_unpin_rqst(rqst);
	spin_unlock(&xprt->queue_lock);
}

/*
 * Lets go of a pinned request without completing it: it stays waiting for
 * a reply, and is retransmitted once the connection is re-established (C:
 * rpcrdma_unpin_rqst, for a reply whose invalidation was flushed).
 */
void rpcrdma_rs_unpin(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;

	spin_lock(&xprt->queue_lock);
	xprt_unpin_rqst(rqst);
	spin_unlock(&xprt->queue_lock);
}
