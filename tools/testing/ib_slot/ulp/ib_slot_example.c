// SPDX-License-Identifier: GPL-2.0-only
/*
 * ib_slot_example: a small but complete ib_slot user.
 *
 * The module connects nr_conns RDMA/CM clients to a server in the same
 * module, over the loopback of the RDMA device that owns "addr" (rxe or
 * siw), and moves verified data:
 *
 *   client (no-exhaust pool, per QP)        server (back-pressure pool,
 *                                            shared by all its QPs)
 *   ib_slot_get()
 *   [REG_MR buffer][SEND request]   ---->   ib_slot_get_or_wait()
 *     {op, addr, rkey, len, seed, tag}       (or wait in the pool's FIFO)
 *                                   <----   RDMA READ the buffer, check it,
 *                                            or RDMA WRITE a pattern into it
 *                                   <----   SEND_WITH_INV response
 *   ib_slot_fence(), check,                 ib_slot_put()
 *   ib_slot_put()
 *
 * It lives with the test tooling, not in samples/: it exercises the API in
 * the VM tests and in "make run" without adding a sample to the series,
 * and builds as an external module against the test kernel.
 *
 * /sys/kernel/debug/ib_slot_example/stats has the module's counters, next
 * to the pools' own files in /sys/kernel/debug/ib_slot/.  Writing a server
 * connection's index to .../qp_error moves that QP to the error state.
 *
 * Contexts: connection setup runs in RDMA/CM handlers; all I/O runs in
 * completion handlers (softirq).  Every server QP shares one CQ, so one
 * context runs all puts, gets and resumes of the server pool; each client
 * QP has a CQ of its own.
 */
#include <linux/debugfs.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/scatterlist.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/wait_bit.h>
#include <linux/workqueue.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_slot.h>
#include <rdma/rdma_cm.h>

static char *addr = "192.168.78.1";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "IPv4 address of the RDMA device to loop back on");
static ushort port = 18515;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "TCP port space port of the server");
static uint nr_conns = 4;
module_param(nr_conns, uint, 0444);
MODULE_PARM_DESC(nr_conns, "client connections (1-64)");
static uint depth = 8;
module_param(depth, uint, 0444);
MODULE_PARM_DESC(depth, "requests in flight per client connection (1-128)");
static uint pool_size = 16;
module_param(pool_size, uint, 0444);
MODULE_PARM_DESC(pool_size, "slots of the server pool shared by all its QPs");
static uint req_size = 16384;
module_param(req_size, uint, 0444);
MODULE_PARM_DESC(req_size, "bytes per request, a multiple of 4 up to 256 KiB");
static uint nr_reqs = 100;
module_param(nr_reqs, uint, 0444);
MODULE_PARM_DESC(nr_reqs, "requests per connection (0: no limit)");
static uint duration_ms;
module_param(duration_ms, uint, 0444);
MODULE_PARM_DESC(duration_ms, "stop issuing after this time (0: no limit)");

#define EX_TIMEOUT_MS	2000
#define EX_RD_ATOM	16
/*
 * A command holds its Receive until its response completes, which waits
 * for the client's ACK, and rxe defers ACKs: the client may have "depth"
 * requests in flight while several times as many responses here wait for
 * theirs.  Receives to spare keep RNR NAKs, legal but slow, away.
 */
#define EX_SERVER_RECVS	(4 * depth)

/* What the server does to the client's buffer. */
enum {
	EX_OP_READ = 1,
	EX_OP_WRITE,
};

/* Request and response, on the wire. */
struct ex_msg {
	__le64	addr;
	__le32	rkey;
	__le32	len;
	__le32	seed;
	__le32	tag;
	__le32	op;
	__le32	status;
};

enum ex_counter {
	EX_C_GETS, EX_C_POSTS, EX_C_DONES, EX_C_ERRORS, EX_C_FENCES,
	EX_C_FENCED, EX_C_PUTS, EX_C_OK, EX_C_BAD, EX_C_ABORTED,
	EX_S_CMDS, EX_S_GETS, EX_S_WAITS, EX_S_RESUMED, EX_S_CANCELLED,
	EX_S_SHUTDOWN, EX_S_FIFO_INVERSIONS, EX_S_POSTS, EX_S_DONES,
	EX_S_ERRORS, EX_S_PUTS, EX_S_READ_SGE, EX_S_READ_MR, EX_S_WRITES,
	EX_S_BAD, EX_RECV_FLUSHED, EX_QP_ERRORS_FORCED, EX_NR_COUNTERS
};

static const char * const ex_counter_names[EX_NR_COUNTERS] = {
	[EX_C_GETS] = "client_gets",
	[EX_C_POSTS] = "client_posts",
	[EX_C_DONES] = "client_dones",
	[EX_C_ERRORS] = "client_done_errors",
	[EX_C_FENCES] = "client_fences",
	[EX_C_FENCED] = "client_fenced",
	[EX_C_PUTS] = "client_puts",
	[EX_C_OK] = "client_verified",
	[EX_C_BAD] = "client_bad",
	[EX_C_ABORTED] = "client_aborted",
	[EX_S_CMDS] = "server_cmds",
	[EX_S_GETS] = "server_gets",
	[EX_S_WAITS] = "server_waits",
	[EX_S_RESUMED] = "server_resumed",
	[EX_S_CANCELLED] = "server_cancelled",
	[EX_S_SHUTDOWN] = "server_shutdown",
	[EX_S_FIFO_INVERSIONS] = "server_fifo_inversions",
	[EX_S_POSTS] = "server_posts",
	[EX_S_DONES] = "server_dones",
	[EX_S_ERRORS] = "server_done_errors",
	[EX_S_PUTS] = "server_puts",
	[EX_S_READ_SGE] = "server_read_sge",
	[EX_S_READ_MR] = "server_read_mr",
	[EX_S_WRITES] = "server_writes",
	[EX_S_BAD] = "server_bad",
	[EX_RECV_FLUSHED] = "recv_flushed",
	[EX_QP_ERRORS_FORCED] = "qp_errors_forced",
};

static atomic64_t ex_counters[EX_NR_COUNTERS];

static void ex_inc(enum ex_counter c)
{
	atomic64_inc(&ex_counters[c]);
}

/* A data buffer and a message per slot of a pool, indexed by slot->tag. */
struct ex_bufs {
	u32			nr;
	void			**data;
	struct scatterlist	*sg;
	struct ex_msg		*msgs;
	u64			msgs_dma;
};

/* conn->flags */
enum {
	EX_STOP,	/* issue nothing new */
	EX_DEAD,	/* the QP flushed: seen in its completion context */
	EX_FINISHED,	/* client: every request is done */
};

