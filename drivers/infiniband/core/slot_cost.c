// SPDX-License-Identifier: GPL-2.0-only
/*
 * ib_slot cost model: the worst-case Send, Receive and Completion Queue
 * entries of one slot lifetime, and the QP caps that hold a number of
 * slots.  Every figure comes from the provider (ib_get_wr_cost(),
 * ib_query_qp_budget()), for the QP the slots post on; the rules that
 * combine them are in Documentation/infiniband/slot.rst.
 */
#include <kunit/visibility.h>
#include <rdma/ib_verbs.h>
#include <rdma/rw.h>

#include "core_priv.h"
#include "slot_priv.h"

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
	/* Posts charge it in the u8 of &ib_slot_pool.units */
	if (c.sq_units > U8_MAX)
		return -EINVAL;
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
 * it serves; direct RDMA one WR per @profile->max_send_sge SGEs (an RDMA
 * READ per max_sge_rd, if fewer); a send one WR.  Each WR costs the Send
 * Queue units and the error completions the device reports through
 * ib_get_wr_cost(): a flush completes every outstanding WR, signaled or
 * not.
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
	/*
	 * As rdma_rw: a direct RDMA READ takes at most max_sge_rd SGEs.  On
	 * iWARP a READ sink is always an lkey MR, so direct RDMA is WRITE.
	 */
	u32 rd_sge = !dev->attrs.max_sge_rd ||
		     rdma_protocol_iwarp(dev, rdma_start_port(dev)) ? sge :
		     clamp_t(u32, dev->attrs.max_sge_rd, 1, sge);
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
			    DIV_ROUND_UP(profile->max_rdma_sges, rd_sge),
			    cost) ||
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
EXPORT_SYMBOL_IF_KUNIT(ib_slot_profile_cost);

/*
 * The Send Queue units of a WR of each opcode on a QP of @attr (0 where
 * the QP cannot post it, or it costs more than a u8 holds: those are set
 * in @refused), and the opcodes whose signaled WR completes more than
 * once.
 */
static void ib_slot_op_units(struct ib_slot_pool *pool,
			     const struct ib_qp_init_attr *attr,
			     u8 units[IB_SLOT_NR_OPCODES],
			     unsigned long *multi_cqe, unsigned long *refused)
{
	u32 sge = max(pool->profile.max_send_sge, 1U);
	struct ib_wr_cost c;
	int op;

	for (op = 0; op < IB_SLOT_NR_OPCODES; op++) {
		/* Registration and invalidation WRs carry no SGE. */
		u32 nsge = op == IB_WR_REG_MR || op == IB_WR_REG_MR_INTEGRITY ||
			   op == IB_WR_LOCAL_INV ? 0 : sge;

		units[op] = 0;
		if (ib_get_wr_cost(pool->dev, attr, op, nsge, &c) ||
		    c.sq_units > U8_MAX) {
			__set_bit(op, refused);
			continue;
		}
		units[op] = c.sq_units;
		if (c.cqe_signaled > 1)
			__set_bit(op, multi_cqe);
	}
}

void ib_slot_fill_units(struct ib_slot_pool *pool)
{
	static const enum ib_wr_opcode ops[] = {
		IB_WR_RDMA_WRITE, IB_WR_RDMA_READ, IB_WR_RDMA_READ_WITH_INV,
		IB_WR_SEND, IB_WR_SEND_WITH_INV, IB_WR_REG_MR, IB_WR_LOCAL_INV,
	};
	DECLARE_BITMAP(refused, IB_SLOT_NR_OPCODES) = { };
	struct ib_qp_init_attr attr;
	unsigned int i;

	ib_slot_qp_attr(&pool->profile, &attr);
	ib_slot_op_units(pool, &attr, pool->units, &pool->multi_cqe, refused);
	pool->max_units = 1;
	for (i = 0; i < ARRAY_SIZE(ops); i++)
		pool->max_units = max(pool->max_units, pool->units[ops[i]]);
}

