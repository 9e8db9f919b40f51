// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * KUnit tests for the Send Queue sizing of mlx5 kernel QPs, and for the
 * query_qp_budget and get_wr_cost hooks built on it.  The helpers are pure
 * functions of the device caps and the requested QP attributes: no device
 * is needed.
 *
 * The expected values do not come from the helpers under test.  They come
 * from fixed vectors, and from a model kept here of the WQEs the builders
 * in wr.c write, segment by segment, and of the room calc_sq_size()
 * reserves for every WR.  A segment that grows, or a hook that drifts from
 * the layouts modelled here, fails the checks that compare the two.  The
 * last suite asks the builders themselves, on a fake device.
 */
#include <kunit/test.h>
#include <linux/log2.h>
#include <linux/mlx5/qp.h>
#include <linux/prandom.h>
#include "mlx5_ib.h"
#include "qp.h"
#include "wr.h"

MODULE_IMPORT_NS(EXPORTED_FOR_KUNIT_TESTING);

/* Segments the builders write, in bytes; checked by mlx5_ib_test_segments */
enum {
	SEG_CTRL = 16,
	SEG_XRC = 16,
	SEG_RADDR = 16,
	SEG_ATOMIC = 16,
	SEG_DATA = 16,
	SEG_INLINE = 4,		/* inline data header */
	SEG_AV = 48,		/* UD datagram */
	SEG_ETH_PAD = 16,
	SEG_ETH = 16,
	SEG_UMR_CTRL = 48,
	SEG_MKEY = 64,
	SEG_PSV = 16,
	SEG_KLM = 16,
	SEG_SBLOCK_CTRL = 16,
	SEG_SBLOCK_ENTRY = 16,
	SEG_BSF = 64,
};

enum {
	WQE_DS = 16,		/* the unit of a WQE's size */
	WQE_BB = 64,		/* the unit of the ring */
	UMR_INLINE_MAX = 64,	/* descriptors a REG_MR WQE carries inline */
	SIG_WQE_MIN = 576,	/* room an INTEGRITY_EN QP gives every WR */
	SGE_ROOM_MAX = 512,	/* room RC and XRC count SGEs in */
	MAX_SGE = 64,		/* beyond any WQE */
};

#define ALL_FLAGS (IB_QP_CREATE_INTEGRITY_EN |				\
		   IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK |		\
		   IB_QP_CREATE_CROSS_CHANNEL |				\
		   IB_QP_CREATE_MANAGED_SEND |				\
		   IB_QP_CREATE_MANAGED_RECV |				\
		   IB_QP_CREATE_IPOIB_UD_LSO |				\
		   IB_QP_CREATE_PCI_WRITE_END_PADDING)

/*
 * Rings and WQEs of different limits.  log_max_qp_sz 15 is what ConnectX
 * devices report with max_qp_wr 32768, and the most mlx5_ib_get_sq_caps()
 * passes on, since a QP context takes log_sq_size in 4 bits; the smaller
 * rings and the WQE sizes are chosen to move the limits, not taken from a
 * device.
 */
static const struct mlx5_ib_sq_caps test_caps[] = {
	{ .log_max_qp_sz = 10, .max_wqe_sz_sq = 512, .max_wqe_sz_rq = 512,
	  .xrc = true,
	  .create_flags = ALL_FLAGS },
	{ .log_max_qp_sz = 15, .max_wqe_sz_sq = 512, .max_wqe_sz_rq = 512,
	  .xrc = true,
	  .create_flags = ALL_FLAGS },
	{ .log_max_qp_sz = 15, .max_wqe_sz_sq = 1024, .max_wqe_sz_rq = 512,
	  .xrc = true,
	  .create_flags = ALL_FLAGS },
	{ .log_max_qp_sz = 15, .max_wqe_sz_sq = 768, .max_wqe_sz_rq = 512,
	  .xrc = true,
	  .create_flags = ALL_FLAGS },
	{ .log_max_qp_sz = 12, .max_wqe_sz_sq = 1024, .max_wqe_sz_rq = 512,
	  .xrc = true,
	  .create_flags = ALL_FLAGS },
};

static const struct mlx5_ib_sq_caps caps_15_1024 = {
	.log_max_qp_sz = 15, .max_wqe_sz_sq = 1024, .max_wqe_sz_rq = 512,
	.xrc = true,
	.create_flags = ALL_FLAGS,
};

static const struct {
	enum ib_qp_type type;
	u32 flags;
} test_qps[] = {
	{ IB_QPT_RC, 0 },
	{ IB_QPT_RC, IB_QP_CREATE_INTEGRITY_EN },
	{ IB_QPT_RC, IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK },
	{ IB_QPT_XRC_INI, 0 },
	{ IB_QPT_XRC_INI, IB_QP_CREATE_INTEGRITY_EN },
	{ IB_QPT_UC, 0 },
	{ IB_QPT_UD, 0 },
	{ IB_QPT_UD, IB_QP_CREATE_IPOIB_UD_LSO },
	{ IB_QPT_UD, IB_QP_CREATE_INTEGRITY_EN },
};

static const u32 test_inline[] = { 0, 1, 28, 56, 60, 100, 256, 400, 600, 900 };

/* Stop reporting a sweep after this many mismatches */
#define MAX_REPORTS 8

static struct ib_qp_init_attr test_attr(enum ib_qp_type type, u32 flags,
					u32 max_send_wr, u32 sge, u32 inl)
{
	return (struct ib_qp_init_attr){
		.qp_type = type,
		.create_flags = flags,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap = { .max_send_wr = max_send_wr, .max_send_sge = sge,
			 .max_inline_data = inl, .max_recv_wr = 16,
			 .max_recv_sge = 2 },
	};
}

/* ---- The model: what calc_sq_size() reserves ---- */

struct sq_model {
	int err;
	u32 wqe_size;
	u32 max_gs;
	u32 max_inline;
	u32 limit;
	u32 wqe_cnt;
	u32 max_post;
};

static bool model_qp_ok(const struct mlx5_ib_sq_caps *caps,
			const struct ib_qp_init_attr *attr)
{
	u32 flags = caps->create_flags;

	if (attr->qp_type != IB_QPT_UD)
		flags &= ~IB_QP_CREATE_IPOIB_UD_LSO;
	if (attr->create_flags & ~flags || attr->rwq_ind_tbl)
		return false;
	return attr->qp_type == IB_QPT_RC || attr->qp_type == IB_QPT_UC ||
	       attr->qp_type == IB_QPT_UD ||
	       (attr->qp_type == IB_QPT_XRC_INI && caps->xrc);
}

/*
 * The room every WR gets besides its SGEs.  For RC it holds a REG_MR, the
 * largest fixed WR: sq_overhead() counts the inline descriptors in 16-byte
 * units there (4, for 64 bytes), which the alignment to a basic block
 * makes up for on RC; model_sq() reserves the whole REG_MR on XRC_INI.
 */
static u32 model_overhead(const struct ib_qp_init_attr *attr)
{
	u32 rc = SEG_CTRL + max(SEG_ATOMIC + SEG_RADDR,
				SEG_UMR_CTRL + SEG_MKEY + UMR_INLINE_MAX / WQE_DS);

	switch (attr->qp_type) {
	case IB_QPT_RC:
		return rc;
	case IB_QPT_XRC_INI:
		return SEG_XRC + rc;
	case IB_QPT_UC:
		return SEG_CTRL + max(SEG_RADDR, SEG_UMR_CTRL + SEG_MKEY);
	case IB_QPT_UD:
		if (attr->create_flags & IB_QP_CREATE_IPOIB_UD_LSO)
			return SEG_CTRL + SEG_AV + SEG_ETH_PAD + SEG_ETH;
		return SEG_CTRL + SEG_AV;
	default:
		return 0;
	}
}

static void model_sq(const struct mlx5_ib_sq_caps *caps,
		     const struct ib_qp_init_attr *attr, struct sq_model *m)
{
	const struct ib_qp_cap *cap = &attr->cap;
	u32 ovh = model_overhead(attr);
	u32 room, reg, data;
	u64 ring;

	memset(m, 0, sizeof(*m));
	m->wqe_size = ovh + cap->max_send_sge * SEG_DATA;
	if (cap->max_inline_data)
		m->wqe_size = max(m->wqe_size,
				  ovh + SEG_INLINE + cap->max_inline_data);
	m->wqe_size = ALIGN(m->wqe_size, WQE_BB);
	/* A REG_MR with its descriptors inline; it opens REG_MR_INTEGRITY */
	reg = SEG_CTRL + SEG_UMR_CTRL + SEG_MKEY + UMR_INLINE_MAX;
	if (attr->qp_type == IB_QPT_XRC_INI)
		reg = ALIGN(reg + SEG_XRC, WQE_BB);
	if (attr->qp_type == IB_QPT_RC || attr->qp_type == IB_QPT_XRC_INI)
		m->wqe_size = max(m->wqe_size, reg);
	/* That REG_MR, the signature UMR of 4 blocks and two SET_PSV */
	if (attr->create_flags & IB_QP_CREATE_INTEGRITY_EN)
		m->wqe_size = max_t(u32, m->wqe_size,
				    attr->qp_type == IB_QPT_XRC_INI ?
				    reg + 6 * WQE_BB : SIG_WQE_MIN);
	if (m->wqe_size > caps->max_wqe_sz_sq) {
		m->err = -EINVAL;
		return;
	}

	/* A WQE's ds count has 6 bits: a UD WR's data fills 1008 bytes */
	data = m->wqe_size;
	if (attr->qp_type == IB_QPT_UD)
		data = min_t(u32, data, 63 * WQE_DS);
	m->max_inline = data - ovh - SEG_INLINE;
	if (m->max_inline < cap->max_inline_data) {
		m->err = -EINVAL;
		return;
	}

	/* SGEs of an RDMA WR (of a send on UC and UD) that fit the room */
	switch (attr->qp_type) {
	case IB_QPT_RC:
		room = min_t(u32, m->wqe_size, SGE_ROOM_MAX) - SEG_CTRL -
		       SEG_RADDR;
		break;
	case IB_QPT_XRC_INI:
		room = min_t(u32, m->wqe_size, SGE_ROOM_MAX) - SEG_CTRL -
		       SEG_XRC - SEG_RADDR;
		break;
	default:
		room = data - ovh;
		break;
	}
	m->max_gs = room / SEG_DATA;
	if (m->max_gs < cap->max_send_sge) {
		m->err = -ENOMEM;
		return;
	}

	m->limit = ((u64)WQE_BB << caps->log_max_qp_sz) / m->wqe_size;
	if (!cap->max_send_wr)
		return;
	ring = roundup_pow_of_two((u64)cap->max_send_wr * m->wqe_size);
	if (ring / WQE_BB > (1ULL << caps->log_max_qp_sz)) {
		m->err = -ENOMEM;
		return;
	}
	m->wqe_cnt = ring / WQE_BB;
	m->max_post = ring / m->wqe_size;
}

static int model_budget(const struct mlx5_ib_sq_caps *caps,
			const struct ib_qp_init_attr *attr,
			struct ib_qp_budget *b)
{
	struct sq_model m;

	memset(b, 0, sizeof(*b));
	if (!model_qp_ok(caps, attr))
		return -EOPNOTSUPP;
	/* A Receive WQE is a power of two of data segments */
	if (attr->cap.max_recv_wr > 1U << caps->log_max_qp_sz ||
	    (!attr->srq && attr->qp_type != IB_QPT_XRC_INI &&
	     attr->cap.max_recv_wr && attr->cap.max_recv_sge &&
	     roundup_pow_of_two(attr->cap.max_recv_sge * SEG_DATA) >
	     caps->max_wqe_sz_rq))
		return -EINVAL;
	model_sq(caps, attr, &m);
	b->cap = attr->cap;
	if (attr->srq || attr->qp_type == IB_QPT_XRC_INI ||
	    !attr->cap.max_recv_wr) {
		b->cap.max_recv_wr = 0;
		b->cap.max_recv_sge = 0;
	}
	b->max_send_wr_limit = m.limit;
	if (!attr->cap.max_send_wr)
		return 0;
	if (m.err)
		return m.err;
	b->cap.max_send_wr = m.max_post;
	b->cap.max_send_sge = m.max_gs;
	b->cap.max_inline_data = m.max_inline;
	return 0;
}

/* ---- The model: the WQEs the builders write for one WR ---- */

struct wr_model {
	int err;
	u32 bbs;
	u32 wqes;
	u32 signaled;
};

static u32 bytes_to_bbs(u32 bytes)
{
	return DIV_ROUND_UP(bytes, WQE_BB);
}

/* What each QP type posts: handle_qpt_rc(), handle_qpt_uc(), handle_qpt_ud() */
static bool model_opcode_ok(const struct ib_qp_init_attr *attr,
			    enum ib_wr_opcode op)
{
	const u64 sends = BIT_ULL(IB_WR_SEND) | BIT_ULL(IB_WR_SEND_WITH_IMM);
	const u64 uc = sends | BIT_ULL(IB_WR_RDMA_WRITE) |
		       BIT_ULL(IB_WR_RDMA_WRITE_WITH_IMM);
	u64 ops;

	switch (attr->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_XRC_INI:
		ops = uc | BIT_ULL(IB_WR_SEND_WITH_INV) |
		      BIT_ULL(IB_WR_RDMA_READ) | BIT_ULL(IB_WR_LOCAL_INV) |
		      BIT_ULL(IB_WR_REG_MR);
		if (attr->create_flags & IB_QP_CREATE_INTEGRITY_EN)
			ops |= BIT_ULL(IB_WR_REG_MR_INTEGRITY);
		break;
	case IB_QPT_UC:
		ops = uc;
		break;
	case IB_QPT_UD:
		ops = sends;
		break;
	default:
		return false;
	}
	return op < 64 && ops & BIT_ULL(op);
}

/* set_reg_wr(): descriptors inline, padded to a block, or pointed at */
static u32 model_reg_mr_bbs(u32 head)
{
	u32 fixed = head + SEG_UMR_CTRL + SEG_MKEY;

	return max(bytes_to_bbs(ALIGN(fixed + UMR_INLINE_MAX, WQE_BB)),
		   bytes_to_bbs(fixed + SEG_DATA));
}

static void model_wr(const struct ib_qp_init_attr *attr, enum ib_wr_opcode op,
		     u32 num_sge, struct wr_model *m)
{
	u32 sig_xlt = max(SEG_KLM, SEG_SBLOCK_CTRL + 2 * SEG_SBLOCK_ENTRY);
	u32 head = SEG_CTRL;	/* what opens the first WQE of a WR */

	if (attr->qp_type == IB_QPT_XRC_INI)
		head += SEG_XRC;
	if (attr->qp_type == IB_QPT_UD) {
		head += SEG_AV;
		if (attr->create_flags & IB_QP_CREATE_IPOIB_UD_LSO)
			head += SEG_ETH_PAD + SEG_ETH;
	}

	*m = (struct wr_model){ .wqes = 1, .signaled = 1 };
	if (!model_opcode_ok(attr, op)) {
		m->err = -EOPNOTSUPP;
		return;
	}
	switch (op) {
	case IB_WR_RDMA_WRITE:
	case IB_WR_RDMA_WRITE_WITH_IMM:
	case IB_WR_RDMA_READ:
		m->bbs = bytes_to_bbs(head + SEG_RADDR + num_sge * SEG_DATA);
		break;
	case IB_WR_LOCAL_INV:
		m->bbs = bytes_to_bbs(head + SEG_UMR_CTRL + SEG_MKEY);
		break;
	case IB_WR_REG_MR:
		m->bbs = model_reg_mr_bbs(head);
		break;
	case IB_WR_REG_MR_INTEGRITY:
		/* pi_mr REG_MR, signature UMR, SET_PSV for memory and wire */
		m->bbs = model_reg_mr_bbs(head) +
			 bytes_to_bbs(SEG_CTRL + SEG_UMR_CTRL + SEG_MKEY +
				      ALIGN(sig_xlt, WQE_BB) + SEG_BSF) +
			 2 * bytes_to_bbs(SEG_CTRL + SEG_PSV);
		m->wqes = 4;
		m->signaled = 2;
		break;
	default:
		m->bbs = bytes_to_bbs(head + num_sge * SEG_DATA);
		break;
	}
}

static bool is_registration(enum ib_wr_opcode op)
{
	return op == IB_WR_LOCAL_INV || op == IB_WR_REG_MR ||
	       op == IB_WR_REG_MR_INTEGRITY;
}

