/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers linked into rpcrdma_rs.ko: what Rust cannot reach through
 * bindgen (static inline functions, macros, file_operations tables).
 */
#ifndef RPCRDMA_RS_HELPERS_H
#define RPCRDMA_RS_HELPERS_H

#include <linux/types.h>

struct dentry;
struct ib_device;
struct seq_file;

/**
 * struct rpcrdma_rs_show - a read-only debugfs file rendered by a callback
 * @show: fills @m; @data is the pointer given below
 * @data: owner's context, valid until the file is removed
 */
struct rpcrdma_rs_show {
	int (*show)(struct seq_file *m, void *data);
	void *data;
};

struct dentry *rpcrdma_rs_debugfs_create_show(const char *name,
					      struct dentry *parent,
					      struct rpcrdma_rs_show *show);

const char *rpcrdma_rs_ib_device_name(const struct ib_device *device);
u32 rpcrdma_rs_ib_device_index(const struct ib_device *device);

#endif /* RPCRDMA_RS_HELPERS_H */
