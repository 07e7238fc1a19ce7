"""Measures the web-server prototypes (issue 43): start each stripped release binary, then from /proc:
idle RssAnon / Pss / threads, idle wake-ups and CPU over 10 s, the same with one SSE client for 30 s, and RssAnon with a
stalled client (connects to /events with a tiny receive buffer and never reads, while every event is padded to
EVENT_PAD bytes so the socket buffers fill in seconds). Every figure twice (two fresh processes). Checks first that
each serves GET / (~20 KB), GET /events, POST /api/echo (echo; 413 over 64 KiB; 404 elsewhere).

Usage: python3 bench/web-candidates/measure.py NAME=BINARY [NAME=BINARY ...]   (measure.sh builds and calls it)
       python3 bench/web-candidates/measure.py --stall SECONDS NAME=BINARY ...   (RssAnon every 10 s, one stalled client)
       python3 bench/web-candidates/measure.py --threads SECONDS NAME=BINARY ... (idle switches per thread)
"""
import http.client
import os
import socket
import subprocess
import sys
import threading
import time

PAD = 256 * 1024  # bytes per event in the stalled-client run: 30 s of it is 7.5 MB, more than the socket buffers hold


def status(pid):
    out = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def kib(pid, field, rollup=False):
    src = f"/proc/{pid}/smaps_rollup" if rollup else f"/proc/{pid}/status"
    for line in open(src):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def switches(pid):
    """Context switches of all the process's threads: each wake-up of a sleeping thread is one voluntary switch."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            st = open(f"/proc/{pid}/task/{tid}/status").read()
        except FileNotFoundError:
            continue
        for line in st.splitlines():
            if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                total += int(line.split()[1])
    return total


def cpu_ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])  # utime + stime


def window(pid, seconds):
    s0, c0, t0 = switches(pid), cpu_ticks(pid), time.monotonic()
    time.sleep(seconds)
    s1, c1, t1 = switches(pid), cpu_ticks(pid), time.monotonic()
    hz = os.sysconf("SC_CLK_TCK")
    return (s1 - s0) / (t1 - t0), 100.0 * (c1 - c0) / hz / (t1 - t0)


def wait_port(port):
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request(method, path, body=body, headers={"Content-Type": "application/json"} if body is not None else {})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def check(port):
    s, page = request(port, "GET", "/")
    assert s == 200 and 19_000 < len(page) < 22_000, (s, len(page))
    s, echo = request(port, "POST", "/api/echo", b'{"hello":1}')
    assert s == 200 and echo == b'{"hello":1}', (s, echo)
    s, _ = request(port, "POST", "/api/echo", b"x" * (64 * 1024))
    assert s == 200, s
    try:
        s, _ = request(port, "POST", "/api/echo", b"x" * (64 * 1024 + 1))
    except (ConnectionError, http.client.HTTPException) as e:  # a server may answer 413 and close before reading it
        s = f"closed ({type(e).__name__})"
    assert s == 413, s
    s, _ = request(port, "GET", "/nope")
    assert s == 404, s
    events = follow(port, 2.5)
    assert events >= 1, events
    return "ok"


def follow(port, seconds, stop=None):
    """An SSE client that reads everything; returns the number of events seen."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/events", headers={"Accept": "text/event-stream"})
    r = c.getresponse()
    assert r.status == 200 and r.getheader("Content-Type", "").startswith("text/event-stream"), r.status
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end and not (stop and stop.is_set()):
        line = r.fp.readline()
        if line.startswith(b"data:"):
            n += 1
    c.close()
    return n


