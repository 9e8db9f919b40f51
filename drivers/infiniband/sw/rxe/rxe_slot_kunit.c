// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests for ib_slot on a live soft-RoCE device.
 *
 * ib_slot_kunit.c drives ib_slot against a model of a provider; this suite
 * checks the model's claims against a real one.  It creates a private
 * Ethernet device (it drops what it transmits: rxe loops back every packet
 * whose destination MAC is its own), an rxe device on it, and RC QPs that
 * are connected to each other through the device's link-local GID.  Every
 * case then asserts on what rxe itself reports: the WR that does not fit,
 * the completions of a flush, the rkey that no longer works, the data that
 * arrived.
 */
#include <kunit/test.h>
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/scatterlist.h>
#include <net/addrconf.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_slot.h>
#include <rdma/rw.h>

#include "rxe.h"
#include "rxe_queue.h"

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

#define RSK_BUF_SIZE	SZ_32K
#define RSK_PAGES	(RSK_BUF_SIZE / PAGE_SIZE + 1)
#define RSK_NR_RECVS	16
#define RSK_TIMEOUT	(20 * HZ)	/* TCG guests are slow */

static struct {
	struct net_device	*ndev;
	struct ib_device	*dev;
	union ib_gid		gid;
	u32			sgid_index;
} rsk;

/* A counted completion: raw WRs and Receives of the tests use these. */
struct rsk_counter {
	struct ib_cqe		cqe;
	atomic_t		n;
	atomic_t		errors;
	struct ib_wc		last;
};

/* One side of a connection: its CQ, QP and, if it takes slots, account. */
struct rsk_end {
	struct ib_cq		*cq;
	struct ib_qp		*qp;
	struct ib_qp_cap	cap;
	struct ib_slot_qp	*sqp;
	u32			credits;	/* of @sqp, idle */
	struct rsk_counter	recv;
	struct ib_recv_wr	recv_wr[RSK_NR_RECVS];
};

/* A DMA-mapped buffer. */
struct rsk_buf {
	void			*va;
	u64			dma;
	struct scatterlist	sg;
};

/*
 * What a test case built, torn down in order when it ends, whether it
 * passed or not: QPs drained (every post completes), slots the test still
 * holds put, QPs detached and destroyed, then pools, buffers and the PD.
 */
struct rsk_ctx {
	struct kunit		*test;
	struct ib_pd		*pd;
	struct rsk_end		end[4];
	unsigned int		nr_ends;
	struct ib_slot_pool	*pools[2];
	unsigned int		nr_pools;
	struct rsk_buf		bufs[3];
	unsigned int		nr_bufs;
	struct ib_slot		*held[4];
	atomic_t		dones;
	atomic_t		done_errors;
	enum ib_wc_status	last_status;
	atomic_t		fenced;
};

/* The ULP context of every slot: whose test it is. */
struct rsk_slot {
	struct rsk_ctx		*ctx;
	struct rsk_req		*req;
};

static void rsk_count_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rsk_counter *c = container_of(wc->wr_cqe, struct rsk_counter,
					     cqe);

	if (wc->status != IB_WC_SUCCESS)
		atomic_inc(&c->errors);
	c->last = *wc;
	atomic_inc(&c->n);
}

static void rsk_counter_init(struct rsk_counter *c)
{
	c->cqe.done = rsk_count_done;
	atomic_set(&c->n, 0);
	atomic_set(&c->errors, 0);
}

static void rsk_slot_done(struct ib_slot *slot, const struct ib_wc *wc)
{
	struct rsk_ctx *ctx = ((struct rsk_slot *)ib_slot_priv(slot))->ctx;

	ctx->last_status = wc->status;
	if (wc->status != IB_WC_SUCCESS)
		atomic_inc(&ctx->done_errors);
	atomic_inc(&ctx->dones);
}

static void rsk_fenced(struct ib_slot *slot, enum ib_wc_status status)
{
	atomic_inc(&((struct rsk_slot *)ib_slot_priv(slot))->ctx->fenced);
}

/*
 * Poll the direct CQs of @ctx until @v reaches @want.  rxe completes WRs
 * from its own tasks, so the entries show up some time after the post.
 */
static bool rsk_wait(struct rsk_ctx *ctx, atomic_t *v, int want)
{
	unsigned long end = jiffies + RSK_TIMEOUT;
	unsigned int i;
	int n;

	while (atomic_read(v) < want) {
		if (time_after(jiffies, end))
			return false;
		n = 0;
		for (i = 0; i < ctx->nr_ends; i++)
			if (ctx->end[i].cq->poll_ctx == IB_POLL_DIRECT)
				n += ib_process_cq_direct(ctx->end[i].cq, -1);
		if (!n)
			usleep_range(200, 400);
	}
	return true;
}

static struct ib_slot *rsk_get(struct rsk_ctx *ctx, struct rsk_end *e)
{
	struct ib_slot *slot = ib_slot_get(e->sqp);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(ctx->test, slot);
	((struct rsk_slot *)ib_slot_priv(slot))->ctx = ctx;
	for (i = 0; i < ARRAY_SIZE(ctx->held); i++) {
		if (!ctx->held[i]) {
			ctx->held[i] = slot;
			return slot;
		}
	}
	ib_slot_put(slot);
	KUNIT_FAIL_AND_ABORT(ctx->test, "a test holds too many slots");
	return NULL;
}

static void rsk_put(struct rsk_ctx *ctx, struct ib_slot *slot)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ctx->held); i++)
		if (ctx->held[i] == slot)
			ctx->held[i] = NULL;
	ib_slot_put(slot);
}

/* Poll the direct CQs of @ctx until every attached QP is idle. */
static bool rsk_wait_idle(struct rsk_ctx *ctx)
{
	unsigned long end = jiffies + RSK_TIMEOUT;
	unsigned int i, busy;

	do {
		busy = 0;
		for (i = 0; i < ctx->nr_ends; i++) {
			struct rsk_end *e = &ctx->end[i];

			if (e->cq->poll_ctx == IB_POLL_DIRECT)
				ib_process_cq_direct(e->cq, -1);
			if (e->sqp && ib_slot_qp_credits(e->sqp) != e->credits)
				busy++;
		}
		if (!busy)
			return true;
		usleep_range(200, 400);
	} while (time_before(jiffies, end));
	return false;
}

static void rsk_ctx_exit(void *data)
{
	struct ib_qp_attr flush = { .qp_state = IB_QPS_ERR };
	struct rsk_ctx *ctx = data;
	struct ib_slot_pool_stats st;
	unsigned int i;

	/*
	 * ib_drain_qp() on a directly polled CQ sleeps 100 ms before it
	 * polls.  Only this test polls those CQs, so flushing their QPs and
	 * polling until ib_slot has every credit back is enough; it keeps
	 * the suite within a few seconds under TCG.
	 */
	for (i = 0; i < ctx->nr_ends; i++) {
		struct rsk_end *e = &ctx->end[i];

		if (!e->qp)
			continue;
		if (e->cq->poll_ctx == IB_POLL_DIRECT)
			ib_modify_qp(e->qp, &flush, IB_QP_STATE);
		else
			ib_drain_qp(e->qp);
	}
	if (!rsk_wait_idle(ctx))
		kunit_err(ctx->test, "posts still in flight at teardown\n");
	for (i = 0; i < ARRAY_SIZE(ctx->held); i++)
		if (ctx->held[i])
			ib_slot_put(ctx->held[i]);
	for (i = ctx->nr_ends; i-- > 0;) {
		struct rsk_end *e = &ctx->end[i];

		if (e->qp) {
			ib_slot_qp_detach(e->sqp);
			ib_destroy_qp(e->qp);
		}
		ib_free_cq(e->cq);
	}
	for (i = 0; i < ctx->nr_pools; i++) {
		/* A slot still out (a fence that never ran) would hang it. */
		ib_slot_pool_get_stats(ctx->pools[i], &st);
		if (st.in_use)
			kunit_err(ctx->test, "pool leaked: %u slots in use\n",
				  st.in_use);
		else
			ib_slot_pool_destroy(ctx->pools[i]);
	}
	for (i = 0; i < ctx->nr_bufs; i++) {
		ib_dma_unmap_sg(rsk.dev, &ctx->bufs[i].sg, 1,
				DMA_BIDIRECTIONAL);
		kfree(ctx->bufs[i].va);
	}
	ib_dealloc_pd(ctx->pd);
}

