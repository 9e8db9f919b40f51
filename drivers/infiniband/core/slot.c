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
 *
 * This file creates and destroys pools and attaches QPs.  A pool outlives
 * every access to it: destroy removes debugfs first (debugfs_remove()
 * waits for its readers), then waits for every slot to come back, then for
 * the RCU read-side sections in which the last put may still read the pool
 * (synchronize_rcu()), then for the completions whose done() put their
 * slot to drop the post's count, and only then frees it.
 * Debugfs never dereferences a QP: it prints the number copied at attach,
 * and the qp_error knob holds qps_mutex, which detach takes too.
 */
#include <kunit/visibility.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/module.h>
#include <linux/percpu.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>

#include "core_priv.h"
#include "slot_priv.h"

static struct dentry *ib_slot_debugfs_root;
/* Off until set through debugfs. */
static DECLARE_FAULT_ATTR(ib_slot_fail_get_off);
static DEFINE_IDA(ib_slot_ida);

static void ib_slot_free_mrs(struct ib_slot_pool *pool)
{
	u32 i, nr = pool->nr_slots * pool->profile.nr_rkey_mrs;

	for (i = 0; i < nr; i++)
		if (pool->mrs[i].mr)
			ib_dereg_mr(pool->mrs[i].mr);
	kvfree(pool->mrs);
}

/* MR @i of a slot: the rkey-side MRs of an integrity profile are PI MRs. */
bool ib_slot_mr_pi(const struct ib_slot_pool *pool, unsigned int i)
{
	return pool->profile.integrity && i < pool->profile.nr_rkey_mrs;
}

/* ib_slot/fail_mr/: a device that can no longer create MRs, for tests. */
static DECLARE_FAULT_ATTR(ib_slot_fail_mr);

struct ib_mr *ib_slot_new_mr(struct ib_slot_pool *pool, bool pi)
{
	u32 pages = pool->profile.max_pages_per_mr;

	if (should_fail(&ib_slot_fail_mr, 1))
		return ERR_PTR(-ENOMEM);

	if (pi)
		return ib_alloc_mr_integrity(pool->pd, pages, pages);
	return ib_alloc_mr(pool->pd, pool->profile.sg_gaps ?
			   IB_MR_TYPE_SG_GAPS : IB_MR_TYPE_MEM_REG, pages);
}

