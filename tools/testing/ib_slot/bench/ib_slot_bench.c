// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fast-path microbenchmark of ib_slot against the primitives ULPs combine
 * today, on a fake ib_device that is never registered (the pattern of the
 * ib_slot KUnit suites).  Modelled on lib/test_objpool.c: everything runs
 * at insmod in kthreads bound to CPUs 0..threads-1, one line per operation
 * goes to the kernel log, and init fails with -EAGAIN so that the module
 * never stays loaded.
 *
 * The device's post_send accepts every chain and does nothing else, so
 * what is timed is the software around the doorbell: pool, credits, the
 * completion entry stamped on the WRs and its callback.  Run it with
 * "qemu -icount shift=0" to get the guest's clock, and so the figures,
 * from the instruction count.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/sbitmap.h>
#include <rdma/ib_slot.h>
#include <rdma/mr_pool.h>

/* Slots, MRs and tags in every pool; the indexed tags wrap with this mask. */
#define BENCH_DEPTH	64
/* Send Queue entries one request charges: REG_MR, LOCAL_INV and a SEND. */
#define BENCH_SQES	3
#define BENCH_MAX_THREADS	2

static unsigned int iters = 1000000;
module_param(iters, uint, 0444);
MODULE_PARM_DESC(iters, "operations timed per benchmark and thread (default 1000000)");

static unsigned int threads = 1;
module_param(threads, uint, 0444);
MODULE_PARM_DESC(threads, "threads sharing each pool, 1 or 2 (default 1)");

static bool lockdep;
module_param(lockdep, bool, 0444);
MODULE_PARM_DESC(lockdep, "keep lockdep validation on while timing (default off)");

struct bench_dev {
	struct ib_device	ibdev;
};

struct bench_pd {
	struct ib_pd		ibpd;
};

struct bench_cq {
	struct ib_cq		ibcq;
};

struct bench_qp {
	struct ib_qp		ibqp;
};

struct bench_env {
	struct bench_dev	*bdev;
	struct ib_pd		*pd;
	struct ib_cq		*cq;
	struct ib_qp		*mr_qp;		/* owns the ib_mr_pool */
	struct ib_qp		*qp[3];		/* one per slot pool */
	struct ib_slot_pool	*pool[3];
	struct ib_slot_qp	*sqp[3];
	struct sbitmap_queue	sbq;
	bool			sbq_ready;
	atomic_t		credits ____cacheline_aligned_in_smp;
	atomic_t		ready ____cacheline_aligned_in_smp;
};

enum { POOL_INDEXED, POOL_NO_EXHAUST, POOL_BACKPRESSURE };

struct bench_op;

struct bench_thread {
	struct bench_env	*env;
	const struct bench_op	*op;
	unsigned int		id;
	unsigned int		nr;
	u64			ns;
	int			ret;
	struct ib_send_wr	wr;
	struct ib_cqe		cqe;
	struct completion	done;
};

struct bench_op {
	const char	*name;
	int		(*run)(struct bench_thread *t, unsigned int n);
	int		pool;
};

/* Per-slot ULP context: completions seen, to prove the callback ran. */
struct bench_req {
	unsigned long	done;
};

static int bench_alloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

static int bench_dealloc_pd(struct ib_pd *pd, struct ib_udata *udata)
{
	return 0;
}

static int bench_create_cq(struct ib_cq *cq, const struct ib_cq_init_attr *attr,
			   struct uverbs_attr_bundle *attrs)
{
	cq->cqe = attr->cqe;
	return 0;
}

static int bench_destroy_cq(struct ib_cq *cq, struct ib_udata *udata)
{
	return 0;
}

static int bench_poll_cq(struct ib_cq *cq, int num_entries, struct ib_wc *wc)
{
	return 0;
}

static int bench_req_notify_cq(struct ib_cq *cq, enum ib_cq_notify_flags flags)
{
	return 0;
}

static int bench_create_qp(struct ib_qp *qp, struct ib_qp_init_attr *attr,
			   struct ib_udata *udata)
{
	return 0;
}

static int bench_destroy_qp(struct ib_qp *qp, struct ib_udata *udata)
{
	return 0;
}

static struct ib_mr *bench_alloc_mr(struct ib_pd *pd, enum ib_mr_type mr_type,
				    u32 max_num_sg)
{
	struct ib_mr *mr = kzalloc(sizeof(*mr), GFP_KERNEL);

	return mr ?: ERR_PTR(-ENOMEM);
}

