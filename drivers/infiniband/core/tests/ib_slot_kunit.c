// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests for ib_slot, run against a fake ib_device that is never
 * registered.  Its Send Queue holds exactly the entries it granted, frees
 * unsignaled entries only when a later signaled one completes, and
 * completes (or flushes) WRs only when a test says so.  Every overflow of
 * the Send or Completion Queue is counted, and tests assert there is none.
 */
#include <kunit/test.h>
#include <kunit/test-bug.h>
#include <linux/delay.h>
#include <linux/iopoll.h>
#include <linux/kthread.h>
#include <linux/prandom.h>
#include <linux/scatterlist.h>
#include <linux/sched/signal.h>
#include <rdma/ib_slot.h>
#include <rdma/rw.h>

#define FAKE_MAX_WCS	4096

struct fake_wqe {
	struct ib_cqe		*cqe;
	enum ib_wr_opcode	opcode;
	bool			signaled;
	u32			inv_rkey;
	u32			key;	/* registered by a REG_MR */
	u16			units;
};

struct fake_qp {
	struct ib_qp		ibqp;
	struct fake_wqe		*ring;
	u32			cap;
	u32			used;	/* units not yet freed */
	u32			head;	/* next WQE to complete */
	u32			freed;	/* next WQE not freed */
	u32			tail;	/* next free index */
	bool			error;
};

struct fake_ibdev {
	struct ib_device	ibdev;
	struct ib_wc		wcs[FAKE_MAX_WCS];
	u32			wc_head;
	u32			wc_tail;
	u32			cq_depth;
	unsigned int		nr_mrs;
	unsigned int		next_key;
	unsigned int		sq_overflow;
	unsigned int		cq_overflow;
	unsigned int		posted;
	unsigned int		posted_inv;
	unsigned int		doorbells;	/* post_send calls */
	u32			sq_grant_cut;	/* granted = requested - cut */
	bool			sq_grant_round;	/* granted: next power of 2 */
	bool			bb_model;	/* REG_MR 3 units, LOCAL_INV 2 */
	u32			wr_limit;	/* largest max_send_wr, 0: any */
	u32			reject_wr;	/* refuse the nth WR of a post */
	u32			complete_in_post; /* posts done inside post_send */
	bool			map_head;	/* map only a page of the first entry */
	enum ib_mr_type		mr_type;	/* of the last MR allocated */
	bool			xrc_costs_more;	/* XRC_INI REG_MR: one unit more
						 * below 4 SGEs
						 */
	u32			grant_sge;	/* granted max_send_sge, at least */
	bool			pi_two_cqes;	/* REG_MR_INTEGRITY completes twice */
	unsigned int		reg_wrs;	/* REG_MR WRs posted */
	bool			refuse_mr;	/* MR allocation fails */
	unsigned int		refused_mrs;
};

struct fake_pd {
	struct ib_pd		ibpd;
};

struct fake_cq {
	struct ib_cq		ibcq;
};

static struct fake_ibdev *to_fdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct fake_ibdev, ibdev);
}

static struct fake_qp *to_fqp(struct ib_qp *qp)
{
	return container_of(qp, struct fake_qp, ibqp);
}

static int fake_alloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

static int fake_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

static int fake_create_cq(struct ib_cq *cq, const struct ib_cq_init_attr *attr,
			  struct uverbs_attr_bundle *attrs)
{
	cq->cqe = attr->cqe;
	/* One ring serves every CQ: it holds what they were sized for. */
	to_fdev(cq->device)->cq_depth += attr->cqe;
	return 0;
}

static int fake_destroy_cq(struct ib_cq *cq, struct ib_udata *udata)
{
	to_fdev(cq->device)->cq_depth -= cq->cqe;
	return 0;
}

static int fake_poll_cq(struct ib_cq *cq, int num_entries, struct ib_wc *wc)
{
	struct fake_ibdev *fdev = to_fdev(cq->device);
	int n = 0;
	u32 tail;

	/* Pairs with fake_push_wc(): the core's work items complete too. */
	tail = smp_load_acquire(&fdev->wc_tail);

	while (n < num_entries && fdev->wc_head != tail) {
		wc[n++] = fdev->wcs[fdev->wc_head % FAKE_MAX_WCS];
		WRITE_ONCE(fdev->wc_head, fdev->wc_head + 1);
	}
	return n;
}

static int fake_req_notify_cq(struct ib_cq *cq, enum ib_cq_notify_flags flags)
{
	return 0;
}

static int fake_create_qp(struct ib_qp *qp, struct ib_qp_init_attr *attr,
			  struct ib_udata *udata)
{
	struct fake_ibdev *fdev = to_fdev(qp->device);
	struct fake_qp *fqp = to_fqp(qp);

	attr->cap.max_send_wr -= min(fdev->sq_grant_cut,
				     attr->cap.max_send_wr);
	attr->cap.max_send_sge = max(attr->cap.max_send_sge, fdev->grant_sge);
	if (fdev->sq_grant_round)
		attr->cap.max_send_wr = roundup_pow_of_two(attr->cap.max_send_wr);
	fqp->cap = attr->cap.max_send_wr;
	fqp->ring = kcalloc(max(fqp->cap, 1U), sizeof(*fqp->ring), GFP_KERNEL);
	if (!fqp->ring)
		return -ENOMEM;
	qp->qp_num = ++fdev->next_key;
	return 0;
}

static int fake_destroy_qp(struct ib_qp *qp, struct ib_udata *udata)
{
	kfree(to_fqp(qp)->ring);
	return 0;
}

static struct ib_mr *fake_alloc_mr(struct ib_pd *pd, enum ib_mr_type mr_type,
				   u32 max_num_sg)
{
	struct fake_ibdev *fdev = to_fdev(pd->device);
	struct ib_mr *mr;

	if (fdev->refuse_mr) {
		fdev->refused_mrs++;
		return ERR_PTR(-EIO);
	}
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->lkey = ++fdev->next_key << 8;
	mr->rkey = mr->lkey;
	fdev->nr_mrs++;
	fdev->mr_type = mr_type;
	return mr;
}

static struct ib_mr *fake_alloc_mr_integrity(struct ib_pd *pd, u32 data_sg,
					     u32 meta_sg)
{
	return fake_alloc_mr(pd, IB_MR_TYPE_INTEGRITY, data_sg);
}

static int fake_dereg_mr(struct ib_mr *mr, struct ib_udata *udata)
{
	to_fdev(mr->device)->nr_mrs--;
	kfree(mr);
	return 0;
}

static int fake_map_mr_sg(struct ib_mr *mr, struct scatterlist *sg,
			  int sg_nents, unsigned int *sg_offset)
{
	if (to_fdev(mr->device)->map_head) {
		mr->iova = 0x10000;
		mr->length = PAGE_SIZE;
		*sg_offset += PAGE_SIZE;
		return 0;
	}
	mr->iova = 0x10000;
	mr->length = sg_nents * PAGE_SIZE;
	return sg_nents;
}

static int fake_map_mr_sg_pi(struct ib_mr *mr, struct scatterlist *data_sg,
			     int data_sg_nents, unsigned int *data_sg_offset,
			     struct scatterlist *meta_sg, int meta_sg_nents,
			     unsigned int *meta_sg_offset)
{
	return -EOPNOTSUPP;
}

/* With bb_model, WRs take Send Queue units the way mlx5 WQEs take blocks. */
static u16 fake_units(struct fake_ibdev *fdev, enum ib_wr_opcode opcode)
{
	if (!fdev->bb_model)
		return 1;
	switch (opcode) {
	case IB_WR_REG_MR:
		return 3;
	case IB_WR_LOCAL_INV:
		return 2;
	default:
		return 1;
	}
}

static int fake_get_wr_cost(struct ib_device *ibdev,
			    const struct ib_qp_init_attr *attr,
			    enum ib_wr_opcode opcode, u32 num_sge,
			    struct ib_wr_cost *cost)
{
	struct fake_ibdev *fdev = to_fdev(ibdev);
	bool rc = attr->qp_type == IB_QPT_RC ||
		  attr->qp_type == IB_QPT_XRC_INI;

	/* As in the IBA: no RDMA READ, registration or invalidation on UC */
	if (!rc && (opcode == IB_WR_RDMA_READ || opcode == IB_WR_REG_MR ||
		    opcode == IB_WR_REG_MR_INTEGRITY ||
		    opcode == IB_WR_LOCAL_INV))
		return -EOPNOTSUPP;
	cost->sq_units = fake_units(fdev, opcode);
	/* As an mlx5 WQE sized for more SGEs would hold it */
	if (fdev->xrc_costs_more && attr->qp_type == IB_QPT_XRC_INI &&
	    opcode == IB_WR_REG_MR && attr->cap.max_send_sge < 4)
		cost->sq_units++;
	cost->cqe_signaled = fdev->pi_two_cqes &&
			     opcode == IB_WR_REG_MR_INTEGRITY ? 2 : 1;
	cost->cqe_error = 1;
	return 0;
}

static int fake_query_qp_budget(struct ib_device *ibdev,
				const struct ib_qp_init_attr *attr,
				struct ib_qp_budget *budget)
{
	struct fake_ibdev *fdev = to_fdev(ibdev);

	budget->cap = attr->cap;
	budget->max_send_wr_limit = fdev->wr_limit ?: ibdev->attrs.max_qp_wr;
	return 0;
}

static void fake_push_wc(struct fake_ibdev *fdev, struct ib_cqe *cqe,
			 enum ib_wc_status status, enum ib_wr_opcode opcode)
{
	if (fdev->wc_tail - READ_ONCE(fdev->wc_head) >= fdev->cq_depth) {
		fdev->cq_overflow++;
		return;
	}
	fdev->wcs[fdev->wc_tail % FAKE_MAX_WCS] = (struct ib_wc){
		.wr_cqe = cqe, .status = status,
		.opcode = opcode == IB_WR_SEND ? IB_WC_SEND : IB_WC_RDMA_WRITE,
	};
	/* A test may poll while a work item of the core completes. */
	smp_store_release(&fdev->wc_tail, fdev->wc_tail + 1);
}

static void fake_complete(struct fake_qp *fqp, u32 n,
			  enum ib_wc_status status);

/*
 * A QP in the error state takes WRs and flushes them at once.  With
 * complete_in_post set, a post completes and its CQ is polled before
 * ib_post_send() returns, as a fast device on another CPU can do.
 */
static int fake_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			  const struct ib_send_wr **bad_wr)
{
	struct fake_ibdev *fdev = to_fdev(qp->device);
	struct fake_qp *fqp = to_fqp(qp);
	u32 nth = 0;

	fdev->doorbells++;
	for (; wr; wr = wr->next) {
		u16 units = fake_units(fdev, wr->opcode);
		struct fake_wqe *wqe;

		if (++nth == fdev->reject_wr) {
			fdev->reject_wr = 0;
			*bad_wr = wr;
			return -EINVAL;
		}
		if (fqp->used + units > fqp->cap) {
			fdev->sq_overflow++;
			*bad_wr = wr;
			return -ENOMEM;
		}
		wqe = &fqp->ring[fqp->tail++ % fqp->cap];
		wqe->cqe = wr->wr_cqe;
		wqe->opcode = wr->opcode;
		wqe->signaled = wr->send_flags & IB_SEND_SIGNALED;
		wqe->inv_rkey = wr->ex.invalidate_rkey;
		wqe->key = wr->opcode == IB_WR_REG_MR ? reg_wr(wr)->key : 0;
		wqe->units = units;
		fqp->used += units;
		fdev->posted++;
		if (wr->opcode == IB_WR_LOCAL_INV)
			fdev->posted_inv++;
		if (wr->opcode == IB_WR_REG_MR)
			fdev->reg_wrs++;
	}
	if (fqp->error) {
		fake_complete(fqp, U32_MAX, IB_WC_WR_FLUSH_ERR);
	} else if (fdev->complete_in_post) {
		fdev->complete_in_post--;
		fake_complete(fqp, U32_MAX, IB_WC_SUCCESS);
		while (ib_process_cq_direct(qp->send_cq, 64) > 0)
			;
	}
	return 0;
}

/* Moving to the error state flushes every outstanding WQE, as fake_fail(). */
static int fake_modify_qp(struct ib_qp *qp, struct ib_qp_attr *attr,
			  int attr_mask, struct ib_udata *udata)
{
	struct fake_qp *fqp = to_fqp(qp);

	if (!(attr_mask & IB_QP_STATE) || attr->qp_state != IB_QPS_ERR)
		return 0;
	fake_complete(fqp, U32_MAX, IB_WC_WR_FLUSH_ERR);
	fqp->error = true;
	return 0;
}

static const struct ib_device_ops fake_ibdev_ops = {
	.alloc_mr = fake_alloc_mr,
	.alloc_mr_integrity = fake_alloc_mr_integrity,
	.alloc_pd = fake_alloc_pd,
	.create_cq = fake_create_cq,
	.create_qp = fake_create_qp,
	.dealloc_pd = fake_dealloc_pd,
	.dereg_mr = fake_dereg_mr,
	.destroy_cq = fake_destroy_cq,
	.destroy_qp = fake_destroy_qp,
	.get_wr_cost = fake_get_wr_cost,
	.map_mr_sg = fake_map_mr_sg,
	.map_mr_sg_pi = fake_map_mr_sg_pi,
	.modify_qp = fake_modify_qp,
	.poll_cq = fake_poll_cq,
	.post_send = fake_post_send,
	.query_qp_budget = fake_query_qp_budget,
	.req_notify_cq = fake_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, fake_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, fake_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, fake_qp, ibqp),
};

/*
 * Complete the next @n WQEs of @fqp: a signaled success produces a
 * completion and frees its entry and every unsignaled one before it; an
 * error produces a completion whatever the WR asked for.
 */
static void fake_complete(struct fake_qp *fqp, u32 n, enum ib_wc_status status)
{
	struct fake_ibdev *fdev = to_fdev(fqp->ibqp.device);

	while (n-- && fqp->head != fqp->tail) {
		struct fake_wqe *wqe = &fqp->ring[fqp->head % fqp->cap];

		fqp->head++;
		if (wqe->signaled || status != IB_WC_SUCCESS) {
			fake_push_wc(fdev, wqe->cqe, status, wqe->opcode);
			for (; fqp->freed != fqp->head; fqp->freed++)
				fqp->used -= fqp->ring[fqp->freed % fqp->cap].units;
		}
	}
}

/* Fail the next WQE with @status and flush the rest, as a QP error does. */
static void fake_fail(struct fake_qp *fqp, enum ib_wc_status status)
{
	fake_complete(fqp, 1, status);
	fake_complete(fqp, U32_MAX, IB_WC_WR_FLUSH_ERR);
	fqp->error = true;
}

static void fake_complete_all(struct fake_qp *fqp)
{
	fake_complete(fqp, U32_MAX, IB_WC_SUCCESS);
}

/* Per-slot ULP context of the tests. */
struct test_req {
	unsigned int		done;
	unsigned int		fenced;
	unsigned int		done_at_fenced;
	/* The fake device's MRs when fenced() ran: were the dead ones gone? */
	unsigned int		mrs_at_fenced;
	enum ib_wc_status	fence_status;
	enum ib_wc_status	status;
	int			seq;
};

struct test_env {
	struct fake_ibdev	*fdev;
	struct ib_pd		*pd;
	struct ib_cq		*cq;
	struct ib_cq		*cq1;
	struct ib_slot_pool	*pool;
	struct ib_qp		*qp[2];
	struct ib_slot_qp	*sqp[2];
	/* What the device granted each QP, to attach it again. */
	struct ib_qp_cap	cap[2];
	/* test_pool() makes pools that resume every waiter from work. */
	bool			resume_in_work;
	unsigned int		nr_done;
	/* done() puts the slot, and then maps the next owner's from reget. */
	bool			put_in_done;
	struct scatterlist	*reget;
	struct ib_slot		*regot;
};

/*
 * A test that fails an assertion may leave slots out.  Destroying the
 * pool would then wait forever, so the fixture is leaked instead: the
 * failure is reported, and the next tests still run.
 */
static bool test_leak;

static struct test_env *cur_env;

static bool test_leaking(void)
{
	struct ib_slot_pool_stats st;

	if (!test_leak && cur_env && cur_env->pool) {
		ib_slot_pool_get_stats(cur_env->pool, &st);
		if (st.in_use) {
			kunit_err(kunit_get_current_test(),
				  "%u slots still out: fixture leaked\n",
				  st.in_use);
			test_leak = true;
		}
	}
	return test_leak;
}

static void ib_dealloc_device_action(void *dev)
{
	if (!test_leaking())
		ib_dealloc_device(dev);
}

static void ib_dealloc_pd_action(void *pd)
{
	if (!test_leaking())
		ib_dealloc_pd(pd);
}

static void ib_free_cq_action(void *cq)
{
	if (!test_leaking())
		ib_free_cq(cq);
}

static void ib_destroy_qp_action(void *qp)
{
	if (!test_leaking())
		ib_destroy_qp(qp);
}

static void ib_slot_qp_detach_action(void *sqp)
{
	if (!test_leaking())
		ib_slot_qp_detach(sqp);
}

static void ib_slot_pool_destroy_action(void *pool)
{
	if (test_leaking())
		return;
	/* Later actions must not read the counters of a freed pool. */
	if (cur_env->pool == pool)
		cur_env->pool = NULL;
	ib_slot_pool_destroy(pool);
}

static void test_done(struct ib_slot *slot, const struct ib_wc *wc)
{
	struct test_req *req = ib_slot_priv(slot);

	req->done++;
	req->status = wc->status;
	cur_env->nr_done++;
	if (!cur_env->put_in_done)
		return;
	ib_slot_put(slot);
	if (!cur_env->reget)
		return;
	cur_env->regot = ib_slot_get(cur_env->sqp[0]);
	if (cur_env->regot)
		ib_slot_map_mr(cur_env->regot, 0, cur_env->reget, 1, NULL,
			       IB_ACCESS_REMOTE_READ);
}

static void test_fenced(struct ib_slot *slot, enum ib_wc_status status)
{
	struct test_req *req = ib_slot_priv(slot);

	req->mrs_at_fenced = cur_env->fdev->nr_mrs;
	req->fenced++;
	req->fence_status = status;
	req->done_at_fenced = req->done;
}

static int ib_slot_test_init(struct kunit *test)
{
	struct test_env *env;
	struct fake_ibdev *fdev;
	int ret;

	test_leak = false;
	env = kunit_kzalloc(test, sizeof(*env), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, env);
	fdev = ib_alloc_device(fake_ibdev, ibdev);
	KUNIT_ASSERT_NOT_NULL(test, fdev);
	ret = kunit_add_action_or_reset(test, ib_dealloc_device_action,
					&fdev->ibdev);
	KUNIT_ASSERT_EQ(test, ret, 0);

	ib_set_device_ops(&fdev->ibdev, &fake_ibdev_ops);
	fdev->ibdev.attrs.max_qp_wr = 4096;
	fdev->ibdev.attrs.max_cqe = FAKE_MAX_WCS;
	fdev->ibdev.attrs.max_send_sge = 16;
	fdev->ibdev.attrs.max_fast_reg_page_list_len = 256;
	fdev->ibdev.attrs.kernel_cap_flags = IBK_LOCAL_DMA_LKEY |
					     IBK_INTEGRITY_HANDOVER;
	fdev->ibdev.num_comp_vectors = 1;
	env->fdev = fdev;

	env->pd = ib_alloc_pd(&fdev->ibdev, 0);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->pd);
	ret = kunit_add_action_or_reset(test, ib_dealloc_pd_action, env->pd);
	KUNIT_ASSERT_EQ(test, ret, 0);

	cur_env = env;
	test->priv = env;
	return 0;
}

static const struct ib_slot_profile send_only = {
	.nr_sends = 1,
};

static const struct ib_slot_profile one_rkey = {
	.nr_rkey_mrs = 1, .max_pages_per_mr = 16, .nr_sends = 1,
};

static struct ib_slot_pool *
test_pool(struct kunit *test, const struct ib_slot_profile *profile,
	  u32 nr_slots, enum ib_slot_policy policy)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_attr attr = {
		.pd = env->pd,
		.profile = *profile,
		.nr_slots = nr_slots,
		.policy = policy,
		.priv_size = sizeof(struct test_req),
		.name = "kunit",
		.resume_in_work = env->resume_in_work,
		.done = test_done,
	};
	int ret;

	env->pool = ib_slot_pool_create(&attr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->pool);
	ret = kunit_add_action_or_reset(test, ib_slot_pool_destroy_action,
					env->pool);
	KUNIT_ASSERT_EQ(test, ret, 0);
	return env->pool;
}

/* Undo @fn(@ctx) at the end of the test. */
static void test_action(struct kunit *test, kunit_action_t *fn, void *ctx)
{
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, fn, ctx), 0);
}

/* A CQ of exactly @nr_cqe entries; test_poll() polls them all. */
static struct ib_cq *test_cq(struct kunit *test, u32 nr_cqe)
{
	struct test_env *env = test->priv;
	struct ib_cq *cq;
	int ret;

	cq = ib_alloc_cq(&env->fdev->ibdev, NULL, nr_cqe, 0, IB_POLL_DIRECT);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, cq);
	ret = kunit_add_action_or_reset(test, ib_free_cq_action, cq);
	KUNIT_ASSERT_EQ(test, ret, 0);
	return cq;
}

/* QP 0 created with @attr as sized by the test, on a CQ of @nr_cqe. */
static struct fake_qp *test_qp_of(struct kunit *test,
				  struct ib_qp_init_attr *attr, u32 nr_cqe)
{
	struct test_env *env = test->priv;

	env->cq = test_cq(test, nr_cqe);
	attr->send_cq = env->cq;
	attr->recv_cq = env->cq;
	env->qp[0] = ib_create_qp(env->pd, attr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->qp[0]);
	test_action(test, ib_destroy_qp_action, env->qp[0]);
	return to_fqp(env->qp[0]);
}

/*
 * A QP sized by ib_slot_qp_caps() for @nr_slots, attached to the pool,
 * with a CQ of exactly the size ib_slot_qp_caps() gave.
 */
static struct ib_slot_qp *test_qp(struct kunit *test, int i, u32 nr_slots)
{
	struct test_env *env = test->priv;
	struct ib_qp_init_attr attr = { .qp_type = IB_QPT_RC };
	struct ib_cq **cq = i ? &env->cq1 : &env->cq;
	u32 nr_cqe = 0;
	int ret;

	ret = ib_slot_qp_caps(env->pool, nr_slots, &attr, &nr_cqe);
	KUNIT_ASSERT_EQ(test, ret, 0);
	*cq = test_cq(test, nr_cqe);
	attr.send_cq = *cq;
	attr.recv_cq = *cq;
	env->qp[i] = ib_create_qp(env->pd, &attr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->qp[i]);
	ret = kunit_add_action_or_reset(test, ib_destroy_qp_action,
					env->qp[i]);
	KUNIT_ASSERT_EQ(test, ret, 0);
	env->cap[i] = attr.cap;
	env->sqp[i] = ib_slot_qp_attach(env->pool, env->qp[i], &attr.cap,
					nr_slots);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->sqp[i]);
	ret = kunit_add_action_or_reset(test, ib_slot_qp_detach_action,
					env->sqp[i]);
	KUNIT_ASSERT_EQ(test, ret, 0);
	return env->sqp[i];
}

static void test_poll(struct kunit *test)
{
	struct test_env *env = test->priv;

	while (ib_process_cq_direct(env->cq, 64) > 0)
		;
}

/* Wait, 2 s at most, for work the core queued (recycling, resumes). */
static bool test_wait_set(const unsigned int *v)
{
	unsigned int x;

	bool set = !read_poll_timeout(READ_ONCE, x, x, 20 * USEC_PER_MSEC,
				      2 * USEC_PER_SEC, false, *v);

	/* What the work item wrote before it set *@v. */
	smp_rmb();
	return set;
}

/*
 * Poll the CQ until done() has run @n times for @slot, 2 s at most: a
 * work item of the core may post the WR whose completion runs it.
 */
static bool test_poll_done(struct kunit *test, struct ib_slot *slot,
			   unsigned int n)
{
	unsigned long end = jiffies + 2 * HZ;
	struct test_req *req = ib_slot_priv(slot);

	do {
		test_poll(test);
		if (req->done >= n)
			return true;
		usleep_range(1000, 2000);
	} while (time_before(jiffies, end));
	test_poll(test);
	return req->done >= n;
}

/* The slots granted together: @lead and those joined to it. */
static unsigned int chain_len(const struct ib_slot *lead)
{
	unsigned int n = 0;

	for (; lead; lead = lead->joined)
		n++;
	return n;
}

static struct test_req *req_of(struct ib_slot *slot)
{
	return ib_slot_priv(slot);
}

static void test_stats(struct ib_slot_pool *pool, struct ib_slot_pool_stats *st)
{
	ib_slot_pool_get_stats(pool, st);
}

/* Every slot of @pool is back, and nothing was misused. */
static void expect_idle(struct kunit *test, struct ib_slot_pool *pool)
{
	struct ib_slot_pool_stats st;

	test_stats(pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);
}

/* A no-exhaust pool serves exactly its depth, from memory set up front. */
static void ib_slot_no_exhaust_depth(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool *pool;
	struct ib_slot_pool_stats st;
	struct ib_slot *slots[8];
	struct ib_slot_qp *sqp;
	unsigned int mrs, i, j;
	u32 full;

	pool = test_pool(test, &one_rkey, 8, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 8);
	full = ib_slot_qp_credits(sqp);
	KUNIT_EXPECT_EQ(test, full, 8 * 3);
	mrs = env->fdev->nr_mrs;
	KUNIT_EXPECT_EQ(test, mrs, 8);

	for (i = 0; i < 8; i++) {
		slots[i] = ib_slot_get(sqp);
		KUNIT_ASSERT_NOT_NULL(test, slots[i]);
		for (j = 0; j < i; j++)
			KUNIT_EXPECT_PTR_NE(test, slots[i], slots[j]);
	}
	KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs, mrs);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 0);
	test_stats(pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 8);
	KUNIT_EXPECT_EQ(test, st.high_water, 8);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);

	for (i = 0; i < 8; i++)
		ib_slot_put(slots[i]);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), full);
	test_stats(pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
}