static int model_cost(const struct mlx5_ib_sq_caps *caps,
		      const struct ib_qp_init_attr *attr, enum ib_wr_opcode op,
		      u32 num_sge, struct ib_wr_cost *c)
{
	struct ib_qp_init_attr one = *attr;
	struct sq_model m;
	struct wr_model w;

	memset(c, 0, sizeof(*c));
	if (!model_qp_ok(caps, attr))
		return -EOPNOTSUPP;
	one.cap.max_send_wr = 0;	/* the cost does not depend on it */
	model_sq(caps, &one, &m);
	if (m.err)
		return m.err;
	if (num_sge > m.max_gs)
		return -EINVAL;
	model_wr(attr, op, is_registration(op) ? 0 : num_sge, &w);
	if (w.err)
		return w.err;
	c->sq_units = DIV_ROUND_UP(w.bbs * WQE_BB, m.wqe_size);
	c->cqe_signaled = attr->sq_sig_type == IB_SIGNAL_ALL_WR ? w.wqes :
								   w.signaled;
	c->cqe_error = w.wqes;
	return 0;
}

static bool same_cap(const struct ib_qp_cap *a, const struct ib_qp_cap *b)
{
	return a->max_send_wr == b->max_send_wr &&
	       a->max_recv_wr == b->max_recv_wr &&
	       a->max_send_sge == b->max_send_sge &&
	       a->max_recv_sge == b->max_recv_sge &&
	       a->max_inline_data == b->max_inline_data;
}

/* ---- Suite mlx5_ib_sq_budget ---- */

/* The model's segments are those of the structs the builders fill */
static void mlx5_ib_test_segments(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, SEG_CTRL, sizeof(struct mlx5_wqe_ctrl_seg));
	KUNIT_EXPECT_EQ(test, SEG_XRC, sizeof(struct mlx5_wqe_xrc_seg));
	KUNIT_EXPECT_EQ(test, SEG_RADDR, sizeof(struct mlx5_wqe_raddr_seg));
	KUNIT_EXPECT_EQ(test, SEG_ATOMIC, sizeof(struct mlx5_wqe_atomic_seg));
	KUNIT_EXPECT_EQ(test, SEG_DATA, sizeof(struct mlx5_wqe_data_seg));
	KUNIT_EXPECT_EQ(test, SEG_INLINE, sizeof(struct mlx5_wqe_inline_seg));
	KUNIT_EXPECT_EQ(test, SEG_AV, sizeof(struct mlx5_wqe_datagram_seg));
	KUNIT_EXPECT_EQ(test, SEG_ETH_PAD, sizeof(struct mlx5_wqe_eth_pad));
	KUNIT_EXPECT_EQ(test, SEG_ETH, sizeof(struct mlx5_wqe_eth_seg));
	KUNIT_EXPECT_EQ(test, SEG_UMR_CTRL,
			sizeof(struct mlx5_wqe_umr_ctrl_seg));
	KUNIT_EXPECT_EQ(test, SEG_MKEY, sizeof(struct mlx5_mkey_seg));
	KUNIT_EXPECT_EQ(test, SEG_PSV, sizeof(struct mlx5_seg_set_psv));
	KUNIT_EXPECT_EQ(test, SEG_KLM, sizeof(struct mlx5_klm));
	KUNIT_EXPECT_EQ(test, SEG_SBLOCK_CTRL,
			sizeof(struct mlx5_stride_block_ctrl_seg));
	KUNIT_EXPECT_EQ(test, SEG_SBLOCK_ENTRY,
			sizeof(struct mlx5_stride_block_entry));
	KUNIT_EXPECT_EQ(test, SEG_BSF, sizeof(struct mlx5_bsf));
	KUNIT_EXPECT_EQ(test, WQE_DS, MLX5_SEND_WQE_DS);
	KUNIT_EXPECT_EQ(test, WQE_BB, MLX5_SEND_WQE_BB);
	KUNIT_EXPECT_EQ(test, UMR_INLINE_MAX, MLX5_IB_SQ_UMR_INLINE_THRESHOLD);
	KUNIT_EXPECT_EQ(test, SIG_WQE_MIN, MLX5_SIG_WQE_SIZE);
}

struct geom_vector {
	const char *name;
	u32 log_max_qp_sz;
	u32 max_wqe_sz_sq;
	enum ib_qp_type type;
	u32 flags;
	u32 max_send_wr;
	u32 sge;
	u32 inl;
	int err;
	u32 wqe_size;
	u32 wqe_cnt;
	u32 max_post;
	u32 max_gs;
	u32 max_inline;
	u32 limit;
};

/* What calc_sq_size() grants, worked out independently of it */
static const struct geom_vector geom_vectors[] = {
	{ "RC 128 WRs 1 SGE", 15, 1024, IB_QPT_RC, 0, 128, 1, 0,
	  0, 192, 512, 170, 10, 56, 10922 },
	{ "RC 1 WR 1 SGE", 15, 1024, IB_QPT_RC, 0, 1, 1, 0,
	  0, 192, 4, 1, 10, 56, 10922 },
	{ "RC 128 WRs 4 SGEs", 15, 1024, IB_QPT_RC, 0, 128, 4, 0,
	  0, 256, 512, 128, 14, 120, 8192 },
	{ "RC 2977 WRs 19 SGEs", 15, 1024, IB_QPT_RC, 0, 2977, 19, 0,
	  0, 448, 32768, 4681, 26, 312, 4681 },
	{ "RC max_qp_wr 19 SGEs", 15, 1024, IB_QPT_RC, 0, 8192, 19, 0,
	  -ENOMEM, 448, 0, 0, 26, 312, 4681 },
	{ "RC 128 WRs 30 SGEs", 15, 1024, IB_QPT_RC, 0, 128, 30, 0,
	  0, 640, 2048, 204, 30, 504, 3276 },
	{ "RC max_qp_wr 30 SGEs", 15, 1024, IB_QPT_RC, 0, 8192, 30, 0,
	  -ENOMEM, 640, 0, 0, 30, 504, 3276 },
	{ "RC 30 SGEs 512 B WQEs", 15, 512, IB_QPT_RC, 0, 128, 30, 0,
	  -EINVAL, 640, 0, 0, 0, 0, 0 },
	{ "RC 31 SGEs", 15, 1024, IB_QPT_RC, 0, 128, 31, 0,
	  -ENOMEM, 640, 0, 0, 30, 504, 0 },
	{ "RC 256 B inline", 15, 1024, IB_QPT_RC, 0, 128, 1, 256,
	  0, 448, 1024, 146, 26, 312, 4681 },
	{ "RC integrity 5 SGEs", 15, 1024, IB_QPT_RC,
	  IB_QP_CREATE_INTEGRITY_EN, 128, 5, 0,
	  0, 576, 2048, 227, 30, 440, 3640 },
	{ "RC integrity 3640 WRs", 15, 1024, IB_QPT_RC,
	  IB_QP_CREATE_INTEGRITY_EN, 3640, 5, 0,
	  0, 576, 32768, 3640, 30, 440, 3640 },
	{ "RC integrity 3641 WRs", 15, 1024, IB_QPT_RC,
	  IB_QP_CREATE_INTEGRITY_EN, 3641, 5, 0,
	  -ENOMEM, 576, 0, 0, 30, 440, 3640 },
	{ "RC integrity 512 B WQEs", 15, 512, IB_QPT_RC,
	  IB_QP_CREATE_INTEGRITY_EN, 128, 1, 0,
	  -EINVAL, 576, 0, 0, 0, 0, 0 },
	{ "RC integrity 24 SGEs", 15, 1024, IB_QPT_RC,
	  IB_QP_CREATE_INTEGRITY_EN, 100, 24, 0,
	  0, 576, 1024, 113, 30, 440, 3640 },
	{ "RC 10922 WRs", 15, 1024, IB_QPT_RC, 0, 10922, 1, 0,
	  0, 192, 32768, 10922, 10, 56, 10922 },
	{ "RC 10923 WRs", 15, 1024, IB_QPT_RC, 0, 10923, 1, 0,
	  -ENOMEM, 192, 0, 0, 10, 56, 10922 },
	{ "RC small ring", 10, 512, IB_QPT_RC, 0, 64, 1, 0,
	  0, 192, 256, 85, 10, 56, 341 },
	{ "RC small ring 19 SGEs", 10, 512, IB_QPT_RC, 0, 300, 19, 0,
	  -ENOMEM, 448, 0, 0, 26, 312, 146 },
	{ "RC 4000 WRs 16 SGEs", 15, 1024, IB_QPT_RC, 0, 4000, 16, 0,
	  0, 448, 32768, 4681, 26, 312, 4681 },
	/* 192 * 0x5555556 wraps to 64 in 32 bits: a ring of one block */
	{ "RC 2^32 bytes and one block", 15, 1024, IB_QPT_RC, 0, 0x5555556, 1,
	  0, -ENOMEM, 192, 0, 0, 10, 56, 10922 },
	{ "XRC_INI 128 WRs 2 SGEs", 15, 1024, IB_QPT_XRC_INI, 0, 128, 2, 0,
	  0, 256, 512, 128, 13, 104, 8192 },
	{ "XRC_INI 128 WRs 3 SGEs", 15, 1024, IB_QPT_XRC_INI, 0, 128, 3, 0,
	  0, 256, 512, 128, 13, 104, 8192 },
	{ "XRC_INI integrity 2 SGEs", 15, 1024, IB_QPT_XRC_INI,
	  IB_QP_CREATE_INTEGRITY_EN, 128, 2, 0,
	  0, 640, 2048, 204, 29, 488, 3276 },
	{ "UC 128 WRs 1 SGE", 15, 1024, IB_QPT_UC, 0, 128, 1, 0,
	  0, 192, 512, 170, 4, 60, 10922 },
	{ "UD 128 WRs 1 SGE", 15, 1024, IB_QPT_UD, 0, 128, 1, 0,
	  0, 128, 256, 128, 4, 60, 16384 },
	/* A WQE's ds count has 6 bits: a UD WR's data fills 1008 bytes */
	{ "UD 1 SGE 940 inline", 15, 1024, IB_QPT_UD, 0, 128, 1, 940,
	  0, 1024, 2048, 128, 59, 940, 2048 },
	{ "UD 1 SGE 956 inline", 15, 1024, IB_QPT_UD, 0, 128, 1, 956,
	  -EINVAL, 1024, 0, 0, 0, 940, 0 },
	{ "UD 60 SGEs", 15, 1024, IB_QPT_UD, 0, 128, 60, 0,
	  -ENOMEM, 1024, 0, 0, 59, 940, 0 },
	{ "UD LSO 128 WRs 1 SGE", 15, 1024, IB_QPT_UD,
	  IB_QP_CREATE_IPOIB_UD_LSO, 128, 1, 0,
	  0, 128, 256, 128, 2, 28, 16384 },
};

static void geom_vector_desc(const struct geom_vector *v, char *desc)
{
	strscpy(desc, v->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(geom_vectors, geom_vectors, geom_vector_desc);

/* QP creation's arithmetic and the budget give the worked-out values */
static void mlx5_ib_test_geom_vectors(struct kunit *test)
{
	const struct geom_vector *v = test->param_value;
	struct mlx5_ib_sq_caps caps = caps_15_1024;
	struct ib_qp_init_attr attr;
	struct mlx5_ib_sq_geom geom = {};
	struct ib_qp_budget budget = {};
	int err;

	caps.log_max_qp_sz = v->log_max_qp_sz;
	caps.max_wqe_sz_sq = v->max_wqe_sz_sq;
	attr = test_attr(v->type, v->flags, v->max_send_wr, v->sge, v->inl);

	err = mlx5_ib_calc_sq_geom(&caps, &attr, &geom);
	KUNIT_EXPECT_EQ(test, err, v->err);
	KUNIT_EXPECT_EQ(test, geom.wqe_size, v->wqe_size);
	if (!err) {
		KUNIT_EXPECT_EQ(test, geom.wq_size, v->wqe_cnt * WQE_BB);
		KUNIT_EXPECT_EQ(test, geom.wqe_cnt, v->wqe_cnt);
		KUNIT_EXPECT_EQ(test, geom.max_post, v->max_post);
		KUNIT_EXPECT_EQ(test, geom.max_gs, v->max_gs);
		KUNIT_EXPECT_EQ(test, geom.max_inline, v->max_inline);
		KUNIT_EXPECT_GE(test, geom.max_post, v->max_send_wr);
	}

	err = mlx5_ib_qp_budget(&caps, &attr, &budget);
	KUNIT_EXPECT_EQ(test, err, v->err);
	KUNIT_EXPECT_EQ(test, budget.max_send_wr_limit, v->limit);
	if (!err) {
		KUNIT_EXPECT_EQ(test, budget.cap.max_send_wr, v->max_post);
		KUNIT_EXPECT_EQ(test, budget.cap.max_send_sge, v->max_gs);
		KUNIT_EXPECT_EQ(test, budget.cap.max_inline_data,
				v->max_inline);
	}
}

/*
 * attrs.max_qp_wr is worked out for one SGE, no inline data, on the QP
 * type with the largest overhead (XRC_INI) in a WQE rounded up to a power
 * of two: 2^log_max_qp_sz / 4.  RC QPs asking for it with 8 SGEs or more
 * fail to be created; the budget says so, and gives the real limit.
 */
static void mlx5_ib_test_advertised_max_qp_wr(struct kunit *test)
{
	u32 ovh_max = max(SEG_XRC + SEG_CTRL + SEG_UMR_CTRL + SEG_MKEY +
			  UMR_INLINE_MAX / WQE_DS,
			  SEG_CTRL + SEG_ETH_PAD + SEG_ETH + SEG_AV);
	unsigned int i, sge;

	for (i = 0; i < ARRAY_SIZE(test_caps); i++) {
		const struct mlx5_ib_sq_caps *caps = &test_caps[i];
		u32 max_qp_wr = ((u64)WQE_BB << caps->log_max_qp_sz) /
				ALIGN(roundup_pow_of_two(ovh_max + SEG_DATA),
				      WQE_BB);

		KUNIT_EXPECT_EQ(test, max_qp_wr, 1U << caps->log_max_qp_sz >> 2);
		for (sge = 1; sge <= 30; sge++) {
			struct ib_qp_init_attr attr =
				test_attr(IB_QPT_RC, 0, max_qp_wr, sge, 0);
			struct mlx5_ib_sq_geom geom = {};
			struct ib_qp_budget budget;
			struct sq_model m;
			int create, ret;

			model_sq(caps, &attr, &m);
			create = mlx5_ib_calc_sq_geom(caps, &attr, &geom);
			ret = mlx5_ib_qp_budget(caps, &attr, &budget);
			KUNIT_EXPECT_EQ_MSG(test, ret, create,
					    "caps %u, %u SGEs", i, sge);
			if (m.err == -EINVAL) {
				KUNIT_EXPECT_EQ(test, ret, -EINVAL);
				continue;
			}
			KUNIT_EXPECT_EQ_MSG(test, ret, sge < 8 ? 0 : -ENOMEM,
					    "caps %u, %u SGEs", i, sge);
			KUNIT_EXPECT_EQ(test, budget.max_send_wr_limit,
					m.limit);
			if (sge >= 8)
				KUNIT_EXPECT_LT(test, budget.max_send_wr_limit,
						max_qp_wr);
		}
	}
}

/* The budget and QP creation agree with the model, and the limit is tight */
static void check_budget(struct kunit *test, const struct mlx5_ib_sq_caps *caps,
			 struct ib_qp_init_attr *attr, unsigned int *bad)
{
	struct mlx5_ib_sq_geom geom = {};
	struct ib_qp_budget want, got;
	int ret, exp, create;

	exp = model_budget(caps, attr, &want);
	memset(&got, 0xa5, sizeof(got));
	ret = mlx5_ib_qp_budget(caps, attr, &got);
	if (ret != exp || got.max_send_wr_limit != want.max_send_wr_limit ||
	    (!ret && !same_cap(&got.cap, &want.cap))) {
		if ((*bad)++ < MAX_REPORTS)
			KUNIT_FAIL(test,
				   "QP type %d flags %#x %u WRs %u SGEs %u inline: ret %d/%d limit %u/%u send_wr %u/%u sge %u/%u inline %u/%u",
				   attr->qp_type, attr->create_flags,
				   attr->cap.max_send_wr,
				   attr->cap.max_send_sge,
				   attr->cap.max_inline_data, ret, exp,
				   got.max_send_wr_limit,
				   want.max_send_wr_limit,
				   got.cap.max_send_wr, want.cap.max_send_wr,
				   got.cap.max_send_sge, want.cap.max_send_sge,
				   got.cap.max_inline_data,
				   want.cap.max_inline_data);
		return;
	}

	/* What QP creation does, which sizes no Send Queue for 0 WRs */
	if (!attr->cap.max_send_wr)
		return;
	create = mlx5_ib_calc_sq_geom(caps, attr, &geom);
	if (create != ret ||
	    (!ret && (geom.max_post != got.cap.max_send_wr ||
		      geom.max_gs != got.cap.max_send_sge ||
		      geom.max_inline != got.cap.max_inline_data))) {
		if ((*bad)++ < MAX_REPORTS)
			KUNIT_FAIL(test,
				   "QP type %d flags %#x %u WRs %u SGEs %u inline: create %d, budget %d",
				   attr->qp_type, attr->create_flags,
				   attr->cap.max_send_wr,
				   attr->cap.max_send_sge,
				   attr->cap.max_inline_data, create, ret);
	}
}

static unsigned int sweep_budget(struct kunit *test,
				 const struct mlx5_ib_sq_caps *caps,
				 enum ib_qp_type type, u32 flags,
				 unsigned int *bad)
{
	unsigned int i, w, checked = 0;
	u32 sge;

	for (sge = 0; sge <= 31; sge++) {
		for (i = 0; i < ARRAY_SIZE(test_inline); i++) {
			struct ib_qp_init_attr attr =
				test_attr(type, flags, 0, sge, test_inline[i]);
			struct sq_model m;
			u32 wrs[9];

			model_sq(caps, &attr, &m);
			wrs[0] = 0;
			wrs[1] = 1;
			wrs[2] = 3;
			wrs[3] = 128;
			wrs[4] = 1000;
			wrs[5] = m.limit ? m.limit : 2;
			wrs[6] = m.limit + 1;
			wrs[7] = U32_MAX;
			/* The ring's size wraps to a block in 32 bits */
			wrs[8] = m.wqe_size ?
				 div_u64(1ULL << 32, m.wqe_size) + 1 : 4;
			for (w = 0; w < ARRAY_SIZE(wrs); w++) {
				attr.cap.max_send_wr = wrs[w];
				check_budget(test, caps, &attr, bad);
				checked++;
			}
		}
	}
	return checked;
}

static void mlx5_ib_test_budget_sweep(struct kunit *test)
{
	unsigned int c, q, bad = 0, checked = 0;

	for (c = 0; c < ARRAY_SIZE(test_caps); c++)
		for (q = 0; q < ARRAY_SIZE(test_qps); q++)
			checked += sweep_budget(test, &test_caps[c],
						test_qps[q].type,
						test_qps[q].flags, &bad);
	KUNIT_EXPECT_EQ(test, bad, 0);
	kunit_info(test, "%u requests checked\n", checked);
}

static struct ib_rwq_ind_table dummy_rwq_ind_tbl;

static void mlx5_ib_test_budget_unsupported(struct kunit *test)
{
	static const enum ib_qp_type types[] = {
		IB_QPT_SMI, IB_QPT_GSI, IB_QPT_RAW_IPV6, IB_QPT_RAW_ETHERTYPE,
		IB_QPT_RAW_PACKET, IB_QPT_XRC_TGT, IB_QPT_DRIVER,
	};
	struct mlx5_ib_sq_caps caps = caps_15_1024;
	struct ib_qp_init_attr attr;
	struct ib_qp_budget budget;
	struct ib_wr_cost cost;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		attr = test_attr(types[i], 0, 128, 1, 0);
		KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget),
				-EOPNOTSUPP);
		KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(&caps, &attr, IB_WR_SEND,
						      1, &cost), -EOPNOTSUPP);
	}

	/* Flags the device or the QP type does not take */
	attr = test_attr(IB_QPT_RC, IB_QP_CREATE_IPOIB_UD_LSO, 128, 1, 0);
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget),
			-EOPNOTSUPP);
	attr = test_attr(IB_QPT_UD, IB_QP_CREATE_NETIF_QP, 128, 1, 0);
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget),
			-EOPNOTSUPP);
	attr = test_attr(IB_QPT_UD, IB_QP_CREATE_SOURCE_QPN, 128, 1, 0);
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget),
			-EOPNOTSUPP);
	attr = test_attr(IB_QPT_RC, IB_QP_CREATE_INTEGRITY_EN, 128, 1, 0);
	caps.create_flags &= ~IB_QP_CREATE_INTEGRITY_EN;
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget),
			-EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(&caps, &attr,
					      IB_WR_REG_MR_INTEGRITY, 0,
					      &cost), -EOPNOTSUPP);

	/* RSS QPs are not kernel QPs */
	attr = test_attr(IB_QPT_UD, 0, 128, 1, 0);
	attr.rwq_ind_tbl = &dummy_rwq_ind_tbl;
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget),
			-EOPNOTSUPP);

	/* XRC needs the capability */
	caps = caps_15_1024;
	caps.xrc = false;
	attr = test_attr(IB_QPT_XRC_INI, 0, 128, 1, 0);
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget),
			-EOPNOTSUPP);
	caps.xrc = true;
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget), 0);
}