/* Server command states */
enum {
	EX_CMD_IDLE,
	EX_CMD_WAITING,
	EX_CMD_READING,
	EX_CMD_WRITING,
	EX_CMD_RESPONDING,
};

struct ex_conn;

/*
 * A Receive buffer.  On the server it is also the command it received,
 * from arrival until its response completes: the waiter must exist before
 * any slot does.
 */
struct ex_recv {
	struct ib_cqe		cqe;
	struct ib_recv_wr	wr;
	struct ib_sge		sge;
	struct ex_conn		*conn;
	u32			idx;
	int			state;
	u64			wait_seq;
	struct ib_slot_waiter	wait;
	struct ib_slot		*slot;
	struct ib_rdma_wr	rdma;
	struct ib_send_wr	send;
	struct ib_sge		rdma_sge;
	struct ib_sge		send_sge;
};

/* Client request state, in the slot's private area (ib_slot_priv()). */
struct ex_creq {
	struct ex_conn		*conn;
	struct ib_send_wr	wr;
	struct ib_sge		sge;
	u32			seed;
	u32			op;
	u32			status;
	bool			sent;		/* done() ran */
	bool			answered;	/* the response came */
	bool			fencing;	/* ib_slot_fence() called */
};

struct ex_conn {
	struct list_head	entry;
	struct rdma_cm_id	*cm_id;
	struct ib_qp		*qp;
	struct ib_cq		*cq;		/* client only; servers share */
	struct ib_slot_qp	*sqp;
	struct ib_slot_pool	*pool;		/* client only */
	struct ex_bufs		bufs;		/* client only */
	struct ib_slot		**slots;	/* client: by tag, for responses */
	struct ex_recv		*recvs;
	struct ex_msg		*rmsgs;
	u64			rmsgs_dma;
	u32			nr_recvs;
	u32			idx;
	u32			qp_num;
	bool			server;
	unsigned long		flags;
	atomic_t		busy;		/* requests or commands in flight */
	atomic_t		claimed;	/* client: requests started */
	atomic64_t		verified;
	struct work_struct	disconnect_work;
};

static struct {
	struct mutex		lock;		/* conns, setup against stop */
	bool			stopping;
	const char		*state;
	struct sockaddr_in	sin;
	struct ib_device	*dev;
	struct ib_pd		*pd;
	struct rdma_cm_id	*listen_id;
	struct ib_slot_pool	*pool;		/* server */
	struct ex_bufs		bufs;		/* server, by slot tag */
	struct ib_cq		*cq;		/* server */
	u32			nr_servers;
	struct list_head	conns;
	atomic_t		clients_running;
	unsigned long		deadline;
	/* Server CQ context only: the FIFO check. */
	u64			wait_seq;
	u64			last_resumed;
	struct dentry		*debugfs;
} ex;

static u32 ex_pages(void)
{
	/* One more in case the buffer does not start on a page boundary. */
	return DIV_ROUND_UP(req_size, PAGE_SIZE) + 1;
}

/* The data of request @seed: every word differs, in every request. */
static void ex_fill(u32 *p, u32 len, u32 seed)
{
	u32 i;

	for (i = 0; i < len / 4; i++)
		p[i] = seed * 0x9e3779b9 + i;
}

static bool ex_check(struct ex_bufs *b, u32 tag, u32 len, u32 seed)
{
	const u32 *p = b->data[tag];
	u32 i;

	ib_dma_sync_single_for_cpu(ex.dev, sg_dma_address(&b->sg[tag]), len,
				   DMA_BIDIRECTIONAL);
	for (i = 0; i < len / 4; i++)
		if (p[i] != seed * 0x9e3779b9 + i)
			return false;
	return true;
}

static void ex_sync_msg(u64 dma)
{
	ib_dma_sync_single_for_device(ex.dev, dma, sizeof(struct ex_msg),
				      DMA_BIDIRECTIONAL);
}

static void ex_bufs_free(struct ex_bufs *b)
{
	u32 i;

	if (b->msgs) {
		if (!ib_dma_mapping_error(ex.dev, b->msgs_dma))
			ib_dma_unmap_single(ex.dev, b->msgs_dma,
					    b->nr * sizeof(*b->msgs),
					    DMA_BIDIRECTIONAL);
		kfree(b->msgs);
	}
	for (i = 0; b->data && i < b->nr; i++) {
		if (!b->data[i])
			continue;
		if (sg_dma_address(&b->sg[i]))
			ib_dma_unmap_sg(ex.dev, &b->sg[i], 1,
					DMA_BIDIRECTIONAL);
		kfree(b->data[i]);
	}
	kfree(b->data);
	kfree(b->sg);
	memset(b, 0, sizeof(*b));
}

/* Buffers of a pool are allocated with it: the I/O path allocates nothing. */
static int ex_bufs_alloc(struct ex_bufs *b, u32 nr)
{
	u32 i;

	b->nr = nr;
	b->data = kcalloc(nr, sizeof(*b->data), GFP_KERNEL);
	b->sg = kcalloc(nr, sizeof(*b->sg), GFP_KERNEL);
	b->msgs = kcalloc(nr, sizeof(*b->msgs), GFP_KERNEL);
	if (!b->data || !b->sg || !b->msgs)
		goto out_free;
	b->msgs_dma = ib_dma_map_single(ex.dev, b->msgs, nr * sizeof(*b->msgs),
					DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(ex.dev, b->msgs_dma))
		goto out_free;
	for (i = 0; i < nr; i++) {
		b->data[i] = kzalloc(req_size, GFP_KERNEL);
		if (!b->data[i])
			goto out_free;
		sg_init_one(&b->sg[i], b->data[i], req_size);
		if (ib_dma_map_sg(ex.dev, &b->sg[i], 1, DMA_BIDIRECTIONAL) != 1)
			goto out_free;
	}
	return 0;

out_free:
	ex_bufs_free(b);
	return -ENOMEM;
}

/* New I/O may start on @conn: it is neither stopping nor flushed. */
static bool ex_conn_live(struct ex_conn *conn)
{
	return !test_bit(EX_STOP, &conn->flags) &&
	       !test_bit(EX_DEAD, &conn->flags);
}

static int ex_post_recv(struct ex_recv *rx)
{
	ib_dma_sync_single_for_device(ex.dev, rx->sge.addr, rx->sge.length,
				      DMA_FROM_DEVICE);
	return ib_post_recv(rx->conn->qp, &rx->wr, NULL);
}

static const struct ex_msg *ex_recv_msg(struct ex_recv *rx)
{
	ib_dma_sync_single_for_cpu(ex.dev, rx->sge.addr, rx->sge.length,
				   DMA_FROM_DEVICE);
	return &rx->conn->rmsgs[rx->idx];
}

