// SPDX-License-Identifier: GPL-2.0-only
/*
 * ib_slot waiters: the FIFO of requests that wait for slots of a
 * back-pressure pool, under the pool's lock, which only the slow path
 * takes.
 *
 * A waiter is granted its slots and credits under the lock, in FIFO order,
 * and resumed without it: from the put that freed them, or from the
 * pool's work item when the grant was made anywhere else (a get, a cancel,
 * a close) or the pool resumes in work.  So resume() never runs inside a
 * call of another request, and no lock its caller holds can be taken
 * again through a resume (no ABBA between two connections' locks).  A
 * waiter leaves the FIFO granted, cancelled, or shut out with -ESHUTDOWN
 * by the close of its QP or the destroy of its pool, and a shut-out
 * resume runs from the work item too.  From the moment it leaves the FIFO
 * for a resume until that resume returns, it is counted in its QP's
 * @resuming, which ib_slot_qp_quiesce() waits out.
 */
#include <linux/percpu.h>

#include "core_priv.h"
#include "slot_priv.h"

/* The waiters ib_slot_resume_all() is resuming on this CPU, if any. */
static DEFINE_PER_CPU(struct list_head *, ib_slot_resuming);

/* Queue @w at the tail of the FIFO. */
void ib_slot_enqueue(struct ib_slot_waiter *w)
{
	struct ib_slot_pool *pool = w->sqp->pool;

	lockdep_assert_held(&pool->lock);
	list_add_tail(&w->entry, &pool->waiters);
	w->queued = true;
	WRITE_ONCE(w->sqp->nr_waiters, w->sqp->nr_waiters + 1);
	atomic_inc(&pool->nr_waiters);
}

/*
 * Take @w off the FIFO, onto @list (granted, or shut out) if not %NULL:
 * then its resume is owed, and counted until it returns.
 */
void ib_slot_unqueue(struct ib_slot_waiter *w, struct list_head *list)
{
	struct ib_slot_pool *pool = w->sqp->pool;

	lockdep_assert_held(&pool->lock);
	if (list) {
		list_move_tail(&w->entry, list);
		atomic_inc(&w->sqp->resuming);
		/* Pairs with the read in ib_slot_get_or_wait(). */
		smp_wmb();
	} else {
		list_del_init(&w->entry);
	}
	w->queued = false;
	WRITE_ONCE(w->sqp->nr_waiters, w->sqp->nr_waiters - 1);
	atomic_dec(&pool->nr_waiters);
}

/* A resume owed by ib_slot_unqueue() ran, or will not run. */
void ib_slot_resumed(struct ib_slot_qp *sqp)
{
	/* Pairs with the wait in ib_slot_qp_quiesce(). */
	if (atomic_dec_and_test(&sqp->resuming))
		wake_up_var(&sqp->resuming);
}

static void ib_slot_resume_one(struct ib_slot_waiter *w)
{
	/* @w may be gone once resumed; nested grants may be another pool's. */
	struct ib_slot_qp *sqp = w->sqp;
	struct ib_slot_pool *pool = sqp->pool;

	list_del_init(&w->entry);
	if (!w->error) {
		atomic64_inc(&pool->resumed);
		ib_slot_trace(pool, resume);
	}
	w->resume(w);
	ib_slot_resumed(sqp);
}

/*
 * Resume granted waiters.  A resume may put slots, and that put resumes
 * the waiters it grants: called inline, resumes would nest once per waiter
 * of a long queue whose requests drop their slots (connection gone) and
 * overflow the stack.  So a grant made inside a resume on this CPU joins
 * the list of the loop already running here, which resumes it next.  BHs
 * are off so that the loop and its per-CPU list stay on this CPU.
 */