static struct ib_srq dummy_srq;

/* Without a Send Queue asked for, nothing about its WQE can fail */
static void mlx5_ib_test_budget_no_sq(struct kunit *test)
{
	struct mlx5_ib_sq_caps caps = caps_15_1024;
	struct ib_qp_init_attr attr;
	struct ib_qp_budget budget;

	attr = test_attr(IB_QPT_RC, 0, 0, 4, 0);
	KUNIT_ASSERT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget), 0);
	KUNIT_EXPECT_TRUE(test, same_cap(&budget.cap, &attr.cap));
	KUNIT_EXPECT_EQ(test, budget.max_send_wr_limit, 8192);

	/* A WQE of 640 bytes does not fit, but none is needed */
	caps.max_wqe_sz_sq = 512;
	attr = test_attr(IB_QPT_RC, 0, 0, 30, 0);
	KUNIT_ASSERT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget), 0);
	KUNIT_EXPECT_TRUE(test, same_cap(&budget.cap, &attr.cap));
	KUNIT_EXPECT_EQ(test, budget.max_send_wr_limit, 0);
	attr.cap.max_send_wr = 1;
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, budget.max_send_wr_limit, 0);

	/* No Receive Queue with an SRQ, or on XRC_INI */
	caps = caps_15_1024;
	attr = test_attr(IB_QPT_RC, 0, 16, 1, 0);
	attr.srq = &dummy_srq;
	KUNIT_ASSERT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget), 0);
	KUNIT_EXPECT_EQ(test, budget.cap.max_recv_wr, 0);
	KUNIT_EXPECT_EQ(test, budget.cap.max_recv_sge, 0);
	attr = test_attr(IB_QPT_XRC_INI, 0, 16, 1, 0);
	KUNIT_ASSERT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget), 0);
	KUNIT_EXPECT_EQ(test, budget.cap.max_recv_wr, 0);
	attr = test_attr(IB_QPT_RC, 0, 16, 1, 0);
	KUNIT_ASSERT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget), 0);
	KUNIT_EXPECT_EQ(test, budget.cap.max_recv_wr, 16);
	KUNIT_EXPECT_EQ(test, budget.cap.max_recv_sge, 2);

	/* Any max_send_wr above the limit, without overflowing */
	attr = test_attr(IB_QPT_RC, 0, U32_MAX, 1, 0);
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(&caps, &attr, &budget),
			-ENOMEM);
	KUNIT_EXPECT_EQ(test, budget.max_send_wr_limit, 10922);
}

/* The budget refuses the Receive Queues QP creation refuses */
static void mlx5_ib_test_budget_rq(struct kunit *test)
{
	const struct mlx5_ib_sq_caps *caps = &caps_15_1024;
	struct ib_qp_init_attr attr = test_attr(IB_QPT_RC, 0, 128, 1, 0);
	struct ib_qp_budget budget;

	attr.cap.max_recv_sge = 32;	/* 512 bytes: the largest */
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(caps, &attr, &budget), 0);
	attr.cap.max_recv_sge = 33;
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(caps, &attr, &budget),
			-EINVAL);
	/* Without a Receive Queue of its own, its SGEs do not count */
	attr.cap.max_recv_wr = 0;
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(caps, &attr, &budget), 0);
	attr.cap.max_recv_sge = 1;
	attr.cap.max_recv_wr = 1U << caps->log_max_qp_sz;
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(caps, &attr, &budget), 0);
	attr.cap.max_recv_wr++;
	KUNIT_EXPECT_EQ(test, mlx5_ib_qp_budget(caps, &attr, &budget),
			-EINVAL);
}

static struct kunit_case mlx5_ib_sq_budget_cases[] = {
	KUNIT_CASE(mlx5_ib_test_budget_rq),
	KUNIT_CASE(mlx5_ib_test_segments),
	KUNIT_CASE_PARAM(mlx5_ib_test_geom_vectors, geom_vectors_gen_params),
	KUNIT_CASE(mlx5_ib_test_advertised_max_qp_wr),
	KUNIT_CASE(mlx5_ib_test_budget_sweep),
	KUNIT_CASE(mlx5_ib_test_budget_unsupported),
	KUNIT_CASE(mlx5_ib_test_budget_no_sq),
	{}
};

static struct kunit_suite mlx5_ib_sq_budget_suite = {
	.name = "mlx5_ib_sq_budget",
	.test_cases = mlx5_ib_sq_budget_cases,
};

/* ---- Suite mlx5_ib_wr_cost ---- */

struct layout_vector {
	const char *name;
	enum ib_qp_type type;
	u32 flags;
	enum ib_wr_opcode opcode;
	u32 num_sge;
	u32 bbs;
	u32 wqes;
};

/* Basic blocks per WR, counted by hand from the builders */
static const struct layout_vector layout_vectors[] = {
	{ "RC SEND 0 SGE", IB_QPT_RC, 0, IB_WR_SEND, 0, 1, 1 },
	{ "RC SEND 3 SGEs", IB_QPT_RC, 0, IB_WR_SEND, 3, 1, 1 },
	{ "RC SEND 4 SGEs", IB_QPT_RC, 0, IB_WR_SEND, 4, 2, 1 },
	{ "RC SEND 7 SGEs", IB_QPT_RC, 0, IB_WR_SEND, 7, 2, 1 },
	{ "RC SEND 8 SGEs", IB_QPT_RC, 0, IB_WR_SEND, 8, 3, 1 },
	{ "RC SEND_INV 1 SGE", IB_QPT_RC, 0, IB_WR_SEND_WITH_INV, 1, 1, 1 },
	{ "RC WRITE 2 SGEs", IB_QPT_RC, 0, IB_WR_RDMA_WRITE, 2, 1, 1 },
	{ "RC WRITE 3 SGEs", IB_QPT_RC, 0, IB_WR_RDMA_WRITE, 3, 2, 1 },
	{ "RC WRITE_IMM 6 SGEs", IB_QPT_RC, 0, IB_WR_RDMA_WRITE_WITH_IMM, 6,
	  2, 1 },
	{ "RC READ 7 SGEs", IB_QPT_RC, 0, IB_WR_RDMA_READ, 7, 3, 1 },
	{ "RC READ 10 SGEs", IB_QPT_RC, 0, IB_WR_RDMA_READ, 10, 3, 1 },
	{ "RC READ 30 SGEs", IB_QPT_RC, 0, IB_WR_RDMA_READ, 30, 8, 1 },
	{ "RC LOCAL_INV", IB_QPT_RC, 0, IB_WR_LOCAL_INV, 0, 2, 1 },
	{ "RC REG_MR", IB_QPT_RC, 0, IB_WR_REG_MR, 0, 3, 1 },
	{ "RC REG_MR_INTEGRITY", IB_QPT_RC, IB_QP_CREATE_INTEGRITY_EN,
	  IB_WR_REG_MR_INTEGRITY, 0, 9, 4 },
	{ "XRC_INI SEND 2 SGEs", IB_QPT_XRC_INI, 0, IB_WR_SEND, 2, 1, 1 },
	{ "XRC_INI WRITE 2 SGEs", IB_QPT_XRC_INI, 0, IB_WR_RDMA_WRITE, 2,
	  2, 1 },
	{ "XRC_INI LOCAL_INV", IB_QPT_XRC_INI, 0, IB_WR_LOCAL_INV, 0, 3, 1 },
	{ "XRC_INI REG_MR", IB_QPT_XRC_INI, 0, IB_WR_REG_MR, 0, 4, 1 },
	{ "XRC_INI REG_MR_INTEGRITY", IB_QPT_XRC_INI,
	  IB_QP_CREATE_INTEGRITY_EN, IB_WR_REG_MR_INTEGRITY, 0, 10, 4 },
	{ "UC WRITE 2 SGEs", IB_QPT_UC, 0, IB_WR_RDMA_WRITE, 2, 1, 1 },
	{ "UD SEND 0 SGE", IB_QPT_UD, 0, IB_WR_SEND, 0, 1, 1 },
	{ "UD SEND 1 SGE", IB_QPT_UD, 0, IB_WR_SEND, 1, 2, 1 },
	{ "UD SEND 4 SGEs", IB_QPT_UD, 0, IB_WR_SEND_WITH_IMM, 4, 2, 1 },
	{ "UD LSO SEND 2 SGEs", IB_QPT_UD, IB_QP_CREATE_IPOIB_UD_LSO,
	  IB_WR_SEND, 2, 2, 1 },
	{ "UD LSO SEND 3 SGEs", IB_QPT_UD, IB_QP_CREATE_IPOIB_UD_LSO,
	  IB_WR_SEND, 3, 3, 1 },
};

