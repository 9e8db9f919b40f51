/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Pooled bundles of MRs, Send Queue credits and a completion callback.
 */
#ifndef _RDMA_IB_SLOT_H
#define _RDMA_IB_SLOT_H

#include <linux/completion.h>
#include <linux/list.h>
#include <linux/llist.h>
#include <linux/dma-direction.h>
#include <rdma/ib_verbs.h>

struct ib_slot;
struct ib_slot_pool;
struct ib_slot_qp;

/*
 * The most MRs one slot may bundle: an SRP command of max_sect=131072 on a
 * device without SG_GAPS needs 34 with 512-page MRs (rxe); with 256-page
 * ones (siw), max_sect=65536 needs 34.  One word of bitmap keeps the
 * fast path's bitmap operations inline.
 */
#define IB_SLOT_MAX_MRS		64

/**
 * enum ib_slot_policy - what a pool does when it runs out of slots
 * @IB_SLOT_NO_EXHAUST: the pool is sized for the ULP's own queue depth, so
 *	a get never fails while the ULP respects that depth; a get beyond it
 *	is a bug (warning, %NULL).  Initiators: NFS client, SRP, NVMe host.
 * @IB_SLOT_BACKPRESSURE: a get may fail; the ULP queues a waiter and stops
 *	processing until slots return.  Targets: svcrdma, srpt, nvmet.
 */
enum ib_slot_policy {
	IB_SLOT_NO_EXHAUST,
	IB_SLOT_BACKPRESSURE,
};

/**
 * struct ib_slot_profile - what one slot may do between get and put
 * @nr_rkey_mrs: MRs exposed to the peer; each costs a REG_MR and a
 *	LOCAL_INV Send WR
 * @nr_lkey_mrs: MRs that rdma_rw_ctx_init() takes from the QP's pool for
 *	the slot's RDMA (the iWARP RDMA READ sink, max_sgl_rd, force_mr),
 *	set by ib_slot_profile_rw(); each costs LOCAL_INV, REG_MR and one
 *	RDMA WR.  The pool allocates none: ib_slot_qp_caps() has the QP
 *	created with @nr_lkey_mrs of them per slot, and without the Send
 *	Queue room rdma_rw_init_qp() would add for them, which the slots
 *	hold already
 * @max_pages_per_mr: page list length of each MR (SG entries with @sg_gaps)
 * @page_shift: log2 of the page size MRs are registered with; 0 means
 *	PAGE_SHIFT.  The device must support it (attrs.page_size_cap)
 * @sg_gaps: MRs are %IB_MR_TYPE_SG_GAPS, which register a scatterlist
 *	with gaps as one MR; the device must have %IBK_SG_GAPS_REG
 * @max_rdma_sges: SGEs moved by RDMA READ/WRITE without an MR
 * @max_send_sge: SGEs per Send WR the QP must accept (0 means 1)
 * @nr_sends: SEND (or SEND_WITH_INV) WRs
 * @nr_recvs: Receive WRs the slot consumes (0 for SRQ users)
 * @integrity: the rkey MRs are integrity (T10-PI) MRs
 * @fence_retires_post: a post that registers an rkey MR leaves its last WR
 *	unsignaled: the signaled LOCAL_INV of the ib_slot_fence() that must
 *	follow completes after it and retires it, so that a request costs
 *	one completion, not two.  The slot takes no other post
 *	until then.  Once the peer invalidates an rkey itself, the pool's
 *	posts are signaled again.  For ULPs that post once per request (SRP)
 */
struct ib_slot_profile {
	u8			nr_rkey_mrs;
	u8			nr_lkey_mrs;
	u32			max_pages_per_mr;
	u8			page_shift;
	bool			sg_gaps;
	u32			max_rdma_sges;
	u32			max_send_sge;
	u8			nr_sends;
	u8			nr_recvs;
	bool			integrity;
	bool			fence_retires_post;
};

/**
 * struct ib_slot_cost - worst-case queue entries of one slot lifetime
 * @sqes: Send Queue entries, including REG_MR and LOCAL_INV
 * @cqes: Completion Queue entries: a flush completes every outstanding WR,
 *	signaled or not, so this is @sqes + @rqes
 * @rqes: Receive Queue entries
 */
struct ib_slot_cost {
	u32	sqes;
	u32	cqes;
	u32	rqes;
};

