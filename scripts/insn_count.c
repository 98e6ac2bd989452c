// SPDX-License-Identifier: GPL-2.0
/*
 * insn_count: a QEMU TCG plugin that counts the instructions a guest
 * executes, for the benchmark's CPU cost per operation (scripts/bench.sh).
 *
 * Under TCG the guest has no PMU, and its clock mostly measures the
 * emulator: CPU time is noise. What a transport costs the client is the
 * instructions it executes, which TCG can count exactly.
 *
 * The guest marks points of its run with insn_mark (scripts/insn_mark.c),
 * which executes one of two instructions that no compiler emits:
 *   66 87 db  xchg %bx,%bx  a mark: write the counts since the last mark;
 *   66 87 c9  xchg %cx,%cx  a profile mark: the same, and each kernel
 *                           translation block that ran since then.
 * Only executions in user space count as marks.
 *
 * Output, to the file given as out=FILE:
 *   mark N kernel K user U        N from 1, K and U instructions
 *   tb ADDRESS INSNS EXECS LOCKED CALLTARGET
 *                                 after a profile mark's line, one line
 *                                 per kernel block that ran since the
 *                                 mark before: ADDRESS (hex) where it
 *                                 starts, INSNS the instructions it ran,
 *                                 EXECS its executions, LOCKED the locked
 *                                 read-modify-writes among INSNS, and
 *                                 CALLTARGET (hex; 0 if none) what its
 *                                 last instruction calls or jumps to when
 *                                 that is a direct near call (E8 rel32)
 *                                 or jump (E9 rel32, EB rel8): a jump
 *                                 that ends a block at another function
 *                                 is a tail call (rust_helper_spin_lock
 *                                 jumps to _raw_spin_lock)
 *   end
 *
 * A block's locked read-modify-writes and its call are found once, when
 * it is translated, from its bytes: an instruction is one if its legacy
 * prefixes (before an optional REX) include LOCK (F0), or if it is XCHG
 * (86, 87) with a memory operand, which is locked without the prefix.
 * The lock and call counts say how often a transport's code takes locks
 * (the calls to the lock functions) and does atomic operations.
 *
 * Each block's executions are counted inline, without a helper call, so
 * that the guest runs almost as fast as without the plugin; the inline
 * add is not atomic, so with several vCPUs running one block at the same
 * moment a count may be lost now and then, and a block that faults part
 * way is counted whole: the counts are close, not exact.
 *
 * Blocks are kept by the host address of their code and their length, so
 * code translated again (user space's libraries in every new process, at
 * another virtual address each time; anything after a code cache flush)
 * counts where it counted before, and the table stays as large as the
 * code the guest runs, not as the number of translations.
 *
 * Built against QEMU's plugin API version 1 (QEMU 7.2, Debian 12): the
 * few declarations used are below, as the API defines them.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- QEMU plugin API, version 1 ---- */
#define PLUGIN_EXPORT __attribute__((visibility("default")))
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t {
	const char *target_name;
	struct {
		int min;
		int cur;
	} version;
	bool system_emulation;
	union {
		struct {
			int smp_vcpus;
			int max_vcpus;
		} system;
	};
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags {
	QEMU_PLUGIN_CB_NO_REGS,
	QEMU_PLUGIN_CB_R_REGS,
	QEMU_PLUGIN_CB_RW_REGS,
};
enum qemu_plugin_op {
	QEMU_PLUGIN_INLINE_ADD_U64,
};
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
					      void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
					    qemu_plugin_vcpu_udata_cb_t cb,
					    enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void *qemu_plugin_insn_haddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb,
				    void *userdata);
/* ---- end of the API ---- */

PLUGIN_EXPORT int qemu_plugin_version = 1;

/* x86-64 kernel addresses: the upper half. */
#define KERNEL_START 0xffff800000000000ULL

/*
 * One per piece of code (host address and length). Never freed:
 * translations still in the code cache add to its counter, and the list
 * is walked without a lock.
 */
