#!/usr/bin/env python3
"""A soak of one root under many clients at once: `tmws serve` with HTTP clients, and
`tmws mcp` processes (one per MCP client, as agents start them), all reading and writing
memories for a while. It reports the latency of every kind of request (p50, p99, max),
the largest resident memory of the `tmws serve` process, and whether every memory whose
add was answered is in its log afterwards.

    cargo build --release
    cargo run --release --example gen_root -- /tmp/soak-root 10000
    python3 benches/soak.py target/release/tmws /tmp/soak-root --secs 300 --mcp 50 --http 200

Writes go to their own namespace (`soak`, sized so that nothing is evicted), so that the
check of "nothing lost" reads one log. Only the standard library is used.
"""

import argparse
import http.client
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import threading
import time

WORDS = "pool cache index search memory numbat deploy token registry watch merge branch commit lesson plan".split()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(len(values) * p))]


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.latency = {}
        self.errors = {}
        self.acked = []

    def record(self, kind, seconds, ok=True, memory_id=None):
        with self.lock:
            self.latency.setdefault(kind, []).append(seconds)
            if not ok:
                self.errors[kind] = self.errors.get(kind, 0) + 1
            if memory_id:
                self.acked.append(memory_id)


def http_client(n, port, token, deadline, write_ratio, stats):
    rng = random.Random(n)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json"}
    k = 0
    while time.monotonic() < deadline:
        k += 1
        try:
            t = time.monotonic()
            if rng.random() < write_ratio:
                body = json.dumps({"content": f"soak http {n} note {k} about {rng.choice(WORDS)}", "namespace": "soak"})
                conn.request("POST", "/memory", body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
                ok = r.status == 200
                mid = json.loads(data).get("id") if ok else None
                stats.record("http memory_add", time.monotonic() - t, ok, mid)
            else:
                q = "+".join(rng.sample(WORDS, 2))
                path = rng.choice([f"/workspace/search?query={q}", f"/memory/search?query={q}"])
                conn.request("GET", path, headers=headers)
                r = conn.getresponse()
                r.read()
                stats.record("http " + path.split("?")[0], time.monotonic() - t, r.status == 200)
        except (OSError, http.client.HTTPException):
            stats.record("http connection", 0.0, False)
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)


def mcp_client(n, exe, root, deadline, write_ratio, stats, env):
    rng = random.Random(1000 + n)
    p = subprocess.Popen(
        [exe, "mcp"], cwd=root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )

    def call(msg):
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        while True:
            line = p.stdout.readline()
            if not line:
                raise OSError("tmws mcp closed its stdout")
            reply = json.loads(line)
            if reply.get("id") == msg.get("id"):
                return reply

    try:
        call({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": f"soak-{n}", "version": "1"}}})
        p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        p.stdin.flush()
        k = 0
        while time.monotonic() < deadline:
            k += 1
            if rng.random() < write_ratio:
                name, args = "memory_add", {"content": f"soak mcp {n} note {k} about {rng.choice(WORDS)}",
                                            "namespace": "soak", "format": "json"}
            else:
                name = rng.choice(["workspace_search", "memory_search", "recall"])
                key = "task" if name == "recall" else "query"
                args = {key: " ".join(rng.sample(WORDS, 2))}
            t = time.monotonic()
            reply = call({"jsonrpc": "2.0", "id": k, "method": "tools/call", "params": {"name": name, "arguments": args}})
            result = reply.get("result", {})
            ok = "error" not in reply and not result.get("isError")
            mid = None
            if ok and name == "memory_add":
                text = result["content"][0]["text"]
                mid = json.loads(text).get("id")
            stats.record("mcp " + name, time.monotonic() - t, ok, mid)
    except (OSError, ValueError, KeyError):
        stats.record("mcp session", 0.0, False)
    finally:
        p.stdin.close()
        p.wait(timeout=60)


def rss_of(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def live_ids(log):
    added, deleted = set(), set()
    with open(log, "rb") as f:
        for line in f:
            try:
                op = json.loads(line)
            except ValueError:
                continue
            if op.get("op") == "add":
                added.add(op["id"])
            elif op.get("op") == "delete":
                deleted.add(op["id"])
    return added - deleted


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tmws")
    ap.add_argument("root")
    ap.add_argument("--secs", type=float, default=300)
    ap.add_argument("--mcp", type=int, default=50)
    ap.add_argument("--http", type=int, default=200)
    ap.add_argument("--writes", type=float, default=0.15)
    a = ap.parse_args()
    exe, root = os.path.abspath(a.tmws), os.path.abspath(a.root)
    config = os.path.join(root, ".tmws/config.toml")
    os.makedirs(os.path.dirname(config), exist_ok=True)
    existing = open(config).read() if os.path.exists(config) else ""
    if "[namespaces.soak]" not in existing:
        with open(config, "a") as f:
            f.write("\n[namespaces.soak]\nttl_days = 30\nmax_entries = 1000000\n")
    log = os.path.join(root, ".tmws/memory/soak.jsonl")
    if os.path.exists(log):
        os.remove(log)
    env = dict(os.environ, TMWS_CONFIG_HOME=os.path.join(root, ".soak-user-config"))
    env.pop("TMWS_LOG", None)
    subprocess.run([exe, "index"], cwd=root, env=env, check=True, capture_output=True)
    port = free_port()
    serve = subprocess.Popen([exe, "serve", "--addr", f"127.0.0.1:{port}"], cwd=root, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if not serve.stdout.readline().startswith(b"listening"):
        sys.exit("tmws serve did not start")
    with open(os.path.join(root, ".tmws/cache/token")) as f:
        token = f.read().strip()
    stats = Stats()
    deadline = time.monotonic() + a.secs
    threads = [threading.Thread(target=http_client, args=(n, port, token, deadline, a.writes, stats))
               for n in range(a.http)]
    threads += [threading.Thread(target=mcp_client, args=(n, exe, root, deadline, a.writes, stats, env))
                for n in range(a.mcp)]
    for t in threads:
        t.start()
    peak = 0
    while any(t.is_alive() for t in threads):
        peak = max(peak, rss_of(serve.pid))
        time.sleep(1)
    serve.terminate()
    serve.wait(timeout=60)
    live = live_ids(log)
    lost = [i for i in stats.acked if i not in live]
    print(f"{a.mcp} MCP + {a.http} HTTP clients, {a.secs:.0f} s, {a.writes:.0%} writes")
    for kind in sorted(stats.latency):
        v = stats.latency[kind]
        print(f"  {kind:28} n={len(v):7}  p50={percentile(v, .5) * 1000:8.1f} ms  "
              f"p99={percentile(v, .99) * 1000:8.1f} ms  max={max(v) * 1000:8.1f} ms  errors={stats.errors.get(kind, 0)}")
    print(f"  serve peak RSS: {peak / 1e6:.1f} MB")
    print(f"  memories acknowledged: {len(stats.acked)}, missing from the log: {len(lost)}")
    shutil.rmtree(os.path.join(root, ".soak-user-config"), ignore_errors=True)
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
