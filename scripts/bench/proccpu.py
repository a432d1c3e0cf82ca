"""CPU used by processes and by the whole machine, from /proc: for the benchmarks that report
each process's CPU per operation and how busy the machine was (bench-sender,
bench-broadcast-delivery)."""
import os

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU time of a process so far (/proc/PID/stat)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def machine_busy():
    """(busy, total) CPU ticks of the whole machine so far (/proc/stat): its load beside ours shows too."""
    values = [int(v) for v in open("/proc/stat").readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def busy_share(before, after):
    """The share of the machine's CPU that was busy between two `machine_busy()` readings."""
    return (after[0] - before[0]) / max(1, after[1] - before[1])