static void layout_vector_desc(const struct layout_vector *v, char *desc)
{
	strscpy(desc, v->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(layout_vectors, layout_vectors, layout_vector_desc);

static void mlx5_ib_test_layout_vectors(struct kunit *test)
{
	const struct layout_vector *v = test->param_value;
	struct ib_qp_init_attr attr = test_attr(v->type, v->flags, 0, 0, 0);
	struct mlx5_ib_wr_layout layout;

	KUNIT_ASSERT_EQ(test, mlx5_ib_calc_wr_layout(&attr, v->opcode,
						     v->num_sge, &layout), 0);
	KUNIT_EXPECT_EQ(test, layout.bbs, v->bbs);
	KUNIT_EXPECT_EQ(test, layout.wqes, v->wqes);
}

/* Every opcode and SGE count on every QP type, against the model */
static void mlx5_ib_test_layout_sweep(struct kunit *test)
{
	unsigned int q, op, n, bad = 0;

	for (q = 0; q < ARRAY_SIZE(test_qps); q++) {
		struct ib_qp_init_attr attr =
			test_attr(test_qps[q].type, test_qps[q].flags, 0, 0, 0);

		for (op = 0; op <= IB_WR_RESERVED1; op++) {
			for (n = 0; n <= MAX_SGE; n++) {
				struct mlx5_ib_wr_layout got = {};
				struct wr_model want;
				int ret;

				model_wr(&attr, op,
					 is_registration(op) ? 0 : n, &want);
				ret = mlx5_ib_calc_wr_layout(&attr, op, n, &got);
				if (ret == want.err &&
				    (ret || (got.bbs == want.bbs &&
					     got.wqes == want.wqes &&
					     got.signaled == want.signaled)))
					continue;
				if (bad++ < MAX_REPORTS)
					KUNIT_FAIL(test,
						   "QP %u opcode %u %u SGEs: ret %d/%d bbs %u/%u wqes %u/%u signaled %u/%u",
						   q, op, n, ret, want.err,
						   got.bbs, want.bbs, got.wqes,
						   want.wqes, got.signaled,
						   want.signaled);
			}
		}
	}
	KUNIT_EXPECT_EQ(test, bad, 0);
}

/* The cost hook, for every opcode and SGE count, against the model */
static unsigned int sweep_cost(struct kunit *test,
			       const struct mlx5_ib_sq_caps *caps,
			       struct ib_qp_init_attr *attr, unsigned int *bad)
{
	static const u32 wrs[] = { 0, 128, U32_MAX };
	unsigned int op, n, checked = 0;

	for (op = 0; op <= IB_WR_REG_MR_INTEGRITY + 1; op++) {
		for (n = 0; n <= 32; n++) {
			struct ib_wr_cost got = {}, want;
			int ret, exp;

			/* The cost does not depend on max_send_wr */
			attr->cap.max_send_wr = wrs[n % ARRAY_SIZE(wrs)];
			exp = model_cost(caps, attr, op, n, &want);
			ret = mlx5_ib_wr_cost(caps, attr, op, n, &got);
			checked++;
			if (ret == exp &&
			    (ret || (got.sq_units == want.sq_units &&
				     got.cqe_signaled == want.cqe_signaled &&
				     got.cqe_error == want.cqe_error)))
				continue;
			if ((*bad)++ < MAX_REPORTS)
				KUNIT_FAIL(test,
					   "QP type %d flags %#x %u SGEs sig %d opcode %u %u SGEs: ret %d/%d units %u/%u signaled %u/%u error %u/%u",
					   attr->qp_type, attr->create_flags,
					   attr->cap.max_send_sge,
					   attr->sq_sig_type, op, n, ret, exp,
					   got.sq_units, want.sq_units,
					   got.cqe_signaled, want.cqe_signaled,
					   got.cqe_error, want.cqe_error);
		}
	}
	return checked;
}

/*
 * The cost ops take the caps a QP is asked for.  The device grants more
 * (SGEs, inline data, WRs): fed back, the granted caps must not make a WR
 * cost less, or a QP re-costed from them would be charged less than it
 * takes.  They are no fixed point either: a QP of 19 SGEs is granted 26,
 * for which a device of 512-byte WQEs has no room, and the op refuses.
 */
static void mlx5_ib_test_cost_granted(struct kunit *test)
{
	static const enum ib_wr_opcode ops[] = {
		IB_WR_SEND, IB_WR_SEND_WITH_INV, IB_WR_RDMA_WRITE,
		IB_WR_RDMA_READ, IB_WR_LOCAL_INV, IB_WR_REG_MR,
		IB_WR_REG_MR_INTEGRITY,
	};
	static const u32 sges[] = { 0, 1, 2, 3, 4, 8, 19, 23, 24, 30 };
	static const u32 inls[] = { 0, 40, 56, 200 };
	unsigned int n, c, q, s, i, o, bad = 0, checked = 0, refused = 0;

	for (n = 0; n < ARRAY_SIZE(test_caps) * ARRAY_SIZE(test_qps) *
			ARRAY_SIZE(sges) * ARRAY_SIZE(inls); n++) {
		struct ib_qp_init_attr attr, again;
		struct ib_qp_budget budget;

		i = n % ARRAY_SIZE(inls);
		s = n / ARRAY_SIZE(inls) % ARRAY_SIZE(sges);
		q = n / ARRAY_SIZE(inls) / ARRAY_SIZE(sges) % ARRAY_SIZE(test_qps);
		c = n / ARRAY_SIZE(inls) / ARRAY_SIZE(sges) / ARRAY_SIZE(test_qps);
		attr = test_attr(test_qps[q].type, test_qps[q].flags, 128,
				 sges[s], inls[i]);
		again = attr;

		if (mlx5_ib_qp_budget(&test_caps[c], &attr, &budget))
			continue;
		again.cap = budget.cap;
		for (o = 0; o < ARRAY_SIZE(ops); o++) {
			u32 n = is_registration(ops[o]) ? 0 : sges[s];
			struct ib_wr_cost asked, granted;
			int ret;

			ret = mlx5_ib_wr_cost(&test_caps[c], &attr, ops[o], n,
					      &asked);
			if (ret)
				continue;
			checked++;
			ret = mlx5_ib_wr_cost(&test_caps[c], &again, ops[o], n,
					      &granted);
			if (ret == -EINVAL) {
				refused++;
				continue;
			}
			if (!ret && granted.sq_units == asked.sq_units &&
			    granted.cqe_error == asked.cqe_error &&
			    granted.cqe_signaled == asked.cqe_signaled)
				continue;
			if (bad++ < MAX_REPORTS)
				KUNIT_FAIL(test,
					   "QP type %d flags 0x%x %u SGEs %u inline opcode %u: %u units asked, %u granted (ret %d)",
					   attr.qp_type, attr.create_flags,
					   sges[s], inls[i], ops[o],
					   asked.sq_units, granted.sq_units,
					   ret);
		}
	}
	KUNIT_EXPECT_EQ(test, bad, 0);
	kunit_info(test, "%u WRs checked, %u refused with the granted caps\n",
		   checked, refused);
}

static void mlx5_ib_test_cost_sweep(struct kunit *test)
{
	static const u32 sges[] = { 0, 1, 2, 3, 4, 5, 8, 16, 19, 23, 24, 30,
				    31 };
	unsigned int c, q, s, bad = 0, checked = 0;

	for (c = 0; c < ARRAY_SIZE(test_caps); c++) {
		for (q = 0; q < ARRAY_SIZE(test_qps); q++) {
			for (s = 0; s < ARRAY_SIZE(sges); s++) {
				struct ib_qp_init_attr attr =
					test_attr(test_qps[q].type,
						  test_qps[q].flags, 0,
						  sges[s], 0);

				checked += sweep_cost(test, &test_caps[c],
						      &attr, &bad);
				attr.sq_sig_type = IB_SIGNAL_ALL_WR;
				checked += sweep_cost(test, &test_caps[c],
						      &attr, &bad);
			}
		}
	}
	KUNIT_EXPECT_EQ(test, bad, 0);
	kunit_info(test, "%u WRs checked\n", checked);
}

/*
 * What the cost is for: a QP granted max_send_wr holds any mix of WRs whose
 * units add up to it, inline ones included, without its ring of basic
 * blocks overflowing, although the driver only counts WRs.
 */
static void check_fits_ring(struct kunit *test,
			    const struct mlx5_ib_sq_caps *caps,
			    const struct ib_qp_init_attr *attr,
			    unsigned int *bad)
{
	struct mlx5_ib_sq_geom geom = {};
	struct ib_qp_budget budget;
	u32 granted, head, bytes;
	unsigned int op;

	if (mlx5_ib_qp_budget(caps, attr, &budget))
		return;
	KUNIT_ASSERT_EQ(test, mlx5_ib_calc_sq_geom(caps, attr, &geom), 0);
	granted = budget.cap.max_send_wr;

	for (op = 0; op <= IB_WR_REG_MR_INTEGRITY; op++) {
		u32 n = is_registration(op) ? 0 : budget.cap.max_send_sge;
		struct ib_wr_cost cost;
		struct wr_model m;

		if (mlx5_ib_wr_cost(caps, attr, op, n, &cost))
			continue;
		model_wr(attr, op, n, &m);
		/* One WR fits its units, and so does a ring full of it */
		if (cost.sq_units * geom.wqe_size >= m.bbs * WQE_BB &&
		    granted / cost.sq_units * m.bbs <= geom.wqe_cnt)
			continue;
		if ((*bad)++ < MAX_REPORTS)
			KUNIT_FAIL(test,
				   "QP type %d flags %#x %u WRs %u SGEs %u inline, opcode %u: %u units of %u bytes for %u blocks, ring of %u blocks",
				   attr->qp_type, attr->create_flags,
				   attr->cap.max_send_wr,
				   attr->cap.max_send_sge,
				   attr->cap.max_inline_data, op,
				   cost.sq_units, geom.wqe_size, m.bbs,
				   geom.wqe_cnt);
	}

	/* A SEND or RDMA WRITE of max_inline_data bytes fits one unit */
	if (attr->qp_type == IB_QPT_UD)
		head = model_overhead(attr);
	else if (attr->qp_type == IB_QPT_XRC_INI)
		head = SEG_CTRL + SEG_XRC + SEG_RADDR;
	else
		head = SEG_CTRL + SEG_RADDR;
	bytes = head + ALIGN(SEG_INLINE + budget.cap.max_inline_data, WQE_DS);
	if (bytes > geom.wqe_size && (*bad)++ < MAX_REPORTS)
		KUNIT_FAIL(test,
			   "QP type %d flags %#x %u SGEs %u inline: %u inline bytes take %u bytes of %u",
			   attr->qp_type, attr->create_flags,
			   attr->cap.max_send_sge, attr->cap.max_inline_data,
			   budget.cap.max_inline_data, bytes, geom.wqe_size);
}

static void mlx5_ib_test_cost_fits_ring(struct kunit *test)
{
	static const u32 wrs[] = { 1, 3, 128, 1000 };
	unsigned int c, q, i, w, bad = 0;
	u32 sge;

	for (c = 0; c < ARRAY_SIZE(test_caps); c++) {
		for (q = 0; q < ARRAY_SIZE(test_qps); q++) {
			for (sge = 0; sge <= 30; sge++) {
				for (i = 0; i < ARRAY_SIZE(test_inline); i++) {
					struct ib_qp_init_attr attr =
						test_attr(test_qps[q].type,
							  test_qps[q].flags, 0,
							  sge, test_inline[i]);

					for (w = 0; w < ARRAY_SIZE(wrs); w++) {
						attr.cap.max_send_wr = wrs[w];
						check_fits_ring(test,
								&test_caps[c],
								&attr, &bad);
					}
				}
			}
		}
	}
	KUNIT_EXPECT_EQ(test, bad, 0);
}

/*
 * The integrity corner cases: REG_MR_INTEGRITY takes 9 blocks (10 on
 * XRC_INI), which an INTEGRITY_EN QP reserves for every WR, so that it
 * costs one unit at every SGE count; when signaled it completes twice
 * (four times with IB_SIGNAL_ALL_WR), and a flush completes each of its 4
 * WQEs.  The XRC_INI REG_MR with its descriptors inline, 4 blocks, fits
 * the room of one WR too.
 */
static void mlx5_ib_test_integrity(struct kunit *test)
{
	const struct mlx5_ib_sq_caps *caps = &caps_15_1024;
	struct ib_qp_init_attr attr;
	struct mlx5_ib_sq_geom geom = {};
	struct ib_wr_cost cost;
	u32 sge;

	for (sge = 0; sge <= 30; sge++) {
		attr = test_attr(IB_QPT_RC, IB_QP_CREATE_INTEGRITY_EN, 128, sge,
				 0);
		KUNIT_ASSERT_EQ(test, mlx5_ib_calc_sq_geom(caps, &attr, &geom),
				0);
		KUNIT_ASSERT_EQ(test, mlx5_ib_wr_cost(caps, &attr,
						      IB_WR_REG_MR_INTEGRITY,
						      0, &cost), 0);
		KUNIT_EXPECT_EQ_MSG(test, cost.sq_units, 1, "%u SGEs", sge);
		KUNIT_EXPECT_EQ(test, cost.cqe_signaled, 2);
		KUNIT_EXPECT_EQ(test, cost.cqe_error, 4);
		/* A ring full of them stays within its blocks */
		KUNIT_EXPECT_LE(test, geom.max_post * 9, geom.wqe_cnt);

		KUNIT_ASSERT_EQ(test, mlx5_ib_wr_cost(caps, &attr,
						      IB_WR_REG_MR, 0, &cost),
				0);
		KUNIT_EXPECT_EQ(test, cost.sq_units, 1);
		KUNIT_EXPECT_EQ(test, cost.cqe_signaled, 1);
		KUNIT_EXPECT_EQ(test, cost.cqe_error, 1);
	}

	attr = test_attr(IB_QPT_RC, IB_QP_CREATE_INTEGRITY_EN, 128, 1, 0);
	attr.sq_sig_type = IB_SIGNAL_ALL_WR;
	KUNIT_ASSERT_EQ(test, mlx5_ib_wr_cost(caps, &attr,
					      IB_WR_REG_MR_INTEGRITY, 0, &cost),
			0);
	KUNIT_EXPECT_EQ(test, cost.cqe_signaled, 4);
	KUNIT_EXPECT_EQ(test, cost.cqe_error, 4);

	for (sge = 0; sge <= 4; sge++) {
		attr = test_attr(IB_QPT_XRC_INI, IB_QP_CREATE_INTEGRITY_EN, 128,
				 sge, 0);
		KUNIT_ASSERT_EQ(test, mlx5_ib_calc_sq_geom(caps, &attr, &geom),
				0);
		KUNIT_ASSERT_EQ(test, mlx5_ib_wr_cost(caps, &attr,
						      IB_WR_REG_MR_INTEGRITY,
						      0, &cost), 0);
		KUNIT_EXPECT_EQ_MSG(test, cost.sq_units, 1, "%u SGEs", sge);
		KUNIT_EXPECT_LE(test, geom.max_post * 10, geom.wqe_cnt);

		attr = test_attr(IB_QPT_XRC_INI, 0, 128, sge, 0);
		KUNIT_ASSERT_EQ(test, mlx5_ib_calc_sq_geom(caps, &attr, &geom),
				0);
		KUNIT_ASSERT_EQ(test, mlx5_ib_wr_cost(caps, &attr, IB_WR_REG_MR,
						      0, &cost), 0);
		KUNIT_EXPECT_EQ_MSG(test, cost.sq_units, 1, "%u SGEs", sge);
		KUNIT_EXPECT_LE(test, geom.max_post * 4, geom.wqe_cnt);
	}
}

static void mlx5_ib_test_cost_errors(struct kunit *test)
{
	static const enum ib_wr_opcode rc_unsupported[] = {
		IB_WR_ATOMIC_CMP_AND_SWP, IB_WR_ATOMIC_FETCH_AND_ADD,
		IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
		IB_WR_MASKED_ATOMIC_FETCH_AND_ADD, IB_WR_BIND_MW, IB_WR_LSO,
		IB_WR_RDMA_READ_WITH_INV, IB_WR_FLUSH, IB_WR_ATOMIC_WRITE,
		IB_WR_REG_MR_INTEGRITY, IB_WR_RESERVED1,
	};
	const struct mlx5_ib_sq_caps *caps = &caps_15_1024;
	struct ib_qp_init_attr attr = test_attr(IB_QPT_RC, 0, 128, 4, 0);
	struct mlx5_ib_wr_layout layout;
	struct ib_wr_cost cost;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(rc_unsupported); i++)
		KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(caps, &attr,
						      rc_unsupported[i], 1,
						      &cost), -EOPNOTSUPP);

	/* 4 SGEs asked for: 14 granted, the most a WR may carry */
	KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(caps, &attr, IB_WR_SEND, 14,
					      &cost), 0);
	KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(caps, &attr, IB_WR_SEND, 15,
					      &cost), -EINVAL);
	KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(caps, &attr, IB_WR_REG_MR, 15,
					      &cost), -EINVAL);

	/* Registrations carry no data segment, whatever num_sge says */
	KUNIT_ASSERT_EQ(test, mlx5_ib_wr_cost(caps, &attr, IB_WR_LOCAL_INV, 4,
					      &cost), 0);
	KUNIT_EXPECT_EQ(test, cost.sq_units, 1);

	/* REG_MR, LOCAL_INV and SEND_WITH_INV are RC and XRC only */
	attr = test_attr(IB_QPT_UC, 0, 128, 4, 0);
	KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(caps, &attr, IB_WR_SEND_WITH_INV,
					      1, &cost), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(caps, &attr, IB_WR_REG_MR, 0,
					      &cost), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(caps, &attr, IB_WR_RDMA_READ, 1,
					      &cost), -EOPNOTSUPP);
	attr = test_attr(IB_QPT_UD, 0, 128, 4, 0);
	KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(caps, &attr, IB_WR_RDMA_WRITE,
					      1, &cost), -EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(caps, &attr, IB_WR_LOCAL_INV, 0,
					      &cost), -EOPNOTSUPP);

	/* More SGEs than any WQE holds */
	KUNIT_EXPECT_EQ(test, mlx5_ib_calc_wr_layout(&attr, IB_WR_SEND,
						     MAX_SGE + 1, &layout),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, mlx5_ib_calc_wr_layout(&attr, IB_WR_SEND,
						     U32_MAX, &layout),
			-EINVAL);

	/* A WQE the device does not take */
	attr = test_attr(IB_QPT_RC, 0, 0, 30, 0);
	KUNIT_EXPECT_EQ(test, mlx5_ib_wr_cost(&test_caps[0], &attr, IB_WR_SEND,
					      1, &cost), -EINVAL);
}

static struct kunit_case mlx5_ib_wr_cost_cases[] = {
	KUNIT_CASE_PARAM(mlx5_ib_test_layout_vectors,
			 layout_vectors_gen_params),
	KUNIT_CASE(mlx5_ib_test_layout_sweep),
	KUNIT_CASE(mlx5_ib_test_cost_sweep),
	KUNIT_CASE(mlx5_ib_test_cost_granted),
	KUNIT_CASE(mlx5_ib_test_cost_fits_ring),
	KUNIT_CASE(mlx5_ib_test_integrity),
	KUNIT_CASE(mlx5_ib_test_cost_errors),
	{}
};

