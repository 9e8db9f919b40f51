// SPDX-License-Identifier: GPL-2.0-only
/*
 * ib_slot: pooled bundles of MRs, Send Queue credits and a completion
 * callback, so that a ULP cannot overrun its Send Queue or lose a flush.
 *
 * Slots are PD-scoped; unless the ULP's own tags index them, they come
 * from an sbitmap fronted by a one-tag cache per CPU.  Credits are
 * QP-scoped (struct ib_slot_qp).  A get reserves, all or nothing, a slot of
 * the pool and the worst-case Send Queue entries of one slot lifetime on
 * the QP, so a post through the slot always finds room.  Both come back at
 * put, which the ULP may only call once every WR of the slot has completed.
 *
 * The fast path (get, post, completion, put) takes no lock and allocates
 * nothing.  Waiters of back-pressure pools live on a FIFO under a spinlock
 * that only the slow path takes.
 */
#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/sbitmap.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>
#include <rdma/ib_slot.h>
#include <trace/events/rdma_core.h>

#include "core_priv.h"

/* Opcodes a slot may post: the ib_wr_opcode values up to REG_MR_INTEGRITY. */
#define IB_SLOT_NR_OPCODES	(IB_WR_REG_MR_INTEGRITY + 1)

/* An empty per-CPU tag cache. */
#define IB_SLOT_NO_TAG		(-1)
/*
 * slot->busy counts outstanding posts, LOCAL_INV chains and fence holds;
 * these bits say that a post's done() has yet to run, and that a fence is
 * armed.  One word, so that one read checks both and one atomic arms.
 */
#define IB_SLOT_POSTED		BIT(29)
#define IB_SLOT_FENCE_ARMED	BIT(30)

/* slot->flags */
enum {
	IB_SLOT_F_IN_USE,
	/* A LOCAL_INV of the armed fence failed: its rkeys may be live. */
	IB_SLOT_F_RECYCLE,
};

struct ib_slot_pool {
	struct ib_device	*dev;
	struct ib_pd		*pd;
	struct ib_slot_profile	profile;
	struct ib_slot_cost	cost;
	enum ib_slot_policy	policy;
	bool			indexed;
	bool			resume_in_work;
	bool			dying;
	/* Set by a scan that left a waiter short of pool slots. */
	bool			blocked;
	/* All slots; of an indexed pool, its tags then the reserved ones. */
	u32			nr_slots;
	u32			nr_tags;
	u32			fair_share;
	size_t			slot_size;
	void (*done)(struct ib_slot *slot, const struct ib_wc *wc);
	/* Send Queue units per WR, by opcode; 0: the provider refuses it. */
	u8			units[IB_SLOT_NR_OPCODES];
	/* Opcodes whose signaled WR completes more than once (mlx5 PI UMRs). */
	unsigned long		multi_cqe;

	/* Free tags; of an indexed pool, free reserved slots. */
	struct sbitmap		map;
	/* Allocator pools: the tag last freed on each CPU, or IB_SLOT_NO_TAG. */
	int __percpu		*cache;
	void			*slots;
	struct ib_slot_mr	*mrs;

	/* Free slots: the admission counter of get and the drain of destroy. */
	atomic_t		avail;
	atomic_t		nr_waiters;
	u32			high_water;

	/* Slow path: waiters, attached QPs, counters. */
	spinlock_t		lock;
	struct list_head	waiters;
	/* Granted where resuming is not allowed; resume_work resumes them. */
	struct list_head	granted;
	struct list_head	qps;
	/* Keeps an attached QP alive for the qp_error knob. */
	struct mutex		qps_mutex;
	u32			scan_gen;
	struct work_struct	resume_work;
	/* Fenced slots whose rkey MRs must be replaced before fenced(). */
	struct llist_head	recycle;
	struct delayed_work	recycle_work;
	atomic64_t		exhausted;
	atomic64_t		waits;
	atomic64_t		resumed;
	atomic64_t		misuse;
	atomic64_t		remote_inv;
	atomic64_t		local_inv;
	atomic64_t		recycled;

	struct fault_attr	fail_get;
	int			id;
	char			name[32];
	struct dentry		*debugfs;
};

struct ib_slot_qp {
	struct ib_slot_pool	*pool;
	struct ib_qp		*qp;
	/* Copied at attach: debugfs never dereferences @qp. */
	u32			qp_num;
	/* What the QP accepts, checked before every doorbell. */
	u32			max_send_sge;
	u32			max_read_sge;
	struct list_head	entry;
	/* Each slot holds pool->cost.sqes credits: no separate count. */
	atomic_t		nr_held;
	u32			sq_depth;
	u32			fair_share;
	u32			skip_gen;
	/* Waiters queued for this QP, under the pool's lock. */
	u32			nr_waiters;
};

static struct dentry *ib_slot_debugfs_root;
/* Off until set through debugfs. */
static DECLARE_FAULT_ATTR(ib_slot_fail_get_off);
static DEFINE_IDA(ib_slot_ida);
/* The waiters ib_slot_resume_all() is resuming on this CPU, if any. */
static DEFINE_PER_CPU(struct list_head *, ib_slot_resuming);

#define ib_slot_misuse(pool, cond)					\
	({								\
		bool __bad = WARN_ON_ONCE(cond);			\
									\
		if (unlikely(__bad))					\
			atomic64_inc(&(pool)->misuse);			\
		unlikely(__bad);					\
	})

/* A post's done() or an armed fence is outstanding: the WRs are not ours. */
static inline bool ib_slot_outstanding(const struct ib_slot *slot)
{
	return atomic_read(&slot->busy) & (IB_SLOT_POSTED | IB_SLOT_FENCE_ARMED);
}

/* Fault injection on get, for the tests of a ULP's exhaustion paths. */
static inline bool ib_slot_should_fail(struct ib_slot_pool *pool)
{
	return should_fail(&pool->fail_get, 1);
}

static inline struct ib_slot *ib_slot_at(struct ib_slot_pool *pool, u32 tag)
{
	return pool->slots + tag * pool->slot_size;
}

static void ib_slot_trace(struct ib_slot_pool *pool,
			  void (*event)(const char *pool, u32 nr_slots,
					u32 in_use, u32 nr_waiters))
{
	event(pool->name, pool->nr_slots,
	      pool->nr_slots - atomic_read(&pool->avail),
	      atomic_read(&pool->nr_waiters));
}

/*
 * Take @n from @v if it holds at least @n; never leaves @v below zero.
 * Returns what @v holds after, or -1 if it held less than @n.
 */
static int ib_slot_take(atomic_t *v, int n)
{
	int old = atomic_read(v);

	do {
		if (old < n)
			return -1;
	} while (!atomic_try_cmpxchg_acquire(v, &old, old - n));
	return old - n;
}

/* Add @n to @v if the sum stays at most @limit. */
static bool ib_slot_add_below(atomic_t *v, int n, int limit)
{
	int old = atomic_read(v);

	do {
		if (old + n > limit)
			return false;
	} while (!atomic_try_cmpxchg_acquire(v, &old, old + n));
	return true;
}

/* The QP a profile needs, as the provider hooks are asked about it. */
static void ib_slot_qp_attr(const struct ib_slot_profile *p,
			    struct ib_qp_init_attr *attr)
{
	*attr = (struct ib_qp_init_attr){
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_sge = max(p->max_send_sge, 1U),
			 .max_recv_sge = 1 },
		.create_flags = p->integrity ? IB_QP_CREATE_INTEGRITY_EN : 0,
	};
}

/* Charge @nr WRs of @opcode (of RDMA READ or WRITE, whichever costs more). */
static int ib_slot_charge(struct ib_device *dev,
			  const struct ib_qp_init_attr *attr,
			  enum ib_wr_opcode opcode, u32 num_sge, u32 nr,
			  struct ib_slot_cost *cost)
{
	struct ib_wr_cost c, w;
	int ret;

	if (!nr)
		return 0;
	ret = ib_get_wr_cost(dev, attr, opcode, num_sge, &c);
	if (!ret && opcode == IB_WR_RDMA_READ) {
		ret = ib_get_wr_cost(dev, attr, IB_WR_RDMA_WRITE, num_sge, &w);
		c.sq_units = max(c.sq_units, w.sq_units);
		c.cqe_error = max(c.cqe_error, w.cqe_error);
	}
	if (ret)
		return ret;
	cost->sqes += nr * c.sq_units;
	cost->cqes += nr * c.cqe_error;
	return 0;
}

/**
 * ib_slot_profile_cost - worst-case queue entries of one slot lifetime
 * @dev: device the slots will be used on
 * @profile: what one slot may do between get and put
 * @cost: filled with the Send, Receive and Completion Queue entries
 *
 * Applies the cost rules of Documentation/infiniband/slot.rst: an rkey MR
 * costs REG_MR and LOCAL_INV; an lkey MR LOCAL_INV, REG_MR and the RDMA WR
 * it serves; direct RDMA one WR per @profile->max_send_sge SGEs; a send one
 * WR.  Each WR costs the Send Queue units and the error completions the
 * device reports through ib_get_wr_cost(): a flush completes every
 * outstanding WR, signaled or not.
 *
 * Context: Any context.
 * Return: 0, or -EINVAL if @profile is not valid for @dev (the reason is
 * logged).
 */
int ib_slot_profile_cost(struct ib_device *dev,
			 const struct ib_slot_profile *profile,
			 struct ib_slot_cost *cost)
{
	u32 rkey = profile->nr_rkey_mrs, lkey = profile->nr_lkey_mrs;
	u32 sge = max(profile->max_send_sge, 1U);
	enum ib_wr_opcode reg = profile->integrity ? IB_WR_REG_MR_INTEGRITY :
						     IB_WR_REG_MR;
	u32 shift = profile->page_shift ?: PAGE_SHIFT;
	struct ib_qp_init_attr attr;
	const char *why = NULL;

	if (rkey + lkey > IB_SLOT_MAX_MRS)
		why = "too many MRs per slot";
	else if (rkey + lkey && !profile->max_pages_per_mr)
		why = "MRs need max_pages_per_mr";
	else if (rkey + lkey && dev->attrs.max_fast_reg_page_list_len &&
		 profile->max_pages_per_mr >
		 dev->attrs.max_fast_reg_page_list_len)
		why = "max_pages_per_mr above the device limit";
	else if (profile->integrity &&
		 !(dev->attrs.kernel_cap_flags & IBK_INTEGRITY_HANDOVER))
		why = "device has no integrity offload";
	else if (profile->integrity && lkey)
		why = "integrity applies to rkey MRs only";
	else if (shift < ilog2(SZ_4K) || shift >= 32 ||
		 (dev->attrs.page_size_cap &&
		  !(dev->attrs.page_size_cap & BIT_ULL(shift))))
		why = "page size not supported by the device";
	else if (profile->sg_gaps &&
		 !(dev->attrs.kernel_cap_flags & IBK_SG_GAPS_REG))
		why = "device has no SG_GAPS registration";
	else if (profile->sg_gaps && profile->integrity)
		why = "integrity MRs have no SG_GAPS type";
	else if (profile->fence > IB_SLOT_FENCE_SYNC)
		why = "unknown fence mode";
	else if (dev->attrs.max_send_sge && sge > dev->attrs.max_send_sge)
		why = "max_send_sge above the device limit";