static struct rsk_ctx *rsk_ctx_new(struct kunit *test)
{
	struct rsk_ctx *ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, ctx);
	ctx->test = test;
	ctx->pd = ib_alloc_pd(rsk.dev, 0);
	KUNIT_ASSERT_FALSE(test, IS_ERR(ctx->pd));
	KUNIT_ASSERT_EQ(test, 0,
			kunit_add_action_or_reset(test, rsk_ctx_exit, ctx));
	return ctx;
}

static struct ib_slot_pool *rsk_pool_attr(struct rsk_ctx *ctx,
					  struct ib_slot_pool_attr *attr)
{
	struct ib_slot_pool *pool;

	KUNIT_ASSERT_LT(ctx->test, ctx->nr_pools, ARRAY_SIZE(ctx->pools));
	attr->pd = ctx->pd;
	attr->priv_size = sizeof(struct rsk_slot);
	attr->name = "rxe-kunit";
	if (!attr->done)
		attr->done = rsk_slot_done;
	pool = ib_slot_pool_create(attr);
	KUNIT_ASSERT_FALSE(ctx->test, IS_ERR(pool));
	ctx->pools[ctx->nr_pools++] = pool;
	return pool;
}

static struct ib_slot_pool *rsk_pool(struct rsk_ctx *ctx,
				     const struct ib_slot_profile *profile,
				     u32 nr_slots)
{
	struct ib_slot_pool_attr attr = {
		.profile = *profile,
		.nr_slots = nr_slots,
		.policy = IB_SLOT_NO_EXHAUST,
	};

	return rsk_pool_attr(ctx, &attr);
}

/*
 * A QP with its own CQ.  With a pool, ib_slot sizes both for @nr_slots
 * slots and the QP is attached; without, the QP asks for @nr_slots WRs.
 * Either way it gets RSK_NR_RECVS Receives on top.
 */
static struct rsk_end *rsk_end(struct rsk_ctx *ctx, struct ib_slot_pool *pool,
			       u32 nr_slots, enum ib_poll_context poll)
{
	struct kunit *test = ctx->test;
	struct rsk_end *e = &ctx->end[ctx->nr_ends];
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		/* rdma_rw sizes its contexts by port. */
		.port_num = 1,
		.cap.max_send_wr = nr_slots,
		.cap.max_send_sge = 1,
		.cap.max_recv_sge = 1,
	};
	struct ib_qp_budget budget;
	struct ib_qp *qp;
	u32 nr_cqe = 0;
	int i;

	KUNIT_ASSERT_LT(test, ctx->nr_ends, ARRAY_SIZE(ctx->end));
	if (pool) {
		/* Sized from zero: ib_slot_qp_caps() adds what slots need. */
		init.cap.max_send_wr = 0;
		KUNIT_ASSERT_EQ(test, 0, ib_slot_qp_caps(pool, nr_slots, &init,
							 &nr_cqe));
	} else {
		/* Room for the flush of a full Send Queue. */
		KUNIT_ASSERT_EQ(test, 0, ib_query_qp_budget(rsk.dev, &init,
							    &budget));
		nr_cqe = budget.cap.max_send_wr + 1;
	}
	init.cap.max_recv_wr += RSK_NR_RECVS;
	nr_cqe += RSK_NR_RECVS;
	e->cq = ib_alloc_cq(rsk.dev, NULL, nr_cqe, 0, poll);
	KUNIT_ASSERT_FALSE(test, IS_ERR(e->cq));
	ctx->nr_ends++;
	init.send_cq = e->cq;
	init.recv_cq = e->cq;
	/* Teardown must not see error pointers. */
	qp = ib_create_qp(ctx->pd, &init);
	KUNIT_ASSERT_FALSE(test, IS_ERR(qp));
	e->qp = qp;
	e->cap = init.cap;
	if (pool) {
		struct ib_slot_qp *sqp = ib_slot_qp_attach(pool, qp, &e->cap,
							   nr_slots);

		KUNIT_ASSERT_FALSE(test, IS_ERR(sqp));
		e->sqp = sqp;
		e->credits = ib_slot_qp_credits(sqp);
	}
	rsk_counter_init(&e->recv);
	for (i = 0; i < RSK_NR_RECVS; i++)
		e->recv_wr[i].wr_cqe = &e->recv.cqe;
	return e;
}

static void rsk_modify(struct kunit *test, struct ib_qp *qp,
		       struct ib_qp_attr *attr, int mask)
{
	KUNIT_ASSERT_EQ(test, 0, ib_modify_qp(qp, attr, mask));
}

/* INIT, RTR, RTS towards @peer, and @a's Receives posted (zero-length). */
static void rsk_connect_one(struct kunit *test, struct rsk_end *a,
			    struct rsk_end *peer)
{
	struct ib_qp_attr attr = {
		.qp_state = IB_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IB_ACCESS_REMOTE_WRITE |
				   IB_ACCESS_REMOTE_READ,
	};
	int i;

	rsk_modify(test, a->qp, &attr, IB_QP_STATE | IB_QP_PKEY_INDEX |
		   IB_QP_PORT | IB_QP_ACCESS_FLAGS);
	for (i = 0; i < RSK_NR_RECVS; i++)
		KUNIT_ASSERT_EQ(test, 0, ib_post_recv(a->qp, &a->recv_wr[i],
						      NULL));

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTR;
	attr.path_mtu = IB_MTU_1024;
	attr.dest_qp_num = peer->qp->qp_num;
	attr.max_dest_rd_atomic = 4;
	attr.min_rnr_timer = 1;
	attr.ah_attr.type = rdma_ah_find_type(rsk.dev, 1);
	rdma_ah_set_port_num(&attr.ah_attr, 1);
	rdma_ah_set_grh(&attr.ah_attr, &rsk.gid, 0, rsk.sgid_index, 1, 0);
	/* Kernel users resolve the MAC: ours, so that rxe loops back. */
	ether_addr_copy(attr.ah_attr.roce.dmac, rsk.ndev->dev_addr);
	rsk_modify(test, a->qp, &attr, IB_QP_STATE | IB_QP_AV |
		   IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN |
		   IB_QP_MAX_DEST_RD_ATOMIC | IB_QP_MIN_RNR_TIMER);

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IB_QPS_RTS;
	attr.timeout = 14;
	attr.retry_cnt = 6;	/* 7 retries forever on rxe */
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 4;
	rsk_modify(test, a->qp, &attr, IB_QP_STATE | IB_QP_TIMEOUT |
		   IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_SQ_PSN |
		   IB_QP_MAX_QP_RD_ATOMIC);
}

static void rsk_connect(struct kunit *test, struct rsk_end *a,
			struct rsk_end *b)
{
	rsk_connect_one(test, a, b);
	rsk_connect_one(test, b, a);
}

static void rsk_set_state(struct kunit *test, struct rsk_end *e,
			  enum ib_qp_state state)
{
	struct ib_qp_attr attr = { .qp_state = state };

	rsk_modify(test, e->qp, &attr, IB_QP_STATE);
}

static struct rsk_buf *rsk_buf(struct rsk_ctx *ctx, u8 fill)
{
	struct rsk_buf *b;

	KUNIT_ASSERT_LT(ctx->test, ctx->nr_bufs, ARRAY_SIZE(ctx->bufs));
	b = &ctx->bufs[ctx->nr_bufs];
	b->va = kmalloc(RSK_BUF_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(ctx->test, b->va);
	memset(b->va, fill, RSK_BUF_SIZE);
	sg_init_one(&b->sg, b->va, RSK_BUF_SIZE);
	if (ib_dma_map_sg(rsk.dev, &b->sg, 1, DMA_BIDIRECTIONAL) != 1) {
		kfree(b->va);
		KUNIT_FAIL_AND_ABORT(ctx->test, "cannot map a buffer");
	}
	b->dma = sg_dma_address(&b->sg);
	ctx->nr_bufs++;
	return b;
}

static void rsk_pattern(void *va, size_t len, u32 seed)
{
	u32 *p = va;
	size_t i;

	for (i = 0; i < len / sizeof(*p); i++)
		p[i] = seed + i * 2654435761U;
}

/* Register @b through MR @idx of @slot with the given access. */
static void rsk_map(struct kunit *test, struct ib_slot *slot,
		    unsigned int idx, struct rsk_buf *b, int access)
{
	KUNIT_ASSERT_EQ(test, 1, ib_slot_map_mr(slot, idx, &b->sg, 1, NULL,
						access));
}

static void rsk_wait_done(struct rsk_ctx *ctx, int want)
{
	KUNIT_ASSERT_TRUE_MSG(ctx->test, rsk_wait(ctx, &ctx->dones, want),
			      "%d of %d posts completed", atomic_read(&ctx->dones),
			      want);
}

/* A slot of @e whose MR 0 exposes @dst to the peer's RDMA WRITE, registered */
static struct ib_slot *rsk_expose(struct rsk_ctx *ctx, struct rsk_end *e,
				  struct rsk_buf *dst)
{
	struct ib_slot *slot = rsk_get(ctx, e);