/* Drop a reference on conn->busy; the last one lets teardown proceed. */
static void ex_conn_put(struct ex_conn *conn)
{
	if (!atomic_dec_and_test(&conn->busy))
		return;
	wake_up_var(&conn->busy);
	if (conn->server || test_and_set_bit(EX_FINISHED, &conn->flags))
		return;
	if (atomic_dec_and_test(&ex.clients_running)) {
		WRITE_ONCE(ex.state, "done");
		pr_info("ib_slot_example: %s: all clients done, %lld requests verified\n",
			ex.dev->name, atomic64_read(&ex_counters[EX_C_OK]));
	}
}

/* ---------------------------------------------------------------------
 * Client: one no-exhaust pool per QP, sized for its queue depth, so
 * ib_slot_get() cannot fail while at most "depth" requests are in flight.
 */

static void ex_client_fenced(struct ib_slot *slot, enum ib_wc_status status);

/* The number of the next request, or 0 if the run is over. */
static u32 ex_client_claim(struct ex_conn *conn)
{
	u32 n;

	if (!ex_conn_live(conn) ||
	    (duration_ms && time_after(jiffies, ex.deadline)))
		return 0;
	n = atomic_inc_return(&conn->claimed);
	return nr_reqs && n > nr_reqs ? 0 : n;
}

/* Start one request; the caller holds a reference on conn->busy. */
static void ex_client_issue(struct ex_conn *conn)
{
	struct ex_msg *msg;
	struct ex_creq *req;
	struct ib_slot *slot;
	u32 tag, n;
	int ret;

	n = ex_client_claim(conn);
	if (!n)
		return;
	slot = ib_slot_get(conn->sqp);
	if (!slot)	/* cannot happen within depth: the pool warned */
		return;
	ex_inc(EX_C_GETS);
	tag = slot->tag;
	req = ib_slot_priv(slot);
	*req = (struct ex_creq){
		.conn = conn,
		.seed = conn->idx << 24 | (n & 0xffffff),
		.op = n & 1 ? EX_OP_WRITE : EX_OP_READ,
	};
	if (req->op == EX_OP_READ)
		ex_fill(conn->bufs.data[tag], req_size, req->seed);
	else
		memset(conn->bufs.data[tag], 0, req_size);
	ib_dma_sync_single_for_device(ex.dev,
				      sg_dma_address(&conn->bufs.sg[tag]),
				      req_size, DMA_BIDIRECTIONAL);

	/* Expose the buffer: REG_MR goes out in front of the SEND. */
	ret = ib_slot_map_mr(slot, 0, &conn->bufs.sg[tag], 1, NULL,
			     IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_READ |
			     IB_ACCESS_REMOTE_WRITE);
	if (ret != 1)
		goto out_put;
	msg = &conn->bufs.msgs[tag];
	*msg = (struct ex_msg){
		.addr = cpu_to_le64(ib_slot_mr(slot, 0)->iova),
		.rkey = cpu_to_le32(ib_slot_rkey(slot, 0)),
		.len = cpu_to_le32(req_size),
		.seed = cpu_to_le32(req->seed),
		.tag = cpu_to_le32(tag),
		.op = cpu_to_le32(req->op),
	};
	req->sge = (struct ib_sge){
		.addr = conn->bufs.msgs_dma + tag * sizeof(*msg),
		.length = sizeof(*msg),
		.lkey = ex.pd->local_dma_lkey,
	};
	ex_sync_msg(req->sge.addr);
	req->wr = (struct ib_send_wr){
		.opcode = IB_WR_SEND,
		.sg_list = &req->sge,
		.num_sge = 1,
	};
	WRITE_ONCE(conn->slots[tag], slot);
	atomic_inc(&conn->busy);
	ret = ib_slot_post(slot, &req->wr);
	if (!ret) {
		ex_inc(EX_C_POSTS);
		return;
	}
	atomic_dec(&conn->busy);
	WRITE_ONCE(conn->slots[tag], NULL);
out_put:
	ib_slot_put(slot);
	ex_inc(EX_C_PUTS);
}

/*
 * A request ends when its response came, or when the QP died and no
 * response will come.  ib_slot_fence() then makes sure the server can no
 * longer reach the buffer (the response's SEND_WITH_INV already did it, or
 * a LOCAL_INV does), and calls ex_client_fenced() once the SEND and that
 * invalidation have completed.
 */
static void ex_client_finish(struct ib_slot *slot, const struct ib_wc *wc)
{
	struct ex_creq *req = ib_slot_priv(slot);
	struct ex_conn *conn = req->conn;
	int ret;

	if (req->fencing || (!req->answered && !test_bit(EX_DEAD, &conn->flags)))
		return;
	req->fencing = true;
	ex_inc(EX_C_FENCES);
	ret = ib_slot_fence(slot, wc, ex_client_fenced);
	if (!ret)
		return;
	/*
	 * The server invalidated an rkey that is not this request's: a bug
	 * of the server, counted.  The fence is armed all the same, and
	 * ex_client_fenced() may have put the slot already.
	 */
	if (ret == -EPROTO) {
		ex_inc(EX_C_BAD);
		return;
	}
	/* Refused before the post: done() or the put below finishes it. */
	if (req->sent)
		ex_client_fenced(slot, IB_WC_GENERAL_ERR);
	else
		req->fencing = false;	/* done() finishes it */
}

static void ex_client_fenced(struct ib_slot *slot, enum ib_wc_status status)
{
	struct ex_creq *req = ib_slot_priv(slot);
	struct ex_conn *conn = req->conn;
	u32 tag = slot->tag;

	ex_inc(EX_C_FENCED);
	if (!req->answered) {
		ex_inc(EX_C_ABORTED);
	} else if (req->status ||
		   (req->op == EX_OP_WRITE &&
		    !ex_check(&conn->bufs, tag, req_size, req->seed))) {
		ex_inc(EX_C_BAD);
	} else {
		ex_inc(EX_C_OK);
		atomic64_inc(&conn->verified);
	}
	WRITE_ONCE(conn->slots[tag], NULL);
	ib_slot_put(slot);
	ex_inc(EX_C_PUTS);
	ex_client_issue(conn);
	ex_conn_put(conn);
}

/* The QP flushed: end every request that was sent and has no response. */
static void ex_client_dead(struct ex_conn *conn)
{
	struct ib_slot *slot;
	u32 tag;

	if (test_and_set_bit(EX_DEAD, &conn->flags))
		return;
	for (tag = 0; tag < depth; tag++) {
		slot = READ_ONCE(conn->slots[tag]);
		if (slot && ((struct ex_creq *)ib_slot_priv(slot))->sent)
			ex_client_finish(slot, NULL);
	}
}

