#!/usr/bin/env python3
"""What every benchmark script shares: the machine's load, and when a verdict may be given.

A timing taken while other work runs on the 2-core machine says little about kplab: both sides slow
down, and not by the same factor (a 2-thread process loses more to a busy core than a 1-thread one).
So every benchmark records, at its start and its end:
  * the 1-minute load average (/proc/loadavg);
  * the CPU time the whole machine spent (/proc/stat: user, nice, system, irq, softirq and steal, the
    time the hypervisor gave to someone else) and the CPU time of the benchmark's own processes
    (/proc/PID/stat of the benchmark's driver: its own and its waited-for children's);
and gives its verdict ("yes" / "NO" beside a target) only when the machine was quiet:
  * the 1-minute load at the start was at most 1.0;
  * the 1-minute load at the end, less the cores the benchmark itself kept busy on average (its own
    processes are in the load average), was at most 1.0;
  * the other processes (every CPU second of the machine that was not the benchmark's) used at most
    half a core on average during the run.
Otherwise the figures are printed marked "loaded" and no verdict is given.

Use from Python:  m = Machine(); ... run ...; m.stop(); m.verdict(ok) -> "yes" | "NO" | "loaded"
From a shell script:  python3 bench/benchlib.py snapshot $$ > start  (and at the end > end), then
                      python3 bench/benchlib.py report start end   (prints the load lines)
and in its Python report:  m = Machine.from_files(start, end).

Every row a benchmark adds to the table (append_row, scripts/bench_table.sh) states the machine's speed
by the least-work program's own time on KP20k (yardstick), measured by the same script.
"""
import json
import os
import re
import sys
import time

MAX_LOAD = 1.0          # the 1-minute load average above which no verdict is given
MAX_OTHER_CORES = 0.5   # other processes' average CPU use during the run (cores) above which neither

_TICK = os.sysconf("SC_CLK_TCK")


def snapshot(pid=None):
    """The machine's and the benchmark's CPU clocks now (pid: the benchmark's driver, default this one)."""
    pid = os.getpid() if pid is None else pid
    with open("/proc/loadavg") as f:
        load = [float(x) for x in f.read().split()[:3]]
    with open("/proc/stat") as f:
        cpu = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal ...: busy = all but idle and iowait.
    busy = cpu[0] + cpu[1] + cpu[2] + cpu[5] + cpu[6] + (cpu[7] if len(cpu) > 7 else 0)
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # After the command name: fields[11..14] = utime, stime, cutime, cstime (clock ticks).
    own = sum(int(x) for x in fields[11:15])
    return {"time": time.monotonic(), "load": load, "busy": busy / _TICK, "own": own / _TICK,
            "steal": (cpu[7] if len(cpu) > 7 else 0) / _TICK}


class Machine:
    """The load around one benchmark run (start now; stop() at its end)."""

    def __init__(self, start=None, end=None):
        self.start = start or snapshot()
        self.end = end

    @classmethod
    def from_files(cls, start_path, end_path):
        with open(start_path) as a, open(end_path) as b:
            return cls(json.load(a), json.load(b))

    def stop(self):
        self.end = snapshot()
        return self

    def _span(self):
        return max(self.end["time"] - self.start["time"], 1e-9)

    def own_cores(self):
        return (self.end["own"] - self.start["own"]) / self._span()

    def other_cores(self):
        busy = self.end["busy"] - self.start["busy"]
        return max(0.0, busy - (self.end["own"] - self.start["own"])) / self._span()

    def quiet(self):
        return (self.start["load"][0] <= MAX_LOAD
                and self.end["load"][0] - self.own_cores() <= MAX_LOAD
                and self.other_cores() <= MAX_OTHER_CORES)

    def verdict(self, met):
        """'yes' or 'NO' on a quiet machine, 'loaded' otherwise (no verdict)."""
        if not self.quiet():
            return "loaded"
        return "yes" if met else "NO"

    def lines(self):
        s, e = self.start["load"], self.end["load"]
        out = ["load average (1/5/15 min): %.2f %.2f %.2f at the start, %.2f %.2f %.2f at the end"
               % (s[0], s[1], s[2], e[0], e[1], e[2]),
               "during the run (%.0f s): this benchmark kept %.2f cores busy on average, other processes %.2f "
               "(steal %.2f)" % (self._span(), self.own_cores(), self.other_cores(),
                                 (self.end["steal"] - self.start["steal"]) / self._span())]
        if self.quiet():
            out.append("machine quiet (load <= %.1f, other processes <= %.1f core): verdicts given"
                       % (MAX_LOAD, MAX_OTHER_CORES))
        else:
            out.append("LOADED (a load above %.1f, or other processes above %.1f core): the figures are marked "
                       "'loaded' and no verdict is given; run again on a quiet machine" % (MAX_LOAD, MAX_OTHER_CORES))
        return out