	rsk_map(ctx->test, slot, 0, dst, IB_ACCESS_LOCAL_WRITE |
		IB_ACCESS_REMOTE_WRITE);
	KUNIT_ASSERT_EQ(ctx->test, 0, ib_slot_post(slot, NULL));
	rsk_wait_done(ctx, atomic_read(&ctx->dones) + 1);
	return slot;
}

/*
 * The hook's capacity is exact: with the QP held in SQD nothing drains,
 * the WR after the granted cap.max_send_wr is refused, and moving the QP
 * to ERR completes every WR it holds, signaled or not, once.
 */
static void rsk_sq_full_at_budget(struct kunit *test)
{
	static const u32 asked[] = { 1, 5, 16, 100 };
	unsigned int i, k;

	for (i = 0; i < ARRAY_SIZE(asked); i++) {
		struct rsk_ctx *ctx = rsk_ctx_new(test);
		struct ib_qp_init_attr init = {
			.qp_type = IB_QPT_RC,
			.cap.max_send_wr = asked[i],
			.cap.max_send_sge = 1,
			.cap.max_recv_sge = 1,
		};
		struct ib_qp_budget budget;
		struct rsk_counter sent;
		struct ib_send_wr wr = {
			.wr_cqe = &sent.cqe,
			.opcode = IB_WR_SEND,
		};
		struct rsk_end *a, *b;
		int ret = 0;

		KUNIT_ASSERT_EQ(test, 0, ib_query_qp_budget(rsk.dev, &init,
							    &budget));
		a = rsk_end(ctx, NULL, asked[i], IB_POLL_DIRECT);
		b = rsk_end(ctx, NULL, 1, IB_POLL_DIRECT);
		KUNIT_EXPECT_EQ(test, budget.cap.max_send_wr,
				a->cap.max_send_wr);
		KUNIT_EXPECT_EQ(test, budget.cap.max_send_sge,
				a->cap.max_send_sge);
		KUNIT_EXPECT_LE(test, budget.max_send_wr_limit,
				rsk.dev->attrs.max_qp_wr);

		rsk_connect(test, a, b);
		rsk_set_state(test, a, IB_QPS_SQD);
		rsk_counter_init(&sent);
		for (k = 0; k < budget.cap.max_send_wr; k++) {
			wr.send_flags = k & 1 ? IB_SEND_SIGNALED : 0;
			ret = ib_post_send(a->qp, &wr, NULL);
			if (ret)
				break;
		}
		KUNIT_EXPECT_EQ_MSG(test, ret, 0, "WR %u of %u (asked %u)", k,
				    budget.cap.max_send_wr, asked[i]);
		KUNIT_EXPECT_EQ(test, -ENOMEM, ib_post_send(a->qp, &wr, NULL));

		rsk_set_state(test, a, IB_QPS_ERR);
		KUNIT_EXPECT_TRUE(test, rsk_wait(ctx, &sent.n, k));
		/* Anything beyond k would show up by now. */
		msleep(20);
		ib_process_cq_direct(a->cq, -1);
		KUNIT_EXPECT_EQ(test, atomic_read(&sent.n), k);
		KUNIT_EXPECT_EQ(test, atomic_read(&sent.errors), k);
		KUNIT_EXPECT_EQ(test, sent.last.status, IB_WC_WR_FLUSH_ERR);
	}
}

static const struct ib_slot_profile rsk_reg_send = {
	.nr_rkey_mrs = 1,
	.max_pages_per_mr = RSK_PAGES,
	.nr_sends = 1,
};

/* A target's exposed buffer: one rkey MR, invalidated by ib_slot_fence(). */
static const struct ib_slot_profile rsk_reg_sync = {
	.nr_rkey_mrs = 1,
	.max_pages_per_mr = RSK_PAGES,
};

/*
 * Two slots of a REG_MR + SEND profile on a QP sized by ib_slot_qp_caps():
 * 2 * 3 units + 1 for the drain is 7, which rxe grants exactly (its ring
 * holds a power of two minus one), so the slots fill the Send Queue to the
 * last entry but the drain's.  Each slot ran once (its MR is valid), so
 * the post of each is the worst case: LOCAL_INV, REG_MR, SEND.
 */
static struct rsk_end *rsk_fill_sqd(struct rsk_ctx *ctx,
				    struct ib_slot *slots[2])
{
	struct kunit *test = ctx->test;
	struct ib_slot_pool *pool = rsk_pool(ctx, &rsk_reg_send, 2);
	struct rsk_buf *buf = rsk_buf(ctx, 0);
	struct ib_send_wr send[2] = { };
	struct rsk_end *a, *b;
	struct ib_slot_pool_stats st;
	int i, round;

	a = rsk_end(ctx, pool, 2, IB_POLL_DIRECT);
	b = rsk_end(ctx, NULL, 1, IB_POLL_DIRECT);
	KUNIT_ASSERT_EQ(test, a->cap.max_send_wr, 7);
	KUNIT_ASSERT_EQ(test, ib_slot_qp_credits(a->sqp), 6);
	rsk_connect(test, a, b);

	for (round = 0; round < 2; round++) {
		if (round)
			rsk_set_state(test, a, IB_QPS_SQD);
		for (i = 0; i < 2; i++) {
			slots[i] = rsk_get(ctx, a);
			rsk_map(test, slots[i], 0, buf, IB_ACCESS_REMOTE_WRITE |
				IB_ACCESS_LOCAL_WRITE);
			send[i].opcode = IB_WR_SEND;
			KUNIT_ASSERT_EQ(test, 0, ib_slot_post(slots[i],
							      &send[i]));
		}
		if (round)
			break;
		rsk_wait_done(ctx, 2);
		KUNIT_ASSERT_EQ(test, atomic_read(&ctx->done_errors), 0);
		rsk_put(ctx, slots[0]);
		rsk_put(ctx, slots[1]);
	}
	ib_slot_pool_get_stats(pool, &st);
	KUNIT_EXPECT_EQ(test, st.local_inv, 2);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(a->sqp), 0);
	return a;
}

/* A flush completes each of the slots' six WRs once, and each post once. */
static void rsk_slot_flush(struct kunit *test)
{
	struct rsk_ctx *ctx = rsk_ctx_new(test);
	struct ib_slot *slots[2];
	struct rsk_end *a = rsk_fill_sqd(ctx, slots);
	int polled = 0, n;
	unsigned long end = jiffies + RSK_TIMEOUT;

	rsk_set_state(test, a, IB_QPS_ERR);
	/* The slots' six WRs, and a's own Receives, which nothing used. */
	while (polled < 6 + RSK_NR_RECVS && time_before(jiffies, end)) {
		n = ib_process_cq_direct(a->cq, -1);
		if (!n)
			usleep_range(200, 400);
		polled += n;
	}
	msleep(20);
	polled += ib_process_cq_direct(a->cq, -1);
	KUNIT_EXPECT_EQ(test, polled, 6 + RSK_NR_RECVS);
	KUNIT_EXPECT_EQ(test, atomic_read(&a->recv.errors), RSK_NR_RECVS);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->dones), 4);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->done_errors), 2);
	KUNIT_EXPECT_EQ(test, ctx->last_status, IB_WC_WR_FLUSH_ERR);
	rsk_put(ctx, slots[0]);
	rsk_put(ctx, slots[1]);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(a->sqp), 6);
}

/*
 * ib_drain_qp() on a QP whose slots hold every credit: the entry
 * ib_slot_qp_caps() kept for the drain is what lets it post (a failed
 * drain post warns, and this suite runs with panic_on_warn).
 */
static void rsk_slot_drain_full(struct kunit *test)
{
	struct rsk_ctx *ctx = rsk_ctx_new(test);
	struct ib_slot *slots[2];
	struct rsk_end *a = rsk_fill_sqd(ctx, slots);

	ib_drain_qp(a->qp);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->dones), 4);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->done_errors), 2);
	rsk_put(ctx, slots[0]);
	rsk_put(ctx, slots[1]);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(a->sqp), 6);
}

