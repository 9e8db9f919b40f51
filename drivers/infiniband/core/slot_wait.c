// SPDX-License-Identifier: GPL-2.0-only
/*
 * ib_slot waiters: the FIFO of requests that wait for slots of a
 * back-pressure pool, under the pool's lock, which only the slow path
 * takes.
 *
 * A waiter is granted its slots and credits under the lock, in FIFO order,
 * and resumed without it: from the put that freed them, or from the
 * pool's work item when the grant was made anywhere else (a get, a cancel,
 * a detach) or the pool resumes in work.  So resume() never runs inside a
 * call of another request, and no lock its caller holds can be taken
 * again through a resume (no ABBA between two connections' locks).  A
 * waiter leaves the FIFO granted, cancelled, or shut out with -ESHUTDOWN
 * by the detach of its QP or the destroy of its pool.
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

/* Take @w off the FIFO, onto @list (granted, or shut out) if not %NULL. */
void ib_slot_unqueue(struct ib_slot_waiter *w, struct list_head *list)
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

static void ib_slot_resume_one(struct ib_slot_waiter *w)
{
	/* Nested grants may come from another pool. */
	struct ib_slot_pool *pool = w->sqp->pool;

	list_del_init(&w->entry);
	atomic64_inc(&pool->resumed);
	ib_slot_trace(pool, resume);
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
 * (@pool->blocked); a waiter short of its own QP's credits or fair share
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
		ret = ib_slot_grant(w->sqp, w->nr, w->slots);
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