static int ib_slot_alloc_mrs(struct ib_slot_pool *pool)
{
	u32 per_slot = pool->profile.nr_rkey_mrs;
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
	seq_printf(s, "misuse: %llu\nremote_inv: %llu\nbad_remote_inv: %llu\n",
		   st.misuse, st.remote_inv, st.bad_remote_inv);
	seq_printf(s, "local_inv: %llu\n", st.local_inv);
	seq_printf(s, "recycled: %llu\nretired: %u\nreserved: %u\n",
		   st.recycled, st.retired, st.nr_reserved);
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
 * ib_slot/<pool>/: stats, and with CONFIG_FAULT_INJECTION_DEBUG_FS the
 * fault knobs: qp_error, which moves a QP to the error state, and
 * fail_get/, which makes gets fail as if the pool were exhausted.  A
 * production kernel cannot fault a QP from debugfs.
 */
static void ib_slot_debugfs_add(struct ib_slot_pool *pool)
{
	pool->debugfs = debugfs_create_dir(pool->name, ib_slot_debugfs_root);
	debugfs_create_file("stats", 0400, pool->debugfs, pool,
			    &ib_slot_pool_fops);
	if (!IS_ENABLED(CONFIG_FAULT_INJECTION_DEBUG_FS))
		return;
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
	pool->refuse_get = attr->indexed;
	pool->resume_in_work = attr->resume_in_work;
	pool->nr_tags = attr->nr_slots;
	pool->nr_slots = attr->nr_slots + attr->nr_reserved;
	pool->done = attr->done;
	pool->fail_get = ib_slot_fail_get_off;
	pool->slot_size = ALIGN(sizeof(struct ib_slot), SMP_CACHE_BYTES) +
			  ALIGN(attr->priv_size, SMP_CACHE_BYTES);
	ib_slot_fill_units(pool);
	atomic_set(&pool->avail, pool->nr_slots);
	pool->low_avail = pool->nr_slots;
	spin_lock_init(&pool->lock);
	mutex_init(&pool->qps_mutex);
	INIT_LIST_HEAD(&pool->waiters);
	INIT_LIST_HEAD(&pool->granted);
	INIT_LIST_HEAD(&pool->qps);
	INIT_WORK(&pool->resume_work, ib_slot_resume_work);
	init_llist_head(&pool->recycle);
	INIT_WORK(&pool->recycle_work, ib_slot_recycle_work);
	INIT_DELAYED_WORK(&pool->replace_work, ib_slot_replace_work);
	init_llist_head(&pool->partial);
	INIT_WORK(&pool->partial_work, ib_slot_partial_work);
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
		slot->sq_max = cost.sqes;
		slot->cqe.done = ib_slot_wc_done;
		slot->aux_cqe.done = ib_slot_wc_aux;
		slot->inv_cqe.done = ib_slot_wc_inv;
		slot->tail_cqe.done = ib_slot_wc_tail;
	}
	ret = ib_slot_alloc_mrs(pool);
	if (ret)
		goto out_free;

	ib_slot_debugfs_add(pool);
	ib_slot_trace(pool, pool_create);
	return pool;

out_free:
	ib_slot_pool_free(pool);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL(ib_slot_pool_create);

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
 * waiters are resumed with -ESHUTDOWN from the work item, and the call
 * waits until every slot was put and every resume returned; every ten
 * seconds meanwhile it logs which slots are still held.  QPs still
 * attached are detached.  Call it after ib_drain_qp() on
 * the QPs that used the pool, so that every post has completed.
 *
 * Context: Process context; sleeps until all slots are put.
 */
void ib_slot_pool_destroy(struct ib_slot_pool *pool)
{
	struct ib_slot_qp *sqp, *stmp;
	struct ib_slot_waiter *w;
	u32 tag;

	if (!pool)
		return;
	might_sleep();
	ib_slot_trace(pool, pool_destroy);
	/* Waits for readers and knobs: nothing they use is freed under them. */
	debugfs_remove(pool->debugfs);

	spin_lock_bh(&pool->lock);
	WRITE_ONCE(pool->dying, true);
	WRITE_ONCE(pool->refuse_get, true);
	while ((w = list_first_entry_or_null(&pool->waiters,
					     struct ib_slot_waiter, entry)))
		ib_slot_shut_out(w);
	spin_unlock_bh(&pool->lock);
	/* Waiters granted before we came own slots: let them have them. */
	queue_work(ib_comp_unbound_wq, &pool->resume_work);
	flush_work(&pool->resume_work);

	/* Pairs with the atomic_inc_return_release() in ib_slot_put(). */
	while (!wait_var_event_timeout(&pool->avail,
				       atomic_read_acquire(&pool->avail) ==
				       pool->nr_slots, 10 * HZ))
		ib_slot_report_held(pool);
	/* The last put may still be reading the pool, under RCU. */
	synchronize_rcu();
	/*
	 * A completion whose done() put its slot drops the post's count
	 * after done() returns; done() may sleep, so no RCU section covers
	 * it.  Nothing else is outstanding on a slot that was put.
	 */
	for (tag = 0; tag < pool->nr_slots; tag++) {
		struct ib_slot *slot = ib_slot_at(pool, tag);
		unsigned long warn = jiffies + 10 * HZ;

		while (atomic_read_acquire(&slot->busy)) {
			if (time_after(jiffies, warn)) {
				dev_warn(&pool->dev->dev,
					 "ib_slot: %s: destroy waits for slot %u (busy %#x)\n",
					 pool->name, tag,
					 atomic_read(&slot->busy));
				warn = jiffies + 10 * HZ;
			}
			usleep_range(50, 100);
		}
	}
	/* Fences recycle before fenced() and the put: nothing is queued. */
	cancel_work_sync(&pool->recycle_work);
	/* Dying: a retired slot keeps no MR, which the free below skips. */
	cancel_delayed_work_sync(&pool->replace_work);
	cancel_work_sync(&pool->resume_work);
	/* A partial post is retired by its work: its slot came back after. */
	flush_work(&pool->partial_work);

	/* A put's resume loop may still count a resume on them. */
	list_for_each_entry_safe(sqp, stmp, &pool->qps, entry) {
		ib_slot_qp_quiesce(sqp);
		kfree(sqp);
	}
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
	stats->high_water = pool->nr_slots - READ_ONCE(pool->low_avail);
	stats->nr_waiters = atomic_read(&pool->nr_waiters);
	stats->nr_reserved = pool->nr_slots - pool->nr_tags;
	stats->exhausted = atomic64_read(&pool->exhausted);
	stats->waits = atomic64_read(&pool->waits);
	stats->resumed = atomic64_read(&pool->resumed);
	stats->misuse = atomic64_read(&pool->misuse);
	stats->remote_inv = atomic64_read(&pool->remote_inv);
	stats->bad_remote_inv = atomic64_read(&pool->bad_remote_inv);
	stats->local_inv = atomic64_read(&pool->local_inv);
	stats->recycled = atomic64_read(&pool->recycled);
	stats->retired = atomic_read(&pool->nr_retired);
}
EXPORT_SYMBOL_IF_KUNIT(ib_slot_pool_get_stats);

/**
 * ib_slot_pool_sqes - Send Queue entries one slot of a pool holds
 * @pool: the pool
 *
 * For a ULP that sizes a connection's share of a pool from a Send Queue
 * size of its own (a module parameter, the device's largest).
 *
 * Context: Any context.
 * Return: the worst-case Send Queue entries of one slot's lifetime.
 */
u32 ib_slot_pool_sqes(const struct ib_slot_pool *pool)
{
	return pool->cost.sqes;
}
EXPORT_SYMBOL(ib_slot_pool_sqes);

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
	else if (ib_slot_qp_costs_more(pool, qp))
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
	/* Its share of the pool: @nr_slots slots' worth make the depth. */
	sqp->share = nr_slots;
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
 * Every slot taken for the QP must have been put.  Closes the QP's
 * admissions (ib_slot_qp_close()) if the ULP did not, and returns once
 * the resumes of its waiters have run (ib_slot_qp_quiesce()).
 *
 * Context: Process context; sleeps.  Not from a resume of the pool.
 */
void ib_slot_qp_detach(struct ib_slot_qp *sqp)
{
	struct ib_slot_pool *pool;

	if (!sqp)
		return;
	pool = sqp->pool;
	if (ib_slot_misuse(pool, atomic_read(&sqp->nr_held)))
		return;
	ib_slot_qp_close(sqp);
	ib_slot_qp_quiesce(sqp);
	/* The qp_error knob holds it while it uses @sqp->qp. */
	mutex_lock(&pool->qps_mutex);
	spin_lock_bh(&pool->lock);
	list_del(&sqp->entry);
	spin_unlock_bh(&pool->lock);
	mutex_unlock(&pool->qps_mutex);
	kfree(sqp);
}
EXPORT_SYMBOL(ib_slot_qp_detach);

/**
 * ib_slot_qp_drained - tell the pool that a QP executes nothing more
 * @sqp: the QP's credit account
 *
 * For a ULP tearing down a connection whose QP it has drained
 * (ib_drain_qp()) and that still fences slots of it: the fences' LOCAL_INVs
 * could only be flushed, so they are not posted.  The slots' live rkey MRs
 * are deregistered instead, which kills their rkeys as surely, and
 * fenced() runs from a work item without waiting for the device.
 *
 * Context: Any context.
 */
void ib_slot_qp_drained(struct ib_slot_qp *sqp)
{
	WRITE_ONCE(sqp->drained, true);
}
EXPORT_SYMBOL(ib_slot_qp_drained);

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

void __init ib_slot_init(void)
{
	ib_slot_debugfs_root = debugfs_create_dir("ib_slot", NULL);
	fault_create_debugfs_attr("fail_mr", ib_slot_debugfs_root,
				  &ib_slot_fail_mr);
}

void ib_slot_cleanup(void)
{
	debugfs_remove_recursive(ib_slot_debugfs_root);
}