static void rsk_rdma_wr(struct ib_rdma_wr *rdma, enum ib_wr_opcode opcode,
			struct ib_sge *sge, struct ib_slot *target)
{
	rdma->wr.opcode = opcode;
	rdma->wr.sg_list = sge;
	rdma->wr.num_sge = 1;
	rdma->remote_addr = ib_slot_mr(target, 0)->iova;
	rdma->rkey = ib_slot_rkey(target, 0);
}

/*
 * Data through slots both ways: an RDMA WRITE and a SEND with Invalidate
 * into memory the target exposed through its slot's MR, then an RDMA
 * READ back into the initiator, whose sink is a plain SGE on RoCE.
 */
static void rsk_slot_round_trip(struct kunit *test)
{
	static const struct ib_slot_profile init_profile = {
		.max_rdma_sges = 1,
		.nr_sends = 1,
	};
	struct rsk_ctx *ctx = rsk_ctx_new(test);
	struct ib_slot_pool *ip = rsk_pool(ctx, &init_profile, 2);
	struct ib_slot_pool *tp = rsk_pool(ctx, &rsk_reg_sync, 1);
	struct rsk_buf *src = rsk_buf(ctx, 0), *dst = rsk_buf(ctx, 0xa5);
	struct rsk_buf *back = rsk_buf(ctx, 0x5a);
	struct rsk_end *a = rsk_end(ctx, ip, 2, IB_POLL_DIRECT);
	struct rsk_end *b = rsk_end(ctx, tp, 1, IB_POLL_DIRECT);
	const int access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
			   IB_ACCESS_REMOTE_READ;
	struct ib_sge sge = {
		.addr = src->dma,
		.length = RSK_BUF_SIZE,
		.lkey = ctx->pd->local_dma_lkey,
	};
	struct ib_send_wr send = { .opcode = IB_WR_SEND_WITH_INV };
	struct ib_slot_pool_stats st;
	struct ib_rdma_wr rdma = { };
	struct ib_slot *is, *ts;
	u32 rkey;

	rsk_connect(test, a, b);
	rsk_pattern(src->va, RSK_BUF_SIZE, 0x1234);

	ts = rsk_get(ctx, b);
	rsk_map(test, ts, 0, dst, access);
	KUNIT_ASSERT_EQ(test, 0, ib_slot_post(ts, NULL));
	rsk_wait_done(ctx, 1);
	rkey = ib_slot_rkey(ts, 0);

	is = rsk_get(ctx, a);
	rsk_rdma_wr(&rdma, IB_WR_RDMA_WRITE, &sge, ts);
	rdma.wr.next = &send;
	send.ex.invalidate_rkey = rkey;
	KUNIT_ASSERT_EQ(test, 0, ib_slot_post(is, &rdma.wr));
	rsk_wait_done(ctx, 2);
	KUNIT_ASSERT_TRUE(test, rsk_wait(ctx, &b->recv.n, 1));
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->done_errors), 0);
	KUNIT_EXPECT_EQ(test, b->recv.last.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_TRUE(test, b->recv.last.wc_flags & IB_WC_WITH_INVALIDATE);
	KUNIT_EXPECT_EQ(test, b->recv.last.ex.invalidate_rkey, rkey);
	/* The SEND follows the WRITE, so the data is there when it lands. */
	KUNIT_EXPECT_EQ(test, 0, memcmp(src->va, dst->va, RSK_BUF_SIZE));
	rsk_put(ctx, is);

	/* The peer invalidated the rkey: fencing needs no LOCAL_INV. */
	KUNIT_EXPECT_EQ(test, 0, ib_slot_fence(ts, &b->recv.last, rsk_fenced));
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->fenced), 1);
	ib_slot_pool_get_stats(tp, &st);
	KUNIT_EXPECT_EQ(test, st.remote_inv, 1);
	KUNIT_EXPECT_EQ(test, st.local_inv, 0);
	rsk_put(ctx, ts);

	/* Expose the data again and read it back. */
	ts = rsk_get(ctx, b);
	rsk_map(test, ts, 0, dst, access);
	KUNIT_ASSERT_EQ(test, 0, ib_slot_post(ts, NULL));
	rsk_wait_done(ctx, 3);
	KUNIT_EXPECT_NE(test, rkey, ib_slot_rkey(ts, 0));

	is = rsk_get(ctx, a);
	sge.addr = back->dma;
	rsk_rdma_wr(&rdma, IB_WR_RDMA_READ, &sge, ts);
	rdma.wr.next = NULL;
	KUNIT_ASSERT_EQ(test, 0, ib_slot_post(is, &rdma.wr));
	rsk_wait_done(ctx, 4);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->done_errors), 0);
	KUNIT_EXPECT_EQ(test, 0, memcmp(src->va, back->va, RSK_BUF_SIZE));
	rsk_put(ctx, is);

	KUNIT_EXPECT_EQ(test, 0, ib_slot_fence(ts, NULL, rsk_fenced));
	KUNIT_ASSERT_TRUE(test, rsk_wait(ctx, &ctx->fenced, 2));
	ib_slot_pool_get_stats(tp, &st);
	KUNIT_EXPECT_EQ(test, st.local_inv, 1);
	rsk_put(ctx, ts);
}

/*
 * @rdma's rkey is dead: the WRITE, posted on @qp, fails at the responder
 * and leaves @dst, zeroed by the caller, as it was.
 */
static void rsk_write_refused(struct rsk_ctx *ctx, struct ib_qp *qp,
			      struct ib_rdma_wr *rdma, struct rsk_counter *wrote,
			      struct rsk_buf *dst)
{
	struct kunit *test = ctx->test;
	int n = atomic_read(&wrote->n) + 1;

	KUNIT_ASSERT_EQ(test, 0, ib_post_send(qp, &rdma->wr, NULL));
	KUNIT_ASSERT_TRUE(test, rsk_wait(ctx, &wrote->n, n));
	KUNIT_EXPECT_EQ(test, wrote->last.status, IB_WC_REM_ACCESS_ERR);
	KUNIT_EXPECT_NULL(test, memchr_inv(dst->va, 0, RSK_BUF_SIZE));
}

/*
 * The rkey a slot registered works until ib_slot_fence() says it is dead,
 * and not after: an RDMA WRITE with it then fails at the responder.
 */
static void rsk_slot_local_inv(struct kunit *test)
{
	struct rsk_ctx *ctx = rsk_ctx_new(test);
	struct ib_slot_pool *pool = rsk_pool(ctx, &rsk_reg_sync, 1);
	struct rsk_buf *src = rsk_buf(ctx, 0), *dst = rsk_buf(ctx, 0);
	struct rsk_end *a = rsk_end(ctx, NULL, 4, IB_POLL_DIRECT);
	struct rsk_end *b = rsk_end(ctx, pool, 1, IB_POLL_DIRECT);
	struct ib_sge sge = {
		.addr = src->dma,
		.length = RSK_BUF_SIZE,
		.lkey = ctx->pd->local_dma_lkey,
	};
	struct rsk_counter wrote;
	struct ib_rdma_wr rdma = { .wr.wr_cqe = &wrote.cqe,
				   .wr.send_flags = IB_SEND_SIGNALED };
	struct ib_slot *ts;

	rsk_connect(test, a, b);
	rsk_counter_init(&wrote);
	rsk_pattern(src->va, RSK_BUF_SIZE, 7);

	ts = rsk_expose(ctx, b, dst);

	rsk_rdma_wr(&rdma, IB_WR_RDMA_WRITE, &sge, ts);
	KUNIT_ASSERT_EQ(test, 0, ib_post_send(a->qp, &rdma.wr, NULL));
	KUNIT_ASSERT_TRUE(test, rsk_wait(ctx, &wrote.n, 1));
	KUNIT_EXPECT_EQ(test, wrote.last.status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, 0, memcmp(src->va, dst->va, RSK_BUF_SIZE));

	KUNIT_EXPECT_EQ(test, 0, ib_slot_fence(ts, NULL, rsk_fenced));
	KUNIT_ASSERT_TRUE(test, rsk_wait(ctx, &ctx->fenced, 1));
	KUNIT_EXPECT_FALSE(test, ts->mrs[0].mr->need_inval);

	memset(dst->va, 0, RSK_BUF_SIZE);
	rsk_write_refused(ctx, a->qp, &rdma, &wrote, dst);
	rsk_put(ctx, ts);
}