/* An indexed pool hands out the slot its tag names, with no allocator. */
static void ib_slot_indexed_tags(struct kunit *test)
{
	struct ib_slot_pool_attr attr = {
		.profile = send_only, .nr_slots = 4,
		.policy = IB_SLOT_NO_EXHAUST, .indexed = true,
		.priv_size = sizeof(struct test_req), .done = test_done,
	};
	struct test_env *env = test->priv;
	struct ib_slot *a, *b;
	struct ib_slot_qp *sqp;
	int ret;

	attr.pd = env->pd;
	env->pool = ib_slot_pool_create(&attr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->pool);
	ret = kunit_add_action_or_reset(test, ib_slot_pool_destroy_action,
					env->pool);
	KUNIT_ASSERT_EQ(test, ret, 0);
	sqp = test_qp(test, 0, 4);

	a = ib_slot_from_tag(sqp, 3);
	b = ib_slot_from_tag(sqp, 0);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	KUNIT_EXPECT_EQ(test, a->tag, 3);
	KUNIT_EXPECT_EQ(test, b->tag, 0);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 2);
	ib_slot_put(a);
	KUNIT_EXPECT_PTR_EQ(test, ib_slot_from_tag(sqp, 3), a);
	ib_slot_put(a);
	ib_slot_put(b);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 4);
}

/* QP sizing comes from the profile; a QP granted less is refused. */
static void ib_slot_qp_caps_granted(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_qp_init_attr attr = { .qp_type = IB_QPT_RC };
	struct ib_slot_qp *sqp;
	struct ib_qp *qp;
	u32 nr_cqe = 0;

	test_pool(test, &one_rkey, 4, IB_SLOT_NO_EXHAUST);
	KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(env->pool, 4, &attr, &nr_cqe), 0);
	KUNIT_EXPECT_EQ(test, attr.cap.max_send_wr, 4 * 3 + 1);
	KUNIT_EXPECT_EQ(test, attr.cap.max_recv_wr, 1);
	KUNIT_EXPECT_EQ(test, nr_cqe, 4 * 3 + 2);
	/* Refused, and the caps are left as they were. */
	KUNIT_EXPECT_EQ(test, ib_slot_qp_caps(env->pool, 4096, &attr, &nr_cqe),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, attr.cap.max_send_wr, 4 * 3 + 1);
	KUNIT_EXPECT_EQ(test, nr_cqe, 4 * 3 + 2);

	/* The device grants one entry less than asked: too small to attach. */
	env->cq = ib_alloc_cq(&env->fdev->ibdev, NULL, nr_cqe, 0,
			      IB_POLL_DIRECT);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->cq);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, ib_free_cq_action,
							env->cq), 0);
	attr.send_cq = env->cq;
	attr.recv_cq = env->cq;
	env->fdev->sq_grant_cut = 1;
	qp = ib_create_qp(env->pd, &attr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, qp);
	KUNIT_EXPECT_EQ(test, attr.cap.max_send_wr, 4 * 3);
	sqp = ib_slot_qp_attach(env->pool, qp, &attr.cap, 4);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(sqp), -EINVAL);
	ib_destroy_qp(qp);
}

/* The cost rules, row by row; see Documentation/infiniband/slot.rst. */
struct cost_case {
	const char		*desc;
	struct ib_slot_profile	profile;
	int			ret;
	struct ib_slot_cost	cost;
};

static const struct cost_case cost_cases[] = {
	{ "send only", { .nr_sends = 1 }, 0, { 1, 1, 0 } },
	{ "send and recv", { .nr_sends = 1, .nr_recvs = 1 }, 0, { 1, 2, 1 } },
	{ "one rkey MR (SRP, 1 MR)",
	  { .nr_rkey_mrs = 1, .max_pages_per_mr = 256, .nr_sends = 1 },
	  0, { 3, 3, 0 } },
	{ "NFS client, 3 MRs",
	  { .nr_rkey_mrs = 3, .max_pages_per_mr = 256, .nr_sends = 1,
	    .nr_recvs = 1 }, 0, { 7, 8, 1 } },
	{ "iWARP READ sink",
	  { .nr_lkey_mrs = 1, .max_pages_per_mr = 64, .nr_sends = 1 },
	  0, { 4, 4, 0 } },
	{ "direct RDMA, 30 SGEs by 4",
	  { .max_rdma_sges = 30, .max_send_sge = 4, .nr_sends = 1 },
	  0, { 9, 9, 0 } },
	{ "integrity",
	  { .nr_rkey_mrs = 1, .max_pages_per_mr = 32, .integrity = true,
	    .nr_sends = 1 }, 0, { 3, 3, 0 } },
	{ "mixed target",
	  { .nr_rkey_mrs = 2, .nr_lkey_mrs = 2, .max_pages_per_mr = 8,
	    .max_rdma_sges = 16, .max_send_sge = 16, .nr_sends = 2,
	    .nr_recvs = 1 }, 0, { 13, 14, 1 } },
	{ "empty profile", { }, -EINVAL, { } },
	{ "MR without pages", { .nr_rkey_mrs = 1, .nr_sends = 1 }, -EINVAL,
	  { } },
	{ "SRP, max_sect=131072 without SG_GAPS: 34 MRs",
	  { .nr_rkey_mrs = 34, .max_pages_per_mr = 256, .nr_sends = 1 },
	  0, { 69, 69, 0 } },
	{ "64 MRs", { .nr_rkey_mrs = 64, .max_pages_per_mr = 1 }, 0,
	  { 128, 128, 0 } },
	{ "too many MRs",
	  { .nr_rkey_mrs = IB_SLOT_MAX_MRS + 1, .max_pages_per_mr = 1 },
	  -EINVAL, { } },
	{ "page size below 4 KiB",
	  { .nr_rkey_mrs = 1, .max_pages_per_mr = 1, .page_shift = 11,
	    .nr_sends = 1 }, -EINVAL, { } },
	{ "SG_GAPS on a device without it",
	  { .nr_rkey_mrs = 1, .max_pages_per_mr = 1, .sg_gaps = true,
	    .nr_sends = 1 }, -EINVAL, { } },
	{ "pages above device",
	  { .nr_rkey_mrs = 1, .max_pages_per_mr = 257 }, -EINVAL, { } },
	{ "SGEs above device", { .max_rdma_sges = 8, .max_send_sge = 17 },
	  -EINVAL, { } },
	{ "integrity on lkey MR",
	  { .nr_lkey_mrs = 1, .max_pages_per_mr = 4, .integrity = true },
	  -EINVAL, { } },
};

static void cost_case_desc(const struct cost_case *c, char *desc)
{
	strscpy(desc, c->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(ib_slot_cost, cost_cases, cost_case_desc);

static void ib_slot_cost_rules(struct kunit *test)
{
	const struct cost_case *c = test->param_value;
	struct test_env *env = test->priv;
	struct ib_slot_cost cost = { };

	KUNIT_ASSERT_EQ(test, ib_slot_profile_cost(&env->fdev->ibdev,
						   &c->profile, &cost), c->ret);
	if (c->ret)
		return;
	KUNIT_EXPECT_EQ(test, cost.sqes, c->cost.sqes);
	KUNIT_EXPECT_EQ(test, cost.cqes, c->cost.cqes);
	KUNIT_EXPECT_EQ(test, cost.rqes, c->cost.rqes);
}

/*
 * Build the largest chain a profile allows, minus what post adds itself:
 * for each lkey MR, the [LOCAL_INV][REG_MR] rdma_rw_ctx_wrs() puts in
 * front of the RDMA it serves (@regs holds the REG_MRs), then the RDMA WRs
 * and the sends.
 */
static int build_chain(const struct ib_slot_profile *p, struct ib_send_wr *wrs,
		       struct ib_reg_wr *regs, int max)
{
	u32 sge = max(p->max_send_sge, 1U);
	int n = 2 * p->nr_lkey_mrs + p->nr_lkey_mrs +
		DIV_ROUND_UP(p->max_rdma_sges, sge) + p->nr_sends;
	struct ib_send_wr *head, *wr, **tail = &head;
	int i;

	n = min(n, max);
	for (i = 0; i < n; i++) {
		if (i < 2 * p->nr_lkey_mrs && (i & 1)) {
			memset(&regs[i / 2], 0, sizeof(regs[i / 2]));
			wr = &regs[i / 2].wr;
			wr->opcode = IB_WR_REG_MR;
		} else {
			wr = &wrs[i];
			memset(wr, 0, sizeof(*wr));
			wr->opcode = i < 2 * p->nr_lkey_mrs ? IB_WR_LOCAL_INV :
				     i == n - 1 && p->nr_sends ? IB_WR_SEND :
				     IB_WR_RDMA_WRITE;
		}
		/* ULPs leave flags as they like: post must fix them. */
		wr->send_flags = i & 1 ? IB_SEND_SIGNALED : 0;
		*tail = wr;
		tail = &wr->next;
	}
	*tail = NULL;
	return n;
}

static void map_all(struct kunit *test, struct ib_slot *slot,
		    struct scatterlist *sg)
{
	unsigned int i;

	for (i = 0; i < slot->nr_mrs; i++)
		KUNIT_ASSERT_EQ(test, ib_slot_map_mr(slot, i, sg, 1, NULL,
						     IB_ACCESS_REMOTE_READ), 1);
}

static void test_ports(struct kunit *test);
static struct ib_slot_qp *test_rw_qp(struct kunit *test, u32 nr_slots);

/*
 * For every valid profile: fill a QP sized by the core with worst-case
 * chains (second use, so every MR is invalidated and registered again).
 * The fake Send Queue must end exactly full and never overflow.  lkey MRs
 * are rdma_rw's: the QP is sized as rdma_rw_init_qp() sizes it.
 */
static void ib_slot_chain_fits(struct kunit *test)
{
	const struct cost_case *c = test->param_value;
	struct test_env *env = test->priv;
	struct ib_send_wr (*wrs)[40];
	struct ib_reg_wr (*regs)[20];
	struct ib_slot *slots[4];
	struct scatterlist sg;
	struct ib_slot_qp *sqp;
	struct fake_qp *fqp;
	int round, i;

	if (c->ret || !c->cost.sqes)
		kunit_skip(test, "profile posts no Send WR");
	wrs = kunit_kcalloc(test, 4, sizeof(*wrs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, wrs);
	regs = kunit_kcalloc(test, 4, sizeof(*regs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, regs);
	sg_init_one(&sg, env, 64);
	if (c->profile.nr_lkey_mrs)
		test_ports(test);
	test_pool(test, &c->profile, 4, IB_SLOT_NO_EXHAUST);
	sqp = c->profile.nr_lkey_mrs ? test_rw_qp(test, 4) : test_qp(test, 0, 4);
	fqp = to_fqp(env->qp[0]);

	for (round = 0; round < 2; round++) {
		/* One lifetime per round: the budget is per get. */
		for (i = 0; i < 4; i++) {
			slots[i] = ib_slot_get(sqp);
			KUNIT_ASSERT_NOT_NULL(test, slots[i]);
		}
		for (i = 0; i < 4; i++) {
			int n = build_chain(&c->profile, wrs[i], regs[i], 40);

			map_all(test, slots[i], &sg);
			KUNIT_ASSERT_EQ(test, ib_slot_post(slots[i],
							   n ? wrs[i] : NULL),
					0);
		}
		if (round == 1)
			KUNIT_EXPECT_EQ(test, fqp->used, fqp->cap - 1);
		KUNIT_EXPECT_EQ(test, env->fdev->sq_overflow, 0);
		fake_complete_all(fqp);
		test_poll(test);
		KUNIT_EXPECT_EQ(test, env->nr_done, 4 * (round + 1));
		for (i = 0; i < 4; i++) {
			KUNIT_EXPECT_EQ(test, req_of(slots[i])->status,
					IB_WC_SUCCESS);
			ib_slot_put(slots[i]);
		}
	}
	/* The rkey MRs' second registrations; the chains' own, twice. */
	KUNIT_EXPECT_EQ(test, env->fdev->posted_inv,
			4 * (c->profile.nr_rkey_mrs +
			     2 * c->profile.nr_lkey_mrs));
	KUNIT_EXPECT_EQ(test, env->fdev->cq_overflow, 0);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), fqp->cap - 1);
}

/* The last @n WQEs posted on @fqp, oldest first. */
static struct fake_wqe *last_wqe(struct fake_qp *fqp, u32 n)
{
	return &fqp->ring[(fqp->tail - n) % fqp->cap];
}

/* Complete what @slot posted, put it, and get the next lifetime's slot. */
static struct ib_slot *next_life(struct kunit *test, struct ib_slot_qp *sqp,
				 struct ib_slot *slot)
{
	struct test_env *env = test->priv;

	if (slot) {
		fake_complete_all(to_fqp(env->qp[0]));
		test_poll(test);
		ib_slot_put(slot);
	}
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	return slot;
}

/*
 * A mapping never posted is dropped at put: the next lifetime posts no stale
 * REG_MR, and invalidates the key the device registered last, also when an
 * MR was mapped twice before its post.
 */
/*
 * An entry larger than an MR: the MR maps its head, ib_map_mr_sg()
 * returns 0 and moves the offset on, and the next MR maps the rest (SRP
 * registers a large contiguous segment so).  Both REG_MRs are posted.
 */
static void ib_slot_map_head_of_entry(struct kunit *test)
{
	static const struct ib_slot_profile p = {
		.nr_rkey_mrs = 2, .max_pages_per_mr = 1, .nr_sends = 1,
	};
	struct test_env *env = test->priv;
	struct ib_send_wr send = { .opcode = IB_WR_SEND };
	unsigned int off = 0;
	struct scatterlist sg;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;

	sg_init_one(&sg, env, 64);
	test_pool(test, &p, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	env->fdev->map_head = true;
	KUNIT_EXPECT_EQ(test, ib_slot_map_mr(slot, 0, &sg, 1, &off,
					     IB_ACCESS_REMOTE_WRITE), 0);
	KUNIT_EXPECT_EQ(test, off, PAGE_SIZE);
	env->fdev->map_head = false;
	KUNIT_EXPECT_EQ(test, ib_slot_map_mr(slot, 1, &sg, 1, &off,
					     IB_ACCESS_REMOTE_WRITE), 1);
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &send), 0);
	KUNIT_EXPECT_EQ(test, env->fdev->reg_wrs, 2);
	fake_complete_all(to_fqp(env->qp[0]));
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	ib_slot_put(slot);
}

static void ib_slot_map_without_post(struct kunit *test)
{
	static const struct ib_slot_profile p = {
		.nr_rkey_mrs = 1, .max_pages_per_mr = 4, .nr_sends = 1,
	};
	struct test_env *env = test->priv;
	struct ib_send_wr send = { .opcode = IB_WR_SEND };
	struct scatterlist sg;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;
	u32 registered, posted;

	sg_init_one(&sg, env, 64);
	test_pool(test, &p, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);

	slot = next_life(test, sqp, NULL);
	map_all(test, slot, &sg);
	registered = slot->mrs[0].reg_wr.key;
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &send), 0);

	/* Mapped, never posted: put gives the registered key back. */
	slot = next_life(test, sqp, slot);
	map_all(test, slot, &sg);
	KUNIT_EXPECT_NE(test, slot->mrs[0].mr->rkey, registered);
	slot = next_life(test, sqp, slot);
	KUNIT_EXPECT_EQ(test, slot->mrs[0].mr->rkey, registered);
	posted = env->fdev->posted;
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &send), 0);
	KUNIT_EXPECT_EQ(test, env->fdev->posted - posted, 1);
	KUNIT_EXPECT_EQ(test, last_wqe(fqp, 1)->opcode, IB_WR_SEND);

	/* Mapped twice: one new key, and the registered one invalidated. */
	slot = next_life(test, sqp, slot);
	map_all(test, slot, &sg);
	map_all(test, slot, &sg);
	KUNIT_EXPECT_EQ(test, slot->mrs[0].reg_wr.key, ib_inc_rkey(registered));
	posted = env->fdev->posted;
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &send), 0);
	KUNIT_ASSERT_EQ(test, env->fdev->posted - posted, 3);
	KUNIT_EXPECT_EQ(test, last_wqe(fqp, 3)->opcode, IB_WR_LOCAL_INV);
	KUNIT_EXPECT_EQ(test, last_wqe(fqp, 3)->inv_rkey, registered);
	KUNIT_EXPECT_EQ(test, last_wqe(fqp, 2)->opcode, IB_WR_REG_MR);
	KUNIT_EXPECT_EQ(test, last_wqe(fqp, 1)->opcode, IB_WR_SEND);
	fake_complete_all(fqp);
	test_poll(test);
	ib_slot_put(slot);
	KUNIT_EXPECT_EQ(test, env->fdev->sq_overflow, 0);
}

/* Unsignaled entries come back only with the later signaled completion. */
static void ib_slot_unsignaled_credit(struct kunit *test)
{
	static const struct ib_slot_profile p = {
		.nr_rkey_mrs = 1, .max_pages_per_mr = 4, .max_rdma_sges = 1,
		.nr_sends = 1,
	};
	struct test_env *env = test->priv;
	struct ib_send_wr wrs[2] = { };
	struct scatterlist sg;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;

	sg_init_one(&sg, env, 64);
	test_pool(test, &p, 2, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 2);
	fqp = to_fqp(env->qp[0]);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 4);

	map_all(test, slot, &sg);
	wrs[0].opcode = IB_WR_RDMA_WRITE;
	wrs[0].next = &wrs[1];
	wrs[1].opcode = IB_WR_SEND;
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, wrs), 0);
	KUNIT_EXPECT_EQ(test, fqp->used, 3);
	KUNIT_EXPECT_PTR_EQ(test, fqp->ring[0].cqe, &slot->aux_cqe);
	KUNIT_EXPECT_PTR_EQ(test, fqp->ring[2].cqe, &slot->cqe);
	KUNIT_EXPECT_FALSE(test, fqp->ring[0].signaled);
	KUNIT_EXPECT_FALSE(test, fqp->ring[1].signaled);
	KUNIT_EXPECT_TRUE(test, fqp->ring[2].signaled);

	/* REG and WRITE done: no completion, nothing freed, nothing done. */
	fake_complete(fqp, 2, IB_WC_SUCCESS);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, fqp->used, 3);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 0);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 4);

	fake_complete(fqp, 1, IB_WC_SUCCESS);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, fqp->used, 0);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	ib_slot_put(slot);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 8);
}

/* After a QP error every WR flushes; slots, credits and done() balance. */
static void ib_slot_flush_balances(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr wrs[4] = { };
	struct ib_slot_pool_stats st;
	struct ib_slot *slots[4];
	struct scatterlist sg;
	struct ib_slot_qp *sqp;
	struct fake_qp *fqp;
	int i;

	sg_init_one(&sg, env, 64);
	test_pool(test, &one_rkey, 4, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 4);
	fqp = to_fqp(env->qp[0]);
	for (i = 0; i < 4; i++) {
		slots[i] = ib_slot_get(sqp);
		KUNIT_ASSERT_NOT_NULL(test, slots[i]);
		map_all(test, slots[i], &sg);
		wrs[i].opcode = IB_WR_SEND;
		KUNIT_ASSERT_EQ(test, ib_slot_post(slots[i], &wrs[i]), 0);
	}
	/* The first REG_MR fails; everything behind it is flushed. */
	fake_fail(fqp, IB_WC_MW_BIND_ERR);
	KUNIT_EXPECT_EQ(test, env->fdev->wc_tail - env->fdev->wc_head, 8);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, env->nr_done, 4);
	KUNIT_EXPECT_EQ(test, req_of(slots[0])->status, IB_WC_MW_BIND_ERR);
	for (i = 0; i < 4; i++) {
		KUNIT_EXPECT_EQ(test, req_of(slots[i])->done, 1);
		if (i)
			KUNIT_EXPECT_EQ(test, req_of(slots[i])->status,
					IB_WC_WR_FLUSH_ERR);
		/* The MR state is unknown: it will be invalidated first. */
		KUNIT_EXPECT_TRUE(test, slots[i]->mrs[0].mr->need_inval);
		ib_slot_put(slots[i]);
	}
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 12);
	KUNIT_EXPECT_EQ(test, env->fdev->cq_overflow, 0);
}

/* The first error of a post is reported, not the flushes behind it. */
static void ib_slot_first_error(struct kunit *test)
{
	static const struct ib_slot_profile p = {
		.max_rdma_sges = 2, .nr_sends = 1,
	};
	struct test_env *env = test->priv;
	struct ib_send_wr wrs[3] = { };
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;

	test_pool(test, &p, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	wrs[0].opcode = IB_WR_RDMA_WRITE;
	wrs[0].next = &wrs[1];
	wrs[1].opcode = IB_WR_RDMA_WRITE;
	wrs[1].next = &wrs[2];
	wrs[2].opcode = IB_WR_SEND;
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, wrs), 0);
	fake_complete(fqp, 1, IB_WC_SUCCESS);
	fake_fail(fqp, IB_WC_REM_ACCESS_ERR);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->status, IB_WC_REM_ACCESS_ERR);
	ib_slot_put(slot);
}

struct test_waiter {
	struct ib_slot_waiter	w;
	int			*order;
	int			*pos;
	int			id;
	unsigned int		resumed;
	/* Slots the resume found granted (0 if no lead), and where it ran. */
	unsigned int		nr_got;
	struct task_struct	*task;
};

static void test_resume(struct ib_slot_waiter *w)
{
	struct test_waiter *tw = container_of(w, struct test_waiter, w);

	tw->nr_got = chain_len(w->lead);
	tw->task = current;
	tw->order[(*tw->pos)++] = tw->id;
	/* Last: a test waits for it when the resume runs from work. */
	smp_store_release(&tw->resumed, tw->resumed + 1);
}

static void waiter_init(struct test_waiter *tw, struct ib_slot_qp *sqp,
			unsigned int nr, int id, int *order, int *pos)
{
	memset(tw, 0, sizeof(*tw));
	INIT_LIST_HEAD(&tw->w.entry);
	tw->w.sqp = sqp;
	tw->w.nr = nr;
	tw->w.resume = test_resume;
	tw->order = order;
	tw->pos = pos;
	tw->id = id;
}

/* The lead puts every slot granted with it. */
static void put_all(struct test_waiter *tw)
{
	ib_slot_put(tw->w.lead);
}

/*
 * A waiter whose resume blocks until the test releases it: granted in a
 * pool that resumes in work, it holds up the pool's work item.
 */
struct block_waiter {
	struct test_waiter	tw;
	struct completion	started;
	struct completion	release;
	int			order[1];
	int			pos;
};

static void block_resume(struct ib_slot_waiter *w)
{
	struct block_waiter *bw = container_of(w, struct block_waiter, tw.w);

	complete(&bw->started);
	/* Bounded: a failed test must not wedge the work item. */
	wait_for_completion_timeout(&bw->release, 10 * HZ);
	test_resume(w);
}

static void block_release_action(void *bw)
{
	complete_all(&((struct block_waiter *)bw)->release);
}

/*
 * Queue a blocking waiter for @sqp and grant it by putting @slot, in a
 * pool that resumes in work: on return its resume runs in the pool's work
 * item, blocked.  KUnit's memory: the release runs after the test returns.
 */
static struct block_waiter *block_work(struct kunit *test,
				       struct ib_slot_qp *sqp,
				       struct ib_slot *slot)
{
	struct test_env *env = test->priv;
	struct block_waiter *bw;

	KUNIT_ASSERT_TRUE(test, env->resume_in_work);
	bw = kunit_kzalloc(test, sizeof(*bw), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bw);
	waiter_init(&bw->tw, sqp, 1, 99, bw->order, &bw->pos);
	bw->tw.w.resume = block_resume;
	init_completion(&bw->started);
	init_completion(&bw->release);
	/* Runs before the pool's destroy, which flushes the work item. */
	test_action(test, block_release_action, bw);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&bw->tw.w), -EAGAIN);
	ib_slot_put(slot);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&bw->started,
							  10 * HZ), 0);
	return bw;
}

/* Exhaust, queue waiters, and resume them in FIFO order from put. */
static void ib_slot_backpressure_fifo(struct kunit *test)
{
	struct test_waiter tw[3];
	struct ib_slot_pool_stats st;
	int order[3] = { -1, -1, -1 }, pos = 0, i;
	struct ib_slot *a, *b;
	struct ib_slot_qp *sqp;

	test_pool(test, &send_only, 2, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 2);
	a = ib_slot_get(sqp);
	b = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	KUNIT_EXPECT_NULL(test, ib_slot_get(sqp));

	for (i = 0; i < 3; i++) {
		waiter_init(&tw[i], sqp, 1, i, order, &pos);
		KUNIT_EXPECT_EQ(test, ib_slot_get_or_wait(&tw[i].w), -EAGAIN);
	}
	test_stats(cur_env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 3);
	/* Waiters are queued: a fresh get must not overtake them. */
	KUNIT_EXPECT_NULL(test, ib_slot_get(sqp));

	ib_slot_put(a);
	KUNIT_EXPECT_EQ(test, pos, 1);
	ib_slot_put(b);
	KUNIT_EXPECT_EQ(test, pos, 2);
	put_all(&tw[0]);
	KUNIT_EXPECT_EQ(test, pos, 3);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_EQ(test, order[i], i);
		KUNIT_EXPECT_EQ(test, tw[i].resumed, 1);
	}
	put_all(&tw[1]);
	put_all(&tw[2]);
	test_stats(cur_env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 0);
	KUNIT_EXPECT_EQ(test, st.waits, 3);
	KUNIT_EXPECT_EQ(test, st.resumed, 3);
}

/* A waiter for three slots is not starved by a stream of single gets. */
static void ib_slot_large_not_starved(struct kunit *test)
{
	struct test_waiter big, small[3];
	int order[4], pos = 0, i;
	struct ib_slot *held[4];
	struct ib_slot_qp *sqp;

	test_pool(test, &send_only, 4, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 4);
	for (i = 0; i < 4; i++) {
		held[i] = ib_slot_get(sqp);
		KUNIT_ASSERT_NOT_NULL(test, held[i]);
	}
	waiter_init(&big, sqp, 3, 100, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&big.w), -EAGAIN);

	/* Each freed slot would satisfy a small request at once. */
	for (i = 0; i < 3; i++) {
		waiter_init(&small[i], sqp, 1, i, order, &pos);
		KUNIT_EXPECT_EQ(test, ib_slot_get_or_wait(&small[i].w),
				-EAGAIN);
		ib_slot_put(held[i]);
		KUNIT_EXPECT_EQ(test, small[i].resumed, 0);
	}
	KUNIT_EXPECT_EQ(test, big.resumed, 1);
	KUNIT_EXPECT_EQ(test, big.nr_got, 3);
	KUNIT_EXPECT_EQ(test, order[0], 100);
	ib_slot_put(held[3]);
	KUNIT_EXPECT_EQ(test, small[0].resumed, 1);
	put_all(&big);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, small[i].resumed, 1);
	KUNIT_EXPECT_EQ(test, order[1], 0);
	KUNIT_EXPECT_EQ(test, order[2], 1);
	KUNIT_EXPECT_EQ(test, order[3], 2);
	for (i = 0; i < 3; i++)
		put_all(&small[i]);
}

