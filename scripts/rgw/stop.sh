#!/usr/bin/env bash
# Stops the daemons scripts/rgw/start.sh started in <dir> (by their pid files, radosgw first)
# and removes the directory unless --keep.
# Usage: scripts/rgw/stop.sh <dir> [--keep]
set -uo pipefail
DIR="${1:?usage: stop.sh <dir> [--keep]}"
[ -d "$DIR/run" ] || { echo "rgw: no run directory under $DIR" >&2; exit 1; }
for name in client.rgw osd.0 mon.a; do
  f="$DIR/run/$name.pid"
  [ -f "$f" ] || continue
  pid="$(cat "$f")"
  kill "$pid" 2>/dev/null || continue
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -9 "$pid" 2>/dev/null || true
done
[ "${2:-}" = "--keep" ] || rm -rf "$DIR"