/**
 * struct ib_slot_pool_attr - parameters for ib_slot_pool_create()
 * @pd: protection domain of the MRs; every QP attached must use it
 * @profile: what each slot may do
 * @nr_slots: number of slots; of an indexed pool, the ULP's tag space
 * @policy: see &enum ib_slot_policy
 * @indexed: slots are taken by the ULP's own tag with ib_slot_from_tag()
 *	instead of an allocator (%IB_SLOT_NO_EXHAUST only)
 * @nr_reserved: slots of an indexed pool beyond @nr_slots, for messages
 *	that have no tag of the ULP, taken with ib_slot_get_reserved()
 * @priv_size: bytes of ULP context per slot, see ib_slot_priv()
 * @name: name in debugfs and in messages
 * @resume_in_work: run every waiter's resume from a work item, also those
 *	that a put grants, for ULPs whose resume sleeps
 * @done: called once per ib_slot_post(), when its last WR completes or is
 *	flushed; @wc->status is the first error of the post, if any
 */
struct ib_slot_pool_attr {
	struct ib_pd		*pd;
	struct ib_slot_profile	profile;
	u32			nr_slots;
	enum ib_slot_policy	policy;
	bool			indexed;
	u32			nr_reserved;
	size_t			priv_size;
	const char		*name;
	bool			resume_in_work;
	void (*done)(struct ib_slot *slot, const struct ib_wc *wc);
};

/**
 * struct ib_slot_mr - one MR of a slot and the WRs that register and
 *	invalidate it
 * @mr: the MR
 * @reg_wr: REG_MR WR prepared by ib_slot_map_mr()
 * @inv_wr: LOCAL_INV WR
 */
struct ib_slot_mr {
	struct ib_mr		*mr;
	struct ib_reg_wr	reg_wr;
	struct ib_send_wr	inv_wr;
};

/**
 * struct ib_slot - one request's MRs, Send Queue credits and completion
 * @cqe: carried by the last (signaled) WR of every post; drives @done
 * @aux_cqe: carried by the unsignaled WRs of a post or a fence, so that
 *	their flush or error completions are attributed and never dropped
 * @inv_cqe: carried by the last, signaled, LOCAL_INV of ib_slot_fence()
 * @tail_cqe: carried by the unsignaled last WR of a post that the fence
 *	retires (&ib_slot_profile.fence_retires_post), for its error
 * @pool: owning pool
 * @sqp: the QP the slot is bound to between get and put
 * @mrs: the slot's @nr_mrs rkey MRs
 * @nr_mrs: number of entries in @mrs
 * @mapped: bit i set: ib_slot_map_mr() prepared @mrs[i] for the next post
 * @tag: index of the slot in its pool
 * @sq_used: Send Queue entries posted since get
 * @sq_max: Send Queue entries the slot may post: its own, and those of
 *	the slots granted with it
 * @joined: next slot granted with this one (ib_slot_get_nr()), put with it
 * @busy: outstanding posts and LOCAL_INV chains, one more while
 *	ib_slot_fence() runs, and high bits while a post's done() has yet
 *	to run, while a fence is armed, and while the slot is joined to
 *	another or has others joined to it
 * @flags: %IB_SLOT_F_* bits
 * @status: first error status of the current post
 * @fence_status: status of the armed fence's LOCAL_INV chain
 * @recycle: on the pool's list of slots whose MRs are replaced, or of
 *	those whose post the provider took in part
 * @fenced: callback of the armed ib_slot_fence()
 *
 * A slot lives from ib_slot_get() to ib_slot_put(), and every WR posted
 * through it completes (or is flushed) before the put.
 */
struct ib_slot {
	struct ib_cqe		cqe;
	struct ib_cqe		aux_cqe;
	struct ib_cqe		inv_cqe;
	struct ib_cqe		tail_cqe;
	struct ib_slot_pool	*pool;
	struct ib_slot_qp	*sqp;
	struct ib_slot_mr	*mrs;
	u8			nr_mrs;
	DECLARE_BITMAP(mapped, IB_SLOT_MAX_MRS);
	u32			tag;
	u32			sq_used;
	u32			sq_max;
	struct ib_slot		*joined;
	atomic_t		busy;
	unsigned long		flags;
	enum ib_wc_status	status;
	enum ib_wc_status	fence_status;
	struct llist_node	recycle;
	void (*fenced)(struct ib_slot *slot, enum ib_wc_status status);
};