/*
 * The QP that exposed a buffer fails before its fence: the fence's
 * LOCAL_INV is flushed, and fenced() runs once the core has deregistered
 * the MR.  A peer that kept the rkey and writes through another QP of the
 * same PD then fails at the responder, and the buffer stays as it was:
 * the memory may go back once fenced() runs.
 */
static void rsk_slot_fence_flushed(struct kunit *test)
{
	struct rsk_ctx *ctx = rsk_ctx_new(test);
	struct ib_slot_pool *pool = rsk_pool(ctx, &rsk_reg_sync, 1);
	struct rsk_buf *src = rsk_buf(ctx, 0), *dst = rsk_buf(ctx, 0);
	struct rsk_end *a = rsk_end(ctx, NULL, 4, IB_POLL_DIRECT);
	struct rsk_end *b = rsk_end(ctx, pool, 1, IB_POLL_DIRECT);
	struct rsk_end *c = rsk_end(ctx, NULL, 4, IB_POLL_DIRECT);
	struct rsk_end *d = rsk_end(ctx, NULL, 4, IB_POLL_DIRECT);
	struct ib_sge sge = {
		.addr = src->dma,
		.length = RSK_BUF_SIZE,
		.lkey = ctx->pd->local_dma_lkey,
	};
	struct rsk_counter wrote;
	struct ib_rdma_wr rdma = { .wr.wr_cqe = &wrote.cqe,
				   .wr.send_flags = IB_SEND_SIGNALED };
	struct ib_slot *ts;

	rsk_connect(test, a, b);
	rsk_connect(test, c, d);
	rsk_counter_init(&wrote);
	rsk_pattern(src->va, RSK_BUF_SIZE, 11);

	ts = rsk_expose(ctx, b, dst);
	rsk_rdma_wr(&rdma, IB_WR_RDMA_WRITE, &sge, ts);

	rsk_set_state(test, b, IB_QPS_ERR);
	KUNIT_EXPECT_EQ(test, 0, ib_slot_fence(ts, NULL, rsk_fenced));
	KUNIT_ASSERT_TRUE(test, rsk_wait(ctx, &ctx->fenced, 1));
	rsk_put(ctx, ts);

	rsk_write_refused(ctx, c->qp, &rdma, &wrote, dst);
}

/* A target's reply: two rdma_rw contexts of RDMA WRITE and a SEND. */
static const struct ib_slot_profile rsk_rw_write = {
	.max_rdma_sges = 2,
	.nr_sends = 1,
};

/*
 * Two rdma_rw contexts that write the halves of @src to the buffer @ts
 * registered, chained as ib_srpt chains them on 6.12: they get no cqe,
 * and @tail follows them.  Returns the first WR.
 */
static struct ib_send_wr *rsk_rw_chain(struct kunit *test, struct rsk_end *e,
				       struct rdma_rw_ctx rw[2],
				       struct scatterlist sg[2],
				       struct rsk_buf *src, struct ib_slot *ts,
				       struct ib_send_wr *tail)
{
	const u32 half = RSK_BUF_SIZE / 2;
	struct ib_send_wr *first = tail;
	int i;

	for (i = 0; i < 2; i++) {
		sg_init_one(&sg[i], src->va + i * half, half);
		KUNIT_ASSERT_EQ(test, 1,
				rdma_rw_ctx_init(&rw[i], e->qp, 1, &sg[i], 1, 0,
						 ib_slot_mr(ts, 0)->iova + i * half,
						 ib_slot_rkey(ts, 0),
						 DMA_TO_DEVICE));
	}
	for (i = 1; i >= 0; i--)
		first = rdma_rw_ctx_wrs(&rw[i], e->qp, 1, NULL, first);
	return first;
}

static void rsk_rw_destroy(struct rsk_end *e, struct rdma_rw_ctx rw[2],
			   struct scatterlist sg[2])
{
	int i;

	for (i = 0; i < 2; i++)
		rdma_rw_ctx_destroy(&rw[i], e->qp, 1, &sg[i], 1, DMA_TO_DEVICE);
}

/* What rsk_poll_raw() polled. */
struct rsk_raw {
	int	n;
	int	flushed;
	int	no_cqe;		/* dropped by ib_process_cq_direct() */
	int	slot_cqe;	/* carried a cqe of the slot asked about */
};

/*
 * Poll @e's CQ until @want completions came, and a moment more to see that
 * no other comes.  Each is handed to its cqe, as ib_process_cq_direct()
 * does; unlike it, this counts those that have none, which it drops
 * without a word when they are flushes.
 */
static void rsk_poll_raw(struct rsk_end *e, int want,
			 const struct ib_slot *slot, struct rsk_raw *raw)
{
	unsigned long end = jiffies + RSK_TIMEOUT;
	bool settled = false;
	struct ib_wc wc;

	memset(raw, 0, sizeof(*raw));
	for (;;) {
		if (ib_poll_cq(e->cq, 1, &wc) == 1) {
			raw->n++;
			raw->flushed += wc.status == IB_WC_WR_FLUSH_ERR;
			raw->slot_cqe += slot && (wc.wr_cqe == &slot->cqe ||
						  wc.wr_cqe == &slot->aux_cqe);
			if (wc.wr_cqe)
				wc.wr_cqe->done(e->cq, &wc);
			else
				raw->no_cqe++;
			continue;
		}
		if (raw->n >= want) {
			if (settled)
				return;
			settled = true;
			msleep(20);
			continue;
		}
		if (time_after(jiffies, end))
			return;
		usleep_range(200, 400);
	}
}

/*
 * The chain a target posts on 6.12 (ib_srpt): the WRs of its rdma_rw
 * contexts carry no cqe, and only the SEND after them is signaled.  In a
 * QP in error each of them is flushed with a completion of its own, which
 * has no cqe: the CQ code drops it, and the target never learns what
 * became of its RDMA WRITEs.  Through a slot, the same chain moves the
 * data, and once flushed every completion is the slot's and done() runs
 * once, with the flush.
 */
static void rsk_slot_rw_chain_flush(struct kunit *test)
{
	struct rsk_ctx *ctx = rsk_ctx_new(test);
	struct ib_slot_pool *ip = rsk_pool(ctx, &rsk_rw_write, 1);
	struct ib_slot_pool *tp = rsk_pool(ctx, &rsk_reg_sync, 1);
	struct rsk_buf *src = rsk_buf(ctx, 0), *dst = rsk_buf(ctx, 0);
	struct rsk_end *a = rsk_end(ctx, ip, 1, IB_POLL_DIRECT);
	struct rsk_end *b = rsk_end(ctx, tp, 1, IB_POLL_DIRECT);
	struct ib_send_wr send = { .opcode = IB_WR_SEND };
	struct ib_send_wr *first;
	struct rdma_rw_ctx rw[2];
	struct scatterlist sg[2];
	struct rsk_counter sent;
	struct ib_slot *is, *ts;
	struct rsk_raw raw;

	rsk_connect(test, a, b);
	rsk_pattern(src->va, RSK_BUF_SIZE, 0x5107);
	ts = rsk_expose(ctx, b, dst);

	is = rsk_get(ctx, a);
	first = rsk_rw_chain(test, a, rw, sg, src, ts, &send);
	KUNIT_ASSERT_EQ(test, 0, ib_slot_post(is, first));
	rsk_wait_done(ctx, 2);
	rsk_rw_destroy(a, rw, sg);
	KUNIT_EXPECT_EQ(test, 0, memcmp(src->va, dst->va, RSK_BUF_SIZE));
	KUNIT_ASSERT_TRUE(test, rsk_wait(ctx, &b->recv.n, 1));
	rsk_put(ctx, is);

	/* In error, a's Receives flush first. */
	rsk_set_state(test, a, IB_QPS_ERR);
	rsk_poll_raw(a, RSK_NR_RECVS, NULL, &raw);
	KUNIT_ASSERT_EQ(test, raw.n, RSK_NR_RECVS);
	KUNIT_ASSERT_EQ(test, atomic_read(&a->recv.errors), RSK_NR_RECVS);

	/* Stock: the SEND's completion, and two with no cqe. */
	rsk_counter_init(&sent);
	send.wr_cqe = &sent.cqe;
	send.send_flags = IB_SEND_SIGNALED;
	first = rsk_rw_chain(test, a, rw, sg, src, ts, &send);
	KUNIT_ASSERT_EQ(test, 0, ib_post_send(a->qp, first, NULL));
	rsk_poll_raw(a, 3, NULL, &raw);
	rsk_rw_destroy(a, rw, sg);
	KUNIT_EXPECT_EQ(test, raw.n, 3);
	KUNIT_EXPECT_EQ(test, raw.flushed, 3);
	KUNIT_EXPECT_EQ(test, raw.no_cqe, 2);
	KUNIT_EXPECT_EQ(test, atomic_read(&sent.n), 1);
	KUNIT_EXPECT_EQ(test, sent.last.status, IB_WC_WR_FLUSH_ERR);

	/* Through a slot: every completion is the slot's, and one done(). */
	is = rsk_get(ctx, a);
	send = (struct ib_send_wr){ .opcode = IB_WR_SEND };
	first = rsk_rw_chain(test, a, rw, sg, src, ts, &send);
	KUNIT_ASSERT_EQ(test, 0, ib_slot_post(is, first));
	rsk_poll_raw(a, 3, is, &raw);
	rsk_rw_destroy(a, rw, sg);
	KUNIT_EXPECT_EQ(test, raw.n, 3);
	KUNIT_EXPECT_EQ(test, raw.flushed, 3);
	KUNIT_EXPECT_EQ(test, raw.no_cqe, 0);
	KUNIT_EXPECT_EQ(test, raw.slot_cqe, 3);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->dones), 3);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->done_errors), 1);
	KUNIT_EXPECT_EQ(test, ctx->last_status, IB_WC_WR_FLUSH_ERR);
	rsk_put(ctx, is);
}