struct block {
	uint64_t key;	/* host address of the code, or its address in the guest */
	uint64_t vaddr; /* where the guest first ran it */
	uint64_t insns;
	uint64_t locked; /* locked read-modify-writes among the insns */
	uint64_t call;	 /* target of the direct call ending it, or 0 */
	uint64_t count;	 /* executions, added to inline by the block */
	uint64_t seen;	 /* count at the last mark */
	uint64_t last_n; /* executions between the last two marks */
	struct block *next;
	struct block *chain; /* in its hash bucket */
};

static struct block *blocks; /* pushed with a compare-and-swap */
/* The blocks by key and length; translations look up under the lock. */
#define TABLE_BITS 20
#define BUCKETS (1u << TABLE_BITS)
static struct block **table;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static pthread_mutex_t mark_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t marks;

enum mark { MARK = 1, PROFILE_MARK = 2 };

static void on_mark(unsigned int vcpu_index, void *userdata)
{
	enum mark kind = (enum mark)(uintptr_t)userdata;
	uint64_t kernel = 0, user = 0;
	struct block *b;

	(void)vcpu_index;
	pthread_mutex_lock(&mark_lock);
	if (!out) {
		pthread_mutex_unlock(&mark_lock);
		return;
	}
	/*
	 * Each counter is read once, so that what runs meanwhile counts in
	 * the next mark; the totals line comes before the blocks.
	 */
	for (b = __atomic_load_n(&blocks, __ATOMIC_ACQUIRE); b; b = b->next) {
		uint64_t now = __atomic_load_n(&b->count, __ATOMIC_RELAXED);

		b->last_n = now - b->seen;
		b->seen = now;
		if (b->vaddr >= KERNEL_START)
			kernel += b->last_n * b->insns;
		else
			user += b->last_n * b->insns;
	}
	fprintf(out, "mark %" PRIu64 " kernel %" PRIu64 " user %" PRIu64 "\n", ++marks, kernel,
		user);
	for (b = __atomic_load_n(&blocks, __ATOMIC_ACQUIRE); kind == PROFILE_MARK && b; b = b->next) {
		if (b->last_n && b->vaddr >= KERNEL_START)
			fprintf(out, "tb %" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIx64 "\n",
				b->vaddr, b->last_n * b->insns, b->last_n, b->last_n * b->locked,
				b->call);
	}
	fflush(out);
	pthread_mutex_unlock(&mark_lock);
}

/* The kind of mark INSN is, or 0. */
static enum mark mark_of(const struct qemu_plugin_insn *insn)
{
	const uint8_t *op = qemu_plugin_insn_data(insn);

	if (qemu_plugin_insn_size(insn) != 3 || qemu_plugin_insn_vaddr(insn) >= KERNEL_START)
		return 0;
	if (op[0] != 0x66 || op[1] != 0x87)
		return 0;
	if (op[2] == 0xdb)
		return MARK;
	if (op[2] == 0xc9)
		return PROFILE_MARK;
	return 0;
}

/* Whether B (a legacy prefix of x86-64) is one. */
static bool legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0xf0: case 0xf2: case 0xf3: case 0x2e: case 0x36: case 0x3e:
	case 0x26: case 0x64: case 0x65: case 0x66: case 0x67:
		return true;
	}
	return false;
}

/*
 * Whether INSN is a locked read-modify-write; and, if it is a direct near
 * call (E8 rel32) or jump (E9 rel32, EB rel8), its target in *CALL (left
 * alone otherwise). A jump within a function is told from a tail call by
 * its target, later: only targets that are lock functions count.
 */
static bool decode(const struct qemu_plugin_insn *insn, uint64_t *call)
{
	const uint8_t *op = qemu_plugin_insn_data(insn);
	size_t size = qemu_plugin_insn_size(insn), i = 0;
	bool lock = false;

	while (i < size && legacy_prefix(op[i]))
		lock |= op[i++] == 0xf0;
	if (i < size && (op[i] & 0xf0) == 0x40)
		i++; /* REX */
	if (i >= size)
		return lock;
	if ((op[i] == 0x86 || op[i] == 0x87) && i + 1 < size && (op[i + 1] >> 6) != 3)
		return true; /* XCHG with memory */
	if ((op[i] == 0xe8 || op[i] == 0xe9) && size - i == 5) {
		int32_t rel;

		memcpy(&rel, op + i + 1, sizeof(rel)); /* little-endian, as the host */
		*call = qemu_plugin_insn_vaddr(insn) + size + (uint64_t)(int64_t)rel;
	} else if (op[i] == 0xeb && size - i == 2) {
		*call = qemu_plugin_insn_vaddr(insn) + size + (uint64_t)(int64_t)(int8_t)op[i + 1];
	}
	return lock;
}

