// SPDX-License-Identifier: GPL-2.0-only
/*
 * ib_slot registration, posts, completions and fences.
 *
 * slot->busy counts what the device still owes the slot: one per post
 * until its done() has run and one per LOCAL_INV chain until its tail
 * completes, plus a hold of the fence while it is being armed.  The
 * POSTED bit is set while a post's done() has yet to run and FENCE_ARMED
 * while a fence waits; whoever brings the count to FENCE_ARMED alone runs
 * fenced().  Everything a post or fence writes to the slot is written
 * before ib_post_send(): its completion may run done(), and done() put the
 * slot for its next owner, before the doorbell returns.  Exactly one
 * completion counts per post and per chain: the signaled tail, and never a
 * WR the device completes more than once.
 */
#include <linux/slab.h>

#include "core_priv.h"
#include "slot_priv.h"

/*
 * A failed fence deregistered an rkey MR of @slot (ib_slot_recycle_work()):
 * ask for a replacement now, and let the ULP retry as it would when short
 * of memory.  Not while the pool dies: nothing would use the MR.
 */
static int ib_slot_ask_replace(struct ib_slot *slot)
{
	struct ib_slot_pool *pool = slot->pool;

	if (!READ_ONCE(pool->dying))
		mod_delayed_work(ib_comp_unbound_wq, &pool->replace_work, 0);
	return -ENOMEM;
}

/**
 * ib_slot_map_mr - map a scatterlist onto one of a slot's MRs
 * @slot: the slot
 * @idx: which MR, below &ib_slot_profile.nr_rkey_mrs
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
 * Return: the number of @sg entries mapped whole (0 if the MR took only
 * the head of the first, see ib_map_mr_sg()), -EINVAL for a bad @idx, a
 * slot not in use or nothing mapped, -EBUSY while a post or fence of the
 * slot is outstanding or it is joined to another, -ENOMEM while an MR of
 * the slot that a failed fence deregistered awaits its replacement (a
 * retryable condition, as when short of memory), or the error of
 * ib_map_mr_sg().
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
	/* Pairs with clear_bit_unlock() in ib_slot_replace_work(). */
	if (unlikely(test_bit_acquire(IB_SLOT_F_RETIRED, &slot->flags)))
		return ib_slot_ask_replace(slot);
	smr = &slot->mrs[idx];
	n = ib_map_mr_sg(smr->mr, sg, sg_nents, sg_offset,
			 1U << (slot->pool->profile.page_shift ?: PAGE_SHIFT));
	if (n < 0)
		return n;
	/*
	 * 0 with a length: the first entry is larger than the MR, which
	 * maps its head; *@sg_offset says where the next MR goes on.
	 */
	if (!n && !smr->mr->length)
		return -EINVAL;
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
 * complete, and what it took is unsignaled: no done() comes by itself.
 * An MR whose REG_MR went out may hold its new key and is invalidated
 * before reuse; the others keep their mapping for a retry.  The refused
 * WRs give their units back; the accepted ones stay charged, as the Send
 * Queue frees them only with a later signaled completion.  Returns
 * whether the provider took part of the chain.
 */
static bool ib_slot_unpost(struct ib_slot *slot, struct ib_send_wr *first,
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
		if (wr->opcode == IB_WR_LOCAL_INV) {
			inv++;
		} else {
			__clear_bit(i, mapped);
			/* Registered under its new key. */
			slot->mrs[i].mr->need_inval = true;
		}
	}
	for_each_set_bit(i, mapped, IB_SLOT_MAX_MRS)
		slot->mrs[i].mr->need_inval = test_bit(i, had_key);
	bitmap_copy(slot->mapped, mapped, IB_SLOT_MAX_MRS);
	slot->sq_used -= n;
	if (inv)
		atomic64_add(inv, &pool->local_inv);
	__clear_bit(IB_SLOT_F_DEFERRED, &slot->flags);
	if (bad == first) {
		atomic_sub(IB_SLOT_POSTED + 1, &slot->busy);
		return false;
	}
	dev_warn_ratelimited(&pool->dev->dev,
			     "ib_slot: %s: provider took part of a post; QP %u to error\n",
			     pool->name, slot->sqp->qp_num);
	/* Still posted: the work flushes what was taken, then done() runs. */
	llist_add(&slot->recycle, &pool->partial);
	queue_work(ib_comp_unbound_wq, &pool->partial_work);
	return true;
}