/* The opcodes the slots of a pool are charged for, by its profile. */
static void ib_slot_charged_ops(const struct ib_slot_profile *p,
				unsigned long *ops)
{
	if (p->nr_rkey_mrs) {
		__set_bit(p->integrity ? IB_WR_REG_MR_INTEGRITY : IB_WR_REG_MR,
			  ops);
		__set_bit(IB_WR_LOCAL_INV, ops);
	}
	if (p->nr_lkey_mrs) {
		__set_bit(IB_WR_REG_MR, ops);
		__set_bit(IB_WR_LOCAL_INV, ops);
	}
	if (p->nr_lkey_mrs || p->max_rdma_sges) {
		__set_bit(IB_WR_RDMA_READ, ops);
		__set_bit(IB_WR_RDMA_WRITE, ops);
	}
	if (p->nr_sends)
		__set_bit(IB_WR_SEND, ops);
}

/*
 * Costs were computed for an RC QP; @qp may cost more per WR (an XRC
 * initiator's REG_MR took one more block on mlx5), or not be able to post
 * a WR the slots are charged for at all (REG_MR on UC).  Slots charged at
 * the pool's rates would then overrun its Send Queue, or fail to post:
 * such a QP is refused.  It is costed for the caps ib_slot_qp_caps() asks
 * for, as the ops are specified, not for those the device granted, which
 * may describe a larger WQE than the QP's: a WR would seem to cost less.
 */
bool ib_slot_qp_costs_more(struct ib_slot_pool *pool, struct ib_qp *qp)
{
	DECLARE_BITMAP(charged, IB_SLOT_NR_OPCODES) = { };
	DECLARE_BITMAP(refused, IB_SLOT_NR_OPCODES) = { };
	struct ib_qp_init_attr attr;
	u8 units[IB_SLOT_NR_OPCODES];
	unsigned long multi = 0;
	int op;

	ib_slot_qp_attr(&pool->profile, &attr);
	attr.qp_type = qp->qp_type;
	ib_slot_charged_ops(&pool->profile, charged);
	ib_slot_op_units(pool, &attr, units, &multi, refused);
	if (bitmap_intersects(charged, refused, IB_SLOT_NR_OPCODES))
		return true;
	for (op = 0; op < IB_SLOT_NR_OPCODES; op++)
		if (pool->units[op] && units[op] > pool->units[op])
			return true;
	return multi & ~pool->multi_cqe;
}

/* The Send Queue room rdma_rw_init_qp() adds for @ctxs contexts. */
static u32 ib_slot_rw_wrs(struct ib_slot_pool *pool,
			  const struct ib_qp_init_attr *attr, u64 ctxs)
{
	/* Without a port, ib_slot_qp_caps() refuses the caps. */
	if (!ctxs || ctxs > U32_MAX || !attr->port_num)
		return 0;
	return rdma_rw_max_send_wr(pool->dev, attr->port_num, ctxs,
				   attr->create_flags);
}

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
 * With &ib_slot_profile.nr_lkey_mrs, cap.max_rdma_ctxs grows by the
 * pool's lkey MRs, and cap.max_send_wr is left short of what the slots
 * need by what rdma_rw_init_qp() adds for all the contexts, so that the
 * QP is created with the Send Queue the slots need, once; set
 * @init_attr->port_num first.
 *
 * Context: Any context.
 * Return: 0, or -EINVAL if the device cannot hold @nr_slots slots more
 * (the reason is logged); then nothing was changed.
 */
int ib_slot_qp_caps(struct ib_slot_pool *pool, u32 nr_slots,
		    struct ib_qp_init_attr *init_attr, u32 *nr_cqe)
{
	struct ib_device_attr *da = &pool->dev->attrs;
	const struct ib_slot_profile *p = &pool->profile;
	bool first = !*nr_cqe;
	u64 ctxs = init_attr->cap.max_rdma_ctxs +
		   (u64)nr_slots * p->nr_lkey_mrs;
	/* rdma_rw_init_qp() adds room for the contexts asked for before. */
	u64 sq = (u64)nr_slots * pool->cost.sqes + init_attr->cap.max_send_wr +
		 ib_slot_rw_wrs(pool, init_attr, init_attr->cap.max_rdma_ctxs) +
		 (first ? pool->units[IB_WR_RDMA_WRITE] : 0);
	u64 rq = (u64)nr_slots * pool->cost.rqes + init_attr->cap.max_recv_wr +
		 first;
	u64 cqe = (u64)nr_slots * pool->cost.cqes + *nr_cqe + 2 * first;
	u32 rw = ib_slot_rw_wrs(pool, init_attr, ctxs);
	struct ib_qp_init_attr want = *init_attr;
	struct ib_qp_budget budget = { };
	int ret = -EINVAL;