	*cost = (struct ib_slot_cost){ .rqes = profile->nr_recvs,
				       .cqes = profile->nr_recvs };
	ib_slot_qp_attr(profile, &attr);
	if (!why &&
	    (ib_slot_charge(dev, &attr, reg, 0, rkey, cost) ||
	     ib_slot_charge(dev, &attr, IB_WR_REG_MR, 0, lkey, cost) ||
	     ib_slot_charge(dev, &attr, IB_WR_LOCAL_INV, 0, rkey + lkey, cost) ||
	     ib_slot_charge(dev, &attr, IB_WR_RDMA_READ, 1, lkey, cost) ||
	     ib_slot_charge(dev, &attr, IB_WR_RDMA_READ, sge,
			    DIV_ROUND_UP(profile->max_rdma_sges, sge), cost) ||
	     ib_slot_charge(dev, &attr, IB_WR_SEND, sge, profile->nr_sends,
			    cost)))
		why = "device cannot post a WR of the profile";
	if (!why && !cost->sqes && !cost->rqes)
		why = "profile posts nothing";
	if (why) {
		dev_warn_ratelimited(&dev->dev, "ib_slot: invalid profile: %s\n",
				     why);
		return -EINVAL;
	}
	return 0;
}
EXPORT_SYMBOL(ib_slot_profile_cost);

static void ib_slot_wc_done(struct ib_cq *cq, struct ib_wc *wc);
static void ib_slot_wc_aux(struct ib_cq *cq, struct ib_wc *wc);
static void ib_slot_wc_inv(struct ib_cq *cq, struct ib_wc *wc);
static void ib_slot_resume_work(struct work_struct *work);
static void ib_slot_recycle_work(struct work_struct *work);
static void ib_slot_scan_waiters(struct ib_slot_pool *pool,
				 struct list_head *ready);
static void ib_slot_defer(struct ib_slot_pool *pool, struct list_head *ready);

static void ib_slot_free_mrs(struct ib_slot_pool *pool)
{
	u32 i, nr = pool->nr_slots * (pool->profile.nr_rkey_mrs +
				      pool->profile.nr_lkey_mrs);

	for (i = 0; i < nr; i++)
		if (pool->mrs[i].mr)
			ib_dereg_mr(pool->mrs[i].mr);
	kvfree(pool->mrs);
}

/* MR @i of a slot: the rkey-side MRs of an integrity profile are PI MRs. */
static bool ib_slot_mr_pi(const struct ib_slot_pool *pool, unsigned int i)
{
	return pool->profile.integrity && i < pool->profile.nr_rkey_mrs;
}

static struct ib_mr *ib_slot_new_mr(struct ib_slot_pool *pool, bool pi)
{
	u32 pages = pool->profile.max_pages_per_mr;

	if (pi)
		return ib_alloc_mr_integrity(pool->pd, pages, pages);
	return ib_alloc_mr(pool->pd, pool->profile.sg_gaps ?
			   IB_MR_TYPE_SG_GAPS : IB_MR_TYPE_MEM_REG, pages);
}

static int ib_slot_alloc_mrs(struct ib_slot_pool *pool)
{
	const struct ib_slot_profile *p = &pool->profile;
	u32 per_slot = p->nr_rkey_mrs + p->nr_lkey_mrs;
	u32 tag, i;

	if (!per_slot)
		return 0;
	pool->mrs = kvcalloc(pool->nr_slots * per_slot, sizeof(*pool->mrs),
			     GFP_KERNEL);
	if (!pool->mrs)
		return -ENOMEM;

	for (tag = 0; tag < pool->nr_slots; tag++) {
		struct ib_slot *slot = ib_slot_at(pool, tag);

		slot->mrs = &pool->mrs[tag * per_slot];
		slot->nr_mrs = per_slot;
		for (i = 0; i < per_slot; i++) {
			bool pi = ib_slot_mr_pi(pool, i);
			struct ib_mr *mr = ib_slot_new_mr(pool, pi);

			if (IS_ERR(mr))
				return PTR_ERR(mr);
			slot->mrs[i].mr = mr;
			slot->mrs[i].inv_wr.opcode = IB_WR_LOCAL_INV;
			slot->mrs[i].reg_wr.wr.opcode = pi ?
				IB_WR_REG_MR_INTEGRITY : IB_WR_REG_MR;
			slot->mrs[i].reg_wr.mr = mr;
		}
	}
	return 0;
}

/*
 * The Send Queue units of a WR of each opcode on a QP of @attr, and the
 * opcodes whose signaled WR completes more than once.
 */
static void ib_slot_op_units(struct ib_slot_pool *pool,
			     const struct ib_qp_init_attr *attr,
			     u8 units[IB_SLOT_NR_OPCODES],
			     unsigned long *multi_cqe)
{
	u32 sge = max(pool->profile.max_send_sge, 1U);
	struct ib_wr_cost c;
	int op;

	for (op = 0; op < IB_SLOT_NR_OPCODES; op++) {
		/* Registration and invalidation WRs carry no SGE. */
		u32 nsge = op == IB_WR_REG_MR || op == IB_WR_REG_MR_INTEGRITY ||
			   op == IB_WR_LOCAL_INV ? 0 : sge;

		units[op] = 0;
		if (ib_get_wr_cost(pool->dev, attr, op, nsge, &c))
			continue;
		units[op] = min_t(u16, c.sq_units, U8_MAX);
		if (c.cqe_signaled > 1)
			__set_bit(op, multi_cqe);
	}
}

static void ib_slot_fill_units(struct ib_slot_pool *pool)
{
	struct ib_qp_init_attr attr;

	ib_slot_qp_attr(&pool->profile, &attr);
	ib_slot_op_units(pool, &attr, pool->units, &pool->multi_cqe);
}

/*
 * Costs were computed for an RC QP; @qp may cost more per WR (an XRC
 * initiator's REG_MR takes one more block on mlx5).  Slots charged at the
 * pool's rates would then overrun its Send Queue: such a QP is refused.
 */
static bool ib_slot_qp_costs_more(struct ib_slot_pool *pool,
				  struct ib_qp *qp,
				  const struct ib_qp_cap *granted)
{
	struct ib_qp_init_attr attr;
	u8 units[IB_SLOT_NR_OPCODES];
	unsigned long multi = 0;
	int op;

	ib_slot_qp_attr(&pool->profile, &attr);
	attr.qp_type = qp->qp_type;
	attr.cap = *granted;
	ib_slot_op_units(pool, &attr, units, &multi);
	for (op = 0; op < IB_SLOT_NR_OPCODES; op++)
		if (pool->units[op] && units[op] > pool->units[op])
			return true;
	return multi & ~pool->multi_cqe;
}

static int ib_slot_pool_show(struct seq_file *s, void *unused)
{
	struct ib_slot_pool *pool = s->private;
	struct ib_slot_pool_stats st;
	struct ib_slot_qp *sqp;

	ib_slot_pool_get_stats(pool, &st);
	seq_printf(s, "policy: %s\nsize: %u\nin_use: %u\nhigh_water: %u\n",
		   pool->policy == IB_SLOT_NO_EXHAUST ? "no-exhaust" :
		   "backpressure", st.nr_slots, st.in_use, st.high_water);
	seq_printf(s, "waiters: %u\nexhausted: %llu\nwaits: %llu\nresumed: %llu\n",
		   st.nr_waiters, st.exhausted, st.waits, st.resumed);
	seq_printf(s, "misuse: %llu\nremote_inv: %llu\nlocal_inv: %llu\n",
		   st.misuse, st.remote_inv, st.local_inv);
	seq_printf(s, "recycled: %llu\nreserved: %u\n", st.recycled,
		   st.nr_reserved);
	seq_printf(s, "cost: sqes %u cqes %u rqes %u\n", pool->cost.sqes,
		   pool->cost.cqes, pool->cost.rqes);
	spin_lock_bh(&pool->lock);
	list_for_each_entry(sqp, &pool->qps, entry)
		seq_printf(s, "qp %u: slots %d credits_out %u/%u waiters %u\n",
			   sqp->qp_num, atomic_read(&sqp->nr_held),
			   atomic_read(&sqp->nr_held) * pool->cost.sqes,
			   sqp->sq_depth, sqp->nr_waiters);
	spin_unlock_bh(&pool->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ib_slot_pool);

/*
 * Writing a QP number moves that attached QP to the error state: the one
 * deterministic "QP error mid-I/O" for tests of in-kernel ULPs.
 */
static ssize_t ib_slot_qp_error_write(struct file *file,
				      const char __user *buf, size_t count,
				      loff_t *ppos)
{
	struct ib_slot_pool *pool = file->private_data;
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_slot_qp *sqp;
	u32 qp_num;
	int ret;

	ret = kstrtou32_from_user(buf, count, 0, &qp_num);
	if (ret)
		return ret;
	ret = -ENOENT;
	/* Detach takes the mutex too: the QP stays attached meanwhile. */
	mutex_lock(&pool->qps_mutex);
	list_for_each_entry(sqp, &pool->qps, entry) {
		if (sqp->qp_num != qp_num)
			continue;
		ret = ib_modify_qp(sqp->qp, &attr, IB_QP_STATE);
		break;
	}
	mutex_unlock(&pool->qps_mutex);
	return ret ?: count;
}

static const struct file_operations ib_slot_qp_error_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = ib_slot_qp_error_write,
	.llseek = noop_llseek,
};

/*
 * ib_slot/<pool>/: stats, qp_error, and with CONFIG_FAULT_INJECTION_DEBUG_FS
 * fail_get/, which makes gets fail as if the pool were exhausted.
 */
static void ib_slot_debugfs_add(struct ib_slot_pool *pool)
{
	pool->debugfs = debugfs_create_dir(pool->name, ib_slot_debugfs_root);
	debugfs_create_file("stats", 0400, pool->debugfs, pool,
			    &ib_slot_pool_fops);
	debugfs_create_file("qp_error", 0200, pool->debugfs, pool,
			    &ib_slot_qp_error_fops);
	fault_create_debugfs_attr("fail_get", pool->debugfs, &pool->fail_get);
}

static void ib_slot_pool_free(struct ib_slot_pool *pool)
{
	if (pool->id >= 0)
		ida_free(&ib_slot_ida, pool->id);
	if (pool->mrs)
		ib_slot_free_mrs(pool);
	sbitmap_free(&pool->map);
	free_percpu(pool->cache);
	kvfree(pool->slots);
	mutex_destroy(&pool->qps_mutex);
	kfree(pool);
}