/* A multi-get that cannot be served takes nothing. */
static void ib_slot_get_nr_all_or_nothing(struct kunit *test)
{
	struct ib_slot_pool_stats st;
	struct ib_slot *held[3], *two = NULL;
	struct ib_slot_qp *sqp;
	u32 credits;
	int i;

	test_pool(test, &one_rkey, 4, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 4);
	for (i = 0; i < 3; i++) {
		held[i] = ib_slot_get(sqp);
		KUNIT_ASSERT_NOT_NULL(test, held[i]);
	}
	credits = ib_slot_qp_credits(sqp);

	KUNIT_EXPECT_EQ(test, ib_slot_get_nr(sqp, 2, &two), -EAGAIN);
	KUNIT_EXPECT_NULL(test, two);
	test_stats(cur_env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 3);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), credits);
	KUNIT_EXPECT_EQ(test, ib_slot_get_nr(sqp, 5, &two), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_slot_get_nr(sqp, 0, &two), -EINVAL);
	KUNIT_EXPECT_NULL(test, two);

	ib_slot_put(held[0]);
	KUNIT_ASSERT_EQ(test, ib_slot_get_nr(sqp, 2, &two), 0);
	KUNIT_ASSERT_EQ(test, chain_len(two), 2);
	KUNIT_EXPECT_PTR_NE(test, two, two->joined);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 0);
	/* The lead's put returns both. */
	ib_slot_put(two);
	test_stats(cur_env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 2);
	ib_slot_put(held[1]);
	ib_slot_put(held[2]);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 12);
}

/* A cancelled waiter is never resumed; one already granted can't cancel. */
static void ib_slot_cancel(struct kunit *test)
{
	struct test_waiter tw[2];
	int order[2], pos = 0;
	struct ib_slot *a;
	struct ib_slot_qp *sqp;

	test_pool(test, &send_only, 1, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 1);
	a = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);
	waiter_init(&tw[0], sqp, 1, 0, order, &pos);
	waiter_init(&tw[1], sqp, 1, 1, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&tw[0].w), -EAGAIN);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&tw[1].w), -EAGAIN);
	KUNIT_EXPECT_TRUE(test, ib_slot_cancel_wait(&tw[0].w));
	ib_slot_put(a);
	KUNIT_EXPECT_EQ(test, tw[0].resumed, 0);
	KUNIT_EXPECT_EQ(test, tw[1].resumed, 1);
	KUNIT_EXPECT_FALSE(test, ib_slot_cancel_wait(&tw[1].w));
	KUNIT_EXPECT_FALSE(test, ib_slot_cancel_wait(&tw[0].w));
	put_all(&tw[1]);
}

/*
 * A waiter for three joined slots at the head of the FIFO: as slots come
 * back one by one, neither fresh gets of any QP nor the waiters behind it
 * take them, and its resume finds all three joined to its lead.
 */
static void ib_slot_waiter_lead_fifo(struct kunit *test)
{
	struct test_waiter big, small[2];
	struct ib_slot_pool_stats st;
	int order[3], pos = 0, i;
	struct ib_slot *held[4];
	struct ib_slot_qp *sa, *sb;

	test_pool(test, &send_only, 4, IB_SLOT_BACKPRESSURE);
	sa = test_qp(test, 0, 4);
	sb = test_qp(test, 1, 4);
	for (i = 0; i < 4; i++) {
		held[i] = ib_slot_get(sb);
		KUNIT_ASSERT_NOT_NULL(test, held[i]);
	}
	waiter_init(&big, sa, 3, 100, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&big.w), -EAGAIN);
	waiter_init(&small[0], sb, 1, 0, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&small[0].w), -EAGAIN);
	waiter_init(&small[1], sa, 1, 1, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&small[1].w), -EAGAIN);

	for (i = 0; i < 3; i++) {
		ib_slot_put(held[i]);
		KUNIT_EXPECT_EQ(test, big.resumed, i == 2 ? 1U : 0U);
		KUNIT_EXPECT_NULL(test, ib_slot_get(sa));
		KUNIT_EXPECT_NULL(test, ib_slot_get(sb));
		KUNIT_EXPECT_EQ(test, small[0].resumed + small[1].resumed, 0);
		test_stats(cur_env->pool, &st);
		KUNIT_EXPECT_EQ(test, st.in_use, i == 2 ? 4U : 3U - i);
	}
	KUNIT_EXPECT_EQ(test, order[0], 100);
	KUNIT_EXPECT_EQ(test, big.nr_got, 3);
	KUNIT_EXPECT_EQ(test, chain_len(big.w.lead), 3);
	KUNIT_EXPECT_EQ(test, ib_slot_room(big.w.lead), 3);

	ib_slot_put(held[3]);
	KUNIT_EXPECT_EQ(test, small[0].resumed, 1);
	KUNIT_EXPECT_EQ(test, small[1].resumed, 0);
	put_all(&big);
	KUNIT_EXPECT_EQ(test, small[1].resumed, 1);
	KUNIT_EXPECT_EQ(test, order[1], 0);
	KUNIT_EXPECT_EQ(test, order[2], 1);
	KUNIT_EXPECT_EQ(test, small[0].nr_got, 1);
	KUNIT_EXPECT_EQ(test, small[1].nr_got, 1);
	put_all(&small[0]);
	put_all(&small[1]);
	test_stats(cur_env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, st.waits, 3);
	KUNIT_EXPECT_EQ(test, st.resumed, 3);
}

/*
 * A closed QP takes no more slots, quietly (no misuse, even in a
 * no-exhaust pool): every get refuses with -ESHUTDOWN, or NULL.  A slot it
 * held is still the ULP's to put, and the pool's other QPs go on.
 */
static void ib_slot_close_refuses(struct kunit *test)
{
	struct ib_slot *held, *lead = NULL, *b[2];
	struct ib_slot_pool_stats st;
	struct test_waiter tw;
	int order[1], pos = 0;
	struct ib_slot_qp *sa, *sb;

	test_pool(test, &send_only, 2, IB_SLOT_NO_EXHAUST);
	sa = test_qp(test, 0, 2);
	sb = test_qp(test, 1, 2);
	held = ib_slot_get(sa);
	KUNIT_ASSERT_NOT_NULL(test, held);
	ib_slot_qp_close(sa);
	/* Again: nothing more. */
	ib_slot_qp_close(sa);

	KUNIT_EXPECT_EQ(test, ib_slot_get_nr(sa, 1, &lead), -ESHUTDOWN);
	KUNIT_EXPECT_EQ(test, ib_slot_get_nr(sa, 2, &lead), -ESHUTDOWN);
	waiter_init(&tw, sa, 1, 0, order, &pos);
	KUNIT_EXPECT_EQ(test, ib_slot_get_or_wait(&tw.w), -ESHUTDOWN);
	KUNIT_EXPECT_EQ(test, ib_slot_get_wait(sa, 1, &lead), -ESHUTDOWN);
	KUNIT_EXPECT_NULL(test, lead);
	KUNIT_EXPECT_NULL(test, ib_slot_get(sa));
	KUNIT_EXPECT_FALSE(test, ib_slot_qp_has_waiters(sa));
	test_stats(cur_env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 0);
	KUNIT_EXPECT_EQ(test, st.in_use, 1);

	ib_slot_put(held);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sa), 2);
	KUNIT_EXPECT_NULL(test, ib_slot_get(sa));
	b[0] = ib_slot_get(sb);
	b[1] = ib_slot_get(sb);
	KUNIT_EXPECT_NOT_NULL(test, b[0]);
	KUNIT_EXPECT_NOT_NULL(test, b[1]);
	if (b[0])
		ib_slot_put(b[0]);
	if (b[1])
		ib_slot_put(b[1]);
	/* Its waiter was never queued, so never resumed. */
	KUNIT_EXPECT_EQ(test, tw.resumed, 0);
	test_stats(cur_env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
}

/* A call made in a kthread of its own; @done completes when it returns. */
struct test_thread {
	void			(*fn)(void *arg);
	void			*arg;
	struct completion	done;
	/* Valid only while @fn runs. */
	struct task_struct	*task;
};

static int test_thread_fn(void *data)
{
	struct test_thread *t = data;

	t->fn(t->arg);
	complete(&t->done);
	return 0;
}

/* Start @fn(@arg) in a kthread, bound to @cpu unless it is negative. */
static void test_thread_start(struct kunit *test, struct test_thread *t,
			      void (*fn)(void *arg), void *arg, int cpu)
{
	struct task_struct *task;

	t->fn = fn;
	t->arg = arg;
	init_completion(&t->done);
	task = kthread_create(test_thread_fn, t, "ib_slot_kunit/%d", cpu);
	KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	if (cpu >= 0)
		kthread_bind(task, cpu);
	t->task = task;
	wake_up_process(task);
}

struct sleeper {
	struct ib_slot_qp	*sqp;
	struct ib_slot		*slot;
	struct completion	started;
	/* SIGKILL may end the wait. */
	bool			killable;
	int			ret;
};

static void sleeper_fn(void *data)
{
	struct sleeper *s = data;

	if (s->killable)
		allow_signal(SIGKILL);
	complete(&s->started);
	s->ret = ib_slot_get_wait(s->sqp, 1, &s->slot);
}

/* The sleeping variant sleeps while the pool is empty and wakes on put. */
static void ib_slot_sleeping_get(struct kunit *test)
{
	struct ib_slot_pool_stats st;
	struct test_thread t;
	struct ib_slot_qp *sqp;
	struct sleeper s = { };
	struct ib_slot *a;
	int i;

	test_pool(test, &send_only, 1, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 1);
	a = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);
	s.sqp = sqp;
	init_completion(&s.started);
	test_thread_start(test, &t, sleeper_fn, &s, -1);
	wait_for_completion(&s.started);
	/* Wait until the sleeper is queued, then check it stays asleep. */
	for (i = 0; i < 500; i++) {
		test_stats(cur_env->pool, &st);
		if (st.nr_waiters)
			break;
		msleep(20);
	}
	KUNIT_ASSERT_EQ(test, st.nr_waiters, 1);
	KUNIT_EXPECT_FALSE(test, completion_done(&t.done));
	ib_slot_put(a);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&t.done, 10 * HZ),
			0);
	KUNIT_EXPECT_EQ(test, s.ret, 0);
	KUNIT_EXPECT_PTR_EQ(test, s.slot, a);
	ib_slot_put(s.slot);
}

static void put_fn(void *slot)
{
	ib_slot_put(slot);
}

/*
 * A slot freed on another CPU waits in that CPU's tag cache, where the
 * sbitmap does not see it: a get that finds its own cache and the sbitmap
 * empty takes it from there, so the pool is never exhausted early.
 */
static void ib_slot_tag_cache_steal(struct kunit *test)
{
	struct ib_slot *a, *b, *got[2];
	struct ib_slot_pool_stats st;
	struct test_thread t;
	struct ib_slot_qp *sqp;
	int cpu, other;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	test_pool(test, &send_only, 2, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 2);
	a = ib_slot_get(sqp);
	b = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);

	cpu = get_cpu();
	other = cpumask_any_but(cpu_online_mask, cpu);
	put_cpu();
	test_thread_start(test, &t, put_fn, a, other);
	wait_for_completion(&t.done);

	/* Both tags are now cached, one on each CPU; the sbitmap is full. */
	preempt_disable();
	ib_slot_put(b);
	got[0] = ib_slot_get(sqp);
	got[1] = ib_slot_get(sqp);
	preempt_enable();
	KUNIT_ASSERT_NOT_NULL(test, got[0]);
	KUNIT_ASSERT_NOT_NULL(test, got[1]);
	KUNIT_EXPECT_PTR_EQ(test, got[0], b);
	KUNIT_EXPECT_PTR_EQ(test, got[1], a);
	KUNIT_EXPECT_NULL(test, ib_slot_get(sqp));
	test_stats(cur_env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 2);
	ib_slot_put(got[0]);
	ib_slot_put(got[1]);
}

/* One QP cannot take more than the share it was attached with. */
static void ib_slot_qp_share(struct kunit *test)
{
	struct ib_slot *qa[2], *qb[2];
	struct ib_slot_qp *sa, *sb;
	int i;

	test_pool(test, &send_only, 4, IB_SLOT_BACKPRESSURE);
	sa = test_qp(test, 0, 2);
	sb = test_qp(test, 1, 2);
	for (i = 0; i < 2; i++) {
		qa[i] = ib_slot_get(sa);
		KUNIT_ASSERT_NOT_NULL(test, qa[i]);
	}
	KUNIT_EXPECT_NULL(test, ib_slot_get(sa));
	for (i = 0; i < 2; i++) {
		qb[i] = ib_slot_get(sb);
		KUNIT_ASSERT_NOT_NULL(test, qb[i]);
	}
	KUNIT_EXPECT_NULL(test, ib_slot_get(sb));
	ib_slot_put(qa[0]);
	ib_slot_put(qa[1]);
	ib_slot_put(qb[0]);
	ib_slot_put(qb[1]);
}

/*
 * Credits are per QP: a QP whose Send Queue is full waits while another
 * QP keeps taking slots of the same pool.
 */
static void ib_slot_credits_per_qp(struct kunit *test)
{
	struct test_waiter tw, twb;
	int order[2], pos = 0;
	struct ib_slot *a[2], *b;
	struct ib_slot_qp *sa, *sb;

	test_pool(test, &one_rkey, 8, IB_SLOT_BACKPRESSURE);
	sa = test_qp(test, 0, 2);
	sb = test_qp(test, 1, 8);
	a[0] = ib_slot_get(sa);
	a[1] = ib_slot_get(sa);
	KUNIT_ASSERT_NOT_NULL(test, a[0]);
	KUNIT_ASSERT_NOT_NULL(test, a[1]);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sa), 0);
	waiter_init(&tw, sa, 1, 0, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&tw.w), -EAGAIN);

	/* QP a's waiter is short of its own credits: b is not held back. */
	waiter_init(&twb, sb, 1, 1, order, &pos);
	KUNIT_EXPECT_EQ(test, ib_slot_get_or_wait(&twb.w), 0);
	b = twb.w.lead;
	KUNIT_ASSERT_NOT_NULL(test, b);
	KUNIT_EXPECT_EQ(test, chain_len(b), 1);
	ib_slot_put(b);
	KUNIT_EXPECT_EQ(test, tw.resumed, 0);
	ib_slot_put(a[0]);
	KUNIT_EXPECT_EQ(test, tw.resumed, 1);
	ib_slot_put(a[1]);
	put_all(&tw);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sa), 6);
}

static int post_reg_send(struct kunit *test, struct ib_slot *slot,
			 struct ib_send_wr *send)
{
	struct scatterlist sg;

	sg_init_one(&sg, test->priv, 64);
	map_all(test, slot, &sg);
	memset(send, 0, sizeof(*send));
	send->opcode = IB_WR_SEND;
	return ib_slot_post(slot, send);
}

/* Map the first MR of @slot, which a retired slot refuses. */
static int map_first(struct kunit *test, struct ib_slot *slot)
{
	struct scatterlist sg;

	sg_init_one(&sg, test->priv, 64);
	return ib_slot_map_mr(slot, 0, &sg, 1, NULL, IB_ACCESS_REMOTE_READ);
}

/* The peer invalidated the rkey: no LOCAL_INV, fenced at once. */
static void ib_slot_fence_remote(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct ib_send_wr send;
	struct ib_wc recv = { };
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	unsigned int posted;

	test_pool(test, &one_rkey, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	fake_complete_all(to_fqp(env->qp[0]));
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);

	posted = env->fdev->posted;
	recv.wc_flags = IB_WC_WITH_INVALIDATE;
	recv.ex.invalidate_rkey = ib_slot_rkey(slot, 0);
	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, &recv, test_fenced), 0);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 1);
	KUNIT_EXPECT_EQ(test, env->fdev->posted, posted);
	KUNIT_EXPECT_FALSE(test, slot->mrs[0].mr->need_inval);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.remote_inv, 1);
	KUNIT_EXPECT_EQ(test, st.local_inv, 0);
	KUNIT_EXPECT_EQ(test, st.bad_remote_inv, 0);
	ib_slot_put(slot);
}

/* No remote invalidation: a signaled LOCAL_INV, and fenced waits for it. */
static void ib_slot_fence_local(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct ib_send_wr send;
	struct ib_wc recv = { };
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;
	u32 rkey;

	test_pool(test, &one_rkey, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	rkey = ib_slot_rkey(slot, 0);

	/* The reply arrives before the send completes. */
	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, &recv, test_fenced), 0);
	KUNIT_EXPECT_EQ(test, fqp->tail, 3);
	KUNIT_EXPECT_EQ(test, fqp->ring[2].opcode, IB_WR_LOCAL_INV);
	KUNIT_EXPECT_EQ(test, fqp->ring[2].inv_rkey, rkey);
	KUNIT_EXPECT_TRUE(test, fqp->ring[2].signaled);
	KUNIT_EXPECT_PTR_EQ(test, fqp->ring[2].cqe, &slot->inv_cqe);

	fake_complete(fqp, 2, IB_WC_SUCCESS);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 0);
	fake_complete(fqp, 1, IB_WC_SUCCESS);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 1);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.local_inv, 1);
	KUNIT_EXPECT_EQ(test, st.remote_inv, 0);
	ib_slot_put(slot);
}

/*
 * The peer invalidated an rkey that is none of the slot's: a protocol
 * error, reported, and the fence is armed all the same with a LOCAL_INV
 * of the slot's own rkey.  Also when the slot has no live rkey at all.
 */
static void ib_slot_fence_bogus_remote(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct ib_send_wr send;
	struct ib_wc recv = { };
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;
	unsigned int posted;
	u32 rkey;

	test_pool(test, &one_rkey, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	fake_complete_all(fqp);
	test_poll(test);
	rkey = ib_slot_rkey(slot, 0);

	recv.wc_flags = IB_WC_WITH_INVALIDATE;
	recv.ex.invalidate_rkey = rkey + 1;
	KUNIT_EXPECT_EQ(test, ib_slot_fence(slot, &recv, test_fenced), -EPROTO);
	KUNIT_EXPECT_EQ(test, fqp->tail, 3);
	KUNIT_EXPECT_EQ(test, fqp->ring[2].opcode, IB_WR_LOCAL_INV);
	KUNIT_EXPECT_EQ(test, fqp->ring[2].inv_rkey, rkey);
	KUNIT_EXPECT_TRUE(test, fqp->ring[2].signaled);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 0);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fence_status, IB_WC_SUCCESS);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.bad_remote_inv, 1);
	KUNIT_EXPECT_EQ(test, st.remote_inv, 0);
	KUNIT_EXPECT_EQ(test, st.local_inv, 1);
	ib_slot_put(slot);

	/* Nothing registered: nothing to post, fenced() runs at once. */
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	memset(&send, 0, sizeof(send));
	send.opcode = IB_WR_SEND;
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &send), 0);
	fake_complete_all(fqp);
	test_poll(test);
	posted = env->fdev->posted;
	KUNIT_EXPECT_EQ(test, ib_slot_fence_rkey(slot, rkey, test_fenced),
			-EPROTO);
	KUNIT_EXPECT_EQ(test, env->fdev->posted, posted);
	/* The slot's private data outlives a get: its second fence. */
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 2);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.bad_remote_inv, 2);
	KUNIT_EXPECT_EQ(test, st.remote_inv, 0);
	ib_slot_put(slot);
	expect_idle(test, env->pool);
}

/* Remote invalidation while the send is in flight: fenced waits for it. */
static void ib_slot_fence_waits_for_send(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr send;
	struct ib_wc recv = { };
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;

	test_pool(test, &one_rkey, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	recv.wc_flags = IB_WC_WITH_INVALIDATE;
	recv.ex.invalidate_rkey = ib_slot_rkey(slot, 0);
	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, &recv, test_fenced), 0);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 0);
	fake_complete_all(to_fqp(env->qp[0]));
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 1);
	ib_slot_put(slot);
}

static u64 misuse_count(struct kunit *test);

static const struct ib_slot_profile retiring = {
	.nr_rkey_mrs = 1, .max_pages_per_mr = 16, .nr_sends = 1,
	.fence_retires_post = true,
};

/* A slot of a one-slot pool with the profile above, on its own QP. */
static struct ib_slot *retiring_slot(struct kunit *test,
				     struct ib_slot_qp **sqp,
				     struct fake_qp **fqp)
{
	struct test_env *env = test->priv;
	struct ib_slot *slot;

	test_pool(test, &retiring, 1, IB_SLOT_NO_EXHAUST);
	*sqp = test_qp(test, 0, 1);
	*fqp = to_fqp(env->qp[0]);
	slot = ib_slot_get(*sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	return slot;
}

/*
 * fence_retires_post: a post that registers an rkey has an unsignaled
 * tail; the fence's LOCAL_INV completion runs done() and then fenced(),
 * one completion for the request.  A post without an rkey is signaled.
 */
static void ib_slot_fence_retires_post(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr send;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;
	u32 wcs;

	slot = retiring_slot(test, &sqp, &fqp);
	wcs = env->fdev->wc_tail;
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	KUNIT_EXPECT_EQ(test, fqp->tail, 2);
	KUNIT_EXPECT_FALSE(test, fqp->ring[1].signaled);
	KUNIT_EXPECT_PTR_EQ(test, fqp->ring[1].cqe, &slot->tail_cqe);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 0);
	KUNIT_EXPECT_NE(test, atomic_read(&slot->busy), 0);

	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, NULL, test_fenced), 0);
	KUNIT_EXPECT_TRUE(test, fqp->ring[2].signaled);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done_at_fenced, 1);
	KUNIT_EXPECT_EQ(test, env->fdev->wc_tail - wcs, 1);
	ib_slot_put(slot);

	/* Nothing to fence after this post: its tail is signaled. */
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	memset(&send, 0, sizeof(send));
	send.opcode = IB_WR_SEND;
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &send), 0);
	KUNIT_EXPECT_TRUE(test, last_wqe(fqp, 1)->signaled);
	KUNIT_EXPECT_PTR_EQ(test, last_wqe(fqp, 1)->cqe, &slot->cqe);
	fake_complete_all(fqp);
	test_poll(test);
	/* The private area counts both lifetimes of the one slot. */
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 2);
	ib_slot_put(slot);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 0);
}

/*
 * The unsignaled tail fails: its own completion runs done() with the
 * error, once; the fence that follows is flushed, replaces the MR and
 * runs fenced() without a second done().
 */
static void ib_slot_retired_post_fails(struct kunit *test)
{
	struct ib_send_wr send;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;

	slot = retiring_slot(test, &sqp, &fqp);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	fake_complete(fqp, 1, IB_WC_SUCCESS);
	fake_fail(fqp, IB_WC_RETRY_EXC_ERR);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->status, IB_WC_RETRY_EXC_ERR);

	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, NULL, test_fenced), 0);
	test_poll(test);
	KUNIT_EXPECT_TRUE(test, test_wait_set(&req_of(slot)->fenced));
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fence_status, IB_WC_WR_FLUSH_ERR);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&slot->busy), 0);
	ib_slot_put(slot);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 0);
}

/*
 * The peer invalidated the only rkey of a post whose tail is unsignaled:
 * the fence still posts a signaled LOCAL_INV (of that, dead, rkey), or
 * nothing would ever retire the post.  The pool's next posts are signaled:
 * its peer invalidates, so their fences may post nothing.
 */
static void ib_slot_retired_post_peer_inv(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct ib_send_wr send;
	struct ib_wc recv = { };
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;

	slot = retiring_slot(test, &sqp, &fqp);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	recv.wc_flags = IB_WC_WITH_INVALIDATE;
	recv.ex.invalidate_rkey = ib_slot_rkey(slot, 0);
	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, &recv, test_fenced), 0);
	KUNIT_EXPECT_EQ(test, fqp->tail, 3);
	KUNIT_EXPECT_EQ(test, fqp->ring[2].opcode, IB_WR_LOCAL_INV);
	KUNIT_EXPECT_EQ(test, fqp->ring[2].inv_rkey, ib_slot_rkey(slot, 0));
	KUNIT_EXPECT_TRUE(test, fqp->ring[2].signaled);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done_at_fenced, 1);
	ib_slot_put(slot);

	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	KUNIT_EXPECT_EQ(test, fqp->tail, 5);
	KUNIT_EXPECT_TRUE(test, last_wqe(fqp, 1)->signaled);
	KUNIT_EXPECT_PTR_EQ(test, last_wqe(fqp, 1)->cqe, &slot->cqe);
	recv.ex.invalidate_rkey = ib_slot_rkey(slot, 0);
	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, &recv, test_fenced), 0);
	KUNIT_EXPECT_EQ(test, fqp->tail, 5);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 2);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 2);
	ib_slot_put(slot);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.remote_inv, 2);
	KUNIT_EXPECT_EQ(test, st.local_inv, 1);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
}

/*
 * A device whose WRs take different Send Queue units (REG_MR 3, LOCAL_INV
 * 2) and whose Send Queue is smaller than attrs.max_qp_wr: the core sizes
 * and charges by its hooks, and a worst-case chain still fits exactly.
 */
static void ib_slot_provider_units(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_qp_init_attr attr = { .qp_type = IB_QPT_RC };
	struct ib_send_wr send[4];
	struct ib_slot *slots[4];
	struct ib_slot_cost cost;
	struct scatterlist sg;
	struct ib_slot_qp *sqp;
	struct fake_qp *fqp;
	int round, i;
	u32 nr_cqe = 0;

	env->fdev->bb_model = true;
	env->fdev->wr_limit = 20;
	KUNIT_ASSERT_EQ(test, ib_slot_profile_cost(&env->fdev->ibdev,
						   &one_rkey, &cost), 0);
	KUNIT_EXPECT_EQ(test, cost.sqes, 3 + 2 + 1);
	KUNIT_EXPECT_EQ(test, cost.cqes, 3);
	test_pool(test, &one_rkey, 4, IB_SLOT_NO_EXHAUST);
	/* 4 slots need 25 units: more than this device's QP takes. */
	KUNIT_EXPECT_EQ(test, ib_slot_qp_caps(env->pool, 4, &attr, &nr_cqe),
			-EINVAL);
	env->fdev->wr_limit = 25;
	sqp = test_qp(test, 0, 4);
	fqp = to_fqp(env->qp[0]);
	KUNIT_EXPECT_EQ(test, fqp->cap, 25);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 24);

	sg_init_one(&sg, env, 64);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < 4; i++) {
			slots[i] = ib_slot_get(sqp);
			KUNIT_ASSERT_NOT_NULL(test, slots[i]);
			KUNIT_ASSERT_EQ(test, post_reg_send(test, slots[i],
							    &send[i]), 0);
		}
		/* Second round: LOCAL_INV + REG_MR + SEND = 6 units each. */
		KUNIT_EXPECT_EQ(test, fqp->used, round ? 24 : 16);
		KUNIT_EXPECT_EQ(test, env->fdev->sq_overflow, 0);
		fake_complete_all(fqp);
		test_poll(test);
		for (i = 0; i < 4; i++)
			ib_slot_put(slots[i]);
	}
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 24);
}

