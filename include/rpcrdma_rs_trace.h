/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tracepoints of rpcrdma_rs.ko, under rpcrdma_rs: in tracefs: the
 * events an administrator debugs a mount with.  Only
 * rpcrdma_rs_trace.c includes this file (twice over, through
 * define_trace.h); Rust fires the events through the functions that file
 * defines (rpcrdma_rs_trace_calls.h), as it cannot call the static inline
 * trace_*() these macros make.  bindgen never reads this file.
 *
 * Every event of a transport records the server's address as sunrpc shows
 * it (peer=).  The strings Rust passes come as a pointer and a length
 * (__string_len), at most RPCRDMA_RS_TRACE_STR_MAX bytes.  A string that
 * may hold spaces is the last field an event prints.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rpcrdma_rs

#if !defined(RPCRDMA_RS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RPCRDMA_RS_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
/* rdma_show_wc_status(); it needs the three above. */
#include <trace/misc/rdma.h>

/*
 * A connection attempt ended: connected (result 0) or failed (-errno).
 * device is the RDMA device the route went through ("-" when the attempt
 * failed before one was found); credits are those the connection asks of
 * the server (0 when the attempt failed before they were known).
 */
TRACE_EVENT(rpcrdma_rs_connect,
	TP_PROTO(const char *peer, const char *device, size_t device_len,
		 int result, u32 credits),
	TP_ARGS(peer, device, device_len, result, credits),
	TP_STRUCT__entry(
		__string(peer, peer)
		__string_len(device, device, device_len)
		__field(int, result)
		__field(u32, credits)
	),
	TP_fast_assign(
		__assign_str(peer);
		__assign_str(device);
		__entry->result = result;
		__entry->credits = credits;
	),
	TP_printk("peer=%s device=%s result=%d credits=%u",
		  __get_str(peer), __get_str(device), __entry->result,
		  __entry->credits)
);

/*
 * An established connection ended, once per connection: lost (the reason
 * the kernel log gives, e.g. "DISCONNECTED", "Send flushed", "RPC timed
 * out") or closed by the client ("closed": idle, unmount, sunrpc's
 * autoclose, an injected disconnect).
 */
TRACE_EVENT(rpcrdma_rs_disconnect,
	TP_PROTO(const char *peer, const char *reason, size_t reason_len),
	TP_ARGS(peer, reason, reason_len),
	TP_STRUCT__entry(
		__string(peer, peer)
		__string_len(reason, reason, reason_len)
	),
	TP_fast_assign(
		__assign_str(peer);
		__assign_str(reason);
	),
	TP_printk("peer=%s reason=%s", __get_str(peer), __get_str(reason))
);

/*
 * A connection was established: what the server's RFC 8797 private data
 * said (valid=1 and its sizes and R flag; valid=0, zeros, and why not in
 * status) and the inline thresholds the connection uses.
 */
TRACE_EVENT(rpcrdma_rs_private_data,
	TP_PROTO(const char *peer, bool valid, u32 peer_send, u32 peer_recv,
		 bool peer_rinv, u32 inline_send, u32 inline_recv,
		 const char *status, size_t status_len),
	TP_ARGS(peer, valid, peer_send, peer_recv, peer_rinv, inline_send,
		inline_recv, status, status_len),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(bool, valid)
		__field(bool, peer_rinv)
		__field(u32, peer_send)
		__field(u32, peer_recv)
		__field(u32, inline_send)
		__field(u32, inline_recv)
		__string_len(status, status, status_len)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->valid = valid;
		__entry->peer_rinv = peer_rinv;
		__entry->peer_send = peer_send;
		__entry->peer_recv = peer_recv;
		__entry->inline_send = inline_send;
		__entry->inline_recv = inline_recv;
		__assign_str(status);
	),
	TP_printk("peer=%s valid=%u peer_send=%u peer_recv=%u peer_rinv=%u inline_send=%u inline_recv=%u status=%s",
		  __get_str(peer), __entry->valid, __entry->peer_send,
		  __entry->peer_recv, __entry->peer_rinv,
		  __entry->inline_send, __entry->inline_recv,
		  __get_str(status))
);

/*
 * A received message the transport could not use as the reply it claims
 * to be, or an RDMA_ERROR.  kind is one word (rdma_error, short,
 * malformed, bad_chunk, duplicate, unknown_xid); detail is what the
 * kernel log says of it.  xid is 0 when the message was too short to
 * hold one.
 */
TRACE_EVENT(rpcrdma_rs_reply_error,
	TP_PROTO(const char *peer, u32 xid, const char *kind, size_t kind_len,
		 const char *detail, size_t detail_len),
	TP_ARGS(peer, xid, kind, kind_len, detail, detail_len),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(u32, xid)
		__string_len(kind, kind, kind_len)
		__string_len(detail, detail, detail_len)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->xid = xid;
		__assign_str(kind);
		__assign_str(detail);
	),
	TP_printk("peer=%s xid=0x%08x kind=%s detail=%s", __get_str(peer),
		  __entry->xid, __get_str(kind), __get_str(detail))
);