static struct kunit_suite mlx5_ib_wr_cost_suite = {
	.name = "mlx5_ib_wr_cost",
	.test_cases = mlx5_ib_wr_cost_cases,
};

/* ---- Suite mlx5_ib_wr_drive ---- */

/*
 * The model above and mlx5_ib_calc_wr_layout() are two readings of wr.c;
 * this suite asks wr.c itself.  mlx5_ib_post_send() builds each WR into a
 * Send Queue kept in memory, on a fake device that carries only the caps
 * the builders and the hook read, and the blocks the ring advanced, the
 * WQEs and their ds counts are held against what the hook reports.
 */

enum {
	DRIVE_MAX_SEND_WR = 32,
	DRIVE_RQ_BYTES = 1536,	/* puts the ring mid-page, as an RQ does */
	DRIVE_SGE_LEN = 16,
	DRIVE_MAX_DESCS = 256,
	DRIVE_GUARD = 1024,	/* after each fragment, never to be written */
	DRIVE_POISON = 0x5a,
	DRIVE_ACCESS = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
		       IB_ACCESS_REMOTE_WRITE,
};

struct drive_vector {
	const char *name;
	enum ib_qp_type type;
	u32 flags;
	u32 sge;
	u32 inl;
	enum ib_sig_type sig;
};

static const struct drive_vector drive_vectors[] = {
	{ "RC 1 SGE", IB_QPT_RC, 0, 1, 0, IB_SIGNAL_REQ_WR },
	{ "RC 2 SGEs 64 inline", IB_QPT_RC, 0, 2, 64, IB_SIGNAL_REQ_WR },
	{ "RC 3 SGEs", IB_QPT_RC, 0, 3, 0, IB_SIGNAL_REQ_WR },
	{ "RC 19 SGEs", IB_QPT_RC, 0, 19, 0, IB_SIGNAL_REQ_WR },
	{ "RC 30 SGEs all signaled", IB_QPT_RC, 0, 30, 0, IB_SIGNAL_ALL_WR },
	{ "RC INTEGRITY_EN 2 SGEs", IB_QPT_RC, IB_QP_CREATE_INTEGRITY_EN, 2, 0,
	  IB_SIGNAL_REQ_WR },
	{ "RC INTEGRITY_EN 24 SGEs all signaled", IB_QPT_RC,
	  IB_QP_CREATE_INTEGRITY_EN, 24, 0, IB_SIGNAL_ALL_WR },
	{ "XRC_INI 1 SGE", IB_QPT_XRC_INI, 0, 1, 0, IB_SIGNAL_REQ_WR },
	{ "XRC_INI 2 SGEs", IB_QPT_XRC_INI, 0, 2, 0, IB_SIGNAL_REQ_WR },
	{ "XRC_INI 3 SGEs 256 inline", IB_QPT_XRC_INI, 0, 3, 256,
	  IB_SIGNAL_REQ_WR },
	{ "XRC_INI INTEGRITY_EN 2 SGEs", IB_QPT_XRC_INI,
	  IB_QP_CREATE_INTEGRITY_EN, 2, 0, IB_SIGNAL_REQ_WR },
	{ "UC 4 SGEs 128 inline", IB_QPT_UC, 0, 4, 128, IB_SIGNAL_REQ_WR },
	{ "UD 1 SGE", IB_QPT_UD, 0, 1, 0, IB_SIGNAL_REQ_WR },
	{ "UD 8 SGEs 200 inline", IB_QPT_UD, 0, 8, 200, IB_SIGNAL_ALL_WR },
	/* WQEs of 1024 bytes, whose data fills 1008 */
	{ "UD 1 SGE 940 inline", IB_QPT_UD, 0, 1, 940, IB_SIGNAL_REQ_WR },
	{ "UD 59 SGEs", IB_QPT_UD, 0, 59, 0, IB_SIGNAL_REQ_WR },
	{ "UD LSO 3 SGEs", IB_QPT_UD, IB_QP_CREATE_IPOIB_UD_LSO, 3, 0,
	  IB_SIGNAL_REQ_WR },
};

static const enum ib_wr_opcode drive_ops[] = {
	IB_WR_SEND, IB_WR_SEND_WITH_IMM, IB_WR_SEND_WITH_INV,
	IB_WR_RDMA_WRITE, IB_WR_RDMA_WRITE_WITH_IMM, IB_WR_RDMA_READ,
	IB_WR_ATOMIC_CMP_AND_SWP, IB_WR_ATOMIC_FETCH_AND_ADD,
	IB_WR_MASKED_ATOMIC_CMP_AND_SWP, IB_WR_MASKED_ATOMIC_FETCH_AND_ADD,
	IB_WR_RDMA_READ_WITH_INV, IB_WR_BIND_MW, IB_WR_LOCAL_INV,
	IB_WR_REG_MR, IB_WR_REG_MR_INTEGRITY,
};

struct drive_qp {
	struct ib_qp_init_attr attr;
	struct mlx5_ib_sq_geom geom;
	struct mlx5_ib_dev *dev;
	struct mlx5_ib_pd *pd;
	struct mlx5_ib_qp *qp;
	struct mlx5_ib_ah *ah;
	struct mlx5_ib_mr *mr;		/* REG_MR, and the sig MR's pi_mr */
	struct mlx5_ib_mr *sig_mr;
	struct ib_sge sge[MAX_SGE];
	u8 *data;
	struct mlx5_buf_list *frags;
	unsigned int nfrags;
	const char *name;
	unsigned int posted;
	unsigned int bad;
};

/* How the blocks of a WR compare with those the hook derives */
enum drive_match {
	DRIVE_EXACT,
	DRIVE_AT_MOST,		/* the hook takes the largest choice */
	DRIVE_UNPRICED,		/* inline data, bounded by the room alone */
};

/* What one WR took, as the ring and its control segments tell */
struct drive_result {
	int ret;
	u32 bbs;
	u32 wqes;
	u32 signaled;
	u32 wrs;
	bool overrun;
};

static void drive_post(struct kunit *test, struct drive_qp *d,
		       enum ib_wr_opcode op, u32 num_sge, u32 inl,
		       struct drive_result *res);

/* A WR the hook refuses must be refused whole by the driver too */
static int drive_refused(struct kunit *test, struct drive_qp *d,
			 enum ib_wr_opcode op, u32 num_sge)
{
	struct drive_result res;

	drive_post(test, d, op, num_sge, 0, &res);
	KUNIT_EXPECT_LT_MSG(test, res.ret, 0, "%s opcode %u posted", d->name,
			    op);
	KUNIT_EXPECT_EQ_MSG(test, res.bbs, 0, "%s opcode %u", d->name, op);
	KUNIT_EXPECT_EQ_MSG(test, res.wrs, 0, "%s opcode %u", d->name, op);
	return res.ret;
}

static struct mlx5_ib_mr *drive_mr(struct kunit *test, struct drive_qp *d)
{
	struct mlx5_ib_mr *mr = kunit_kzalloc(test, sizeof(*mr), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, mr);
	mr->descs = kunit_kcalloc(test, DRIVE_MAX_DESCS,
				  sizeof(struct mlx5_klm), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, mr->descs);
	mr->ibmr.device = &d->dev->ib_dev;
	mr->ibmr.pd = &d->pd->ibpd;
	mr->ibmr.lkey = 0x1234;
	mr->ibmr.rkey = 0x1234;
	mr->ibmr.page_size = SZ_4K;
	mr->desc_map = 0x10000;
	mr->max_descs = DRIVE_MAX_DESCS;
	return mr;
}

static void drive_mr_descs(struct mlx5_ib_mr *mr, int access_mode,
			   unsigned int ndescs)
{
	mr->access_mode = access_mode;
	mr->desc_size = access_mode == MLX5_MKC_ACCESS_MODE_MTT ?
			sizeof(u64) : sizeof(struct mlx5_klm);
	mr->mmkey.ndescs = ndescs;
	mr->meta_ndescs = 0;
	mr->ibmr.length = (u64)ndescs * SZ_4K;
}

/*
 * Whether a WR wrote past a fragment of the ring.  If so, the guards are
 * poisoned again and the edge the driver caches, which it then left
 * behind, is put back where the next WQE starts, so that the next WR is
 * judged on its own and does not run further out.
 */
static bool drive_overrun(struct drive_qp *d)
{
	struct mlx5_ib_wq *sq = &d->qp->sq;
	bool overrun = false;
	unsigned int i;

	for (i = 0; i < d->nfrags; i++) {
		void *guard = d->frags[i].buf + PAGE_SIZE;

		if (!memchr_inv(guard, DRIVE_POISON, DRIVE_GUARD))
			continue;
		memset(guard, DRIVE_POISON, DRIVE_GUARD);
		overrun = true;
	}
	if (overrun)
		sq->cur_edge = get_sq_edge(sq, sq->cur_post &
					   (sq->wqe_cnt - 1));
	return overrun;
}

/*
 * A kernel QP as _create_kernel_qp() sets it up, sized by the helper
 * calc_sq_size() calls: the ring after an RQ in page fragments, a
 * doorbell record and a blue flame register in plain memory, which
 * mlx5_write64() stores to on 64-bit.  No CQ: the ring is emptied after
 * every WR, so mlx5r_wq_overflow() never looks at one.
 */
static struct drive_qp *drive_qp_create(struct kunit *test,
					const struct drive_vector *v)
{
	const struct mlx5_ib_sq_caps *caps = &caps_15_1024;
	struct mlx5_core_dev *mdev;
	struct mlx5_buf_list *frags;
	struct mlx5_sq_bfreg *bfreg;
	struct mlx5_hca_cap *hca;
	struct mlx5_ib_qp *qp;
	struct drive_qp *d;
	unsigned int i, npages;
	void *bf;

	d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, d);
	d->attr = test_attr(v->type, v->flags, DRIVE_MAX_SEND_WR, v->sge,
			    v->inl);
	d->attr.sq_sig_type = v->sig;
	d->name = v->name;
	KUNIT_ASSERT_EQ(test, mlx5_ib_calc_sq_geom(caps, &d->attr, &d->geom),
			0);
	KUNIT_ASSERT_LT(test, d->geom.max_gs, MAX_SGE);

	d->dev = kunit_kzalloc(test, sizeof(*d->dev), GFP_KERNEL);
	mdev = kunit_kzalloc(test, sizeof(*mdev), GFP_KERNEL);
	hca = kunit_kzalloc(test, sizeof(*hca), GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, d->dev && mdev && hca);
	MLX5_SET(cmd_hca_cap, hca->cur, log_max_qp_sz, caps->log_max_qp_sz);
	MLX5_SET(cmd_hca_cap, hca->cur, max_wqe_sz_sq, caps->max_wqe_sz_sq);
	MLX5_SET(cmd_hca_cap, hca->cur, xrc, caps->xrc);
	MLX5_SET(cmd_hca_cap, hca->cur, sho, 1);
	MLX5_SET(cmd_hca_cap, hca->cur, ipoib_basic_offloads, 1);
	mdev->caps.hca[MLX5_CAP_GENERAL] = hca;
	d->dev->mdev = mdev;
	d->dev->ib_dev.dev.init_name = "mlx5_ib_wr_drive";

	d->pd = kunit_kzalloc(test, sizeof(*d->pd), GFP_KERNEL);
	d->ah = kunit_kzalloc(test, sizeof(*d->ah), GFP_KERNEL);
	d->data = kunit_kzalloc(test, PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, d->pd && d->ah && d->data);
	d->pd->ibpd.device = &d->dev->ib_dev;
	d->pd->ibpd.local_dma_lkey = 0x100;
	d->pd->pdn = 1;
	d->mr = drive_mr(test, d);
	d->sig_mr = drive_mr(test, d);
	d->sig_mr->pi_mr = d->mr;
	d->sig_mr->sig = kunit_kzalloc(test, sizeof(*d->sig_mr->sig),
				       GFP_KERNEL);
	d->sig_mr->ibmr.sig_attrs = kunit_kzalloc(test,
						  sizeof(struct ib_sig_attrs),
						  GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, d->sig_mr->sig && d->sig_mr->ibmr.sig_attrs);

	qp = kunit_kzalloc(test, sizeof(*qp), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, qp);
	d->qp = qp;
	qp->ibqp.device = &d->dev->ib_dev;
	qp->ibqp.pd = &d->pd->ibpd;
	qp->ibqp.qp_type = v->type;
	qp->ibqp.integrity_en = v->flags & IB_QP_CREATE_INTEGRITY_EN;
	qp->type = v->type;
	qp->flags = v->flags;
	qp->trans_qp.base.mqp.qpn = 0x42;
	if (v->sig == IB_SIGNAL_ALL_WR)
		qp->sq_signal_bits = MLX5_WQE_CTRL_CQ_UPDATE;
	qp->max_inline_data = d->geom.max_inline;
	spin_lock_init(&qp->sq.lock);
	qp->sq.wqe_cnt = d->geom.wqe_cnt;
	qp->sq.wqe_shift = ilog2(MLX5_SEND_WQE_BB);
	qp->sq.max_gs = d->geom.max_gs;
	qp->sq.max_post = d->geom.max_post;
	qp->sq.offset = DRIVE_RQ_BYTES;

	npages = DIV_ROUND_UP(qp->sq.offset + d->geom.wq_size, PAGE_SIZE);
	frags = kunit_kcalloc(test, npages, sizeof(*frags), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, frags);
	/*
	 * Every fragment a page of its own, as mlx5_frag_buf_alloc_node()
	 * allocates them, followed by a poisoned guard: a WQE written past
	 * its fragment changes the guard, which drive_post() checks after
	 * every post, in any build; KASAN reports a write beyond it.
	 */
	for (i = 0; i < npages; i++) {
		frags[i].buf = kunit_kzalloc(test, PAGE_SIZE + DRIVE_GUARD,
					     GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, frags[i].buf);
		memset(frags[i].buf + PAGE_SIZE, DRIVE_POISON, DRIVE_GUARD);
	}
	d->frags = frags;
	d->nfrags = npages;
	mlx5_init_fbc_offset(frags + qp->sq.offset / PAGE_SIZE,
			     ilog2(MLX5_SEND_WQE_BB), ilog2(qp->sq.wqe_cnt),
			     (qp->sq.offset & (PAGE_SIZE - 1)) /
			     MLX5_SEND_WQE_BB, &qp->sq.fbc);
	qp->sq.cur_edge = get_sq_edge(&qp->sq, 0);

	qp->sq.wrid = kunit_kcalloc(test, qp->sq.wqe_cnt,
				    sizeof(*qp->sq.wrid), GFP_KERNEL);
	qp->sq.wr_data = kunit_kcalloc(test, qp->sq.wqe_cnt,
				       sizeof(*qp->sq.wr_data), GFP_KERNEL);
	qp->sq.w_list = kunit_kcalloc(test, qp->sq.wqe_cnt,
				      sizeof(*qp->sq.w_list), GFP_KERNEL);
	qp->sq.wqe_head = kunit_kcalloc(test, qp->sq.wqe_cnt,
					sizeof(*qp->sq.wqe_head), GFP_KERNEL);
	qp->db.db = kunit_kcalloc(test, 2, sizeof(*qp->db.db), GFP_KERNEL);
	bfreg = kunit_kzalloc(test, sizeof(*bfreg), GFP_KERNEL);
	bf = kunit_kzalloc(test, 2 * SZ_256, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, qp->sq.wrid && qp->sq.wr_data &&
			  qp->sq.w_list && qp->sq.wqe_head && qp->db.db &&
			  bfreg && bf);
	bfreg->map = (void __force __iomem *)bf;
	qp->bf.bfreg = bfreg;
	qp->bf.buf_size = SZ_256;

	return d;
}

static bool drive_is_atomic(enum ib_wr_opcode op)
{
	return op == IB_WR_ATOMIC_CMP_AND_SWP ||
	       op == IB_WR_ATOMIC_FETCH_AND_ADD ||
	       op == IB_WR_MASKED_ATOMIC_CMP_AND_SWP ||
	       op == IB_WR_MASKED_ATOMIC_FETCH_AND_ADD;
}

/* Posts one signaled WR of @num_sge SGEs, @inl bytes inline if not 0 */
static void drive_post(struct kunit *test, struct drive_qp *d,
		       enum ib_wr_opcode op, u32 num_sge, u32 inl,
		       struct drive_result *res)
{
	union {
		struct ib_send_wr send;
		struct ib_rdma_wr rdma;
		struct ib_ud_wr ud;
		struct ib_reg_wr reg;
	} wr = {};
	struct mlx5_ib_wq *sq = &d->qp->sq;
	const struct ib_send_wr *bad = NULL;
	u16 start = sq->cur_post, pos;
	unsigned int head = sq->head;
	u32 i, ds;