/*
 * A post the provider took in part: its accepted WRs may still run (an
 * RDMA READ into the ULP's pages), unsignaled, so no completion would say
 * when they end.  Move the QP to the error state, which flushes them, and
 * post a signaled WR behind them, as ib_drain_sq() does: its completion
 * comes after theirs and retires the post, so done() runs once, after the
 * last WR the device took, with the post's first error.  In process
 * context, as ib_modify_qp() may sleep.
 */
void ib_slot_partial_work(struct work_struct *work)
{
	struct ib_slot_pool *pool = container_of(work, struct ib_slot_pool,
						 partial_work);
	struct llist_node *list = llist_del_all(&pool->partial);
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ib_slot *slot, *tmp;

	llist_for_each_entry_safe(slot, tmp, list, recycle) {
		struct ib_rdma_wr marker = {
			.wr = {
				.wr_cqe = &slot->cqe,
				.opcode = IB_WR_RDMA_WRITE,
				.send_flags = IB_SEND_SIGNALED,
			},
		};
		struct ib_qp *qp = slot->sqp->qp;
		struct ib_wc wc = {
			.wr_cqe = &slot->cqe,
			.status = IB_WC_WR_FLUSH_ERR,
			.qp = qp,
		};

		/* It may be in the error state already. */
		ib_modify_qp(qp, &attr, IB_QP_STATE);
		/* Not counted against the slot: the Send Queue flushes. */
		if (!ib_post_send(qp, &marker.wr, NULL))
			continue;
		/* The device takes nothing, so what it took does not run. */
		dev_warn(&pool->dev->dev,
			 "ib_slot: %s: cannot flush QP %u; completing its post\n",
			 pool->name, qp->qp_num);
		ib_slot_wc_done(NULL, &wc);
	}
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
 * @wr may be a chain rdma_rw_ctx_wrs() built (pass it no cqe), with the
 * REG_MR and LOCAL_INV WRs of rdma_rw's own MRs: each WR takes a cqe of the
 * slot here, so a flushed RDMA WRITE in the middle of a chain reaches
 * done() like any other WR, instead of completing with no cqe.  A lead
 * slot (ib_slot_get_nr()) posts with the credits of the slots granted with
 * it.  A chain the provider takes in part counts as posted: the QP is
 * moved to the error state and done() runs once, after the last WR the
 * provider took, with an error status.
 *
 * The post may complete, and done() put the slot, before this returns:
 * once the chain is handed over, this touches neither @slot nor its pool.
 *
 * Context: Any context.
 * Return: 0, -EBUSY if a post is outstanding or the slot is joined to
 * another, -ENOSPC if the chain exceeds the slot's credits, -EINVAL if the
 * slot is not in use, the chain is empty or holds a WR the QP cannot take
 * (opcode, SGE count), or the provider's error if it refused the whole
 * chain; whenever it returns an error, nothing of the chain is
 * outstanding.
 */
int ib_slot_post(struct ib_slot *slot, struct ib_send_wr *wr)
{
	struct ib_slot_pool *pool = slot->pool;
	struct ib_send_wr *first = NULL, **tail = &first, *last;
	DECLARE_BITMAP(had_key, IB_SLOT_MAX_MRS);
	DECLARE_BITMAP(mapped, IB_SLOT_MAX_MRS);
	const struct ib_send_wr *bad;
	u32 i, n = 0, inv = 0;
	bool defer;
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
	/* Every MR of a slot is an rkey MR. */
	defer = !bitmap_empty(mapped, IB_SLOT_MAX_MRS) &&
		pool->profile.fence_retires_post && !READ_ONCE(pool->peer_inv);
	/* ib_slot_map_mr() stamped the MR WRs already. */
	for (*tail = wr; wr; wr = wr->next) {
		u32 units;

		units = ib_slot_wr_units(pool, wr);
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
	if (ib_slot_misuse(pool, slot->sq_used + n > slot->sq_max))
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
	/*
	 * An rkey registered here is invalidated by the fence with a
	 * signaled LOCAL_INV, which completes after this tail: it retires
	 * the post, and the tail's own completion comes only on error.
	 */
	if (defer) {
		last->wr_cqe = &slot->tail_cqe;
		__set_bit(IB_SLOT_F_DEFERRED, &slot->flags);
	} else {
		last->wr_cqe = &slot->cqe;
		last->send_flags |= IB_SEND_SIGNALED;
	}

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
		if (ib_slot_unpost(slot, first, bad, mapped, had_key, n))
			return 0;
	}
	return ret;
}
EXPORT_SYMBOL(ib_slot_post);

/*
 * The fence's LOCAL_INV chain failed or was flushed, or the QP refused it,
 * so its rkeys may be live.  Deregistering an MR kills its rkey whatever
 * the QP's state: do that, in process context, and let fenced() release
 * the memory at once.  No allocation stands in the way, so a device that
 * can no longer create MRs (fatal error, hot unplug) delays neither
 * fenced() nor a destroy.  The slot is retired until replace_work gives it
 * new MRs: a second later, so that a pool destroyed after a disconnect
 * allocates none, or at once when a map asks for them.
 */
void ib_slot_recycle_work(struct work_struct *work)
{
	struct ib_slot_pool *pool = container_of(work, struct ib_slot_pool,
						 recycle_work);
	struct llist_node *list = llist_del_all(&pool->recycle);
	struct ib_slot *slot, *tmp;
	unsigned int i;

	list = llist_reverse_order(list);
	llist_for_each_entry_safe(slot, tmp, list, recycle) {
		for (i = 0; i < pool->profile.nr_rkey_mrs; i++) {
			struct ib_slot_mr *smr = &slot->mrs[i];

			if (!smr->mr || !smr->mr->need_inval)
				continue;
			ib_dereg_mr(smr->mr);
			smr->mr = NULL;
		}
		/* Before fenced(): its put may hand the slot to a map. */
		if (!test_and_set_bit(IB_SLOT_F_RETIRED, &slot->flags))
			atomic_inc(&pool->nr_retired);
		clear_bit(IB_SLOT_F_RECYCLE, &slot->flags);
		atomic_set(&slot->busy, 0);
		slot->fenced(slot, slot->fence_status);
	}
	if (!READ_ONCE(pool->dying))
		queue_delayed_work(ib_comp_unbound_wq, &pool->replace_work, HZ);
}

/*
 * Give retired slots new rkey MRs.  The slot's owner may map meanwhile: it
 * finds the slot retired and touches no MR, so the MRs are ours until the
 * flag is cleared.  An allocation that fails leaves the slot retired, and
 * its next map asks again: nothing retries here for ever.
 */
void ib_slot_replace_work(struct work_struct *work)
{
	struct ib_slot_pool *pool = container_of(to_delayed_work(work),
						 struct ib_slot_pool,
						 replace_work);
	u32 tag, i;

	for (tag = 0; tag < pool->nr_slots && atomic_read(&pool->nr_retired);
	     tag++) {
		struct ib_slot *slot = ib_slot_at(pool, tag);

		/*
		 * Pairs with test_and_set_bit() in ib_slot_recycle_work(),
		 * which may run beside us: the MRs it took are seen gone.
		 */
		if (!test_bit_acquire(IB_SLOT_F_RETIRED, &slot->flags))
			continue;
		for (i = 0; i < pool->profile.nr_rkey_mrs; i++) {
			struct ib_slot_mr *smr = &slot->mrs[i];
			struct ib_mr *mr;

			if (smr->mr)
				continue;
			if (READ_ONCE(pool->dying))
				return;
			mr = ib_slot_new_mr(pool, ib_slot_mr_pi(pool, i));
			if (IS_ERR(mr)) {
				dev_warn_ratelimited(&pool->dev->dev,
						     "ib_slot: %s: cannot replace an MR (%pe); slot %u stays retired\n",
						     pool->name, mr, tag);
				return;
			}
			smr->mr = mr;
			smr->reg_wr.mr = mr;
			atomic64_inc(&pool->recycled);
		}
		atomic_dec(&pool->nr_retired);
		/* Pairs with test_bit_acquire() in ib_slot_map_mr(). */
		clear_bit_unlock(IB_SLOT_F_RETIRED, &slot->flags);
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
		queue_work(ib_comp_unbound_wq, &pool->recycle_work);
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

void ib_slot_wc_aux(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ib_slot *slot = container_of(wc->wr_cqe, struct ib_slot,
					    aux_cqe);

	ib_slot_wc_error(&slot->status, wc);
}

/* The post of @slot is over: @wc completed its tail, or retired it. */
static void ib_slot_retire(struct ib_slot *slot, const struct ib_wc *wc)
{
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
	 * If done() put the slot, a destroy waits for the count to drop
	 * before it frees the pool, so done() may sleep where its CQ may.
	 */
	atomic_sub(IB_SLOT_POSTED, &slot->busy);
	slot->pool->done(slot, wc);
	/*
	 * Only a count from here on: if done() put the slot, its next owner
	 * balances its own posts, and whoever reaches zero runs the fence.
	 * The decrement is our last touch of the slot.
	 */
	ib_slot_unbusy(slot);
}

void ib_slot_wc_done(struct ib_cq *cq, struct ib_wc *wc)
{
	ib_slot_retire(container_of(wc->wr_cqe, struct ib_slot, cqe), wc);
}

/*
 * The unsignaled tail of a post failed or was flushed, before the fence
 * that would retire it completed (a QP completes its WRs in order): so
 * the flag is still set, and done() learns of the error now.
 */
void ib_slot_wc_tail(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ib_slot *slot = container_of(wc->wr_cqe, struct ib_slot,
					    tail_cqe);

	if (test_and_clear_bit(IB_SLOT_F_DEFERRED, &slot->flags))
		ib_slot_retire(slot, wc);
}

/*
 * A post whose tail went unsignaled is retired by the fence's LOCAL_INV
 * completion @wc, or by its refusal, with the post's own status (so @wc's
 * is not used): had the tail failed, its completion would have come first.
 */
static void ib_slot_retire_deferred(struct ib_slot *slot, const struct ib_wc *wc)
{
	struct ib_wc tail = *wc;

	if (!test_and_clear_bit(IB_SLOT_F_DEFERRED, &slot->flags))
		return;
	tail.wr_cqe = &slot->cqe;
	tail.status = IB_WC_SUCCESS;
	ib_slot_retire(slot, &tail);
}

/* The fence's chain completed: no rkey of the slot is valid now. */
static void ib_slot_rkeys_dead(struct ib_slot *slot)
{
	unsigned int i;

	for (i = 0; i < slot->pool->profile.nr_rkey_mrs; i++)
		slot->mrs[i].mr->need_inval = false;
}

/*
 * The signaled tail of a fence.  The LOCAL_INVs before it are unsignaled
 * and carry aux_cqe: a QP flushes everything after an error in order, so
 * this one fails if any of them did, and it is the only one that counts.
 */
void ib_slot_wc_inv(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ib_slot *slot = container_of(wc->wr_cqe, struct ib_slot,
					    inv_cqe);

	/* done() runs before fenced(): the post's count goes first. */
	ib_slot_retire_deferred(slot, wc);
	if (likely(wc->status == IB_WC_SUCCESS)) {
		ib_slot_rkeys_dead(slot);
	} else {
		/* The chain's rkeys may still be valid: they keep need_inval. */
		slot->fence_status = wc->status;
		set_bit(IB_SLOT_F_RECYCLE, &slot->flags);
	}
	ib_slot_unbusy(slot);
}

/*
 * The QP will not execute the fence's chain: it refused it, or the ULP
 * drained it.  Its rkeys stay as they were, so the MRs are deregistered
 * as for a flush; the fence's hold keeps the slot ours meanwhile.
 */
static void ib_slot_fence_dead(struct ib_slot *slot)
{
	struct ib_wc wc = { .qp = slot->sqp->qp };

	slot->fence_status = IB_WC_WR_FLUSH_ERR;
	set_bit(IB_SLOT_F_RECYCLE, &slot->flags);
	/* Nothing comes that would retire the post. */
	ib_slot_retire_deferred(slot, &wc);
}

static int __ib_slot_fence(struct ib_slot *slot, bool remote, u32 inv_rkey,
			   void (*fenced)(struct ib_slot *slot,
					  enum ib_wc_status status))
{
	struct ib_slot_pool *pool = slot->pool;
	struct ib_send_wr *first = NULL, **tail = &first, *last = NULL;
	struct ib_slot_mr *peer_inv = NULL;
	u32 i, n = 0, nr_inv = 0, nr_mrs;
	const struct ib_send_wr *bad;
	int ret = 0;

	if (ib_slot_misuse(pool, !test_bit(IB_SLOT_F_IN_USE, &slot->flags)))
		return -EINVAL;
	if (ib_slot_misuse(pool, atomic_read(&slot->busy) &
				 (IB_SLOT_FENCE_ARMED | IB_SLOT_JOINED |
				  IB_SLOT_LEAD)))
		return -EBUSY;

	/*
	 * A retired slot mapped nothing since its MRs died, and those it
	 * has may be new: there is nothing to invalidate.
	 */
	nr_mrs = test_bit_acquire(IB_SLOT_F_RETIRED, &slot->flags) ? 0 :
		 pool->profile.nr_rkey_mrs;
	for (i = 0; i < nr_mrs; i++) {
		struct ib_slot_mr *smr = &slot->mrs[i];

		if (!smr->mr->need_inval)
			continue;
		if (remote && inv_rkey == smr->mr->rkey) {
			smr->mr->need_inval = false;
			atomic64_inc(&pool->remote_inv);
			/* The fence need not follow this pool's posts. */
			if (!READ_ONCE(pool->peer_inv))
				WRITE_ONCE(pool->peer_inv, true);
			peer_inv = smr;
			continue;
		}
		smr->inv_wr.ex.invalidate_rkey = smr->mr->rkey;
		smr->inv_wr.wr_cqe = &slot->aux_cqe;
		smr->inv_wr.send_flags = 0;
		ib_slot_chain(pool, &tail, &smr->inv_wr, &n);
		last = &smr->inv_wr;
		nr_inv++;
	}
	/*
	 * An unsignaled post needs a signaled WR after it.  The peer
	 * invalidated its only rkey: invalidate that rkey again, which
	 * changes nothing, from the LOCAL_INV its MR has in the budget.
	 */
	if (!nr_inv && peer_inv && test_bit(IB_SLOT_F_DEFERRED, &slot->flags)) {
		peer_inv->inv_wr.ex.invalidate_rkey = peer_inv->mr->rkey;
		ib_slot_chain(pool, &tail, &peer_inv->inv_wr, &n);
		last = &peer_inv->inv_wr;
		nr_inv++;
	}
	*tail = NULL;
	if (nr_inv && ib_slot_misuse(pool, slot->sq_used + n > slot->sq_max))
		return -ENOSPC;
	/*
	 * The peer invalidated an rkey that is none of this slot's live
	 * ones: one of another slot's, or one registered again since under
	 * a new key.  That is the peer's protocol error, which only the ULP
	 * can act on; the slot's own rkeys are still invalidated below, so
	 * that the fence holds whatever the ULP does about it.
	 */
	if (remote && !peer_inv) {
		atomic64_inc(&pool->bad_remote_inv);
		ret = -EPROTO;
	}

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
		slot->sq_used += n;
		if (unlikely(READ_ONCE(slot->sqp->drained))) {
			ib_slot_fence_dead(slot);
		} else {
			atomic64_add(nr_inv, &pool->local_inv);
			atomic_inc(&slot->busy);
			if (unlikely(ib_post_send(slot->sqp->qp, first, &bad))) {
				atomic_dec(&slot->busy);
				ib_slot_fence_dead(slot);
			}
		}
	}
	ib_slot_unbusy(slot);
	return ret;
}

/**
 * ib_slot_fence - make sure the peer can no longer reach a slot's memory
 * @slot: a slot in use, with rkey MRs the peer was given
 * @wc: the Receive completion of the peer's reply, or %NULL
 * @fenced: called once every rkey MR of @slot is invalid and every post of
 *	@slot has completed, with the status of the LOCAL_INV chain
 *
 * If the peer invalidated an rkey itself (%IB_WC_WITH_INVALIDATE in @wc),
 * that MR needs no LOCAL_INV.  The others are invalidated by a chain of
 * LOCAL_INV WRs posted from the slot's credits.  If that chain fails or is
 * flushed (the QP went to error), is refused, or is not posted because the
 * QP was drained (ib_slot_qp_drained()), a work item deregisters the MRs,
 * which kills their rkeys, before @fenced runs with
 * %IB_WC_WR_FLUSH_ERR or the chain's error: so @fenced never runs while an
 * rkey of the slot is live, and never waits for a device that can no
 * longer create MRs.  The slot is then retired: its maps fail with -ENOMEM
 * until new MRs are allocated, shortly after or when a map asks for them.
 * @fenced may run before this returns.  The caller puts the slot from
 * @fenced, not before.
 *
 * A remote invalidation of an rkey that is none of @slot's live ones is
 * the peer's protocol error: it may have invalidated another slot's rkey.
 * It is counted (bad_remote_inv), every live rkey of @slot is invalidated
 * locally as if the peer had invalidated none, and -EPROTO tells the
 * caller, which should reset the connection as for a QP error.  @fenced
 * runs then as well, and may have run already.
 *
 * Context: Any context.
 * Return: 0 once the fence is armed (@fenced will run, with
 * %IB_WC_WR_FLUSH_ERR if the QP refused the chain), -EPROTO if the fence
 * is armed too, but @wc names an rkey that is none of @slot's (@fenced
 * will run as for 0); or, and then @fenced is not called, -EINVAL if
 * @slot is not in use, -EBUSY if a fence is already armed or the slot is
 * joined (ib_slot_get_nr()), -ENOSPC if the slot's credits cannot hold
 * the chain.
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
 * @slot: a slot in use, with rkey MRs the peer was given
 * @inv_rkey: the rkey the peer invalidated (the Receive completion's
 *	ex.invalidate_rkey with %IB_WC_WITH_INVALIDATE)
 * @fenced: as for ib_slot_fence()
 *
 * The MR that @inv_rkey names needs no LOCAL_INV; the others are
 * invalidated as ib_slot_fence() does.  A ULP without an invalidated rkey
 * calls ib_slot_fence() with a %NULL @wc.
 *
 * Context: Any context.
 * Return: as ib_slot_fence(): 0 or -EPROTO (@inv_rkey is none of @slot's
 * live rkeys) once the fence is armed, another -errno if it is not.
 */
int ib_slot_fence_rkey(struct ib_slot *slot, u32 inv_rkey,
		       void (*fenced)(struct ib_slot *slot,
				      enum ib_wc_status status))
{
	return __ib_slot_fence(slot, true, inv_rkey, fenced);
}
EXPORT_SYMBOL(ib_slot_fence_rkey);
