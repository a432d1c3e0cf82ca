# Liveness and stopping by recorded PID, sourced by the scripts that start and stop parts of the
# stack (run, stop, broker, postgres, push-mocks). They stop exactly what they started, never by
# name.

# running PID: the process exists and is not a zombie. A process that was killed or crashed
# answers `kill -0` until its parent reaps it (PID 1 once the script that started it has exited),
# which a container's init may do late or never: it counts as stopped all the same, so that a
# restart starts it again and a stop does not wait for it.
running() { kill -0 "$1" 2>/dev/null && [ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" != Z ]; }

# pid_alive FILE: the PID recorded in FILE is running.
pid_alive() { [ -f "$1" ] && running "$(cat "$1")"; }

# wait_stopped PID TENTHS: waits up to TENTHS tenths of a second for the process to end; fails if
# it still runs.
wait_stopped() {
  local _
  for _ in $(seq 1 "$2"); do running "$1" || return 0; sleep 0.1; done
  ! running "$1"
}

# stop_pid PID [TENTHS]: SIGTERM, up to TENTHS tenths of a second (100) to end, then SIGKILL.
stop_pid() {
  kill -TERM "$1" 2>/dev/null || true
  wait_stopped "$1" "${2:-100}" || kill -KILL "$1" 2>/dev/null || true
}