	for (i = 0; i < num_sge; i++) {
		u32 len = inl ? inl / num_sge + (i < inl % num_sge) :
			  DRIVE_SGE_LEN;

		d->sge[i] = (struct ib_sge){
			.addr = (uintptr_t)d->data, .length = len,
			.lkey = 0x100,
		};
	}
	wr.send.wr_id = ++d->posted;
	wr.send.opcode = op;
	wr.send.send_flags = IB_SEND_SIGNALED | (inl ? IB_SEND_INLINE : 0);
	wr.send.sg_list = d->sge;
	wr.send.num_sge = num_sge;
	wr.send.ex.invalidate_rkey = 0x1234;
	if (d->attr.qp_type == IB_QPT_UD) {
		wr.ud.ah = &d->ah->ibah;
		wr.ud.remote_qpn = 0x43;
		wr.ud.remote_qkey = 0x11111111;
	} else if (op == IB_WR_RDMA_WRITE || op == IB_WR_RDMA_WRITE_WITH_IMM ||
		   op == IB_WR_RDMA_READ || drive_is_atomic(op)) {
		wr.rdma.remote_addr = 0x20000;
		wr.rdma.rkey = 0x5678;
	} else if (op == IB_WR_REG_MR || op == IB_WR_REG_MR_INTEGRITY) {
		wr.reg.mr = op == IB_WR_REG_MR ? &d->mr->ibmr :
						 &d->sig_mr->ibmr;
		wr.reg.key = 0x1234;
		wr.reg.access = DRIVE_ACCESS;
		/* As ib_check_mr_status() leaves it before the next use */
		d->sig_mr->sig->sig_status_checked = true;
	}

	res->ret = mlx5_ib_post_send(&d->qp->ibqp, &wr.send, &bad, false);
	res->bbs = (u16)(sq->cur_post - start);
	res->wrs = sq->head - head;
	res->wqes = 0;
	res->signaled = 0;
	/* Walk the WQEs by the ds count each control segment carries */
	for (pos = start; pos != sq->cur_post && res->wqes <= res->bbs;
	     res->wqes++) {
		struct mlx5_wqe_ctrl_seg *ctrl =
			mlx5_frag_buf_get_wqe(&sq->fbc,
					      pos & (sq->wqe_cnt - 1));

		ds = be32_to_cpu(ctrl->qpn_ds) & MLX5_WQE_CTRL_DS_MASK;
		pos += DIV_ROUND_UP(ds * MLX5_SEND_WQE_DS, MLX5_SEND_WQE_BB);
		if (ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE)
			res->signaled++;
	}
	KUNIT_EXPECT_EQ_MSG(test, pos, sq->cur_post,
			    "%s opcode %u: ds counts and ring disagree",
			    d->name, op);
	res->overrun = drive_overrun(d);
	KUNIT_EXPECT_FALSE_MSG(test, res->overrun,
			       "%s opcode %u at block %u: written past its fragment",
			       d->name, op, start & (sq->wqe_cnt - 1));
	if (res->bbs)
		KUNIT_EXPECT_EQ(test, be32_to_cpu(d->qp->db.db[MLX5_SND_DBR]),
				sq->cur_post);
	/* Every WQE completed: the next WR finds an empty ring */
	sq->tail = sq->head;
}

/*
 * The hook against one WR the builders wrote: a single WR of max_send_wr
 * whatever its WQEs, as mlx5r_wq_overflow() counts; its blocks within
 * the units it costs, each the room calc_sq_size() reserves per WR, and
 * as @match says against the @bbs the hook derives; its completions.
 */
static void drive_check(struct kunit *test, struct drive_qp *d,
			enum ib_wr_opcode op, u32 num_sge, u32 inl,
			const struct drive_result *res,
			const struct ib_wr_cost *cost, u32 bbs,
			enum drive_match match)
{
	bool blocks = match == DRIVE_EXACT ? res->bbs == bbs :
		      match == DRIVE_AT_MOST ? res->bbs <= bbs : true;

	/*
	 * mlx5r_wq_overflow() admits WRs by count: a WR larger than the room
	 * the QP reserves for each overwrites the WQEs of others once the
	 * ring is full.
	 */
	KUNIT_EXPECT_LE_MSG(test, res->bbs * MLX5_SEND_WQE_BB, d->geom.wqe_size,
			    "%s opcode %u: larger than the room of one WR",
			    d->name, op);
	if (!res->ret && res->wrs == 1 && blocks &&
	    res->bbs * MLX5_SEND_WQE_BB <= cost->sq_units * d->geom.wqe_size &&
	    res->wqes == cost->cqe_error && res->signaled == cost->cqe_signaled)
		return;
	if (d->bad++ < MAX_REPORTS)
		KUNIT_FAIL(test,
			   "%s opcode %u %u SGEs %u inline: ret %d, %u WRs, %u blocks (hook %u, match %d) in %u units of %u bytes, %u WQEs (hook %u), %u signaled (hook %u)",
			   d->name, op, num_sge, inl, res->ret, res->wrs,
			   res->bbs, bbs, match, cost->sq_units,
			   d->geom.wqe_size, res->wqes, cost->cqe_error,
			   res->signaled, cost->cqe_signaled);
}

static void drive_data(struct kunit *test, struct drive_qp *d,
		       enum ib_wr_opcode op, u32 num_sge, u32 inl)
{
	bool rc = d->attr.qp_type == IB_QPT_RC ||
		  d->attr.qp_type == IB_QPT_XRC_INI;
	struct mlx5_ib_wr_layout layout;
	struct drive_result res;
	struct ib_wr_cost cost;
	int err;

	err = mlx5_ib_get_wr_cost(&d->dev->ib_dev, &d->attr, op, num_sge,
				  &cost);
	if (err) {
		KUNIT_EXPECT_EQ(test, err, -EOPNOTSUPP);
		/* The driver refuses it as well, with a warning: once */
		if (num_sge != 1)
			return;
		/*
		 * But for SEND_WITH_INV on UC, which IBA does not define and
		 * the driver has always posted
		 */
		if (op == IB_WR_SEND_WITH_INV &&
		    d->attr.qp_type == IB_QPT_UC)
			return;
		err = drive_refused(test, d, op, num_sge);
		if (rc && drive_is_atomic(op))
			KUNIT_EXPECT_EQ(test, err, -EOPNOTSUPP);
		return;
	}
	KUNIT_ASSERT_EQ(test, mlx5_ib_calc_wr_layout(&d->attr, op, num_sge,
						     &layout), 0);
	drive_post(test, d, op, num_sge, inl, &res);
	drive_check(test, d, op, num_sge, inl, &res, &cost, layout.bbs,
		    inl ? DRIVE_UNPRICED : DRIVE_EXACT);
}

/*
 * The blocks of a REG_MR depend on its descriptor list, which the hook
 * does not see: it reports the largest, which every list must fit in and
 * one must take.  Those of a REG_MR_INTEGRITY also depend on whether the
 * protection is interleaved with the data.
 */
static void drive_registration(struct kunit *test, struct drive_qp *d,
			       enum ib_wr_opcode op)
{
	static const struct {
		int mode;
		unsigned int ndescs;
	} lists[] = {
		{ MLX5_MKC_ACCESS_MODE_MTT, 1 }, { MLX5_MKC_ACCESS_MODE_MTT, 4 },
		{ MLX5_MKC_ACCESS_MODE_MTT, 6 }, { MLX5_MKC_ACCESS_MODE_MTT, 7 },
		{ MLX5_MKC_ACCESS_MODE_MTT, 8 }, { MLX5_MKC_ACCESS_MODE_MTT, 9 },
		{ MLX5_MKC_ACCESS_MODE_MTT, DRIVE_MAX_DESCS },
		{ MLX5_MKC_ACCESS_MODE_KLMS, 1 },
		{ MLX5_MKC_ACCESS_MODE_KLMS, 3 },
		{ MLX5_MKC_ACCESS_MODE_KLMS, 4 },
		{ MLX5_MKC_ACCESS_MODE_KLMS, 5 },
		{ MLX5_MKC_ACCESS_MODE_KLMS, DRIVE_MAX_DESCS },
	};
	struct ib_sig_attrs *sig = d->sig_mr->ibmr.sig_attrs;
	struct mlx5_ib_mr *mr = d->mr;
	struct mlx5_ib_wr_layout layout;
	struct drive_result res;
	struct ib_wr_cost cost;
	unsigned int i, n;
	u32 most = 0;
	int err;

	err = mlx5_ib_get_wr_cost(&d->dev->ib_dev, &d->attr, op, 0, &cost);
	if (err) {
		KUNIT_EXPECT_EQ(test, err, -EOPNOTSUPP);
		drive_refused(test, d, op, 0);
		return;
	}
	KUNIT_ASSERT_EQ(test, mlx5_ib_calc_wr_layout(&d->attr, op, 0,
						     &layout), 0);

	n = op == IB_WR_LOCAL_INV ? 1 : ARRAY_SIZE(lists);
	for (i = 0; i < n; i++) {
		drive_mr_descs(mr, lists[i].mode, lists[i].ndescs);
		if (op == IB_WR_REG_MR_INTEGRITY) {
			bool prot = i & 1;

			mr->meta_ndescs = prot;
			mr->data_length = lists[i].ndescs * 512;
			mr->data_iova = 0x100000;
			mr->meta_length = prot * lists[i].ndescs * 8;
			mr->pi_iova = 0x200000;
			sig->mem.sig_type = prot ? IB_SIG_TYPE_T10_DIF :
						   IB_SIG_TYPE_NONE;
			sig->mem.sig.dif.pi_interval = 512;
			sig->wire.sig_type = IB_SIG_TYPE_T10_DIF;
			sig->wire.sig.dif.pi_interval = 512;
		}
		drive_post(test, d, op, 0, 0, &res);
		drive_check(test, d, op, 0, 0, &res, &cost, layout.bbs,
			    DRIVE_AT_MOST);
		most = max(most, res.bbs);
	}
	KUNIT_EXPECT_EQ_MSG(test, most, layout.bbs, "%s opcode %u", d->name,
			    op);
}