/**
 * ib_slot_pool_create - create a pool of slots
 * @attr: what the slots may do, how many and the exhaustion policy
 *
 * Allocates every slot and its MRs up front, so that nothing on the fast
 * path allocates.  The pool is PD-scoped: QPs attach to it with
 * ib_slot_qp_attach(), after sizing their queues with ib_slot_qp_caps().
 *
 * Context: Process context; may sleep.
 * Return: the pool, or an ERR_PTR(): -EINVAL for invalid @attr (the reason
 * is logged), -ENOMEM, or the error of MR allocation.
 */
struct ib_slot_pool *ib_slot_pool_create(const struct ib_slot_pool_attr *attr)
{
	struct ib_slot_pool *pool;
	const char *why = NULL;
	struct ib_slot_cost cost;
	struct ib_device *dev;
	int ret, cpu;
	u32 tag;

	might_sleep();
	if (WARN_ON_ONCE(!attr->pd))
		return ERR_PTR(-EINVAL);
	dev = attr->pd->device;
	ret = ib_slot_profile_cost(dev, &attr->profile, &cost);
	if (ret)
		return ERR_PTR(ret);
	if (!attr->nr_slots || attr->nr_slots > SZ_1M ||
	    attr->nr_reserved > SZ_1M)
		why = "nr_slots out of range";
	else if (attr->nr_reserved && !attr->indexed)
		why = "only indexed pools reserve slots";
	else if (!attr->done)
		why = "no done callback";
	else if (attr->indexed && attr->policy != IB_SLOT_NO_EXHAUST)
		why = "only no-exhaust pools are indexed";
	else if (attr->policy > IB_SLOT_BACKPRESSURE)
		why = "unknown policy";
	if (why) {
		dev_warn(&dev->dev, "ib_slot: invalid pool: %s\n", why);
		return ERR_PTR(-EINVAL);
	}

	pool = kzalloc(sizeof(*pool), GFP_KERNEL);
	if (!pool)
		return ERR_PTR(-ENOMEM);
	pool->dev = dev;
	pool->pd = attr->pd;
	pool->profile = attr->profile;
	pool->cost = cost;
	pool->policy = attr->policy;
	pool->indexed = attr->indexed;
	pool->resume_in_work = attr->resume_in_work;
	pool->nr_tags = attr->nr_slots;
	pool->nr_slots = attr->nr_slots + attr->nr_reserved;
	pool->fair_share = attr->fair_share ?: pool->nr_slots;
	pool->done = attr->done;
	pool->fail_get = ib_slot_fail_get_off;
	pool->slot_size = ALIGN(sizeof(struct ib_slot), SMP_CACHE_BYTES) +
			  ALIGN(attr->priv_size, SMP_CACHE_BYTES);
	ib_slot_fill_units(pool);
	atomic_set(&pool->avail, pool->nr_slots);
	spin_lock_init(&pool->lock);
	mutex_init(&pool->qps_mutex);
	INIT_LIST_HEAD(&pool->waiters);
	INIT_LIST_HEAD(&pool->granted);
	INIT_LIST_HEAD(&pool->qps);
	INIT_WORK(&pool->resume_work, ib_slot_resume_work);
	init_llist_head(&pool->recycle);
	INIT_DELAYED_WORK(&pool->recycle_work, ib_slot_recycle_work);
	pool->id = ida_alloc(&ib_slot_ida, GFP_KERNEL);
	ret = pool->id;
	if (ret < 0)
		goto out_free;
	snprintf(pool->name, sizeof(pool->name), "%s-%d",
		 attr->name ?: "pool", pool->id);

	ret = sbitmap_init_node(&pool->map, pool->indexed ? attr->nr_reserved :
				attr->nr_slots, -1, GFP_KERNEL,
				dev_to_node(&dev->dev), false, true);
	if (ret)
		goto out_free;
	ret = -ENOMEM;
	pool->slots = kvcalloc(pool->nr_slots, pool->slot_size, GFP_KERNEL);
	if (!pool->slots)
		goto out_free;
	if (!pool->indexed) {
		pool->cache = alloc_percpu(int);
		if (!pool->cache)
			goto out_free;
		for_each_possible_cpu(cpu)
			per_cpu(*pool->cache, cpu) = IB_SLOT_NO_TAG;
	}
	for (tag = 0; tag < pool->nr_slots; tag++) {
		struct ib_slot *slot = ib_slot_at(pool, tag);

		slot->pool = pool;
		slot->tag = tag;
		slot->cqe.done = ib_slot_wc_done;
		slot->aux_cqe.done = ib_slot_wc_aux;
		slot->inv_cqe.done = ib_slot_wc_inv;
	}
	ret = ib_slot_alloc_mrs(pool);
	if (ret)
		goto out_free;

	ib_slot_debugfs_add(pool);
	ib_slot_trace(pool, trace_ib_slot_pool_create);
	return pool;

out_free:
	ib_slot_pool_free(pool);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL(ib_slot_pool_create);

/* Queue @w at the tail of the FIFO. */
static void ib_slot_enqueue(struct ib_slot_waiter *w)
{
	struct ib_slot_pool *pool = w->sqp->pool;

	lockdep_assert_held(&pool->lock);
	list_add_tail(&w->entry, &pool->waiters);
	w->queued = true;
	WRITE_ONCE(w->sqp->nr_waiters, w->sqp->nr_waiters + 1);
	atomic_inc(&pool->nr_waiters);
}

/* Take @w off the FIFO, onto @list (granted, or shut out) if not %NULL. */
static void ib_slot_unqueue(struct ib_slot_waiter *w, struct list_head *list)
{
	struct ib_slot_pool *pool = w->sqp->pool;

	lockdep_assert_held(&pool->lock);
	if (list)
		list_move_tail(&w->entry, list);
	else
		list_del_init(&w->entry);
	w->queued = false;
	WRITE_ONCE(w->sqp->nr_waiters, w->sqp->nr_waiters - 1);
	atomic_dec(&pool->nr_waiters);
}

/* Resume waiters that will never be granted: pool or QP going away. */
static void ib_slot_shut_out(struct list_head *list)
{
	struct ib_slot_waiter *w, *tmp;

	list_for_each_entry_safe(w, tmp, list, entry) {
		list_del_init(&w->entry);
		w->error = -ESHUTDOWN;
		w->resume(w);
	}
}

/*
 * Say which slots a destroy is waiting for, and on which QPs: a ULP that
 * leaked one otherwise leaves a task in D state and nothing to go on.
 */
static void ib_slot_report_held(struct ib_slot_pool *pool)
{
	unsigned int shown = 0;
	u32 tag;

	spin_lock_bh(&pool->lock);
	for (tag = 0; tag < pool->nr_slots && shown < 8; tag++) {
		struct ib_slot *slot = ib_slot_at(pool, tag);
		/* Detach frees a QP's account only after taking the lock. */
		struct ib_slot_qp *sqp = READ_ONCE(slot->sqp);

		if (!test_bit(IB_SLOT_F_IN_USE, &slot->flags))
			continue;
		dev_warn(&pool->dev->dev,
			 "ib_slot: %s: destroy waits for slot %u (QP %u, busy %#x)\n",
			 pool->name, tag, sqp ? sqp->qp_num : 0,
			 atomic_read(&slot->busy));
		shown++;
	}
	spin_unlock_bh(&pool->lock);
}

/**
 * ib_slot_pool_destroy - destroy a pool once all its slots are back
 * @pool: pool from ib_slot_pool_create(), or %NULL
 *
 * New gets fail from now on (with a warning: they are a ULP bug), queued
 * waiters are resumed with -ESHUTDOWN, and the call waits until every slot
 * was put; every ten seconds meanwhile it logs which slots are still
 * held.  QPs still attached are detached.  Call it after ib_drain_qp() on
 * the QPs that used the pool, so that every post has completed.
 *
 * Context: Process context; sleeps until all slots are put.
 */
void ib_slot_pool_destroy(struct ib_slot_pool *pool)
{
	struct ib_slot_qp *sqp, *stmp;
	struct ib_slot_waiter *w;
	LIST_HEAD(ready);

	if (!pool)
		return;
	might_sleep();
	ib_slot_trace(pool, trace_ib_slot_pool_destroy);
	/* Waits for readers and knobs: nothing they use is freed under them. */
	debugfs_remove(pool->debugfs);

	spin_lock_bh(&pool->lock);
	WRITE_ONCE(pool->dying, true);
	while ((w = list_first_entry_or_null(&pool->waiters,
					     struct ib_slot_waiter, entry)))
		ib_slot_unqueue(w, &ready);
	spin_unlock_bh(&pool->lock);
	ib_slot_shut_out(&ready);
	/* Waiters granted before we came own slots: let them have them. */
	flush_work(&pool->resume_work);

	/* Pairs with the atomic_inc_return_release() in ib_slot_put(). */
	while (!wait_var_event_timeout(&pool->avail,
				       atomic_read_acquire(&pool->avail) ==
				       pool->nr_slots, 10 * HZ))
		ib_slot_report_held(pool);
	/*
	 * The last put may still be reading the pool, and the last
	 * completion the slot it put; both do so under rcu_read_lock().
	 */
	synchronize_rcu();
	/* Fences recycle before fenced() and the put: nothing is queued. */
	cancel_delayed_work_sync(&pool->recycle_work);
	cancel_work_sync(&pool->resume_work);

	/* Slots are all back, so no waiter or slot refers to them. */
	list_for_each_entry_safe(sqp, stmp, &pool->qps, entry)
		kfree(sqp);
	ib_slot_pool_free(pool);
}
EXPORT_SYMBOL(ib_slot_pool_destroy);

/**
 * ib_slot_pool_get_stats - read a pool's counters
 * @pool: the pool
 * @stats: filled with a snapshot; fields may be mutually inconsistent
 *	while the pool is in use
 *
 * Context: Any context.
 */
void ib_slot_pool_get_stats(struct ib_slot_pool *pool,
			    struct ib_slot_pool_stats *stats)
{
	stats->nr_slots = pool->nr_slots;
	stats->in_use = pool->nr_slots - atomic_read(&pool->avail);
	stats->high_water = READ_ONCE(pool->high_water);
	stats->nr_waiters = atomic_read(&pool->nr_waiters);
	stats->nr_reserved = pool->nr_slots - pool->nr_tags;
	stats->exhausted = atomic64_read(&pool->exhausted);
	stats->waits = atomic64_read(&pool->waits);
	stats->resumed = atomic64_read(&pool->resumed);
	stats->misuse = atomic64_read(&pool->misuse);
	stats->remote_inv = atomic64_read(&pool->remote_inv);
	stats->local_inv = atomic64_read(&pool->local_inv);
	stats->recycled = atomic64_read(&pool->recycled);
}
EXPORT_SYMBOL(ib_slot_pool_get_stats);

/**
 * ib_slot_qp_caps - size a QP and its CQ for slots of a pool
 * @pool: the pool
 * @nr_slots: slots this QP may hold at once, as ib_slot_qp_attach() is told
 * @init_attr: its cap.max_send_wr and max_recv_wr grow by what the slots
 *	need, cap.max_send_sge to what they need
 * @nr_cqe: grows by the Completion Queue entries the slots need
 *
 * Several pools may share a QP (a ULP's requests and its MR-less side
 * traffic): start from zero caps and *@nr_cqe = 0 and call this once per
 * pool; the first call (*@nr_cqe still 0) also adds one Send and one
 * Receive entry, and their completions, for ib_drain_qp().  Room for WRs
 * posted outside slots is added to the caps afterwards.  The total is
 * checked against the largest Send Queue the device accepts for these
 * caps (ib_query_qp_budget()), which may be less than attrs.max_qp_wr.
 *
 * Context: Any context.
 * Return: 0, or -EINVAL if the device cannot hold @nr_slots slots more
 * (the reason is logged); then nothing was changed.
 */
int ib_slot_qp_caps(struct ib_slot_pool *pool, u32 nr_slots,
		    struct ib_qp_init_attr *init_attr, u32 *nr_cqe)
{
	struct ib_device_attr *da = &pool->dev->attrs;
	bool first = !*nr_cqe;
	u64 sq = (u64)nr_slots * pool->cost.sqes + init_attr->cap.max_send_wr +
		 (first ? pool->units[IB_WR_RDMA_WRITE] : 0);
	u64 rq = (u64)nr_slots * pool->cost.rqes + init_attr->cap.max_recv_wr +
		 first;
	u64 cqe = (u64)nr_slots * pool->cost.cqes + *nr_cqe + 2 * first;
	struct ib_qp_init_attr want = *init_attr;
	struct ib_qp_budget budget = { };
	int ret = -EINVAL;

