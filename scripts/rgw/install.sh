#!/usr/bin/env bash
# Installs the Ceph packages scripts/rgw/start.sh runs (Debian: ~30 s, ~270 MB). Root only.
set -euo pipefail
if command -v radosgw >/dev/null && command -v ceph-mon >/dev/null && command -v ceph-osd >/dev/null; then exit 0; fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq radosgw ceph-mon ceph-osd ceph-common >/dev/null