/* A slot of this profile posts three units: two RDMA WRITEs and a SEND. */
static const struct ib_slot_profile two_writes = {
	.max_rdma_sges = 2, .nr_sends = 1,
};

/* @n WRs, RDMA WRITEs and a SEND last, as one chain. */
static void write_chain(struct ib_send_wr *wrs, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		memset(&wrs[i], 0, sizeof(wrs[i]));
		wrs[i].opcode = i == n - 1 ? IB_WR_SEND : IB_WR_RDMA_WRITE;
		wrs[i].next = i + 1 < n ? &wrs[i + 1] : NULL;
	}
}

/*
 * Slots granted together for a request larger than one come joined: the
 * lead posts a chain of up to all their units with one doorbell, one
 * signaled WR and one done(), and its put returns them all, each a slot
 * of its own again.
 */
static void ib_slot_join_posts_once(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct ib_send_wr wrs[8];
	struct ib_slot *lead, *s, *slots[3];
	struct test_waiter tw;
	struct ib_cqe *cqe;
	int order[1], pos = 0;
	struct ib_slot_qp *sqp;
	struct fake_qp *fqp;
	unsigned int i, signaled = 0;
	int ret;

	test_pool(test, &two_writes, 3, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 3);
	fqp = to_fqp(env->qp[0]);
	KUNIT_ASSERT_EQ(test, ib_slot_get_nr(sqp, 3, &lead), 0);
	/* Two more slots behind the lead, each of its own tag, held. */
	KUNIT_ASSERT_EQ(test, chain_len(lead), 3);
	KUNIT_EXPECT_NE(test, lead->tag, lead->joined->tag);
	KUNIT_EXPECT_NE(test, lead->tag, lead->joined->joined->tag);
	KUNIT_EXPECT_NE(test, lead->joined->tag, lead->joined->joined->tag);
	for (s = lead; s; s = s->joined)
		KUNIT_EXPECT_NE(test, atomic_read(&s->busy), 0);
	KUNIT_EXPECT_EQ(test, ib_slot_room(lead), 9);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 0);

	/* Eight units: more than one slot holds, fewer than three. */
	write_chain(wrs, 8);
	KUNIT_EXPECT_EQ(test, ib_slot_post(lead, wrs), 0);
	KUNIT_EXPECT_EQ(test, env->fdev->doorbells, 1);
	KUNIT_EXPECT_EQ(test, env->fdev->posted, 8);
	KUNIT_EXPECT_EQ(test, ib_slot_room(lead), 1);
	for (i = 0; i < 8; i++) {
		cqe = i == 7 ? &lead->cqe : &lead->aux_cqe;
		signaled += fqp->ring[i].signaled;
		KUNIT_EXPECT_PTR_EQ(test, fqp->ring[i].cqe, cqe);
	}
	KUNIT_EXPECT_EQ(test, signaled, 1);
	KUNIT_EXPECT_TRUE(test, fqp->ring[7].signaled);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, env->nr_done, 1);
	KUNIT_EXPECT_EQ(test, req_of(lead)->done, 1);

	/* The last unit of the three, in a post of its own. */
	write_chain(wrs, 1);
	KUNIT_ASSERT_EQ(test, ib_slot_post(lead, wrs), 0);
	KUNIT_EXPECT_EQ(test, ib_slot_room(lead), 0);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, env->nr_done, 2);

	slots[0] = lead;
	slots[1] = lead->joined;
	slots[2] = lead->joined->joined;
	ib_slot_put(lead);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 9);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_NULL(test, slots[i]->joined);
		KUNIT_EXPECT_EQ(test, atomic_read(&slots[i]->busy), 0);
	}
	/* All three are free: a waiter for three has them at once, joined. */
	waiter_init(&tw, sqp, 3, 0, order, &pos);
	ret = ib_slot_get_or_wait(&tw.w);
	if (ret == -EAGAIN)
		ib_slot_cancel_wait(&tw.w);
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_EXPECT_EQ(test, chain_len(tw.w.lead), 3);
	KUNIT_EXPECT_EQ(test, ib_slot_room(tw.w.lead), 9);
	put_all(&tw);
	/* Each of them is a slot of its own again. */
	for (i = 0; i < 3; i++) {
		slots[i] = ib_slot_get(sqp);
		KUNIT_ASSERT_NOT_NULL(test, slots[i]);
		KUNIT_EXPECT_NULL(test, slots[i]->joined);
		KUNIT_EXPECT_EQ(test, ib_slot_room(slots[i]), 3);
		write_chain(&wrs[i], 1);
		KUNIT_EXPECT_EQ(test, ib_slot_post(slots[i], &wrs[i]), 0);
	}
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, env->nr_done, 5);
	for (i = 0; i < 3; i++)
		ib_slot_put(slots[i]);
	expect_idle(test, env->pool);
}

/*
 * One get for a request larger than a slot: the lead holds the room of all
 * the slots, a chain that fills it goes out in one post and completes with
 * one done(), and the put of the lead gives every slot and credit back.  A
 * get that cannot be served now takes nothing; one beyond the QP's share
 * never can be.
 */
static void ib_slot_get_nr_joined(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot *lead, *other = NULL;
	struct ib_slot_pool_stats st;
	struct ib_send_wr wrs[9];
	struct ib_slot_qp *sqp;
	struct fake_qp *fqp;
	u32 sqes, full;

	test_pool(test, &two_writes, 4, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 4);
	fqp = to_fqp(env->qp[0]);
	sqes = ib_slot_pool_sqes(env->pool);
	KUNIT_ASSERT_EQ(test, sqes, 3);
	full = ib_slot_qp_credits(sqp);
	KUNIT_EXPECT_EQ(test, full, 4 * sqes);

	KUNIT_ASSERT_EQ(test, ib_slot_get_nr(sqp, 3, &lead), 0);
	KUNIT_EXPECT_EQ(test, chain_len(lead), 3);
	KUNIT_EXPECT_EQ(test, ib_slot_room(lead), 3 * sqes);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), full - 3 * sqes);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 3);

	/* Two more are not there: nothing is taken. */
	KUNIT_EXPECT_EQ(test, ib_slot_get_nr(sqp, 2, &other), -EAGAIN);
	KUNIT_EXPECT_NULL(test, other);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 3);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), full - 3 * sqes);
	/* Five are more than the QP's share: never. */
	KUNIT_EXPECT_EQ(test, ib_slot_get_nr(sqp, 5, &other), -EINVAL);
	KUNIT_EXPECT_NULL(test, other);

	/* A chain that fills the room: one doorbell, one done(). */
	write_chain(wrs, 3 * sqes);
	KUNIT_ASSERT_EQ(test, ib_slot_post(lead, wrs), 0);
	KUNIT_EXPECT_EQ(test, env->fdev->doorbells, 1);
	KUNIT_EXPECT_EQ(test, ib_slot_room(lead), 0);
	KUNIT_EXPECT_EQ(test, fqp->used, 3 * sqes);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, env->nr_done, 1);
	KUNIT_EXPECT_EQ(test, req_of(lead)->status, IB_WC_SUCCESS);

	ib_slot_put(lead);
	expect_idle(test, env->pool);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), full);
	/* Every slot is back: four, the whole share, come at once. */
	KUNIT_ASSERT_EQ(test, ib_slot_get_nr(sqp, 4, &lead), 0);
	KUNIT_EXPECT_EQ(test, chain_len(lead), 4);
	ib_slot_put(lead);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), full);
	KUNIT_EXPECT_EQ(test, env->fdev->sq_overflow, 0);
}

/*
 * get_nr() and get_or_wait() of joined slots allocate nothing: with every
 * fault point after the pool's own fail_get failing (fail-nth, which
 * failslab honours for any allocation), they still succeed, and nothing
 * but fail_get was asked.
 */
static void ib_slot_get_nr_no_alloc(struct kunit *test)
{
#if IS_ENABLED(CONFIG_FAILSLAB)
	struct ib_slot_pool_stats st;
	struct test_waiter tw[2];
	int order[2], pos = 0;
	struct ib_slot *lead, *one;
	struct ib_slot_qp *sqp;
	unsigned int left;
	int ret;

	test_pool(test, &send_only, 8, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 8);

	/* 2: fail_get is asked first, the next fault point fails. */
	WRITE_ONCE(current->fail_nth, 2);
	ret = ib_slot_get_nr(sqp, 4, &lead);
	left = READ_ONCE(current->fail_nth);
	WRITE_ONCE(current->fail_nth, 0);
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_EXPECT_EQ(test, left, 1);
	KUNIT_EXPECT_EQ(test, chain_len(lead), 4);

	/* Granted at once. */
	waiter_init(&tw[0], sqp, 4, 0, order, &pos);
	WRITE_ONCE(current->fail_nth, 2);
	ret = ib_slot_get_or_wait(&tw[0].w);
	left = READ_ONCE(current->fail_nth);
	WRITE_ONCE(current->fail_nth, 0);
	KUNIT_ASSERT_EQ(test, ret, 0);
	KUNIT_EXPECT_EQ(test, left, 1);
	KUNIT_EXPECT_EQ(test, chain_len(tw[0].w.lead), 4);

	/* Queued, then granted and resumed by a put. */
	ib_slot_put(lead);
	one = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, one);
	waiter_init(&tw[1], sqp, 4, 1, order, &pos);
	WRITE_ONCE(current->fail_nth, 2);
	ret = ib_slot_get_or_wait(&tw[1].w);
	left = READ_ONCE(current->fail_nth);
	WRITE_ONCE(current->fail_nth, 0);
	KUNIT_ASSERT_EQ(test, ret, -EAGAIN);
	KUNIT_EXPECT_EQ(test, left, 1);
	WRITE_ONCE(current->fail_nth, 1);
	ib_slot_put(one);
	left = READ_ONCE(current->fail_nth);
	WRITE_ONCE(current->fail_nth, 0);
	KUNIT_EXPECT_EQ(test, left, 1);
	KUNIT_EXPECT_EQ(test, tw[1].resumed, 1);
	KUNIT_EXPECT_EQ(test, tw[1].nr_got, 4);

	put_all(&tw[0]);
	put_all(&tw[1]);
	test_stats(cur_env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, st.exhausted, 1);
#else
	kunit_skip(test, "needs CONFIG_FAILSLAB");
#endif
}

/* The slots a request of @nr WRs, and no rdma_rw MR, takes on @sqp. */
static unsigned int demand_wrs(struct ib_slot_qp *sqp, u32 nr)
{
	struct ib_slot_demand d = { };

	ib_slot_demand_wrs(&d, nr);
	return ib_slot_demand_slots(sqp, &d);
}

/*
 * A request of @nr_wrs WRs takes the slots that hold them whatever their
 * mix: each counted at the units of the costliest WR a chain may hold.
 */
static void ib_slot_demand_units(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_demand d = { };
	struct ib_slot_cost cost;
	struct ib_slot_qp *sqp;

	/* Every WR one unit: a slot holds three. */
	test_pool(test, &one_rkey, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	KUNIT_EXPECT_EQ(test, demand_wrs(sqp, 0), 1);
	KUNIT_EXPECT_EQ(test, demand_wrs(sqp, 1), 1);
	KUNIT_EXPECT_EQ(test, demand_wrs(sqp, 3), 1);
	KUNIT_EXPECT_EQ(test, demand_wrs(sqp, 4), 2);
	KUNIT_EXPECT_EQ(test, demand_wrs(sqp, 7), 3);
	/* Counted across calls. */
	ib_slot_demand_wrs(&d, 3);
	ib_slot_demand_wrs(&d, 3);
	KUNIT_EXPECT_EQ(test, ib_slot_demand_slots(sqp, &d), 2);

	/* REG_MR takes three units, and so does every WR of the count. */
	env->fdev->bb_model = true;
	KUNIT_ASSERT_EQ(test, ib_slot_profile_cost(&env->fdev->ibdev,
						   &one_rkey, &cost), 0);
	KUNIT_ASSERT_EQ(test, cost.sqes, 6);
	test_pool(test, &one_rkey, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 1, 1);
	KUNIT_EXPECT_EQ(test, demand_wrs(sqp, 1), 1);
	KUNIT_EXPECT_EQ(test, demand_wrs(sqp, cost.sqes / 3), 1);
	KUNIT_EXPECT_EQ(test, demand_wrs(sqp, cost.sqes / 3 + 1), 2);
	/* 3 * (2^32 - 1) units, 6 a slot: no 32-bit overflow on the way. */
	KUNIT_EXPECT_EQ(test, demand_wrs(sqp, U32_MAX), 0x80000000U);
}

static void test_clear_ports(void *dev)
{
	((struct ib_device *)dev)->port_data = NULL;
}

/*
 * rdma_rw asks the port whether it is iWARP: give the fake device, which
 * is never registered, ports 0 and 1 of no protocol.  They are KUnit's
 * memory, so they are taken back before the device is released.
 */
static void test_ports(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_port_data *ports;

	ports = kunit_kcalloc(test, 2, sizeof(*ports), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ports);
	env->fdev->ibdev.port_data = ports;
	test_action(test, test_clear_ports, &env->fdev->ibdev);
}

/* Slots whose lkey MR is rdma_rw's: an RDMA READ sink and two WRITEs. */
static const struct ib_slot_profile rw_lkey = {
	.nr_lkey_mrs = 1, .max_pages_per_mr = 16,
	.max_rdma_sges = 2, .nr_sends = 1,
};

/*
 * A pool of rdma_rw's lkey MRs allocates none, and has the QP created with
 * an rdma_rw context per lkey MR and a Send Queue short of the slots' by
 * what rdma_rw_init_qp() adds for those contexts: the QP then holds exactly
 * the slots.  On a device where rdma_rw does
 * not register (a context is one WR) and on one where it does (max_sgl_rd:
 * a REG_MR and a LOCAL_INV more, and an MR of the QP's per context).
 */
static void ib_slot_rw_mrs_caps(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_qp_init_attr attr;
	struct ib_send_wr (*wrs)[6];
	struct ib_slot *slots[4];
	struct ib_slot_cost cost;
	struct ib_slot_qp *sqp;
	u32 nr_cqe, mrs, full, rw;
	struct fake_qp *fqp;
	int round, i;

	wrs = kunit_kcalloc(test, 4, sizeof(*wrs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, wrs);
	test_ports(test);
	KUNIT_ASSERT_EQ(test, ib_slot_profile_cost(&env->fdev->ibdev,
						   &rw_lkey, &cost), 0);
	/* LOCAL_INV, REG_MR and RDMA READ of the MR, two WRITEs, a SEND. */
	KUNIT_ASSERT_EQ(test, cost.sqes, 6);
	full = 4 * cost.sqes + 1;
	for (round = 0; round < 2; round++) {
		env->fdev->ibdev.attrs.max_sgl_rd = round ? 4 : 0;
		rw = rdma_rw_max_send_wr(&env->fdev->ibdev, 1, 4, 0);
		KUNIT_EXPECT_EQ(test, rw, round ? 3 * 4 : 4);

		mrs = env->fdev->nr_mrs;
		test_pool(test, &rw_lkey, 4, IB_SLOT_NO_EXHAUST);
		KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs, mrs);
		attr = (struct ib_qp_init_attr){ .qp_type = IB_QPT_RC,
						 .port_num = 1 };
		nr_cqe = 0;
		KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(env->pool, 4, &attr,
						      &nr_cqe), 0);
		KUNIT_EXPECT_EQ(test, attr.cap.max_rdma_ctxs, 4);
		KUNIT_EXPECT_EQ(test, attr.cap.max_send_wr + rw, full);
		KUNIT_EXPECT_EQ(test, attr.cap.max_send_wr, full - rw);
		/* The slots' completions, and the drain's Send and Receive. */
		KUNIT_EXPECT_EQ(test, nr_cqe, 4 * cost.cqes + 2);

		/* rdma_rw_init_qp() adds its room: the slots' exactly. */
		fqp = test_qp_of(test, &attr, nr_cqe);
		KUNIT_EXPECT_EQ(test, fqp->cap, full);
		KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs - mrs, round ? 4 : 0);
		sqp = ib_slot_qp_attach(env->pool, env->qp[0], &attr.cap, 4);
		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sqp);
		test_action(test, ib_slot_qp_detach_action, sqp);

		/* Every slot posts its worst case: the ring ends full. */
		for (i = 0; i < 4; i++) {
			slots[i] = ib_slot_get(sqp);
			KUNIT_ASSERT_NOT_NULL(test, slots[i]);
			KUNIT_EXPECT_EQ(test, slots[i]->nr_mrs, 0);
			KUNIT_EXPECT_NULL(test, slots[i]->mrs);
			write_chain(wrs[i], cost.sqes);
			KUNIT_ASSERT_EQ(test, ib_slot_post(slots[i], wrs[i]), 0);
		}
		KUNIT_EXPECT_EQ(test, fqp->used, fqp->cap - 1);
		fake_complete_all(fqp);
		test_poll(test);
		for (i = 0; i < 4; i++)
			ib_slot_put(slots[i]);
	}
}

/* QP 0 for a pool of rdma_rw's lkey MRs: its caps need the port. */
static struct ib_slot_qp *test_rw_qp(struct kunit *test, u32 nr_slots)
{
	struct test_env *env = test->priv;
	struct ib_qp_init_attr attr = { .qp_type = IB_QPT_RC, .port_num = 1 };
	struct ib_slot_qp *sqp;
	u32 nr_cqe = 0;

	KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(env->pool, nr_slots, &attr,
					      &nr_cqe), 0);
	test_qp_of(test, &attr, nr_cqe);
	env->cap[0] = attr.cap;
	sqp = ib_slot_qp_attach(env->pool, env->qp[0], &attr.cap, nr_slots);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sqp);
	test_action(test, ib_slot_qp_detach_action, sqp);
	env->sqp[0] = sqp;
	return sqp;
}

/* A device's limits, as rdma_rw and the cost model read them. */
struct rw_dev_case {
	const char	*desc;
	u32		send_sge;	/* attrs.max_send_sge, and the QP's */
	u32		sge_rd;		/* attrs.max_sge_rd */
	u32		sgl_rd;		/* attrs.max_sgl_rd */
	u32		mr_pages;	/* attrs.max_fast_reg_page_list_len */
	bool		iwarp;
	bool		bb_model;	/* REG_MR 3 units, LOCAL_INV 2 */
};

static const struct rw_dev_case rw_dev_cases[] = {
	{ "RoCE, 4 SGEs", 4, 4, 0, 8 },
	{ "READ SGEs below Send SGEs", 4, 2, 0, 8 },
	{ "one SGE", 1, 1, 0, 8 },
	{ "max_sgl_rd 4", 4, 4, 4, 8 },
	{ "max_sgl_rd 2, one READ SGE", 4, 1, 2, 8 },
	{ "max_sgl_rd 4, REG_MR 3 units", 4, 4, 4, 8, false, true },
	{ "iWARP", 4, 1, 0, 8, true },
	{ "iWARP, REG_MR 3 units", 4, 2, 0, 8, true, true },
};

static void rw_dev_case_desc(const struct rw_dev_case *c, char *desc)
{
	strscpy(desc, c->desc, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(rw_dev, rw_dev_cases, rw_dev_case_desc);

#define RW_SLOTS	16
#define RW_MAX_SG	96

struct rw_run {
	struct ib_slot_qp	*sqp;
	struct scatterlist	*sgl;
	void			*buf;
	/* The pool's units per slot, and rdma_rw MRs per slot. */
	u32			sqes;
	u32			lkey;
	/* Transfers whose WRs rdma_rw_max_wrs() counted exactly. */
	unsigned int		exact;
	/* Of those, chains that fill their slots to the last unit. */
	unsigned int		boundary;
};

/*
 * One transfer of @n pages in direction @dir: the chain rdma_rw_ctx_init()
 * builds on QP 0 and a SEND behind it, posted through the slots that
 * ib_slot_demand_slots() asked for.  They hold it, and are no more than
 * it needs when rdma_rw_max_wrs() counted its WRs exactly.
 */
static void rw_check(struct kunit *test, struct rw_run *r, u32 n,
		     enum dma_data_direction dir)
{
	struct test_env *env = test->priv;
	struct ib_send_wr send = { .opcode = IB_WR_SEND };
	u32 wrs = 0, units = 0, mrs = 0, est, need, want, i;
	struct scatterlist *sgl = r->sgl;
	struct ib_slot_qp *sqp = r->sqp;
	struct ib_qp *qp = env->qp[0];
	struct ib_slot_demand d = { };
	struct ib_send_wr *wr, *first;
	struct rdma_rw_ctx ctx;
	unsigned long flags;
	struct ib_slot *lead;
	unsigned int done;
	struct ib_mr *mr;
	int ret;

	ib_slot_demand_rw(&d, sqp, 1, n, dir);
	est = d.nr_wrs;
	ib_slot_demand_wrs(&d, 1);
	want = ib_slot_demand_slots(sqp, &d);

	/* Every MR of the QP was used before: each takes a LOCAL_INV. */
	spin_lock_irqsave(&qp->mr_lock, flags);
	list_for_each_entry(mr, &qp->rdma_mrs, qp_entry)
		mr->need_inval = true;
	spin_unlock_irqrestore(&qp->mr_lock, flags);

	sg_init_table(sgl, n);
	for (i = 0; i < n; i++)
		sg_set_buf(&sgl[i], r->buf, PAGE_SIZE);
	ret = rdma_rw_ctx_init(&ctx, qp, 1, sgl, n, 0, 0x10000, 0x1234, dir);
	KUNIT_ASSERT_GT_MSG(test, ret, 0, "%u pages, dir %d", n, dir);
	first = rdma_rw_ctx_wrs(&ctx, qp, 1, NULL, &send);
	for (wr = first; wr; wr = wr->next) {
		units += fake_units(env->fdev, wr->opcode);
		mrs += wr->opcode == IB_WR_REG_MR;
		wrs += wr != &send;
	}
	KUNIT_EXPECT_EQ_MSG(test, wrs, ret, "%u pages, dir %d", n, dir);
	KUNIT_EXPECT_EQ_MSG(test, d.nr_rw_mrs, mrs, "%u pages, dir %d", n,
			    dir);
	need = DIV_ROUND_UP(units, r->sqes);
	if (mrs)
		need = max(need, r->lkey ? DIV_ROUND_UP(mrs, r->lkey) :
					   UINT_MAX);
	KUNIT_EXPECT_GE_MSG(test, want, need, "%u pages, dir %d: %u WRs, %u units, %u MRs",
			    n, dir, wrs, units, mrs);
	if (est == wrs && !env->fdev->bb_model) {
		KUNIT_EXPECT_EQ_MSG(test, want, need, "%u pages, dir %d: %u WRs, %u MRs",
				    n, dir, wrs, mrs);
		r->exact++;
		r->boundary += units == want * r->sqes;
	}

	/* The slots asked for take the chain, in one post. */
	ret = want <= RW_SLOTS ? ib_slot_get_nr(sqp, want, &lead) : -E2BIG;
	KUNIT_EXPECT_EQ_MSG(test, ret, 0, "%u pages, dir %d", n, dir);
	if (!ret) {
		KUNIT_EXPECT_GE(test, ib_slot_room(lead), units);
		if (ib_slot_room(lead) >= units) {
			done = env->nr_done;
			KUNIT_EXPECT_EQ(test, ib_slot_post(lead, first), 0);
			fake_complete_all(to_fqp(qp));
			test_poll(test);
			KUNIT_EXPECT_EQ(test, env->nr_done, done + 1);
			KUNIT_EXPECT_EQ(test, req_of(lead)->status,
					IB_WC_SUCCESS);
		}
		ib_slot_put(lead);
	}
	rdma_rw_ctx_destroy(&ctx, qp, 1, sgl, n, dir);
}

/*
 * Transfers around the limits of @c: one SGE, a WR's SGEs, an MR's pages,
 * max_sgl_rd, and WRITEs of 2 * sqes - 1 WRs, which with a SEND fill two
 * slots to the last unit.
 */
static void rw_check_all(struct kunit *test, struct rw_run *r,
			 const struct rw_dev_case *c)
{
	static const enum dma_data_direction dirs[] = {
		DMA_TO_DEVICE, DMA_FROM_DEVICE,
	};
	u32 s = c->send_sge, m = c->mr_pages;
	u32 b = c->bb_model ? 0 : (2 * r->sqes - 1) * s;
	u32 pages[] = {
		1, s - 1, s, s + 1, 3 * s, m, m + 1, 2 * m, 2 * m + 1,
		c->sgl_rd, c->sgl_rd ? c->sgl_rd + 1 : 0, b, b ? b + 1 : 0,
	};
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(pages); i++) {
		if (!pages[i] || pages[i] > RW_MAX_SG)
			continue;
		for (j = 0; j < ARRAY_SIZE(dirs); j++)
			rw_check(test, r, pages[i], dirs[j]);
	}
}

/*
 * What ib_slot_demand_rw() counts before anything is allocated holds what
 * rdma_rw_ctx_init() then builds, on the fake device, for transfers around
 * each device's limits in both directions: direct SGEs, MRs (iWARP,
 * max_sgl_rd), and Send Queue units that differ by opcode.  The
 * rdma_rw_force_mr path is not covered: that parameter of ib_core is
 * read-only and set at load.
 */
static void ib_slot_demand_rw_matches_rdma_rw(struct kunit *test)
{
	const struct rw_dev_case *c = test->param_value;
	struct ib_slot_profile p = {
		.nr_sends = 1, .max_send_sge = c->send_sge,
	};
	struct test_env *env = test->priv;
	struct ib_device *dev = &env->fdev->ibdev;
	struct rw_run r = { };

	if (!ib_uses_virt_dma(dev))
		kunit_skip(test, "rdma_rw would map for a real DMA device");
	dev->attrs.max_send_sge = c->send_sge;
	dev->attrs.max_sge_rd = c->sge_rd;
	dev->attrs.max_sgl_rd = c->sgl_rd;
	dev->attrs.max_fast_reg_page_list_len = c->mr_pages;
	env->fdev->bb_model = c->bb_model;
	test_ports(test);
	if (c->iwarp) {
		dev->port_data[1].immutable.core_cap_flags =
			RDMA_CORE_PORT_IWARP;
		dev->node_type = RDMA_NODE_RNIC;
	}
	/* A slot moves two WRs of SGEs, with rdma_rw's MRs for them. */
	ib_slot_profile_rw(&p, dev, 1, 2 * c->send_sge);
	r.lkey = p.nr_lkey_mrs;
	KUNIT_EXPECT_EQ(test, r.lkey, c->iwarp || c->sgl_rd ?
			DIV_ROUND_UP(2 * c->send_sge, c->mr_pages) : 0);
	test_pool(test, &p, RW_SLOTS, IB_SLOT_BACKPRESSURE);
	r.sqp = test_rw_qp(test, RW_SLOTS);
	r.sqes = ib_slot_pool_sqes(env->pool);
	r.buf = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	r.sgl = kunit_kcalloc(test, RW_MAX_SG, sizeof(*r.sgl), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r.buf);
	KUNIT_ASSERT_NOT_NULL(test, r.sgl);

	rw_check_all(test, &r, c);
	kunit_info(test, "%u units a slot: %u transfers counted exactly, %u filling their slots\n",
		   r.sqes, r.exact, r.boundary);
	if (!c->bb_model) {
		KUNIT_EXPECT_GT(test, r.exact, 0);
		KUNIT_EXPECT_GT(test, r.boundary, 0);
	}
	KUNIT_EXPECT_EQ(test, env->fdev->sq_overflow, 0);
	KUNIT_EXPECT_EQ(test, env->fdev->cq_overflow, 0);
}

static const struct ib_slot_profile rw_two_mrs = {
	.nr_lkey_mrs = 2, .max_pages_per_mr = 16,
	.max_rdma_sges = 2, .nr_sends = 1,
};

/*
 * The MRs a request takes from the QP's rdma_rw pool bound its slots too,
 * each slot bringing its share of that pool.  Slots that bring none can
 * never hold a request that needs one: UINT_MAX, which every get refuses.
 */
static void ib_slot_demand_mrs_bound(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_demand d = { };
	struct ib_slot_pool_stats st;
	struct ib_slot *lead = NULL;
	struct ib_slot_qp *sqp, *own;
	struct test_waiter tw;
	int order[1], pos = 0;
	u32 sqes;

	test_ports(test);
	env->fdev->ibdev.attrs.max_sgl_rd = 4;
	test_pool(test, &rw_two_mrs, 8, IB_SLOT_BACKPRESSURE);
	sqp = test_rw_qp(test, 8);
	sqes = ib_slot_pool_sqes(env->pool);
	/* Two of LOCAL_INV, REG_MR and READ, two RDMA WRs, a SEND. */
	KUNIT_ASSERT_EQ(test, sqes, 9);

	/* One WR and five MRs: the MRs decide, two a slot. */
	ib_slot_demand_wrs(&d, 1);
	d.nr_rw_mrs = 5;
	KUNIT_EXPECT_EQ(test, ib_slot_demand_slots(sqp, &d), 3);
	d.nr_rw_mrs = 4;
	KUNIT_EXPECT_EQ(test, ib_slot_demand_slots(sqp, &d), 2);
	d.nr_rw_mrs = 0;
	KUNIT_EXPECT_EQ(test, ib_slot_demand_slots(sqp, &d), 1);
	/* Many WRs and few MRs: the WRs do. */
	d = (struct ib_slot_demand){ .nr_wrs = 2 * sqes + 1, .nr_rw_mrs = 2 };
	KUNIT_EXPECT_EQ(test, ib_slot_demand_slots(sqp, &d), 3);
	/* What it says comes joined, with the room of all. */
	d = (struct ib_slot_demand){ .nr_wrs = 1, .nr_rw_mrs = 5 };
	KUNIT_ASSERT_EQ(test, ib_slot_get_nr(sqp, ib_slot_demand_slots(sqp, &d),
					     &lead), 0);
	KUNIT_EXPECT_EQ(test, chain_len(lead), 3);
	KUNIT_EXPECT_EQ(test, ib_slot_room(lead), 3 * sqes);
	ib_slot_put(lead);
	lead = NULL;

	/* Slots whose MRs are their own bring none of rdma_rw's. */
	test_pool(test, &one_rkey, 2, IB_SLOT_BACKPRESSURE);
	own = test_qp(test, 1, 2);
	d = (struct ib_slot_demand){ .nr_wrs = 1, .nr_rw_mrs = 1 };
	KUNIT_EXPECT_EQ(test, ib_slot_demand_slots(own, &d), UINT_MAX);
	d.nr_rw_mrs = 0;
	KUNIT_EXPECT_EQ(test, ib_slot_demand_slots(own, &d), 1);
	KUNIT_EXPECT_EQ(test, ib_slot_get_nr(own, UINT_MAX, &lead), -EINVAL);
	KUNIT_EXPECT_NULL(test, lead);
	waiter_init(&tw, own, UINT_MAX, 0, order, &pos);
	KUNIT_EXPECT_EQ(test, ib_slot_get_or_wait(&tw.w), -EINVAL);
	KUNIT_EXPECT_EQ(test, ib_slot_get_wait(own, UINT_MAX, &lead), -EINVAL);
	KUNIT_EXPECT_NULL(test, lead);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 0);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);
	KUNIT_EXPECT_EQ(test, tw.resumed, 0);
}