/* A flush is the echo of an error, logged where it happened. */
static void ex_log_error(struct ex_conn *conn, const struct ib_wc *wc)
{
	if (wc->status != IB_WC_WR_FLUSH_ERR)
		pr_warn_ratelimited("ib_slot_example: %s %u: %s (vendor error %u)\n",
				    conn->server ? "server" : "client",
				    conn->idx, ib_wc_status_msg(wc->status),
				    wc->vendor_err);
}

/* The pool's done(): once per ib_slot_post(), for its last WR. */
static void ex_client_done(struct ib_slot *slot, const struct ib_wc *wc)
{
	struct ex_creq *req = ib_slot_priv(slot);

	ex_inc(EX_C_DONES);
	req->sent = true;
	if (wc->status != IB_WC_SUCCESS) {
		ex_inc(EX_C_ERRORS);
		ex_log_error(req->conn, wc);
		ex_client_dead(req->conn);
	}
	ex_client_finish(slot, NULL);
}

static void ex_client_recv(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ex_recv *rx = container_of(wc->wr_cqe, struct ex_recv, cqe);
	struct ex_conn *conn = rx->conn;
	const struct ex_msg *msg;
	struct ex_creq *req = NULL;
	struct ib_slot *slot = NULL;
	u32 tag;

	if (wc->status != IB_WC_SUCCESS) {
		ex_inc(EX_RECV_FLUSHED);
		ex_log_error(conn, wc);
		ex_client_dead(conn);
		return;
	}
	msg = ex_recv_msg(rx);
	tag = le32_to_cpu(msg->tag);
	if (tag < depth)
		slot = READ_ONCE(conn->slots[tag]);
	if (slot)
		req = ib_slot_priv(slot);
	if (!req || req->answered || le32_to_cpu(msg->seed) != req->seed) {
		ex_inc(EX_C_BAD);
		slot = NULL;
	} else {
		req->answered = true;
		req->status = le32_to_cpu(msg->status);
	}
	/* Before the fence, whose completion may start the next request. */
	if (ex_conn_live(conn) && ex_post_recv(rx))
		ex_client_dead(conn);
	if (slot)
		ex_client_finish(slot, wc);
}

static void ex_client_start(struct ex_conn *conn)
{
	u32 i;

	atomic_inc(&conn->busy);
	for (i = 0; i < depth; i++)
		ex_client_issue(conn);
	ex_conn_put(conn);
}

/* ---------------------------------------------------------------------
 * Server: one back-pressure pool for all its QPs.  A command that finds
 * no slot waits in the pool's FIFO and is resumed by the put that frees
 * one; the connection meanwhile keeps receiving.
 */

static void ex_server_release(struct ex_recv *cmd)
{
	struct ex_conn *conn = cmd->conn;

	WRITE_ONCE(cmd->state, EX_CMD_IDLE);
	if (ex_conn_live(conn) && ex_post_recv(cmd))
		set_bit(EX_DEAD, &conn->flags);
	ex_conn_put(conn);
}

static void ex_server_finish(struct ex_recv *cmd)
{
	ib_slot_put(cmd->slot);
	ex_inc(EX_S_PUTS);
	ex_server_release(cmd);
}

static struct ib_send_wr *ex_server_response(struct ex_recv *cmd, int status)
{
	const struct ex_msg *req = &cmd->conn->rmsgs[cmd->idx];
	u32 tag = cmd->slot->tag;
	struct ex_msg *rsp = &ex.bufs.msgs[tag];

	*rsp = (struct ex_msg){
		.seed = req->seed,
		.tag = req->tag,
		.status = cpu_to_le32(status),
	};
	cmd->send_sge = (struct ib_sge){
		.addr = ex.bufs.msgs_dma + tag * sizeof(*rsp),
		.length = sizeof(*rsp),
		.lkey = ex.pd->local_dma_lkey,
	};
	ex_sync_msg(cmd->send_sge.addr);
	/* The client's rkey dies on arrival: it needs no LOCAL_INV. */
	cmd->send = (struct ib_send_wr){
		.opcode = IB_WR_SEND_WITH_INV,
		.ex.invalidate_rkey = le32_to_cpu(req->rkey),
		.sg_list = &cmd->send_sge,
		.num_sge = 1,
	};
	return &cmd->send;
}

/* The command has its slot: move the data. */
static void ex_server_exec(struct ex_recv *cmd)
{
	const struct ex_msg *req = &cmd->conn->rmsgs[cmd->idx];
	struct ib_slot *slot = cmd->slot;
	u32 tag = slot->tag, len = le32_to_cpu(req->len);
	struct scatterlist *sg = &ex.bufs.sg[tag];
	struct ib_mr *mr;

	/*
	 * Post even when the QP is dead: its flush ends the command from a
	 * completion, later.  A put here would resume the next waiter from
	 * within this resume, and so on down the whole queue.
	 */
	*(struct ex_recv **)ib_slot_priv(slot) = cmd;
	cmd->rdma_sge = (struct ib_sge){
		.addr = sg_dma_address(sg),
		.length = len,
		.lkey = ex.pd->local_dma_lkey,
	};
	cmd->rdma = (struct ib_rdma_wr){
		.wr.sg_list = &cmd->rdma_sge,
		.wr.num_sge = 1,
		.remote_addr = le64_to_cpu(req->addr),
		.rkey = le32_to_cpu(req->rkey),
	};
	if (le32_to_cpu(req->op) == EX_OP_WRITE) {
		ex_fill(ex.bufs.data[tag], len, le32_to_cpu(req->seed));
		ib_dma_sync_single_for_device(ex.dev, sg_dma_address(sg), len,
					      DMA_BIDIRECTIONAL);
		cmd->rdma.wr.opcode = IB_WR_RDMA_WRITE;
		ex_inc(EX_S_WRITES);
		/*
		 * RC ordering places the data before the response lands, so
		 * one post [WRITE][SEND_WITH_INV] does.  But siw sends an
		 * unsignaled WR of a page or more from our pages (zero copy),
		 * which TCP may still read after the SEND behind it completed
		 * and the slot's buffer went to the next command: on iWARP,
		 * the WRITE is signaled, in a post of its own.
		 */
		if (rdma_protocol_iwarp(ex.dev, cmd->conn->cm_id->port_num)) {
			cmd->state = EX_CMD_WRITING;
		} else {
			cmd->rdma.wr.next = ex_server_response(cmd, 0);
			cmd->state = EX_CMD_RESPONDING;
		}
	} else {
		cmd->rdma.wr.opcode = IB_WR_RDMA_READ;
		cmd->state = EX_CMD_READING;
		/*
		 * iWARP needs the READ sink registered for remote write, as
		 * rdma_rw does it.  The sink is this tag's buffer, the
		 * server's for good: its STag stays valid until the MR's
		 * next registration invalidates it.
		 */
		if (rdma_protocol_iwarp(ex.dev, cmd->conn->cm_id->port_num)) {
			if (ib_slot_map_mr(slot, 0, sg, 1, NULL,
					   IB_ACCESS_LOCAL_WRITE |
					   IB_ACCESS_REMOTE_WRITE) != 1)
				goto out_finish;
			mr = ib_slot_mr(slot, 0);
			cmd->rdma_sge.addr = mr->iova;
			cmd->rdma_sge.lkey = mr->lkey;
			ex_inc(EX_S_READ_MR);
		} else {
			ex_inc(EX_S_READ_SGE);
		}
	}
	if (ib_slot_post(slot, &cmd->rdma.wr))
		goto out_finish;
	ex_inc(EX_S_POSTS);
	return;

out_finish:
	ex_server_finish(cmd);
}