def _spawn(cmd, env=None, stdout=None, stderr=None):
    """Starts cmd (a list whose first word is the program's path) with posix_spawn; returns its pid.
    stdout / stderr: an open file to write to, or None for /dev/null. A program that cannot be started
    raises OSError here, in the caller.

    Every benchmark starts the processes it measures here. posix_spawn (glibc: a vfork-style clone)
    runs none of this interpreter in the child, so the child's rusage is the program's alone, as with
    subprocess.Popen (which also vforks) and unlike os.fork: a forked child runs Python until its exec
    and copies the pages it touches, all counted as the measured process's (bench/phase_medians.py did
    so until December 2026: a one-document evaluation read 21.2 ms of CPU then, 12.1-12.6 ms spawned).
    tests/reference/phase_medians_check.py holds the faults to /usr/bin/time's."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, (stdout.fileno() if stdout is not None else devnull), 1),
                   (os.POSIX_SPAWN_DUP2, (stderr.fileno() if stderr is not None else devnull), 2)]
        return os.posix_spawn(cmd[0], cmd, os.environ if env is None else env, file_actions=actions)
    finally:
        os.close(devnull)  # the child has its own copy


def spawn_timed(cmd, env=None, stdout=None, stderr=None):
    """Runs cmd as a fresh process (_spawn); returns (exit code, wall seconds, its rusage: the process and
    its threads)."""
    t0 = time.perf_counter()
    pid = _spawn(cmd, env, stdout, stderr)
    _, status, usage = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), time.perf_counter() - t0, usage


def run_pair_timed(cmd):
    """Runs two copies of cmd at once (one a core on the 2-core machine); returns (wall seconds until both
    ended, the mean CPU seconds of the two). Beside run_timed's time alone, what a busy second core costs
    a process (a shared physical core, caches, memory bandwidth): a one-thread program does not pay it,
    a two-thread one does on every phase it runs on both cores."""
    t0 = time.perf_counter()
    pids = [_spawn(cmd) for _ in range(2)]
    cpu = []
    for pid in pids:
        _, status, usage = os.wait4(pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit("%s failed (exit %d), run two at once" % (" ".join(cmd), os.waitstatus_to_exitcode(status)))
        cpu.append(usage.ru_utime + usage.ru_stime)
    return time.perf_counter() - t0, sum(cpu) / 2


def run_timed(cmd, stdout=None):
    """Runs cmd (a list); returns (wall seconds, CPU seconds of the process and its threads). The CPU time
    is the process's own rusage (os.wait4): /usr/bin/time and os.times count in 10 ms steps. Exits with
    the command's error output when it fails."""
    import tempfile
    with tempfile.TemporaryFile() as err:
        try:
            code, wall, usage = spawn_timed(cmd, stdout=stdout, stderr=err)
        except OSError as e:
            sys.exit("%s: cannot run: %s" % (cmd[0], e.strerror))
        if code != 0:
            err.seek(0)
            sys.exit("%s failed (exit %d): %s" % (" ".join(cmd), code, err.read().decode(errors="replace")[:400]))
    return wall, usage.ru_utime + usage.ru_stime


def yardstick(least_work, data, runs=5):
    """The machine's speed by a fixed yardstick: the least-work program (bench/least_work.cc) on KP20k x
    catSeqTG-2RF1 seed 1234, the median wall and CPU seconds of `runs` fresh processes. Absolute times of
    two machines of the same kind differ by 2x; every benchmark's row states this beside its own."""
    import statistics
    gold = os.path.join(data, "kpg_testsets_meng2017", "kp20k", "word_kp20k_testing_allkeywords.txt")
    pred = os.path.join(data, "predictions", "catSeqTG-2RF1", "kp20k", "seed1234.txt")
    times = [run_timed([least_work, gold, pred]) for _ in range(runs)]
    return statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)


def parse_variants(specs, prog):
    """The variants of an A/B script (bench/phase_medians.py, bench/instructions.py): each spec is
    [NAME=VALUE ...] BINARY[::OPTIONS]. Returns (spec, binary, options as a list, {NAME: VALUE}) each;
    exits naming prog and the spec when the binary is missing or not executable."""
    variants = []
    for v in specs:
        head, _, opts = v.partition("::")
        settings = {}
        m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s+", head)
        while m:
            settings[m.group(1)] = m.group(2)
            head = head[m.end():]
            m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s+", head)
        binary = head
        if not binary.strip():
            sys.exit("%s: %r: settings but no binary after them (a variant is [NAME=VALUE ...] "
                     "BINARY[::OPTIONS])" % (prog, v))
        if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
            sys.exit("%s: %s: not an executable file (a variant is [NAME=VALUE ...] "
                     "BINARY[::OPTIONS], got %r)" % (prog, binary, v))
        variants.append((v, binary, opts.split(), settings))
    return variants


def tagged_copies(keywords, predictions, docs, directory):
    """N = docs documents of tagged copies of a Meng-2017 keyword file and its predictions (bench/gen_copies.py,
    the scale benchmark's generator), written into directory: returns (the dataset directory, its keyword
    file, the predictions file)."""
    import subprocess
    dataset, copies = os.path.join(directory, "data"), os.path.join(directory, "predictions.txt")
    subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_copies.py"),
                    "--gold", keywords, "--predictions", predictions, "--docs", str(docs),
                    "--out-dataset", dataset, "--out-predictions", copies], check=True)
    return dataset, os.path.join(dataset, os.path.basename(keywords)), copies


def append_row(path, cells):
    """One row of scripts/bench_table.sh's table (tab-separated): task, kplab wall, kplab CPU, reference
    wall, reference CPU, wall ratio, CPU ratio, target, verdict, machine (load and yardstick)."""
    if path:
        with open(path, "a") as f:
            f.write("\t".join(str(c).replace("\t", " ") for c in cells) + "\n")


def main(argv):
    if len(argv) == 3 and argv[1] == "snapshot":
        print(json.dumps(snapshot(int(argv[2]))))
        return 0
    if len(argv) == 4 and argv[1] == "report":
        for line in Machine.from_files(argv[2], argv[3]).lines():
            print(line)
        return 0
    if len(argv) == 4 and argv[1] == "yardstick":
        wall, cpu = yardstick(argv[2], argv[3])
        print(json.dumps({"wall": wall, "cpu": cpu}))
        return 0
    print("usage: benchlib.py snapshot PID > FILE | report START_FILE END_FILE | yardstick LEAST_WORK DATA",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