/* An MR whose registration was flushed is invalidated before reuse. */
static void ib_slot_reuse_after_flush(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr send;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;
	u32 base;

	test_pool(test, &one_rkey, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	KUNIT_EXPECT_EQ(test, fqp->ring[0].opcode, IB_WR_REG_MR);
	fake_fail(fqp, IB_WC_WR_FLUSH_ERR);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->status, IB_WC_WR_FLUSH_ERR);
	ib_slot_put(slot);

	/* A new QP after reconnect; the pool and its MRs stay. */
	fqp->error = false;
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	base = fqp->tail;
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	KUNIT_EXPECT_EQ(test, fqp->tail - base, 3);
	KUNIT_EXPECT_EQ(test, fqp->ring[base % fqp->cap].opcode,
			IB_WR_LOCAL_INV);
	KUNIT_EXPECT_EQ(test, fqp->ring[(base + 1) % fqp->cap].opcode,
			IB_WR_REG_MR);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 2);
	ib_slot_put(slot);
}

/*
 * The device may complete a post before ib_slot_post() returns, and done()
 * may put the slot and its next owner map it at once: nothing of the post
 * may reach the slot after the doorbell.
 */
static void ib_slot_post_races_completion(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr send = { .opcode = IB_WR_SEND };
	struct scatterlist sg;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;

	sg_init_one(&sg, env, 64);
	test_pool(test, &one_rkey, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);

	/* done() puts: the MR keeps the key its REG_MR registered. */
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	map_all(test, slot, &sg);
	env->put_in_done = true;
	env->fdev->complete_in_post = 1;
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &send), 0);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	KUNIT_ASSERT_EQ(test, last_wqe(fqp, 2)->opcode, IB_WR_REG_MR);
	KUNIT_EXPECT_EQ(test, slot->mrs[0].mr->rkey, last_wqe(fqp, 2)->key);

	/* done() puts, and the next owner maps the same slot again. */
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	map_all(test, slot, &sg);
	env->reget = &sg;
	env->fdev->complete_in_post = 1;
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &send), 0);
	KUNIT_ASSERT_PTR_EQ(test, env->regot, slot);
	env->put_in_done = false;
	KUNIT_EXPECT_EQ(test, slot->sq_used, 0);
	KUNIT_EXPECT_EQ(test, slot->mapped[0], 1);
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &send), 0);
	KUNIT_EXPECT_EQ(test, last_wqe(fqp, 2)->opcode, IB_WR_REG_MR);
	KUNIT_EXPECT_EQ(test, last_wqe(fqp, 2)->key, ib_slot_rkey(slot, 0));
	fake_complete_all(fqp);
	test_poll(test);
	ib_slot_put(slot);
	expect_idle(test, env->pool);
	KUNIT_EXPECT_EQ(test, env->fdev->sq_overflow, 0);
}

static const struct ib_slot_profile three_rkeys = {
	.nr_rkey_mrs = 3, .max_pages_per_mr = 16, .nr_sends = 1,
};

/* Wait, 2 s at most, until @pool has no retired slot. */
static bool test_wait_unretired(struct ib_slot_pool *pool)
{
	struct ib_slot_pool_stats st;
	unsigned long end = jiffies + 2 * HZ;

	do {
		test_stats(pool, &st);
		if (!st.retired)
			return true;
		msleep(20);
	} while (time_before(jiffies, end));
	return false;
}

/*
 * A fence of three LOCAL_INVs that the QP flushes: three completions, one
 * count, and the rkeys may be live, so the MRs are deregistered, which
 * kills them, before fenced() runs and learns the status.  The slot is
 * retired until new MRs come: a map asks for them and fails meanwhile.
 * The pool then serves the QP that replaces the dead one, with fresh MRs
 * that need no LOCAL_INV.
 */
static void ib_slot_fence_flushed_counts(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr send;
	struct ib_slot_pool_stats st;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;
	unsigned int i, mrs;
	u32 base;

	test_pool(test, &three_rkeys, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);
	mrs = env->fdev->nr_mrs;
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_ASSERT_EQ(test, req_of(slot)->done, 1);

	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, NULL, test_fenced), 0);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 0);
	fake_fail(fqp, IB_WC_WR_FLUSH_ERR);
	KUNIT_EXPECT_EQ(test, env->fdev->wc_tail - env->fdev->wc_head, 3);
	test_poll(test);
	KUNIT_EXPECT_TRUE(test, test_wait_set(&req_of(slot)->fenced));
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fence_status, IB_WC_WR_FLUSH_ERR);
	KUNIT_EXPECT_EQ(test, atomic_read(&slot->busy), 0);
	/* Deregistered before fenced(), none allocated yet. */
	KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs, mrs - 3);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_NULL(test, slot->mrs[i].mr);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.retired, 1);
	KUNIT_EXPECT_EQ(test, st.recycled, 0);
	ib_slot_put(slot);

	/* Reconnected: the first map asks for MRs, and fails meanwhile. */
	fqp->error = false;
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	base = fqp->tail;
	KUNIT_EXPECT_EQ(test, map_first(test, slot), -ENOMEM);
	KUNIT_ASSERT_TRUE(test, test_wait_unretired(env->pool));
	KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs, mrs);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.recycled, 3);

	/* Fresh MRs register without a LOCAL_INV first. */
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	KUNIT_EXPECT_EQ(test, fqp->tail - base, 4);
	KUNIT_EXPECT_EQ(test, env->fdev->posted_inv, 3);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->status, IB_WC_SUCCESS);
	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, NULL, test_fenced), 0);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 2);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fence_status, IB_WC_SUCCESS);
	ib_slot_put(slot);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, env->fdev->cq_overflow, 0);
}

/*
 * A device that can no longer create MRs (a fatal error, a hot unplug)
 * once its QP is in error: a flushed fence still kills the rkeys and runs
 * fenced() at once, the slot stays retired and counted, its maps fail
 * with -ENOMEM however often they ask, and the pool is destroyed without
 * waiting for an MR that never comes.
 */
static void ib_slot_fence_dead_device(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct ib_send_wr send;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;
	unsigned long start;
	unsigned int base, mrs;
	int i;

	base = env->fdev->nr_mrs;
	test_pool(test, &three_rkeys, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);
	mrs = env->fdev->nr_mrs;
	KUNIT_ASSERT_EQ(test, mrs, base + 3);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	fake_complete_all(fqp);
	test_poll(test);

	env->fdev->refuse_mr = true;
	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, NULL, test_fenced), 0);
	fake_fail(fqp, IB_WC_WR_FLUSH_ERR);
	test_poll(test);
	KUNIT_ASSERT_TRUE(test, test_wait_set(&req_of(slot)->fenced));
	KUNIT_EXPECT_EQ(test, req_of(slot)->fence_status, IB_WC_WR_FLUSH_ERR);
	/* The rkeys were dead, their MRs deregistered, before fenced(). */
	KUNIT_EXPECT_EQ(test, req_of(slot)->mrs_at_fenced, mrs - 3);
	KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs, mrs - 3);
	ib_slot_put(slot);

	/* Retired, however often a map asks for MRs. */
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_EQ(test, map_first(test, slot), -ENOMEM);
		msleep(50);
	}
	KUNIT_EXPECT_GE(test, env->fdev->refused_mrs, 2);
	ib_slot_put(slot);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.retired, 1);
	KUNIT_EXPECT_EQ(test, st.recycled, 0);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);

	/* Nothing waits for the MR: the destroy returns at once. */
	start = jiffies;
	kunit_release_action(test, ib_slot_qp_detach_action, sqp);
	kunit_release_action(test, ib_slot_pool_destroy_action, env->pool);
	KUNIT_EXPECT_LT(test, jiffies - start, HZ);
	KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs, base);
}

/*
 * A ULP that drained its QP gives back registered slots: the fence posts
 * no LOCAL_INV that would only flush, deregisters the live MRs instead,
 * retires the post it held back, and runs fenced() from the work item.
 */
static void ib_slot_fence_drained(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct ib_send_wr send;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;
	unsigned int mrs;
	u32 base;

	slot = retiring_slot(test, &sqp, &fqp);
	mrs = env->fdev->nr_mrs;
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	/* Drained: the post's WRs completed, its unsignaled tail flushed. */
	fake_complete(fqp, 1, IB_WC_SUCCESS);
	fake_complete(fqp, U32_MAX, IB_WC_WR_FLUSH_ERR);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	ib_slot_qp_drained(sqp);

	base = fqp->tail;
	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, NULL, test_fenced), 0);
	KUNIT_EXPECT_EQ(test, fqp->tail, base);
	KUNIT_ASSERT_TRUE(test, test_wait_set(&req_of(slot)->fenced));
	KUNIT_EXPECT_EQ(test, req_of(slot)->fence_status, IB_WC_WR_FLUSH_ERR);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs, mrs - 1);
	KUNIT_EXPECT_EQ(test, env->fdev->posted_inv, 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&slot->busy), 0);
	ib_slot_put(slot);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.retired, 1);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);
}

/*
 * A post the provider took in part has retired: done() ran once and no
 * more, the QP was moved to the error state, every Send Queue entry came
 * back, and the core's signaled WR, the last of @tail, carried the slot's
 * cqe.
 */
static void expect_partial_retired(struct kunit *test, struct ib_slot *slot,
				   struct fake_qp *fqp, u32 tail)
{
	KUNIT_ASSERT_TRUE(test, test_poll_done(test, slot, 1));
	msleep(20);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	KUNIT_EXPECT_TRUE(test, fqp->error);
	KUNIT_EXPECT_EQ(test, fqp->used, 0);
	KUNIT_EXPECT_EQ(test, fqp->tail, tail);
	KUNIT_EXPECT_TRUE(test, fqp->ring[tail - 1].signaled);
	KUNIT_EXPECT_PTR_EQ(test, fqp->ring[tail - 1].cqe, &slot->cqe);
	KUNIT_EXPECT_EQ(test, atomic_read(&slot->busy), 0);
}

/*
 * A provider that takes the head of a chain and refuses the rest: the
 * post counts as posted, the core moves the QP to the error state and
 * retires the post with a WR of its own, and done() runs once, with an
 * error.  The REG_MR that went out registered a key, which is invalidated
 * before reuse.  A provider that refuses the whole chain leaves nothing
 * outstanding, and the post can be retried.
 */
static void ib_slot_partial_post(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr send;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;
	unsigned int done;

	/* ib_modify_qp() reads the QP's port. */
	test_ports(test);
	test_pool(test, &one_rkey, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	env->fdev->reject_wr = 2;
	KUNIT_EXPECT_EQ(test, post_reg_send(test, slot, &send), 0);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 0);
	KUNIT_EXPECT_NE(test, atomic_read(&slot->busy), 0);
	/* The REG_MR went out: the key it registered must be invalidated. */
	KUNIT_EXPECT_TRUE(test, slot->mrs[0].mr->need_inval);
	KUNIT_EXPECT_EQ(test, slot->mapped[0], 0);
	/* The REG_MR, then the core's signaled WR that retired the post. */
	expect_partial_retired(test, slot, fqp, 2);
	KUNIT_EXPECT_EQ(test, req_of(slot)->status, IB_WC_WR_FLUSH_ERR);
	KUNIT_EXPECT_EQ(test, fqp->ring[0].opcode, IB_WR_REG_MR);
	ib_slot_put(slot);
	expect_idle(test, env->pool);

	/* Reconnected.  The whole chain refused: nothing changed, retry. */
	fqp->error = false;
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	done = req_of(slot)->done;
	env->fdev->reject_wr = 1;
	KUNIT_EXPECT_EQ(test, post_reg_send(test, slot, &send), -EINVAL);
	KUNIT_EXPECT_EQ(test, slot->sq_used, 0);
	KUNIT_EXPECT_EQ(test, slot->mapped[0], 1);
	KUNIT_EXPECT_EQ(test, atomic_read(&slot->busy), 0);
	KUNIT_EXPECT_EQ(test, fqp->tail, 2);
	KUNIT_EXPECT_FALSE(test, fqp->error);
	KUNIT_EXPECT_EQ(test, ib_slot_post(slot, &send), 0);
	/* The key of the REG_MR that went out is invalidated first. */
	KUNIT_EXPECT_EQ(test, fqp->tail, 5);
	KUNIT_EXPECT_EQ(test, fqp->ring[2].opcode, IB_WR_LOCAL_INV);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, done + 1);
	KUNIT_EXPECT_EQ(test, req_of(slot)->status, IB_WC_SUCCESS);
	ib_slot_put(slot);
	expect_idle(test, env->pool);
}

/*
 * [WRITE, WRITE, SEND], of which the provider takes the WRITEs: the post
 * returns 0 and counts as posted; the WRITEs may still run, unsignaled, so
 * the QP is flushed from a work item, and done() runs exactly once, after
 * them, with an error.  Their Send Queue entries come back with the flush.
 */
static void ib_slot_partial_post_flushes(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr wrs[3];
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;

	test_ports(test);
	test_pool(test, &two_writes, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	write_chain(wrs, 3);
	env->fdev->reject_wr = 3;
	KUNIT_EXPECT_EQ(test, ib_slot_post(slot, wrs), 0);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 0);
	KUNIT_EXPECT_NE(test, atomic_read(&slot->busy), 0);

	expect_partial_retired(test, slot, fqp, 3);
	KUNIT_EXPECT_NE(test, req_of(slot)->status, IB_WC_SUCCESS);
	KUNIT_EXPECT_EQ(test, fqp->ring[1].opcode, IB_WR_RDMA_WRITE);
	ib_slot_put(slot);
	expect_idle(test, env->pool);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 3);
	KUNIT_EXPECT_EQ(test, env->fdev->sq_overflow, 0);
	KUNIT_EXPECT_EQ(test, env->fdev->cq_overflow, 0);
}

/*
 * Cancelling the waiter at the head lets the one behind it go, but its
 * resume must not run inside the cancel: the canceller may hold a lock
 * the resume takes.
 */
static void ib_slot_cancel_defers_resume(struct kunit *test)
{
	struct test_waiter big, small;
	int order[2], pos = 0;
	struct ib_slot *held[2];
	struct ib_slot_qp *sqp;

	test_pool(test, &send_only, 2, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 2);
	held[0] = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, held[0]);
	waiter_init(&big, sqp, 2, 0, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&big.w), -EAGAIN);
	waiter_init(&small, sqp, 1, 1, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&small.w), -EAGAIN);
	KUNIT_EXPECT_TRUE(test, ib_slot_cancel_wait(&big.w));
	KUNIT_EXPECT_TRUE(test, test_wait_set(&small.resumed));
	KUNIT_EXPECT_EQ(test, small.resumed, 1);
	/* From the work item, which may have run before we looked. */
	KUNIT_EXPECT_PTR_NE(test, small.task, current);
	KUNIT_EXPECT_EQ(test, small.nr_got, 1);
	KUNIT_EXPECT_EQ(test, big.resumed, 0);
	put_all(&small);
	ib_slot_put(held[0]);
}

/*
 * Detaching a QP resumes its queued waiters with -ESHUTDOWN and no slot,
 * from the pool's work item, and returns once they have been.
 */
static void ib_slot_detach_cancels_waiters(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct test_waiter tw;
	int order[1], pos = 0;
	struct ib_slot_pool_stats st;
	struct ib_slot_qp *sa, *sb;
	struct ib_slot *b;

	test_pool(test, &send_only, 1, IB_SLOT_BACKPRESSURE);
	sa = test_qp(test, 0, 1);
	sb = test_qp(test, 1, 1);
	b = ib_slot_get(sb);
	KUNIT_ASSERT_NOT_NULL(test, b);
	waiter_init(&tw, sa, 1, 0, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&tw.w), -EAGAIN);
	kunit_remove_action(test, ib_slot_qp_detach_action, sa);
	ib_slot_qp_detach(sa);
	KUNIT_EXPECT_EQ(test, tw.resumed, 1);
	KUNIT_EXPECT_EQ(test, tw.w.error, -ESHUTDOWN);
	KUNIT_EXPECT_EQ(test, tw.nr_got, 0);
	KUNIT_EXPECT_PTR_NE(test, tw.task, current);
	/* The put scans the waiters: none of them refers to the old QP. */
	ib_slot_put(b);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 0);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);
}

/*
 * Closing a QP shuts out its waiters, those still queued and those granted
 * whose resume has yet to run: each is resumed once, with -ESHUTDOWN and
 * no slot, and the granted one's slot is back at once.  The resumes come
 * from the pool's work item, never from inside the close: here that item
 * is held up by another QP's resume, so none can have run when the close
 * returns.
 */
static void ib_slot_close_shuts_out_queued_and_granted(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct test_waiter granted, queued;
	struct ib_slot_pool_stats st;
	struct ib_slot_qp *sa, *sb;
	int order[3], pos = 0;
	struct block_waiter *bw;
	struct ib_slot *x, *y;

	env->resume_in_work = true;
	test_pool(test, &send_only, 2, IB_SLOT_BACKPRESSURE);
	sa = test_qp(test, 0, 2);
	sb = test_qp(test, 1, 2);
	x = ib_slot_get(sb);
	y = ib_slot_get(sb);
	KUNIT_ASSERT_NOT_NULL(test, x);
	KUNIT_ASSERT_NOT_NULL(test, y);
	/* The work item resumes sb's waiter, and blocks there. */
	bw = block_work(test, sb, x);

	waiter_init(&granted, sa, 1, 0, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&granted.w), -EAGAIN);
	waiter_init(&queued, sa, 1, 1, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&queued.w), -EAGAIN);
	/* Granted y, its resume waits behind the blocked one. */
	ib_slot_put(y);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 1);
	KUNIT_EXPECT_EQ(test, st.in_use, 2);
	KUNIT_EXPECT_EQ(test, granted.resumed, 0);

	ib_slot_qp_close(sa);
	KUNIT_EXPECT_EQ(test, granted.resumed, 0);
	KUNIT_EXPECT_EQ(test, queued.resumed, 0);
	KUNIT_EXPECT_EQ(test, granted.w.error, -ESHUTDOWN);
	KUNIT_EXPECT_EQ(test, queued.w.error, -ESHUTDOWN);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 0);
	KUNIT_EXPECT_EQ(test, st.in_use, 1);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sa), 2);
	KUNIT_EXPECT_FALSE(test, ib_slot_qp_has_waiters(sa));

	complete(&bw->release);
	KUNIT_EXPECT_TRUE(test, test_wait_set(&granted.resumed));
	KUNIT_EXPECT_TRUE(test, test_wait_set(&queued.resumed));
	ib_slot_qp_quiesce(sa);
	KUNIT_EXPECT_EQ(test, bw->tw.resumed, 1);
	KUNIT_EXPECT_EQ(test, bw->tw.nr_got, 1);
	KUNIT_EXPECT_EQ(test, granted.resumed, 1);
	KUNIT_EXPECT_EQ(test, queued.resumed, 1);
	KUNIT_EXPECT_EQ(test, granted.nr_got, 0);
	KUNIT_EXPECT_EQ(test, queued.nr_got, 0);
	KUNIT_EXPECT_PTR_NE(test, granted.task, current);
	KUNIT_EXPECT_PTR_NE(test, queued.task, current);
	put_all(&bw->tw);
	expect_idle(test, env->pool);
	/* Only the waiter that had its slot counts as resumed. */
	KUNIT_EXPECT_EQ(test, st.resumed, 1);
	KUNIT_EXPECT_EQ(test, st.waits, 3);
}

static void quiesce_fn(void *sqp)
{
	ib_slot_qp_quiesce(sqp);
}

/* Quiesce returns only once a resume of the QP that is running returns. */
static void ib_slot_quiesce_waits_running_resume(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct block_waiter *bw;
	struct test_thread q;
	struct ib_slot_qp *sqp;
	struct ib_slot *x;

	env->resume_in_work = true;
	test_pool(test, &send_only, 1, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 1);
	x = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, x);
	bw = block_work(test, sqp, x);
	ib_slot_qp_close(sqp);

	test_thread_start(test, &q, quiesce_fn, sqp, -1);
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&q.done, HZ / 5), 0);
	KUNIT_EXPECT_EQ(test, bw->tw.resumed, 0);
	complete(&bw->release);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&q.done, 10 * HZ), 0);
	/* Returned after the resume did. */
	KUNIT_EXPECT_EQ(test, bw->tw.resumed, 1);
	KUNIT_EXPECT_EQ(test, bw->tw.w.error, 0);
	KUNIT_EXPECT_EQ(test, bw->tw.nr_got, 1);
	put_all(&bw->tw);
	expect_idle(test, env->pool);
}

/*
 * A request of a QP whose earlier waiter is granted but not yet resumed
 * takes its slot, but runs after that waiter, not before it: the QP's
 * requests run in the order they came (ordered SCSI task attributes).
 */
static void ib_slot_get_or_wait_keeps_qp_order(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct test_waiter first, second;
	int order[2] = { -1, -1 }, pos = 0;
	struct ib_slot_pool_stats st;
	struct block_waiter *bw;
	struct ib_slot_qp *sa, *sb;
	struct ib_slot *x, *y, *z;

	env->resume_in_work = true;
	test_pool(test, &send_only, 3, IB_SLOT_BACKPRESSURE);
	sa = test_qp(test, 0, 3);
	sb = test_qp(test, 1, 3);
	x = ib_slot_get(sb);
	y = ib_slot_get(sa);
	z = ib_slot_get(sa);
	KUNIT_ASSERT_NOT_NULL(test, x);
	KUNIT_ASSERT_NOT_NULL(test, y);
	KUNIT_ASSERT_NOT_NULL(test, z);
	/* sb's waiter holds up the work item. */
	bw = block_work(test, sb, x);

	waiter_init(&first, sa, 1, 0, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&first.w), -EAGAIN);
	/* Granted, its resume queued behind the blocked one. */
	ib_slot_put(y);
	ib_slot_put(z);
	waiter_init(&second, sa, 1, 1, order, &pos);
	KUNIT_EXPECT_EQ(test, ib_slot_get_or_wait(&second.w), -EAGAIN);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 3);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 0);
	KUNIT_EXPECT_EQ(test, first.resumed, 0);
	KUNIT_EXPECT_EQ(test, second.resumed, 0);

	complete(&bw->release);
	KUNIT_EXPECT_TRUE(test, test_wait_set(&second.resumed));
	ib_slot_qp_quiesce(sa);
	KUNIT_EXPECT_EQ(test, first.resumed, 1);
	KUNIT_EXPECT_EQ(test, second.resumed, 1);
	KUNIT_EXPECT_EQ(test, order[0], 0);
	KUNIT_EXPECT_EQ(test, order[1], 1);
	KUNIT_EXPECT_EQ(test, second.nr_got, 1);
	KUNIT_EXPECT_PTR_NE(test, second.task, current);
	put_all(&first);
	put_all(&second);
	put_all(&bw->tw);
	expect_idle(test, env->pool);
	/* Resumed after waiting behind the first: a wait like any other. */
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.waits, 3);
	KUNIT_EXPECT_EQ(test, st.resumed, 3);
}