static int bench_dereg_mr(struct ib_mr *mr, struct ib_udata *udata)
{
	kfree(mr);
	return 0;
}

/*
 * A Send Queue that never fills: the WRs are accepted and forgotten.  The
 * benchmark completes them itself from the wr_cqe the post stamped.
 */
static int bench_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			   const struct ib_send_wr **bad_wr)
{
	return 0;
}

static const struct ib_device_ops bench_dev_ops = {
	.alloc_mr = bench_alloc_mr,
	.alloc_pd = bench_alloc_pd,
	.create_cq = bench_create_cq,
	.create_qp = bench_create_qp,
	.dealloc_pd = bench_dealloc_pd,
	.dereg_mr = bench_dereg_mr,
	.destroy_cq = bench_destroy_cq,
	.destroy_qp = bench_destroy_qp,
	.poll_cq = bench_poll_cq,
	.post_send = bench_post_send,
	.req_notify_cq = bench_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, bench_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, bench_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, bench_qp, ibqp),
};

/* Deliver the completion of the signaled WR, as __ib_process_cq() does. */
static void bench_complete(struct bench_thread *t, struct ib_qp *qp)
{
	struct ib_wc wc = {
		.wr_cqe = t->wr.wr_cqe,
		.status = IB_WC_SUCCESS,
		.opcode = IB_WC_SEND,
		.qp = qp,
	};

	wc.wr_cqe->done(t->env->cq, &wc);
}

static int bench_mr_pool(struct bench_thread *t, unsigned int n)
{
	struct ib_qp *qp = t->env->mr_qp;
	struct ib_mr *mr;

	while (n--) {
		mr = ib_mr_pool_get(qp, &qp->rdma_mrs);
		if (!mr)
			return -ENOSPC;
		ib_mr_pool_put(qp, &qp->rdma_mrs, mr);
	}
	return 0;
}

/* The Send Queue accounting of svcrdma, srpt and nvmet, around the MR. */
static int bench_mr_pool_credit(struct bench_thread *t, unsigned int n)
{
	struct ib_qp *qp = t->env->mr_qp;
	atomic_t *credits = &t->env->credits;
	struct ib_mr *mr;

	while (n--) {
		if (atomic_sub_return(BENCH_SQES, credits) < 0) {
			atomic_add(BENCH_SQES, credits);
			return -EBUSY;
		}
		mr = ib_mr_pool_get(qp, &qp->rdma_mrs);
		if (!mr) {
			atomic_add(BENCH_SQES, credits);
			return -ENOSPC;
		}
		ib_mr_pool_put(qp, &qp->rdma_mrs, mr);
		atomic_add(BENCH_SQES, credits);
	}
	return 0;
}

static int bench_sbitmap_queue(struct bench_thread *t, unsigned int n)
{
	struct sbitmap_queue *sbq = &t->env->sbq;
	unsigned int cpu;
	int tag;

	while (n--) {
		tag = sbitmap_queue_get(sbq, &cpu);
		if (tag < 0)
			return -ENOSPC;
		sbitmap_queue_clear(sbq, tag, cpu);
	}
	return 0;
}

static void bench_stub_done(struct ib_cq *cq, struct ib_wc *wc)
{
}

/* The floor every slot cycle stands on: the verb call and the callback. */
static int bench_device_stub(struct bench_thread *t, unsigned int n)
{
	struct ib_qp *qp = t->env->mr_qp;
	int ret;

	t->cqe.done = bench_stub_done;
	while (n--) {
		t->wr.wr_cqe = &t->cqe;
		t->wr.send_flags = IB_SEND_SIGNALED;
		ret = ib_post_send(qp, &t->wr, NULL);
		if (ret)
			return ret;
		bench_complete(t, qp);
	}
	return 0;
}

/* One request's life: post (credit check, cqe stamping), completion, put. */
static int bench_slot_cycle(struct bench_thread *t, struct ib_slot *slot)
{
	int ret;

	if (!slot)
		return -ENOSPC;
	ret = ib_slot_post(slot, &t->wr);
	if (ret) {
		ib_slot_put(slot);
		return ret;
	}
	bench_complete(t, t->env->qp[t->op->pool]);
	ib_slot_put(slot);
	return 0;
}