def stalled(port):
    """Connects to /events with the smallest receive buffer and never reads."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n")
    return s


def run(binary, port, pad=0, serves=True):
    env = dict(os.environ, PORT=str(port), EVENT_PAD=str(pad))
    p = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if serves:
        try:
            wait_port(port)
        except RuntimeError:
            p.kill(); p.wait()
            raise
    else:
        time.sleep(0.5)
    return p


def idle_figures(pid):
    idle = dict(anon=kib(pid, "RssAnon"), rss=kib(pid, "VmRSS"), pss=kib(pid, "Pss", rollup=True),
                threads=len(os.listdir(f"/proc/{pid}/task")))
    idle["wakeups"], idle["cpu"] = window(pid, 10)
    return idle


def measure_baseline(binary, port):
    """The floor: no server, so only the idle figures."""
    rows = []
    for _ in (1, 2):
        p = run(binary, port, serves=False)
        try:
            time.sleep(3)
            rows.append(dict(idle=idle_figures(p.pid), one=None, stall=None))
        finally:
            p.kill(); p.wait()
    return rows


def measure(name, binary, port):
    rows = []
    for attempt in (1, 2):
        p = run(binary, port)
        try:
            if attempt == 1:
                print(f"{name}: functional check {check(port)}", file=sys.stderr)
                p.kill(); p.wait(); p = run(binary, port)  # the idle figures from a process no client has touched
            time.sleep(3)
            pid = p.pid
            idle = idle_figures(pid)
            stop = threading.Event()
            seen = []
            t = threading.Thread(target=lambda: seen.append(follow(port, 40, stop)))
            t.start()
            time.sleep(1)
            busy_wakeups, busy_cpu = window(pid, 29)
            one = dict(anon=kib(pid, "RssAnon"), pss=kib(pid, "Pss", rollup=True), wakeups=busy_wakeups, cpu=busy_cpu,
                       threads=len(os.listdir(f"/proc/{pid}/task")))
            stop.set(); t.join()
            one["events"] = seen[0]
        finally:
            p.kill(); p.wait()
        # The stalled client: a fresh process with 256 KiB events.
        p = run(binary, port, PAD)
        try:
            time.sleep(2)
            before = kib(p.pid, "RssAnon")
            s = stalled(port)
            peaks = []
            for _ in range(30):
                time.sleep(1)
                peaks.append(kib(p.pid, "RssAnon"))
            # And a reader gets through meanwhile: the server still serves.
            status_page, _ = request(port, "GET", "/")
            s.close()
            stall = dict(before=before, after10=peaks[9], after30=peaks[-1], peak=max(peaks), served=status_page)
        finally:
            p.kill(); p.wait()
        rows.append(dict(idle=idle, one=one, stall=stall))
        print(f"{name} run {attempt}: {rows[-1]}", file=sys.stderr)
    return rows


def long_stall(name, binary, port, seconds):
    """RssAnon every 10 s while one client stalls on /events for `seconds` (256 KiB events)."""
    p = run(binary, port, PAD)
    try:
        time.sleep(2)
        trace = [kib(p.pid, "RssAnon")]
        s = stalled(port)
        for _ in range(seconds // 10):
            time.sleep(10)
            trace.append(kib(p.pid, "RssAnon"))
        s.close()
    finally:
        p.kill(); p.wait()
    print(f"| {name} | " + " → ".join(str(k) for k in trace) + " KiB |")


def per_thread(binary, port, seconds=10):
    """Which threads wake at idle: voluntary+involuntary switches per thread (by name) over `seconds`."""
    p = run(binary, port)
    try:
        time.sleep(3)
        def snap():
            out = {}
            for tid in os.listdir(f"/proc/{p.pid}/task"):
                comm = open(f"/proc/{p.pid}/task/{tid}/comm").read().strip()
                st = open(f"/proc/{p.pid}/task/{tid}/status").read().splitlines()
                out[f"{tid} {comm}"] = sum(int(l.split()[1]) for l in st if l.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")))
            return out
        a = snap(); time.sleep(seconds); b = snap()
        print(", ".join(f"{k}: {(b[k] - a.get(k, 0)) / seconds:.1f}/s" for k in sorted(b)))
    finally:
        p.kill(); p.wait()


def main():
    if sys.argv[1] in ("--stall", "--threads"):
        mode = sys.argv[1]
        seconds = int(sys.argv[2])
        for i, arg in enumerate(sys.argv[3:]):
            name, _, binary = arg.partition("=")
            if mode == "--stall":
                long_stall(name, binary, 8790 + i, seconds)
            else:
                print(f"{name}: ", end="", flush=True)
                per_thread(binary, 8790 + i, seconds)
        return
    results = {}
    for i, arg in enumerate(sys.argv[1:]):
        name, _, binary = arg.partition("=")
        results[name] = measure_baseline(binary, 8790 + i) \
            if name == "baseline" else measure(name, binary, 8790 + i)
    print("| candidate | run | idle RssAnon | idle VmRSS | idle Pss | threads | idle wake-ups/s | idle CPU | 1 SSE client: RssAnon / wake-ups/s / CPU / events in 30 s | stalled client (256 KiB events): RssAnon before → 10 s → 30 s (peak) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, rows in results.items():
        for n, r in enumerate(rows, 1):
            i, o, s = r["idle"], r["one"], r["stall"]
            if o is None:
                print(f"| {name} | {n} | {i['anon']} KiB | {i['rss']} KiB | {i['pss']} KiB | {i['threads']} | {i['wakeups']:.2f} | {i['cpu']:.2f} % | (no server) | |")
                continue
            print(f"| {name} | {n} | {i['anon']} KiB | {i['rss']} KiB | {i['pss']} KiB | {i['threads']} | {i['wakeups']:.2f} | {i['cpu']:.2f} % "
                  f"| {o['anon']} KiB / {o['wakeups']:.1f} / {o['cpu']:.2f} % / {o['events']} "
                  f"| {s['before']} → {s['after10']} → {s['after30']} ({s['peak']}) KiB, GET / meanwhile {s['served']} |")


if __name__ == "__main__":
    main()