/*
 * Slots whose lkey MR is rdma_rw's, on rxe: RoCE without max_sgl_rd, so
 * rdma_rw registers nothing there, and 256 entries move as RDMA WRs of
 * the QP's SGE limit.  The pool allocates no MR; the QP is created with an
 * rdma_rw context per slot and, once rdma_rw added its room for them, the
 * Send Queue the slots need.  Six slots of five units and the drain's
 * make 31, a size of rxe's rings: one WR more would double it.
 */
static void rsk_slot_rw_qp_caps(struct kunit *test)
{
	static const struct ib_slot_profile rw = {
		.nr_lkey_mrs = 1,
		.max_pages_per_mr = RSK_PAGES,
		.max_rdma_sges = 1,
		.nr_sends = 1,
	};
	struct rsk_ctx *ctx = rsk_ctx_new(test);
	struct ib_slot_pool *pool = rsk_pool(ctx, &rw, 6);
	struct ib_qp_init_attr init = {
		.qp_type = IB_QPT_RC,
		.port_num = 1,
		.cap.max_send_sge = 1,
		.cap.max_recv_sge = 1,
	};
	struct ib_slot_cost cost;
	struct ib_slot *slot;
	struct rsk_end *a;
	u32 nr_cqe = 0, mrs;

	KUNIT_EXPECT_EQ(test, rdma_rw_mr_pages(rsk.dev, 1), 0);
	KUNIT_ASSERT_EQ(test, 0, ib_slot_profile_cost(rsk.dev, &rw, &cost));
	/* LOCAL_INV, REG_MR and RDMA READ of the MR, an RDMA WR, a SEND. */
	KUNIT_ASSERT_EQ(test, cost.sqes, 5);
	KUNIT_ASSERT_EQ(test, 0, ib_slot_qp_caps(pool, 6, &init, &nr_cqe));
	KUNIT_EXPECT_EQ(test, init.cap.max_rdma_ctxs, 6);
	KUNIT_EXPECT_EQ(test, init.cap.max_send_wr +
			rdma_rw_max_send_wr(rsk.dev, 1, 6, 0),
			6 * cost.sqes + 1);

	a = rsk_end(ctx, pool, 6, IB_POLL_DIRECT);
	KUNIT_EXPECT_EQ(test, a->cap.max_send_wr, 6 * cost.sqes + 1);
	KUNIT_EXPECT_TRUE(test, list_empty(&a->qp->rdma_mrs));
	slot = rsk_get(ctx, a);
	KUNIT_EXPECT_EQ(test, slot->nr_mrs, 0);
	rsk_put(ctx, slot);

	mrs = 1;
	KUNIT_EXPECT_EQ(test, rdma_rw_max_wrs(a->qp, 1, 256, DMA_TO_DEVICE,
					      &mrs),
			DIV_ROUND_UP(256, a->qp->max_write_sge));
	KUNIT_EXPECT_EQ(test, mrs, 0);
	mrs = 1;
	KUNIT_EXPECT_EQ(test, rdma_rw_max_wrs(a->qp, 1, 256, DMA_FROM_DEVICE,
					      &mrs),
			DIV_ROUND_UP(256, a->qp->max_read_sge));
	KUNIT_EXPECT_EQ(test, mrs, 0);
}

/* Load on a back-pressure pool */

#define RSK_LOAD_REQS	1000
#define RSK_LOAD_QPS	2

struct rsk_req {
	struct ib_slot_waiter	w;
	struct ib_slot		*slot;
	struct rsk_load		*load;
	u32			idx;
	struct ib_send_wr	send;
};

struct rsk_load {
	struct rsk_ctx		*ctx;
	struct rsk_end		*qp[RSK_LOAD_QPS];
	struct rsk_buf		*buf;
	struct rsk_req		*reqs;
	atomic_t		post_errors;
	atomic_t		in_flight[RSK_LOAD_QPS];
	atomic_t		max_in_flight[RSK_LOAD_QPS];
	atomic_t		finished;
	struct completion	all_done;
};

static void rsk_req_start(struct rsk_req *r)
{
	struct rsk_load *l = r->load;
	struct rsk_slot *rs = ib_slot_priv(r->w.lead);
	unsigned int q = r->idx % RSK_LOAD_QPS;
	int n, max;

	r->slot = r->w.lead;
	rs->ctx = l->ctx;
	rs->req = r;
	n = atomic_inc_return(&l->in_flight[q]);
	max = atomic_read(&l->max_in_flight[q]);
	while (n > max && !atomic_try_cmpxchg(&l->max_in_flight[q], &max, n))
		;
	/* Register the buffer: LOCAL_INV + REG_MR once the MR is warm. */
	if (ib_slot_map_mr(r->slot, 0, &l->buf->sg, 1, NULL,
			   IB_ACCESS_LOCAL_WRITE) != 1 ||
	    ib_slot_post(r->slot, &r->send))
		atomic_inc(&l->post_errors);
}

static void rsk_req_resume(struct ib_slot_waiter *w)
{
	rsk_req_start(container_of(w, struct rsk_req, w));
}

static void rsk_load_done(struct ib_slot *slot, const struct ib_wc *wc)
{
	struct rsk_req *r = ((struct rsk_slot *)ib_slot_priv(slot))->req;
	struct rsk_load *l = r->load;

	rsk_slot_done(slot, wc);
	atomic_dec(&l->in_flight[r->idx % RSK_LOAD_QPS]);
	ib_slot_put(slot);
	if (atomic_inc_return(&l->finished) == RSK_LOAD_REQS)
		complete(&l->all_done);
}

static void rsk_load_recv(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rsk_counter *c = container_of(wc->wr_cqe, struct rsk_counter,
					     cqe);
	struct rsk_end *e = container_of(c, struct rsk_end, recv);

	if (wc->status != IB_WC_SUCCESS) {
		atomic_inc(&c->errors);
		return;
	}
	atomic_inc(&c->n);
	/* Any Receive entry of this QP will do: they are all alike. */
	if (ib_post_recv(e->qp, &e->recv_wr[0], NULL))
		atomic_inc(&c->errors);
}

/*
 * A pool of 4 slots shared by two QPs that each hold 2: the pool and the
 * QPs' credits run out in turn, requests wait, and rxe never refuses a
 * post.  Completions run in softirq context and resume waiters from there,
 * as in a target.  (The order in which waiters are served is asserted by
 * ib_slot_kunit, where it is deterministic; here two CPUs race.)
 */