/*
 * A task killed in ib_slot_get_wait() returns -EINTR and holds nothing:
 * while it is queued, it leaves the FIFO; once granted, with its resume
 * still to come (held up in the work item here), it waits for the grant
 * and gives the slot back.
 */
static void ib_slot_get_wait_killed(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct sleeper s = { .killable = true };
	struct ib_slot_qp *sa, *sb;
	struct test_thread t;
	struct block_waiter *bw;
	int i;
	struct ib_slot *x, *y;

	env->resume_in_work = true;
	test_pool(test, &send_only, 2, IB_SLOT_BACKPRESSURE);
	sa = test_qp(test, 0, 2);
	sb = test_qp(test, 1, 2);
	x = ib_slot_get(sa);
	y = ib_slot_get(sa);
	KUNIT_ASSERT_NOT_NULL(test, x);
	KUNIT_ASSERT_NOT_NULL(test, y);

	/* Killed while queued. */
	s.sqp = sa;
	init_completion(&s.started);
	test_thread_start(test, &t, sleeper_fn, &s, -1);
	wait_for_completion(&s.started);
	for (i = 0; i < 100 && !ib_slot_qp_has_waiters(sa); i++)
		msleep(20);
	KUNIT_ASSERT_TRUE(test, ib_slot_qp_has_waiters(sa));
	send_sig(SIGKILL, t.task, 1);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&t.done, 10 * HZ),
			0);
	KUNIT_EXPECT_EQ(test, s.ret, -EINTR);
	KUNIT_EXPECT_NULL(test, s.slot);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 0);
	KUNIT_EXPECT_EQ(test, st.in_use, 2);

	/* Killed once granted, before its resume ran. */
	bw = block_work(test, sb, x);
	s.ret = 0;
	init_completion(&s.started);
	test_thread_start(test, &t, sleeper_fn, &s, -1);
	wait_for_completion(&s.started);
	for (i = 0; i < 100 && !ib_slot_qp_has_waiters(sa); i++)
		msleep(20);
	KUNIT_ASSERT_TRUE(test, ib_slot_qp_has_waiters(sa));
	ib_slot_put(y);
	KUNIT_EXPECT_FALSE(test, ib_slot_qp_has_waiters(sa));
	send_sig(SIGKILL, t.task, 1);
	/* It cannot cancel: it waits, unkillably, for the resume. */
	for (i = 0; i < 100 && READ_ONCE(t.task->__state) !=
			       TASK_UNINTERRUPTIBLE; i++)
		msleep(20);
	KUNIT_EXPECT_EQ(test, READ_ONCE(t.task->__state),
			TASK_UNINTERRUPTIBLE);
	KUNIT_EXPECT_FALSE(test, completion_done(&t.done));
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 2);
	complete(&bw->release);
	KUNIT_ASSERT_NE(test, wait_for_completion_timeout(&t.done, 10 * HZ),
			0);
	KUNIT_EXPECT_EQ(test, s.ret, -EINTR);
	KUNIT_EXPECT_NULL(test, s.slot);
	KUNIT_EXPECT_TRUE(test, test_wait_set(&bw->tw.resumed));
	test_stats(env->pool, &st);
	/* Only the blocker's slot is out. */
	KUNIT_EXPECT_EQ(test, st.in_use, 1);
	KUNIT_EXPECT_EQ(test, st.nr_waiters, 0);
	put_all(&bw->tw);
	expect_idle(test, env->pool);
}

static void destroy_fn(void *pool)
{
	ib_slot_pool_destroy(pool);
}

/* Destroy waits for the slot still out, and finishes once it is put. */
static void ib_slot_destroy_waits(struct kunit *test)
{
	struct ib_slot_pool_attr attr = {
		.profile = send_only, .nr_slots = 2,
		.policy = IB_SLOT_BACKPRESSURE, .done = test_done,
	};
	struct test_env *env = test->priv;
	struct ib_qp_init_attr qattr = { .qp_type = IB_QPT_RC };
	struct ib_slot_pool *pool;
	struct test_thread d;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct ib_qp *qp;
	u32 nr_cqe = 0;

	attr.pd = env->pd;
	pool = ib_slot_pool_create(&attr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, pool);
	KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(pool, 2, &qattr, &nr_cqe), 0);
	env->cq = ib_alloc_cq(&env->fdev->ibdev, NULL, nr_cqe, 0,
			      IB_POLL_DIRECT);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->cq);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, ib_free_cq_action,
							env->cq), 0);
	qattr.send_cq = env->cq;
	qattr.recv_cq = env->cq;
	qp = ib_create_qp(env->pd, &qattr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, qp);
	sqp = ib_slot_qp_attach(pool, qp, &qattr.cap, 2);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sqp);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);

	test_thread_start(test, &d, destroy_fn, pool, -1);
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&d.done, HZ / 5), 0);
	ib_slot_put(slot);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&d.done, 10 * HZ), 0);
	ib_destroy_qp(qp);
}

/* ---- seeded random stress across two QPs ---- */

#define STRESS_SLOTS	8
#define STRESS_WAITERS	6

struct stress {
	struct kunit		*test;
	/* Per QP: the leads of the grants held, and their slots. */
	struct ib_slot		*held[2][STRESS_SLOTS];
	unsigned int		nr[2][STRESS_SLOTS];
	unsigned int		nr_held[2];
	unsigned int		slots_held[2];
	/* Grants whose lead did not have the slots asked for joined. */
	unsigned int		bad_grants;
	bool			posted[2][STRESS_SLOTS];
	struct test_waiter	tw[STRESS_WAITERS];
	bool			waiting[STRESS_WAITERS];
	int			order[64];
	int			pos;
	unsigned int		posts;
};

static struct stress *cur_stress;

static int stress_qp_of(struct ib_slot_qp *sqp)
{
	return sqp == cur_env->sqp[1];
}

static void stress_take(struct stress *st, int q, struct ib_slot *lead,
			unsigned int nr)
{
	if (chain_len(lead) != nr)
		st->bad_grants++;
	st->posted[q][st->nr_held[q]] = false;
	st->nr[q][st->nr_held[q]] = nr;
	st->held[q][st->nr_held[q]++] = lead;
	st->slots_held[q] += nr;
}

/* Drop grant @i of QP @q, whose lead was put. */
static void stress_drop(struct stress *st, int q, int i)
{
	unsigned int last = --st->nr_held[q];

	st->slots_held[q] -= st->nr[q][i];
	st->held[q][i] = st->held[q][last];
	st->posted[q][i] = st->posted[q][last];
	st->nr[q][i] = st->nr[q][last];
}

static void stress_resume(struct ib_slot_waiter *w)
{
	struct test_waiter *tw = container_of(w, struct test_waiter, w);
	struct stress *st = cur_stress;

	tw->resumed++;
	stress_take(st, stress_qp_of(w->sqp), w->lead, w->nr);
	WRITE_ONCE(st->waiting[tw->id], false);
}

static void stress_check(struct kunit *test, struct stress *st, int step)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats ps;
	unsigned int q, i, waiting = 0, outstanding = 0;

	/* Waiters a get or a cancel granted are resumed from a work item. */
	for (q = 0; q < 100; q++) {
		ib_slot_pool_get_stats(env->pool, &ps);
		for (i = 0, waiting = 0; i < STRESS_WAITERS; i++)
			waiting += READ_ONCE(st->waiting[i]);
		if (ps.nr_waiters == waiting)
			break;
		msleep(20);
	}
	KUNIT_ASSERT_EQ_MSG(test, env->fdev->sq_overflow, 0, "step %d", step);
	KUNIT_ASSERT_EQ_MSG(test, env->fdev->cq_overflow, 0, "step %d", step);
	KUNIT_ASSERT_EQ_MSG(test, ps.in_use,
			    st->slots_held[0] + st->slots_held[1],
			    "step %d", step);
	KUNIT_ASSERT_EQ_MSG(test, st->bad_grants, 0, "step %d", step);
	KUNIT_ASSERT_EQ_MSG(test, ps.nr_waiters, waiting, "step %d", step);
	KUNIT_ASSERT_EQ_MSG(test, ps.misuse, 0, "step %d", step);
	for (q = 0; q < 2; q++)
		for (i = 0; i < st->nr_held[q]; i++)
			outstanding += st->posted[q][i];
	/* done() ran exactly once for every post that is not outstanding. */
	KUNIT_ASSERT_EQ_MSG(test, env->nr_done, st->posts - outstanding,
			    "step %d", step);
	for (q = 0; q < 2; q++) {
		struct fake_qp *fqp = to_fqp(env->qp[q]);

		KUNIT_ASSERT_EQ_MSG(test, ib_slot_qp_credits(env->sqp[q]),
				    fqp->cap - 1 - 3 * st->slots_held[q],
				    "step %d qp %u", step, q);
		KUNIT_ASSERT_LE(test, fqp->used, fqp->cap);
	}
}

/* Mark slots whose post completed as idle again. */
static void stress_reap(struct stress *st)
{
	unsigned int q, i;

	for (q = 0; q < 2; q++)
		for (i = 0; i < st->nr_held[q]; i++) {
			struct test_req *req = req_of(st->held[q][i]);

			if (st->posted[q][i] && req->done == req->seq)
				st->posted[q][i] = false;
		}
}

static void ib_slot_stress_two_qps(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr wrs[2][STRESS_SLOTS];
	struct rnd_state rnd;
	struct scatterlist sg;
	struct stress *st;
	int step, q, i;

	st = kunit_kzalloc(test, sizeof(*st), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, st);
	cur_stress = st;
	sg_init_one(&sg, env, 64);
	prandom_seed_state(&rnd, 0x1b510700ULL);
	test_pool(test, &one_rkey, STRESS_SLOTS, IB_SLOT_BACKPRESSURE);
	test_qp(test, 0, 4);
	test_qp(test, 1, 4);

	for (step = 0; step < 5000; step++) {
		u32 op = prandom_u32_state(&rnd) % 100;

		q = prandom_u32_state(&rnd) % 2;
		if (op < 30) {			/* get, or queue a waiter */
			for (i = 0; i < STRESS_WAITERS; i++)
				if (!st->waiting[i])
					break;
			if (i == STRESS_WAITERS)
				continue;
			waiter_init(&st->tw[i], env->sqp[q],
				    1 + prandom_u32_state(&rnd) % 2, i,
				    st->order, &st->pos);
			st->tw[i].w.resume = stress_resume;
			st->waiting[i] = true;
			if (!ib_slot_get_or_wait(&st->tw[i].w))
				stress_resume(&st->tw[i].w);
		} else if (op < 55 && st->nr_held[q]) {	/* post */
			struct ib_slot *slot;

			i = prandom_u32_state(&rnd) % st->nr_held[q];
			slot = st->held[q][i];
			if (st->posted[q][i])
				continue;
			if (req_of(slot)->done != req_of(slot)->seq ||
			    slot->sq_used)
				continue;	/* one lifetime, one post */
			memset(&wrs[q][i], 0, sizeof(wrs[q][i]));
			wrs[q][i].opcode = IB_WR_SEND;
			map_all(test, slot, &sg);
			KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &wrs[q][i]), 0);
			req_of(slot)->seq++;
			st->posted[q][i] = true;
			st->posts++;
		} else if (op < 80) {		/* complete some WRs */
			fake_complete(to_fqp(env->qp[q]),
				      prandom_u32_state(&rnd) % 4,
				      IB_WC_SUCCESS);
			test_poll(test);
			stress_reap(st);
		} else if (op < 95 && st->nr_held[q]) {	/* put an idle slot */
			i = prandom_u32_state(&rnd) % st->nr_held[q];
			if (st->posted[q][i])
				continue;
			ib_slot_put(st->held[q][i]);
			stress_drop(st, q, i);
		} else if (op < 97) {		/* QP error: flush everything */
			fake_complete(to_fqp(env->qp[q]), U32_MAX,
				      IB_WC_WR_FLUSH_ERR);
			test_poll(test);
			stress_reap(st);
		} else {			/* cancel a waiter */
			i = prandom_u32_state(&rnd) % STRESS_WAITERS;
			if (st->waiting[i] && ib_slot_cancel_wait(&st->tw[i].w))
				st->waiting[i] = false;
		}
		stress_check(test, st, step);
	}

	/* Wind down: complete everything, cancel waiters, put every slot. */
	for (i = 0; i < STRESS_WAITERS; i++)
		if (st->waiting[i] && ib_slot_cancel_wait(&st->tw[i].w))
			st->waiting[i] = false;
	for (q = 0; q < 2; q++) {
		fake_complete_all(to_fqp(env->qp[q]));
		test_poll(test);
		stress_reap(st);
	}
	stress_check(test, st, step);
	for (q = 0; q < 2; q++)
		while (st->nr_held[q]) {
			ib_slot_put(st->held[q][0]);
			stress_drop(st, q, 0);
		}
	stress_check(test, st, step + 1);
	/* The seed is fixed: this many posts means the run did work. */
	kunit_info(test, "%u posts, %u done\n", st->posts, env->nr_done);
	KUNIT_EXPECT_GT(test, st->posts, 300);
	KUNIT_EXPECT_EQ(test, env->nr_done, st->posts);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(env->sqp[0]), 12);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(env->sqp[1]), 12);
}

/* ---- two CPUs racing over the per-CPU tag caches ---- */

#define RACE_SLOTS	3
#define RACE_ITERS	100000

struct tag_race {
	struct ib_slot_qp	*sqp;
	atomic_t		owners[RACE_SLOTS];
	atomic_t		doubles;
	/* Grants that did not bring the slots asked for. */
	atomic_t		wrong_nr;
	atomic_t		ready;
};

struct tag_racer {
	struct tag_race		*race;
	unsigned long		got;
	struct test_thread	thread;
};

static void tag_racer_fn(void *data)
{
	struct tag_racer *r = data;
	struct tag_race *race = r->race;
	struct ib_slot *lead, *s;
	unsigned int i, nr;

	/* Start together, so that the two CPUs overlap. */
	atomic_inc(&race->ready);
	while (atomic_read(&race->ready) < 2)
		cpu_relax();
	for (i = 0; i < RACE_ITERS; i++) {
		nr = 1 + (i & 1);
		if (ib_slot_get_nr(race->sqp, nr, &lead))
			continue;
		/* Every slot of the grant is ours: its tag too. */
		for (s = lead; s; s = s->joined)
			if (atomic_inc_return(&race->owners[s->tag]) != 1)
				atomic_inc(&race->doubles);
		if (chain_len(lead) != nr)
			atomic_inc(&race->wrong_nr);
		r->got += nr;
		for (s = lead; s; s = s->joined)
			atomic_dec(&race->owners[s->tag]);
		ib_slot_put(lead);
	}
}

/*
 * Two CPUs take and put slots of a pool too small for both, so that gets
 * fail, tags pile up in either CPU's cache and gets steal them: no slot
 * is ever handed out twice, and afterwards every slot can be taken.
 */
static void ib_slot_stress_tag_cache(struct kunit *test)
{
	struct ib_slot *all[RACE_SLOTS];
	struct tag_racer racer[2] = { };
	struct ib_slot_pool_stats st;
	struct tag_race race = { };
	int i, cpu;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	test_pool(test, &send_only, RACE_SLOTS, IB_SLOT_BACKPRESSURE);
	race.sqp = test_qp(test, 0, RACE_SLOTS);
	cpu = cpumask_first(cpu_online_mask);
	for (i = 0; i < 2; i++) {
		racer[i].race = &race;
		test_thread_start(test, &racer[i].thread, tag_racer_fn,
				  &racer[i], cpu);
		cpu = cpumask_next(cpu, cpu_online_mask);
	}
	for (i = 0; i < 2; i++)
		KUNIT_ASSERT_NE(test,
				wait_for_completion_timeout(&racer[i].thread.done,
							    120 * HZ), 0);

	KUNIT_EXPECT_EQ(test, atomic_read(&race.doubles), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&race.wrong_nr), 0);
	KUNIT_EXPECT_GT(test, racer[0].got, 0);
	KUNIT_EXPECT_GT(test, racer[1].got, 0);
	test_stats(cur_env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_GT(test, st.exhausted, 0);
	/* No tag was lost in a cache: all of them can be taken at once. */
	for (i = 0; i < RACE_SLOTS; i++) {
		all[i] = ib_slot_get(race.sqp);
		KUNIT_ASSERT_NOT_NULL(test, all[i]);
	}
	KUNIT_EXPECT_PTR_NE(test, all[0], all[1]);
	KUNIT_EXPECT_PTR_NE(test, all[1], all[2]);
	KUNIT_EXPECT_PTR_NE(test, all[0], all[2]);
	KUNIT_EXPECT_NULL(test, ib_slot_get(race.sqp));
	for (i = 0; i < RACE_SLOTS; i++)
		ib_slot_put(all[i]);
}

/* ---- two CPUs: waiters, grants, cancels and puts over two pools ---- */

#define MT_POOLS	2
#define MT_SLOTS	4
#define MT_WAITERS	4
#define MT_ITERS	20000

enum { MT_IDLE, MT_QUEUED, MT_GRANTED };

struct mt_race {
	atomic_t		owners[MT_POOLS][MT_SLOTS];
	atomic_t		doubles;
	atomic_t		errors;
	atomic_t		ready;
};

struct mt_waiter {
	struct ib_slot_waiter	w;
	struct mt_race		*race;
	unsigned int		pool;
	atomic_t		state;
};

struct mt_thread {
	struct mt_race		*race;
	struct ib_slot_qp	*sqp[MT_POOLS];
	struct mt_waiter	mw[MT_WAITERS];
	struct test_thread	thread;
	u64			seed;
	unsigned long		grants;
	unsigned long		cancels;
	/* Waiters queued when the run ended, and still not idle at the end. */
	unsigned int		queued;
	unsigned int		stuck;
};

/*
 * @mw holds its slots now, every one joined to its lead: no other waiter
 * may hold one of them.
 */
static void mt_own(struct mt_waiter *mw)
{
	struct ib_slot *s;

	for (s = mw->w.lead; s; s = s->joined)
		if (atomic_inc_return(&mw->race->owners[mw->pool][s->tag]) != 1)
			atomic_inc(&mw->race->doubles);
	if (chain_len(mw->w.lead) != mw->w.nr)
		atomic_inc(&mw->race->errors);
}

/* Runs on either CPU: from the other thread's put, or from a work item. */
static void mt_resume(struct ib_slot_waiter *w)
{
	struct mt_waiter *mw = container_of(w, struct mt_waiter, w);

	if (w->error) {
		atomic_inc(&mw->race->errors);
		return;
	}
	mt_own(mw);
	/* Pairs with the atomic_read_acquire() in mt_step(). */
	atomic_set_release(&mw->state, MT_GRANTED);
}

static void mt_put(struct mt_waiter *mw)
{
	struct ib_slot *s;

	for (s = mw->w.lead; s; s = s->joined)
		atomic_dec(&mw->race->owners[mw->pool][s->tag]);
	ib_slot_put(mw->w.lead);
	atomic_set(&mw->state, MT_IDLE);
}

/* Queue @mw for one or two slots, put what it was granted, or cancel it. */
static void mt_step(struct mt_thread *t, struct mt_waiter *mw, u32 r)
{
	int ret;

	switch (atomic_read_acquire(&mw->state)) {
	case MT_IDLE:
		mw->pool = r % MT_POOLS;
		mw->w.sqp = t->sqp[mw->pool];
		mw->w.nr = 1 + (r >> 4) % 2;
		mw->w.resume = mt_resume;
		INIT_LIST_HEAD(&mw->w.entry);
		/* Before the call: the grant may be resumed before it returns. */
		atomic_set(&mw->state, MT_QUEUED);
		ret = ib_slot_get_or_wait(&mw->w);
		if (!ret) {
			mt_own(mw);
			atomic_set(&mw->state, MT_GRANTED);
		} else if (ret != -EAGAIN) {
			atomic_inc(&t->race->errors);
			atomic_set(&mw->state, MT_IDLE);
		}
		break;
	case MT_GRANTED:
		t->grants++;
		mt_put(mw);
		break;
	case MT_QUEUED:
		/* A cancel that loses to a grant leaves the resume coming. */
		if ((r >> 8) % 4 == 0 && ib_slot_cancel_wait(&mw->w)) {
			t->cancels++;
			atomic_set(&mw->state, MT_IDLE);
		}
		break;
	}
}

/*
 * Put every grant, and cancel queued waiters if @cancel, until all of
 * @t's waiters are idle or 20 s have passed.  Returns how many are not.
 */
static unsigned int mt_settle(struct mt_thread *t, bool cancel)
{
	unsigned long end = jiffies + 20 * HZ;
	unsigned int i, busy;

	do {
		busy = 0;
		for (i = 0; i < MT_WAITERS; i++) {
			struct mt_waiter *mw = &t->mw[i];

			switch (atomic_read_acquire(&mw->state)) {
			case MT_GRANTED:
				mt_put(mw);
				break;
			case MT_QUEUED:
				/* A cancel that loses leaves a grant coming. */
				if (cancel && ib_slot_cancel_wait(&mw->w))
					atomic_set(&mw->state, MT_IDLE);
				break;
			}
			busy += atomic_read(&mw->state) != MT_IDLE;
		}
		cond_resched();
	} while (busy && time_before(jiffies, end));
	return busy;
}

static void mt_thread_fn(void *data)
{
	struct mt_thread *t = data;
	struct rnd_state rnd;
	unsigned int i;
	u32 r;

	prandom_seed_state(&rnd, t->seed);
	atomic_inc(&t->race->ready);
	while (atomic_read(&t->race->ready) < 2)
		cpu_relax();
	for (i = 0; i < MT_ITERS; i++) {
		r = prandom_u32_state(&rnd);
		mt_step(t, &t->mw[r % MT_WAITERS], r / MT_WAITERS);
		/* Grants made by a get or a cancel resume from a work item. */
		cond_resched();
	}
	/*
	 * From idle, queue every waiter for two slots of the first pool:
	 * eight slots of four, so at least two of them wait behind slots
	 * this thread holds.  Then only put grants: each waiter left queued
	 * must be granted by a put, as the slots ahead of it come back.  One
	 * still queued at the end is a lost wakeup.
	 */
	t->stuck = mt_settle(t, true);
	for (i = 0; i < MT_WAITERS; i++)
		mt_step(t, &t->mw[i], 1 << 4);
	for (i = 0; i < MT_WAITERS; i++)
		t->queued += atomic_read(&t->mw[i].state) == MT_QUEUED;
	t->stuck += mt_settle(t, false);
}

/*
 * Two CPUs queue waiters for one or two slots of two small pools, cancel
 * them and put their grants, all at once, so that grants race cancels and
 * puts resume the other CPU's waiters.  No slot is ever held twice, no
 * waiter is lost, and every slot and waiter is back at the end.
 */
static void ib_slot_stress_waiters_two_cpus(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_attr attr = {
		.pd = env->pd, .profile = send_only, .nr_slots = MT_SLOTS,
		.policy = IB_SLOT_BACKPRESSURE, .name = "kunit-mt",
		.done = test_done,
	};
	struct ib_slot_pool *pools[MT_POOLS];
	struct mt_race race = { };
	struct mt_thread *t;
	struct ib_slot_pool_stats st;
	int p, i, cpu;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	t = kunit_kcalloc(test, 2, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	for (p = 0; p < MT_POOLS; p++) {
		pools[p] = ib_slot_pool_create(&attr);
		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, pools[p]);
		test_action(test, ib_slot_pool_destroy_action, pools[p]);
		env->pool = pools[p];
		for (i = 0; i < 2; i++)
			t[i].sqp[p] = test_qp(test, i, MT_SLOTS);
	}
	env->pool = NULL;
	cpu = cpumask_first(cpu_online_mask);
	for (i = 0; i < 2; i++) {
		t[i].race = &race;
		t[i].seed = 0x5107ULL + i;
		for (p = 0; p < MT_WAITERS; p++)
			t[i].mw[p].race = &race;
		test_thread_start(test, &t[i].thread, mt_thread_fn, &t[i], cpu);
		cpu = cpumask_next(cpu, cpu_online_mask);
	}
	for (i = 0; i < 2; i++)
		KUNIT_ASSERT_NE(test,
				wait_for_completion_timeout(&t[i].thread.done,
							    300 * HZ), 0);

	kunit_info(test, "grants %lu/%lu, cancels %lu/%lu, queued at the end %u/%u\n",
		   t[0].grants, t[1].grants, t[0].cancels, t[1].cancels,
		   t[0].queued, t[1].queued);
	KUNIT_EXPECT_EQ(test, atomic_read(&race.doubles), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&race.errors), 0);
	/* The end queued waiters behind held slots, and puts granted all. */
	KUNIT_EXPECT_GE(test, t[0].queued, (MT_WAITERS * 2 - MT_SLOTS) / 2);
	KUNIT_EXPECT_GE(test, t[1].queued, (MT_WAITERS * 2 - MT_SLOTS) / 2);
	KUNIT_EXPECT_EQ(test, t[0].stuck + t[1].stuck, 0);
	for (i = 0; i < 2; i++) {
		KUNIT_EXPECT_GT(test, t[i].grants, 100);
		KUNIT_EXPECT_GT(test, t[i].cancels, 0);
	}
	for (p = 0; p < MT_POOLS; p++) {
		ib_slot_pool_get_stats(pools[p], &st);
		KUNIT_EXPECT_EQ(test, st.in_use, 0);
		KUNIT_EXPECT_EQ(test, st.nr_waiters, 0);
		KUNIT_EXPECT_EQ(test, st.misuse, 0);
		/* The pools were contended: waiters queued and were resumed. */
		KUNIT_EXPECT_GT(test, st.waits, 0);
		KUNIT_EXPECT_GT(test, st.resumed, 0);
	}
}