static void ex_server_resume(struct ib_slot_waiter *w)
{
	struct ex_recv *cmd = container_of(w, struct ex_recv, wait);

	if (w->error) {		/* the pool is going away */
		ex_inc(EX_S_SHUTDOWN);
		ex_server_release(cmd);
		return;
	}
	ex_inc(EX_S_RESUMED);
	cmd->slot = w->lead;
	/*
	 * The pool grants waiters in FIFO order.  While the run is on, every
	 * resume of this pool runs in the server CQ's context, one at a time,
	 * so the order seen here is the order of the grants.
	 */
	if (!READ_ONCE(ex.stopping)) {
		if (cmd->wait_seq < ex.last_resumed)
			ex_inc(EX_S_FIFO_INVERSIONS);
		ex.last_resumed = cmd->wait_seq;
	}
	ex_server_exec(cmd);
}

/* Waiters of a dead QP hold no slot yet: take them back. */
static void ex_server_cancel_waiters(struct ex_conn *conn)
{
	struct ex_recv *cmd;
	u32 i;

	for (i = 0; i < conn->nr_recvs; i++) {
		cmd = &conn->recvs[i];
		if (READ_ONCE(cmd->state) == EX_CMD_WAITING &&
		    ib_slot_cancel_wait(&cmd->wait)) {
			ex_inc(EX_S_CANCELLED);
			ex_server_release(cmd);
		}
	}
}

static void ex_server_dead(struct ex_conn *conn)
{
	if (test_and_set_bit(EX_DEAD, &conn->flags))
		return;
	ex_server_cancel_waiters(conn);
	/* Tell the client (ex_stop() does if stopping); it may sleep. */
	if (!test_bit(EX_STOP, &conn->flags))
		schedule_work(&conn->disconnect_work);
}

static void ex_server_done(struct ib_slot *slot, const struct ib_wc *wc)
{
	struct ex_recv *cmd = *(struct ex_recv **)ib_slot_priv(slot);
	const struct ex_msg *req = &cmd->conn->rmsgs[cmd->idx];
	bool ok;

	ex_inc(EX_S_DONES);
	if (wc->status != IB_WC_SUCCESS) {
		ex_inc(EX_S_ERRORS);
		ex_log_error(cmd->conn, wc);
		ex_server_dead(cmd->conn);
		goto out_finish;
	}
	if (cmd->state == EX_CMD_READING || cmd->state == EX_CMD_WRITING) {
		ok = cmd->state == EX_CMD_WRITING ||
		     ex_check(&ex.bufs, slot->tag, le32_to_cpu(req->len),
			      le32_to_cpu(req->seed));
		if (!ok)
			ex_inc(EX_S_BAD);
		cmd->state = EX_CMD_RESPONDING;
		/* Same slot, second post: its credits cover both. */
		if (!ib_slot_post(slot, ex_server_response(cmd, ok ? 0 : -EIO))) {
			ex_inc(EX_S_POSTS);
			return;
		}
	}
out_finish:
	ex_server_finish(cmd);
}

static bool ex_server_valid(const struct ex_msg *req)
{
	u32 op = le32_to_cpu(req->op), len = le32_to_cpu(req->len);

	return (op == EX_OP_READ || op == EX_OP_WRITE) && len &&
	       len <= req_size && !(len % 4);
}

static void ex_server_recv(struct ib_cq *cq, struct ib_wc *wc)
{
	struct ex_recv *cmd = container_of(wc->wr_cqe, struct ex_recv, cqe);
	struct ex_conn *conn = cmd->conn;
	int ret;

	if (wc->status != IB_WC_SUCCESS) {
		ex_inc(EX_RECV_FLUSHED);
		ex_log_error(conn, wc);
		ex_server_dead(conn);
		return;
	}
	ex_inc(EX_S_CMDS);
	atomic_inc(&conn->busy);
	if (!ex_server_valid(ex_recv_msg(cmd))) {
		ex_inc(EX_S_BAD);
		ex_server_release(cmd);
		return;
	}
	cmd->wait.sqp = conn->sqp;
	cmd->wait.nr = 1;
	cmd->wait.resume = ex_server_resume;
	cmd->state = EX_CMD_WAITING;
	cmd->wait_seq = ++ex.wait_seq;
	ret = ib_slot_get_or_wait(&cmd->wait);
	if (ret == -EAGAIN) {
		/* Queued; ex_server_resume() owns the command now. */
		ex_inc(EX_S_WAITS);
		return;
	}
	if (ret) {
		ex_server_release(cmd);
		return;
	}
	ex_inc(EX_S_GETS);
	cmd->slot = cmd->wait.lead;
	ex_server_exec(cmd);
}

static void ex_server_disconnect_work(struct work_struct *work)
{
	struct ex_conn *conn = container_of(work, struct ex_conn,
					    disconnect_work);

	rdma_disconnect(conn->cm_id);
}

/* ---------------------------------------------------------------------
 * Connections
 */

static void ex_conn_free_recvs(struct ex_conn *conn)
{
	if (conn->rmsgs) {
		ib_dma_unmap_single(ex.dev, conn->rmsgs_dma,
				    conn->nr_recvs * sizeof(*conn->rmsgs),
				    DMA_FROM_DEVICE);
		kfree(conn->rmsgs);
	}
	kfree(conn->recvs);
}

