# The demo's canary decision (sourced by ./demo; tested by
# tests/it/demo_canaries.rs): with a real node whose agent image built,
# canary_args holds the agent's canary flags; otherwise canaries_off says
# why, and the demo warns "CANARIES OFF: <why>".
#
#   demo_canaries LOCALCLUSTER_BIN CLUSTER_DIR REAL_NODES SIMULATED_WHY
demo_canaries() {
  local localcluster="$1" cluster="$2" real="$3" simulated_why="$4" image why
  canary_args=() canaries_off=""
  if (( ! real )); then
    canaries_off="no real node ($simulated_why)"
  elif image="$("$localcluster" canary-image --dir "$cluster" 2>"$cluster/canary-image.why")"; then
    canary_args=(--canary-image "$image" --canary-period-seconds 30)
  else
    why="$(<"$cluster/canary-image.why")"
    canaries_off="${why:-berth-localcluster canary-image failed}"
  fi
}
