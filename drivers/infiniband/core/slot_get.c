// SPDX-License-Identifier: GPL-2.0-only
/*
 * ib_slot get and put: the tag allocator and the credit accounts.
 *
 * A slot is its getter's from the get that sets IB_SLOT_F_IN_USE to the
 * put that clears it; the bit is the only owner mark, so a second put, or
 * a put with a post or fence outstanding (slot->busy), is refused before
 * anything is returned.  The pool's @avail and the QP's @nr_held are
 * taken before a tag and given back after it, so a tag is always there
 * for an admitted getter, and a QP never holds more credits than the
 * slots it holds.  Once @avail is back, the put touches the pool only
 * under rcu_read_lock(), which ib_slot_pool_destroy() waits out.
 */
#include <linux/percpu.h>

#include "core_priv.h"
#include "slot_priv.h"

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

/* ib_slot_post() resets the status of each post. */
static void ib_slot_bind(struct ib_slot_qp *sqp, struct ib_slot *slot)
{
	slot->sqp = sqp;
	slot->sq_used = 0;
}

static void ib_slot_note_use(struct ib_slot_pool *pool, int avail)
{
	if (avail < READ_ONCE(pool->low_avail))
		WRITE_ONCE(pool->low_avail, avail);
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
 * Chain @nr slots, still private to their getter, behind @lead: it posts
 * with the credits of all of them and its put puts them all.
 */
static void ib_slot_chain_nr(struct ib_slot *lead, struct ib_slot *slot)
{
	atomic_add(IB_SLOT_JOINED, &slot->busy);
	if (!lead->joined)
		atomic_add(IB_SLOT_LEAD, &lead->busy);
	slot->joined = lead->joined;
	lead->joined = slot;
	lead->sq_max += lead->pool->cost.sqes;
}

/*
 * Reserve @nr slots for @sqp, all or nothing, and return the first, with
 * the others chained to it.  Returns 0, -EBUSY when the QP is at its
 * share, which also bounds its credits (see ib_slot_qp_attach()) and is
 * zero once the QP is closed, or -ENOSPC when the pool is short of slots.
 * A failure leaves nothing taken, but -ENOSPC may have hidden the QP's
 * credits from a concurrent scan for a moment; the caller then kicks the
 * waiters (ib_slot_kick()).
 */
static __always_inline int ib_slot_try_get(struct ib_slot_qp *sqp,
					   unsigned int nr,
					   struct ib_slot **lead)
{
	struct ib_slot_pool *pool = sqp->pool;
	struct ib_slot *slot;
	unsigned int i;
	int avail;

	if (!ib_slot_add_below(&sqp->nr_held, nr, READ_ONCE(sqp->share)))
		return -EBUSY;
	avail = ib_slot_take(&pool->avail, nr);
	if (avail < 0) {
		atomic_sub(nr, &sqp->nr_held);
		return -ENOSPC;
	}
	for (i = 0; i < nr; i++) {
		slot = ib_slot_at(pool, ib_slot_alloc_tag(pool));
		set_bit(IB_SLOT_F_IN_USE, &slot->flags);
		ib_slot_bind(sqp, slot);
		if (!i)
			*lead = slot;
		else
			ib_slot_chain_nr(*lead, slot);
	}
	ib_slot_note_use(pool, avail);
	return 0;
}

/* ib_slot_try_get() for the scan of waiters, under the pool's lock. */
int ib_slot_grant(struct ib_slot_qp *sqp, unsigned int nr,
		  struct ib_slot **lead)
{
	return ib_slot_try_get(sqp, nr, lead);
}

/*
 * More slots than the QP may ever hold at once, or none: -EINVAL; or a
 * QP closed, whose share is zero: -ESHUTDOWN.
 */
static int ib_slot_bad_nr(const struct ib_slot_qp *sqp, unsigned int nr)
{
	if (likely(nr && nr <= READ_ONCE(sqp->share)))
		return 0;
	return READ_ONCE(sqp->closed) ? -ESHUTDOWN : -EINVAL;
}

/*
 * Inlined, with ib_slot_try_get(), so that ib_slot_get() compiles to the
 * single-slot case: that halves its instructions.
 */
static __always_inline int ib_slot_get_fast(struct ib_slot_qp *sqp,
					    unsigned int nr,
					    struct ib_slot **lead)
{
	struct ib_slot_pool *pool = sqp->pool;
	int ret;

	/* The slow path takes the pool's lock with BHs off. */
	lockdep_assert_irqs_enabled();
	/* Indexed pools have no allocator: ib_slot_from_tag() only. */
	if (ib_slot_misuse(pool, READ_ONCE(pool->refuse_get)))
		return READ_ONCE(pool->dying) ? -ESHUTDOWN : -EINVAL;
	if (unlikely(ib_slot_should_fail(pool))) {
		ret = -ENOSPC;
	} else if (READ_ONCE(sqp->nr_waiters) || READ_ONCE(pool->blocked)) {
		/*
		 * Waiters that could take what we would go first: no barging,
		 * no starvation.  A waiter stuck on its own QP's share holds
		 * back only that QP; @pool->blocked is set only while a waiter
		 * short of pool slots is queued.  Unlocked reads: a stale one
		 * lets a get pass a waiter once, it cannot lose its wakeup.
		 */
		ret = -ENOSPC;
	} else {
		ret = ib_slot_try_get(sqp, nr, lead);
		/* Our credits, held for a moment, may have failed a scan. */
		if (unlikely(ret == -ENOSPC)) {
			LIST_HEAD(ready);

			ib_slot_kick(pool, &ready);
			ib_slot_defer(pool, &ready);
		}
		/* A closed QP has no share left: nothing to wait for. */
		if (unlikely(ret == -EBUSY) && READ_ONCE(sqp->closed))
			return -ESHUTDOWN;
	}
	if (ret) {
		atomic64_inc(&pool->exhausted);
		ib_slot_trace(pool, exhausted);
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
 * ib_slot_get_nr - take several slots, all or nothing, without waiting
 * @sqp: the QP the slots will post on
 * @nr: number of slots (ib_slot_demand_slots()), at most the QP's share
 * @lead: set to the first slot on success
 *
 * For a request larger than one slot's profile: a target's command whose
 * RDMA READ or WRITE chain needs more WRs or MRs than one slot holds.
 * The slots come joined: @lead posts with the credits of all of them, so
 * each chain goes out with one doorbell and completes with one done(),
 * and ib_slot_put() of @lead puts them all.  Only @lead is the caller's to
 * use; joined slots do not fence (their MRs are rdma_rw's or none).
 *
 * Context: Process or softirq context; the slow path takes the pool's
 * lock with BHs off.  Does not sleep or allocate.
 * Return: 0, -EAGAIN if @nr slots (or their credits) are not available
 * now, -EINVAL if they never can be, -ESHUTDOWN if the QP is closed or the
 * pool is being destroyed.
 */
int ib_slot_get_nr(struct ib_slot_qp *sqp, unsigned int nr,
		   struct ib_slot **lead)
{
	int ret = ib_slot_bad_nr(sqp, nr);

	if (ret)
		return ret;
	ret = ib_slot_get_fast(sqp, nr, lead);
	if (ret == -EINVAL || ret == -ESHUTDOWN)
		return ret;
	return ret ? -EAGAIN : 0;
}
EXPORT_SYMBOL(ib_slot_get_nr);

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
 * @w: the waiter: @w->sqp, @w->nr and @w->resume set by the caller
 *
 * Either takes the slots now, or queues @w at the tail of the pool's FIFO;
 * @w->resume then runs once the slots are granted (see &struct
 * ib_slot_waiter for where), or once the QP is closed.  Granted slots come
 * joined, as ib_slot_get_nr() returns them, with @w->lead the first.  No
 * wakeup is lost: resources returned while @w is being queued are seen by
 * the queueing or by the put.  While a waiter of the same QP is granted
 * but not yet resumed, @w takes its slots but is resumed after it, from
 * the work item, so that the QP's requests run in the order they came.
 *
 * Context: Process or softirq context; the slow path takes the pool's
 * lock with BHs off.  Does not sleep.
 * Return: 0 if @w->lead was set now, -EAGAIN if @w will be resumed,
 * -EINVAL if @w->nr slots can never be granted to the QP, -ESHUTDOWN if
 * the QP is closed or the pool is being destroyed.
 */
int ib_slot_get_or_wait(struct ib_slot_waiter *w)
{
	struct ib_slot_pool *pool = w->sqp->pool;
	LIST_HEAD(ready);
	int ret;

	lockdep_assert_not_held(&pool->lock);
	ret = ib_slot_bad_nr(w->sqp, w->nr);
	if (ret)
		return ret;
	ret = ib_slot_get_fast(w->sqp, w->nr, &w->lead);
	if (ret == -EINVAL || ret == -ESHUTDOWN)
		return ret;
	w->error = 0;
	if (!ret) {
		/*
		 * A waiter of the QP granted before @w runs before it: the
		 * QP's requests run in the order they came.  Read after the
		 * fully ordered RMWs of the get, which read @nr_waiters
		 * before them: pairs with the smp_wmb() in ib_slot_unqueue().
		 */
		if (likely(!atomic_read(&w->sqp->resuming)))
			return 0;
		atomic_inc(&w->sqp->resuming);
		atomic64_inc(&pool->waits);
		ib_slot_trace(pool, wait);
		list_add_tail(&w->entry, &ready);
		__ib_slot_defer(pool, &ready);
		return -EAGAIN;
	}

	spin_lock_bh(&pool->lock);
	/* Destroy or close flushed the queue already: nobody would resume @w. */
	if (unlikely(pool->dying || w->sqp->closed)) {
		spin_unlock_bh(&pool->lock);
		return -ESHUTDOWN;
	}
	ib_slot_enqueue(w);
	/* Pairs with smp_mb__after_atomic() in ib_slot_kick(). */
	smp_mb();
	ib_slot_scan_waiters(pool, &ready);
	/* Granted at once: no resume, the caller has them. */
	ret = w->queued ? -EAGAIN : 0;
	if (!ret) {
		list_del_init(&w->entry);
		ib_slot_resumed(w->sqp);
	}
	spin_unlock_bh(&pool->lock);

	if (ret) {
		atomic64_inc(&pool->waits);
		ib_slot_trace(pool, wait);
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
 * it was already granted or shut out, so its resume has run or is about
 * to run, and owns @w->lead.
 */
bool ib_slot_cancel_wait(struct ib_slot_waiter *w)
{
	struct ib_slot_pool *pool = w->sqp->pool;
	LIST_HEAD(ready);
	bool queued;

	lockdep_assert_irqs_enabled();
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
 * @lead: set to the first slot on success, as by ib_slot_get_nr()
 *
 * Context: Process context; sleeps until the slots are granted, the task
 * is killed, or the QP is closed or the pool destroyed.
 * Return: 0, -EINTR if killed, -ESHUTDOWN if the QP is closed or the pool
 * is being destroyed, -EINVAL if @nr slots can never be granted to the QP.
 */
int ib_slot_get_wait(struct ib_slot_qp *sqp, unsigned int nr,
		     struct ib_slot **lead)
{
	struct ib_slot_sleeper s = {
		.w = { .sqp = sqp, .nr = nr, .resume = ib_slot_wake_sleeper },
	};
	int ret;

	might_sleep();
	init_completion(&s.done);
	INIT_LIST_HEAD(&s.w.entry);
	ret = ib_slot_get_or_wait(&s.w);
	if (ret != -EAGAIN)
		goto out;
	if (!wait_for_completion_killable(&s.done)) {
		ret = s.w.error;
		goto out;
	}
	if (ib_slot_cancel_wait(&s.w))
		return -EINTR;
	/* Granted while we were killed: wait for the grant, give it back. */
	wait_for_completion(&s.done);
	if (!s.w.error)
		ib_slot_put(s.w.lead);
	return -EINTR;
out:
	if (!ret)
		*lead = s.w.lead;
	return ret;
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

/* The slots joined to @lead, whose posts have retired, go back with it. */
static noinline void ib_slot_put_joined(struct ib_slot *lead,
					struct list_head *ready)
{
	struct ib_slot *slot = lead->joined, *next;

	lead->joined = NULL;
	lead->sq_max = lead->pool->cost.sqes;
	atomic_sub(IB_SLOT_LEAD, &lead->busy);
	for (; slot; slot = next) {
		next = slot->joined;
		slot->joined = NULL;
		atomic_sub(IB_SLOT_JOINED, &slot->busy);
		__ib_slot_put(slot, ready);
	}
}

/*
 * ib_slot_put() but for the resume of the waiters it grants, which are
 * left on @ready: the put's caller resumes them, or hands them to the
 * work item where it must not.  Inlined into ib_slot_put(), whose single
 * slot case it is on the fast path.
 */
static __always_inline void ib_slot_do_put(struct ib_slot *slot,
					   struct list_head *ready)
{
	struct ib_slot_pool *pool = slot->pool;
	struct ib_slot_qp *sqp = slot->sqp;
	int avail, busy = atomic_read(&slot->busy);

	/* As get: waiters are granted under the pool's lock with BHs off. */
	lockdep_assert_irqs_enabled();
	/* One test for both: the fast path pays nothing for joined slots. */
	if (unlikely(busy & (IB_SLOT_OUTSTANDING | IB_SLOT_LEAD))) {
		if (ib_slot_misuse(pool, busy & IB_SLOT_OUTSTANDING))
			return;
		ib_slot_put_joined(slot, ready);
	}
	if (ib_slot_misuse(pool, !test_and_clear_bit(IB_SLOT_F_IN_USE,
						     &slot->flags)))
		return;
	if (unlikely(!bitmap_empty(slot->mapped, IB_SLOT_MAX_MRS)))
		ib_slot_unmap(slot);
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
	} else {
		/* Indexed pools never have waiters: this reads a zero. */
		ib_slot_kick(pool, ready);
	}
	rcu_read_unlock();
}

void __ib_slot_put(struct ib_slot *slot, struct list_head *ready)
{
	ib_slot_do_put(slot, ready);
}

/**
 * ib_slot_put - return a slot and its credits
 * @slot: a slot whose posts have all completed
 *
 * Wakes waiters of the pool if the slot (and its QP's credits) let them
 * go.  The slots granted with it (ib_slot_get_nr()) go back too.  Putting
 * a slot with a post or fence outstanding, a slot joined to another, or a
 * slot twice, is a bug: it warns and leaves the slot alone.
 *
 * Context: Process or softirq context (any context an &struct ib_cq
 * completion runs in).  Does not sleep.
 */
void ib_slot_put(struct ib_slot *slot)
{
	LIST_HEAD(ready);

	ib_slot_do_put(slot, &ready);
	/* The slots the waiters were granted keep the pool alive. */
	ib_slot_resume_all(&ready);
}
EXPORT_SYMBOL(ib_slot_put);