static int bench_slot_indexed(struct bench_thread *t, unsigned int n)
{
	struct ib_slot_qp *sqp = t->env->sqp[POOL_INDEXED];
	unsigned int i, tag;
	int ret;

	for (i = 0; i < n; i++) {
		/* Threads take disjoint tags, as blk-mq hands them out. */
		tag = (i * t->nr + t->id) & (BENCH_DEPTH - 1);
		ret = bench_slot_cycle(t, ib_slot_from_tag(sqp, tag));
		if (ret)
			return ret;
	}
	return 0;
}

static int bench_slot_get(struct bench_thread *t, unsigned int n)
{
	struct ib_slot_qp *sqp = t->env->sqp[t->op->pool];
	int ret;

	while (n--) {
		ret = bench_slot_cycle(t, ib_slot_get(sqp));
		if (ret)
			return ret;
	}
	return 0;
}

/* Get and put alone: the pool and the credits, without the post. */
static int bench_slot_getput_indexed(struct bench_thread *t, unsigned int n)
{
	struct ib_slot_qp *sqp = t->env->sqp[POOL_INDEXED];
	struct ib_slot *slot;
	unsigned int i;

	for (i = 0; i < n; i++) {
		slot = ib_slot_from_tag(sqp, (i * t->nr + t->id) &
					     (BENCH_DEPTH - 1));
		if (!slot)
			return -ENOSPC;
		ib_slot_put(slot);
	}
	return 0;
}

static int bench_slot_getput(struct bench_thread *t, unsigned int n)
{
	struct ib_slot_qp *sqp = t->env->sqp[t->op->pool];
	struct ib_slot *slot;

	while (n--) {
		slot = ib_slot_get(sqp);
		if (!slot)
			return -ENOSPC;
		ib_slot_put(slot);
	}
	return 0;
}

static const struct bench_op bench_ops[] = {
	{ "mr_pool",		bench_mr_pool },
	{ "mr_pool_credit",	bench_mr_pool_credit },
	{ "sbitmap_queue",	bench_sbitmap_queue },
	{ "device_stub",	bench_device_stub },
	{ "getput_indexed",	bench_slot_getput_indexed, POOL_INDEXED },
	{ "getput_backpressure", bench_slot_getput,	POOL_BACKPRESSURE },
	{ "slot_indexed",	bench_slot_indexed,	POOL_INDEXED },
	{ "slot_no_exhaust",	bench_slot_get,		POOL_NO_EXHAUST },
	{ "slot_backpressure",	bench_slot_get,		POOL_BACKPRESSURE },
};

static int bench_thread_fn(void *data)
{
	struct bench_thread *t = data;
	u64 t0;

	/* Warm the caches and the sbitmap hints outside the timed loop. */
	t->ret = t->op->run(t, max(iters / 100, 1000U));
	atomic_inc(&t->env->ready);
	while (atomic_read(&t->env->ready) < t->nr)
		cpu_relax();
	/*
	 * Production kernels have no lockdep; its validation would charge
	 * each spinlock hundreds of instructions and bury the difference
	 * between a locked pool and a lockless one.
	 */
	if (!lockdep)
		lockdep_off();
	t0 = ktime_get_ns();
	if (!t->ret)
		t->ret = t->op->run(t, iters);
	t->ns = ktime_get_ns() - t0;
	if (!lockdep)
		lockdep_on();
	kthread_complete_and_exit(&t->done, 0);
}