/*
 * The block for code at KEY of N instructions, LOCKED of them locked
 * read-modify-writes, ending with a call to CALL (or 0), made if new;
 * NULL if out of memory. Code patched in place (alternatives, static
 * keys) that changes either is another block.
 */
static struct block *block_of(uint64_t key, uint64_t vaddr, size_t n, uint64_t locked,
			      uint64_t call)
{
	uint64_t h = (key ^ (key >> 17) ^ ((uint64_t)n << 40)) * 0x9e3779b97f4a7c15ULL;
	struct block **bucket = &table[h >> (64 - TABLE_BITS)];
	struct block *b;

	pthread_mutex_lock(&table_lock);
	for (b = *bucket; b; b = b->chain) {
		if (b->key == key && b->insns == n && b->locked == locked && b->call == call)
			goto found;
	}
	b = calloc(1, sizeof(*b));
	if (b) {
		b->key = key;
		b->vaddr = vaddr;
		b->insns = n;
		b->locked = locked;
		b->call = call;
		b->chain = *bucket;
		*bucket = b;
		b->next = __atomic_load_n(&blocks, __ATOMIC_RELAXED);
		while (!__atomic_compare_exchange_n(&blocks, &b->next, b, true, __ATOMIC_RELEASE,
						    __ATOMIC_RELAXED))
			;
	}
found:
	pthread_mutex_unlock(&table_lock);
	return b;
}

static void on_translation(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb), i;
	uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
	void *host = n ? qemu_plugin_insn_haddr(qemu_plugin_tb_get_insn(tb, 0)) : NULL;
	uint64_t locked = 0, call = 0;
	struct block *b;

	(void)id;
	/*
	 * Only the kernel's: user space's calls are relative to where each
	 * process has its code, which would split one block into many.
	 */
	if (vaddr >= KERNEL_START) {
		for (i = 0; i < n; i++) {
			call = 0; /* a call before the last instruction ends no block */
			locked += decode(qemu_plugin_tb_get_insn(tb, i), &call);
		}
	}
	b = block_of(host ? (uint64_t)(uintptr_t)host : vaddr, vaddr, n, locked, call);
	if (!b)
		return; /* uncounted: the totals come out low, never wrong-signed */
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->count, 1);
	if (vaddr >= KERNEL_START)
		return;
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		enum mark kind = mark_of(insn);

		if (kind)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)kind);
	}
}

static void on_qemu_exit(qemu_plugin_id_t id, void *userdata)
{
	(void)id;
	(void)userdata;
	pthread_mutex_lock(&mark_lock);
	fprintf(out, "end\n");
	fclose(out);
	out = NULL;
	pthread_mutex_unlock(&mark_lock);
}

PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
				      char **argv)
{
	const char *path = NULL;
	int i;

	if (!info->system_emulation || strcmp(info->target_name, "x86_64") != 0) {
		fprintf(stderr, "insn_count: x86_64 system emulation only\n");
		return -1;
	}
	for (i = 0; i < argc; i++) {
		if (strncmp(argv[i], "out=", 4) == 0)
			path = argv[i] + 4;
	}
	if (!path) {
		fprintf(stderr, "insn_count: out=FILE is needed\n");
		return -1;
	}
	table = calloc(BUCKETS, sizeof(*table));
	if (!table) {
		fprintf(stderr, "insn_count: no memory\n");
		return -1;
	}
	out = fopen(path, "w");
	if (!out) {
		fprintf(stderr, "insn_count: %s: %s\n", path, strerror(errno));
		return -1;
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translation);
	qemu_plugin_register_atexit_cb(id, on_qemu_exit, NULL);
	return 0;
}
