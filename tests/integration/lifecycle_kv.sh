#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# lifecycle_kv.sh - lifecycle_servers.sh's day for redis and memcached
# (-t 4), in a script of its own: the day of four servers is longer than
# the 300 s tests/run-tests gives a script on two busy cores.  Owns nothing
# but that choice; lifecycle_servers.sh says what the day is.
# LIFECYCLE_KV_SERVERS names the servers (default: redis memcached).
export LIFECYCLE_SERVERS=${LIFECYCLE_KV_SERVERS:-redis memcached}
exec bash "$(dirname "$0")/lifecycle_servers.sh"