static int ex_conn_alloc_recvs(struct ex_conn *conn, u32 nr)
{
	struct ex_recv *rx;
	u32 i;

	conn->recvs = kcalloc(nr, sizeof(*conn->recvs), GFP_KERNEL);
	if (!conn->recvs)
		return -ENOMEM;
	conn->rmsgs = kcalloc(nr, sizeof(*conn->rmsgs), GFP_KERNEL);
	if (!conn->rmsgs)
		return -ENOMEM;
	conn->rmsgs_dma = ib_dma_map_single(ex.dev, conn->rmsgs,
					    nr * sizeof(*conn->rmsgs),
					    DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(ex.dev, conn->rmsgs_dma)) {
		kfree(conn->rmsgs);
		conn->rmsgs = NULL;
		return -ENOMEM;
	}
	conn->nr_recvs = nr;
	for (i = 0; i < nr; i++) {
		rx = &conn->recvs[i];
		rx->conn = conn;
		rx->idx = i;
		rx->cqe.done = conn->server ? ex_server_recv : ex_client_recv;
		INIT_LIST_HEAD(&rx->wait.entry);
		rx->sge = (struct ib_sge){
			.addr = conn->rmsgs_dma + i * sizeof(*conn->rmsgs),
			.length = sizeof(*conn->rmsgs),
			.lkey = ex.pd->local_dma_lkey,
		};
		rx->wr = (struct ib_recv_wr){
			.wr_cqe = &rx->cqe,
			.sg_list = &rx->sge,
			.num_sge = 1,
		};
	}
	return 0;
}

/* ib_slot_qp_caps() fills in the queue sizes. */
static void ex_qp_init(struct ib_qp_init_attr *init, void *context)
{
	*init = (struct ib_qp_init_attr){
		.qp_type = IB_QPT_RC,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.cap.max_recv_sge = 1,
		.qp_context = context,
	};
}

/*
 * Size the QP and CQ for @nr_slots slots of @pool (ib_slot_qp_caps() does
 * the arithmetic), create the QP, attach it to the pool and post one
 * Receive per slot.  @cq is the server's shared CQ, or NULL for a CQ of
 * the connection's own.
 */
static int ex_conn_create_qp(struct ex_conn *conn, struct ib_slot_pool *pool,
			     u32 nr_slots, struct ib_cq *cq)
{
	struct ib_qp_init_attr init;
	u32 nr_cqe = 0, i;
	int ret;

	ex_qp_init(&init, conn);
	ret = ib_slot_qp_caps(pool, nr_slots, &init, &nr_cqe);
	if (ret)
		return ret;
	if (!cq) {
		conn->cq = ib_alloc_cq(ex.dev, conn, nr_cqe,
				       conn->idx % ex.dev->num_comp_vectors,
				       IB_POLL_SOFTIRQ);
		if (IS_ERR(conn->cq)) {
			ret = PTR_ERR(conn->cq);
			conn->cq = NULL;
			return ret;
		}
		cq = conn->cq;
	}
	init.send_cq = cq;
	init.recv_cq = cq;
	ret = rdma_create_qp(conn->cm_id, ex.pd, &init);
	if (ret)
		return ret;
	conn->qp = conn->cm_id->qp;
	conn->qp_num = conn->qp->qp_num;
	/* The QP holds what its CQ was sized for, whatever was granted. */
	conn->sqp = ib_slot_qp_attach(pool, conn->qp, &init.cap, nr_slots);
	if (IS_ERR(conn->sqp)) {
		ret = PTR_ERR(conn->sqp);
		conn->sqp = NULL;
		return ret;
	}
	ret = ex_conn_alloc_recvs(conn, nr_slots);
	for (i = 0; !ret && i < nr_slots; i++)
		ret = ex_post_recv(&conn->recvs[i]);
	return ret;
}

/* Tear down what setup built; every request is over, the id stays. */
static void ex_conn_destroy(struct ex_conn *conn)
{
	cancel_work_sync(&conn->disconnect_work);
	ib_slot_qp_detach(conn->sqp);
	conn->sqp = NULL;
	if (conn->qp)
		rdma_destroy_qp(conn->cm_id);
	conn->qp = NULL;
	if (conn->cq)
		ib_free_cq(conn->cq);
	conn->cq = NULL;
	ib_slot_pool_destroy(conn->pool);
	conn->pool = NULL;
}

static void ex_conn_free(struct ex_conn *conn)
{
	ex_conn_free_recvs(conn);
	ex_bufs_free(&conn->bufs);
	kfree(conn->slots);
	kfree(conn);
}

static struct ex_conn *ex_conn_alloc(bool server)
{
	struct ex_conn *conn = kzalloc(sizeof(*conn), GFP_KERNEL);

	if (!conn)
		return NULL;
	conn->server = server;
	INIT_WORK(&conn->disconnect_work, ex_server_disconnect_work);
	return conn;
}

static void ex_conn_param(struct rdma_conn_param *p,
			  const struct rdma_conn_param *req)
{
	*p = (struct rdma_conn_param){
		.responder_resources = min(ex.dev->attrs.max_qp_rd_atom,
					   EX_RD_ATOM),
		.initiator_depth = min(ex.dev->attrs.max_qp_init_rd_atom,
				       EX_RD_ATOM),
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	if (req) {
		p->responder_resources = min(p->responder_resources,
					     req->initiator_depth);
		p->initiator_depth = min(p->initiator_depth,
					 req->responder_resources);
	}
}

/* Route resolved: build the client's pool, QP and buffers, and connect. */
static int ex_client_connect(struct ex_conn *conn)
{
	struct ib_slot_pool_attr attr = {
		.pd = ex.pd,
		.nr_slots = depth,
		.policy = IB_SLOT_NO_EXHAUST,
		.profile = {
			.nr_rkey_mrs = 1,
			.max_pages_per_mr = ex_pages(),
			.nr_sends = 1,
			.nr_recvs = 1,
		},
		.priv_size = sizeof(struct ex_creq),
		.name = "ex-client",
		.done = ex_client_done,
	};
	struct rdma_conn_param param;
	int ret = -ESHUTDOWN;

	mutex_lock(&ex.lock);
	if (ex.stopping)
		goto out_unlock;
	ret = -EXDEV;
	if (conn->cm_id->device != ex.dev)
		goto out_unlock;
	conn->pool = ib_slot_pool_create(&attr);
	if (IS_ERR(conn->pool)) {
		ret = PTR_ERR(conn->pool);
		conn->pool = NULL;
		goto out_unlock;
	}
	ret = -ENOMEM;
	conn->slots = kcalloc(depth, sizeof(*conn->slots), GFP_KERNEL);
	if (!conn->slots || ex_bufs_alloc(&conn->bufs, depth))
		goto out_unlock;
	ret = ex_conn_create_qp(conn, conn->pool, depth, NULL);
	if (ret)
		goto out_unlock;
	ex_conn_param(&param, NULL);
	ret = rdma_connect_locked(conn->cm_id, &param);
out_unlock:
	mutex_unlock(&ex.lock);
	return ret;
}

/* Give up on a client connection (the teardown frees it). */
static void ex_client_fail(struct ex_conn *conn)
{
	set_bit(EX_STOP, &conn->flags);
	if (conn->qp)
		rdma_disconnect(conn->cm_id);
	/* Never established: nothing will end it but us. */
	atomic_inc(&conn->busy);
	ex_conn_put(conn);
}

static int ex_client_cm_handler(struct rdma_cm_id *id,
				struct rdma_cm_event *ev)
{
	struct ex_conn *conn = id->context;
	int ret = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, EX_TIMEOUT_MS);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = ex_client_connect(conn);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		ex_client_start(conn);
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		/* Flush the QP: the flushes end every request. */
		rdma_disconnect(id);
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
		ret = -ECONNABORTED;
		break;
	default:	/* DEVICE_REMOVAL: ex_remove_one() ran before */
		break;
	}
	if (ret) {
		pr_warn("ib_slot_example: client %u: %s (status %d), error %d\n",
			conn->idx, rdma_event_msg(ev->event), ev->status, ret);
		ex_client_fail(conn);
	}
	/* Never let the CM destroy the id: ex_stop() does. */
	return 0;
}

