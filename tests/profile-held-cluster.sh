#!/usr/bin/env bash
# Profiles of the console and the agent against a cluster held by
# `berth-bench --hold-seconds N` (docs/bench-runs.md, "How the memory grows").
# usage: tests/profile-held-cluster.sh KUBECONFIG OUTDIR BERTH BERTH_SYSALLOC AGENT_SYSALLOC AGENT_PID GRANTS [steps...]
# steps: heap handlers retained churn agent (default: heap handlers churn agent)
set -u
KC=$1 W=$2 B=$3 BH=$4 AH=$5 APID=$6 GRANTS=$7; shift 7
steps=${*:-"heap handlers churn agent"}
mkdir -p "$W"; S="$W/t.sock"
pane() { tmux -S "$S" capture-pane -p -t c 2>/dev/null; }
complete() { # title
  local p; p=$(pane)
  echo "$p" | grep -q "┌ $1 \[[^]]*\] [0-9]" && ! echo "$p" | grep -q "syncing" && ! echo "$p" | grep -q "loading…"
}
wait_complete() { local t0=$(date +%s.%N); until complete "$1"; do sleep 0.1; done; echo "$1 complete after $(echo "$(date +%s.%N) - $t0" | bc) s"; }
start() { tmux -S "$S" kill-server 2>/dev/null; tmux -S "$S" new-session -d -s c -x 160 -y 50 "$1"; sleep 0.5; }
cpu_s() { awk '{print ($14+$15)/100}' /proc/$1/stat; }
rss() { grep -E 'VmRSS|RssAnon|RssFile' /proc/$1/status | tr '\n' ' '; echo; }
for step in $steps; do case $step in
heap)
  echo "== heap: heaptrack of the console (glibc malloc build), every view visited"
  start "KUBECONFIG=$KC heaptrack -o $W/console-heap $BH -A"
  for k in 1 2 3 4; do
    title=$(case $k in 1) echo Runtimes;; 2) echo Grants;; 3) echo Handlers;; 4) echo Retained;; esac)
    tmux -S "$S" send-keys -t c $k; wait_complete $title
  done
  sleep 15; pid=$(pgrep -f "^$BH -A" | head -1); echo "console (heaptracked) pid $pid: $(rss $pid)"
  # SIGKILL: heaptrack then reports what was still allocated (the live heap) as leaked.
  kill -9 $pid; sleep 20; tmux -S "$S" kill-server 2>/dev/null
  ;;
handlers|retained)
  # The first complete Handlers (key 3) or Retained (key 4) frame, perf -a.
  key=3 title=Handlers; [ $step = retained ] && key=4 title=Retained
  echo "== $step: first complete $title frame, perf -a"
  start "KUBECONFIG=$KC exec $B -A"; wait_complete Runtimes
  pid=$(pgrep -f "^$B -A" | head -1)
  perf record -a -e cpu-clock -F 299 -g -o $W/$step.data > $W/perf-$step.out 2>&1 & PP=$!
  sleep 1; c0=$(cpu_s $pid); t0=$(date +%s.%N)
  tmux -S "$S" send-keys -t c $key; wait_complete $title
  echo "console cpu during it: $(echo "$(cpu_s $pid) - $c0" | bc) s of $(echo "$(date +%s.%N) - $t0" | bc) s wall"
  kill -INT $PP; wait $PP
  echo "console rss: $(rss $pid)"
  [ $step = retained ] && { tmux -S "$S" send-keys -t c q; sleep 2; tmux -S "$S" kill-server 2>/dev/null; }
  ;;
churn)
  echo "== churn: the console on Handlers while pods come and go, perf -p (dwarf)"
  pid=$(pgrep -f "^$B -A" | head -1)
  [ -n "$pid" ] || { start "KUBECONFIG=$KC exec $B -A"; wait_complete Runtimes; tmux -S "$S" send-keys -t c 3; wait_complete Handlers; pid=$(pgrep -f "^$B -A" | head -1); }
  perf record -e cpu-clock -F 499 --call-graph dwarf,32768 -p $pid -o $W/churn.data > $W/perf-churn.out 2>&1 & PP=$!
  c0=$(cpu_s $pid); t0=$(date +%s.%N)
  KUBECONFIG=$KC kubectl -n churn scale deploy churn --replicas=0 >/dev/null; sleep 30
  KUBECONFIG=$KC kubectl -n churn scale deploy churn --replicas=1000 >/dev/null; sleep 30
  echo "console cpu during churn: $(echo "$(cpu_s $pid) - $c0" | bc) s of $(echo "$(date +%s.%N) - $t0" | bc) s wall"
  kill -INT $PP; wait $PP
  tmux -S "$S" send-keys -t c q; sleep 2; tmux -S "$S" kill-server 2>/dev/null
  ;;
agent)
  echo "== agent: heaptrack of a restarted agent (glibc malloc build) until its first pass"
  kill $APID; sleep 2
  port=18999
  KUBECONFIG=$KC heaptrack -o $W/agent-heap $AH run --http-addr 127.0.0.1:$port --lease-namespace berth-system \
    --identity berth-bench-agent --resync-seconds 300 --concurrency 8 --grants-file $GRANTS > $W/agent-heap.log 2>&1 & HP=$!
  t0=$(date +%s)
  until curl -s 127.0.0.1:$port/metrics | awk '/^berth_agent_reconciles_total/ {s+=$2} END {exit !(s>=2000)}'; do sleep 5; [ $(( $(date +%s) - t0 )) -gt 1200 ] && { echo "agent: no first pass in 20 min"; break; }; done
  echo "agent first pass after $(( $(date +%s) - t0 )) s"; sleep 30
  apid=$(pgrep -f "^$AH run" | head -1); echo "agent (heaptracked) pid $apid: $(rss $apid)"
  kill -9 $apid; wait $HP
  ;;
esac; done