static void rsk_slot_backpressure_load(struct kunit *test)
{
	struct rsk_ctx *ctx = rsk_ctx_new(test);
	struct ib_slot_pool_attr attr = {
		.profile = rsk_reg_send,
		.nr_slots = 4,
		.policy = IB_SLOT_BACKPRESSURE,
		.done = rsk_load_done,
	};
	struct ib_slot_pool_stats st;
	struct ib_slot_pool *pool;
	struct rsk_load *l;
	unsigned int i, q, waited = 0;
	int ret;

	l = kunit_kzalloc(test, sizeof(*l), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, l);
	l->reqs = kunit_kcalloc(test, RSK_LOAD_REQS, sizeof(*l->reqs),
				GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, l->reqs);
	l->ctx = ctx;
	l->buf = rsk_buf(ctx, 0);
	init_completion(&l->all_done);
	pool = rsk_pool_attr(ctx, &attr);
	for (q = 0; q < RSK_LOAD_QPS; q++) {
		struct rsk_end *peer;

		l->qp[q] = rsk_end(ctx, pool, 2, IB_POLL_SOFTIRQ);
		peer = rsk_end(ctx, NULL, 1, IB_POLL_SOFTIRQ);
		peer->recv.cqe.done = rsk_load_recv;
		rsk_connect(test, l->qp[q], peer);
		KUNIT_ASSERT_EQ(test, ib_slot_qp_credits(l->qp[q]->sqp), 6);
	}

	for (i = 0; i < RSK_LOAD_REQS; i++) {
		struct rsk_req *r = &l->reqs[i];

		r->load = l;
		r->idx = i;
		/* Zero-length, as the peers' Receives have no buffer. */
		r->send.opcode = IB_WR_SEND;
		r->w.sqp = l->qp[i % RSK_LOAD_QPS]->sqp;
		r->w.nr = 1;
		r->w.resume = rsk_req_resume;
		ret = ib_slot_get_or_wait(&r->w);
		if (ret == -EAGAIN) {
			waited++;
			continue;
		}
		KUNIT_ASSERT_EQ(test, ret, 0);
		rsk_req_start(r);
	}
	KUNIT_ASSERT_NE_MSG(test, 0,
			    wait_for_completion_timeout(&l->all_done,
							6 * RSK_TIMEOUT),
			    "%d of %d requests finished",
			    atomic_read(&l->finished), RSK_LOAD_REQS);

	KUNIT_EXPECT_EQ(test, atomic_read(&l->post_errors), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->done_errors), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->dones), RSK_LOAD_REQS);
	KUNIT_EXPECT_GT(test, waited, 0);
	ib_slot_pool_get_stats(pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 0);
	KUNIT_EXPECT_EQ(test, st.waits, waited);
	KUNIT_EXPECT_EQ(test, st.resumed, waited);
	KUNIT_EXPECT_LE(test, st.high_water, 4);
	KUNIT_EXPECT_GT(test, st.local_inv, 0);
	for (q = 0; q < RSK_LOAD_QPS; q++) {
		KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(l->qp[q]->sqp), 6);
		KUNIT_EXPECT_LE(test, atomic_read(&l->max_in_flight[q]), 2);
		KUNIT_EXPECT_EQ(test, atomic_read(&ctx->end[2 * q + 1].recv.errors),
				0);
	}
	KUNIT_EXPECT_EQ(test, atomic_read(&ctx->end[1].recv.n) +
			atomic_read(&ctx->end[3].recv.n), RSK_LOAD_REQS);
	kunit_info(test, "%u of %u requests waited, %llu gets exhausted, %llu LOCAL_INV\n",
		   waited, RSK_LOAD_REQS, st.exhausted, st.local_inv);
}

static netdev_tx_t rsk_xmit(struct sk_buff *skb, struct net_device *ndev)
{
	/* RoCE to our own MAC never gets here; the IPv6 chatter does. */
	dev_kfree_skb(skb);
	return NETDEV_TX_OK;
}

static const struct net_device_ops rsk_netdev_ops = {
	.ndo_start_xmit = rsk_xmit,
};

static void rsk_netdev_xmit_setup(struct net_device *ndev)
{
	ether_setup(ndev);
	ndev->netdev_ops = &rsk_netdev_ops;
	/* As the dummy driver: no neighbour discovery, no DAD to wait for. */
	ndev->flags |= IFF_NOARP;
	eth_hw_addr_random(ndev);
}

/* The RoCEv2 GID of the netdev's link-local address, once it is usable. */
static bool rsk_find_gid(void)
{
	const struct ib_gid_attr *attr;
	bool found = false;
	int i;

	for (i = 0; !found && i < rsk.dev->port_data[1].immutable.gid_tbl_len;
	     i++) {
		attr = rdma_get_gid_attr(rsk.dev, 1, i);
		if (IS_ERR(attr))
			continue;
		if (attr->gid_type == IB_GID_TYPE_ROCE_UDP_ENCAP &&
		    ipv6_addr_type((struct in6_addr *)attr->gid.raw) &
		    IPV6_ADDR_LINKLOCAL &&
		    ipv6_chk_addr(&init_net, (struct in6_addr *)attr->gid.raw,
				  rsk.ndev, 0)) {
			rsk.gid = attr->gid;
			rsk.sgid_index = attr->index;
			found = true;
		}
		rdma_put_gid_attr(attr);
	}
	return found;
}

static void rsk_suite_exit(struct kunit_suite *suite)
{
	if (rsk.dev)
		ib_unregister_device_and_put(rsk.dev);
	rsk.dev = NULL;
	if (rsk.ndev) {
		unregister_netdev(rsk.ndev);
		free_netdev(rsk.ndev);
	}
	rsk.ndev = NULL;
}

static int rsk_suite_init(struct kunit_suite *suite)
{
	unsigned long end = jiffies + RSK_TIMEOUT;
	int ret;

	rsk.ndev = alloc_netdev(0, "ibslot%d", NET_NAME_ENUM,
				rsk_netdev_xmit_setup);
	if (!rsk.ndev)
		return -ENOMEM;
	ret = register_netdev(rsk.ndev);
	if (ret) {
		free_netdev(rsk.ndev);
		rsk.ndev = NULL;
		return ret;
	}
	rtnl_lock();
	ret = dev_open(rsk.ndev, NULL);
	rtnl_unlock();
	if (!ret)
		ret = rxe_net_add("rxe_kunit%d", rsk.ndev);
	if (!ret) {
		rsk.dev = ib_device_get_by_netdev(rsk.ndev, RDMA_DRIVER_RXE);
		if (!rsk.dev)
			ret = -ENODEV;
	}
	/* The GID table and the address fill in from work items. */
	while (!ret && !rsk_find_gid()) {
		if (time_after(jiffies, end))
			ret = -ETIMEDOUT;
		msleep(20);
	}
	if (ret) {
		pr_err("rxe_slot_kunit: no rxe device to test: %d\n", ret);
		rsk_suite_exit(suite);
	}
	return ret;
}

/*
 * query_qp_budget fails exactly when QP creation with the same attributes
 * does, and otherwise reports the caps creation grants; within its limit
 * those never exceed attrs.max_qp_wr, so a QP can be created again with
 * them.
 */