/* A connection request: build the server side and accept. */
static int ex_server_connect(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct rdma_conn_param param;
	struct ex_conn *conn;
	int ret = -ECONNREFUSED;

	conn = ex_conn_alloc(true);
	if (!conn)
		return -ENOMEM;
	conn->cm_id = id;
	id->context = conn;
	mutex_lock(&ex.lock);
	if (ex.stopping || id->device != ex.dev || ex.nr_servers == nr_conns)
		goto out_reject;
	conn->idx = ex.nr_servers;
	ret = ex_conn_create_qp(conn, ex.pool, EX_SERVER_RECVS, ex.cq);
	if (ret)
		goto out_reject;
	ex_conn_param(&param, &ev->param.conn);
	ret = rdma_accept(id, &param);
	if (ret)
		goto out_destroy;
	ex.nr_servers++;
	list_add_tail(&conn->entry, &ex.conns);
	mutex_unlock(&ex.lock);
	return 0;

out_reject:
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
out_destroy:
	mutex_unlock(&ex.lock);
	pr_warn("ib_slot_example: connection refused: %d\n", ret);
	set_bit(EX_STOP, &conn->flags);
	if (conn->qp)	/* run the flushes of its Receives now */
		ib_drain_qp(conn->qp);
	ex_conn_destroy(conn);
	ex_conn_free(conn);
	return ret;	/* the CM destroys the id */
}

static int ex_server_cm_handler(struct rdma_cm_id *id,
				struct rdma_cm_event *ev)
{
	struct ex_conn *conn = id->context;

