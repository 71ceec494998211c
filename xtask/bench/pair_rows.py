"""Side-by-side rows of issue 26 through two `codemode session` binaries, alternating
(docs/benchmarks.md, "Warm VMs": how the before/after tables of that round were made).

    python3 xtask/bench/pair_rows.py BIN_A BIN_B ROUNDS

prints the median per row for A and B and the ratio B/A. Rows: `return 1+2`; 10 sequential tool
calls; a `yield_control` exec and its `wait`; and throughput (two sessions of one binary doing
100 sequential trivial execs each at the same time, every tenth round). Each round takes one
sample of each row on each binary, in an order that alternates; the first 20 rounds are
warm-up. Both binaries share one scratch HOME (their module caches are keyed apart), so build
them first and let each compile its guest module once before timing.
"""
import atexit, json, shutil, subprocess, sys, time, statistics, os, threading, tempfile

HOME = tempfile.mkdtemp(prefix="codemode-pair-")
atexit.register(shutil.rmtree, HOME, True)
TOOLS = os.path.join(HOME, "tools-1.json")

def write_tools():
    tools = [{"name": "tool_0", "label": "Tool 0", "description": "No-op.",
              "parameters": {"type": "object", "properties": {"i": {"type": "number"}}},
              "result": {"ok": True}}]
    with open(TOOLS, "w") as f:
        json.dump(tools, f)

def spawn(binary):
    env = {"HOME": HOME, "PATH": "/usr/local/bin:/usr/bin:/bin"}
    return subprocess.Popen([binary, "session", "--tools", TOOLS], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env, text=True, bufsize=1)

class S:
    def __init__(self, binary):
        self.p = spawn(binary); self.rid = 0
    def request(self, tool, args):
        self.rid += 1
        rid = self.rid
        self.p.stdin.write(json.dumps({"tool": tool, "args": args, "id": rid}) + "\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise SystemExit("session ended")
            msg = json.loads(line)
            if msg.get("id") == rid:
                r = msg.get("result", msg)
                if isinstance(r, dict) and "structuredContent" in r:
                    r = r["structuredContent"]
                return r
    def close(self):
        self.p.stdin.close(); self.p.wait()

def completed(s, code, value):
    """Milliseconds from sending an exec of `code` to its answer, checked `completed` with
    `value`."""
    t0 = time.perf_counter()
    r = s.request("exec", {"code": code})
    ms = (time.perf_counter() - t0) * 1e3
    assert r.get("status") == "completed" and r.get("value") == value, r
    return ms

def trivial(s):
    return completed(s, "return 1+2", 3)

def calls(s):
    return completed(s, "let s = 0; for (let i = 0; i < 10; i++) { await tools.tool_0({i}); s++ } return s", 10)

def park(s):
    t0 = time.perf_counter()
    r = s.request("exec", {"code": "text('a'); await yield_control(); return 1+2"})
    assert r.get("status") == "waiting", r
    r = s.request("wait", {"runId": r["runId"]})
    ms = (time.perf_counter() - t0) * 1e3
    assert r.get("status") == "completed" and r.get("value") == 3, r
    return ms

def throughput(pair):
    # two sessions of one binary, 100 sequential trivial execs each, at once: execs/s
    def work(s):
        for _ in range(100):
            trivial(s)
    t0 = time.perf_counter()
    ts = [threading.Thread(target=work, args=(s,)) for s in pair]
    for t in ts: t.start()
    for t in ts: t.join()
    return 200 / (time.perf_counter() - t0)

def main():
    a, b, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    os.makedirs(HOME, exist_ok=True)
    write_tools()
    bins = [a, b]
    ss = [S(a), S(b)]
    tp = [[S(a), S(a)], [S(b), S(b)]]
    rows = {"trivial": trivial, "10 calls": calls, "yield+wait": park}
    samples = {k: [[], []] for k in list(rows) + ["execs/s"]}
    warm = 20
    for i in range(rounds + warm):
        order = [0, 1] if i % 2 == 0 else [1, 0]
        for name, f in rows.items():
            for k in order:
                ms = f(ss[k])
                if i >= warm:
                    samples[name][k].append(ms)
        if i % 10 == 0:
            for k in order:
                v = throughput(tp[k])
                if i >= warm:
                    samples["execs/s"][k].append(v)
    for s in ss: s.close()
    for pair in tp:
        for s in pair: s.close()
    print(f"A = {a}\nB = {b}\nrounds {rounds}, load {os.getloadavg()[0]:.2f}")
    for name, (sa, sb) in samples.items():
        ma, mb = statistics.median(sa), statistics.median(sb)
        unit = "/s" if name == "execs/s" else " ms"
        print(f"{name:12s} A {ma:9.3f}{unit}  B {mb:9.3f}{unit}  B/A {mb/ma:.3f}  (n={len(sa)})")

main()