static int bench_run(struct bench_env *env, const struct bench_op *op)
{
	struct bench_thread *t;
	struct task_struct *task;
	unsigned int i;
	u64 ns = 0;
	int ret = 0;

	t = kcalloc(threads, sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	atomic_set(&env->ready, 0);
	for (i = 0; i < threads; i++) {
		t[i].env = env;
		t[i].op = op;
		t[i].id = i;
		t[i].nr = threads;
		t[i].wr.opcode = IB_WR_SEND;
		init_completion(&t[i].done);
		task = kthread_create(bench_thread_fn, &t[i], "ib_slot_bench/%u",
				      i);
		if (IS_ERR(task)) {
			/* The others wait at the barrier for this one. */
			atomic_inc(&env->ready);
			ret = PTR_ERR(task);
			complete(&t[i].done);
			continue;
		}
		kthread_bind(task, i);
		wake_up_process(task);
	}
	for (i = 0; i < threads; i++) {
		wait_for_completion(&t[i].done);
		ret = ret ?: t[i].ret;
		ns += t[i].ns;
	}
	if (!ret)
		pr_info("op=%s threads=%u iters=%u ns=%llu ns_per_op=%llu.%03llu\n",
			op->name, threads, iters, ns / threads,
			div_u64(ns, (u64)iters * threads),
			div_u64(ns * 1000, (u64)iters * threads) % 1000);
	else
		pr_err("op=%s failed: %d\n", op->name, ret);
	kfree(t);
	return ret;
}

static void bench_done(struct ib_slot *slot, const struct ib_wc *wc)
{
	struct bench_req *req = ib_slot_priv(slot);

	req->done++;
}

/* Completions of a pool, summed over its slots once all are back. */
static unsigned long bench_pool_done(struct bench_env *env, int pool)
{
	struct ib_slot_qp *sqp = env->sqp[pool];
	struct ib_slot *slots[BENCH_DEPTH];
	struct bench_req *req;
	unsigned long sum = 0;
	unsigned int tag, n;

	/* Hold them all at once, or get would return the same slot again. */
	for (n = 0; n < BENCH_DEPTH; n++) {
		slots[n] = pool == POOL_INDEXED ? ib_slot_from_tag(sqp, n) :
						  ib_slot_get(sqp);
		if (!slots[n])
			break;
		req = ib_slot_priv(slots[n]);
		sum += req->done;
		req->done = 0;
	}
	for (tag = 0; tag < n; tag++)
		ib_slot_put(slots[tag]);
	return n == BENCH_DEPTH ? sum : 0;
}

static struct ib_qp *bench_create_qp_on(struct bench_env *env,
					struct ib_qp_init_attr *attr)
{
	attr->qp_type = IB_QPT_RC;
	attr->send_cq = env->cq;
	attr->recv_cq = env->cq;
	return ib_create_qp(env->pd, attr);
}

static int bench_setup_pool(struct bench_env *env, int i)
{
	struct ib_slot_pool_attr attr = {
		.pd = env->pd,
		.profile = { .nr_rkey_mrs = 1, .max_pages_per_mr = 16,
			     .nr_sends = 1 },
		.nr_slots = BENCH_DEPTH,
		.policy = i == POOL_BACKPRESSURE ? IB_SLOT_BACKPRESSURE :
						   IB_SLOT_NO_EXHAUST,
		.indexed = i == POOL_INDEXED,
		.priv_size = sizeof(struct bench_req),
		.name = "bench",
		.done = bench_done,
	};
	struct ib_qp_init_attr qp_attr = { };
	struct ib_slot_qp *sqp;
	struct ib_qp *qp;
	u32 nr_cqe;
	int ret;

	env->pool[i] = ib_slot_pool_create(&attr);
	if (IS_ERR(env->pool[i])) {
		ret = PTR_ERR(env->pool[i]);
		env->pool[i] = NULL;
		return ret;
	}
	nr_cqe = 0;
	ret = ib_slot_qp_caps(env->pool[i], BENCH_DEPTH, &qp_attr, &nr_cqe);
	if (ret)
		return ret;
	qp = bench_create_qp_on(env, &qp_attr);
	if (IS_ERR(qp))
		return PTR_ERR(qp);
	env->qp[i] = qp;
	sqp = ib_slot_qp_attach(env->pool[i], qp, &qp_attr.cap, BENCH_DEPTH);
	if (IS_ERR(sqp))
		return PTR_ERR(sqp);
	env->sqp[i] = sqp;
	return 0;
}

static void bench_teardown(struct bench_env *env)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(env->pool); i++) {
		ib_slot_qp_detach(env->sqp[i]);
		ib_slot_pool_destroy(env->pool[i]);
		if (env->qp[i])
			ib_destroy_qp(env->qp[i]);
	}
	if (env->mr_qp) {
		ib_mr_pool_destroy(env->mr_qp, &env->mr_qp->rdma_mrs);
		ib_destroy_qp(env->mr_qp);
	}
	if (env->sbq_ready)
		sbitmap_queue_free(&env->sbq);
	if (env->cq)
		ib_free_cq(env->cq);
	if (env->pd)
		ib_dealloc_pd(env->pd);
	ib_dealloc_device(&env->bdev->ibdev);
}