/* The server's credit grant changed (the first reply of a connection
 * changes it from 1). */
TRACE_EVENT(rpcrdma_rs_credits,
	TP_PROTO(const char *peer, u32 old, u32 new),
	TP_ARGS(peer, old, new),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(u32, old)
		__field(u32, new)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->old = old;
		__entry->new = new;
	),
	TP_printk("peer=%s old=%u new=%u", __get_str(peer), __entry->old,
		  __entry->new)
);

/*
 * A memory region's REG_MR or LOCAL_INV failed (not flushed: flushes
 * follow every connection loss).  mr is the region's index in its
 * connection's pool; status the work completion status.
 */
TRACE_EVENT(rpcrdma_rs_mr_error,
	TP_PROTO(const char *peer, const char *op, size_t op_len, u32 mr,
		 u32 status, u32 vendor_err),
	TP_ARGS(peer, op, op_len, mr, status, vendor_err),
	TP_STRUCT__entry(
		__string(peer, peer)
		__string_len(op, op, op_len)
		__field(u32, mr)
		__field(u32, status)
		__field(u32, vendor_err)
	),
	TP_fast_assign(
		__assign_str(peer);
		__assign_str(op);
		__entry->mr = mr;
		__entry->status = status;
		__entry->vendor_err = vendor_err;
	),
	TP_printk("peer=%s op=%s mr=%u vendor_err=0x%x status=%s (%u)",
		  __get_str(peer), __get_str(op), __entry->mr,
		  __entry->vendor_err, rdma_show_wc_status(__entry->status),
		  __entry->status)
);

/*
 * A Send or a Receive failed (not flushed: flushes follow every
 * connection loss, whose own event says why).  op is "Send" or
 * "Receive"; status the work completion status, vendor_err the device's
 * own code for it.
 */
TRACE_EVENT(rpcrdma_rs_wc_error,
	TP_PROTO(const char *peer, const char *op, size_t op_len, u32 status,
		 u32 vendor_err),
	TP_ARGS(peer, op, op_len, status, vendor_err),
	TP_STRUCT__entry(
		__string(peer, peer)
		__string_len(op, op, op_len)
		__field(u32, status)
		__field(u32, vendor_err)
	),
	TP_fast_assign(
		__assign_str(peer);
		__assign_str(op);
		__entry->status = status;
		__entry->vendor_err = vendor_err;
	),
	TP_printk("peer=%s op=%s vendor_err=0x%x status=%s (%u)",
		  __get_str(peer), __get_str(op), __entry->vendor_err,
		  rdma_show_wc_status(__entry->status), __entry->status)
);

/*
 * sunrpc asked for a connection: the attempt starts after delay_ms
 * milliseconds (0, or the reconnect backoff after a failed attempt or a
 * fault of the server).  rpcrdma_rs_connect says how it ended.
 */
TRACE_EVENT(rpcrdma_rs_op_connect,
	TP_PROTO(const char *peer, unsigned int delay_ms),
	TP_ARGS(peer, delay_ms),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(unsigned int, delay_ms)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->delay_ms = delay_ms;
	),
	TP_printk("peer=%s delay_ms=%u", __get_str(peer), __entry->delay_ms)
);

/* How a Call goes (rtype) and how its Reply may come back (wtype). */
#define rpcrdma_rs_show_rtype(t)					\
	__print_symbolic(t, { 0, "inline" }, { 1, "read" }, { 2, "long" })
#define rpcrdma_rs_show_wtype(t)					\
	__print_symbolic(t, { 0, "inline" }, { 1, "write" }, { 2, "reply" })

/*
 * A Call is being posted: its transport header is hdr bytes, followed by
 * inline bytes of the Call; rtype says whether the rest goes in a Read
 * chunk ("read") or the whole Call does ("long": RDMA_NOMSG), wtype
 * whether the Reply's page data comes in a Write chunk or the whole
 * Reply in a Reply chunk.  Backchannel replies are rpcrdma_rs_cb_reply.
 */
TRACE_EVENT(rpcrdma_rs_marshal,
	TP_PROTO(const char *peer, u32 xid, u32 hdr, u32 inline_len,
		 unsigned int rtype, unsigned int wtype),
	TP_ARGS(peer, xid, hdr, inline_len, rtype, wtype),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(u32, xid)
		__field(u32, hdr)
		__field(u32, inline_len)
		__field(unsigned int, rtype)
		__field(unsigned int, wtype)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->xid = xid;
		__entry->hdr = hdr;
		__entry->inline_len = inline_len;
		__entry->rtype = rtype;
		__entry->wtype = wtype;
	),
	TP_printk("peer=%s xid=0x%08x hdr=%u inline=%u rtype=%s wtype=%s",
		  __get_str(peer), __entry->xid, __entry->hdr,
		  __entry->inline_len, rpcrdma_rs_show_rtype(__entry->rtype),
		  rpcrdma_rs_show_wtype(__entry->wtype))
);

#define rpcrdma_rs_show_chunk(k)					\
	__print_symbolic(k, { 0, "read" }, { 1, "write" }, { 2, "pad" },	\
			 { 3, "reply" })