static void drive_vector_desc(const struct drive_vector *v, char *desc)
{
	strscpy(desc, v->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(drive_vectors, drive_vectors, drive_vector_desc);

/* Every opcode the hook prices, at every SGE count the QP takes */
static void mlx5_ib_test_drive(struct kunit *test)
{
	const struct drive_vector *v = test->param_value;
	struct drive_qp *d = drive_qp_create(test, v);
	struct drive_result res;
	struct ib_wr_cost cost;
	unsigned int i;
	u32 n;

	for (i = 0; i < ARRAY_SIZE(drive_ops); i++) {
		enum ib_wr_opcode op = drive_ops[i];

		if (is_registration(op)) {
			drive_registration(test, d, op);
			continue;
		}
		for (n = 0; n <= d->geom.max_gs; n++)
			drive_data(test, d, op, n, 0);
		if (v->inl && op != IB_WR_RDMA_READ) {
			drive_data(test, d, op, 1, d->geom.max_inline);
			drive_data(test, d, op, d->geom.max_gs,
				   d->geom.max_inline);
		}
	}

	/* One SGE more than the QP takes: both refuse it */
	n = d->geom.max_gs + 1;
	KUNIT_EXPECT_EQ(test, mlx5_ib_get_wr_cost(&d->dev->ib_dev, &d->attr,
						  IB_WR_SEND, n, &cost),
			-EINVAL);
	drive_post(test, d, IB_WR_SEND, n, 0, &res);
	KUNIT_EXPECT_EQ(test, res.ret, -EINVAL);
	KUNIT_EXPECT_EQ(test, res.bbs, 0);

	KUNIT_EXPECT_EQ(test, d->bad, 0);
	kunit_info(test, "%u WRs posted\n", d->posted);
}

/*
 * Figures counted by hand: the largest inline descriptor list, 8 MTTs,
 * takes 3 blocks on RC and 4 on XRC_INI, which a QP of 1 SGE reserves
 * for every WR on either.
 */
static void mlx5_ib_test_drive_known(struct kunit *test)
{
	static const struct drive_vector rc = {
		"RC 1 SGE", IB_QPT_RC, 0, 1, 0, IB_SIGNAL_REQ_WR,
	};
	static const struct drive_vector xrc = {
		"XRC_INI 1 SGE", IB_QPT_XRC_INI, 0, 1, 0, IB_SIGNAL_REQ_WR,
	};
	static const struct {
		const struct drive_vector *v;
		enum ib_wr_opcode op;
		u32 bbs;
		u32 room;
	} known[] = {
		{ &rc, IB_WR_REG_MR, 3, 3 },
		{ &rc, IB_WR_LOCAL_INV, 2, 3 },
		{ &xrc, IB_WR_REG_MR, 4, 4 },
		{ &xrc, IB_WR_LOCAL_INV, 3, 4 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(known); i++) {
		struct drive_qp *d = drive_qp_create(test, known[i].v);
		struct mlx5_ib_wr_layout layout;
		struct drive_result res;
		struct ib_wr_cost cost;

		KUNIT_EXPECT_EQ_MSG(test, d->geom.wqe_size,
				    known[i].room * MLX5_SEND_WQE_BB,
				    "%s opcode %u", d->name, known[i].op);
		KUNIT_ASSERT_EQ(test, mlx5_ib_get_wr_cost(&d->dev->ib_dev,
							  &d->attr, known[i].op,
							  0, &cost), 0);
		KUNIT_ASSERT_EQ(test, mlx5_ib_calc_wr_layout(&d->attr,
							     known[i].op, 0,
							     &layout), 0);
		drive_mr_descs(d->mr, MLX5_MKC_ACCESS_MODE_MTT, 8);
		drive_post(test, d, known[i].op, 0, 0, &res);
		KUNIT_EXPECT_EQ(test, res.ret, 0);
		KUNIT_EXPECT_EQ_MSG(test, res.bbs, known[i].bbs, "%s opcode %u",
				    d->name, known[i].op);
		KUNIT_EXPECT_EQ(test, layout.bbs, known[i].bbs);
		KUNIT_EXPECT_EQ(test, cost.sq_units, 1);
	}
}

/*
 * A QP context takes log_sq_size in 4 bits: on a device that reports a
 * larger log_max_qp_sz the budget, as QP creation, stops at 2^15 blocks.
 */
static void mlx5_ib_test_drive_log_sq_size(struct kunit *test)
{
	static const struct drive_vector rc = {
		"RC 1 SGE", IB_QPT_RC, 0, 1, 0, IB_SIGNAL_REQ_WR,
	};
	struct drive_qp *d = drive_qp_create(test, &rc);
	void *hca = d->dev->mdev->caps.hca[MLX5_CAP_GENERAL]->cur;
	struct ib_qp_init_attr attr = d->attr;
	struct ib_qp_budget budget;
	u32 log;

	attr.cap.max_recv_wr = 0;
	attr.cap.max_recv_sge = 0;
	for (log = 14; log <= 17; log++) {
		MLX5_SET(cmd_hca_cap, hca, log_max_qp_sz, log);
		KUNIT_ASSERT_EQ(test, mlx5_ib_query_qp_budget(&d->dev->ib_dev,
							      &attr, &budget),
				0);
		KUNIT_EXPECT_EQ_MSG(test, budget.max_send_wr_limit,
				    (MLX5_SEND_WQE_BB << min(log, 15U)) /
				    d->geom.wqe_size,
				    "log_max_qp_sz %u", log);
	}
}

static void drive_flag_caps(void *hca, bool on)
{
	MLX5_SET(cmd_hca_cap, hca, sho, on);
	MLX5_SET(cmd_hca_cap, hca, block_lb_mc, on);
	MLX5_SET(cmd_hca_cap, hca, cd, on);
	MLX5_SET(cmd_hca_cap, hca, ipoib_basic_offloads, on);
	MLX5_SET(cmd_hca_cap, hca, end_pad, on);
}

/*
 * The budget takes a create flag as process_create_flags() does, by the
 * device cap they both read through mlx5_ib_create_flags_caps(): with
 * the cap, and on a QP type that takes it.
 */
static void mlx5_ib_test_drive_create_flags(struct kunit *test)
{
	static const struct drive_vector rc = {
		"RC 1 SGE", IB_QPT_RC, 0, 1, 0, IB_SIGNAL_REQ_WR,
	};
	static const struct {
		u32 flag;
		enum ib_qp_type type;
		bool ok;
	} flags[] = {
		{ IB_QP_CREATE_INTEGRITY_EN, IB_QPT_RC, true },
		{ IB_QP_CREATE_BLOCK_MULTICAST_LOOPBACK, IB_QPT_UD, true },
		{ IB_QP_CREATE_CROSS_CHANNEL, IB_QPT_RC, true },
		{ IB_QP_CREATE_MANAGED_SEND, IB_QPT_RC, true },
		{ IB_QP_CREATE_MANAGED_RECV, IB_QPT_RC, true },
		{ IB_QP_CREATE_IPOIB_UD_LSO, IB_QPT_UD, true },
		{ IB_QP_CREATE_IPOIB_UD_LSO, IB_QPT_RC, false },
		{ IB_QP_CREATE_PCI_WRITE_END_PADDING, IB_QPT_UC, true },
	};
	struct drive_qp *d = drive_qp_create(test, &rc);
	void *hca = d->dev->mdev->caps.hca[MLX5_CAP_GENERAL]->cur;
	struct ib_qp_budget budget;
	unsigned int i, on;

	for (on = 0; on < 2; on++) {
		drive_flag_caps(hca, on);
		for (i = 0; i < ARRAY_SIZE(flags); i++) {
			struct ib_qp_init_attr attr = d->attr;
			int err;

			attr.qp_type = flags[i].type;
			attr.create_flags = flags[i].flag;
			attr.cap.max_recv_wr = 0;
			attr.cap.max_recv_sge = 0;
			err = mlx5_ib_query_qp_budget(&d->dev->ib_dev, &attr,
						      &budget);
			KUNIT_EXPECT_EQ_MSG(test, err,
					    on && flags[i].ok ? 0 : -EOPNOTSUPP,
					    "flag 0x%x type %d cap %u",
					    flags[i].flag, flags[i].type, on);
		}
	}
}

/* The blocks from @start to the ring's cur_post, WQE indexes masked out */
static u32 drive_read(struct drive_qp *d, u16 start, u8 *buf, u32 len)
{
	struct mlx5_ib_wq *sq = &d->qp->sq;
	u32 bbs = (u16)(sq->cur_post - start), pos, n, ds;

	if (bbs * MLX5_SEND_WQE_BB > len)
		return 0;
	for (pos = 0; pos < bbs; pos++)
		memcpy(buf + pos * MLX5_SEND_WQE_BB,
		       mlx5_frag_buf_get_wqe(&sq->fbc, (start + pos) &
					     (sq->wqe_cnt - 1)),
		       MLX5_SEND_WQE_BB);
	for (pos = 0; pos < bbs; pos += n) {
		struct mlx5_wqe_ctrl_seg *ctrl =
			(void *)buf + pos * MLX5_SEND_WQE_BB;

		ds = be32_to_cpu(ctrl->qpn_ds) & MLX5_WQE_CTRL_DS_MASK;
		n = DIV_ROUND_UP(ds * MLX5_SEND_WQE_DS, MLX5_SEND_WQE_BB);
		if (!n)
			break;
		ctrl->opmod_idx_opcode &= cpu_to_be32(0xff0000ff);
	}
	return bbs;
}

struct drive_edge_wr {
	const char *name;
	enum ib_wr_opcode op;
	int mode;
	unsigned int ndescs;
	bool prot;
	bool pi_mr;
};

static const struct drive_edge_wr drive_edge_wrs[] = {
	{ "LOCAL_INV", IB_WR_LOCAL_INV, MLX5_MKC_ACCESS_MODE_MTT, 1 },
	{ "REG_MR 8 MTTs inline", IB_WR_REG_MR, MLX5_MKC_ACCESS_MODE_MTT, 8 },
	{ "REG_MR 256 MTTs", IB_WR_REG_MR, MLX5_MKC_ACCESS_MODE_MTT,
	  DRIVE_MAX_DESCS },
	{ "REG_MR_INTEGRITY", IB_WR_REG_MR_INTEGRITY,
	  MLX5_MKC_ACCESS_MODE_MTT, 4, false, true },
	{ "REG_MR_INTEGRITY protected", IB_WR_REG_MR_INTEGRITY,
	  MLX5_MKC_ACCESS_MODE_KLMS, 4, true, true },
	{ "REG_MR_INTEGRITY protected without pi_mr", IB_WR_REG_MR_INTEGRITY,
	  MLX5_MKC_ACCESS_MODE_KLMS, 4, true, false },
};

static void drive_edge_setup(struct drive_qp *d, const struct drive_edge_wr *w)
{
	struct ib_sig_attrs *sig = d->sig_mr->ibmr.sig_attrs;
	struct mlx5_ib_mr *mr = w->pi_mr ? d->mr : d->sig_mr;

	drive_mr_descs(d->mr, w->mode, w->ndescs);
	d->sig_mr->pi_mr = w->pi_mr ? d->mr : NULL;
	if (w->op != IB_WR_REG_MR_INTEGRITY)
		return;
	mr->mmkey.ndescs = w->ndescs;
	mr->meta_ndescs = w->prot;
	mr->data_length = w->ndescs * 512;
	mr->data_iova = 0x100000;
	mr->meta_length = w->prot * w->ndescs * 8;
	mr->pi_iova = 0x200000;
	mr->ibmr.length = mr->data_length + mr->meta_length;
	sig->mem.sig_type = w->prot ? IB_SIG_TYPE_T10_DIF : IB_SIG_TYPE_NONE;
	sig->mem.sig.dif.pi_interval = 512;
	sig->wire.sig_type = IB_SIG_TYPE_T10_DIF;
	sig->wire.sig.dif.pi_interval = 512;
}

/* Posts @w with its first WQE at block @idx of an emptied ring */
static u32 drive_post_at(struct kunit *test, struct drive_qp *d,
			 const struct drive_edge_wr *w, u16 idx, u8 *buf,
			 u32 len, struct drive_result *res)
{
	struct mlx5_ib_wq *sq = &d->qp->sq;
	unsigned int i;

	/* Without a pi_mr the driver leaves one on its stack in the MR */
	drive_edge_setup(d, w);

	for (i = 0; i < d->nfrags; i++)
		memset(d->frags[i].buf, 0, PAGE_SIZE);
	sq->cur_post = idx;
	sq->cur_edge = get_sq_edge(sq, idx);
	drive_post(test, d, w->op, 0, 0, res);
	return drive_read(d, idx, buf, len);
}

static const struct drive_vector drive_edge_vectors[] = {
	{ "RC INTEGRITY_EN 2 SGEs", IB_QPT_RC, IB_QP_CREATE_INTEGRITY_EN, 2, 0,
	  IB_SIGNAL_REQ_WR },
	{ "XRC_INI 1 SGE", IB_QPT_XRC_INI, 0, 1, 0, IB_SIGNAL_REQ_WR },
	{ "XRC_INI INTEGRITY_EN 2 SGEs", IB_QPT_XRC_INI,
	  IB_QP_CREATE_INTEGRITY_EN, 2, 0, IB_SIGNAL_REQ_WR },
};

KUNIT_ARRAY_PARAM(drive_edge_vectors, drive_edge_vectors, drive_vector_desc);

enum { DRIVE_EDGE_STARTS = 4 };	/* the last blocks of a fragment */

/*
 * A WQE that starts in one of the last blocks of a fragment goes on in
 * the next one, and wr.c looks for the edge only between segments.  On
 * XRC_INI the XRC segment puts all later segments 16 bytes past a block,
 * so a UMR segment can cross the edge.  Posted to start in each of the
 * last blocks of a fragment, every UMR WR must stay within the ring and
 * come out as it does at the start of the fragment, byte for byte.
 */
static void mlx5_ib_test_drive_fragment_edge(struct kunit *test)
{
	const struct drive_vector *v = test->param_value;
	struct drive_qp *d = drive_qp_create(test, v);
	u32 len = 16 * MLX5_SEND_WQE_BB;
	u8 *want = kunit_kzalloc(test, len, GFP_KERNEL);
	u8 *got = kunit_kzalloc(test, len, GFP_KERNEL);
	unsigned int i, k, placed = 0, overrun = 0, differ = 0;
	struct drive_result res;
	u16 edge;

	KUNIT_ASSERT_TRUE(test, want && got);
	/* The first fragment ends this many blocks into the ring */
	edge = (PAGE_SIZE - DRIVE_RQ_BYTES % PAGE_SIZE) / MLX5_SEND_WQE_BB;
	KUNIT_ASSERT_LT(test, edge + 16, d->qp->sq.wqe_cnt);
	KUNIT_ASSERT_PTR_EQ(test, get_sq_edge(&d->qp->sq, edge - 1),
			    mlx5_frag_buf_get_wqe(&d->qp->sq.fbc, edge - 1) +
			    MLX5_SEND_WQE_BB);

	for (i = 0; i < ARRAY_SIZE(drive_edge_wrs); i++) {
		const struct drive_edge_wr *w = &drive_edge_wrs[i];
		u32 bbs;

		if (w->op == IB_WR_REG_MR_INTEGRITY &&
		    !(v->flags & IB_QP_CREATE_INTEGRITY_EN))
			continue;
		bbs = drive_post_at(test, d, w, edge, want, len, &res);
		KUNIT_ASSERT_EQ_MSG(test, res.ret, 0, "%s", w->name);
		KUNIT_ASSERT_FALSE(test, res.overrun);
		KUNIT_ASSERT_GT(test, bbs, 0);

		for (k = 1; k <= DRIVE_EDGE_STARTS; k++) {
			u32 n = drive_post_at(test, d, w, edge - k, got, len,
					      &res);

			placed++;
			KUNIT_EXPECT_EQ(test, res.ret, 0);
			if (res.overrun)
				overrun++;
			if (n != bbs || memcmp(want, got, bbs * MLX5_SEND_WQE_BB))
				differ++;
			KUNIT_EXPECT_TRUE_MSG(test, n == bbs &&
					      !memcmp(want, got,
						      bbs * MLX5_SEND_WQE_BB),
					      "%s %s from %u blocks before the edge: WQEs differ from the fragment's start",
					      v->name, w->name, k);
		}
	}
	d->sig_mr->pi_mr = d->mr;
	kunit_info(test, "%u placements, %u written past their fragment, %u built wrong\n",
		   placed, overrun, differ);
	KUNIT_EXPECT_EQ(test, overrun, 0);
	KUNIT_EXPECT_EQ(test, differ, 0);
}

/* A CQ that only mlx5_ib_poll_cq()'s software paths look at */
static struct mlx5_ib_cq *drive_cq_create(struct kunit *test,
					  struct drive_qp *d)
{
	struct mlx5_ib_cq *cq = kunit_kzalloc(test, sizeof(*cq), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, cq);
	cq->ibcq.device = &d->dev->ib_dev;
	spin_lock_init(&cq->lock);
	INIT_LIST_HEAD(&cq->wc_list);
	INIT_LIST_HEAD(&cq->list_send_qp);
	INIT_LIST_HEAD(&cq->list_recv_qp);
	list_add_tail(&d->qp->cq_send_list, &cq->list_send_qp);
	d->qp->ibqp.send_cq = &cq->ibcq;
	return cq;
}

/*
 * After a fatal error mlx5_ib_poll_cq() makes up the flush completions
 * of the WRs the device will never complete.  A REG_MR_INTEGRITY is 4
 * WQEs, each flushed on its own; the WRs after it must be flushed too,
 * or ib_drain_sq() waits for its drain WR forever.
 */
static void mlx5_ib_test_drive_flush_after_fatal_error(struct kunit *test)
{
	static const struct drive_vector v = {
		"RC INTEGRITY_EN 2 SGEs", IB_QPT_RC, IB_QP_CREATE_INTEGRITY_EN,
		2, 0, IB_SIGNAL_REQ_WR,
	};
	static const struct drive_edge_wr integrity = {
		"REG_MR_INTEGRITY", IB_WR_REG_MR_INTEGRITY,
		MLX5_MKC_ACCESS_MODE_MTT, 4, false, true,
	};
	struct drive_qp *d = drive_qp_create(test, &v);
	struct mlx5_ib_cq *cq = drive_cq_create(test, d);
	struct mlx5_ib_wq *sq = &d->qp->sq;
	static const u64 want[] = { 1, 1, 1, 1, 2, 3 };
	const int nwant = ARRAY_SIZE(want);
	struct drive_result res;
	struct ib_wc wc[16] = {};
	int i, n, got = 0;
	unsigned int tail;

	/* Three WRs left outstanding: drive_post() would retire them */
	tail = sq->tail;
	drive_edge_setup(d, &integrity);
	drive_post(test, d, IB_WR_REG_MR_INTEGRITY, 0, 0, &res);
	KUNIT_ASSERT_EQ(test, res.ret, 0);
	KUNIT_ASSERT_EQ(test, res.wqes, 4);
	drive_post(test, d, IB_WR_SEND, 1, 0, &res);
	KUNIT_ASSERT_EQ(test, res.ret, 0);
	drive_post(test, d, IB_WR_SEND, 1, 0, &res);
	KUNIT_ASSERT_EQ(test, res.ret, 0);
	sq->tail = tail;
	KUNIT_ASSERT_EQ(test, sq->head - sq->tail, 3);

	d->dev->mdev->state = MLX5_DEVICE_STATE_INTERNAL_ERROR;
	/* Two at a time, so that a flush resumes where the last one ended */
	do {
		n = mlx5_ib_poll_cq(&cq->ibcq, 2, wc + got);
		KUNIT_ASSERT_GE(test, n, 0);
		KUNIT_ASSERT_LE(test, n, 2);
		got += n;
	} while (n && got <= ARRAY_SIZE(wc) - 2);

	kunit_info(test, "%d flush completions for %d WQEs\n", got, nwant);
	KUNIT_EXPECT_EQ(test, got, nwant);
	for (i = 0; i < got && i < nwant; i++) {
		KUNIT_EXPECT_EQ_MSG(test, wc[i].wr_id, want[i], "completion %d",
				    i);
		KUNIT_EXPECT_EQ(test, wc[i].status, IB_WC_WR_FLUSH_ERR);
		KUNIT_EXPECT_PTR_EQ(test, wc[i].qp, &d->qp->ibqp);
	}
	KUNIT_EXPECT_EQ(test, sq->tail, sq->head);
	KUNIT_EXPECT_EQ(test, sq->last_poll, sq->cur_post);
	KUNIT_EXPECT_EQ(test, mlx5_ib_poll_cq(&cq->ibcq, 2, wc), 0);
	d->dev->mdev->state = MLX5_DEVICE_STATE_UP;
}

/* ---- A Send Queue run full, with a CQ that completes it ---- */

enum {
	RING_CQ_LOG = 6,	/* 64 CQEs: one page, one fragment */
	RING_POLL = 4,		/* CQEs taken by one poll */
	RING_MAX_CHAIN = 5,
	RING_ROUNDS = 3000,
	RING_REFUSE_EVERY = 250,	/* the driver warns at each refusal */
};

/* One ib_slot_post()-like chain: only its last WR is signaled */
struct ring_chain {
	u64 wr_id;		/* of the last, signaled WR */
	u16 wqe;		/* the index of its WQE in the ring */
	u16 end;		/* cur_post after the chain */
	u32 units;		/* what the WR cost hook charges for it */
};

struct ring_run {
	struct drive_qp *d;
	struct mlx5_ib_cq *cq;
	u32 cq_prod;		/* CQEs the "device" wrote */
	struct ring_chain *chains;
	u32 first, nr;		/* the chains not yet completed */
	u32 units;		/* their units */
	u32 budget;		/* what the QP was granted: max_send_wr */
	unsigned long wrs, polled, refused;
	u16 wraps;
	struct rnd_state rnd;
};

static void ring_qp_untrack(void *arg)
{
	struct drive_qp *d = arg;

	radix_tree_delete(&d->dev->qp_table.tree,
			  d->qp->trans_qp.base.mqp.qpn);
}

/*
 * The CQ of drive_cq_create() with a ring of CQEs that the test writes as
 * the device would, and the QP in the device's table, where mlx5_poll_one()
 * looks a CQE's QP number up.
 */
static void ring_cq_setup(struct kunit *test, struct ring_run *r)
{
	struct drive_qp *d = r->d;
	struct mlx5_ib_cq *cq = r->cq;
	struct mlx5_buf_list *frag;
	unsigned int i;

	frag = kunit_kzalloc(test, sizeof(*frag), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, frag);
	frag->buf = kunit_kzalloc(test, sizeof(struct mlx5_cqe64) <<
				  RING_CQ_LOG, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, frag->buf);
	mlx5_init_fbc(frag, ilog2(sizeof(struct mlx5_cqe64)), RING_CQ_LOG,
		      &cq->buf.fbc);
	for (i = 0; i < 1 << RING_CQ_LOG; i++) {
		struct mlx5_cqe64 *cqe = mlx5_frag_buf_get_wqe(&cq->buf.fbc, i);

		cqe->op_own = MLX5_CQE_INVALID << 4 | MLX5_CQE_OWNER_MASK;
	}
	cq->ibcq.cqe = (1 << RING_CQ_LOG) - 1;
	cq->mcq.cqe_sz = sizeof(struct mlx5_cqe64);
	cq->mcq.set_ci_db = kunit_kzalloc(test, 2 * sizeof(__be32),
					  GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, cq->mcq.set_ci_db);

	d->qp->trans_qp.base.container_mibqp = d->qp;
	INIT_RADIX_TREE(&d->dev->qp_table.tree, GFP_KERNEL);
	KUNIT_ASSERT_EQ(test,
			radix_tree_insert(&d->dev->qp_table.tree,
					  d->qp->trans_qp.base.mqp.qpn,
					  &d->qp->trans_qp.base.mqp), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, ring_qp_untrack,
							d), 0);
}

/* The device completes the WQE at @wqe: one CQE, in order */
static void ring_complete(struct ring_run *r, u16 wqe)
{
	struct mlx5_ib_cq *cq = r->cq;
	u32 n = r->cq_prod++;
	struct mlx5_cqe64 *cqe =
		mlx5_frag_buf_get_wqe(&cq->buf.fbc, n & cq->ibcq.cqe);
	u32 qpn = r->d->qp->trans_qp.base.mqp.qpn;

	memset(cqe, 0, sizeof(*cqe));
	cqe->sop_drop_qpn = cpu_to_be32(MLX5_OPCODE_SEND << 24 | qpn);
	cqe->wqe_counter = cpu_to_be16(wqe);
	/* The opcode and the owner bit last, as the device writes them */
	wmb();
	cqe->op_own = MLX5_CQE_REQ << 4 | !!(n & (cq->ibcq.cqe + 1));
}

static const enum ib_wr_opcode ring_shapes[][RING_MAX_CHAIN] = {
	{ IB_WR_SEND },
	{ IB_WR_RDMA_WRITE, IB_WR_SEND },
	{ IB_WR_LOCAL_INV, IB_WR_REG_MR, IB_WR_RDMA_READ, IB_WR_SEND },
	{ IB_WR_REG_MR, IB_WR_RDMA_WRITE, IB_WR_RDMA_WRITE_WITH_IMM,
	  IB_WR_SEND_WITH_INV },
	{ IB_WR_LOCAL_INV, IB_WR_REG_MR_INTEGRITY, IB_WR_RDMA_WRITE,
	  IB_WR_SEND },
};

/*
 * Posts one chain of @n WRs whose last is signaled, as ib_slot_post()
 * does, and returns what mlx5_ib_post_send() returned; *@posted is the
 * number of its WRs in the ring.
 */
static int ring_post(struct kunit *test, struct ring_run *r,
		     const enum ib_wr_opcode *ops, unsigned int n,
		     unsigned int *posted)
{
	union {
		struct ib_send_wr send;
		struct ib_rdma_wr rdma;
		struct ib_reg_wr reg;
	} wr[RING_MAX_CHAIN] = {};
	struct drive_qp *d = r->d;
	const struct ib_send_wr *bad = NULL;
	unsigned int i, head = d->qp->sq.head;
	u32 max_sge = d->attr.cap.max_send_sge;
	int ret;

	for (i = 0; i < max_sge; i++)
		d->sge[i] = (struct ib_sge){
			.addr = (uintptr_t)d->data, .length = DRIVE_SGE_LEN,
			.lkey = 0x100,
		};
	for (i = 0; i < n; i++) {
		struct ib_send_wr *w = &wr[i].send;

		w->wr_id = ++d->posted;
		w->opcode = ops[i];
		w->send_flags = i == n - 1 ? IB_SEND_SIGNALED : 0;
		w->next = i == n - 1 ? NULL : &wr[i + 1].send;
		w->ex.invalidate_rkey = 0x1234;
		switch (ops[i]) {
		case IB_WR_RDMA_WRITE:
		case IB_WR_RDMA_WRITE_WITH_IMM:
		case IB_WR_RDMA_READ:
			wr[i].rdma.remote_addr = 0x20000;
			wr[i].rdma.rkey = 0x5678;
			fallthrough;
		case IB_WR_SEND:
		case IB_WR_SEND_WITH_INV:
			w->sg_list = d->sge;
			w->num_sge = max_sge ?
				     1 + prandom_u32_state(&r->rnd) % max_sge :
				     0;
			break;
		case IB_WR_REG_MR:
			wr[i].reg.mr = &d->mr->ibmr;
			wr[i].reg.key = 0x1234;
			wr[i].reg.access = DRIVE_ACCESS;
			break;
		case IB_WR_REG_MR_INTEGRITY:
			wr[i].reg.mr = &d->sig_mr->ibmr;
			wr[i].reg.key = 0x1234;
			wr[i].reg.access = DRIVE_ACCESS;
			d->sig_mr->sig->sig_status_checked = true;
			break;
		default:
			break;
		}
	}
	ret = mlx5_ib_post_send(&d->qp->ibqp, &wr[0].send, &bad, false);
	*posted = d->qp->sq.head - head;
	KUNIT_EXPECT_EQ(test, *posted, ret ? bad - &wr[0].send : n);
	return ret;
}

/*
 * The WQE a chain posted from @start is completed by: its last, the only
 * one signaled, found by the ds counts of its control segments.
 */
static u16 ring_last_wqe(struct kunit *test, struct ring_run *r, u16 start)
{
	struct mlx5_ib_wq *sq = &r->d->qp->sq;
	u16 pos = start, wqe = start;
	u32 ds, signaled = 0;

	while (pos != sq->cur_post) {
		struct mlx5_wqe_ctrl_seg *ctrl =
			mlx5_frag_buf_get_wqe(&sq->fbc,
					      pos & (sq->wqe_cnt - 1));

		ds = be32_to_cpu(ctrl->qpn_ds) & MLX5_WQE_CTRL_DS_MASK;
		KUNIT_ASSERT_GT(test, ds, 0);
		if (ctrl->fm_ce_se & MLX5_WQE_CTRL_CQ_UPDATE)
			signaled++;
		wqe = pos;
		pos += DIV_ROUND_UP(ds * MLX5_SEND_WQE_DS, MLX5_SEND_WQE_BB);
	}
	KUNIT_EXPECT_EQ(test, signaled, 1);
	return wqe;
}

/* Whether the chains still in the ring fit it, as admission promises */
static void ring_check(struct kunit *test, struct ring_run *r)
{
	struct mlx5_ib_wq *sq = &r->d->qp->sq;
	u16 used = sq->cur_post - sq->last_poll;

	KUNIT_ASSERT_LE_MSG(test, used, sq->wqe_cnt,
			    "%s: %u blocks of WQEs not yet completed in a ring of %u",
			    r->d->name, used, sq->wqe_cnt);
	KUNIT_ASSERT_EQ(test, sq->head - sq->tail, r->units);
	KUNIT_ASSERT_FALSE(test, drive_overrun(r->d));
}

/* Completes the oldest @k chains and polls their completions */
static void ring_retire(struct kunit *test, struct ring_run *r, u32 k)
{
	struct mlx5_ib_wq *sq = &r->d->qp->sq;
	u32 nchains = r->budget + 1, i, got = 0;
	struct ib_wc wc[RING_POLL];
	u16 end = 0;
	int n, j;

	for (i = 0; i < k; i++)
		ring_complete(r, r->chains[(r->first + i) % nchains].wqe);
	do {
		n = mlx5_ib_poll_cq(&r->cq->ibcq, RING_POLL, wc);
		KUNIT_ASSERT_GE(test, n, 0);
		for (j = 0; j < n; j++, got++) {
			struct ring_chain *c = &r->chains[r->first];

			KUNIT_ASSERT_LT(test, got, k);
			KUNIT_EXPECT_EQ(test, wc[j].status, IB_WC_SUCCESS);
			KUNIT_EXPECT_EQ(test, wc[j].wr_id, c->wr_id);
			KUNIT_EXPECT_PTR_EQ(test, wc[j].qp, &r->d->qp->ibqp);
			/* The credits the core gives back at this completion */
			r->units -= c->units;
			r->first = (r->first + 1) % nchains;
			r->nr--;
			end = c->end;
		}
		/* The next WQE to complete follows the last one polled */
		if (n)
			KUNIT_EXPECT_EQ(test, sq->last_poll, end);
	} while (n);
	KUNIT_ASSERT_EQ(test, got, k);
	r->polled += k;
	/* What the ring admits again is what the core gave back */
	KUNIT_ASSERT_EQ(test, sq->max_post - (sq->head - sq->tail),
			r->budget - r->units);
	ring_check(test, r);
}

static const struct drive_vector ring_vectors[] = {
	{ "RC 1 SGE", IB_QPT_RC, 0, 1, 0, IB_SIGNAL_REQ_WR },
	{ "RC 4 SGEs", IB_QPT_RC, 0, 4, 0, IB_SIGNAL_REQ_WR },
	{ "RC INTEGRITY_EN 2 SGEs", IB_QPT_RC, IB_QP_CREATE_INTEGRITY_EN, 2, 0,
	  IB_SIGNAL_REQ_WR },
	{ "XRC_INI 1 SGE", IB_QPT_XRC_INI, 0, 1, 0, IB_SIGNAL_REQ_WR },
	{ "XRC_INI INTEGRITY_EN 2 SGEs", IB_QPT_XRC_INI,
	  IB_QP_CREATE_INTEGRITY_EN, 2, 0, IB_SIGNAL_REQ_WR },
};

KUNIT_ARRAY_PARAM(ring_vectors, ring_vectors, drive_vector_desc);

/*
 * mlx5_ib_post_send() driven as ib_slot drives it: chains of WRs, only the
 * last signaled, admitted by the units the WR cost hook charges against
 * the max_send_wr the QP was granted, and given back when the chain's
 * completion is polled.  Each round fills the ring to that budget, checks
 * now and then that the next WR is refused, then has the "device"
 * complete some of the oldest chains through the CQ.  A post the budget
 * admits must succeed and stay within the ring's blocks not yet
 * completed; the ring must take
 * again exactly what the completions gave back; the ring wraps many times.
 */
static void mlx5_ib_test_drive_ring_full(struct kunit *test)
{
	const struct drive_vector *v = test->param_value;
	struct ring_run *r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	bool integrity = v->flags & IB_QP_CREATE_INTEGRITY_EN;
	struct mlx5_ib_wq *sq;
	struct drive_qp *d;
	unsigned int round, i, posted;
	u16 last = 0, start;
	int ret;

	KUNIT_ASSERT_NOT_NULL(test, r);
	d = drive_qp_create(test, v);
	r->d = d;
	r->cq = drive_cq_create(test, d);
	ring_cq_setup(test, r);
	sq = &d->qp->sq;
	r->budget = d->geom.max_post;
	/* A CQE for every chain in the ring fits the CQ */
	KUNIT_ASSERT_LT(test, r->budget, 1 << RING_CQ_LOG);
	r->chains = kunit_kcalloc(test, r->budget + 1, sizeof(*r->chains),
				  GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r->chains);
	prandom_seed_state(&r->rnd, 0x35);
	drive_mr_descs(d->mr, MLX5_MKC_ACCESS_MODE_MTT, 8);
	drive_edge_setup(d, &(const struct drive_edge_wr){
		"REG_MR_INTEGRITY", IB_WR_REG_MR_INTEGRITY,
		MLX5_MKC_ACCESS_MODE_MTT, 8, false, true });

	for (round = 0; round < RING_ROUNDS; round++) {
		/* Fill: every chain the remaining credits admit */
		for (;;) {
			u32 shape = prandom_u32_state(&r->rnd) %
				    (ARRAY_SIZE(ring_shapes) - !integrity);
			const enum ib_wr_opcode *ops = ring_shapes[shape];
			struct ring_chain *c;
			u32 units = 0;
			unsigned int n;

			for (n = 0; n < RING_MAX_CHAIN && ops[n] != IB_WR_SEND &&
			     ops[n] != IB_WR_SEND_WITH_INV; n++)
				;
			n++;
			for (i = 0; i < n; i++) {
				struct ib_wr_cost cost;

				KUNIT_ASSERT_EQ(test,
						mlx5_ib_get_wr_cost(&d->dev->ib_dev,
								    &d->attr,
								    ops[i], 1,
								    &cost), 0);
				units += cost.sq_units;
			}
			if (r->units + units > r->budget)
				break;
			c = &r->chains[(r->first + r->nr) % (r->budget + 1)];
			start = sq->cur_post;
			ret = ring_post(test, r, ops, n, &posted);
			KUNIT_ASSERT_EQ_MSG(test, ret, 0,
					    "%s: chain of %u WRs refused at %u of %u units",
					    d->name, n, r->units, r->budget);
			c->wr_id = d->posted;
			c->wqe = ring_last_wqe(test, r, start);
			c->end = sq->cur_post;
			c->units = units;
			r->nr++;
			r->units += units;
			r->wrs += n;
			ring_check(test, r);
		}
		/* Single SENDs up to the budget, then one more is refused */
		while (r->units < r->budget) {
			static const enum ib_wr_opcode send = IB_WR_SEND;
			struct ring_chain *c =
				&r->chains[(r->first + r->nr) % (r->budget + 1)];

			start = sq->cur_post;
			ret = ring_post(test, r, &send, 1, &posted);
			KUNIT_ASSERT_EQ(test, ret, 0);
			c->wr_id = d->posted;
			c->wqe = ring_last_wqe(test, r, start);
			c->end = sq->cur_post;
			c->units = 1;
			r->nr++;
			r->units++;
			r->wrs++;
			ring_check(test, r);
		}
		if (round % RING_REFUSE_EVERY == 0) {
			static const enum ib_wr_opcode send = IB_WR_SEND;

			ret = ring_post(test, r, &send, 1, &posted);
			KUNIT_ASSERT_EQ(test, ret, -ENOMEM);
			KUNIT_ASSERT_EQ(test, posted, 0);
			r->refused++;
			ring_check(test, r);
		}
		if (sq->cur_post < last)
			r->wraps++;
		last = sq->cur_post;
		ring_retire(test, r, 1 + prandom_u32_state(&r->rnd) % r->nr);
	}
	ring_retire(test, r, r->nr);
	KUNIT_EXPECT_EQ(test, sq->head, sq->tail);
	KUNIT_EXPECT_EQ(test, sq->last_poll, sq->cur_post);
	kunit_info(test, "%s: %lu WRs, %lu completions, %lu refused when full, %u blocks, cur_post wrapped %u times\n",
		   d->name, r->wrs, r->polled, r->refused, sq->wqe_cnt,
		   r->wraps);
}

static struct kunit_case mlx5_ib_wr_drive_cases[] = {
	KUNIT_CASE_PARAM_ATTR(mlx5_ib_test_drive_ring_full,
			      ring_vectors_gen_params,
			      { .speed = KUNIT_SPEED_SLOW }),
	KUNIT_CASE(mlx5_ib_test_drive_flush_after_fatal_error),
	KUNIT_CASE(mlx5_ib_test_drive_known),
	KUNIT_CASE(mlx5_ib_test_drive_log_sq_size),
	KUNIT_CASE(mlx5_ib_test_drive_create_flags),
	KUNIT_CASE_PARAM(mlx5_ib_test_drive_fragment_edge,
			 drive_edge_vectors_gen_params),
	KUNIT_CASE_PARAM(mlx5_ib_test_drive, drive_vectors_gen_params),
	{}
};

static struct kunit_suite mlx5_ib_wr_drive_suite = {
	.name = "mlx5_ib_wr_drive",
	.test_cases = mlx5_ib_wr_drive_cases,
};

kunit_test_suites(&mlx5_ib_sq_budget_suite, &mlx5_ib_wr_cost_suite,
		  &mlx5_ib_wr_drive_suite);

MODULE_DESCRIPTION("KUnit tests for mlx5 Send Queue sizing");
MODULE_LICENSE("Dual BSD/GPL");
