#!/usr/bin/env bash
# Load test of `capscore serve` (release build) against a registered 5,000-image dataset.
#
#   scripts/load.sh            # needs wrk (apt-get install -y wrk), python3, curl
#
# Prints: registration time; single-image throughput (wrk, closed loop, 64 connections);
# single-image latency percentiles at a fixed ~1,000 requests/s; the 5,000-image request time
# (warm, best and median of 5). Environment: PORT (default 18080), BIN (default
# target/release/capscore, built if missing), DURATION (default 10s).
set -euo pipefail
cd "$(dirname "$0")/.."
PORT=${PORT:-18080}
DURATION=${DURATION:-10s}
TARGET=${CARGO_TARGET_DIR:-target}
BIN=${BIN:-$TARGET/release/capscore}
[ -x "$BIN" ] || cargo build --release
WORK=$(mktemp -d)
trap 'kill $SERVER 2>/dev/null || true; rm -rf "$WORK"' EXIT
python3 scripts/load_data.py "$WORK"
CAPSCORE_DATA_DIR="$WORK/data" CAPSCORE_ADDR="127.0.0.1:$PORT" RUST_LOG=warn "$BIN" serve &
SERVER=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
URL="http://127.0.0.1:$PORT"
echo "== register 5,000 images x 5 references"
curl -s -o /dev/null -w "PUT /v1/datasets/load5000: %{http_code} in %{time_total}s\n" \
  -X PUT --data-binary @"$WORK/refs5000.json" "$URL/v1/datasets/load5000"
echo "== single-image request, max throughput (wrk -t2 -c64 -d$DURATION)"
BODY_FILE="$WORK/single.json" wrk -t2 -c64 -d"$DURATION" --latency -s scripts/load_post.lua "$URL/v1/score" \
  | grep -E "Requests/sec|Latency|50%|90%|99%|Non-2xx|requests in"
echo "== single-image request at ~1,000 req/s (20 connections x 1 request / 20 ms)"
BODY_FILE="$WORK/single.json" DELAY_MS=20 wrk -t2 -c20 -d"$DURATION" --latency -s scripts/load_post.lua "$URL/v1/score" \
  | grep -E "Requests/sec|Latency|50%|90%|99%|Non-2xx|requests in"
echo "== 5,000-image request (warm)"
for i in 1 2 3 4 5 6; do
  curl -s -o /dev/null -w "%{time_total}\n" -X POST -H 'content-type: application/json' \
    --data-binary @"$WORK/big.json" "$URL/v1/score"
done | tail -n 5 | sort -n | awk '{a[NR]=$1} END {printf "best %.3fs  median %.3fs  worst %.3fs\n", a[1], a[3], a[5]}'
for df in dataset; do
  sed 's/"dataset": "load5000"/"dataset": "load5000", "cider_df": "dataset"/' "$WORK/big.json" > "$WORK/big_ds.json"
  for i in 1 2 3 4 5 6; do
    curl -s -o /dev/null -w "%{time_total}\n" -X POST -H 'content-type: application/json' \
      --data-binary @"$WORK/big_ds.json" "$URL/v1/score"
  done | tail -n 5 | sort -n | awk '{a[NR]=$1} END {printf "cider_df=dataset: best %.3fs  median %.3fs  worst %.3fs\n", a[1], a[3], a[5]}'
done