void __ib_slot_resume_all(struct list_head *ready)
{
	struct ib_slot_waiter *w;
	struct list_head *outer;

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
 * (@pool->blocked); a waiter short of its own QP's share (its credits)
 * only holds back that QP's later waiters and gets.
 */
void ib_slot_scan_waiters(struct ib_slot_pool *pool, struct list_head *ready)
{
	struct ib_slot_waiter *w, *tmp;
	bool blocked = false;
	int ret;

	lockdep_assert_held(&pool->lock);
	pool->scan_gen++;
	list_for_each_entry_safe(w, tmp, &pool->waiters, entry) {
		if (w->sqp->skip_gen == pool->scan_gen)
			continue;
		ret = ib_slot_grant(w->sqp, w->nr, &w->lead);
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
 * cancel, a close) to the pool's work item.  Their slots are theirs
 * already; only the call of resume() waits.
 */
void __ib_slot_defer(struct ib_slot_pool *pool, struct list_head *ready)
{
	spin_lock_bh(&pool->lock);
	list_splice_tail_init(ready, &pool->granted);
	spin_unlock_bh(&pool->lock);
	queue_work(ib_comp_unbound_wq, &pool->resume_work);
}

void ib_slot_resume_work(struct work_struct *work)
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

/* Waiters exist (ib_slot_kick()): grant what came back. */
void __ib_slot_kick(struct ib_slot_pool *pool, struct list_head *ready)
{
	spin_lock_bh(&pool->lock);
	ib_slot_scan_waiters(pool, ready);
	spin_unlock_bh(&pool->lock);
	/* Their resumes may sleep: they run from the work item. */
	if (pool->resume_in_work)
		ib_slot_defer(pool, ready);
}

/*
 * Shut @w out: it will not be granted, and is resumed with -ESHUTDOWN from
 * the work item, like any waiter a put did not grant.
 */
void ib_slot_shut_out(struct ib_slot_waiter *w)
{
	struct ib_slot_pool *pool = w->sqp->pool;

	lockdep_assert_held(&pool->lock);
	w->error = -ESHUTDOWN;
	w->lead = NULL;
	ib_slot_unqueue(w, &pool->granted);
}

/**
 * ib_slot_qp_close - end a QP's admissions
 * @sqp: the QP's credit account
 *
 * For a ULP closing a connection.  Every later get for @sqp fails with
 * -ESHUTDOWN, and its waiters, those still queued and those granted but
 * not yet resumed, are resumed once with -ESHUTDOWN and no slot (theirs go
 * back to the pool), from the pool's work item.  A get or a put's grant
 * that raced with the close may still succeed: it is ordered before the
 * close, and what it posts on the closing QP flushes.  Slots already held
 * are the ULP's to put.  Calling it again does nothing more.
 *
 * Context: Any context but hard IRQ.  Does not sleep.
 */
void ib_slot_qp_close(struct ib_slot_qp *sqp)
{
	struct ib_slot_pool *pool = sqp->pool;
	struct ib_slot_waiter *w, *tmp;
	LIST_HEAD(granted);
	LIST_HEAD(ready);

	spin_lock_bh(&pool->lock);
	if (sqp->closed) {
		spin_unlock_bh(&pool->lock);
		return;
	}
	/* With no share left, the fast path refuses it too (-EBUSY). */
	WRITE_ONCE(sqp->closed, true);
	WRITE_ONCE(sqp->share, 0);
	list_for_each_entry_safe(w, tmp, &pool->waiters, entry) {
		if (w->sqp == sqp)
			ib_slot_shut_out(w);
	}
	/* Granted, not resumed: nothing was posted, the slots go back. */
	list_for_each_entry_safe(w, tmp, &pool->granted, entry) {
		if (w->sqp == sqp && !w->error)
			list_move_tail(&w->entry, &granted);
	}
	/* Whoever the shut-out waiters held back may go now. */
	ib_slot_scan_waiters(pool, &ready);
	spin_unlock_bh(&pool->lock);

	list_for_each_entry(w, &granted, entry) {
		__ib_slot_put(w->lead, &ready);
		w->lead = NULL;
		w->error = -ESHUTDOWN;
	}
	/* Queued even if empty: the shut-out waiters are on pool->granted. */
	list_splice_tail(&ready, &granted);
	__ib_slot_defer(pool, &granted);
}
EXPORT_SYMBOL(ib_slot_qp_close);

/**
 * ib_slot_qp_quiesce - wait until no resume of a QP's waiters runs
 * @sqp: the QP's credit account, closed (ib_slot_qp_close())
 *
 * Once it returns, every waiter of @sqp that left the FIFO, granted or
 * shut out, has been resumed and its resume has returned, so the ULP may
 * free what its resumes use.  Calling it from such a resume would wait
 * for itself: it warns and returns at once.
 *
 * Context: Process context; sleeps.
 */
void ib_slot_qp_quiesce(struct ib_slot_qp *sqp)
{
	struct ib_slot_pool *pool = sqp->pool;

	might_sleep();
	if (ib_slot_misuse(pool, current_work() == &pool->resume_work))
		return;
	/* Pairs with the atomic_dec_and_test() in ib_slot_resumed(). */
	wait_var_event(&sqp->resuming, !atomic_read(&sqp->resuming));
}
EXPORT_SYMBOL(ib_slot_qp_quiesce);