	if (nr_slots && sq <= U32_MAX && rq <= da->max_qp_wr &&
	    cqe <= da->max_cqe) {
		want.cap.max_send_wr = sq;
		want.cap.max_recv_wr = rq;
		want.cap.max_send_sge = max3(want.cap.max_send_sge,
					     pool->profile.max_send_sge, 1U);
		ret = ib_query_qp_budget(pool->dev, &want, &budget);
	}
	if (ret || sq > budget.max_send_wr_limit) {
		dev_warn(&pool->dev->dev,
			 "ib_slot: %s: %u slots need %llu SQ units (device takes %u), %llu RQEs, %llu CQEs (max %d)\n",
			 pool->name, nr_slots, sq, budget.max_send_wr_limit, rq,
			 cqe, da->max_cqe);
		return -EINVAL;
	}
	init_attr->cap = want.cap;
	*nr_cqe = cqe;
	return 0;
}
EXPORT_SYMBOL(ib_slot_qp_caps);

/**
 * ib_slot_qp_attach - let a QP take slots of a pool
 * @pool: the pool
 * @qp: a QP on the pool's PD
 * @granted: the caps the device granted when @qp was created
 * @nr_slots: slots the QP may hold at once, as given to ib_slot_qp_caps()
 *
 * The QP's share of the pool, and its Send Queue credits, are those of
 * @nr_slots slots, however much more the device granted: its CQ was sized
 * for that many, and other pools may hold the rest of the Send Queue.  A
 * no-exhaust pool needs room for all its slots.
 *
 * Context: Process context.
 * Return: the QP's credit account, or ERR_PTR(-EINVAL) if @qp is on
 * another PD or cannot hold the slots (the reason is logged), or
 * ERR_PTR(-ENOMEM).
 */
struct ib_slot_qp *ib_slot_qp_attach(struct ib_slot_pool *pool,
				     struct ib_qp *qp,
				     const struct ib_qp_cap *granted,
				     u32 nr_slots)
{
	u64 depth = (u64)nr_slots * pool->cost.sqes;
	struct ib_slot_qp *sqp;
	const char *why = NULL;

	if (qp->pd != pool->pd)
		why = "is on another PD";
	else if (!nr_slots || (pool->policy == IB_SLOT_NO_EXHAUST &&
			       nr_slots < pool->nr_slots))
		why = "is given too few slots";
	else if (depth + pool->units[IB_WR_RDMA_WRITE] > granted->max_send_wr ||
		 (u64)nr_slots * pool->cost.rqes > granted->max_recv_wr)
		why = "is too small";
	else if (ib_slot_qp_costs_more(pool, qp, granted))
		why = "costs more per WR than the pool was sized for";
	if (why) {
		dev_warn(&pool->dev->dev,
			 "ib_slot: %s: QP %u %s (%u of %u slots)\n",
			 pool->name, qp->qp_num, why, nr_slots, pool->nr_slots);
		return ERR_PTR(-EINVAL);
	}
	sqp = kzalloc(sizeof(*sqp), GFP_KERNEL);
	if (!sqp)
		return ERR_PTR(-ENOMEM);
	sqp->pool = pool;
	sqp->qp = qp;
	sqp->qp_num = qp->qp_num;
	sqp->max_send_sge = granted->max_send_sge;
	/* As rdma_rw: an RDMA READ is bounded by both limits. */
	sqp->max_read_sge = pool->dev->attrs.max_sge_rd ?
			    min_t(u32, granted->max_send_sge,
				  pool->dev->attrs.max_sge_rd) :
			    granted->max_send_sge;
	sqp->sq_depth = depth;
	/* Caps the credits too: @nr_slots slots' worth make the depth. */
	sqp->fair_share = min(nr_slots, pool->fair_share);
	mutex_lock(&pool->qps_mutex);
	spin_lock_bh(&pool->lock);
	list_add_tail(&sqp->entry, &pool->qps);
	spin_unlock_bh(&pool->lock);
	mutex_unlock(&pool->qps_mutex);
	return sqp;
}
EXPORT_SYMBOL(ib_slot_qp_attach);

/**
 * ib_slot_qp_detach - end a QP's use of a pool
 * @sqp: from ib_slot_qp_attach(); %NULL is ignored
 *
 * Every slot taken for the QP must have been put.  Waiters still queued
 * for it are resumed, from this call, with -ESHUTDOWN; waiters of other
 * QPs they held back are resumed from a work item.
 *
 * Context: Process context.
 */
void ib_slot_qp_detach(struct ib_slot_qp *sqp)
{
	struct ib_slot_waiter *w, *tmp;
	struct ib_slot_pool *pool;
	LIST_HEAD(gone);
	LIST_HEAD(ready);

	if (!sqp)
		return;
	pool = sqp->pool;
	if (ib_slot_misuse(pool, atomic_read(&sqp->nr_held)))
		return;
	mutex_lock(&pool->qps_mutex);
	spin_lock_bh(&pool->lock);
	list_for_each_entry_safe(w, tmp, &pool->waiters, entry) {
		if (w->sqp == sqp)
			ib_slot_unqueue(w, &gone);
	}
	list_del(&sqp->entry);
	if (!list_empty(&gone))
		ib_slot_scan_waiters(pool, &ready);
	spin_unlock_bh(&pool->lock);
	mutex_unlock(&pool->qps_mutex);
	ib_slot_defer(pool, &ready);
	ib_slot_shut_out(&gone);
	kfree(sqp);
}
EXPORT_SYMBOL(ib_slot_qp_detach);

/**
 * ib_slot_qp_credits - Send Queue entries a QP has free for new slots
 * @sqp: the QP's credit account
 *
 * Context: Any context.
 * Return: the number of Send Queue entries not held by any slot.
 */
u32 ib_slot_qp_credits(const struct ib_slot_qp *sqp)
{
	u32 held = atomic_read(&sqp->nr_held);

	return sqp->sq_depth - held * sqp->pool->cost.sqes;
}
EXPORT_SYMBOL(ib_slot_qp_credits);

/**
 * ib_slot_qp_has_waiters - whether requests of a QP wait for slots
 * @sqp: the QP's credit account
 *
 * For a ULP that must not take new work for a QP while earlier work of it
 * waits (svc_rdma_has_wspace()).  A hint: a waiter may be granted, or
 * queued, as this returns.
 *
 * Context: Any context.
 * Return: %true if waiters are queued for @sqp.
 */
bool ib_slot_qp_has_waiters(const struct ib_slot_qp *sqp)
{
	return READ_ONCE(sqp->nr_waiters);
}
EXPORT_SYMBOL(ib_slot_qp_has_waiters);

/* ib_slot_post() resets the status of each post. */
static void ib_slot_bind(struct ib_slot_qp *sqp, struct ib_slot *slot)
{
	slot->sqp = sqp;
	slot->sq_used = 0;
}

static void ib_slot_note_use(struct ib_slot_pool *pool, int avail)
{
	u32 in_use = pool->nr_slots - avail;

	if (in_use > READ_ONCE(pool->high_water))
		WRITE_ONCE(pool->high_water, in_use);
}

/*
 * A free tag: the one last freed on this CPU if there is one, as its slot
 * is cache-hot and taking it touches no shared word.  @avail admitted the
 * caller, so a tag is free in the sbitmap or in some CPU's cache; either
 * search can miss it while other getters race, so both repeat.  The cache
 * is reached by atomics only, since other CPUs steal from it.
 */
static int ib_slot_alloc_tag(struct ib_slot_pool *pool)
{
	int tag, cpu, *cache;

	/* Preemptible: a migration only turns this into a steal. */
	tag = xchg(raw_cpu_ptr(pool->cache), IB_SLOT_NO_TAG);
	if (tag != IB_SLOT_NO_TAG)
		return tag;
	for (;;) {
		tag = sbitmap_get(&pool->map);
		if (tag >= 0)
			return tag;
		for_each_possible_cpu(cpu) {
			cache = per_cpu_ptr(pool->cache, cpu);
			/* Look first: an empty cache line is not worth owning. */
			if (READ_ONCE(*cache) == IB_SLOT_NO_TAG)
				continue;
			tag = xchg(cache, IB_SLOT_NO_TAG);
			if (tag != IB_SLOT_NO_TAG)
				return tag;
		}
		cpu_relax();
	}
}

/* Cache @tag on this CPU; the tag it displaces goes back to the sbitmap. */
static void ib_slot_free_tag(struct ib_slot_pool *pool, int tag)
{
	tag = xchg(raw_cpu_ptr(pool->cache), tag);
	if (tag != IB_SLOT_NO_TAG)
		sbitmap_put(&pool->map, tag);
}

/*
 * Reserve @nr slots for @sqp, all or nothing.  Returns 0, -EBUSY when the
 * QP is at its fair share, which also bounds its credits (see
 * ib_slot_qp_attach()), or -ENOSPC when the pool is short of slots.  A
 * failure leaves nothing taken, but -ENOSPC may have hidden the QP's
 * credits from a concurrent scan for a moment; the caller then kicks the
 * waiters (ib_slot_kick()).
 */
static __always_inline int ib_slot_try_get(struct ib_slot_qp *sqp,
					   unsigned int nr,
					   struct ib_slot **slots)
{
	struct ib_slot_pool *pool = sqp->pool;
	unsigned int i;
	int avail;