	if (nr_slots && sq <= U32_MAX && rq <= da->max_qp_wr &&
	    cqe <= da->max_cqe && ctxs <= U32_MAX && rw <= sq &&
	    !WARN_ON_ONCE(ctxs && !init_attr->port_num)) {
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
	/* The slots hold every WR of the contexts: rdma_rw adds none. */
	want.cap.max_send_wr = sq - rw;
	want.cap.max_rdma_ctxs = ctxs;
	init_attr->cap = want.cap;
	*nr_cqe = cqe;
	return 0;
}
EXPORT_SYMBOL(ib_slot_qp_caps);

/**
 * ib_slot_profile_rw - describe slots whose lkey MRs are rdma_rw's
 * @profile: the profile; the other fields are the caller's
 * @dev: the device
 * @port_num: a port of @dev the pool's QPs use
 * @max_pages: pages one slot may move by RDMA READ or WRITE
 *
 * For a target that posts rdma_rw contexts: a slot holds the Send Queue
 * room of @max_pages pages of RDMA and, where rdma_rw registers memory on
 * this device (iWARP, max_sgl_rd, force_mr), of the MRs that cover them; a
 * larger request takes several slots (ib_slot_demand_slots()).
 *
 * Context: Any context.
 */
void ib_slot_profile_rw(struct ib_slot_profile *profile,
			struct ib_device *dev, u32 port_num, u32 max_pages)
{
	u32 mr_pages = rdma_rw_mr_pages(dev, port_num);

	profile->max_rdma_sges = max_pages;
	profile->max_pages_per_mr = mr_pages;
	profile->nr_lkey_mrs = mr_pages ? DIV_ROUND_UP(max_pages, mr_pages) : 0;
}
EXPORT_SYMBOL(ib_slot_profile_rw);

/**
 * ib_slot_demand_rw - count one rdma_rw transfer of a request
 * @demand: the request's demand
 * @sqp: the QP the transfer will be posted on
 * @port_num: the port of the connection
 * @sg_cnt: entries of the transfer's scatterlist, before DMA mapping
 * @dir: %DMA_TO_DEVICE for an RDMA WRITE, %DMA_FROM_DEVICE for a READ
 *
 * Counts the WRs and MRs rdma_rw_ctx_init() builds at most for the
 * transfer, before anything is allocated, so that a request waiting for
 * its slots holds no MR.
 *
 * Context: Any context.
 */
void ib_slot_demand_rw(struct ib_slot_demand *demand, struct ib_slot_qp *sqp,
		       u32 port_num, u32 sg_cnt, enum dma_data_direction dir)
{
	u32 mrs;

	demand->nr_wrs += rdma_rw_max_wrs(sqp->qp, port_num, sg_cnt, dir, &mrs);
	demand->nr_rw_mrs += mrs;
}
EXPORT_SYMBOL(ib_slot_demand_rw);

/**
 * ib_slot_demand_slots - how many slots hold a request
 * @sqp: the QP the request will post on
 * @demand: what it posts (ib_slot_demand_rw(), ib_slot_demand_wrs())
 *
 * Every WR is counted at the units of the costliest one a slot may post,
 * so the slots, joined by ib_slot_get_nr(), hold the chains whatever their
 * mix; and enough of them for the rdma_rw MRs.
 *
 * Context: Any context.
 * Return: the number of slots, at least one; %UINT_MAX if the request
 * needs rdma_rw MRs and the pool's slots hold none, which no get grants.
 */
unsigned int ib_slot_demand_slots(const struct ib_slot_qp *sqp,
				  const struct ib_slot_demand *demand)
{
	const struct ib_slot_pool *pool = sqp->pool;
	u64 units = (u64)max(demand->nr_wrs, 1U) * pool->max_units;
	u64 nr = DIV_ROUND_UP_ULL(units, pool->cost.sqes);
	u32 lkey_mrs = pool->profile.nr_lkey_mrs;

	if (demand->nr_rw_mrs) {
		if (!lkey_mrs)
			return UINT_MAX;
		nr = max_t(u64, nr, DIV_ROUND_UP(demand->nr_rw_mrs, lkey_mrs));
	}
	return min_t(u64, nr, UINT_MAX);
}
EXPORT_SYMBOL(ib_slot_demand_slots);