static void rsk_budget_matches_create(struct kunit *test)
{
	static const enum ib_qp_type types[] = {
		IB_QPT_RC, IB_QPT_UC, IB_QPT_UD, IB_QPT_XRC_INI,
	};
	static const u32 flags[] = {
		0, IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK,
		IB_QP_CREATE_INTEGRITY_EN,
	};
	const struct ib_device_attr *da = &rsk.dev->attrs;
	const u32 sges[] = { 0, 1, 2, da->max_send_sge, da->max_send_sge + 1 };
	const u32 depths[] = { 1, 100, 4096, da->max_qp_wr + 1 };
	static const u32 inls[] = { 0, 64 };
	struct rsk_ctx *ctx = rsk_ctx_new(test);
	unsigned int n, t, f, s, d, i, checked = 0, failed = 0;
	struct ib_qp_budget budget;
	struct ib_qp_init_attr init;
	struct ib_cq *cq;

	cq = ib_alloc_cq(rsk.dev, NULL, 16, 0, IB_POLL_DIRECT);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq);
	for (n = 0; n < ARRAY_SIZE(types) * ARRAY_SIZE(flags) *
			ARRAY_SIZE(sges) * ARRAY_SIZE(depths) * ARRAY_SIZE(inls);
	     n++) {
		struct ib_qp *qp;
		int ret;

		i = n % ARRAY_SIZE(inls);
		d = n / ARRAY_SIZE(inls) % ARRAY_SIZE(depths);
		s = n / ARRAY_SIZE(inls) / ARRAY_SIZE(depths) % ARRAY_SIZE(sges);
		f = n / ARRAY_SIZE(inls) / ARRAY_SIZE(depths) / ARRAY_SIZE(sges) %
		    ARRAY_SIZE(flags);
		t = n / ARRAY_SIZE(inls) / ARRAY_SIZE(depths) / ARRAY_SIZE(sges) /
		    ARRAY_SIZE(flags);

		init = (struct ib_qp_init_attr){
			.qp_type = types[t], .create_flags = flags[f],
			.send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = depths[d],
				 .max_send_sge = sges[s],
				 .max_inline_data = inls[i],
				 .max_recv_wr = 4, .max_recv_sge = 1 },
		};
		ret = ib_query_qp_budget(rsk.dev, &init, &budget);
		qp = ib_create_qp(ctx->pd, &init);
		checked++;
		if (IS_ERR(qp)) {
			failed++;
			KUNIT_EXPECT_EQ_MSG(test, ret, PTR_ERR(qp),
					    "type %d flags 0x%x %u SGEs %u WRs %u inline",
					    types[t], flags[f], sges[s],
					    depths[d], inls[i]);
			continue;
		}
		ib_destroy_qp(qp);
		KUNIT_EXPECT_EQ_MSG(test, ret, 0,
				    "type %d flags 0x%x %u SGEs %u WRs %u inline",
				    types[t], flags[f], sges[s], depths[d],
				    inls[i]);
		if (ret)
			continue;
		KUNIT_EXPECT_EQ(test, budget.cap.max_send_wr,
				init.cap.max_send_wr);
		KUNIT_EXPECT_EQ(test, budget.cap.max_send_sge,
				init.cap.max_send_sge);
		KUNIT_EXPECT_EQ(test, budget.cap.max_inline_data,
				init.cap.max_inline_data);
		KUNIT_EXPECT_EQ(test, budget.cap.max_recv_wr,
				init.cap.max_recv_wr);
		KUNIT_EXPECT_EQ(test, budget.cap.max_recv_sge,
				init.cap.max_recv_sge);
	}
	ib_free_cq(cq);

	/* At the limit the granted caps stay within attrs.max_qp_wr */
	init = (struct ib_qp_init_attr){
		.qp_type = IB_QPT_RC,
		.cap = { .max_send_wr = 1, .max_send_sge = 1 },
	};
	KUNIT_ASSERT_EQ(test, ib_query_qp_budget(rsk.dev, &init, &budget), 0);
	init.cap.max_send_wr = budget.max_send_wr_limit;
	KUNIT_ASSERT_EQ(test, ib_query_qp_budget(rsk.dev, &init, &budget), 0);
	KUNIT_EXPECT_LE(test, budget.cap.max_send_wr, da->max_qp_wr);
	init.cap = budget.cap;
	KUNIT_EXPECT_EQ(test, ib_query_qp_budget(rsk.dev, &init, &budget), 0);
	kunit_info(test, "%u QPs asked for, %u refused\n", checked, failed);
}

/*
 * get_wr_cost refuses what rxe_post_send() refuses: an opcode the QP type
 * does not take (REG_MR_INTEGRITY on none, past the opcode table), more
 * SGEs than the QP's WQE holds.
 */
static void rsk_wr_cost_as_post(struct kunit *test)
{
	struct ib_qp_init_attr rc = {
		.qp_type = IB_QPT_RC, .cap = { .max_send_sge = 1 },
	};
	struct ib_qp_init_attr ud = rc;
	struct ib_wr_cost cost;

	ud.qp_type = IB_QPT_UD;
	KUNIT_EXPECT_EQ(test, ib_get_wr_cost(rsk.dev, &rc, IB_WR_REG_MR, 0,
					     &cost), 0);
	KUNIT_EXPECT_EQ(test, cost.sq_units, 1);
	KUNIT_EXPECT_EQ(test, ib_get_wr_cost(rsk.dev, &rc, IB_WR_SEND, 1,
					     &cost), 0);
	KUNIT_EXPECT_EQ(test, ib_get_wr_cost(rsk.dev, &rc, IB_WR_SEND, 2,
					     &cost), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_get_wr_cost(rsk.dev, &rc,
					     IB_WR_REG_MR_INTEGRITY, 0, &cost),
			-EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, ib_get_wr_cost(rsk.dev, &ud, IB_WR_REG_MR, 0,
					     &cost), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, ib_get_wr_cost(rsk.dev, &ud, IB_WR_RDMA_WRITE, 1,
					     &cost), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, ib_get_wr_cost(rsk.dev, &ud, IB_WR_SEND, 1,
					     &cost), 0);
}

/*
 * The requester of a user QP takes each WQE's opcode from a ring the user
 * writes, and must not look up an opcode past rxe_wr_opcode_info[].  A
 * kernel QP's ring stands in for it: a SEND is posted while the QP is in
 * SQD, its opcode overwritten in the ring as a user could, and the QP
 * moved back to RTS; a second WR makes the requester run.  Both WRs must
 * complete in error.
 */
static void rsk_bad_opcode_in_ring(struct kunit *test)
{
	/* Allocated first, so that they outlive the QPs they complete on */
	struct rsk_counter *bad = kunit_kzalloc(test, sizeof(*bad),
						GFP_KERNEL);
	struct rsk_counter *next = kunit_kzalloc(test, sizeof(*next),
						 GFP_KERNEL);
	struct ib_send_wr wr = {
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};
	struct rxe_send_wqe *wqe;
	struct rxe_queue *q;
	struct rsk_ctx *ctx;
	struct rsk_end *a, *b;
	unsigned long end;
	u32 index;

	KUNIT_ASSERT_TRUE(test, bad && next);
	rsk_counter_init(bad);
	rsk_counter_init(next);
	ctx = rsk_ctx_new(test);
	a = rsk_end(ctx, NULL, 4, IB_POLL_DIRECT);
	b = rsk_end(ctx, NULL, 1, IB_POLL_DIRECT);
	rsk_connect(test, a, b);
	rsk_set_state(test, a, IB_QPS_SQD);

	wr.wr_cqe = &bad->cqe;
	KUNIT_ASSERT_EQ(test, 0, ib_post_send(a->qp, &wr, NULL));
	q = to_rqp(a->qp)->sq.queue;
	index = queue_get_producer(q, QUEUE_TYPE_FROM_ULP) - 1;
	wqe = queue_addr_from_index(q, index);
	/* Ten gigabytes past the table */
	WRITE_ONCE(wqe->wr.opcode, 0x10000000);

	/* rxe refuses RTS until its requester has seen the drain done */
	end = jiffies + RSK_TIMEOUT;
	while (READ_ONCE(to_rqp(a->qp)->attr.sq_draining) &&
	       time_before(jiffies, end))
		usleep_range(200, 400);
	rsk_set_state(test, a, IB_QPS_RTS);
	wr.wr_cqe = &next->cqe;
	KUNIT_ASSERT_EQ(test, 0, ib_post_send(a->qp, &wr, NULL));
	KUNIT_ASSERT_TRUE(test, rsk_wait(ctx, &next->n, 1));
	/* Local QP operation error, or flushed once the QP is in error */
	KUNIT_EXPECT_EQ(test, atomic_read(&bad->n), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&bad->errors), 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&next->errors), 1);
}

static struct kunit_case rsk_cases[] = {
	KUNIT_CASE(rsk_budget_matches_create),
	KUNIT_CASE(rsk_wr_cost_as_post),
	KUNIT_CASE(rsk_bad_opcode_in_ring),
	KUNIT_CASE(rsk_sq_full_at_budget),
	KUNIT_CASE(rsk_slot_flush),
	KUNIT_CASE(rsk_slot_drain_full),
	KUNIT_CASE(rsk_slot_round_trip),
	KUNIT_CASE(rsk_slot_local_inv),
	KUNIT_CASE(rsk_slot_fence_flushed),
	KUNIT_CASE(rsk_slot_rw_chain_flush),
	KUNIT_CASE(rsk_slot_rw_qp_caps),
	KUNIT_CASE_SLOW(rsk_slot_backpressure_load),
	{}
};

static struct kunit_suite rsk_suite = {
	.name = "rxe_slot",
	.suite_init = rsk_suite_init,
	.suite_exit = rsk_suite_exit,
	.test_cases = rsk_cases,
};

kunit_test_suite(rsk_suite);

MODULE_DESCRIPTION("KUnit tests for ib_slot on soft-RoCE");
MODULE_LICENSE("GPL");