	if (!ib_slot_add_below(&sqp->nr_held, nr, sqp->fair_share))
		return -EBUSY;
	avail = ib_slot_take(&pool->avail, nr);
	if (avail < 0) {
		atomic_sub(nr, &sqp->nr_held);
		return -ENOSPC;
	}
	for (i = 0; i < nr; i++) {
		slots[i] = ib_slot_at(pool, ib_slot_alloc_tag(pool));
		set_bit(IB_SLOT_F_IN_USE, &slots[i]->flags);
		ib_slot_bind(sqp, slots[i]);
	}
	ib_slot_note_use(pool, avail);
	return 0;
}

static void ib_slot_resume_one(struct ib_slot_waiter *w)
{
	/* Nested grants may come from another pool. */
	struct ib_slot_pool *pool = w->sqp->pool;

	list_del_init(&w->entry);
	atomic64_inc(&pool->resumed);
	ib_slot_trace(pool, trace_ib_slot_resume);
	w->resume(w);
}

/*
 * Resume granted waiters.  A resume may put slots, and that put resumes
 * the waiters it grants: called inline, resumes would nest once per waiter
 * of a long queue whose requests drop their slots (connection gone) and
 * overflow the stack.  So a grant made inside a resume on this CPU joins
 * the list of the loop already running here, which resumes it next.  BHs
 * are off so that the loop and its per-CPU list stay on this CPU.
 */
static void ib_slot_resume_all(struct ib_slot_pool *pool,
			       struct list_head *ready)
{
	struct ib_slot_waiter *w;
	struct list_head *outer;

	if (list_empty(ready))
		return;
	local_bh_disable();
	outer = this_cpu_read(ib_slot_resuming);
	if (outer) {
		list_splice_tail_init(ready, outer);
		local_bh_enable();
		return;
	}
	this_cpu_write(ib_slot_resuming, ready);
	while ((w = list_first_entry_or_null(ready, struct ib_slot_waiter,
					     entry)))
		ib_slot_resume_one(w);
	this_cpu_write(ib_slot_resuming, NULL);
	local_bh_enable();
}

/*
 * Grant slots and credits to every waiter that can have them, in FIFO
 * order.  A waiter short of pool slots stops the scan, so a large request
 * is never overtaken by small ones, and gets of every QP queue behind it
 * (@pool->blocked); a waiter short of its own QP's credits or fair share
 * only holds back that QP's later waiters and gets.
 */
static void ib_slot_scan_waiters(struct ib_slot_pool *pool,
				 struct list_head *ready)
{
	struct ib_slot_waiter *w, *tmp;
	bool blocked = false;
	int ret;

	lockdep_assert_held(&pool->lock);
	pool->scan_gen++;
	list_for_each_entry_safe(w, tmp, &pool->waiters, entry) {
		if (w->sqp->skip_gen == pool->scan_gen)
			continue;
		ret = ib_slot_try_get(w->sqp, w->nr, w->slots);
		if (ret == -ENOSPC) {
			blocked = true;
			break;
		}
		if (ret) {
			w->sqp->skip_gen = pool->scan_gen;
			continue;
		}
		ib_slot_unqueue(w, ready);
	}
	WRITE_ONCE(pool->blocked, blocked);
}

/*
 * Hand waiters granted in a context that must not resume them (a get, a
 * cancel, a detach) to the pool's work item.  Their slots are theirs
 * already; only the call of resume() waits.
 */
static void ib_slot_defer(struct ib_slot_pool *pool, struct list_head *ready)
{
	if (list_empty(ready))
		return;
	spin_lock_bh(&pool->lock);
	list_splice_tail_init(ready, &pool->granted);
	spin_unlock_bh(&pool->lock);
	queue_work(ib_comp_unbound_wq, &pool->resume_work);
}

static void ib_slot_resume_work(struct work_struct *work)
{
	struct ib_slot_pool *pool = container_of(work, struct ib_slot_pool,
						 resume_work);
	struct ib_slot_waiter *w;
	LIST_HEAD(ready);

	spin_lock_bh(&pool->lock);
	list_splice_init(&pool->granted, &ready);
	spin_unlock_bh(&pool->lock);
	/*
	 * In process context with BHs on, so a resume may sleep.  The puts
	 * of a resume queue their grants here again or resume them in a
	 * loop of their own: no nesting beyond one level.
	 */
	while ((w = list_first_entry_or_null(&ready, struct ib_slot_waiter,
					     entry)))
		ib_slot_resume_one(w);
}

/* More slots than the QP may ever hold at once, or none. */
static bool ib_slot_bad_nr(const struct ib_slot_qp *sqp, unsigned int nr)
{
	return !nr || nr > sqp->fair_share;
}

/*
 * Resources came back: grant them to waiters, if there are any.  Only a
 * put resumes the waiters it grants itself (ib_slot_put()); every other
 * caller hands them to the work item (ib_slot_defer()).
 */
static void ib_slot_kick(struct ib_slot_pool *pool, struct list_head *ready)
{
	/*
	 * Pairs with the smp_mb() in ib_slot_get_or_wait(): either it sees
	 * the resources we returned, or we see its waiter.
	 */
	smp_mb__after_atomic();
	if (likely(!atomic_read(&pool->nr_waiters)))
		return;
	spin_lock_bh(&pool->lock);
	ib_slot_scan_waiters(pool, ready);
	spin_unlock_bh(&pool->lock);
}

/*
 * Inlined, with ib_slot_try_get(), so that ib_slot_get() compiles to the
 * single-slot case: that halves its instructions.
 */
static __always_inline int ib_slot_get_fast(struct ib_slot_qp *sqp,
					    unsigned int nr,
					    struct ib_slot **slots)
{
	struct ib_slot_pool *pool = sqp->pool;
	int ret;

	if (ib_slot_misuse(pool, READ_ONCE(pool->dying)))
		return -ESHUTDOWN;
	/* Indexed pools have no allocator: ib_slot_from_tag() only. */
	if (ib_slot_misuse(pool, pool->indexed))
		return -EINVAL;
	if (unlikely(ib_slot_should_fail(pool))) {
		ret = -ENOSPC;
	} else if (READ_ONCE(sqp->nr_waiters) ||
		   (atomic_read(&pool->nr_waiters) && READ_ONCE(pool->blocked))) {
		/*
		 * Waiters that could take what we would go first: no barging,
		 * no starvation.  A waiter stuck on its own QP's share holds
		 * back only that QP.  Unlocked reads: a stale one lets a get
		 * pass a waiter once, it cannot lose the waiter's wakeup.
		 */
		ret = -ENOSPC;
	} else {
		ret = ib_slot_try_get(sqp, nr, slots);
		/* Our credits, held for a moment, may have failed a scan. */
		if (unlikely(ret == -ENOSPC)) {
			LIST_HEAD(ready);

			ib_slot_kick(pool, &ready);
			ib_slot_defer(pool, &ready);
		}
	}
	if (ret) {
		atomic64_inc(&pool->exhausted);
		ib_slot_trace(pool, trace_ib_slot_exhausted);
	}
	return ret;
}

/**
 * ib_slot_get - take a slot and its credits without waiting
 * @sqp: the QP the slot will post on
 *
 * Reserves a slot of the pool and the worst-case Send Queue entries of its
 * lifetime on the QP, so that ib_slot_post() always finds room.  In a
 * no-exhaust pool failure is a bug of the caller, who took more than the
 * depth it sized the pool for: it warns.  In a back-pressure pool the
 * caller queues a waiter (ib_slot_get_or_wait()) and stops processing.
 *
 * Context: Process or softirq context; the slow path takes the pool's
 * lock with BHs off.  Does not sleep.
 * Return: a slot, or %NULL if none (or no credit) is available.
 */
struct ib_slot *ib_slot_get(struct ib_slot_qp *sqp)
{
	struct ib_slot *slot;
	int ret;

	ret = ib_slot_get_fast(sqp, 1, &slot);
	if (likely(!ret))
		return slot;
	/* Exhausting a no-exhaust pool means the ULP overran its depth. */
	if (ret == -ENOSPC || ret == -EBUSY)
		ib_slot_misuse(sqp->pool,
			       sqp->pool->policy == IB_SLOT_NO_EXHAUST);
	return NULL;
}
EXPORT_SYMBOL(ib_slot_get);

/**
 * ib_slot_get_bulk - take several slots, all or nothing
 * @sqp: the QP the slots will post on
 * @nr: number of slots, at most the QP's fair share
 * @slots: filled with @nr slots on success
 *
 * For a request that needs several rkeys.  Never leaves a partial
 * allocation behind.
 *
 * Context: Process or softirq context; the slow path takes the pool's
 * lock with BHs off.  Does not sleep.
 * Return: 0, or -EAGAIN if @nr slots (or their credits) are not available
 * now, -EINVAL if they never can be.
 */
int ib_slot_get_bulk(struct ib_slot_qp *sqp, unsigned int nr,
		     struct ib_slot **slots)
{
	int ret;

	if (ib_slot_bad_nr(sqp, nr))
		return -EINVAL;
	ret = ib_slot_get_fast(sqp, nr, slots);
	if (ret == -EINVAL || ret == -ESHUTDOWN)
		return ret;
	return ret ? -EAGAIN : 0;
}
EXPORT_SYMBOL(ib_slot_get_bulk);

/* An indexed pool's slot, already marked in use, is @sqp's now. */
static struct ib_slot *ib_slot_claim(struct ib_slot_qp *sqp,
				     struct ib_slot *slot)
{
	struct ib_slot_pool *pool = sqp->pool;
	int avail = atomic_dec_return(&pool->avail);

	atomic_inc(&sqp->nr_held);
	ib_slot_bind(sqp, slot);
	ib_slot_note_use(pool, avail);
	return slot;
}

/**
 * ib_slot_from_tag - take the slot of an indexed pool that a tag names
 * @sqp: the QP the slot will post on
 * @tag: the ULP's own tag (blk-mq tag, RPC slot), below the pool size
 *
 * There is no allocator: the ULP's tag space already guarantees that a tag
 * is used once at a time.
 *
 * Context: Any context.  Does not sleep.
 * Return: the slot, or %NULL (with a warning) if @tag is out of range or
 * its slot is still in use; %NULL without one when fault injection on
 * get (debugfs fail_get) fails the call.
 */
struct ib_slot *ib_slot_from_tag(struct ib_slot_qp *sqp, u32 tag)
{
	struct ib_slot_pool *pool = sqp->pool;
	struct ib_slot *slot;