static int bench_setup(struct bench_env *env)
{
	struct ib_qp_init_attr qp_attr = {
		.cap = { .max_send_wr = BENCH_DEPTH * BENCH_SQES,
			 .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ib_device *dev;
	unsigned int i;
	int cpu, ret;

	env->bdev = ib_alloc_device(bench_dev, ibdev);
	if (!env->bdev)
		return -ENOMEM;
	dev = &env->bdev->ibdev;
	ib_set_device_ops(dev, &bench_dev_ops);
	dev->attrs.max_qp_wr = 4096;
	dev->attrs.max_cqe = 4096;
	dev->attrs.max_send_sge = 16;
	dev->attrs.max_fast_reg_page_list_len = 256;
	dev->attrs.kernel_cap_flags = IBK_LOCAL_DMA_LKEY;
	dev->num_comp_vectors = 1;

	env->pd = ib_alloc_pd(dev, 0);
	if (IS_ERR(env->pd)) {
		ret = PTR_ERR(env->pd);
		env->pd = NULL;
		goto err;
	}
	env->cq = ib_alloc_cq(dev, NULL, 4096, 0, IB_POLL_DIRECT);
	if (IS_ERR(env->cq)) {
		ret = PTR_ERR(env->cq);
		env->cq = NULL;
		goto err;
	}
	env->mr_qp = bench_create_qp_on(env, &qp_attr);
	if (IS_ERR(env->mr_qp)) {
		ret = PTR_ERR(env->mr_qp);
		env->mr_qp = NULL;
		goto err;
	}
	ret = ib_mr_pool_init(env->mr_qp, &env->mr_qp->rdma_mrs, BENCH_DEPTH,
			      IB_MR_TYPE_MEM_REG, 16, 0);
	if (ret)
		goto err;
	ret = sbitmap_queue_init_node(&env->sbq, BENCH_DEPTH, -1, false,
				      GFP_KERNEL, NUMA_NO_NODE);
	if (ret)
		goto err;
	/*
	 * sbitmap seeds each CPU's hint at random, and the word it lands in
	 * changes the instructions of every get: start all runs at bit 0.
	 */
	for_each_possible_cpu(cpu)
		per_cpu(*env->sbq.sb.alloc_hint, cpu) = 0;
	env->sbq_ready = true;
	atomic_set(&env->credits, BENCH_DEPTH * BENCH_SQES);
	for (i = 0; i < ARRAY_SIZE(env->pool); i++) {
		ret = bench_setup_pool(env, i);
		if (ret)
			goto err;
	}
	return 0;
err:
	bench_teardown(env);
	return ret;
}

static int __init ib_slot_bench_init(void)
{
	struct bench_env *env;
	unsigned long want, got;
	unsigned int i;
	int ret = 0;

	if (!threads || threads > BENCH_MAX_THREADS || threads > nr_cpu_ids ||
	    !iters)
		return -EINVAL;
	for (i = 0; i < threads; i++)
		if (!cpu_online(i))
			return -EINVAL;
	env = kzalloc(sizeof(*env), GFP_KERNEL);
	if (!env)
		return -ENOMEM;
	ret = bench_setup(env);
	if (ret) {
		pr_err("fake device setup failed: %d\n", ret);
		goto out;
	}
	pr_info("start threads=%u iters=%u lockdep=%s\n",
		threads, iters, lockdep ? "on" : "off");
	for (i = 0; i < ARRAY_SIZE(bench_ops) && !ret; i++)
		ret = bench_run(env, &bench_ops[i]);

	/* Each cycle must have run the pool's done callback exactly once. */
	want = (unsigned long)threads * (iters + max(iters / 100, 1000U));
	for (i = 0; i < ARRAY_SIZE(env->pool) && !ret; i++) {
		got = bench_pool_done(env, i);
		if (got != want) {
			pr_err("pool %u: %lu completions, expected %lu\n",
			       i, got, want);
			ret = -EIO;
		}
	}
	if (!ret)
		pr_info("done\n");
	bench_teardown(env);
out:
	kfree(env);
	/* Nothing to keep loaded: the results are in the log. */
	return ret ?: -EAGAIN;
}
module_init(ib_slot_bench_init);

MODULE_DESCRIPTION("ib_slot fast-path microbenchmark on a fake ib_device");
MODULE_LICENSE("GPL");