/**
 * struct ib_slot_demand - what one request will post through its slots
 * @nr_wrs: Send Queue WRs: RDMA READ and WRITE, sends, REG_MR and LOCAL_INV
 * @nr_rw_mrs: MRs its rdma_rw transfers take from the QP's pool
 *
 * Zeroed, then filled with ib_slot_demand_rw() for each rdma_rw transfer
 * and ib_slot_demand_wrs() for the rest; ib_slot_demand_slots() says how
 * many slots hold it.
 */
struct ib_slot_demand {
	u32	nr_wrs;
	u32	nr_rw_mrs;
};

/**
 * struct ib_slot_waiter - a request waiting for slots of a back-pressure pool
 * @entry: in the pool's FIFO of waiters, or on a list of those to resume
 * @sqp: QP the slots are for
 * @nr: number of slots wanted, all or nothing
 * @lead: the first of the @nr slots, which posts and is put for all of
 *	them, set before @resume runs unless @error is set
 * @error: 0, or -ESHUTDOWN when the QP was closed (ib_slot_qp_close()) or
 *	the pool destroyed before the slots were the request's
 * @queued: @w is on the FIFO; ib_slot's own, under the pool's lock
 * @resume: called once, with no pool lock held: from the ib_slot_put()
 *	that freed the slots, or from the pool's work item, in process
 *	context, when the pool resumes in work or @w was granted or shut out
 *	anywhere else (a get, a cancel, a close); never from inside any other
 *	ib_slot call.  The waiters a put within @resume grants are resumed
 *	after @resume returns
 */
struct ib_slot_waiter {
	struct list_head	entry;
	struct ib_slot_qp	*sqp;
	unsigned int		nr;
	struct ib_slot		*lead;
	int			error;
	bool			queued;
	void (*resume)(struct ib_slot_waiter *w);
};

/**
 * struct ib_slot_pool_stats - a snapshot of a pool's counters
 * @nr_slots: slots in the pool
 * @in_use: slots taken now
 * @high_water: most slots taken at once
 * @nr_waiters: waiters queued now
 * @nr_reserved: reserved slots of an indexed pool, part of @nr_slots
 * @exhausted: gets that found no slot or no credit
 * @waits: waiters queued since creation
 * @resumed: waiters granted after waiting
 * @misuse: API misuses caught (each also warned once)
 * @remote_inv: rkeys invalidated by the peer, sparing a LOCAL_INV
 * @bad_remote_inv: fences given a remote invalidation of an rkey that was
 *	none of the slot's live ones (a protocol error of the peer)
 * @local_inv: LOCAL_INV WRs posted
 * @recycled: MRs replaced because a fence's LOCAL_INV failed or was flushed
 * @retired: slots now without one of their MRs: it was deregistered after
 *	such a fence and its replacement is still to come, or failed; their
 *	maps fail with -ENOMEM
 */
struct ib_slot_pool_stats {
	u32	nr_slots;
	u32	in_use;
	u32	high_water;
	u32	nr_waiters;
	u32	nr_reserved;
	u64	exhausted;
	u64	waits;
	u64	resumed;
	u64	misuse;
	u64	remote_inv;
	u64	bad_remote_inv;
	u64	local_inv;
	u64	recycled;
	u32	retired;
};

int ib_slot_profile_cost(struct ib_device *dev,
			 const struct ib_slot_profile *profile,
			 struct ib_slot_cost *cost);
void ib_slot_profile_rw(struct ib_slot_profile *profile,
			struct ib_device *dev, u32 port_num, u32 max_pages);

struct ib_slot_pool *ib_slot_pool_create(const struct ib_slot_pool_attr *attr);
void ib_slot_pool_destroy(struct ib_slot_pool *pool);
void ib_slot_pool_get_stats(struct ib_slot_pool *pool,
			    struct ib_slot_pool_stats *stats);
u32 ib_slot_pool_sqes(const struct ib_slot_pool *pool);

int ib_slot_qp_caps(struct ib_slot_pool *pool, u32 nr_slots,
		    struct ib_qp_init_attr *init_attr, u32 *nr_cqe);