	if (ib_slot_misuse(pool, !pool->indexed || tag >= pool->nr_tags ||
			   READ_ONCE(pool->dying)))
		return NULL;
	if (unlikely(ib_slot_should_fail(pool))) {
		atomic64_inc(&pool->exhausted);
		return NULL;
	}
	slot = ib_slot_at(pool, tag);
	if (ib_slot_misuse(pool, test_and_set_bit(IB_SLOT_F_IN_USE,
						  &slot->flags)))
		return NULL;
	return ib_slot_claim(sqp, slot);
}
EXPORT_SYMBOL(ib_slot_from_tag);

/**
 * ib_slot_get_reserved - take a reserved slot of an indexed pool
 * @sqp: the QP the slot will post on
 *
 * For messages that have no tag of the ULP (SRP task management, credit
 * and AER responses): the pool's @nr_reserved slots beyond its tags.  They
 * may all be in use, which is no bug: the ULP sends the message later, or
 * fails it.
 *
 * Context: Any context.  Does not sleep.
 * Return: a slot, or %NULL if every reserved slot is in use.
 */
struct ib_slot *ib_slot_get_reserved(struct ib_slot_qp *sqp)
{
	struct ib_slot_pool *pool = sqp->pool;
	struct ib_slot *slot;
	int bit;

	if (ib_slot_misuse(pool, !pool->indexed || READ_ONCE(pool->dying)))
		return NULL;
	bit = ib_slot_should_fail(pool) ? -1 : sbitmap_get(&pool->map);
	if (bit < 0) {
		atomic64_inc(&pool->exhausted);
		return NULL;
	}
	slot = ib_slot_at(pool, pool->nr_tags + bit);
	set_bit(IB_SLOT_F_IN_USE, &slot->flags);
	return ib_slot_claim(sqp, slot);
}
EXPORT_SYMBOL(ib_slot_get_reserved);

/**
 * ib_slot_get_or_wait - take slots, or queue a waiter for them
 * @w: the waiter: @w->sqp, @w->nr, @w->slots and @w->resume set by the
 *	caller
 *
 * Either fills @w->slots now, or queues @w at the tail of the pool's FIFO;
 * @w->resume then runs once the slots are granted, from the put that freed
 * them.  No wakeup is lost: resources returned while @w is being queued are
 * seen by the queueing or by the put.
 *
 * Context: Process or softirq context; the slow path takes the pool's
 * lock with BHs off.  Does not sleep.
 * Return: 0 if @w->slots were filled now, -EAGAIN if @w was queued, -EINVAL
 * if @w->nr slots can never be granted to the QP, -ESHUTDOWN if the pool
 * is being destroyed.
 */
int ib_slot_get_or_wait(struct ib_slot_waiter *w)
{
	struct ib_slot_pool *pool = w->sqp->pool;
	LIST_HEAD(ready);
	int ret;

	lockdep_assert_not_held(&pool->lock);
	if (ib_slot_bad_nr(w->sqp, w->nr))
		return -EINVAL;
	ret = ib_slot_get_fast(w->sqp, w->nr, w->slots);
	if (ret == -EINVAL || ret == -ESHUTDOWN || !ret)
		return ret;

	w->error = 0;
	spin_lock_bh(&pool->lock);
	if (unlikely(pool->dying)) {
		/* Destroy already flushed the queue: nobody would resume @w. */
		spin_unlock_bh(&pool->lock);
		return -ESHUTDOWN;
	}
	ib_slot_enqueue(w);
	/* Pairs with smp_mb__after_atomic() in ib_slot_kick(). */
	smp_mb();
	ib_slot_scan_waiters(pool, &ready);
	/* Granted at once: no resume, the caller has them. */
	ret = w->queued ? -EAGAIN : 0;
	if (!ret)
		list_del_init(&w->entry);
	spin_unlock_bh(&pool->lock);

	if (ret) {
		atomic64_inc(&pool->waits);
		ib_slot_trace(pool, trace_ib_slot_wait);
	}
	/* Waiters ahead of @w, granted by a put that raced with us. */
	ib_slot_defer(pool, &ready);
	return ret;
}
EXPORT_SYMBOL(ib_slot_get_or_wait);

/**
 * ib_slot_cancel_wait - take a queued waiter off its pool
 * @w: a waiter queued by ib_slot_get_or_wait()
 *
 * Context: Process or softirq context; the slow path takes the pool's
 * lock with BHs off.  Does not sleep.
 * Return: %true if @w was still queued and will not be resumed; %false if
 * it was already granted, so its resume has run or is about to run and
 * owns @w->slots.
 */
bool ib_slot_cancel_wait(struct ib_slot_waiter *w)
{
	struct ib_slot_pool *pool = w->sqp->pool;
	LIST_HEAD(ready);
	bool queued;

	spin_lock_bh(&pool->lock);
	queued = w->queued;
	if (queued) {
		ib_slot_unqueue(w, NULL);
		/* @w may have held back smaller requests behind it. */
		ib_slot_scan_waiters(pool, &ready);
	}
	spin_unlock_bh(&pool->lock);
	ib_slot_defer(pool, &ready);
	return queued;
}
EXPORT_SYMBOL(ib_slot_cancel_wait);

struct ib_slot_sleeper {
	struct ib_slot_waiter	w;
	struct completion	done;
};

static void ib_slot_wake_sleeper(struct ib_slot_waiter *w)
{
	complete(&container_of(w, struct ib_slot_sleeper, w)->done);
}

/**
 * ib_slot_get_wait - take slots, sleeping until they are available
 * @sqp: the QP the slots will post on
 * @nr: number of slots, all or nothing
 * @slots: filled with @nr slots on success
 *
 * Context: Process context; sleeps until the slots are granted, the task
 * is killed, or the pool is destroyed.
 * Return: 0, -EINTR if killed, -ESHUTDOWN if the pool is being destroyed,
 * -EINVAL if @nr slots can never be granted to the QP.
 */
int ib_slot_get_wait(struct ib_slot_qp *sqp, unsigned int nr,
		     struct ib_slot **slots)
{
	struct ib_slot_sleeper s = {
		.w = { .sqp = sqp, .nr = nr, .slots = slots,
		       .resume = ib_slot_wake_sleeper },
	};
	unsigned int i;
	int ret;

	might_sleep();
	init_completion(&s.done);
	INIT_LIST_HEAD(&s.w.entry);
	ret = ib_slot_get_or_wait(&s.w);
	if (ret != -EAGAIN)
		return ret;
	if (!wait_for_completion_killable(&s.done))
		return s.w.error;
	if (ib_slot_cancel_wait(&s.w))
		return -EINTR;
	/* Granted while we were killed: wait for the grant, give it back. */
	wait_for_completion(&s.done);
	if (s.w.error)
		return s.w.error;
	for (i = 0; i < nr; i++)
		ib_slot_put(slots[i]);
	return -EINTR;
}
EXPORT_SYMBOL(ib_slot_get_wait);

/*
 * Forget MRs mapped but never posted: the next lifetime must not post their
 * REG_MR, and the key the device knows is still the one registered last.
 */
static void ib_slot_unmap(struct ib_slot *slot)
{
	unsigned int i;

	for_each_set_bit(i, slot->mapped, IB_SLOT_MAX_MRS) {
		struct ib_slot_mr *smr = &slot->mrs[i];

		ib_update_fast_reg_key(smr->mr,
				       smr->inv_wr.ex.invalidate_rkey & 0xff);
	}
	bitmap_zero(slot->mapped, IB_SLOT_MAX_MRS);
}

/**
 * ib_slot_put - return a slot and its credits
 * @slot: a slot whose posts have all completed
 *
 * Wakes waiters of the pool if the slot (and its QP's credits) let them
 * go.  Putting a slot with a post or fence outstanding, or twice, is a bug:
 * it warns and leaves the slot alone.
 *
 * Context: Process or softirq context (any context an &struct ib_cq
 * completion runs in).  Does not sleep.
 */
void ib_slot_put(struct ib_slot *slot)
{
	struct ib_slot_pool *pool = slot->pool;
	struct ib_slot_qp *sqp = slot->sqp;
	LIST_HEAD(ready);
	int avail;

	if (ib_slot_misuse(pool, ib_slot_outstanding(slot)))
		return;
	if (ib_slot_misuse(pool, !test_and_clear_bit(IB_SLOT_F_IN_USE,
						     &slot->flags)))
		return;
	if (unlikely(!bitmap_empty(slot->mapped, IB_SLOT_MAX_MRS)))
		ib_slot_unmap(slot);
	slot->sqp = NULL;
	atomic_dec(&sqp->nr_held);
	if (!pool->indexed)
		ib_slot_free_tag(pool, slot->tag);
	else if (slot->tag >= pool->nr_tags)
		sbitmap_put(&pool->map, slot->tag - pool->nr_tags);
	/*
	 * Once the slot is back, a destroy may free the pool: it waits for
	 * this read-side section (synchronize_rcu()) before it does.
	 */
	rcu_read_lock();
	/* Pairs with the atomic_read_acquire() in ib_slot_pool_destroy(). */
	avail = atomic_inc_return_release(&pool->avail);
	if (unlikely(READ_ONCE(pool->dying))) {
		if (avail == pool->nr_slots)
			wake_up_var(&pool->avail);
	} else if (!pool->indexed) {
		/* Indexed pools refuse waiters (ib_slot_get_fast()). */
		ib_slot_kick(pool, &ready);
		if (unlikely(pool->resume_in_work))
			ib_slot_defer(pool, &ready);
	}
	rcu_read_unlock();
	/* The slots the waiters were granted keep @pool alive. */
	ib_slot_resume_all(pool, &ready);
}
EXPORT_SYMBOL(ib_slot_put);

/**
 * ib_slot_map_mr - map a scatterlist onto one of a slot's MRs
 * @slot: the slot
 * @idx: which MR (rkey-side MRs come first)
 * @sg: DMA-mapped scatterlist
 * @sg_nents: entries in @sg
 * @sg_offset: byte offset into @sg, updated as ib_map_mr_sg() does
 * @access: IB_ACCESS_* flags of the registration
 *
 * Prepares the REG_MR WR that the next ib_slot_post() puts in front of the
 * caller's WRs, preceded by a LOCAL_INV if the MR is still valid.  The
 * rkey changes with every registration, so a stale rkey held by the peer
 * cannot reach the new buffer.
 *
 * Context: Any context.
 * Return: the number of @sg entries mapped, -EINVAL for a bad @idx or a
 * slot not in use, -EBUSY while a post or fence of the slot is
 * outstanding, or the error of ib_map_mr_sg().
 */
int ib_slot_map_mr(struct ib_slot *slot, unsigned int idx,
		   struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset, int access)
{
	struct ib_slot_mr *smr;
	int n;

	if (ib_slot_misuse(slot->pool, idx >= slot->nr_mrs ||
			   !test_bit(IB_SLOT_F_IN_USE, &slot->flags)))
		return -EINVAL;
	/* The WRs of an outstanding post or fence are the device's now. */
	if (ib_slot_misuse(slot->pool, ib_slot_outstanding(slot)))
		return -EBUSY;
	smr = &slot->mrs[idx];
	n = ib_map_mr_sg(smr->mr, sg, sg_nents, sg_offset,
			 1U << (slot->pool->profile.page_shift ?: PAGE_SHIFT));
	if (n <= 0)
		return n < 0 ? n : -EINVAL;
	/* Mapped again before the post: the registered key is unchanged. */
	if (!test_bit(idx, slot->mapped)) {
		smr->inv_wr.ex.invalidate_rkey = smr->mr->rkey;
		ib_update_fast_reg_key(smr->mr, ib_inc_rkey(smr->mr->rkey));
	}
	smr->reg_wr.key = smr->mr->rkey;
	smr->reg_wr.access = access;
	/* Until ib_slot_post() makes one of them the signaled tail. */
	smr->reg_wr.wr.wr_cqe = &slot->aux_cqe;
	smr->reg_wr.wr.send_flags = 0;
	smr->inv_wr.wr_cqe = &slot->aux_cqe;
	smr->inv_wr.send_flags = 0;
	__set_bit(idx, slot->mapped);
	return n;
}
EXPORT_SYMBOL(ib_slot_map_mr);

/* Send Queue units of @wr, or 0 if the device cannot post it. */
static u32 ib_slot_wr_units(struct ib_slot_pool *pool,
			    const struct ib_send_wr *wr)
{
	return wr->opcode < IB_SLOT_NR_OPCODES ? pool->units[wr->opcode] : 0;
}

static void ib_slot_chain(struct ib_slot_pool *pool, struct ib_send_wr ***tail,
			  struct ib_send_wr *wr, u32 *n)
{
	**tail = wr;
	*tail = &wr->next;
	*n += ib_slot_wr_units(pool, wr);
}

/**
 * ib_slot_rdma_needs_mr - whether an RDMA transfer must go through an MR
 * @slot: a slot bound to a QP
 * @dir: %DMA_FROM_DEVICE for the sink of an RDMA READ, %DMA_TO_DEVICE for
 *	the source of an RDMA WRITE
 * @sg_cnt: DMA-mapped entries to transfer
 *
 * The decision rdma_rw makes: iWARP requires the sink of an RDMA READ to be
 * registered with remote write access, and a device with max_sgl_rd reads
 * long lists faster through an MR than with many SGEs.  When it says so,
 * the transfer takes one of the slot's lkey MRs (ib_slot_map_mr()),
 * otherwise SGEs straight from @sg.
 *
 * Context: Any context.
 * Return: %true if the transfer needs an lkey MR.
 */
bool ib_slot_rdma_needs_mr(const struct ib_slot *slot,
			   enum dma_data_direction dir, u32 sg_cnt)
{
	struct ib_device *dev = slot->pool->dev;