	switch (ev->event) {
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		return ex_server_connect(id, ev);
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		if (conn)	/* flush: the flushes end every command */
			rdma_disconnect(id);
		break;
	default:
		break;
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * Start, stop and the device going away
 */

static void ex_stop(const char *why)
{
	struct ex_conn *conn, *tmp;

	mutex_lock(&ex.lock);
	if (ex.stopping) {
		mutex_unlock(&ex.lock);
		return;
	}
	ex.stopping = true;
	mutex_unlock(&ex.lock);

	/* Also waits for a CONNECT_REQUEST handler still running. */
	if (ex.listen_id)
		rdma_destroy_id(ex.listen_id);
	ex.listen_id = NULL;

	/* The error state flushes every WR: every done() runs. */
	list_for_each_entry(conn, &ex.conns, entry) {
		set_bit(EX_STOP, &conn->flags);
		if (conn->qp)
			rdma_disconnect(conn->cm_id);
	}
	list_for_each_entry(conn, &ex.conns, entry)
		if (conn->qp)
			ib_drain_qp(conn->qp);
	list_for_each_entry(conn, &ex.conns, entry)
		if (conn->server)
			ex_server_cancel_waiters(conn);
	list_for_each_entry(conn, &ex.conns, entry)
		while (!wait_var_event_timeout(&conn->busy,
					       !atomic_read(&conn->busy), 10 * HZ))
			pr_warn("ib_slot_example: %s %u: %d requests still busy\n",
				conn->server ? "server" : "client", conn->idx,
				atomic_read(&conn->busy));

	list_for_each_entry(conn, &ex.conns, entry) {
		ex_conn_destroy(conn);
		rdma_destroy_id(conn->cm_id);
	}
	/* After every server QP, and before the conns its handlers use. */
	if (ex.cq)
		ib_free_cq(ex.cq);
	ex.cq = NULL;
	mutex_lock(&ex.lock);
	list_for_each_entry_safe(conn, tmp, &ex.conns, entry) {
		list_del(&conn->entry);
		ex_conn_free(conn);
	}
	ib_slot_pool_destroy(ex.pool);
	ex.pool = NULL;
	ex_bufs_free(&ex.bufs);
	if (ex.pd)
		ib_dealloc_pd(ex.pd);
	ex.pd = NULL;
	ex.dev = NULL;
	WRITE_ONCE(ex.state, why);
	mutex_unlock(&ex.lock);
	pr_info("ib_slot_example: %s\n", why);
}

static int ex_add_one(struct ib_device *dev)
{
	return 0;
}

/* Before the RDMA/CM's own removal (clients go in reverse order). */
static void ex_remove_one(struct ib_device *dev, void *client_data)
{
	if (dev == READ_ONCE(ex.dev))
		ex_stop("removed");
}

static struct ib_client ex_client = {
	.name = "ib_slot_example",
	.add = ex_add_one,
	.remove = ex_remove_one,
};

static int ex_server_start(void)
{
	struct ib_slot_pool_attr attr = {
		.nr_slots = pool_size,
		.policy = IB_SLOT_BACKPRESSURE,
		.profile = {
			/* The READ sink MR: needed on iWARP only. */
			.nr_rkey_mrs = 1,
			.max_pages_per_mr = ex_pages(),
			.max_rdma_sges = 1,
			.nr_sends = 1,
			.nr_recvs = 1,
		},
		.priv_size = sizeof(struct ex_recv *),
		.name = "ex-server",
		.done = ex_server_done,
	};
	struct ib_qp_init_attr init;
	u32 nr_cqe = 0;
	int ret;

	ex.listen_id = rdma_create_id(&init_net, ex_server_cm_handler, NULL,
				      RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(ex.listen_id)) {
		ret = PTR_ERR(ex.listen_id);
		ex.listen_id = NULL;
		return ret;
	}
	/* Binding to a local address binds to its RDMA device. */
	ret = rdma_bind_addr(ex.listen_id, (struct sockaddr *)&ex.sin);
	if (ret)
		return ret;
	if (!ex.listen_id->device)
		return -ENODEV;
	ex.dev = ex.listen_id->device;
	ex.pd = ib_alloc_pd(ex.dev, 0);
	if (IS_ERR(ex.pd)) {
		ret = PTR_ERR(ex.pd);
		ex.pd = NULL;
		return ret;
	}
	attr.pd = ex.pd;
	ex.pool = ib_slot_pool_create(&attr);
	if (IS_ERR(ex.pool)) {
		ret = PTR_ERR(ex.pool);
		ex.pool = NULL;
		return ret;
	}
	ret = ex_bufs_alloc(&ex.bufs, pool_size);
	if (ret)
		return ret;
	/* What each server QP will need: they share one CQ. */
	ex_qp_init(&init, NULL);
	ret = ib_slot_qp_caps(ex.pool, EX_SERVER_RECVS, &init, &nr_cqe);
	if (ret)
		return ret;
	ex.cq = ib_alloc_cq(ex.dev, NULL, nr_conns * nr_cqe, 0,
			    IB_POLL_SOFTIRQ);
	if (IS_ERR(ex.cq)) {
		ret = PTR_ERR(ex.cq);
		ex.cq = NULL;
		return ret;
	}
	return rdma_listen(ex.listen_id, nr_conns);
}

static int ex_clients_start(void)
{
	struct ex_conn *conn;
	u32 i;
	int ret;

	atomic_set(&ex.clients_running, nr_conns);
	for (i = 0; i < nr_conns; i++) {
		conn = ex_conn_alloc(false);
		if (!conn)
			return -ENOMEM;
		conn->idx = i;
		conn->cm_id = rdma_create_id(&init_net, ex_client_cm_handler,
					     conn, RDMA_PS_TCP, IB_QPT_RC);
		if (IS_ERR(conn->cm_id)) {
			ret = PTR_ERR(conn->cm_id);
			kfree(conn);
			return ret;
		}
		mutex_lock(&ex.lock);
		list_add_tail(&conn->entry, &ex.conns);
		mutex_unlock(&ex.lock);
		ret = rdma_resolve_addr(conn->cm_id, NULL,
					(struct sockaddr *)&ex.sin,
					EX_TIMEOUT_MS);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---------------------------------------------------------------------
 * debugfs
 */

static int ex_stats_show(struct seq_file *s, void *unused)
{
	struct ex_conn *conn;
	int i;

	mutex_lock(&ex.lock);
	seq_printf(s, "state: %s\ndevice: %s\n", ex.state,
		   ex.dev ? dev_name(&ex.dev->dev) : "-");
	seq_printf(s, "params: nr_conns %u depth %u pool_size %u req_size %u nr_reqs %u duration_ms %u\n",
		   nr_conns, depth, pool_size, req_size, nr_reqs, duration_ms);
	for (i = 0; i < EX_NR_COUNTERS; i++)
		seq_printf(s, "%s: %lld\n", ex_counter_names[i],
			   atomic64_read(&ex_counters[i]));
	list_for_each_entry(conn, &ex.conns, entry)
		seq_printf(s, "%s %u: qp %u busy %d dead %d verified %lld\n",
			   conn->server ? "server" : "client", conn->idx,
			   conn->qp_num, atomic_read(&conn->busy),
			   test_bit(EX_DEAD, &conn->flags),
			   atomic64_read(&conn->verified));
	mutex_unlock(&ex.lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(ex_stats);

/* Move a server QP to the error state, as a fatal async error would. */
static ssize_t ex_qp_error_write(struct file *file, const char __user *buf,
				 size_t count, loff_t *ppos)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct ex_conn *conn;
	u32 idx;
	int ret;

	ret = kstrtou32_from_user(buf, count, 0, &idx);
	if (ret)
		return ret;
	ret = -ENOENT;
	mutex_lock(&ex.lock);
	list_for_each_entry(conn, &ex.conns, entry) {
		if (ex.stopping)
			break;
		if (!conn->server || conn->idx != idx || !conn->qp)
			continue;
		ret = ib_modify_qp(conn->qp, &attr, IB_QP_STATE);
		if (!ret)
			ex_inc(EX_QP_ERRORS_FORCED);
		break;
	}
	mutex_unlock(&ex.lock);
	return ret ?: count;
}

static const struct file_operations ex_qp_error_fops = {
	.owner = THIS_MODULE,
	.open = simple_open,
	.write = ex_qp_error_write,
	.llseek = noop_llseek,
};

static int ex_check_params(void)
{
	if (!nr_conns || nr_conns > 64 || !depth || depth > 128 ||
	    !pool_size || !req_size || req_size > SZ_256K || req_size % 4 ||
	    (!nr_reqs && !duration_ms))
		return -EINVAL;
	ex.sin.sin_family = AF_INET;
	ex.sin.sin_port = htons(port);
	if (!in4_pton(addr, -1, (u8 *)&ex.sin.sin_addr.s_addr, '\0', NULL))
		return -EINVAL;
	return 0;
}

static int __init ex_init(void)
{
	int ret;

	mutex_init(&ex.lock);
	INIT_LIST_HEAD(&ex.conns);
	ex.state = "running";
	ex.deadline = jiffies + msecs_to_jiffies(duration_ms);
	ret = ex_check_params();
	if (ret) {
		pr_err("ib_slot_example: invalid parameters\n");
		return ret;
	}
	ret = ib_register_client(&ex_client);
	if (ret)
		return ret;
	ex.debugfs = debugfs_create_dir("ib_slot_example", NULL);
	debugfs_create_file("stats", 0444, ex.debugfs, NULL, &ex_stats_fops);
	debugfs_create_file("qp_error", 0200, ex.debugfs, NULL,
			    &ex_qp_error_fops);

	ret = ex_server_start();
	if (!ret)
		ret = ex_clients_start();
	if (ret) {
		pr_err("ib_slot_example: cannot start on %s: %d\n", addr, ret);
		ex_stop("failed");
		ib_unregister_client(&ex_client);
		debugfs_remove_recursive(ex.debugfs);
		return ret;
	}
	pr_info("ib_slot_example: %u connections on %s (%s), %u server slots\n",
		nr_conns, addr, dev_name(&ex.dev->dev), pool_size);
	return 0;
}

static void __exit ex_exit(void)
{
	/* Runs ex_remove_one() for our device, if it is still there. */
	ib_unregister_client(&ex_client);
	ex_stop("unloaded");
	debugfs_remove_recursive(ex.debugfs);
}

module_init(ex_init);
module_exit(ex_exit);

MODULE_DESCRIPTION("Example ib_slot user: RDMA READ/WRITE + SEND over RDMA/CM loopback");
MODULE_LICENSE("GPL");
