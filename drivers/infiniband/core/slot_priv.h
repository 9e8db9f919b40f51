/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ib_slot internals, shared by the files of the core:
 *
 *   slot.c       pool and QP lifecycle, debugfs
 *   slot_cost.c  the cost model: what a slot may post, what a QP must hold
 *   slot_get.c   the tag allocator, get and put
 *   slot_wait.c  the FIFO of waiters of back-pressure pools
 *   slot_post.c  registration, posts, completions and fences
 *
 * Each file states the lifetime rules it enforces.
 */
#ifndef _IB_SLOT_PRIV_H
#define _IB_SLOT_PRIV_H

#include <linux/fault-inject.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/mutex.h>
#include <linux/sbitmap.h>
#include <linux/workqueue.h>
#include <rdma/ib_slot.h>
#include <trace/events/rdma_core.h>

/* Opcodes a slot may post: the ib_wr_opcode values up to REG_MR_INTEGRITY. */
#define IB_SLOT_NR_OPCODES	(IB_WR_REG_MR_INTEGRITY + 1)

/* An empty per-CPU tag cache. */
#define IB_SLOT_NO_TAG		(-1)
/*
 * slot->busy counts outstanding posts, LOCAL_INV chains and fence holds;
 * these bits say that a post's done() has yet to run, that a fence is
 * armed, and that the slot is joined to another.  One word, so that one
 * read checks them all and one atomic arms.
 */
#define IB_SLOT_POSTED		BIT(29)
#define IB_SLOT_FENCE_ARMED	BIT(30)
/* Lends its credits to the lead it was granted with, and is put with it. */
#define IB_SLOT_JOINED		BIT(28)
/* Has slots joined to it: its put puts them, and it does not fence. */
#define IB_SLOT_LEAD		BIT(27)
/* The WRs are not ours, or the slot posts and puts through another. */
#define IB_SLOT_OUTSTANDING	(IB_SLOT_POSTED | IB_SLOT_FENCE_ARMED | \
				 IB_SLOT_JOINED)

/* slot->flags */
enum {
	IB_SLOT_F_IN_USE,
	/* A LOCAL_INV of the armed fence failed: its rkeys may be live. */
	IB_SLOT_F_RECYCLE,
	/* The post's tail is unsignaled: its fence or its error retires it. */
	IB_SLOT_F_DEFERRED,
	/*
	 * An rkey MR was deregistered after a failed fence and is not yet
	 * replaced: the slot maps nothing, and replace_work owns its MRs.
	 */
	IB_SLOT_F_RETIRED,
};

struct ib_slot_pool {
	struct ib_device	*dev;
	struct ib_pd		*pd;
	struct ib_slot_profile	profile;
	struct ib_slot_cost	cost;
	enum ib_slot_policy	policy;
	bool			indexed;
	bool			resume_in_work;
	/* The peer invalidated an rkey: posts stop leaving it to the fence. */
	bool			peer_inv;
	bool			dying;
	/* Gets have no allocator to draw from: the pool is indexed or dying. */
	bool			refuse_get;
	/* Set by a scan that left a waiter short of pool slots. */
	bool			blocked;
	/* All slots; of an indexed pool, its tags then the reserved ones. */
	u32			nr_slots;
	u32			nr_tags;
	size_t			slot_size;
	void (*done)(struct ib_slot *slot, const struct ib_wc *wc);
	/* Send Queue units per WR, by opcode; 0: the provider refuses it. */
	u8			units[IB_SLOT_NR_OPCODES];
	/* Opcodes whose signaled WR completes more than once (mlx5 PI UMRs). */
	unsigned long		multi_cqe;
	/* The most units an RDMA, send, REG_MR or LOCAL_INV WR takes. */
	u8			max_units;

	/* Free tags; of an indexed pool, free reserved slots. */
	struct sbitmap		map;
	/* Allocator pools: the tag last freed on each CPU, or IB_SLOT_NO_TAG. */
	int __percpu		*cache;
	void			*slots;
	struct ib_slot_mr	*mrs;

	/* Free slots: the admission counter of get and the drain of destroy. */
	atomic_t		avail;
	atomic_t		nr_waiters;
	/* The fewest free slots seen: the high water of in_use. */
	u32			low_avail;