/*
 * One segment a Call's header advertised, memory registered for the
 * server to read (a Read chunk's, at XDR position pos) or to write (a
 * Write chunk's, its XDR pad's, or the Reply chunk's; pos 0).
 */
TRACE_EVENT(rpcrdma_rs_chunk,
	TP_PROTO(const char *peer, u32 xid, unsigned int kind, u32 pos,
		 u32 handle, u32 length, u64 offset),
	TP_ARGS(peer, xid, kind, pos, handle, length, offset),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(u32, xid)
		__field(unsigned int, kind)
		__field(u32, pos)
		__field(u32, handle)
		__field(u32, length)
		__field(u64, offset)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->xid = xid;
		__entry->kind = kind;
		__entry->pos = pos;
		__entry->handle = handle;
		__entry->length = length;
		__entry->offset = offset;
	),
	TP_printk("peer=%s xid=0x%08x kind=%s pos=%u handle=0x%08x length=%u offset=0x%016llx",
		  __get_str(peer), __entry->xid,
		  rpcrdma_rs_show_chunk(__entry->kind), __entry->pos,
		  __entry->handle, __entry->length,
		  (unsigned long long)__entry->offset)
);

#define rpcrdma_rs_show_proc(p)						\
	__print_symbolic(p, { 0, "RDMA_MSG" }, { 1, "RDMA_NOMSG" },	\
			 { 4, "RDMA_ERROR" })

/*
 * A reply arrived, its transport header decoded: the server's credit
 * grant in it (as sent, before it is held to what the client asked
 * for), and its proc.
 */
TRACE_EVENT(rpcrdma_rs_reply,
	TP_PROTO(const char *peer, u32 xid, u32 credits, u32 proc),
	TP_ARGS(peer, xid, credits, proc),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(u32, xid)
		__field(u32, credits)
		__field(u32, proc)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->xid = xid;
		__entry->credits = credits;
		__entry->proc = proc;
	),
	TP_printk("peer=%s xid=0x%08x credits=%u proc=%s", __get_str(peer),
		  __entry->xid, __entry->credits,
		  rpcrdma_rs_show_proc(__entry->proc))
);

/*
 * No memory region was free for RPC xid's chunks: it waits for a reply
 * to bring one back (counted in debugfs as mr_waits).
 */
TRACE_EVENT(rpcrdma_rs_mr_wait,
	TP_PROTO(const char *peer, u32 xid),
	TP_ARGS(peer, xid),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(u32, xid)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->xid = xid;
	),
	TP_printk("peer=%s xid=0x%08x", __get_str(peer), __entry->xid)
);

/*
 * RPC xid's chunks could not be mapped for the device (result, a
 * negative errno): the Call fails to marshal.
 */
TRACE_EVENT(rpcrdma_rs_map_error,
	TP_PROTO(const char *peer, u32 xid, int result),
	TP_ARGS(peer, xid, result),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(u32, xid)
		__field(int, result)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->xid = xid;
		__entry->result = result;
	),
	TP_printk("peer=%s xid=0x%08x result=%d", __get_str(peer),
		  __entry->xid, __entry->result)
);

DECLARE_EVENT_CLASS(rpcrdma_rs_cb_class,
	TP_PROTO(const char *peer, u32 xid, u32 len),
	TP_ARGS(peer, xid, len),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(u32, xid)
		__field(u32, len)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->xid = xid;
		__entry->len = len;
	),
	TP_printk("peer=%s xid=0x%08x len=%u", __get_str(peer),
		  __entry->xid, __entry->len)
);

/* A backchannel Call of len bytes came from the server, for the callback
 * service. */
DEFINE_EVENT(rpcrdma_rs_cb_class, rpcrdma_rs_cb_call,
	TP_PROTO(const char *peer, u32 xid, u32 len),
	TP_ARGS(peer, xid, len));

/* The client posted its reply, len bytes, to backchannel Call xid. */
DEFINE_EVENT(rpcrdma_rs_cb_class, rpcrdma_rs_cb_reply,
	TP_PROTO(const char *peer, u32 xid, u32 len),
	TP_ARGS(peer, xid, len));

/*
 * An RDMA device is going away.  Each connection through it is lost
 * after this, with rpcrdma_rs_disconnect reason=DEVICE_REMOVAL.  It also
 * fires for every device when the module unloads (no connection is left
 * then).
 */
TRACE_EVENT(rpcrdma_rs_device_removal,
	TP_PROTO(const char *device, size_t device_len, u32 index),
	TP_ARGS(device, device_len, index),
	TP_STRUCT__entry(
		__string_len(device, device, device_len)
		__field(u32, index)
	),
	TP_fast_assign(
		__assign_str(device);
		__entry->index = index;
	),
	TP_printk("device=%s index=%u", __get_str(device), __entry->index)
);

#endif /* RPCRDMA_RS_TRACE_H */

/*
 * Out of tree, define_trace.h finds this file through the include path:
 * Kbuild adds $(src)/include.
 */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rpcrdma_rs_trace
#include <trace/define_trace.h>
