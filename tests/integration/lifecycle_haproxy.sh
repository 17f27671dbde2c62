#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lifecycle_haproxy.sh - lifecycle_servers.sh's day for haproxy in Debian's
# unit shape (-Ws, chroot, user haproxy, stopped by SIGTERM), in a script of
# its own: the day of several servers outgrows the 300 s tests/run-tests
# gives a script on two busy cores.  Owns nothing but that choice;
# lifecycle_servers.sh says what the day is.
export LIFECYCLE_SERVERS=haproxy
exec bash "$(dirname "$0")/lifecycle_servers.sh"