/* ---- two CPUs: a QP closed while puts grant its waiters ---- */

#define CR_SLOTS	4
#define CR_WAITERS	6
#define CR_ROUNDS	256

enum { CR_CLOSE_FIRST, CR_RACE, CR_CLOSE_LAST };

struct close_race {
	struct ib_slot_qp	*sqp;
	struct ib_slot		*held[CR_SLOTS];
	struct test_waiter	tw[CR_WAITERS];
	int			mode;
	unsigned int		delay_us;
	atomic_t		ready;
	atomic_t		closed;
	atomic_t		put_done;
	/* ib_slot_qp_quiesce() returned. */
	bool			quiesced;
	/* Resumes that started after that, and waiters not resumed by then. */
	atomic_t		late;
	unsigned int		unresumed;
	struct test_thread	putter;
	struct test_thread	closer;
};

static struct close_race *cur_close;

/* Granted: the request is over at once, its slots go back. */
static void close_race_resume(struct ib_slot_waiter *w)
{
	struct test_waiter *tw = container_of(w, struct test_waiter, w);
	struct close_race *cr = cur_close;

	if (READ_ONCE(cr->quiesced))
		atomic_inc(&cr->late);
	tw->nr_got = chain_len(w->lead);
	tw->task = current;
	if (!w->error && w->lead)
		ib_slot_put(w->lead);
	/* Pairs with the closer's acquire: what the resume wrote first. */
	smp_store_release(&tw->resumed, tw->resumed + 1);
}

static void close_race_start(struct close_race *cr)
{
	atomic_inc(&cr->ready);
	while (atomic_read(&cr->ready) < 2)
		cpu_relax();
}

/* CPU 0: put the other QP's slots, each granting waiters of the first. */
static void close_race_putter(void *data)
{
	struct close_race *cr = data;
	unsigned int i;

	if (cr->mode == CR_CLOSE_FIRST) {
		while (!atomic_read(&cr->closed))
			cpu_relax();
	} else if (cr->mode == CR_RACE) {
		close_race_start(cr);
	}
	for (i = 0; i < CR_SLOTS; i++)
		ib_slot_put(cr->held[i]);
	atomic_set(&cr->put_done, 1);
}

/* CPU 1: close the QP, quiesce it, and see every waiter resumed. */
static void close_race_closer(void *data)
{
	struct close_race *cr = data;
	unsigned int i;

	if (cr->mode == CR_CLOSE_LAST) {
		while (!atomic_read(&cr->put_done))
			cpu_relax();
	} else if (cr->mode == CR_RACE) {
		close_race_start(cr);
		udelay(cr->delay_us);
	}
	ib_slot_qp_close(cr->sqp);
	atomic_set(&cr->closed, 1);
	ib_slot_qp_quiesce(cr->sqp);
	for (i = 0; i < CR_WAITERS; i++) {
		/* Pairs with the release in close_race_resume(). */
		cr->unresumed += !smp_load_acquire(&cr->tw[i].resumed);
	}
	WRITE_ONCE(cr->quiesced, true);
}

/*
 * Puts on one CPU grant a QP's waiters while the other CPU closes that QP,
 * round after round, with the close first, last, and at varying points of
 * the puts: every waiter is resumed exactly once, with its slots or with
 * -ESHUTDOWN and none; once quiesce returns every resume has run and none
 * starts later; every slot and credit comes back.
 */
static void ib_slot_stress_close_races_grant(struct kunit *test)
{
	struct test_env *env = test->priv;
	unsigned int granted = 0, shut = 0, round, i;
	int order[1], pos = 0, cpu0, cpu1;
	struct ib_slot_pool_stats st;
	struct close_race *cr;
	struct ib_slot_qp *sb;
	u32 full_a, full_b;

	if (num_online_cpus() < 2)
		kunit_skip(test, "needs two CPUs");
	cr = kunit_kzalloc(test, sizeof(*cr), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, cr);
	cur_close = cr;
	test_pool(test, &send_only, CR_SLOTS, IB_SLOT_BACKPRESSURE);
	full_a = ib_slot_qp_credits(test_qp(test, 0, CR_SLOTS));
	sb = test_qp(test, 1, CR_SLOTS);
	full_b = ib_slot_qp_credits(sb);
	cpu0 = cpumask_first(cpu_online_mask);
	cpu1 = cpumask_next(cpu0, cpu_online_mask);

	for (round = 0; round < CR_ROUNDS; round++) {
		struct ib_slot_qp *sa;

		memset(cr, 0, sizeof(*cr));
		cr->mode = round % 8 == 0 ? CR_CLOSE_FIRST :
			   round % 8 == 7 ? CR_CLOSE_LAST : CR_RACE;
		cr->delay_us = (round % 8) * 15;
		/* A fresh account on QP 0 each round: a closed one stays so. */
		sa = ib_slot_qp_attach(env->pool, env->qp[0], &env->cap[0],
				       CR_SLOTS);
		KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sa);
		cr->sqp = sa;
		for (i = 0; i < CR_SLOTS; i++) {
			cr->held[i] = ib_slot_get(sb);
			KUNIT_ASSERT_NOT_NULL(test, cr->held[i]);
		}
		for (i = 0; i < CR_WAITERS; i++) {
			waiter_init(&cr->tw[i], sa, 1 + (i + round) % 2, i,
				    order, &pos);
			cr->tw[i].w.resume = close_race_resume;
			KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&cr->tw[i].w),
					-EAGAIN);
		}
		test_thread_start(test, &cr->closer, close_race_closer, cr,
				  cpu1);
		test_thread_start(test, &cr->putter, close_race_putter, cr,
				  cpu0);
		KUNIT_ASSERT_NE(test,
				wait_for_completion_timeout(&cr->putter.done,
							    30 * HZ), 0);
		KUNIT_ASSERT_NE(test,
				wait_for_completion_timeout(&cr->closer.done,
							    30 * HZ), 0);

		KUNIT_ASSERT_EQ_MSG(test, cr->unresumed, 0, "round %u", round);
		for (i = 0; i < CR_WAITERS; i++) {
			struct test_waiter *tw = &cr->tw[i];

			KUNIT_ASSERT_EQ_MSG(test, tw->resumed, 1,
					    "round %u waiter %u", round, i);
			if (tw->w.error) {
				KUNIT_ASSERT_EQ(test, tw->w.error, -ESHUTDOWN);
				KUNIT_ASSERT_EQ(test, tw->nr_got, 0);
				shut++;
			} else {
				KUNIT_ASSERT_EQ(test, tw->nr_got, tw->w.nr);
				granted++;
			}
		}
		test_stats(env->pool, &st);
		KUNIT_ASSERT_EQ_MSG(test, st.in_use, 0, "round %u", round);
		KUNIT_ASSERT_EQ(test, st.nr_waiters, 0);
		KUNIT_ASSERT_EQ(test, ib_slot_qp_credits(sa), full_a);
		KUNIT_ASSERT_EQ(test, ib_slot_qp_credits(sb), full_b);
		ib_slot_qp_detach(sa);
		KUNIT_ASSERT_EQ(test, atomic_read(&cr->late), 0);
	}
	kunit_info(test, "%u rounds: %u waiters granted, %u shut out\n",
		   CR_ROUNDS, granted, shut);
	KUNIT_EXPECT_GT(test, granted, 0);
	KUNIT_EXPECT_GT(test, shut, 0);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);
}

/* ---- destroy racing the completion that puts the last slot ---- */

struct destroy_race {
	struct test_thread	destroy;
	/* The destroy returned while done() still ran. */
	bool			early;
};

static struct destroy_race *cur_race;

/*
 * done() puts the last slot, which lets a waiting destroy go on, and then
 * stays 200 ms in the completion, which still counts the post down after
 * done() returns: the destroy must not free the pool, and the slot with
 * it, before then.
 */
static void race_done(struct ib_slot *slot, const struct ib_wc *wc)
{
	struct destroy_race *r = cur_race;
	unsigned int i;

	ib_slot_put(slot);
	/* A completion must not sleep: poll. */
	for (i = 0; i < 200 && !r->early; i++) {
		mdelay(1);
		r->early = completion_done(&r->destroy.done);
	}
}

static void ib_slot_destroy_races_done(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_attr attr = {
		.pd = env->pd, .profile = send_only, .nr_slots = 1,
		.policy = IB_SLOT_BACKPRESSURE, .done = race_done,
	};
	struct ib_qp_init_attr qattr = { .qp_type = IB_QPT_RC };
	struct ib_send_wr send = { .opcode = IB_WR_SEND };
	struct destroy_race race = { };
	struct ib_slot_pool *pool;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct ib_qp *qp;
	u32 nr_cqe = 0;

	pool = ib_slot_pool_create(&attr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, pool);
	KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(pool, 1, &qattr, &nr_cqe), 0);
	env->cq = test_cq(test, nr_cqe);
	qattr.send_cq = env->cq;
	qattr.recv_cq = env->cq;
	qp = ib_create_qp(env->pd, &qattr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, qp);
	test_action(test, ib_destroy_qp_action, qp);
	/* The destroy detaches it. */
	sqp = ib_slot_qp_attach(pool, qp, &qattr.cap, 1);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sqp);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, ib_slot_post(slot, &send), 0);

	cur_race = &race;
	test_thread_start(test, &race.destroy, destroy_fn, pool, -1);
	KUNIT_EXPECT_EQ(test, wait_for_completion_timeout(&race.destroy.done,
							  HZ / 5), 0);
	fake_complete_all(to_fqp(qp));
	test_poll(test);
	KUNIT_EXPECT_FALSE(test, race.early);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&race.destroy.done,
							  10 * HZ), 0);
}

/* ---- misuse: each case provokes a warning on purpose ---- */

static u64 misuse_count(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats ps;

	ib_slot_pool_get_stats(env->pool, &ps);
	return ps.misuse;
}

/* A no-exhaust pool asked for more than its depth: warn, NULL. */
static void ib_slot_misuse_depth(struct kunit *test)
{
	struct ib_slot *a, *b;
	struct ib_slot_qp *sqp;

	test_pool(test, &send_only, 2, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 2);
	a = ib_slot_get(sqp);
	b = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	KUNIT_EXPECT_NULL(test, ib_slot_get(sqp));
	KUNIT_EXPECT_EQ(test, misuse_count(test), 1);
	ib_slot_put(a);
	ib_slot_put(b);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 2);
}

/* A second put warns and changes nothing. */
static void ib_slot_misuse_double_put(struct kunit *test)
{
	struct ib_slot_pool_stats ps;
	struct ib_slot_qp *sqp;
	struct ib_slot *a, *b;

	test_pool(test, &send_only, 2, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 2);
	a = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);
	ib_slot_put(a);
	ib_slot_put(a);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 1);
	ib_slot_pool_get_stats(cur_env->pool, &ps);
	KUNIT_EXPECT_EQ(test, ps.in_use, 0);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 2);
	/* Both slots still come out once each. */
	a = ib_slot_get(sqp);
	b = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	KUNIT_EXPECT_PTR_NE(test, a, b);
	ib_slot_put(a);
	ib_slot_put(b);
}

/* A put with a post outstanding warns and keeps the slot. */
static void ib_slot_misuse_put_posted(struct kunit *test)
{
	struct ib_slot_pool_stats ps;
	struct ib_send_wr send = { .opcode = IB_WR_SEND };
	struct ib_slot_qp *sqp;
	struct ib_slot *a;

	test_pool(test, &send_only, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	a = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_EQ(test, ib_slot_post(a, &send), 0);
	ib_slot_put(a);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 1);
	ib_slot_pool_get_stats(cur_env->pool, &ps);
	KUNIT_EXPECT_EQ(test, ps.in_use, 1);
	/* A second post while one is outstanding is refused too. */
	KUNIT_EXPECT_EQ(test, ib_slot_post(a, &send), -EBUSY);
	fake_complete_all(to_fqp(cur_env->qp[0]));
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(a)->done, 1);
	ib_slot_put(a);
	ib_slot_pool_get_stats(cur_env->pool, &ps);
	KUNIT_EXPECT_EQ(test, ps.in_use, 0);
}

/* A chain longer than the profile allows is refused before the post. */
/*
 * Once a fence is armed the slot is done: posting, fencing again or
 * putting before the fence runs are refused, and the fence still runs.
 */
static void ib_slot_misuse_fence_armed(struct kunit *test)
{
	struct ib_slot_pool_stats ps;
	struct ib_send_wr send;
	struct ib_slot_qp *sqp;
	struct fake_qp *fqp;
	struct ib_slot *a;

	test_pool(test, &one_rkey, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(cur_env->qp[0]);
	a = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, a, &send), 0);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_ASSERT_EQ(test, req_of(a)->done, 1);

	/* Armed until its LOCAL_INV completes. */
	KUNIT_ASSERT_EQ(test, ib_slot_fence(a, NULL, test_fenced), 0);
	KUNIT_EXPECT_EQ(test, ib_slot_post(a, &send), -EBUSY);
	KUNIT_EXPECT_EQ(test, ib_slot_fence(a, NULL, test_fenced), -EBUSY);
	ib_slot_put(a);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 3);
	ib_slot_pool_get_stats(cur_env->pool, &ps);
	KUNIT_EXPECT_EQ(test, ps.in_use, 1);
	KUNIT_EXPECT_EQ(test, req_of(a)->fenced, 0);

	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(a)->fenced, 1);
	KUNIT_EXPECT_EQ(test, req_of(a)->done, 1);
	ib_slot_put(a);
	ib_slot_pool_get_stats(cur_env->pool, &ps);
	KUNIT_EXPECT_EQ(test, ps.in_use, 0);
	KUNIT_EXPECT_EQ(test, ps.local_inv, 1);
}

static void ib_slot_misuse_over_profile(struct kunit *test)
{
	struct ib_send_wr wrs[2] = { };
	struct ib_slot_qp *sqp;
	struct ib_slot *a;

	test_pool(test, &send_only, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	a = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);
	wrs[0].opcode = IB_WR_SEND;
	wrs[0].next = &wrs[1];
	wrs[1].opcode = IB_WR_SEND;
	KUNIT_EXPECT_EQ(test, ib_slot_post(a, wrs), -ENOSPC);
	KUNIT_EXPECT_EQ(test, cur_env->fdev->posted, 0);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 1);
	ib_slot_put(a);
}

/* A tag taken twice, or a QP detached with slots out, is refused. */
static void ib_slot_misuse_tag_and_detach(struct kunit *test)
{
	struct ib_slot_pool_attr attr = {
		.profile = send_only, .nr_slots = 2,
		.policy = IB_SLOT_NO_EXHAUST, .indexed = true,
		.done = test_done,
	};
	struct test_env *env = test->priv;
	struct ib_slot_qp *sqp;
	struct ib_slot *a;

	attr.pd = env->pd;
	env->pool = ib_slot_pool_create(&attr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->pool);
	KUNIT_ASSERT_EQ(test,
			kunit_add_action_or_reset(test,
						  ib_slot_pool_destroy_action,
						  env->pool), 0);
	sqp = test_qp(test, 0, 2);
	a = ib_slot_from_tag(sqp, 1);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_EXPECT_NULL(test, ib_slot_from_tag(sqp, 1));
	KUNIT_EXPECT_NULL(test, ib_slot_from_tag(sqp, 2));
	KUNIT_EXPECT_NULL(test, ib_slot_get(sqp));
	ib_slot_qp_detach(sqp);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 4);
	ib_slot_put(a);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 2);
}

/* A get on a pool being destroyed warns and fails. */
static void ib_slot_misuse_get_dying(struct kunit *test)
{
	struct ib_slot_pool_attr attr = {
		.profile = send_only, .nr_slots = 1,
		.policy = IB_SLOT_BACKPRESSURE, .done = test_done,
	};
	struct test_env *env = test->priv;
	struct ib_qp_init_attr qattr = { .qp_type = IB_QPT_RC };
	struct ib_slot_pool_stats ps;
	struct ib_slot_pool *pool;
	struct test_thread d;
	struct ib_slot_qp *sqp;
	struct ib_slot *a;
	struct ib_qp *qp;
	u32 nr_cqe = 0;
	int i;

	attr.pd = env->pd;
	pool = ib_slot_pool_create(&attr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, pool);
	KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(pool, 2, &qattr, &nr_cqe), 0);
	env->cq = ib_alloc_cq(&env->fdev->ibdev, NULL, nr_cqe, 0,
			      IB_POLL_DIRECT);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->cq);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, ib_free_cq_action,
							env->cq), 0);
	qattr.send_cq = env->cq;
	qattr.recv_cq = env->cq;
	qp = ib_create_qp(env->pd, &qattr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, qp);
	sqp = ib_slot_qp_attach(pool, qp, &qattr.cap, 2);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sqp);
	a = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, a);

	test_thread_start(test, &d, destroy_fn, pool, -1);
	/* Exhausted gets fail quietly; once destroy has begun, they warn. */
	for (i = 0; i < 500; i++) {
		KUNIT_EXPECT_NULL(test, ib_slot_get(sqp));
		ib_slot_pool_get_stats(pool, &ps);
		if (ps.misuse)
			break;
		msleep(20);
	}
	ib_slot_pool_get_stats(pool, &ps);
	KUNIT_EXPECT_EQ(test, ps.misuse, 1);
	KUNIT_EXPECT_EQ(test, ps.in_use, 1);
	ib_slot_put(a);
	KUNIT_EXPECT_NE(test, wait_for_completion_timeout(&d.done, 10 * HZ), 0);
	ib_destroy_qp(qp);
}

/* ---- what the ULP conversions need ---- */

/*
 * An SRP login with max_sect=131072 on a device without SG_GAPS: 34 rkey
 * MRs per command, registered in one post and invalidated by one fence.
 */
static void ib_slot_many_mrs(struct kunit *test)
{
	struct ib_slot_profile srp = {
		.nr_rkey_mrs = 34, .max_pages_per_mr = 256, .nr_sends = 1,
	};
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct ib_send_wr send;
	struct ib_slot_cost cost;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;

	KUNIT_ASSERT_EQ(test, ib_slot_profile_cost(&env->fdev->ibdev, &srp,
						   &cost), 0);
	KUNIT_EXPECT_EQ(test, cost.sqes, 34 * 2 + 1);
	srp.nr_rkey_mrs = IB_SLOT_MAX_MRS + 1;
	KUNIT_EXPECT_EQ(test, ib_slot_profile_cost(&env->fdev->ibdev, &srp,
						   &cost), -EINVAL);
	srp.nr_rkey_mrs = 34;

	test_pool(test, &srp, 2, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 2);
	fqp = to_fqp(env->qp[0]);
	KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs, 2 * 34);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, slot->nr_mrs, 34);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	/* One doorbell: 34 REG_MRs, then the SEND, only it signaled. */
	KUNIT_EXPECT_EQ(test, env->fdev->reg_wrs, 34);
	KUNIT_EXPECT_EQ(test, fqp->tail, 35);
	KUNIT_EXPECT_TRUE(test, fqp->ring[34].signaled);
	KUNIT_EXPECT_FALSE(test, fqp->ring[33].signaled);
	KUNIT_EXPECT_EQ(test, fqp->ring[33].key, ib_slot_rkey(slot, 33));
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);

	KUNIT_ASSERT_EQ(test, ib_slot_fence(slot, NULL, test_fenced), 0);
	KUNIT_EXPECT_EQ(test, env->fdev->posted_inv, 34);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 1);
	ib_slot_put(slot);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.local_inv, 34);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);
	KUNIT_EXPECT_EQ(test, env->fdev->sq_overflow, 0);
	KUNIT_EXPECT_EQ(test, env->fdev->cq_overflow, 0);
}

/* A pool of @p allocates MRs of @type and registers them with @page_size. */
static void check_mr_reg(struct kunit *test, const struct ib_slot_profile *p,
			 enum ib_mr_type type, u32 page_size)
{
	struct test_env *env = test->priv;
	struct scatterlist sg;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;

	test_pool(test, p, 1, IB_SLOT_NO_EXHAUST);
	KUNIT_EXPECT_EQ(test, env->fdev->mr_type, type);
	sqp = test_qp(test, 0, 1);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	sg_init_one(&sg, env, 64);
	KUNIT_ASSERT_EQ(test, ib_slot_map_mr(slot, 0, &sg, 1, NULL,
					     IB_ACCESS_REMOTE_READ), 1);
	KUNIT_EXPECT_EQ(test, slot->mrs[0].mr->page_size, page_size);
	ib_slot_put(slot);
}

/* The profile chooses the MR type and the registration page size. */
static void ib_slot_mr_type_page_size(struct kunit *test)
{
	struct ib_slot_profile p = {
		.nr_rkey_mrs = 1, .max_pages_per_mr = 16, .nr_sends = 1,
		.page_shift = 16, .sg_gaps = true,
	};
	struct test_env *env = test->priv;
	struct ib_device *dev = &env->fdev->ibdev;
	struct ib_slot_cost cost;

	dev->attrs.page_size_cap = SZ_4K | SZ_64K;
	/* No SG_GAPS on this device yet. */
	KUNIT_EXPECT_EQ(test, ib_slot_profile_cost(dev, &p, &cost), -EINVAL);
	dev->attrs.kernel_cap_flags |= IBK_SG_GAPS_REG;
	KUNIT_EXPECT_EQ(test, ib_slot_profile_cost(dev, &p, &cost), 0);
	p.page_shift = 13;
	KUNIT_EXPECT_EQ(test, ib_slot_profile_cost(dev, &p, &cost), -EINVAL);
	p.page_shift = 11;
	KUNIT_EXPECT_EQ(test, ib_slot_profile_cost(dev, &p, &cost), -EINVAL);
	p.page_shift = 16;
	p.integrity = true;
	KUNIT_EXPECT_EQ(test, ib_slot_profile_cost(dev, &p, &cost), -EINVAL);
	p.integrity = false;

	check_mr_reg(test, &p, IB_MR_TYPE_SG_GAPS, SZ_64K);
}

/* The default is what every ULP used before: PAGE_SIZE, MEM_REG. */
static void ib_slot_mr_default_type(struct kunit *test)
{
	check_mr_reg(test, &one_rkey, IB_MR_TYPE_MEM_REG, PAGE_SIZE);
}

/* A ULP that kept only the invalidated rkey fences with it. */
static void ib_slot_fence_by_rkey(struct kunit *test)
{
	struct ib_slot_profile two = {
		.nr_rkey_mrs = 2, .max_pages_per_mr = 16, .nr_sends = 1,
	};
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct ib_send_wr send;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;
	struct fake_qp *fqp;

	test_pool(test, &two, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	fqp = to_fqp(env->qp[0]);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	KUNIT_ASSERT_EQ(test, post_reg_send(test, slot, &send), 0);
	fake_complete_all(fqp);
	test_poll(test);

	KUNIT_ASSERT_EQ(test, ib_slot_fence_rkey(slot, ib_slot_rkey(slot, 1),
						 test_fenced), 0);
	/* Only MR 0 is invalidated locally. */
	KUNIT_EXPECT_EQ(test, env->fdev->posted_inv, 1);
	KUNIT_EXPECT_EQ(test, fqp->ring[3].opcode, IB_WR_LOCAL_INV);
	KUNIT_EXPECT_EQ(test, fqp->ring[3].inv_rkey, ib_slot_rkey(slot, 0));
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 0);
	fake_complete_all(fqp);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->fenced, 1);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.remote_inv, 1);
	KUNIT_EXPECT_EQ(test, st.local_inv, 1);
	ib_slot_put(slot);
}

/* Messages with no tag of the ULP take reserved slots, quietly failing. */
static void ib_slot_reserved_tags(struct kunit *test)
{
	struct ib_slot_pool_attr attr = {
		.profile = one_rkey, .nr_slots = 4, .nr_reserved = 2,
		.policy = IB_SLOT_NO_EXHAUST, .done = test_done,
	};
	struct test_env *env = test->priv;
	struct ib_slot *tags[4], *r0, *r1;
	struct ib_slot_pool_stats st;
	struct ib_slot_qp *sqp;
	int i;

	/* Only indexed pools have a tag space to reserve beyond. */
	attr.pd = env->pd;
	KUNIT_EXPECT_EQ(test, PTR_ERR(ib_slot_pool_create(&attr)), -EINVAL);

	env->pool = NULL;
	attr.indexed = true;
	attr.priv_size = sizeof(struct test_req);
	env->pool = ib_slot_pool_create(&attr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->pool);
	test_action(test, ib_slot_pool_destroy_action, env->pool);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.nr_slots, 6);
	KUNIT_EXPECT_EQ(test, st.nr_reserved, 2);
	sqp = test_qp(test, 0, 6);

	for (i = 0; i < 4; i++) {
		tags[i] = ib_slot_from_tag(sqp, i);
		KUNIT_ASSERT_NOT_NULL(test, tags[i]);
	}
	r0 = ib_slot_get_reserved(sqp);
	r1 = ib_slot_get_reserved(sqp);
	KUNIT_ASSERT_NOT_NULL(test, r0);
	KUNIT_ASSERT_NOT_NULL(test, r1);
	KUNIT_EXPECT_GE(test, min(r0->tag, r1->tag), 4);
	KUNIT_EXPECT_NE(test, r0->tag, r1->tag);
	KUNIT_EXPECT_EQ(test, r0->nr_mrs, 1);
	/* All reserved slots out: no warning, no misuse, just none. */
	KUNIT_EXPECT_NULL(test, ib_slot_get_reserved(sqp));
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 6);
	KUNIT_EXPECT_EQ(test, st.misuse, 0);
	KUNIT_EXPECT_EQ(test, st.exhausted, 1);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 0);

	ib_slot_put(r1);
	KUNIT_EXPECT_PTR_EQ(test, ib_slot_get_reserved(sqp), r1);
	ib_slot_put(r0);
	ib_slot_put(r1);
	for (i = 0; i < 4; i++)
		ib_slot_put(tags[i]);
	expect_idle(test, env->pool);
}

/*
 * Two pools on one QP, sized together: a request pool with MRs and an
 * MR-less side pool.  Full, then flushed, the Send Queue and the exactly
 * sized CQ hold every WR and every completion.
 */