	/* Slow path: waiters, attached QPs, counters. */
	spinlock_t		lock;
	struct list_head	waiters;
	/* Granted where resuming is not allowed; resume_work resumes them. */
	struct list_head	granted;
	struct list_head	qps;
	/* Keeps an attached QP alive for the qp_error knob. */
	struct mutex		qps_mutex;
	/* 64 bits: a mark left 2^32 scans ago must not skip a QP. */
	u64			scan_gen;
	struct work_struct	resume_work;
	/* Fenced slots whose rkey MRs must die before fenced(). */
	struct llist_head	recycle;
	struct work_struct	recycle_work;
	/* Gives retired slots MRs: soon after a recycle, or when a map asks. */
	struct delayed_work	replace_work;
	atomic_t		nr_retired;
	/* Slots whose post the provider took in part: their QP is flushed. */
	struct llist_head	partial;
	struct work_struct	partial_work;
	atomic64_t		exhausted;
	atomic64_t		waits;
	atomic64_t		resumed;
	atomic64_t		misuse;
	atomic64_t		remote_inv;
	atomic64_t		bad_remote_inv;
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
	/* Drained by the ULP: a fence posts no LOCAL_INV that would flush. */
	bool			drained;
	/* Each slot holds pool->cost.sqes credits: no separate count. */
	atomic_t		nr_held;
	u32			sq_depth;
	u32			share;
	u64			skip_gen;
	/* Waiters queued for this QP, under the pool's lock. */
	u32			nr_waiters;
	/* Waiters off the FIFO whose resume has yet to return. */
	atomic_t		resuming;
	/* ib_slot_qp_close() ran: no more gets, under the pool's lock. */
	bool			closed;
};

#define ib_slot_misuse(pool, cond)					\
	({								\
		bool __bad = WARN_ON_ONCE(cond);			\
									\
		if (unlikely(__bad))					\
			atomic64_inc(&(pool)->misuse);			\
		unlikely(__bad);					\
	})

/*
 * A post's done() or an armed fence is outstanding, so the WRs are not
 * ours, or the slot is joined to another, which posts and puts for it.
 */
static inline bool ib_slot_outstanding(const struct ib_slot *slot)
{
	return atomic_read(&slot->busy) & IB_SLOT_OUTSTANDING;
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

/* A slow-path tracepoint, with the pool's occupancy. */
#define ib_slot_trace(pool, event)					\
	do {								\
		struct ib_slot_pool *__p = (pool);			\
									\
		trace_ib_slot_##event(__p->name, __p->nr_slots,		\
				      __p->nr_slots -			\
				      atomic_read(&__p->avail),		\
				      atomic_read(&__p->nr_waiters));	\
	} while (0)

/* slot.c */
struct ib_mr *ib_slot_new_mr(struct ib_slot_pool *pool, bool pi);
bool ib_slot_mr_pi(const struct ib_slot_pool *pool, unsigned int i);

/* slot_cost.c */
void ib_slot_fill_units(struct ib_slot_pool *pool);
bool ib_slot_qp_costs_more(struct ib_slot_pool *pool, struct ib_qp *qp);

/* slot_get.c */
int ib_slot_grant(struct ib_slot_qp *sqp, unsigned int nr,
		  struct ib_slot **lead);
void __ib_slot_put(struct ib_slot *slot, struct list_head *ready);

/* slot_wait.c */
void ib_slot_enqueue(struct ib_slot_waiter *w);
void ib_slot_unqueue(struct ib_slot_waiter *w, struct list_head *list);
void ib_slot_resumed(struct ib_slot_qp *sqp);
void ib_slot_shut_out(struct ib_slot_waiter *w);
void ib_slot_scan_waiters(struct ib_slot_pool *pool, struct list_head *ready);
void __ib_slot_kick(struct ib_slot_pool *pool, struct list_head *ready);
void __ib_slot_defer(struct ib_slot_pool *pool, struct list_head *ready);
void __ib_slot_resume_all(struct list_head *ready);
void ib_slot_resume_work(struct work_struct *work);

/*
 * Resources came back: grant them to waiters, if there are any.  Only a
 * put resumes the waiters it grants itself (ib_slot_resume_all()); every
 * other caller hands them to the work item (ib_slot_defer()).
 */
static inline void ib_slot_kick(struct ib_slot_pool *pool,
				struct list_head *ready)
{
	/*
	 * Pairs with the smp_mb() in ib_slot_get_or_wait(): either it sees
	 * the resources we returned, or we see its waiter.
	 */
	smp_mb__after_atomic();
	if (unlikely(atomic_read(&pool->nr_waiters)))
		__ib_slot_kick(pool, ready);
}

/*
 * Hand waiters granted in a context that must not resume them (a get, a
 * cancel, a close) to the pool's work item.
 */
static inline void ib_slot_defer(struct ib_slot_pool *pool,
				 struct list_head *ready)
{
	if (unlikely(!list_empty(ready)))
		__ib_slot_defer(pool, ready);
}

/* Resume the waiters a put granted, once it no longer touches the pool. */
static inline void ib_slot_resume_all(struct list_head *ready)
{
	if (unlikely(!list_empty(ready)))
		__ib_slot_resume_all(ready);
}

/* slot_post.c */
void ib_slot_wc_done(struct ib_cq *cq, struct ib_wc *wc);
void ib_slot_wc_aux(struct ib_cq *cq, struct ib_wc *wc);
void ib_slot_wc_inv(struct ib_cq *cq, struct ib_wc *wc);
void ib_slot_wc_tail(struct ib_cq *cq, struct ib_wc *wc);
void ib_slot_recycle_work(struct work_struct *work);
void ib_slot_replace_work(struct work_struct *work);
void ib_slot_partial_work(struct work_struct *work);

#endif /* _IB_SLOT_PRIV_H */
