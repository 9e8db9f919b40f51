#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# Remove the prepared tree and the build directories of this base (the
# ccache stays: it is what makes the next cold build fast).
. "$(dirname "$0")/lib.sh"
say "removing $BASE_DIR"
rm -rf "$BASE_DIR"
