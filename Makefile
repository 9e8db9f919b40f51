# SPDX-License-Identifier: GPL-2.0
# ib_slot: the single entry point.  "make help" lists the targets.

T := tools/testing/ib_slot
export KSRC DEBUG KCSAN

.PHONY: help run check kunit vmtest series build prepare deps clean bench

help:
	@echo "ib_slot targets:"
	@echo "  run      build the patched kernel, boot it under QEMU and show ib_slot at work (example ULP, then NFS/RDMA and SRP with their pools squeezed; plot in out/run)"
	@echo "  check    static checks, per-patch builds, KUnit and VM tests; ends with 'N passed, N failed'"
	@echo "  kunit    only the KUnit suites (make kunit SUITES='ib_slot ib_slot_cost')"
	@echo "  vmtest   only the VM integration tests (make vmtest TESTS='rping srp')"
	@echo "  bench    ib_slot fast path vs today's primitives, patched vs stock 6.12 under fio; out/bench"
	@echo "  series   write the mailable patch series with a cover letter to out/series"
	@echo "  build    prepare the tree and build the test kernel"
	@echo "  prepare  unpack the base tree, link the new files, apply the quilt series"
	@echo "  clean    remove out/ here and this base's prepared tree and build directories"
	@echo "Variables: KSRC=<6.12+ tree> (default: Debian's linux-source-6.12), DEBUG=1 (KASAN, kmemleak), KCSAN=1 (data races)"

run: build
	$(T)/run.sh

check:
	$(T)/check.sh

kunit: build
	$(T)/kunit.sh $(SUITES)

vmtest: build
	$(T)/vmtest.sh $(TESTS)

bench: build
	$(T)/bench.sh

series: deps
	$(T)/series.sh out/series

build: prepare
	$(T)/build.sh

prepare: deps
	$(T)/prepare.sh

deps:
	@$(T)/deps.sh

clean:
	rm -rf out
	$(T)/clean.sh
