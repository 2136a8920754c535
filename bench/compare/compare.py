#!/usr/bin/env python3
"""Side-by-side benchmark: Baton, Gloo and Open MPI, one after another, in one run.

Every system runs the same sweep (bench/compare/sweep.cc: AllReduce,
AllGather, ReduceScatter and Broadcast of float32 with sum, every result
checked element by element) with the same process counts. Configurations:

  1x2, 1x4   one node, 2 or 4 ranks: Baton (one daemon), Open MPI shared
             memory (btl self,vader), Open MPI TCP only, Gloo (TCP)
  2x1, 2x2   two simulated nodes of 1 or 2 ranks: Baton (two daemons on
             loopback), Open MPI TCP only, Gloo (TCP)

With two simulated nodes, every system's processes of one node run on that
node's own share of the CPUs (as on real nodes, and as Open MPI binds two
ranks by default): baton-run binds its daemons and ranks, and the Open MPI
and Gloo ranks are started under taskset. --no-bind lets every process run
anywhere.

The configurations are repeated --reps times, the systems interleaved within
each repetition, and every figure is the median over repetitions. Prints one
table per configuration with each system's time and busbw and Baton's ratio
to each (ratio = other's time / Baton's time: above 1, Baton is faster);
writes all medians as JSON and a plot of busbw against size as SVG; measures
the machine's limits (memory copy, TCP loopback via iperf3) in the same run.

Usage (scripts/compare.sh installs Gloo and Open MPI and builds first):
  bench/compare/compare.py --build build --out bench-results [--reps 3]
      [--configs 1x2,1x4,2x1,2x2] [-e 256M] [--ops allreduce,...]
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SYSTEMS_ONE_NODE = ["baton", "openmpi-sm", "openmpi-tcp", "gloo"]
SYSTEMS_MULTI_NODE = ["baton", "openmpi-tcp", "gloo"]
COLORS = {"baton": "#d62728", "openmpi-sm": "#1f77b4", "openmpi-tcp": "#2ca02c", "gloo": "#9467bd"}


def run(cmd, env=None, timeout=1800):
    """Runs cmd; returns its stdout, or exits with its output on failure."""
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout)
        sys.exit(f"compare.py: {' '.join(cmd[:6])} ... failed with exit status {proc.returncode}")
    return proc.stdout


def node_cpus(nodes):
    """Each simulated node's share of this process's CPUs ("0", "1", ...), as
    baton-run cuts them; None for one node or fewer CPUs than nodes."""
    cpus = sorted(os.sched_getaffinity(0))
    share = len(cpus) // nodes
    if nodes < 2 or share == 0:
        return None
    return [",".join(str(c) for c in cpus[n * share:(n + 1) * share]) for n in range(nodes)]


def run_system(system, nodes, per_node, bin_dir, sweep_args, json_path, bind=True):
    ranks = nodes * per_node
    label = f"{nodes}x{per_node}"
    args = sweep_args + ["--label", label, "--json", json_path]
    env = dict(os.environ)
    shares = node_cpus(nodes) if bind else None
    if system == "baton":
        run([f"{bin_dir}/baton-run", "--nodes", str(nodes), "--ranks-per-node", str(per_node)] +
            ([] if bind else ["--no-bind"]) + ["--", f"{bin_dir}/compare-baton"] + args)
    elif system.startswith("openmpi"):
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", COMPARE_MPI_NAME=system)
        btl = "self,vader" if system == "openmpi-sm" else "self,tcp"
        program = [f"{bin_dir}/compare-mpi"]
        binding = []
        if shares:
            # Each rank puts itself on its node's CPUs (rank r is on node r / per_node).
            cases = " ".join(f"{n}) c={c};;" for n, c in enumerate(shares))
            program = ["sh", "-c", f'case $((OMPI_COMM_WORLD_RANK / {per_node})) in {cases} esac; '
                       'exec taskset -c "$c" "$0" "$@"', f"{bin_dir}/compare-mpi"]
            binding = ["--bind-to", "none"]
        run(["mpirun", "--oversubscribe", "-np", str(ranks)] + binding +
            ["--mca", "pml", "ob1", "--mca", "btl", btl,
             "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo",
             "-x", "COMPARE_MPI_NAME"] + program + args, env=env)
    elif system == "gloo":
        store = tempfile.mkdtemp(prefix="compare-gloo-")
        try:
            procs = []
            for r in range(ranks):
                e = dict(env, COMPARE_RANK=str(r), COMPARE_SIZE=str(ranks), COMPARE_STORE=store)
                taskset = ["taskset", "-c", shares[r // per_node]] if shares else []
                procs.append(subprocess.Popen(taskset + [f"{bin_dir}/compare-gloo"] + args, env=e,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
            outs = [p.communicate(timeout=1800)[0] for p in procs]
            for r, p in enumerate(procs):
                if p.returncode != 0:
                    sys.stderr.write(outs[r])
                    sys.exit(f"compare.py: gloo rank {r} failed with exit status {p.returncode}")
        finally:
            shutil.rmtree(store, ignore_errors=True)


def iperf3(directions):
    """GB/s received over loopback, summed over `directions` iperf3 streams run at once.

    The streams run between two simulated nodes bound the way baton-run binds
    them (node 0 on the first share of the CPUs, node 1 on the second): one
    direction sends from node 0 to node 1; two directions add node 1 to node
    0 at the same time, each with its own iperf3 client and server, so that
    every core sends and receives, as each node of a two-node exchange does.
    (iperf3 --bidir would run both directions in one single-threaded process
    on one core, which measures iperf3, not the machine.)"""
    import time
    shares = node_cpus(2)
    pin = lambda node: ["taskset", "-c", shares[node]] if shares else []
    base = 20000 + os.getpid() % 20000
    servers, clients = [], []
    try:
        for d in range(directions):
            receiver = 1 - d  # direction d sends from node d
            port = str(base + d)
            servers.append(subprocess.Popen(pin(receiver) + ["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", port],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        for d in range(directions):
            clients.append(subprocess.Popen(pin(d) + ["iperf3", "-c", "127.0.0.1", "-p", str(base + d), "-t", "5",
                                                      "-J"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                            text=True))
        total = 0.0
        for c in clients:
            out = c.communicate(timeout=60)[0]
            if c.returncode != 0:
                sys.stderr.write(out)
                sys.exit(f"compare.py: iperf3 client failed with exit status {c.returncode}")
            total += json.loads(out)["end"]["sum_received"]["bits_per_second"]
        return total / 8e9
    finally:
        for s in servers:
            s.wait(timeout=30)


def measure_limits(bin_dir):
    """Memory copy bandwidth, and TCP loopback one way and both ways at once.

    A two-node exchange (ring, recursive doubling) sends and receives at the
    same time, and on one machine each node's core both sends and receives,
    so its bound is half the bidirectional total per direction."""
    membw = json.loads(run([f"{bin_dir}/baton-membw", "--json"]))["copy_gbps"]
    tcp = bidir = None
    if shutil.which("iperf3"):
        tcp = iperf3(1)
        bidir = iperf3(2)
    # The small-message floor: a context switch between two processes on
    # one CPU, and a TCP loopback exchange between two CPUs.
    latency = json.loads(run([f"{bin_dir}/baton-latency", "--json"]))
    return {"memcpy_gbps": membw, "tcp_loopback_gbps": tcp, "tcp_loopback_bidir_total_gbps": bidir,
            "latency": latency}


def idle_daemon_cpu(bin_dir, seconds=10.0):
    """Percent of one core an idle daemon with 4 connected clients uses.

    baton-run starts one batond and 4 ranks of compare-baton --idle, which
    create a communicator, run one AllReduce and sleep; the daemon's CPU time
    (/proc/PID/stat utime + stime) is read over `seconds` in the middle."""
    import time
    launcher = subprocess.Popen([f"{bin_dir}/baton-run", "--nodes", "1", "--ranks-per-node", "4", "--",
                                 f"{bin_dir}/compare-baton", "--idle", str(seconds + 6)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(3)
        pids = subprocess.run(["pgrep", "-P", str(launcher.pid), "batond"], stdout=subprocess.PIPE,
                              text=True).stdout.split()
        if not pids:
            return None
        tick = os.sysconf("SC_CLK_TCK")

        def cpu_seconds():
            with open(f"/proc/{pids[0]}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick

        start, t0 = cpu_seconds(), time.monotonic()
        time.sleep(seconds)
        used, elapsed = cpu_seconds() - start, time.monotonic() - t0
        return 100.0 * used / elapsed
    finally:
        launcher.wait(timeout=120)


def human(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def print_tables(medians, configs, ops):
    for config in configs:
        systems = [s for s in (SYSTEMS_ONE_NODE if config.startswith("1x") else SYSTEMS_MULTI_NODE)]
        others = [s for s in systems if s != "baton"]
        print(f"\n## {config} (nodes x ranks per node): time (us), busbw (GB/s), ratio = other's time / Baton's")
        head = f"{'op':<14}{'size':>6}"
        for s in systems:
            head += f" {s + ' us':>16} {'GB/s':>7}"
        for s in others:
            head += f" {'x ' + s:>14}"
        print(head)
        for op in ops:
            sizes = sorted({k[3] for k in medians if k[1] == config and k[2] == op})
            for size in sizes:
                line = f"{op:<14}{human(size):>6}"
                for s in systems:
                    m = medians.get((s, config, op, size))
                    line += f" {m['time_us']:>16.1f} {m['busbw']:>7.3f}" if m else f" {'-':>16} {'-':>7}"
                base = medians.get(("baton", config, op, size))
                for s in others:
                    m = medians.get((s, config, op, size))
                    line += f" {m['time_us'] / base['time_us']:>14.2f}" if m and base else f" {'-':>14}"
                print(line)


def print_targets(medians, limits, idle):
    """Issue 4's targets, each with the measured figure and whether it is met."""
    MiB64 = 64 << 20

    def get(system, config, size, field):
        m = medians.get((system, config, "allreduce", size))
        return m[field] if m else None

    rows = []

    def ratio(label, num, den, want, at_least=True):
        if num is None or den is None or den == 0:
            rows.append((label, "n/a", want, "not measured"))
            return
        value = num / den
        met = value >= want if at_least else value <= want
        rows.append((label, f"{value:.2f}", f"{'>=' if at_least else '<='} {want}", "met" if met else "NOT met"))

    bw = lambda s, c: get(s, c, MiB64, "busbw")
    us = lambda s, c: get(s, c, 8, "time_us")
    ratio("1x4 AllReduce 64 MiB busbw, Baton / Open MPI sm", bw("baton", "1x4"), bw("openmpi-sm", "1x4"), 1.5)
    ratio("1x4 AllReduce 64 MiB busbw / memcpy limit", bw("baton", "1x4"), limits["memcpy_gbps"], 0.5)
    for c in ("2x1", "2x2"):
        ratio(f"{c} AllReduce 64 MiB busbw, Baton / Gloo", bw("baton", c), bw("gloo", c), 2)
        ratio(f"{c} AllReduce 64 MiB busbw, Baton / Open MPI tcp", bw("baton", c), bw("openmpi-tcp", c), 1.2)
        ratio(f"{c} AllReduce 64 MiB busbw / iperf3 one way", bw("baton", c), limits["tcp_loopback_gbps"], 0.7)
        if limits.get("tcp_loopback_bidir_total_gbps"):
            ratio(f"{c} AllReduce 64 MiB busbw / (iperf3 both ways / 2)", bw("baton", c),
                  limits["tcp_loopback_bidir_total_gbps"] / 2, 0.7)
    ratio("1x2 AllReduce 8 B time, Baton / Open MPI sm", us("baton", "1x2"), us("openmpi-sm", "1x2"), 2, False)
    ratio("1x2 AllReduce 8 B time, Baton / Gloo", us("baton", "1x2"), us("gloo", "1x2"), 0.1, False)
    ratio("2x1 AllReduce 8 B time, Baton / Open MPI tcp", us("baton", "2x1"), us("openmpi-tcp", "2x1"), 1.5, False)
    # What no daemon sharing each node's core can beat (baton-latency): the
    # sum of its parts, and the chain measured as one.
    mpi_tcp = us("openmpi-tcp", "2x1")
    for key, label in (("daemon_floor_us", "floor on this host (TCP exchange + 2 process hand-offs)"),
                       ("composed_floor_us", "the same chain measured as one (rank, relay, TCP)")):
        floor = limits.get("latency", {}).get(key, -1)
        if floor > 0 and mpi_tcp:
            value = floor / mpi_tcp
            rows.append((f"  {label} / Open MPI tcp", f"{value:.2f}", "<= 1.5",
                         "below the target" if value <= 1.5 else "the target is below the floor"))
    if us("baton", "2x1") and limits.get("latency", {}).get("composed_floor_us", -1) > 0:
        rows.append(("  Baton / that measured chain", f"{us('baton', '2x1') / limits['latency']['composed_floor_us']:.2f}",
                     "", "what Baton adds to the least a daemon does"))
    if idle is not None:
        rows.append(("idle daemon, 4 connected clients, % of a core", f"{idle:.2f}", "< 1", "met" if idle < 1 else "NOT met"))
    print("\n## Targets (issue 4)")
    width = max(len(r[0]) for r in rows)
    for label, value, want, verdict in rows:
        print(f"{label:<{width}}  {value:>7}  {want:>7}  {verdict}")
    return [dict(target=r[0], value=r[1], want=r[2], verdict=r[3]) for r in rows]


