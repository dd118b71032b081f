#!/usr/bin/env bash
# Starts a throwaway Ceph RGW (S3-compatible) on 127.0.0.1 for the replica tests and benches:
# one mon, one memstore OSD (data in the OSD's RAM), one radosgw, under a data directory of its
# own, daemons tracked by pid files. Prints the environment the clients need (and writes it to
# <dir>/env): SPANGUARD_S3_ENDPOINT, SPANGUARD_S3_ACCESS_KEY, SPANGUARD_S3_SECRET_KEY,
# SPANGUARD_RGW_DIR. Stop with scripts/rgw/stop.sh <dir>.
#
# Usage: scripts/rgw/start.sh [dir]   (default: a new directory under $TMPDIR)
set -euo pipefail

for bin in ceph-mon ceph-osd radosgw radosgw-admin ceph monmaptool ceph-authtool; do
  command -v "$bin" >/dev/null || { echo "rgw: $bin not found (scripts/rgw/install.sh installs it)" >&2; exit 3; }
done

DIR="${1:-$(mktemp -d "${TMPDIR:-/tmp}/spanguard-rgw-XXXXXX")}"
mkdir -p "$DIR"/{run,log,mon,osd}
DIR="$(cd "$DIR" && pwd)"

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
MON_PORT="$(free_port)"
RGW_PORT="$(free_port)"
while [ "$RGW_PORT" = "$MON_PORT" ]; do RGW_PORT="$(free_port)"; done
FSID="$(cat /proc/sys/kernel/random/uuid)"
CONF="$DIR/ceph.conf"

# auth none: a loopback-only test cluster. paxos propose interval 0.01 brings the cluster up
# in ~2 s instead of ~12. The OSD is placed in the CRUSH map by this script, not at its own
# start ("osd crush update on start" raced the OSD's boot into a "wrong fsid" exit).
cat >"$CONF" <<CONF
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MON_PORT
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
auth supported = none
ms cluster mode = crc secure
ms service mode = crc secure
ms client mode = crc secure
ms mon cluster mode = crc secure
ms mon service mode = crc secure
ms mon client mode = crc secure
auth allow insecure global id reclaim = true
client mount timeout = 20
mon data avail warn = 1
mon data avail crit = 0
run dir = $DIR/run
pid file = $DIR/run/\$name.pid
admin socket = $DIR/run/\$name.asok
log file = $DIR/log/\$name.log
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon allow pool delete = true
mon max pg per osd = 1000
mon warn on pool no redundancy = false
paxos propose interval = 0.01
ms bind ipv6 = false

[mon]
mon data = $DIR/mon/\$name

[osd]
osd data = $DIR/osd/\$name
osd objectstore = memstore
memstore device bytes = 4294967296
osd crush update on start = false
osd max object name len = 256
osd max object namespace len = 64

[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw data = $DIR/rgw
rgw dns name = 127.0.0.1
rgw gc obj min wait = 0
rgw gc processor period = 10
rgw enable usage log = false
CONF

C=(-c "$CONF")
CLI=(-c "$CONF" --connect-timeout 20)
monmaptool --create --clobber --addv a "[v2:127.0.0.1:$MON_PORT]" --fsid "$FSID" "$DIR/monmap" >/dev/null
ceph-authtool --create-keyring "$DIR/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
ceph-mon "${C[@]}" --mkfs -i a --monmap "$DIR/monmap" --keyring "$DIR/mon.keyring" >/dev/null 2>&1
ceph-mon "${C[@]}" -i a

OSD_ID="$(ceph "${CLI[@]}" osd create)"
mkdir -p "$DIR/osd/osd.$OSD_ID"
ceph-osd "${C[@]}" -i "$OSD_ID" --mkfs >/dev/null 2>&1
ceph "${CLI[@]}" osd crush add-bucket localhost host >/dev/null 2>&1
ceph "${CLI[@]}" osd crush move localhost root=default >/dev/null 2>&1
ceph "${CLI[@]}" osd crush add "osd.$OSD_ID" 1.0 host=localhost >/dev/null 2>&1
ceph-osd "${C[@]}" -i "$OSD_ID"

mkdir -p "$DIR/rgw"
radosgw "${C[@]}" -n client.rgw

uuid() { tr -d '-' </proc/sys/kernel/random/uuid; }
ACCESS="SPANGUARD$(uuid | cut -c1-11 | tr a-z A-Z)"
SECRET="$(uuid)$(uuid | cut -c1-8)"
for _ in $(seq 1 200); do
  if radosgw-admin "${C[@]}" user create --uid=spanguard --display-name=spanguard \
      --access-key="$ACCESS" --secret-key="$SECRET" >/dev/null 2>&1; then break; fi
  sleep 0.05
done
# Wait for the S3 endpoint to answer.
for _ in $(seq 1 400); do
  if node -e 'require("http").get(process.argv[1],r=>process.exit(0)).on("error",()=>process.exit(1))' "http://127.0.0.1:$RGW_PORT/" 2>/dev/null; then break; fi
  sleep 0.05
done

cat >"$DIR/env" <<ENV
SPANGUARD_S3_ENDPOINT=http://127.0.0.1:$RGW_PORT
SPANGUARD_S3_ACCESS_KEY=$ACCESS
SPANGUARD_S3_SECRET_KEY=$SECRET
SPANGUARD_RGW_DIR=$DIR
ENV
cat "$DIR/env"