	if (dir != DMA_FROM_DEVICE)
		return false;
	if (rdma_node_get_transport(dev->node_type) == RDMA_TRANSPORT_IWARP)
		return true;
	return dev->attrs.max_sgl_rd && sg_cnt > dev->attrs.max_sgl_rd;
}
EXPORT_SYMBOL(ib_slot_rdma_needs_mr);

/* The index of the slot MR whose REG_MR or LOCAL_INV @wr is, or -1. */
static int ib_slot_wr_mr(const struct ib_slot *slot,
			 const struct ib_send_wr *wr)
{
	const void *p = wr, *mrs = slot->mrs;

	if (p < mrs || p >= mrs + slot->nr_mrs * sizeof(*slot->mrs))
		return -1;
	return (p - mrs) / sizeof(*slot->mrs);
}

/*
 * The provider refused @bad and what follows it.  Nothing refused can
 * complete, and what it took is unsignaled: no done() comes, so the slot
 * is still ours.  An MR whose REG_MR went out may hold its new key and
 * is invalidated before reuse; the others keep their mapping for a retry.
 * The refused WRs give their units back; the accepted ones stay charged,
 * as the Send Queue frees them only with a later signaled completion.
 */
static void ib_slot_unpost(struct ib_slot *slot, struct ib_send_wr *first,
			   const struct ib_send_wr *bad, unsigned long *mapped,
			   const unsigned long *had_key, u32 n)
{
	struct ib_slot_pool *pool = slot->pool;
	struct ib_send_wr *wr;
	u32 inv = 0;
	int i;

	for (wr = first; wr && wr != bad; wr = wr->next) {
		n -= ib_slot_wr_units(pool, wr);
		i = ib_slot_wr_mr(slot, wr);
		if (i < 0)
			continue;
		if (wr->opcode == IB_WR_LOCAL_INV)
			inv++;
		else
			__clear_bit(i, mapped);
	}
	for_each_set_bit(i, mapped, IB_SLOT_MAX_MRS)
		slot->mrs[i].mr->need_inval = test_bit(i, had_key);
	bitmap_copy(slot->mapped, mapped, IB_SLOT_MAX_MRS);
	slot->sq_used -= n;
	if (inv)
		atomic64_add(inv, &pool->local_inv);
	atomic_sub(IB_SLOT_POSTED + 1, &slot->busy);
	if (bad != first)
		dev_warn_ratelimited(&pool->dev->dev,
				     "ib_slot: %s: provider took part of a post\n",
				     pool->name);
}

/* Whether the QP accepts @wr: refused here, it never reaches the doorbell. */
static bool ib_slot_wr_fits(const struct ib_slot_qp *sqp,
			    const struct ib_send_wr *wr)
{
	u32 max = wr->opcode == IB_WR_RDMA_READ ? sqp->max_read_sge :
						   sqp->max_send_sge;

	return wr->num_sge <= max;
}

/**
 * ib_slot_post - post a chain of WRs through a slot
 * @slot: the slot, with no post outstanding
 * @wr: the caller's chain (RDMA READ/WRITE, SEND, ...), or %NULL
 *
 * Posts, with one doorbell, [LOCAL_INV][REG_MR] for every MR mapped since
 * the last post, then @wr.  Every WR carries a completion entry of the
 * slot; only the last one is signaled, and the pool's done callback runs
 * once when it completes or is flushed.  The chain is charged against the
 * slot's credits, reserved at get, so the provider never lacks room, and
 * checked against what the QP accepts before the doorbell.
 *
 * The post may complete, and done() put the slot, before this returns:
 * once the chain is handed over, this touches neither @slot nor its pool.
 *
 * Context: Any context.
 * Return: 0, -EBUSY if a post is outstanding, -ENOSPC if the chain exceeds
 * the slot's profile, -EINVAL if the slot is not in use, the chain is empty
 * or holds a WR the QP cannot take (opcode, SGE count), or the provider's
 * error if it refused the chain; then nothing of the chain is outstanding.
 */
int ib_slot_post(struct ib_slot *slot, struct ib_send_wr *wr)
{
	struct ib_slot_pool *pool = slot->pool;
	struct ib_send_wr *first = NULL, **tail = &first, *last;
	DECLARE_BITMAP(had_key, IB_SLOT_MAX_MRS);
	DECLARE_BITMAP(mapped, IB_SLOT_MAX_MRS);
	const struct ib_send_wr *bad;
	u32 i, n = 0, inv = 0;
	int ret;

	if (ib_slot_misuse(pool, !test_bit(IB_SLOT_F_IN_USE, &slot->flags)))
		return -EINVAL;
	/* One post at a time, none once fenced: it would escape the fence. */
	if (ib_slot_misuse(pool, ib_slot_outstanding(slot)))
		return -EBUSY;

	bitmap_copy(mapped, slot->mapped, IB_SLOT_MAX_MRS);
	bitmap_zero(had_key, IB_SLOT_MAX_MRS);
	for_each_set_bit(i, mapped, IB_SLOT_MAX_MRS) {
		struct ib_slot_mr *smr = &slot->mrs[i];

		if (smr->mr->need_inval) {
			ib_slot_chain(pool, &tail, &smr->inv_wr, &n);
			__set_bit(i, had_key);
			inv++;
		}
		ib_slot_chain(pool, &tail, &smr->reg_wr.wr, &n);
	}
	/* ib_slot_map_mr() stamped the MR WRs already. */
	for (*tail = wr; wr; wr = wr->next) {
		u32 units = ib_slot_wr_units(pool, wr);

		if (ib_slot_misuse(pool, !units ||
				   !ib_slot_wr_fits(slot->sqp, wr)))
			return -EINVAL;
		n += units;
		wr->wr_cqe = &slot->aux_cqe;
		wr->send_flags &= ~IB_SEND_SIGNALED;
		tail = &wr->next;
	}
	/* Every WR costs at least one unit: a chain of none is empty. */
	if (!n)
		return -EINVAL;
	if (ib_slot_misuse(pool, slot->sq_used + n > pool->cost.sqes))
		return -ENOSPC;

	last = container_of(tail, struct ib_send_wr, next);
	/*
	 * The signaled tail runs done() once per completion: a WR the
	 * device completes several times (an integrity registration on
	 * mlx5 is two signaled UMRs) must be followed by one that does not.
	 */
	if (ib_slot_misuse(pool, last->opcode < IB_SLOT_NR_OPCODES &&
			   test_bit(last->opcode, &pool->multi_cqe)))
		return -EINVAL;
	last->wr_cqe = &slot->cqe;
	last->send_flags |= IB_SEND_SIGNALED;

	/*
	 * Everything of the post is written before the doorbell: its
	 * completion may run done(), and done() put the slot for its next
	 * owner, before ib_post_send() returns.  A registered MR is valid
	 * until invalidated.
	 */
	for_each_set_bit(i, mapped, IB_SLOT_MAX_MRS)
		slot->mrs[i].mr->need_inval = true;
	slot->status = IB_WC_SUCCESS;
	slot->sq_used += n;
	bitmap_zero(slot->mapped, IB_SLOT_MAX_MRS);
	if (inv)
		atomic64_add(inv, &pool->local_inv);
	atomic_add(IB_SLOT_POSTED + 1, &slot->busy);
	ret = ib_post_send(slot->sqp->qp, first, &bad);
	if (unlikely(ret)) {
		if (inv)
			atomic64_sub(inv, &pool->local_inv);
		ib_slot_unpost(slot, first, bad, mapped, had_key, n);
	}
	return ret;
}
EXPORT_SYMBOL(ib_slot_post);

/*
 * The fence's LOCAL_INV chain failed or was flushed, so its rkeys may be
 * live: replace the MRs, in process context, before fenced() may let the
 * memory go.  An allocation that fails is retried; meanwhile the fence
 * stays armed and the slot held, so nothing reuses the memory.
 */
static void ib_slot_recycle_work(struct work_struct *work)
{
	struct ib_slot_pool *pool = container_of(to_delayed_work(work),
						 struct ib_slot_pool,
						 recycle_work);
	struct llist_node *list = llist_del_all(&pool->recycle);
	struct ib_slot *slot, *tmp;
	unsigned int i;

	list = llist_reverse_order(list);
	llist_for_each_entry_safe(slot, tmp, list, recycle) {
		for (i = 0; i < pool->profile.nr_rkey_mrs; i++) {
			struct ib_slot_mr *smr = &slot->mrs[i];
			struct ib_mr *mr;

			if (!smr->mr->need_inval)
				continue;
			mr = ib_slot_new_mr(pool, ib_slot_mr_pi(pool, i));
			if (IS_ERR(mr))
				break;
			/* Deregistering kills the rkey, valid or not. */
			ib_dereg_mr(smr->mr);
			smr->mr = mr;
			smr->reg_wr.mr = mr;
			atomic64_inc(&pool->recycled);
		}
		if (i < pool->profile.nr_rkey_mrs) {
			dev_warn_ratelimited(&pool->dev->dev,
					     "ib_slot: %s: no memory to replace an MR; retrying\n",
					     pool->name);
			llist_add(&slot->recycle, &pool->recycle);
			queue_delayed_work(ib_comp_unbound_wq,
					   &pool->recycle_work, HZ / 10);
			continue;
		}
		clear_bit(IB_SLOT_F_RECYCLE, &slot->flags);
		atomic_set(&slot->busy, 0);
		slot->fenced(slot, slot->fence_status);
	}
}

/*
 * A post, LOCAL_INV chain or fence hold of @slot retired; the last one
 * runs an armed fence.  Arming and the count share one atomic, so a post
 * that retired before the fence was armed cannot see it armed.
 */
static void ib_slot_unbusy(struct ib_slot *slot)
{
	struct ib_slot_pool *pool = slot->pool;

	/* Pairs with the smp_mb__before_atomic() in ib_slot_fence(). */
	if (atomic_dec_return(&slot->busy) != IB_SLOT_FENCE_ARMED)
		return;
	if (unlikely(test_bit(IB_SLOT_F_RECYCLE, &slot->flags))) {
		llist_add(&slot->recycle, &pool->recycle);
		queue_delayed_work(ib_comp_unbound_wq, &pool->recycle_work, 0);
		return;
	}
	/* Nothing is outstanding and a fenced slot posts no more. */
	atomic_set(&slot->busy, 0);
	slot->fenced(slot, slot->fence_status);
}

/* Keep the first error of a chain: the rest are flushes it caused. */
static void ib_slot_wc_error(enum ib_wc_status *status, const struct ib_wc *wc)
{
	if (unlikely(wc->status != IB_WC_SUCCESS) && *status == IB_WC_SUCCESS)
		*status = wc->status;
}

static void ib_slot_wc_aux(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ib_slot *slot = container_of(wc->wr_cqe, struct ib_slot,
					    aux_cqe);

	ib_slot_wc_error(&slot->status, wc);
}

static void ib_slot_wc_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ib_slot *slot = container_of(wc->wr_cqe, struct ib_slot, cqe);
	/*
	 * Written before use, and only on the error path: no auto-init, or
	 * every successful completion would clear it.
	 */
	struct ib_wc first __uninitialized;