struct ib_slot_qp *ib_slot_qp_attach(struct ib_slot_pool *pool,
				     struct ib_qp *qp,
				     const struct ib_qp_cap *granted,
				     u32 nr_slots);
void ib_slot_qp_close(struct ib_slot_qp *sqp);
void ib_slot_qp_quiesce(struct ib_slot_qp *sqp);
void ib_slot_qp_detach(struct ib_slot_qp *sqp);
void ib_slot_qp_drained(struct ib_slot_qp *sqp);
u32 ib_slot_qp_credits(const struct ib_slot_qp *sqp);
bool ib_slot_qp_has_waiters(const struct ib_slot_qp *sqp);

void ib_slot_demand_rw(struct ib_slot_demand *demand, struct ib_slot_qp *sqp,
		       u32 port_num, u32 sg_cnt, enum dma_data_direction dir);
unsigned int ib_slot_demand_slots(const struct ib_slot_qp *sqp,
				  const struct ib_slot_demand *demand);

struct ib_slot *ib_slot_get(struct ib_slot_qp *sqp);
int ib_slot_get_nr(struct ib_slot_qp *sqp, unsigned int nr,
		   struct ib_slot **lead);
struct ib_slot *ib_slot_from_tag(struct ib_slot_qp *sqp, u32 tag);
struct ib_slot *ib_slot_get_reserved(struct ib_slot_qp *sqp);
int ib_slot_get_or_wait(struct ib_slot_waiter *w);
bool ib_slot_cancel_wait(struct ib_slot_waiter *w);
int ib_slot_get_wait(struct ib_slot_qp *sqp, unsigned int nr,
		     struct ib_slot **lead);
void ib_slot_put(struct ib_slot *slot);

int ib_slot_map_mr(struct ib_slot *slot, unsigned int idx,
		   struct scatterlist *sg, int sg_nents,
		   unsigned int *sg_offset, int access);
int ib_slot_post(struct ib_slot *slot, struct ib_send_wr *wr);
int ib_slot_fence(struct ib_slot *slot, const struct ib_wc *wc,
		  void (*fenced)(struct ib_slot *slot,
				 enum ib_wc_status status));
int ib_slot_fence_rkey(struct ib_slot *slot, u32 inv_rkey,
		       void (*fenced)(struct ib_slot *slot,
				      enum ib_wc_status status));

/**
 * ib_slot_demand_wrs - count WRs a request posts besides rdma_rw transfers
 * @demand: the request's demand
 * @nr: WRs: its response, or sends and registrations of its own
 *
 * Context: Any context.
 */
static inline void ib_slot_demand_wrs(struct ib_slot_demand *demand, u32 nr)
{
	demand->nr_wrs += nr;
}

/* The ULP context follows the slot, cache-line aligned. */
static inline void *ib_slot_priv(struct ib_slot *slot)
{
	return (void *)slot + ALIGN(sizeof(*slot), SMP_CACHE_BYTES);
}

/**
 * ib_slot_room - Send Queue units a slot may still post
 * @slot: a slot in use, with no post outstanding
 *
 * Context: Any context.
 * Return: the units left of the slot's credits and of those joined to it.
 */
static inline u32 ib_slot_room(const struct ib_slot *slot)
{
	return slot->sq_max - slot->sq_used;
}

/**
 * ib_slot_mr - an MR of a slot, as mapped by ib_slot_map_mr()
 * @slot: a slot in use
 * @idx: the MR's index, as given to ib_slot_map_mr()
 *
 * A fence that fails deregisters the slot's live MRs and the slot gets new
 * ones later: use the pointer only between a successful map and the put.
 *
 * Context: Any context.
 * Return: the MR.
 */
static inline struct ib_mr *ib_slot_mr(const struct ib_slot *slot,
				       unsigned int idx)
{
	return slot->mrs[idx].mr;
}

/**
 * ib_slot_rkey - the rkey an MR of a slot was mapped under
 * @slot: a slot in use
 * @idx: the MR's index, as given to ib_slot_map_mr()
 *
 * Context: Any context.
 * Return: the rkey the next post registers, and the peer is given.
 */
static inline u32 ib_slot_rkey(const struct ib_slot *slot, unsigned int idx)
{
	return ib_slot_mr(slot, idx)->rkey;
}

#endif /* _RDMA_IB_SLOT_H */
