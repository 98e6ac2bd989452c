/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The module parameters of rpcrdma_rs.ko (rpcrdma_rs_params.c): what the
 * C transport has as /proc/sys/sunrpc/rdma_* sysctls.  Read by bindgen;
 * Rust reads them through rust/sunrpc/params.rs.  Each returns the value
 * now: a write through /sys/module/rpcrdma_rs/parameters/ may change it
 * at any time, and what reads it uses it for one transport or connection.
 * The test hooks' fail_* counts are taken one at a time instead.
 */
#ifndef RPCRDMA_RS_PARAMS_H
#define RPCRDMA_RS_PARAMS_H

#include <linux/types.h>

unsigned int rpcrdma_rs_param_max_inline_read(void);
unsigned int rpcrdma_rs_param_max_inline_write(void);
unsigned int rpcrdma_rs_param_slot_table_entries(void);
#ifdef RPCRDMA_RS_TEST_HOOKS
bool rpcrdma_rs_param_ignore_peer_private(void);
int rpcrdma_rs_param_chain_cut(u32 nregs);
bool rpcrdma_rs_param_fail_connect(void);
bool rpcrdma_rs_param_fail_map(void);
#endif

#endif /* RPCRDMA_RS_PARAMS_H */