def svg_plot(medians, configs, ops, path):
    """busbw against size: one panel per (op, configuration), one line per system."""
    pw, ph, ml, mb, mt = 300, 200, 50, 34, 24
    width, height = pw * len(configs) + 20, ph * len(ops) + 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="10">', f'<rect width="100%" height="100%" fill="white"/>']
    for col, config in enumerate(configs):
        for row, op in enumerate(ops):
            x0, y0 = col * pw + ml, row * ph + mt
            w, h = pw - ml - 10, ph - mt - mb
            points = {k: v for k, v in medians.items() if k[1] == config and k[2] == op}
            if not points:
                continue
            sizes = sorted({k[3] for k in points})
            ymax = max(v["busbw"] for v in points.values()) * 1.1 or 1
            lo, hi = math.log2(sizes[0]), math.log2(sizes[-1]) if len(sizes) > 1 else math.log2(sizes[0]) + 1

            def px(size):
                return x0 + (math.log2(size) - lo) / ((hi - lo) or 1) * w

            def py(bw):
                return y0 + h - bw / ymax * h

            out.append(f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
            out.append(f'<text x="{x0 + w / 2}" y="{y0 - 6}" text-anchor="middle" font-weight="bold">'
                       f'{op} {config}</text>')
            for frac in (0, 0.5, 1):
                bw = ymax * frac
                out.append(f'<text x="{x0 - 4}" y="{py(bw) + 3}" text-anchor="end">{bw:.2f}</text>')
            for size in sizes[:: max(1, len(sizes) // 4)]:
                out.append(f'<text x="{px(size)}" y="{y0 + h + 12}" text-anchor="middle">{human(size)}</text>')
            out.append(f'<text x="{x0 - 38}" y="{y0 + h / 2}" transform="rotate(-90 {x0 - 38} {y0 + h / 2})" '
                       f'text-anchor="middle">busbw GB/s</text>')
            for system in COLORS:
                line = [(px(k[3]), py(v["busbw"])) for k, v in sorted(points.items(), key=lambda kv: kv[0][3])
                        if k[0] == system]
                if line:
                    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in line)
                    out.append(f'<polyline points="{pts}" fill="none" stroke="{COLORS[system]}" stroke-width="1.5"/>')
    for i, (system, color) in enumerate(COLORS.items()):
        x = 20 + i * 130
        out.append(f'<rect x="{x}" y="{height - 18}" width="12" height="8" fill="{color}"/>')
        out.append(f'<text x="{x + 16}" y="{height - 10}">{system}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="build directory (binaries in BUILD/bin)")
    p.add_argument("--out", default="bench-results", help="directory for results.json, raw.jsonl and busbw.svg")
    p.add_argument("--reps", type=int, default=3, help="repetitions; figures are medians over them")
    p.add_argument("--configs", default="1x2,1x4,2x1,2x2", help="NODESxRANKS_PER_NODE list")
    p.add_argument("--systems", default="baton,openmpi-sm,openmpi-tcp,gloo")
    p.add_argument("--ops", default="allreduce,allgather,reducescatter,broadcast")
    p.add_argument("-b", default="8", help="smallest size")
    p.add_argument("-e", default="256M", help="largest size")
    p.add_argument("-f", default="2", help="size factor between rows (2 keeps 8 B and 64 MiB in the sweep)")
    p.add_argument("-n", default="200", help="timed runs for small sizes (fewer for large: see sweep.cc)")
    p.add_argument("--no-bind", action="store_true",
                   help="let simulated nodes' processes run on any CPU (default: each node on its own share)")
    args = p.parse_args()

    bin_dir = os.path.abspath(os.path.join(args.build, "bin"))
    os.makedirs(args.out, exist_ok=True)
    raw = os.path.join(args.out, "raw.jsonl")
    if os.path.exists(raw):
        os.remove(raw)
    configs = args.configs.split(",")
    ops = args.ops.split(",")
    wanted = set(args.systems.split(","))
    sweep = ["--ops", args.ops, "-b", args.b, "-e", args.e, "-f", args.f, "-n", args.n]

    limits = measure_limits(bin_dir)
    print(f"# limits: memcpy {limits['memcpy_gbps']:.2f} GB/s, TCP loopback (iperf3, 1 stream each way, "
          f"simulated nodes on their own CPUs) {limits['tcp_loopback_gbps'] or float('nan'):.2f} GB/s one way, "
          f"{limits['tcp_loopback_bidir_total_gbps'] or float('nan'):.2f} GB/s both ways at once (total)",
          flush=True)
    lat = limits["latency"]
    us = lambda key: f"{lat[key]:.2f} us" if lat[key] >= 0 else "n/a (one CPU)"
    print(f"# latency limits (baton-latency): system call {us('syscall_us')}, hand-off between two "
          f"processes on one CPU {us('process_handoff_us')} (between two threads "
          f"{us('thread_handoff_us')}), TCP loopback exchange of 64 B {us('tcp_exchange_us')}; "
          f"2-node floor through a daemon sharing each node's core {us('daemon_floor_us')} "
          f"(measured as one chain: {us('composed_floor_us')})", flush=True)
    # BBR paces loopback well below what it carries (docs/benchmarks.md): say which one ran.
    with open("/proc/sys/net/ipv4/tcp_congestion_control") as f:
        congestion = f.read().strip()
    baton_cc = os.environ.get("BATON_TCP_CONGESTION") or congestion
    print(f"# TCP congestion control: {congestion} (system default); Baton's data connections: {baton_cc}",
          flush=True)
    print("# simulated nodes: " + ("every process on any CPU (--no-bind)" if args.no_bind else
                                   "each on its own share of the CPUs (all systems)"), flush=True)
    idle = idle_daemon_cpu(bin_dir) if "baton" in wanted else None
    if idle is not None:
        print(f"# idle daemon with 4 connected clients: {idle:.2f}% of one core", flush=True)
    # The small-message floor moves with the host's load as much as the
    # systems do: measured again in each repetition, next to the 2x1 runs
    # it is read against, and taken as the median like them.
    latency_samples = [limits["latency"]]
    for rep in range(args.reps):
        for config in configs:
            nodes, per_node = (int(x) for x in config.split("x"))
            if config == "2x1" and rep > 0:
                latency_samples.append(json.loads(run([f"{bin_dir}/baton-latency", "--json"])))
            for system in (SYSTEMS_ONE_NODE if nodes == 1 else SYSTEMS_MULTI_NODE):
                if system in wanted:
                    print(f"# rep {rep + 1}/{args.reps}: {system} {config}", flush=True)
                    run_system(system, nodes, per_node, bin_dir, sweep, raw, bind=not args.no_bind)

    if len(latency_samples) > 1:
        limits["latency"] = {k: (statistics.median(d[k] for d in latency_samples) if k.endswith("_us") else v)
                             for k, v in latency_samples[0].items()}
        lat = limits["latency"]
        print(f"# latency limits, median over {len(latency_samples)} measurements (one per repetition): "
              f"2-node floor {us('daemon_floor_us')} (measured as one chain: {us('composed_floor_us')})",
              flush=True)

    rows = [json.loads(line) for line in open(raw)]
    wrong = sum(r["wrong"] for r in rows)
    groups = {}
    for r in rows:
        groups.setdefault((r["system"], r["config"], r["op"], r["bytes"]), []).append(r)
    medians = {}
    for key, rs in groups.items():
        t = statistics.median(r["time_us"] for r in rs)
        medians[key] = {"time_us": t, "busbw": statistics.median(r["busbw"] for r in rs),
                        "algbw": statistics.median(r["algbw"] for r in rs), "reps": len(rs)}
    print_tables(medians, configs, ops)
    targets = print_targets(medians, limits, idle)
    result = {"limits": limits, "idle_daemon_cpu_percent": idle, "targets": targets, "reps": args.reps, "sweep": sweep, "wrong_elements": wrong,
              "medians": [dict(system=k[0], config=k[1], op=k[2], bytes=k[3], **v) for k, v in sorted(medians.items())]}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(result, f, indent=1)
    svg_plot(medians, configs, ops, os.path.join(args.out, "busbw.svg"))
    print(f"\n# wrote {args.out}/results.json, {args.out}/raw.jsonl, {args.out}/busbw.svg; "
          f"wrong elements over all runs: {wrong}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