	ib_slot_wc_error(&slot->status, wc);
	if (unlikely(slot->status != wc->status)) {
		/* Report the error that started a flush, not the flush. */
		first = *wc;
		first.status = slot->status;
		wc = &first;
	}
	/*
	 * done() may post again, or put the slot if no fence is armed; the
	 * count stays, so that a fence never runs before done() returns.
	 * If done() put the slot, a destroy may free the pool once it is
	 * back: it waits for this read-side section first.
	 */
	rcu_read_lock();
	atomic_sub(IB_SLOT_POSTED, &slot->busy);
	slot->pool->done(slot, wc);
	/*
	 * Only a count from here on: if done() put the slot, its next owner
	 * balances its own posts, and whoever reaches zero runs the fence.
	 */
	ib_slot_unbusy(slot);
	rcu_read_unlock();
}

/*
 * The signaled tail of a fence.  The LOCAL_INVs before it are unsignaled
 * and carry aux_cqe: a QP flushes everything after an error in order, so
 * this one fails if any of them did, and it is the only one that counts.
 */
static void ib_slot_wc_inv(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ib_slot *slot = container_of(wc->wr_cqe, struct ib_slot,
					    inv_cqe);

	if (unlikely(wc->status != IB_WC_SUCCESS)) {
		unsigned int i;

		slot->fence_status = wc->status;
		/* The rkeys may still be valid: replace them before fenced(). */
		for (i = 0; i < slot->pool->profile.nr_rkey_mrs; i++)
			slot->mrs[i].mr->need_inval = true;
		set_bit(IB_SLOT_F_RECYCLE, &slot->flags);
	}
	ib_slot_unbusy(slot);
}

static struct ib_mr *ib_slot_inv_mr(struct ib_slot *slot,
				    struct ib_send_wr *inv_wr)
{
	return container_of(inv_wr, struct ib_slot_mr, inv_wr)->mr;
}

static int __ib_slot_fence(struct ib_slot *slot, bool remote, u32 inv_rkey,
			   void (*fenced)(struct ib_slot *slot,
					  enum ib_wc_status status))
{
	struct ib_slot_pool *pool = slot->pool;
	struct ib_send_wr *first = NULL, **tail = &first, *last = NULL, *wr;
	u32 i, n = 0, nr_inv = 0;
	const struct ib_send_wr *bad;

	if (ib_slot_misuse(pool, !test_bit(IB_SLOT_F_IN_USE, &slot->flags)))
		return -EINVAL;
	if (ib_slot_misuse(pool, atomic_read(&slot->busy) &
				 IB_SLOT_FENCE_ARMED))
		return -EBUSY;

	for (i = 0; i < pool->profile.nr_rkey_mrs; i++) {
		struct ib_slot_mr *smr = &slot->mrs[i];

		if (!smr->mr->need_inval)
			continue;
		if (remote && inv_rkey == smr->mr->rkey) {
			smr->mr->need_inval = false;
			atomic64_inc(&pool->remote_inv);
			continue;
		}
		smr->inv_wr.ex.invalidate_rkey = smr->mr->rkey;
		smr->inv_wr.wr_cqe = &slot->aux_cqe;
		smr->inv_wr.send_flags = 0;
		ib_slot_chain(pool, &tail, &smr->inv_wr, &n);
		last = &smr->inv_wr;
		nr_inv++;
	}
	*tail = NULL;
	if (nr_inv && ib_slot_misuse(pool, slot->sq_used + n > pool->cost.sqes))
		return -ENOSPC;

	/*
	 * Arm with a hold of our own, so that no completion runs @fenced
	 * before the LOCAL_INVs are posted.
	 */
	slot->fenced = fenced;
	slot->fence_status = IB_WC_SUCCESS;
	/*
	 * Pairs with atomic_dec_return() in ib_slot_unbusy(): whoever finds
	 * the fence armed finds @fenced.
	 */
	smp_mb__before_atomic();
	atomic_add(IB_SLOT_FENCE_ARMED + 1, &slot->busy);
	if (nr_inv) {
		/* One count for the chain: only its tail completes for sure. */
		last->wr_cqe = &slot->inv_cqe;
		last->send_flags = IB_SEND_SIGNALED;
		/* Before the post: its completion may report them unknown. */
		for (wr = first; wr; wr = wr->next)
			ib_slot_inv_mr(slot, wr)->need_inval = false;
		slot->sq_used += n;
		atomic64_add(nr_inv, &pool->local_inv);
		atomic_inc(&slot->busy);
		if (unlikely(ib_post_send(slot->sqp->qp, first, &bad))) {
			/*
			 * A QP that refuses the chain is dead or dying: its
			 * rkeys stay as they were, so replace the MRs as for
			 * a flush.  Our hold keeps the slot ours meanwhile.
			 */
			for (wr = first; wr; wr = wr->next)
				ib_slot_inv_mr(slot, wr)->need_inval = true;
			slot->fence_status = IB_WC_WR_FLUSH_ERR;
			set_bit(IB_SLOT_F_RECYCLE, &slot->flags);
			atomic_dec(&slot->busy);
		}
	}
	ib_slot_unbusy(slot);
	return 0;
}

/**
 * ib_slot_fence - make sure the peer can no longer reach a slot's memory
 * @slot: a slot of a pool whose profile fences synchronously
 * @wc: the Receive completion of the peer's reply, or %NULL
 * @fenced: called once every rkey MR of @slot is invalid and every post of
 *	@slot has completed, with the status of the LOCAL_INV chain
 *
 * If the peer invalidated an rkey itself (%IB_WC_WITH_INVALIDATE in @wc),
 * that MR needs no LOCAL_INV.  The others are invalidated by a chain of
 * LOCAL_INV WRs posted from the slot's credits.  If that chain fails or is
 * flushed (the QP went to error), the MRs are replaced by fresh ones from
 * a work item before @fenced runs, so that @fenced never runs while an
 * rkey of the slot is live, also then.  @fenced may run before this
 * returns.  The caller puts the slot from @fenced, not before.
 *
 * Context: Any context.
 * Return: 0 once the fence is armed (@fenced will run, with
 * %IB_WC_WR_FLUSH_ERR if the QP refused the chain), -EINVAL if @slot is
 * not in use, -EBUSY if a fence is already armed, -ENOSPC if the slot's
 * credits cannot hold the chain; then @fenced is not called.
 */
int ib_slot_fence(struct ib_slot *slot, const struct ib_wc *wc,
		  void (*fenced)(struct ib_slot *slot,
				 enum ib_wc_status status))
{
	bool remote = wc && (wc->wc_flags & IB_WC_WITH_INVALIDATE);

	return __ib_slot_fence(slot, remote, remote ? wc->ex.invalidate_rkey : 0,
			       fenced);
}
EXPORT_SYMBOL(ib_slot_fence);

/**
 * ib_slot_fence_rkey - ib_slot_fence() for a ULP that kept only the rkey
 * @slot: a slot of a pool whose profile fences synchronously
 * @inv_rkey: the rkey the peer invalidated (the Receive completion's
 *	ex.invalidate_rkey with %IB_WC_WITH_INVALIDATE)
 * @fenced: as for ib_slot_fence()
 *
 * The MR that @inv_rkey names needs no LOCAL_INV; the others are
 * invalidated as ib_slot_fence() does.  A ULP without an invalidated rkey
 * calls ib_slot_fence() with a %NULL @wc.
 *
 * Context: Any context.
 * Return: as ib_slot_fence().
 */
int ib_slot_fence_rkey(struct ib_slot *slot, u32 inv_rkey,
		       void (*fenced)(struct ib_slot *slot,
				      enum ib_wc_status status))
{
	return __ib_slot_fence(slot, true, inv_rkey, fenced);
}
EXPORT_SYMBOL(ib_slot_fence_rkey);

void __init ib_slot_init(void)
{
	ib_slot_debugfs_root = debugfs_create_dir("ib_slot", NULL);
}

void ib_slot_cleanup(void)
{
	debugfs_remove_recursive(ib_slot_debugfs_root);
}
