"""CPU budgets for the benchmarks that hold each process to a fixed share of a core
(bench-scaleout, bench-app-split): cgroup v1's cpu and cpuacct hierarchies, writable as root."""
import os

# The scheduler's period: a process that used its budget's share of one is held until the next.
# PUSHLINE_BENCH_CPU_PERIOD_US changes it (for example 10000, so that a process held while it
# holds a lock, such as SQLite's write lock, holds it for at most a tenth as long).
PERIOD_US = int(os.environ.get("PUSHLINE_BENCH_CPU_PERIOD_US", "100000"))


def groups(name, budget):
    """A cpu group held to `budget` cores and a cpuacct group, both called `name`: their paths.
    The accounting starts at zero."""
    cpu, acct = (f"/sys/fs/cgroup/{h}/{name}" for h in ("cpu", "cpuacct"))
    for path in (cpu, acct):
        os.makedirs(path, exist_ok=True)
    open(f"{cpu}/cpu.cfs_period_us", "w").write(str(PERIOD_US))
    open(f"{cpu}/cpu.cfs_quota_us", "w").write(str(int(budget * PERIOD_US)))
    open(f"{acct}/cpuacct.usage", "w").write("0")
    return cpu, acct


def inside(cpu, acct, args):
    """`args` as a command that runs inside the groups from its first instruction."""
    return ["sh", "-c", f'echo $$ > {cpu}/cgroup.procs && echo $$ > {acct}/cgroup.procs && exec "$@"', "sh"] + args


def cpu_seconds(acct):
    """The CPU seconds the group's processes used."""
    return int(open(f"{acct}/cpuacct.usage").read()) / 1e9
