# SPDX-License-Identifier: GPL-2.0-or-later
# mk/layers.mk - the layer table, the one list of it.  Owns the order of the
# source folders, low to high; must never be restated anywhere else.  Read
# by the Makefile (each folder's -I is its prefix of its list: an upward
# #include does not compile), by tests/check-layers (an upward call or
# #include, or a circle of files, fails make check-layers) and quoted by
# ARCHITECTURE.md (tests/integration/source_rules.sh checks the quote).
#
# A word is one rank; folders joined by "+" share a rank and never see each
# other (pmallocd and pmallocctl).  common/ is compiled twice: into the
# shim (common/policy with shim/sys/glue.h force-included, so its malloc and
# read are the shim's own doors) and into the programs (plain libc).

# libpmalloc_shim.so (shim/sys and shim/core alone are libpmalloc.so).
SHIM_LAYERS := common/proto shim/sys common/policy shim/core shim/preload/armed \
	shim/preload/uplink shim/preload/modes shim/preload/route shim/preload/wrap shim/preload

# pmallocd and pmallocctl.
PROGRAM_LAYERS := common/proto common/policy daemon/pmallocd+daemon/pmallocctl
