"""p50/p99 of a trivial exec with 1, 4 and 16 concurrent `codemode session` processes, two
binaries alternating (docs/benchmarks.md, "Under concurrency").

    python3 xtask/bench/concurrency.py BIN_A BIN_B ROUNDS

Each session sends `return 1+2` and waits for its answer, over and over, from a thread of its
own; per round every session of one binary does M execs at the same time (M = 200, 100, 40 for
1, 4, 16 sessions), the binaries alternating round by round after a warm-up burst. Prints p50,
p99 and the median execs/s of the rounds. Python's threads share one interpreter lock, so at 16
sessions the harness itself is part of what is measured.
"""
import atexit, json, shutil, subprocess, sys, time, statistics, threading, os, tempfile
HOME = tempfile.mkdtemp(prefix="codemode-conc-")
atexit.register(shutil.rmtree, HOME, True)
TOOLS = os.path.join(HOME, "tools-1.json")
with open(TOOLS, "w") as f:
    json.dump([{"name": "tool_0", "label": "Tool 0", "description": "No-op.",
                "parameters": {"type": "object", "properties": {"i": {"type": "number"}}},
                "result": {"ok": True}}], f)
def spawn(b):
    return subprocess.Popen([b, "session", "--tools", TOOLS], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            env={"HOME": HOME, "PATH": "/usr/bin:/bin"}, text=True, bufsize=1)
def work(p, m, out):
    for i in range(m):
        t0 = time.perf_counter()
        p.stdin.write(json.dumps({"tool": "exec", "args": {"code": "return 1+2"}, "id": i}) + "\n"); p.stdin.flush()
        r = json.loads(p.stdout.readline())
        out.append((time.perf_counter() - t0) * 1e3)
        r = r.get("result", r); r = r.get("structuredContent", r)
        assert r.get("value") == 3, r
def burst(ps, m):
    outs = [[] for _ in ps]
    ts = [threading.Thread(target=work, args=(p, m, o)) for p, o in zip(ps, outs)]
    t0 = time.perf_counter()
    for t in ts: t.start()
    for t in ts: t.join()
    wall = time.perf_counter() - t0
    return [x for o in outs for x in o], len(ps) * m / wall
def pct(xs, q):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(q * len(xs)))]
a, b, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
for n, m in [(1, 200), (4, 100), (16, 40)]:
    ps = {k: [spawn(x) for _ in range(n)] for k, x in (("A", a), ("B", b))}
    for k in ps: burst(ps[k], 5)  # warm-up
    lat = {"A": [], "B": []}; rate = {"A": [], "B": []}
    for r in range(rounds):
        for k in (("A", "B") if r % 2 == 0 else ("B", "A")):
            l, s = burst(ps[k], m); lat[k] += l; rate[k].append(s)
    for k in ps:
        for p in ps[k]: p.stdin.close(); p.wait()
    for k in ("A", "B"):
        print(f"{n:2d} sessions {k}: p50 {pct(lat[k], .5):.3f} ms  p99 {pct(lat[k], .99):.3f} ms  {statistics.median(rate[k]):.0f} execs/s  (n={len(lat[k])})")
print(f"load {os.getloadavg()[0]:.2f}")
