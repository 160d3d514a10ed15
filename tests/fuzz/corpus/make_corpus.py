#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz (one directory per fuzz target, a few small inputs
each), from the same fixtures the unit tests use. Run it after changing a target's input
format; the outputs are checked in, so neither CI nor make fuzz runs it.

    python3 tests/fuzz/corpus/make_corpus.py

Protobuf and ttrpc/mux framing are written by hand below (field numbers from proto/nri.proto
and proto/ttrpc.proto) so the script needs nothing beyond python3."""
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

CLAIM_A = "0b1e4a52-7c1d-4d0e-9a4b-1f1e2d3c4b5a"  # tests/fuzz/policy_fixture.h: CPUs 2-3
CLAIM_B = "8f2c6d1e-3b4a-4c5d-8e6f-7a8b9c0d1e2f"  # CPUs 8-11
CLAIM_C = "c0ffee00-1111-4222-8333-444455556666"  # reserved, not prepared


# --- protobuf wire format (just what the seeds need)
def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field_bytes(num, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(num << 3 | 2) + varint(len(data)) + data


def field_int(num, value):
    return varint(num << 3) + varint(value)


def pb_map(num, d):
    return b"".join(field_bytes(num, field_bytes(1, k) + field_bytes(2, v)) for k, v in d.items())


def pod(pid, name, uid, ns="default"):
    return field_bytes(1, pid) + field_bytes(2, name) + field_bytes(3, uid) + field_bytes(4, ns)


def linux_resources(cpus="", mems=""):
    cpu = b""
    if cpus:
        cpu += field_bytes(6, cpus)
    if mems:
        cpu += field_bytes(7, mems)
    return field_bytes(2, cpu)


def container(cid, sandbox, name, env=(), state=3, cpus=""):
    out = field_bytes(1, cid) + field_bytes(2, sandbox) + field_bytes(3, name) + field_int(4, state)
    for e in env:
        out += field_bytes(8, e)
    if cpus:
        out += field_bytes(11, field_bytes(3, linux_resources(cpus)))
    return out


def ttrpc_request(service, method, payload, timeout=0):
    out = field_bytes(1, service) + field_bytes(2, method) + field_bytes(3, payload)
    if timeout:
        out += field_int(4, timeout)
    return out


def ttrpc_response(payload=b"", code=0, message=""):
    if code:
        return field_bytes(1, field_int(1, code) + field_bytes(2, message))
    return field_bytes(2, payload)


def ttrpc_frame(stream, mtype, data, flags=0):
    return struct.pack(">IIBB", len(data), stream, mtype, flags) + data


def mux_frame(conn, payload):
    return struct.pack(">II", conn, len(payload)) + payload


def write(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def main():
    for entry in os.listdir(HERE):
        if os.path.isdir(os.path.join(HERE, entry)):
            shutil.rmtree(os.path.join(HERE, entry))

    # sysfs_parsers: the seeds of sysfs_parsers_fuzz_test.cc.
    for i, s in enumerate(["0-3,8\n", "0\n", "00000000,0000ff01\n", "10 21 21 10\n", "on\n",
                           "0-8191\n", "0,2,4,6,8,10,12,14,16,18,20\n", "4-20\n\n"]):
        write("sysfs_parsers", "seed-%d" % i, s)

    # claim_env: a container's env, one entry per line (claim_env_test.cc, policy fixture).
    write("claim_env", "prepared", "PATH=/usr/bin\nDRA_CPUSET_%s=2-3\n" % CLAIM_A)
    write("claim_env", "two-claims", "DRA_CPUSET_%s=2,3\nDRA_CPUSET_%s=8-11" % (CLAIM_A, CLAIM_B))
    write("claim_env", "wrong-cpus", "DRA_CPUSET_%s=2-4" % CLAIM_A)
    write("claim_env", "reserved-only", "DRA_CPUSET_%s=4-5" % CLAIM_C)
    write("claim_env", "bad-uid", "DRA_CPUSET_-bad-=1\nHOME=/root")
    write("claim_env", "no-value", "DRA_CPUSET_%s" % CLAIM_A)
    write("claim_env", "shared", "HOME=/root\nLANG=C.UTF-8")

    # ttrpc: a Configure call, an unknown method, a response, a data frame, a large header.
    configure = ttrpc_request("nri.pkg.api.v1alpha1.Plugin", "Configure",
                              field_bytes(2, "containerd") + field_bytes(3, "v2.1.0"), 2000000000)
    echo = ttrpc_request("fuzz.Service", "Echo", b"hello")
    write("ttrpc_frame", "configure", b"\x80" + ttrpc_frame(1, 1, configure))
    write("ttrpc_frame", "echo-twice", b"\x20" + ttrpc_frame(1, 1, echo) + ttrpc_frame(3, 1, echo))
    write("ttrpc_frame", "even-stream", b"\x00" + ttrpc_frame(2, 1, echo))
    write("ttrpc_frame", "response-and-data",
          b"\xff" + ttrpc_frame(1, 2, ttrpc_response(b"ok")) + ttrpc_frame(5, 3, b"data"))
    write("ttrpc_frame", "oversized", b"\x40" + struct.pack(">IIBB", (4 << 20) + 1, 7, 1, 0) + b"x" * 32)
    write("ttrpc_envelope", "request", b"\x00" + configure)
    write("ttrpc_envelope", "request-metadata",
          b"\x00" + echo + field_bytes(5, field_bytes(1, "k") + field_bytes(2, "v")))
    write("ttrpc_envelope", "response-ok", b"\x01" + ttrpc_response(b"\x08\x01"))
    write("ttrpc_envelope", "response-error", b"\x01" + ttrpc_response(code=5, message="not found"))
    write("ttrpc_envelope", "response-bad-code", b"\x01" + ttrpc_response(code=99, message="?"))

    # mux: the trunk carrying ttrpc frames on connections 1 and 2.
    big = ttrpc_frame(1, 1, ttrpc_request("s", "m", b"p" * 5000))
    write("mux_frame", "two-conns", b"\x80" + mux_frame(1, ttrpc_frame(1, 1, configure)) +
          mux_frame(2, ttrpc_frame(1, 2, ttrpc_response(b""))))
    write("mux_frame", "go-split", b"\x10" + mux_frame(1, big[:4096]) + mux_frame(1, big[4096:]))
    write("mux_frame", "unopened-conn", b"\xf0" + mux_frame(7, b"x") + mux_frame(0, b""))
    write("mux_frame", "oversized", b"\x00" + struct.pack(">II", 1, (4 << 20) + 11))

    # nri_messages: CreateContainer (selector 0), UpdateContainer (1), Synchronize (2), as the
    # runtime simulator's scenarios send them.
    p = pod("sandbox-1", "pod-a", "4d2a1c3b-0000-4000-8000-00000000000a")
    exclusive = container("ctr-1", "sandbox-1", "app", ["PATH=/bin", "DRA_CPUSET_%s=2-3" % CLAIM_A],
                          state=1)
    shared = container("ctr-2", "sandbox-1", "sidecar", ["PATH=/bin"], state=1)
    wrong = container("ctr-3", "sandbox-1", "bad", ["DRA_CPUSET_%s=0-15" % CLAIM_B], state=1)
    write("nri_messages", "create-exclusive", b"\x00" + field_bytes(1, p) + field_bytes(2, exclusive))
    write("nri_messages", "create-shared", b"\x00" + field_bytes(1, p) + field_bytes(2, shared))
    write("nri_messages", "create-wrong-cpus", b"\x00" + field_bytes(1, p) + field_bytes(2, wrong))
    write("nri_messages", "update", b"\x01" + field_bytes(1, p) + field_bytes(2, exclusive) +
          field_bytes(3, linux_resources("0-15", "0")))
    running = [container("ctr-%d" % i, "sandbox-1", "c%d" % i,
                         ["DRA_CPUSET_%s=8-11" % CLAIM_B] if i == 0 else [], 3,
                         "8-11" if i == 0 else "0-15") for i in range(3)]
    write("nri_messages", "synchronize", b"\x02" + field_bytes(1, p) +
          b"".join(field_bytes(2, c) for c in running) + field_int(3, 0))

    # cdi_spec: what RenderCdiSpec writes, and the Go driver's shape (cdi_spec_test.cc).
    spec = ('{\n  "cdiVersion": "0.5.0",\n  "kind": "dra.k8s.io/cpu",\n  "devices": [\n    {\n'
            '      "name": "claim-%s",\n      "containerEdits": {\n        "env": [\n'
            '          "DRA_CPUSET_%s=2-3"\n        ]\n      }\n    }\n  ]\n}\n') % (CLAIM_A, CLAIM_A)
    write("cdi_spec", "ours", spec)
    write("cdi_spec", "go-driver", '{"cdiVersion":"0.8.0","kind":"dra.k8s.io/cpu","devices":[{"name":'
          '"claim-%s","containerEdits":{"env":["DRA_CPUSET_%s=8-11","OTHER=1"]}}]}' % (CLAIM_B, CLAIM_B))
    write("cdi_spec", "foreign", '{"cdiVersion":"0.6.0","kind":"vendor.com/gpu","devices":[{"name":"gpu0",'
          '"containerEdits":{"deviceNodes":[{"path":"/dev/gpu0"}]}}]}')

    # resource_claim: resource_claim_test.cc's kClaim and variations.
    claim = ('{"metadata": {"name": "c", "namespace": "ns", "uid": "%s"},'
             '"status": {"allocation": {"devices": {"results": ['
             '{"request": "big/fast", "driver": "dra.cpu", "pool": "node-a", "device": "cpudevnuma000",'
             '"shareID": "s1", "consumedCapacity": {"dra.cpu/cpu": "4"}},'
             '{"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu0"}],'
             '"config": [{"source": "FromClaim", "requests": ["big"], "opaque": {"driver": "dra.cpu",'
             '"parameters": {"apiVersion": "v1alpha1", "cpuConfig": {"cpuset": "2-5"},'
             '"policy": {"fullPCPUsOnly": true, "coreType": "any"}}}},'
             '{"source": "FromClass", "opaque": {"driver": "gpu.example.com", "parameters": {"x": 1}}}]'
             '}}}}') % CLAIM_A
    write("resource_claim", "allocated", claim)
    write("resource_claim", "unallocated", '{"metadata": {"name": "c", "uid": "u"}, "status": {}}')
    write("resource_claim", "individual", '{"metadata":{"name":"c","namespace":"ns","uid":"u2"},'
          '"status":{"allocation":{"devices":{"results":[{"request":"r","driver":"dra.cpu",'
          '"pool":"node-a","device":"cpudev003"}],"config":[{"source":"FromClass","opaque":'
          '{"driver":"dra.cpu","parameters":{"apiVersion":"v1alpha1","policy":'
          '{"alignMemory":true}}}}]}}}}')
    write("resource_claim", "quantity-millis", claim.replace('"4"', '"4000m"'))

    # driver_config: the chart's default config and driver_config_test.cc's cases.
    write("driver_config", "chart", "apiVersion: v1alpha1\ncpuDeviceMode: grouped\ngroupBy: numanode\n"
          "reservedCPUs: \"0-1\"\nstrictCPUReservation: true\nminSharedCPUs: 2\n"
          "sharedPoolUpdates: auto\nfullPCPUsOnly: false\ncoreType: performance\n")
    write("driver_config", "individual", "cpuDeviceMode: individual\nalignMemory: true\n"
          "hostnameOverride: node-a\nkubeconfig: /etc/kube/config\n")
    write("driver_config", "problems", "cpudevicemode: grouped\nbindAddress: :8080\n"
          "groupBy: [socket]\nminSharedCPUs: 0\ngroupBy: socket\n")
    write("driver_config", "empty", "")

    # kubeconfig: cluster_config_test.cc's Kubeconfig().
    def kubeconfig(cluster, user, extra=""):
        return ("apiVersion: v1\nkind: Config\ncurrent-context: ctx\n" + extra +
                "contexts:\n- name: ctx\n  context:\n    cluster: c1\n    user: u1\n"
                "clusters:\n- name: c1\n  cluster:\n" + cluster + "users:\n- name: u1\n  user:\n" + user)
    write("kubeconfig", "data", kubeconfig("    server: https://10.0.0.1:6443/\n"
                                           "    certificate-authority-data: Q0EtUEVN\n",
                                           "    client-certificate-data: Q0VSVA==\n"
                                           "    client-key-data: S0VZ\n"))
    write("kubeconfig", "files", kubeconfig("    server: https://api:6443\n"
                                            "    certificate-authority: ca.crt\n",
                                            "    client-certificate: client.crt\n"
                                            "    client-key: /etc/kube/client.key\n"))
    write("kubeconfig", "token-file", kubeconfig("    server: http://127.0.0.1:8001\n"
                                                 "    insecure-skip-tls-verify: true\n",
                                                 "    token: abc\n    tokenFile: token\n"))
    write("kubeconfig", "exec", kubeconfig("    server: https://api\n",
                                           "    exec:\n      command: aws\n"))

    # kube_list_watch: a slice list (selector bit 0 set) and watch streams (kube_client_test.cc).
    slice_obj = ('{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":'
                 '"node-a-dra.cpu-0","uid":"s-1","resourceVersion":"17"},"spec":{"driver":"dra.cpu",'
                 '"nodeName":"node-a","pool":{"name":"node-a","generation":3,"resourceSliceCount":1},'
                 '"devices":[{"name":"cpudevnuma000","attributes":{"dra.cpu/numaNode":{"int":0}},'
                 '"capacity":{"dra.cpu/cpu":{"value":"16"}}}]}}')
    write("kube_list_watch", "list", b"\x01" + ('{"kind":"ResourceSliceList","metadata":'
                                                '{"resourceVersion":"42"},"items":[%s]}' % slice_obj).encode())
    write("kube_list_watch", "list-empty", b"\x01" + b'{"kind":"ResourceSliceList","metadata":{},"items":null}')
    write("kube_list_watch", "watch", b"\x0a" + ('{"type":"ADDED","object":%s}\n{"type":"MODIFIED",'
                                                 '"object":%s}\n{"type":"BOOKMARK","object":{"metadata":'
                                                 '{"resourceVersion":"50"}}}\n{"type":"DELETED","object":%s}\n'
                                                 % (slice_obj, slice_obj, slice_obj)).encode())
    write("kube_list_watch", "watch-gone", b"\x02" + b'{"type":"ERROR","object":{"kind":"Status",'
          b'"apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)",'
          b'"reason":"Expired","code":410}}\n')

    # shm_segment: edit lists over the valid segment (selector bit 0 clear), checksums fixed
    # (bit 1) or not, and a raw header-sized file.
    write("shm_segment", "valid", b"\x00")
    write("shm_segment", "generation-odd", b"\x02" + bytes([0x11, 0x00, 1, 0x01]))
    write("shm_segment", "claim-count", b"\x02" + bytes([0x11, 0x40, 4, 0xff, 0, 0, 0]))
    write("shm_segment", "torn-entry", b"\x00" + bytes([0xa0, 0x00, 8]) + b"\xff" * 8)
    write("shm_segment", "raw-short", b"\x01" + struct.pack("<QII", 0x4d48535550434152, 1, 0))

    # http_request: what probes and curl send to /healthz, /readyz and /metrics.
    write("http_request", "healthz", b"\x80GET /healthz HTTP/1.1\r\nHost: 10.0.0.5:8080\r\n"
          b"User-Agent: kube-probe/1.33\r\nAccept: */*\r\nConnection: close\r\n\r\n")
    write("http_request", "pipelined", b"\x40GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n"
          b"HEAD /readyz HTTP/1.1\r\nHost: a\r\n\r\nGET /nope HTTP/1.0\r\n\r\n")
    write("http_request", "post", b"\x20POST /metrics HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nabcd")
    write("http_request", "chunked", b"\xa0GET /healthz HTTP/1.1\r\nHost: a\r\n"
          b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")


if __name__ == "__main__":
    main()
