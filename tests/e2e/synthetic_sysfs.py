#!/usr/bin/env python3
"""A synthetic sysfs tree for a uniform machine, written with just the files topology discovery
reads (docs/topology.md "What is read"): cpu/{online,present,possible,offline,isolated},
smt/control, cpuN/topology/{physical_package_id,core_cpus_list}, cpuN/cache/index2 (per-core L2)
and index3 (L3 shared by a group of cores) with level, type, shared_cpu_list and id,
node/nodeM/{cpulist,distance}, node/{online,possible} and the cpuN/nodeM links. Optional files
discovery does without (die_id, cluster_id, L1 caches, PCIe roots) are left out, which keeps the
1024-CPU tree at about 11,000 small files.

Numbering is Linux-like: the first thread of every core comes first (0 .. cores-1 across all
sockets), then the second threads (+cores), and so on. So 8 sockets x 64 cores x SMT2 gives
first threads 0-511 and siblings 512-1023; socket s holds cores s*64 .. s*64+63.

    write_tree(root, sockets=8, cores_per_socket=64, threads=2, l3_per_socket=8)

writes under ROOT/sys and returns a dict describing the machine (for tests' checks):
{"cpus", "sockets": [set], "numa": [set], "l3": [set], "siblings": {cpu: set}}.

Run as a script: synthetic_sysfs.py ROOT [SOCKETS CORES THREADS L3 [NUMA]] writes one tree.
"""
import os
import sys


def _list(cpus):
    """Canonical cpulist ("0-3,8") of an iterable of ints."""
    out, run = [], None
    for c in sorted(cpus):
        if run and c == run[1] + 1:
            run[1] = c
        else:
            if run:
                out.append(run)
            run = [c, c]
    if run:
        out.append(run)
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in out)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def write_tree(root, sockets, cores_per_socket, threads, l3_per_socket, numa_per_socket=1):
    if cores_per_socket % l3_per_socket or cores_per_socket % numa_per_socket:
        raise ValueError("cores_per_socket must be a multiple of l3_per_socket and numa_per_socket")
    total_cores = sockets * cores_per_socket
    ncpus = total_cores * threads
    cores_per_l3 = cores_per_socket // l3_per_socket
    cores_per_numa = cores_per_socket // numa_per_socket
    nnodes = sockets * numa_per_socket

    def core_threads(core):
        return [core + t * total_cores for t in range(threads)]

    def group(size):  # [set of CPUs] per consecutive run of `size` cores
        return [set(c for core in range(g * size, (g + 1) * size) for c in core_threads(core))
                for g in range(total_cores // size)]

    socket_sets, numa_sets, l3_sets = group(cores_per_socket), group(cores_per_numa), group(cores_per_l3)
    cpu_dir = os.path.join(root, "sys/devices/system/cpu")
    node_dir = os.path.join(root, "sys/devices/system/node")
    everything = "0-%d" % (ncpus - 1)
    for name, text in (("online", everything), ("present", everything), ("possible", everything),
                       ("offline", ""), ("isolated", ""), ("smt/control", "on" if threads > 1 else "notsupported")):
        _write(os.path.join(cpu_dir, name), text)

    for core in range(total_cores):
        siblings = _list(core_threads(core))
        socket = core // cores_per_socket
        node = core // cores_per_numa
        l3 = core // cores_per_l3
        for cpu in core_threads(core):
            d = os.path.join(cpu_dir, "cpu%d" % cpu)
            for name, text in (("physical_package_id", str(socket)), ("core_cpus_list", siblings)):
                _write(os.path.join(d, "topology", name), text)
            # Only the levels discovery uses (2 and 3), numbered as the kernel would with L1d, L1i.
            caches = [(2, "Unified", siblings, core), (3, "Unified", _list(l3_sets[l3]), l3)]
            for i, (level, kind, shared, cid) in enumerate(caches, start=2):
                idx = os.path.join(d, "cache", "index%d" % i)
                for name, text in (("level", str(level)), ("type", kind), ("shared_cpu_list", shared),
                                   ("id", str(cid))):
                    _write(os.path.join(idx, name), text)
            os.symlink("../../node/node%d" % node, os.path.join(d, "node%d" % node))

    for node in range(nnodes):
        d = os.path.join(node_dir, "node%d" % node)
        _write(os.path.join(d, "cpulist"), _list(numa_sets[node]))
        same_socket = lambda m: m // numa_per_socket == node // numa_per_socket  # noqa: E731
        _write(os.path.join(d, "distance"),
               " ".join("10" if m == node else ("12" if same_socket(m) else "21") for m in range(nnodes)))
    _write(os.path.join(node_dir, "online"), "0-%d" % (nnodes - 1))
    _write(os.path.join(node_dir, "possible"), "0-%d" % (nnodes - 1))

    siblings = {c: set(core_threads(c % total_cores)) for c in range(ncpus)}
    return {"cpus": ncpus, "sockets": socket_sets, "numa": numa_sets, "l3": l3_sets, "siblings": siblings}


if __name__ == "__main__":
    if len(sys.argv) not in (2, 6, 7):
        sys.exit("usage: synthetic_sysfs.py ROOT [SOCKETS CORES THREADS L3 [NUMA]]")
    shape = [int(a) for a in sys.argv[2:]] or [8, 64, 2, 8]
    info = write_tree(sys.argv[1], *shape)
    print("wrote %d CPUs under %s" % (info["cpus"], sys.argv[1]))