static void ib_slot_pools_share_qp(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_qp_init_attr attr = { .qp_type = IB_QPT_RC };
	struct ib_slot_pool *reqs, *side;
	struct ib_send_wr send[6];
	struct ib_slot *slots[6];
	struct ib_slot_qp *sr, *ss;
	struct fake_qp *fqp;
	u32 nr_cqe = 0;
	int i;

	side = test_pool(test, &send_only, 2, IB_SLOT_BACKPRESSURE);
	reqs = test_pool(test, &one_rkey, 4, IB_SLOT_NO_EXHAUST);
	KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(reqs, 4, &attr, &nr_cqe), 0);
	KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(side, 2, &attr, &nr_cqe), 0);
	/* The drain entry once, not once per pool. */
	KUNIT_EXPECT_EQ(test, attr.cap.max_send_wr, 4 * 3 + 2 * 1 + 1);
	KUNIT_EXPECT_EQ(test, attr.cap.max_recv_wr, 1);
	KUNIT_EXPECT_EQ(test, nr_cqe, 4 * 3 + 2 * 1 + 2);
	fqp = test_qp_of(test, &attr, nr_cqe);
	sr = ib_slot_qp_attach(reqs, env->qp[0], &attr.cap, 4);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, sr);
	test_action(test, ib_slot_qp_detach_action, sr);
	ss = ib_slot_qp_attach(side, env->qp[0], &attr.cap, 2);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ss);
	test_action(test, ib_slot_qp_detach_action, ss);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sr), 12);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(ss), 2);

	for (i = 0; i < 6; i++) {
		slots[i] = ib_slot_get(i < 4 ? sr : ss);
		KUNIT_ASSERT_NOT_NULL(test, slots[i]);
		if (i < 4) {
			KUNIT_ASSERT_EQ(test, post_reg_send(test, slots[i],
							    &send[i]), 0);
		} else {
			send[i] = (struct ib_send_wr){ .opcode = IB_WR_SEND };
			KUNIT_ASSERT_EQ(test, ib_slot_post(slots[i], &send[i]),
					0);
		}
	}
	/* The side pool is at its share: the request pool's room is its own. */
	KUNIT_EXPECT_NULL(test, ib_slot_get(ss));
	fake_fail(fqp, IB_WC_RETRY_EXC_ERR);
	test_poll(test);
	for (i = 0; i < 6; i++) {
		KUNIT_EXPECT_EQ(test, req_of(slots[i])->done, 1);
		ib_slot_put(slots[i]);
	}
	KUNIT_EXPECT_EQ(test, env->fdev->sq_overflow, 0);
	KUNIT_EXPECT_EQ(test, env->fdev->cq_overflow, 0);
	env->pool = side;
}

/*
 * The device grants a larger Send Queue than asked (rxe and mlx5 round
 * up): the QP still holds only the slots its CQ was sized for, so a flush
 * cannot overflow that CQ.
 */
static void ib_slot_share_bounded_by_caps(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr send[7];
	struct ib_slot *slots[7];
	struct ib_slot_qp *sqp;
	struct fake_qp *fqp;
	int i, got = 0;

	env->fdev->sq_grant_round = true;
	test_pool(test, &send_only, 8, IB_SLOT_BACKPRESSURE);
	/* 4 slots and the drain ask for 5 entries; the device grants 8. */
	sqp = test_qp(test, 0, 4);
	fqp = to_fqp(env->qp[0]);
	KUNIT_EXPECT_EQ(test, fqp->cap, 8);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 4);
	for (i = 0; i < 7; i++) {
		slots[i] = ib_slot_get(sqp);
		if (!slots[i])
			continue;
		got++;
		send[i] = (struct ib_send_wr){ .opcode = IB_WR_SEND };
		KUNIT_EXPECT_EQ(test, ib_slot_post(slots[i], &send[i]), 0);
	}
	KUNIT_EXPECT_EQ(test, got, 4);
	fake_fail(fqp, IB_WC_RETRY_EXC_ERR);
	test_poll(test);
	KUNIT_EXPECT_EQ(test, env->fdev->cq_overflow, 0);
	for (i = 0; i < 7; i++)
		if (slots[i])
			ib_slot_put(slots[i]);
}

/*
 * A waiter stuck on its own QP's share holds back that QP only:
 * another QP's gets still take free slots without queueing.
 */
static void ib_slot_share_waiter_local(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_slot *a[2], *b[2];
	struct ib_slot_pool_stats st;
	struct ib_slot_qp *sa, *sb;
	struct test_waiter tw;
	int order[1], pos = 0;
	int i;

	test_pool(test, &send_only, 8, IB_SLOT_BACKPRESSURE);
	sa = test_qp(test, 0, 2);
	sb = test_qp(test, 1, 2);
	for (i = 0; i < 2; i++) {
		a[i] = ib_slot_get(sa);
		KUNIT_ASSERT_NOT_NULL(test, a[i]);
	}
	waiter_init(&tw, sa, 1, 0, order, &pos);
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&tw.w), -EAGAIN);
	KUNIT_EXPECT_TRUE(test, ib_slot_qp_has_waiters(sa));
	KUNIT_EXPECT_FALSE(test, ib_slot_qp_has_waiters(sb));
	/* Its own QP's next get queues behind it. */
	KUNIT_EXPECT_NULL(test, ib_slot_get(sa));

	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.exhausted, 2);
	for (i = 0; i < 2; i++) {
		b[i] = ib_slot_get(sb);
		KUNIT_EXPECT_NOT_NULL(test, b[i]);
	}
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.exhausted, 2);

	ib_slot_put(a[0]);
	KUNIT_EXPECT_EQ(test, tw.resumed, 1);
	KUNIT_EXPECT_FALSE(test, ib_slot_qp_has_waiters(sa));
	put_all(&tw);
	ib_slot_put(a[1]);
	for (i = 0; i < 2; i++)
		if (b[i])
			ib_slot_put(b[i]);
}

/*
 * Costs are the pool's, computed for an RC QP: a QP whose WRs cost more
 * (an XRC initiator's REG_MR on mlx5) is refused rather than overrun.
 */
static void ib_slot_qp_type_costs(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_qp_init_attr attr = { .qp_type = IB_QPT_XRC_INI };
	struct ib_slot_qp *sqp;
	u32 nr_cqe = 0;

	env->fdev->xrc_costs_more = true;
	test_pool(test, &one_rkey, 2, IB_SLOT_NO_EXHAUST);
	KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(env->pool, 2, &attr, &nr_cqe), 0);
	test_qp_of(test, &attr, nr_cqe);
	sqp = ib_slot_qp_attach(env->pool, env->qp[0], &attr.cap, 2);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(sqp), -EINVAL);
	if (!IS_ERR(sqp))
		ib_slot_qp_detach(sqp);
	/* The same QP type costing what an RC QP costs attaches. */
	env->fdev->xrc_costs_more = false;
	sqp = ib_slot_qp_attach(env->pool, env->qp[0], &attr.cap, 2);
	KUNIT_EXPECT_FALSE(test, IS_ERR(sqp));
	if (!IS_ERR(sqp))
		ib_slot_qp_detach(sqp);
}

/*
 * The costs of a QP are those of the caps asked for: a device that grants
 * more SGEs than asked sized the WQE for what was asked, and the larger
 * granted caps would hide what a WR really costs there.
 */
static void ib_slot_qp_costs_as_asked(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_qp_init_attr attr = { .qp_type = IB_QPT_XRC_INI };
	struct ib_slot_qp *sqp;
	u32 nr_cqe = 0;

	env->fdev->xrc_costs_more = true;
	env->fdev->grant_sge = 16;
	test_pool(test, &one_rkey, 2, IB_SLOT_NO_EXHAUST);
	KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(env->pool, 2, &attr, &nr_cqe), 0);
	test_qp_of(test, &attr, nr_cqe);
	KUNIT_ASSERT_EQ(test, attr.cap.max_send_sge, 16);
	sqp = ib_slot_qp_attach(env->pool, env->qp[0], &attr.cap, 2);
	KUNIT_EXPECT_EQ(test, PTR_ERR_OR_ZERO(sqp), -EINVAL);
	if (!IS_ERR(sqp))
		ib_slot_qp_detach(sqp);
}

/*
 * A QP that cannot post a WR of the pool's slots at all is refused: a UC
 * QP has no REG_MR or LOCAL_INV for the slots of an rkey pool.  Slots
 * that only send attach.
 */
static void ib_slot_qp_cannot_post(struct kunit *test)
{
	static const struct {
		const struct ib_slot_profile *profile;
		int ret;
	} cases[] = {
		{ &one_rkey, -EINVAL },
		{ &send_only, 0 },
	};
	struct test_env *env = test->priv;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct ib_qp_init_attr attr = { .qp_type = IB_QPT_UC };
		struct ib_slot_pool *pool;
		struct ib_slot_qp *sqp;
		u32 nr_cqe = 0;

		pool = test_pool(test, cases[i].profile, 2, IB_SLOT_NO_EXHAUST);
		KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(pool, 2, &attr, &nr_cqe),
				0);
		test_qp_of(test, &attr, nr_cqe);
		sqp = ib_slot_qp_attach(pool, env->qp[0], &attr.cap, 2);
		KUNIT_EXPECT_EQ_MSG(test, PTR_ERR_OR_ZERO(sqp), cases[i].ret,
				    "profile %u", i);
		if (!IS_ERR(sqp))
			ib_slot_qp_detach(sqp);
	}
}

/*
 * Every allocation of pool create and QP attach fails in turn (fail-nth):
 * each failure gives -ENOMEM and leaves no MR behind; only debugfs may
 * fail quietly.
 */
static void ib_slot_create_fail_nth(struct kunit *test)
{
#ifdef CONFIG_FAULT_INJECTION
	struct test_env *env = test->priv;
	struct ib_slot_pool_attr attr = {
		.pd = env->pd, .profile = one_rkey, .nr_slots = 4,
		.policy = IB_SLOT_BACKPRESSURE, .priv_size = 64,
		.name = "nth", .done = test_done,
	};
	struct ib_qp_init_attr qattr = { .qp_type = IB_QPT_RC };
	unsigned int n, left, failed = 0, quiet = 0;
	struct ib_slot_pool *pool;
	struct ib_slot_qp *sqp;
	u32 nr_cqe = 0;

	/* A QP to attach to, sized by a pool made without faults. */
	pool = test_pool(test, &one_rkey, 4, IB_SLOT_BACKPRESSURE);
	KUNIT_ASSERT_EQ(test, ib_slot_qp_caps(pool, 4, &qattr, &nr_cqe), 0);
	env->cq = test_cq(test, nr_cqe);
	qattr.send_cq = env->cq;
	qattr.recv_cq = env->cq;
	env->qp[0] = ib_create_qp(env->pd, &qattr);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, env->qp[0]);
	test_action(test, ib_destroy_qp_action, env->qp[0]);

	for (n = 1; n < 1000; n++) {
		unsigned int mrs = env->fdev->nr_mrs;

		sqp = NULL;
		WRITE_ONCE(current->fail_nth, n);
		pool = ib_slot_pool_create(&attr);
		if (!IS_ERR(pool))
			sqp = ib_slot_qp_attach(pool, env->qp[0], &qattr.cap, 4);
		left = READ_ONCE(current->fail_nth);
		WRITE_ONCE(current->fail_nth, 0);
		if (IS_ERR(pool)) {
			KUNIT_EXPECT_EQ(test, PTR_ERR(pool), -ENOMEM);
			KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs, mrs);
			failed++;
			continue;
		}
		if (IS_ERR(sqp)) {
			KUNIT_EXPECT_EQ(test, PTR_ERR(sqp), -ENOMEM);
			failed++;
		} else {
			ib_slot_qp_detach(sqp);
			/* The nth allocation failed, and nothing noticed. */
			quiet += !left;
		}
		ib_slot_pool_destroy(pool);
		KUNIT_EXPECT_EQ(test, env->fdev->nr_mrs, mrs);
		/* Fewer than n allocations: every one has failed once. */
		if (left)
			break;
	}
	kunit_info(test, "%u allocations: %u failed cleanly, %u (debugfs) quietly\n",
		   n - 1, failed, quiet);
	KUNIT_EXPECT_LT(test, n, 1000);
	KUNIT_EXPECT_GT(test, failed, 4 * one_rkey.nr_rkey_mrs);
#else
	kunit_skip(test, "needs CONFIG_FAULT_INJECTION");
#endif
}

/*
 * A registration the device completes twice (mlx5: REG_MR_INTEGRITY with a
 * PI MR is two signaled UMRs) cannot be a post's signaled tail: done()
 * would run twice.  Refused before the doorbell; followed by a SEND it
 * posts.
 */
static void ib_slot_misuse_multi_cqe_tail(struct kunit *test)
{
	struct ib_slot_profile pi = {
		.nr_rkey_mrs = 1, .max_pages_per_mr = 16, .nr_sends = 1,
		.integrity = true,
	};
	struct test_env *env = test->priv;
	struct ib_slot_pool_stats st;
	struct ib_send_wr send = { .opcode = IB_WR_SEND };
	struct scatterlist sg;
	struct ib_slot_qp *sqp;
	struct ib_slot *slot;

	env->fdev->pi_two_cqes = true;
	test_pool(test, &pi, 1, IB_SLOT_NO_EXHAUST);
	sqp = test_qp(test, 0, 1);
	slot = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, slot);
	sg_init_one(&sg, env, 64);
	map_all(test, slot, &sg);
	KUNIT_EXPECT_EQ(test, ib_slot_post(slot, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, env->fdev->posted, 0);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.misuse, 1);
	KUNIT_EXPECT_EQ(test, ib_slot_post(slot, &send), 0);
	fake_complete_all(to_fqp(env->qp[0]));
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(slot)->done, 1);
	ib_slot_put(slot);
}

/*
 * A slot granted behind a lead (ib_slot_get_nr()) lends it its credits: it
 * neither posts, maps, fences nor goes back on its own, and stays held
 * until the lead's put returns it with the lead.  The lead does not fence
 * either.
 */
static void ib_slot_misuse_follower(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr send = { .opcode = IB_WR_SEND };
	struct ib_slot *lead, *f1, *f2, *slots[3];
	struct ib_slot_pool_stats st;
	struct scatterlist sg;
	struct ib_slot_qp *sqp;
	int i;

	sg_init_one(&sg, env, 64);
	test_pool(test, &one_rkey, 3, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 3);
	KUNIT_ASSERT_EQ(test, ib_slot_get_nr(sqp, 3, &lead), 0);
	f1 = lead->joined;
	KUNIT_ASSERT_NOT_NULL(test, f1);
	f2 = f1->joined;
	KUNIT_ASSERT_NOT_NULL(test, f2);
	KUNIT_ASSERT_NULL(test, f2->joined);

	KUNIT_EXPECT_EQ(test, ib_slot_post(f1, &send), -EBUSY);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 1);
	KUNIT_EXPECT_EQ(test, env->fdev->posted, 0);
	ib_slot_put(f2);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 2);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 3);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 0);
	KUNIT_EXPECT_PTR_EQ(test, f1->joined, f2);
	KUNIT_EXPECT_EQ(test, ib_slot_map_mr(f1, 0, &sg, 1, NULL,
					     IB_ACCESS_REMOTE_READ), -EBUSY);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 3);
	KUNIT_EXPECT_EQ(test, ib_slot_fence(f2, NULL, test_fenced), -EBUSY);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 4);
	KUNIT_EXPECT_EQ(test, ib_slot_fence(lead, NULL, test_fenced), -EBUSY);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 5);
	KUNIT_EXPECT_EQ(test, req_of(f2)->fenced + req_of(lead)->fenced, 0);

	/* The lead posts with the room of all three. */
	KUNIT_EXPECT_EQ(test, ib_slot_room(lead), 9);
	KUNIT_ASSERT_EQ(test, ib_slot_post(lead, &send), 0);
	fake_complete_all(to_fqp(env->qp[0]));
	test_poll(test);
	ib_slot_put(lead);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, st.misuse, 5);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 9);

	/* Put with its lead: putting it again is a double put. */
	ib_slot_put(f1);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.misuse, 6);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 9);

	/* Back in the pool as slots of their own. */
	for (i = 0; i < 3; i++) {
		slots[i] = ib_slot_get(sqp);
		KUNIT_ASSERT_NOT_NULL(test, slots[i]);
		KUNIT_EXPECT_NULL(test, slots[i]->joined);
	}
	for (i = 0; i < 3; i++)
		ib_slot_put(slots[i]);
	test_stats(env->pool, &st);
	KUNIT_EXPECT_EQ(test, st.in_use, 0);
	KUNIT_EXPECT_EQ(test, st.misuse, 6);
}

/* A lead posts at most the units of its slots together: beyond, nothing. */
static void ib_slot_misuse_lead_room(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct ib_send_wr wrs[10];
	struct ib_slot_qp *sqp;
	struct ib_slot *lead;

	test_pool(test, &two_writes, 3, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 3);
	KUNIT_ASSERT_EQ(test, ib_slot_get_nr(sqp, 3, &lead), 0);
	write_chain(wrs, 10);
	KUNIT_EXPECT_EQ(test, ib_slot_post(lead, wrs), -ENOSPC);
	KUNIT_EXPECT_EQ(test, env->fdev->posted, 0);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 1);
	KUNIT_EXPECT_EQ(test, ib_slot_room(lead), 9);

	write_chain(wrs, 9);
	KUNIT_ASSERT_EQ(test, ib_slot_post(lead, wrs), 0);
	KUNIT_EXPECT_EQ(test, ib_slot_room(lead), 0);
	fake_complete_all(to_fqp(env->qp[0]));
	test_poll(test);
	KUNIT_EXPECT_EQ(test, req_of(lead)->done, 1);
	ib_slot_put(lead);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_credits(sqp), 9);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 1);
}

/*
 * Quiescing a QP from one of the pool's resumes would wait for itself:
 * it warns, counts a misuse and returns at once.
 */
static void quiesce_resume(struct ib_slot_waiter *w)
{
	ib_slot_qp_quiesce(w->sqp);
	test_resume(w);
}

static void ib_slot_misuse_quiesce_from_resume(struct kunit *test)
{
	struct test_env *env = test->priv;
	struct test_waiter tw;
	struct ib_slot_qp *sqp;
	int order[1], pos = 0;
	struct ib_slot *x;

	env->resume_in_work = true;
	test_pool(test, &send_only, 1, IB_SLOT_BACKPRESSURE);
	sqp = test_qp(test, 0, 1);
	x = ib_slot_get(sqp);
	KUNIT_ASSERT_NOT_NULL(test, x);
	waiter_init(&tw, sqp, 1, 0, order, &pos);
	tw.w.resume = quiesce_resume;
	KUNIT_ASSERT_EQ(test, ib_slot_get_or_wait(&tw.w), -EAGAIN);
	ib_slot_put(x);
	KUNIT_ASSERT_TRUE(test, test_wait_set(&tw.resumed));
	KUNIT_EXPECT_EQ(test, tw.resumed, 1);
	KUNIT_EXPECT_PTR_NE(test, tw.task, current);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 1);
	put_all(&tw);
	/* From the test's own task it waits, for nothing, and is no misuse. */
	ib_slot_qp_close(sqp);
	ib_slot_qp_quiesce(sqp);
	KUNIT_EXPECT_EQ(test, misuse_count(test), 1);
}

/* rdma_rw sizes its contexts by port: caps without one are refused. */
static void ib_slot_misuse_rw_no_port(struct kunit *test)
{
	struct ib_qp_init_attr attr = { .qp_type = IB_QPT_RC };
	struct ib_slot_pool *pool;
	u32 nr_cqe = 0;

	test_ports(test);
	pool = test_pool(test, &rw_lkey, 2, IB_SLOT_NO_EXHAUST);
	KUNIT_EXPECT_EQ(test, ib_slot_qp_caps(pool, 2, &attr, &nr_cqe),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, attr.cap.max_send_wr, 0);
	KUNIT_EXPECT_EQ(test, attr.cap.max_rdma_ctxs, 0);
	KUNIT_EXPECT_EQ(test, nr_cqe, 0);
}

static struct kunit_case ib_slot_test_cases[] = {
	KUNIT_CASE(ib_slot_no_exhaust_depth),
	KUNIT_CASE(ib_slot_indexed_tags),
	KUNIT_CASE(ib_slot_qp_caps_granted),
	KUNIT_CASE(ib_slot_map_without_post),
	KUNIT_CASE(ib_slot_map_head_of_entry),
	KUNIT_CASE(ib_slot_unsignaled_credit),
	KUNIT_CASE(ib_slot_flush_balances),
	KUNIT_CASE(ib_slot_first_error),
	KUNIT_CASE(ib_slot_backpressure_fifo),
	KUNIT_CASE(ib_slot_large_not_starved),
	KUNIT_CASE(ib_slot_waiter_lead_fifo),
	KUNIT_CASE(ib_slot_get_nr_all_or_nothing),
	KUNIT_CASE(ib_slot_get_nr_joined),
	KUNIT_CASE(ib_slot_get_nr_no_alloc),
	KUNIT_CASE(ib_slot_cancel),
	KUNIT_CASE(ib_slot_close_refuses),
	KUNIT_CASE(ib_slot_sleeping_get),
	KUNIT_CASE(ib_slot_qp_share),
	KUNIT_CASE(ib_slot_tag_cache_steal),
	KUNIT_CASE(ib_slot_credits_per_qp),
	KUNIT_CASE(ib_slot_fence_remote),
	KUNIT_CASE(ib_slot_fence_local),
	KUNIT_CASE(ib_slot_fence_bogus_remote),
	KUNIT_CASE(ib_slot_fence_waits_for_send),
	KUNIT_CASE(ib_slot_fence_retires_post),
	KUNIT_CASE(ib_slot_retired_post_fails),
	KUNIT_CASE(ib_slot_retired_post_peer_inv),
	KUNIT_CASE(ib_slot_reuse_after_flush),
	KUNIT_CASE(ib_slot_provider_units),
	KUNIT_CASE(ib_slot_join_posts_once),
	KUNIT_CASE(ib_slot_demand_units),
	KUNIT_CASE(ib_slot_rw_mrs_caps),
	KUNIT_CASE_PARAM(ib_slot_demand_rw_matches_rdma_rw,
			 rw_dev_gen_params),
	KUNIT_CASE(ib_slot_demand_mrs_bound),
	KUNIT_CASE_SLOW(ib_slot_destroy_waits),
	{}
};

static struct kunit_case ib_slot_lifetime_test_cases[] = {
	KUNIT_CASE(ib_slot_post_races_completion),
	KUNIT_CASE(ib_slot_partial_post),
	KUNIT_CASE(ib_slot_partial_post_flushes),
	KUNIT_CASE(ib_slot_cancel_defers_resume),
	KUNIT_CASE(ib_slot_detach_cancels_waiters),
	KUNIT_CASE(ib_slot_close_shuts_out_queued_and_granted),
	KUNIT_CASE(ib_slot_quiesce_waits_running_resume),
	KUNIT_CASE(ib_slot_get_or_wait_keeps_qp_order),
	KUNIT_CASE(ib_slot_get_wait_killed),
	KUNIT_CASE(ib_slot_fence_flushed_counts),
	KUNIT_CASE(ib_slot_fence_dead_device),
	KUNIT_CASE(ib_slot_fence_drained),
	KUNIT_CASE(ib_slot_destroy_races_done),
	{}
};

static struct kunit_case ib_slot_api_test_cases[] = {
	KUNIT_CASE(ib_slot_many_mrs),
	KUNIT_CASE(ib_slot_mr_type_page_size),
	KUNIT_CASE(ib_slot_mr_default_type),
	KUNIT_CASE(ib_slot_fence_by_rkey),
	KUNIT_CASE(ib_slot_reserved_tags),
	KUNIT_CASE(ib_slot_pools_share_qp),
	KUNIT_CASE(ib_slot_share_bounded_by_caps),
	KUNIT_CASE(ib_slot_share_waiter_local),
	KUNIT_CASE(ib_slot_qp_type_costs),
	KUNIT_CASE(ib_slot_qp_costs_as_asked),
	KUNIT_CASE(ib_slot_qp_cannot_post),
	KUNIT_CASE(ib_slot_create_fail_nth),
	{}
};

static struct kunit_suite ib_slot_api_test_suite = {
	.name = "ib_slot_api",
	.init = ib_slot_test_init,
	.test_cases = ib_slot_api_test_cases,
};

static struct kunit_suite ib_slot_lifetime_test_suite = {
	.name = "ib_slot_lifetime",
	.init = ib_slot_test_init,
	.test_cases = ib_slot_lifetime_test_cases,
};

static struct kunit_suite ib_slot_test_suite = {
	.name = "ib_slot",
	.init = ib_slot_test_init,
	.test_cases = ib_slot_test_cases,
};

static struct kunit_case ib_slot_cost_test_cases[] = {
	KUNIT_CASE_PARAM(ib_slot_cost_rules, ib_slot_cost_gen_params),
	KUNIT_CASE_PARAM(ib_slot_chain_fits, ib_slot_cost_gen_params),
	{}
};

static struct kunit_suite ib_slot_cost_test_suite = {
	.name = "ib_slot_cost",
	.init = ib_slot_test_init,
	.test_cases = ib_slot_cost_test_cases,
};

static struct kunit_case ib_slot_stress_test_cases[] = {
	KUNIT_CASE_SLOW(ib_slot_stress_two_qps),
	KUNIT_CASE_SLOW(ib_slot_stress_tag_cache),
	KUNIT_CASE_SLOW(ib_slot_stress_waiters_two_cpus),
	KUNIT_CASE_SLOW(ib_slot_stress_close_races_grant),
	{}
};

static struct kunit_suite ib_slot_stress_test_suite = {
	.name = "ib_slot_stress",
	.init = ib_slot_test_init,
	.test_cases = ib_slot_stress_test_cases,
};

/*
 * Every case here warns on purpose: run this suite with panic_on_warn=0,
 * and the others with panic_on_warn=1.
 */
static struct kunit_case ib_slot_misuse_test_cases[] = {
	KUNIT_CASE(ib_slot_misuse_depth),
	KUNIT_CASE(ib_slot_misuse_double_put),
	KUNIT_CASE(ib_slot_misuse_put_posted),
	KUNIT_CASE(ib_slot_misuse_fence_armed),
	KUNIT_CASE(ib_slot_misuse_over_profile),
	KUNIT_CASE(ib_slot_misuse_tag_and_detach),
	KUNIT_CASE_SLOW(ib_slot_misuse_get_dying),
	KUNIT_CASE(ib_slot_misuse_multi_cqe_tail),
	KUNIT_CASE(ib_slot_misuse_follower),
	KUNIT_CASE(ib_slot_misuse_lead_room),
	KUNIT_CASE(ib_slot_misuse_quiesce_from_resume),
	KUNIT_CASE(ib_slot_misuse_rw_no_port),
	{}
};

static struct kunit_suite ib_slot_misuse_test_suite = {
	.name = "ib_slot_misuse",
	.init = ib_slot_test_init,
	.test_cases = ib_slot_misuse_test_cases,
};

kunit_test_suites(&ib_slot_test_suite, &ib_slot_cost_test_suite,
		  &ib_slot_stress_test_suite, &ib_slot_lifetime_test_suite,
		  &ib_slot_api_test_suite,
		  &ib_slot_misuse_test_suite);

MODULE_DESCRIPTION("KUnit tests for ib_slot pools");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);
