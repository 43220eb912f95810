#!/usr/bin/env python3
"""clawback's benchmark driver: runs the real binaries (clawback, store-simulator) against a throwaway
PostgreSQL (PG* variables from throwaway-postgres.sh) and measures each run of `clawback run` as a child
process: wall time, CPU time (user + system, from wait4) and peak resident memory. Scenarios (issue #9):

  B1  per-transaction, unthrottled, simulator latency 20 ms +/- 5 ms: grants/s end to end, CPU per grant
  B2  memory at scale: peak RSS of `clawback run` at 10k and 100k grants (and 1M with --full)
  B3  Apple's limit: the simulator enforcing 50 requests/s: achieved requests/s, 429s received
  B4  notifications strategy, 1% refunded, Apple's limits enforced: wall time against Apple's floor, calls, database growth
      (--b4-grants 10000000 for the 10M scenario: its world takes 51 minutes, 13 GB of memory and 11 GB of disk to
      generate, the grants 11 minutes to import, the run 6.5 minutes; --b4-refund-rate 0.1 at 1,000,000 grants gives
      the refund feed of 10,000,000 at 1%, about 100,000 purchases, in a tenth of the time)
  B5  the database alone (clawback-db-bench): stream 1M grants through the job's read path; write 20,000 ledger entries
  B8  the grant path under load: record_grant from 16 pgbench sessions while run, refund-requests answer and prune run
  B9  refund requests' facts (clawback-db-bench refund-facts): 2,000 open requests over 1M grants (10M with --full)
  B10 the daily run (notified-refunds): its first run, then a day's; the refund-to-entry delay, daily against monthly
  B6  B1's workload by clawback and by a script on Apple's Python library (baseline_apple_library.py)
  B11 Google Play's monthly run (google-orders) over the simulator's Google side: orders per second, Google calls per
      1,000 grants, CPU per grant, peak RSS (100,000 orders; 1,000,000 with --full)
  B12 Google Play's daily run (--daily --strategy google-orders) over B11's world: its first run, then a day's; calls,
      writes and time; Google's void-to-entry delay, daily against monthly
  B13 the web shop's monthly run (stripe-payments) over the simulator's Stripe side: payments per second, Stripe calls
      per 1,000 grants by endpoint, the floor Stripe's rate limits set for those calls, CPU per grant, peak RSS
      (100,000 payments; 1,000,000 with --full). Unpaced and without latency it measures clawback; with
      --stripe-latency-ms (each answer delayed, as across the Internet) the run keeps its default pace of
      stripe.requests_per_second, and its wall time is what a studio would see

Medians of --repeat runs. Standard library only."""

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

BIN = Path(os.environ.get("CLAWBACK_BENCH_BIN", ".build-release/release"))


def log(message):
    print(f"--> {message}", file=sys.stderr, flush=True)


def machine():
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(memory / 2**30, 1), "kernel": platform.release()}


def world(work, purchases, refund_rate=0.03):
    """A generated world (cached by size): world.jsonl, grants.jsonl, keys, clawback-apps.yaml."""
    directory = work / f"world-{purchases}-{refund_rate}"
    if not (directory / "grants.jsonl").exists():
        log(f"generating {purchases:,} purchases")
        subprocess.run([BIN / "store-simulator", "generate", "--purchases", str(purchases), "--refund-rate", str(refund_rate),
                        "--seed", "7", "--out", directory], check=True, stdout=subprocess.DEVNULL)
    return directory


class Simulator:
    def __init__(self, world_dir, state, *arguments):
        self.process = subprocess.Popen(
            [BIN / "store-simulator", "serve", "--world", world_dir / "world.jsonl", "--state", state, "--port", "0", *arguments],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline().split()
        if len(line) != 2 or line[0] != "LISTENING":
            self.process.kill()
            raise RuntimeError(f"the simulator did not start: {line}")
        self.port = int(line[1])
        self.root = state / "root.pem"

    def stats(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/simulator/stats") as response:
            return json.load(response)

    def cpu_seconds(self):
        """The simulator's CPU time so far (it shares the machine's cores with clawback and PostgreSQL)."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def reset(self):
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/simulator/stats", method="DELETE")
        urllib.request.urlopen(request).close()

    def stop(self):
        self.process.terminate()
        self.process.wait()


class TLSProxy:
    """nginx terminating TLS (a P-256 certificate from a throwaway CA) with HTTP/2 by ALPN in front of the simulator,
    as clawback reaches Apple: the client's CPU then includes the TLS and HTTP/2 framing it spends against Apple."""

    def __init__(self, work, upstream_port):
        self.directory = directory = work / "tls-proxy"
        shutil.rmtree(directory, ignore_errors=True)
        (directory / "tmp").mkdir(parents=True)
        ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        quiet = {"check": True, "cwd": directory, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        subprocess.run(["openssl", "req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=bench CA",
                        "-addext", "basicConstraints=critical,CA:true", "-addext", "keyUsage=critical,keyCertSign"], **quiet)
        subprocess.run(["openssl", "req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"], **quiet)
        (directory / "server.ext").write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:false\n")
        subprocess.run(["openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                        "-days", "2", "-extfile", "server.ext", "-out", "server.pem"], **quiet)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        (directory / "nginx.conf").write_text(f"""daemon off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log {directory}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    client_body_temp_path {directory}/tmp/body; proxy_temp_path {directory}/tmp/proxy; fastcgi_temp_path {directory}/tmp/fcgi;
    uwsgi_temp_path {directory}/tmp/uwsgi; scgi_temp_path {directory}/tmp/scgi;
    keepalive_requests 10000000; http2_max_concurrent_streams 256;
    upstream simulator {{ server 127.0.0.1:{upstream_port}; keepalive 256; }}
    server {{
        listen 127.0.0.1:{self.port} ssl http2;
        ssl_certificate {directory}/server.pem; ssl_certificate_key {directory}/server.key;
        location / {{ proxy_pass http://simulator; proxy_http_version 1.1; proxy_set_header Connection ""; }}
    }}
}}
""")
        self.process = subprocess.Popen(["nginx", "-c", directory / "nginx.conf", "-p", directory], stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            self.process.kill()
            raise RuntimeError("nginx did not start in front of the simulator")
        self.ca = directory / "ca.pem"

    def cpu_seconds(self):
        """nginx's CPU so far: its master and its worker."""
        pids = [self.process.pid] + Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        total = 0
        for pid in pids:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.process.terminate()
        self.process.wait()


def p256_verify_microseconds():
    """CPU of one P-256 ECDSA signature verification on this machine now (openssl speed, one core): the reference the
    CPU per grant is divided by, so that the ratio does not move with the machine as absolute figures do."""
    output = subprocess.run(["openssl", "speed", "-seconds", "3", "ecdsap256"], check=True, capture_output=True, text=True).stdout
    for line in output.splitlines():
        if "ecdsa (nistp256)" in line:
            return 1e6 / float(line.split()[-1])
    raise RuntimeError(f"openssl speed printed no P-256 line: {output}")


def database(name):
    subprocess.run(["dropdb", "--if-exists", name], check=True)
    subprocess.run(["createdb", name], check=True)
    return {**os.environ, "PGDATABASE": name, "DATABASE_URL": "", "CLAWBACK_DATABASE_URL": ""}


def configure(work, simulator, world_dir, rate, concurrency, proxy=None):
    config = work / "clawback.yaml"
    base = f"https://127.0.0.1:{proxy.port}" if proxy else f"http://127.0.0.1:{simulator.port}"
    config.write_text(
        f"apple:\n  production_url: {base}\n  sandbox_url: {base}/sandbox\n"
        + (f"  extra_ca_file: {proxy.ca}\n" if proxy else "") + f"  trusted_roots: [{simulator.root}]\n  rate_limits: {{transaction_info: {rate}}}\n  concurrency: {concurrency}\n"
        f"run:\n  batch_size: 500\nreports:\n  directory: {work / 'reports'}\n  html: false\n"
        f"tail_window:\n  prune_after_run: false\n" + (world_dir / "clawback-apps.yaml").read_text())
    return config


def prepare(environment, config, world_dir):
    run = {"env": {**environment, "CLAWBACK_CONFIG": str(config)}, "check": True, "stdout": subprocess.DEVNULL}
    subprocess.run([BIN / "clawback", "migrate", "--log-level", "warning"], **run)
    subprocess.run([BIN / "clawback", "grants", "import", world_dir / "grants.jsonl", "--log-level", "warning"], **run)


def measured(arguments, environment):
    """Runs a child; returns its exit status, stdout, wall seconds, CPU seconds and peak RSS in bytes."""
    # CLAWBACK_BENCH_LOG=FILE keeps the runs' logs (at info, with timestamps) to see where a run's time goes.
    log = os.environ.get("CLAWBACK_BENCH_LOG")
    if log:
        arguments = [("info" if previous == "--log-level" else argument)
                     for previous, argument in zip([None, *arguments], arguments)]
    started = time.monotonic()
    stderr = open(log, "a") if log else subprocess.DEVNULL
    child = subprocess.Popen(arguments, env=environment, stdout=subprocess.PIPE, stderr=stderr, text=True)
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    return {"status": child.returncode, "output": output, "wall": time.monotonic() - started,
            "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss * 1024}


def clawback_run(work, simulator, world_dir, grants, name, rate, concurrency, extra=(), proxy=None):
    environment = database(name)
    config = configure(work, simulator, world_dir, rate, concurrency, proxy)
    prepare(environment, config, world_dir)
    simulator.reset()
    simulator_cpu = simulator.cpu_seconds()
    proxy_cpu = proxy.cpu_seconds() if proxy else 0
    # CLAWBACK_BENCH_WRAP="perf record -g -o perf.data --" profiles the run (its CPU figure then includes perf).
    wrap = os.environ.get("CLAWBACK_BENCH_WRAP", "").split()
    result = measured([*wrap, BIN / "clawback", "run", "--json", "--log-level", "error", *extra],
                      {**environment, "CLAWBACK_CONFIG": str(config)})
    if result["status"] not in (0,):
        raise RuntimeError(f"clawback run exited {result['status']}")
    summary = json.loads(result["output"])
    result["summary"] = summary
    result["simulator"] = simulator.stats()
    result["simulator_cpu"] = simulator.cpu_seconds() - simulator_cpu
    result["proxy_cpu"] = proxy.cpu_seconds() - proxy_cpu if proxy else 0
    checked = summary["counters"]["checked"]
    if checked != grants:
        raise RuntimeError(f"checked {checked} of {grants} grants")
    return result


def b1(args, work):
    """Per-transaction, unthrottled, over plain HTTP and then over Apple's real transport (TLS with HTTP/2, nginx in
    front of the simulator), with a P-256 signature verification measured in the same invocation as the reference."""
    grants = 200_000 if not args.quick else 20_000
    world_dir = world(work, grants)
    reference = p256_verify_microseconds()
    simulator = Simulator(world_dir, work / "state", "--no-rate-limit", "--latency-ms", "20", "--jitter-ms", "5")
    proxy = None
    try:
        plain = [clawback_run(work, simulator, world_dir, grants, "bench_b1", 1_000_000, args.concurrency) for _ in range(args.repeat)]
        proxy = TLSProxy(work, simulator.port)
        tls = [clawback_run(work, simulator, world_dir, grants, "bench_b1", 1_000_000, args.concurrency, proxy=proxy)
               for _ in range(args.repeat)]
    finally:
        if proxy:
            proxy.stop()
        simulator.stop()

    def figures(runs):
        return {"grants_per_second": statistics.median(grants / run["wall"] for run in runs),
                "cpu_microseconds_per_grant": statistics.median(run["cpu"] / grants * 1e6 for run in runs),
                "simulator_cpu_microseconds_per_grant": statistics.median(run["simulator_cpu"] / grants * 1e6 for run in runs),
                "proxy_cpu_microseconds_per_grant": statistics.median(run["proxy_cpu"] / grants * 1e6 for run in runs),
                "runs": [{k: r[k] for k in ("wall", "cpu", "rss", "simulator_cpu", "proxy_cpu")} for r in runs]}
    over_http, over_tls = figures(plain), figures(tls)
    return {"grants": grants, "concurrency": args.concurrency, **{k: v for k, v in over_http.items()}, "tls": over_tls,
            "p256_verify_microseconds": reference,
            "cpu_per_grant_in_p256_verifications": over_http["cpu_microseconds_per_grant"] / reference,
            "tls_cpu_per_grant_in_p256_verifications": over_tls["cpu_microseconds_per_grant"] / reference,
            "tls_over_http_cpu": over_tls["cpu_microseconds_per_grant"] / over_http["cpu_microseconds_per_grant"],
            "targets": {"grants_per_second": ">= 2000", "cpu_per_grant_in_p256_verifications": "<= 4",
                        "tls_over_http_cpu": "<= 1.3"}}


def b2(args, work):
    sizes = [10_000, 100_000] + ([1_000_000] if args.full else [])
    figures = {}
    for grants in sizes:
        world_dir = world(work, grants)
        simulator = Simulator(world_dir, work / "state", "--no-rate-limit")
        try:
            run = clawback_run(work, simulator, world_dir, grants, "bench_b2", 1_000_000, args.concurrency)
        finally:
            simulator.stop()
        figures[str(grants)] = {"peak_rss_mb": run["rss"] / 2**20, "wall": run["wall"]}
    return {"sizes": figures, "targets": {"peak_rss_mb_at_1m": "<= 150", "1m_vs_100k": "within 10%"}}


def b3(args, work):
    seconds = 60 if not args.quick else 15
    grants = 50 * seconds
    world_dir = world(work, grants, refund_rate=0.03)
    simulator = Simulator(world_dir, work / "state", "--rate", "transactionInfo=50")
    try:
        # The client is configured with Apple's published limit (no override): 50 requests/s per app.
        environment = database("bench_b3")
        config = configure(work, simulator, world_dir, 50, args.concurrency)
        prepare(environment, config, world_dir)
        simulator.reset()
        run = measured([BIN / "clawback", "run", "--json", "--log-level", "error"], {**environment, "CLAWBACK_CONFIG": str(config)})
        stats = simulator.stats()
    finally:
        simulator.stop()
    summary = json.loads(run["output"])
    requests = stats.get("requests.transactionInfo", 0)
    duration = summary["counters"]["durationSeconds"]
    return {"grants": grants, "requests": requests, "seconds": duration, "requests_per_second": requests / duration,
            "share_of_limit": requests / duration / 50, "responses_429": stats.get("status.429", 0),
            "targets": {"share_of_limit": ">= 0.97", "responses_429": "0"}}


def database_growth(environment):
    """Bytes on disk of what a run writes (checks, check pages, the ledger), with their indexes and TOAST."""
    sizes = subprocess.run(["psql", "-X", "-A", "-t", "-F", " ", "-c",
                            "SELECT pg_total_relation_size('clawback.checks'), pg_total_relation_size('clawback.check_pages'), "
                            "pg_total_relation_size('clawback.ledger'), (SELECT count(*) FROM clawback.checks), "
                            "(SELECT count(*) FROM clawback.check_pages)"],
                           env=environment, check=True, capture_output=True, text=True).stdout.split()
    names = ["checks_bytes", "check_pages_bytes", "ledger_bytes", "check_rows", "check_page_rows"]
    return dict(zip(names, map(int, sizes)))


def b4(args, work):
    grants = args.b4_grants or (1_000_000 if args.full else 100_000)
    world_dir = world(work, grants, refund_rate=args.b4_refund_rate)
    simulator = Simulator(world_dir, work / "state")  # Apple's published rates, enforced
    runs = []
    try:
        for attempt in range(args.repeat):
            environment = database("bench_b4")
            config = configure(work, simulator, world_dir, 50, args.concurrency)
            prepare(environment, config, world_dir)
            simulator.reset()
            wrap = os.environ.get("CLAWBACK_BENCH_WRAP", "").split()
            run = measured([*wrap, BIN / "clawback", "run", "--strategy", "notifications", "--audit-sample", str(args.audit_sample),
                            "--json", "--log-level", "error"], {**environment, "CLAWBACK_CONFIG": str(config)})
            if run["status"] != 0:
                raise RuntimeError(f"clawback run exited {run['status']}")
            run["summary"] = json.loads(run["output"])
            run["simulator"] = simulator.stats()
            run["growth"] = database_growth(environment)
            runs.append(run)
    finally:
        simulator.stop()
    median = sorted(runs, key=lambda run: run["wall"])[len(runs) // 2]
    growth = median["growth"]
    counters = median["summary"]["counters"]
    stats = median["simulator"]
    refunds = counters["verdicts"].get("refunded", 0) + counters["verdicts"].get("revoked", 0)
    calls = sum(count for name, count in stats.items() if name.startswith("requests."))
    feed_pages = stats.get("requests.notificationHistory", 0)
    audited = counters.get("auditedGrants", 0)
    # Apple's floor for the calls made: every call at Apple's 50 per second, one after the other. The feeds
    # (Get Notification History) and the audit (Get Transaction Info) have rate budgets of their own and are
    # read at once, so the run can come under it; the larger of the two alone is the lower bound then.
    floor = calls / 50
    return {"grants": grants, "refund_rate": args.b4_refund_rate, "refunds": refunds, "audit_sample_percent": args.audit_sample, "wall": median["wall"],
            "walls": [run["wall"] for run in runs], "apple_calls": calls, "notification_history_calls": feed_pages,
            "expected_calls": refunds / 20 + audited, "audited": audited, "peak_rss_mb": median["rss"] / 2**20,
            "cpu_seconds": median["cpu"], "floor_seconds": floor, "wall_over_floor": median["wall"] / floor,
            "floor_seconds_endpoints_at_once": max(feed_pages, audited) / 50,
            "growth": growth, "bytes_per_grant": (growth["checks_bytes"] + growth["check_pages_bytes"] + growth["ledger_bytes"]) / grants,
            "targets": {"wall_over_floor": "<= 1.25", "peak_rss_mb": "<= 100", "apple_calls": "about refunds / 20 + audit sample"}}


def b5(args, work):
    """The database side alone: the job's read path over the window, then its write path for 20,000 refunds."""
    grants = 1_000_000 if not args.quick else 100_000
    runs = []
    for attempt in range(args.repeat):
        environment = database("bench_b5")
        result = measured([BIN / "clawback-db-bench", str(grants), "20000"], environment)
        if result["status"] != 0:
            raise RuntimeError(f"clawback-db-bench exited {result['status']}")
        runs.append(json.loads(result["output"].strip().splitlines()[-1]))
    return {"grants": grants, "ledger_entries": 20_000, "rows_per_second": statistics.median(r["rows_per_second"] for r in runs),
            "stream_seconds": statistics.median(r["stream_seconds"] for r in runs),
            "ledger_seconds": statistics.median(r["ledger_seconds"] for r in runs),
            "copy_rows_per_second": statistics.median(r["copy_rows_per_second"] for r in runs),
            "share_of_copy_rate": statistics.median(r["share_of_copy_rate"] for r in runs), "runs": runs,
            "targets": {"rows_per_second": ">= 200000", "ledger_seconds": "<= 2"}}


def b6(args, work):
    """clawback and the script on Apple's Python library, one after the other against the same simulator."""
    grants = 200_000 if not args.quick else 20_000
    sample = min(grants, 20_000 if not args.quick else 5_000)  # the baseline is slow: its rate is what counts
    world_dir = world(work, grants)
    simulator = Simulator(world_dir, work / "state", "--no-rate-limit", "--latency-ms", "20", "--jitter-ms", "5")
    try:
        ours = clawback_run(work, simulator, world_dir, grants, "bench_b6", 1_000_000, args.concurrency)
        environment = database("bench_b6_baseline")
        prepare(environment, configure(work, simulator, world_dir, 1_000_000, args.concurrency), world_dir)
        python = os.environ.get("CLAWBACK_BENCH_PYTHON", "python3")
        baseline = measured([python, Path(__file__).parent / "baseline_apple_library.py", "--dsn", "dbname=bench_b6_baseline",
                             "--simulator-url", f"http://127.0.0.1:{simulator.port}", "--apps", world_dir / "apps.json",
                             "--root-der", work / "state" / "root.der", "--concurrency", str(args.concurrency), "--limit", str(sample)],
                            environment)
    finally:
        simulator.stop()
    if baseline["status"] != 0:
        raise RuntimeError(f"the baseline script exited {baseline['status']}")
    figures = json.loads(baseline["output"].strip().splitlines()[-1])
    if figures["checked"] != sample:
        raise RuntimeError(f"the baseline checked {figures['checked']} of {sample} grants")
    ours_rate = grants / ours["wall"]
    return {"grants": grants, "baseline_grants": sample, "concurrency": args.concurrency, "clawback_grants_per_second": ours_rate,
            "baseline_grants_per_second": figures["grants_per_second"], "speedup": ours_rate / figures["grants_per_second"],
            "clawback_cpu_microseconds_per_grant": ours["cpu"] / grants * 1e6,
            "baseline_cpu_microseconds_per_grant": baseline["cpu"] / sample * 1e6,
            "cpu_ratio": (baseline["cpu"] / sample) / (ours["cpu"] / grants), "targets": {"speedup": ">= 10", "cpu_ratio": ">= 20"}}


def b7(args, work):
    """Game servers draining the ledger: 8 consumers claim 100 at a time and acknowledge every entry, first with
    one acknowledge_clawback call per round trip (the worked consumer of docs/integrating.md), then with each
    claim's acknowledgements sent in one statement."""
    entries = 20_000 if not args.quick else 5_000
    figures = {}
    for variant, extra in (("per_entry", []), ("one_statement", ["--one-statement"])):
        rates = []
        for attempt in range(args.repeat):
            environment = database(f"bench_b7_{variant}")
            result = measured([BIN / "clawback-db-bench", "ledger", str(entries), "8", "100"] + extra, environment)
            if result["status"] != 0:
                raise RuntimeError(f"clawback-db-bench ledger exited {result['status']}")
            rates.append(json.loads(result["output"].strip().splitlines()[-1])["entries_per_second"])
        figures[variant] = {"entries_per_second": statistics.median(rates), "runs": rates}
    return {"entries": entries, "consumers": 8, "claim_size": 100, **figures, "targets": {"entries_per_second": ">= 5000"}}


def grant_path_load(environment, work, rate, seconds, prefix):
    """The game's grant path under a load of pgbench (C, two threads for 16 sessions, open loop at `rate` calls/s, or
    as fast as it goes at 0): calls, failures, the achieved rate and each call's latency from pgbench's per-transaction
    log. A load written in Python (one process, 16 threads) measured its own interpreter's scheduling as latency once
    the jobs took CPU from it: the instrument, not the database."""
    logs = work / "b8-logs" / str(prefix)
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    arguments = ["pgbench", "-n", "-c", "16", "-j", "2", "-T", str(seconds), "-f", Path(__file__).with_name("record_grant.pgbench"),
                 "-D", f"prefix={prefix}", "--log", f"--log-prefix={logs / 'calls'}"]
    if rate:
        arguments += ["-R", str(rate)]
    result = subprocess.run(arguments, env=environment, capture_output=True, text=True)
    processed = re.search(r"number of transactions actually processed: (\d+)", result.stdout)
    failed = re.search(r"number of failed transactions: (\d+)", result.stdout)
    latencies, lags, unfinished = [], [], 0
    for log_file in logs.iterdir():
        for line in log_file.read_text().splitlines():
            fields = line.split()
            if fields[2] in ("failed", "skipped"):
                unfinished += 1
                continue
            # Under -R pgbench counts a call's time from when it was scheduled: the lag before it began (a session
            # still busy with its previous call) is reported apart, and the call's own latency is what is left.
            lag = int(fields[6]) if len(fields) > 6 else 0
            latencies.append((int(fields[2]) - lag) / 1000)
            lags.append(lag / 1000)
    latencies.sort()
    lags.sort()
    errors = (0 if result.returncode == 0 else 1) + (int(failed.group(1)) if failed else 0) + unfinished
    calls = int(processed.group(1)) if processed else len(latencies)
    return {"calls": calls, "granted": calls, "errors": errors, "first_errors": result.stderr.strip().splitlines()[-3:] if errors else [],
            "calls_per_second": calls / seconds, "p50_ms": statistics.median(latencies) if latencies else None,
            "p99_ms": latencies[int(len(latencies) * 0.99) - 1] if latencies else None, "max_ms": latencies[-1] if latencies else None,
            "schedule_lag_p99_ms": lags[int(len(lags) * 0.99) - 1] if lags else None}


def b8(args, work):
    """The game's purchase path while the jobs run: clawback.record_grant from 16 sessions at half the rate this
    machine sustains for it alone (measured first), for --b8-seconds without the jobs, then as long again while
    `clawback run` (per-transaction, unthrottled simulator), `clawback refund-requests answer` and `clawback prune`
    (dropping a month of 3,000,000 grants and creating partitions ahead) run against the same database.
    Afterwards every granted call is counted in the grants table: none lost, none twice."""
    seconds = args.b8_seconds if not args.quick else 20
    old_month_grants = 3_000_000 if not args.quick else 300_000
    grants = 200_000 if not args.quick else 20_000
    world_dir = world(work, grants)
    simulator = Simulator(world_dir, work / "state", "--no-rate-limit", "--latency-ms", "20", "--jitter-ms", "5")
    try:
        environment = database("bench_b8")
        config = configure(work, simulator, world_dir, 1_000_000, args.concurrency)
        prepare(environment, config, world_dir)
        psql = ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c"]
        log(f"loading {old_month_grants:,} grants into a month past retention")
        subprocess.run([*psql, f"""
            CREATE SEQUENCE bench_grant_ids;
            SELECT clawback.ensure_grant_partitions(date_trunc('month', now()) - interval '12 months',
                                                    date_trunc('month', now()) - interval '11 months');
            INSERT INTO clawback.grants (transaction_id, original_transaction_id, bundle_id, product_id, environment, player_id,
                units_granted, purchased_at)
            SELECT (7000000000000000 + i)::text, (7000000000000000 + i)::text, 'com.bench.old', 'gems_600', 'Production',
                'player-' || (i % 50000), 600, date_trunc('month', now()) - interval '12 months' + i * interval '0.8 second'
            FROM generate_series(0, {old_month_grants} - 1) AS i;
            ANALYZE clawback.grants;"""], env=environment, check=True, stdout=subprocess.DEVNULL)

        log("record_grant alone, as fast as 16 sessions go")
        saturated = grant_path_load(environment, work, 0, 20, 81)
        rate = saturated["calls_per_second"] / 2
        log(f"record_grant at {rate:,.0f}/s for {seconds} s, alone")
        alone = grant_path_load(environment, work, rate, seconds, 82)

        log(f"record_grant at {rate:,.0f}/s for {seconds} s, with run, refund-requests answer and prune")
        job_environment = {**environment, "CLAWBACK_CONFIG": str(config)}
        jobs = []

        def start_jobs():
            time.sleep(min(10, seconds / 10))
            for command in (["run", "--log-level", "error"], ["refund-requests", "answer", "--log-level", "error"],
                            ["prune", "--log-level", "error"]):
                started = time.monotonic()
                child = subprocess.Popen([BIN / "clawback", *command], env=job_environment, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
                jobs.append((command[0] if command[0] != "refund-requests" else "refund-requests answer", child, started))

        starter = threading.Thread(target=start_jobs)
        starter.start()
        loaded = grant_path_load(environment, work, rate, seconds, 83)
        starter.join()
        job_results = {}
        for name, child, started in jobs:
            status = child.wait()
            job_results[name] = {"status": status}
        counted = subprocess.run(["psql", "-X", "-A", "-t", "-c",
                                  "SELECT count(*) FILTER (WHERE transaction_id LIKE '8%'), "
                                  "count(*) FILTER (WHERE bundle_id = 'com.bench.old') FROM clawback.grants"],
                                 env=environment, check=True, capture_output=True, text=True).stdout.strip().split("|")
    finally:
        simulator.stop()
    granted = saturated["granted"] + alone["granted"] + loaded["granted"]
    return {"sessions": 16, "load": "pgbench", "seconds": seconds, "saturated_calls_per_second": saturated["calls_per_second"],
            "rate": rate, "alone": alone, "with_jobs": loaded, "jobs": job_results, "granted_calls": granted,
            "grants_in_table": int(counted[0]), "old_month_left": int(counted[1]),
            "p99_ratio": loaded["p99_ms"] / alone["p99_ms"],
            "targets": {"p99_ratio": "<= 2", "max_ms": "<= 250", "errors": "0", "grants_in_table": "== granted_calls"}}


def b9(args, work):
    """Refund requests over a big grants table: the game's facts for 2,000 open requests (half granted, found by
    transaction id or by original transaction id; half not granted yet), with the index of migration 0010 and,
    for a sample, without it; and how long building that index holds the grants table."""
    grants = 10_000_000 if args.full else 1_000_000 if not args.quick else 100_000
    runs = []
    for attempt in range(args.repeat if not args.full else 1):
        environment = database("bench_b9")
        result = measured([BIN / "clawback-db-bench", "refund-facts", str(grants), "2000"], environment)
        if result["status"] != 0:
            raise RuntimeError(f"clawback-db-bench refund-facts exited {result['status']}")
        runs.append(json.loads(result["output"].strip().splitlines()[-1]))
    median = lambda key: statistics.median(r[key] for r in runs)
    return {"grants": grants, "requests": 2000, "seconds": median("seconds"), "ms_per_request": median("ms_per_request"),
            "unindexed_ms_per_request": median("unindexed_ms_per_request"), "index_build_seconds": median("index_build_seconds"),
            "load_seconds": median("load_seconds"), "runs": runs,
            "targets": {"seconds": "< 60 at 10,000,000 grants"}}


def parse_time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))


def next_at(at, hour, minute):
    """The next time of day hour:minute (UTC) after `at`."""
    run = at.replace(hour=hour, minute=minute, second=0, microsecond=0)
    return run if run > at else run + datetime.timedelta(days=1)


def next_monthly(at, hour, minute):
    """The next 1st of a month at hour:minute (UTC) after `at`."""
    run = at.replace(day=1, hour=hour, minute=minute, second=0, microsecond=0)
    if run <= at:
        run = (run + datetime.timedelta(days=32)).replace(day=1)
    return run


def months_before(run, months=3):
    """The start of the window a monthly run at `run` covers: the calendar months before its own."""
    start = run.replace(hour=0, minute=0)
    for _ in range(months):
        start = (start - datetime.timedelta(days=1)).replace(day=1)
    return start


def quantile(values, share):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0


def delays(world_dir, schedule_hour=(4, 23)):
    """Hours from each refund of the world to the run that records it: the daily run at 04:23 UTC the next time
    round (it reads every notification since the last daily run's start, less a day: DailyRunTests), and the
    monthly run at 03:17 UTC on the next 1st, which covers the three calendar months before its own (a refund
    of a purchase that has left that window by then is never found by a monthly run: counted apart)."""
    daily, monthly, missed, daily_missed = [], [], 0, 0
    with open(world_dir / "world.jsonl", encoding="utf-8") as lines:
        for line in lines:
            if '"refund"' not in line:
                continue
            record = json.loads(line)
            refunded, purchased = parse_time(record["refund"]["date"]), parse_time(record["purchaseDate"])
            # The daily run covers the window the next monthly run will: this month and the two before.
            run = next_at(refunded, *schedule_hour)
            if purchased >= months_before(next_monthly(run, 3, 17)):
                daily.append((run - refunded).total_seconds() / 3600)
            else:
                daily_missed += 1
            run = next_monthly(refunded, 3, 17)
            if purchased >= months_before(run):
                monthly.append((run - refunded).total_seconds() / 3600)
            else:
                missed += 1
    return {"refunds": len(daily) + daily_missed, "daily_median_hours": quantile(daily, 0.5), "daily_p99_hours": quantile(daily, 0.99),
            "monthly_median_hours": quantile(monthly, 0.5), "monthly_p99_hours": quantile(monthly, 0.99),
            "monthly_never": missed, "daily_never": daily_missed}


def b10(args, work):
    """The daily run: its first run (the window's feed), then a day's run, Apple's limits enforced."""
    grants = args.b4_grants or (1_000_000 if args.full else 100_000)
    world_dir = world(work, grants, refund_rate=0.01)
    simulator = Simulator(world_dir, work / "state")
    try:
        environment = database("bench_b10")
        config = configure(work, simulator, world_dir, 50, args.concurrency)
        prepare(environment, config, world_dir)
        arguments = [BIN / "clawback", "run", "--strategy", "notified-refunds", "--json", "--log-level", "error"]
        runs = {}
        for name in ("first", "day"):
            if name == "day":
                # As if the first had run yesterday: the day's run reads the notifications of two days.
                subprocess.run(["psql", "-X", "-q", "-c", "UPDATE clawback.runs SET started_at = started_at - interval '1 day'"],
                               env=environment, check=True)
            before = database_growth(environment)
            simulator.reset()
            run = measured(arguments, {**environment, "CLAWBACK_CONFIG": str(config)})
            if run["status"] != 0:
                raise RuntimeError(f"clawback run --strategy notified-refunds exited {run['status']}")
            counters = json.loads(run["output"])["counters"]
            stats = simulator.stats()
            after = database_growth(environment)
            runs[name] = {"wall": run["wall"], "cpu": run["cpu"], "peak_rss_mb": run["rss"] / 2**20, "checked": counters["checked"],
                          "new_ledger_entries": counters["newLedgerEntries"],
                          "feed_pages": stats.get("requests.notificationHistory", 0),
                          "transaction_info": stats.get("requests.transactionInfo", 0),
                          "bytes_written": sum(after[key] - before[key] for key in ("checks_bytes", "check_pages_bytes", "ledger_bytes"))}
    finally:
        simulator.stop()
    return {"grants": grants, **runs, "delays": delays(world_dir)}


def google_world(work, orders, refund_rate=0.03):
    """A generated Google Play world (cached by size): google-world.jsonl, google-grants.jsonl and its key file."""
    directory = work / f"google-world-{orders}-{refund_rate}"
    if not (directory / "google-grants.jsonl").exists():
        log(f"generating {orders:,} Google Play orders")
        subprocess.run([BIN / "store-simulator", "generate-google", "--orders", str(orders), "--refund-rate", str(refund_rate),
                        "--seed", "7", "--out", directory], check=True, stdout=subprocess.DEVNULL)
    return directory


def google_database(work, simulator, directory, name, config_name):
    """A database `name` with the Google world's grants imported and its voids swept, and a configuration (no
    Orders API budget or pace: the benchmark measures clawback, not Google's quota)."""
    environment = database(name)
    config = work / config_name
    base = f"http://127.0.0.1:{simulator.port}"
    config.write_text(
        f"google:\n  api_url: {base}\n  token_url: {base}/google/token\n  orders_calls_per_second: 1000000\n  orders_call_budget: 100000000\n"
        f"google_apps:\n  - package_name: com.studio.game\n    service_account_key_file: {directory / 'google-service-account.json'}\n"
        f"run:\n  batch_size: 500\nreports:\n  directory: {work / 'reports'}\n  html: false\ntail_window:\n  prune_after_run: false\n")
    run_env = {"env": {**environment, "CLAWBACK_CONFIG": str(config)}, "check": True, "stdout": subprocess.DEVNULL}
    subprocess.run([BIN / "clawback", "migrate", "--log-level", "warning"], **run_env)
    subprocess.run([BIN / "clawback", "grants", "import", directory / "google-grants.jsonl", "--log-level", "warning"], **run_env)
    subprocess.run([BIN / "clawback", "google-play", "sweep-voids", "--log-level", "warning"], **run_env)
    return environment, config


def store_run(simulator, strategy, environment, config):
    """One measured `clawback run --strategy <strategy>` against the simulator, its stats reset first: the run's
    figures, its counters, and the simulator's requests and CPU during it. 75 is a finished run too: the
    world's pending refunds (and disputes) stay unverified, as they should."""
    simulator.reset()
    simulator_cpu = simulator.cpu_seconds()
    run = measured([BIN / "clawback", "run", "--strategy", strategy, "--json", "--log-level", "error"],
                   {**environment, "CLAWBACK_CONFIG": str(config)})
    if run["status"] not in (0, 75):
        raise RuntimeError(f"clawback run --strategy {strategy} exited {run['status']}")
    run["counters"] = json.loads(run["output"])["counters"]
    run["simulator"] = simulator.stats()
    run["simulator_cpu"] = simulator.cpu_seconds() - simulator_cpu
    return run


def b11(args, work):
    """Google Play's monthly run: every order of the window asked in batches of 1,000 (no Google quota simulated)."""
    orders = args.b11_orders or (1_000_000 if args.full else 100_000)
    directory = google_world(work, orders)
    simulator = Simulator(world(work, 10), work / "state", "--google-world", directory / "google-world.jsonl")
    runs = []
    try:
        for _ in range(args.repeat):
            environment, config = google_database(work, simulator, directory, "bench_b11", "clawback-google.yaml")
            runs.append(store_run(simulator, "google-orders", environment, config))
    finally:
        simulator.stop()
    median = sorted(runs, key=lambda run: run["wall"])[len(runs) // 2]
    checked = median["counters"]["checked"]
    stats = median["simulator"]
    batches = stats.get("requests.google.orders.batchGet", 0)
    singles = stats.get("requests.google.orders.get", 0)
    return {"grants": checked, "wall": median["wall"], "walls": [run["wall"] for run in runs], "orders_per_second": checked / median["wall"],
            "google_calls": batches + singles, "batch_calls": batches, "single_calls": singles,
            "calls_per_1000_grants": (batches + singles) * 1000 / checked, "cpu_seconds": median["cpu"],
            "cpu_microseconds_per_grant": median["cpu"] / checked * 1e6,
            "simulator_cpu_microseconds_per_grant": median["simulator_cpu"] / checked * 1e6,
            "peak_rss_mb": median["rss"] / 2**20, "verdicts": median["counters"]["verdicts"],
            "new_ledger_entries": median["counters"]["newLedgerEntries"]}


def google_delays(directory):
    """Google's void to its ledger entry, over the generated world's refunds: daily (the sweep at 05:41 keeps what
    Google recorded before it, the daily run at 06:11 asks its orders) against monthly (the 1st at 04:17, if the
    purchase is still in that run's window). A refund Google does not list as a void waits for the monthly run."""
    daily, monthly, without_void = [], [], 0
    with open(directory / "google-world.jsonl", encoding="utf-8") as lines:
        for line in lines:
            if '"REFUNDED"' not in line and '"PARTIALLY_REFUNDED"' not in line:
                continue
            order = json.loads(line)
            if order.get("state") not in ("REFUNDED", "PARTIALLY_REFUNDED"):
                continue
            refunded = parse_time(order["refund"]["date"] if order.get("refund") else order["partialRefunds"][0]["date"])
            run = next_monthly(refunded, 4, 17)
            if parse_time(order["purchaseTime"]) >= months_before(run):
                monthly.append((run - refunded).total_seconds() / 3600)
            voids = order.get("voids") or []
            if not voids:
                without_void += 1
                continue
            swept = next_at(parse_time(voids[0]["recordedAt"]), 5, 41)
            daily.append((swept.replace(hour=6, minute=11) - refunded).total_seconds() / 3600)
    return {"refunds": len(monthly), "daily_median_hours": quantile(daily, 0.5), "daily_p99_hours": quantile(daily, 0.99),
            "monthly_median_hours": quantile(monthly, 0.5), "monthly_p99_hours": quantile(monthly, 0.99),
            "daily_refunds": len(daily), "without_void": without_void}


def json_documents(text):
    """Every JSON document of a command's output, one after the other (a daily run prints one per window)."""
    decoder, documents, index = json.JSONDecoder(), [], 0
    while index < len(text):
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            break
        document, index = decoder.raw_decode(text, index)
        documents.append(document)
    return documents


def b12(args, work):
    """Google Play's daily run (`run --daily --strategy google-orders`) over B11's world: its first run (every void the
    sweep kept), then a day's (a thirtieth of them kept anew); its calls, writes and time; Google's void-to-entry delay,
    daily against monthly."""
    orders = args.b11_orders or (1_000_000 if args.full else 100_000)
    directory = google_world(work, orders)
    simulator = Simulator(world(work, 10), work / "state", "--google-world", directory / "google-world.jsonl")
    runs = {}
    try:
        environment, config = google_database(work, simulator, directory, "bench_b12", "clawback-google-daily.yaml")
        arguments = [BIN / "clawback", "run", "--daily", "--strategy", "google-orders", "--json", "--log-level", "error"]
        for name in ("first", "day"):
            if name == "day":
                # As if the first had run yesterday and the sweep had kept every void before it; today it keeps a
                # thirtieth of them (a day of Google's 30).
                for statement in ("UPDATE clawback.runs SET started_at = started_at - interval '1 day'",
                                  "UPDATE clawback.google_voided_purchases SET read_at = read_at - interval '3 days'",
                                  "UPDATE clawback.google_voided_purchases SET read_at = now() WHERE hashtext(purchase_token) % 30 = 0"):
                    subprocess.run(["psql", "-X", "-q", "-c", statement], env=environment, check=True)
            before = database_growth(environment)
            simulator.reset()
            run = measured(arguments, {**environment, "CLAWBACK_CONFIG": str(config)})
            # 75: a pending refund stays unverified, as it should.
            if run["status"] not in (0, 75):
                raise RuntimeError(f"clawback run --daily --strategy google-orders exited {run['status']}")
            passes = [document["counters"] for document in json_documents(run["output"])]
            stats = simulator.stats()
            after = database_growth(environment)
            runs[name] = {"wall": run["wall"], "cpu": run["cpu"], "peak_rss_mb": run["rss"] / 2**20, "windows": len(passes),
                          "checked": sum(counters["checked"] for counters in passes),
                          "new_ledger_entries": sum(counters["newLedgerEntries"] for counters in passes),
                          "google_calls": stats.get("requests.google.orders.batchGet", 0) + stats.get("requests.google.orders.get", 0),
                          "bytes_written": sum(after[key] - before[key] for key in ("checks_bytes", "check_pages_bytes", "ledger_bytes"))}
    finally:
        simulator.stop()
    return {"grants": orders, **runs, "delays": google_delays(directory)}


STRIPE_RATE_PER_SECOND = 100
STRIPE_RATE_PER_ENDPOINT = 25


def stripe_world(work, payments):
    """A generated web shop on Stripe (cached by size): stripe-world.json, stripe-grants.jsonl and stripe.key."""
    directory = work / f"stripe-world-{payments}"
    if not (directory / "stripe-grants.jsonl").exists():
        log(f"generating {payments:,} Stripe payments")
        subprocess.run([BIN / "store-simulator", "generate-stripe", "--payments", str(payments), "--seed", "7", "--out", directory],
                       check=True, stdout=subprocess.DEVNULL)
    return directory


def b13(args, work):
    """The web shop's monthly run: the window's charges, refunds and disputes listed 100 a page, each grant decided
    from the lists, the payments they miss asked alone (no Stripe rate limit simulated: the floor is computed)."""
    payments = args.b13_payments or (1_000_000 if args.full else 100_000)
    directory = stripe_world(work, payments)
    latency = args.stripe_latency_ms
    started = time.monotonic()
    simulator = Simulator(world(work, 10), work / "state", "--stripe-world", directory / "stripe-world.json",
                          "--stripe-latency-ms", str(latency))
    load_seconds = time.monotonic() - started
    config = work / "clawback-stripe.yaml"
    # Without latency the run is unpaced: the figures are clawback's own. With it, the default pace.
    pace = "" if latency else "  requests_per_second: 10000\n"
    config.write_text(
        f"stripe:\n  api_key_file: {directory / 'stripe.key'}\n  api_url: http://127.0.0.1:{simulator.port}\n{pace}"
        f"  shops:\n    - name: web.studio.game\n"
        f"run:\n  batch_size: 500\nreports:\n  directory: {work / 'reports'}\n  html: false\ntail_window:\n  prune_after_run: false\n")
    runs = []
    try:
        for _ in range(args.repeat):
            environment = database("bench_b13")
            run_env = {"env": {**environment, "CLAWBACK_CONFIG": str(config)}, "check": True, "stdout": subprocess.DEVNULL}
            subprocess.run([BIN / "clawback", "migrate", "--log-level", "warning"], **run_env)
            subprocess.run([BIN / "clawback", "grants", "import", directory / "stripe-grants.jsonl", "--log-level", "warning"], **run_env)
            runs.append(store_run(simulator, "stripe-payments", environment, config))
    finally:
        simulator.stop()
    median = sorted(runs, key=lambda run: run["wall"])[len(runs) // 2]
    checked = median["counters"]["checked"]
    calls = {key.removeprefix("requests.stripe."): value for key, value in median["simulator"].items()
             if key.startswith("requests.stripe.") and value}
    total = sum(calls.values())
    # Stripe's limits: about 100 requests a second in live mode, 25 a second per endpoint (docs/stripe.md).
    floor = max(total / STRIPE_RATE_PER_SECOND, max(calls.values(), default=0) / STRIPE_RATE_PER_ENDPOINT)
    return {"grants": checked, "payments": payments, "latency_ms": latency, "simulator_load_seconds": load_seconds, "wall": median["wall"],
            "walls": [run["wall"] for run in runs], "payments_per_second": checked / median["wall"], "stripe_calls": total,
            "calls_by_endpoint": calls, "calls_per_1000_grants": total * 1000 / checked, "floor_seconds": floor,
            "cpu_seconds": median["cpu"], "cpu_microseconds_per_grant": median["cpu"] / checked * 1e6,
            "simulator_cpu_microseconds_per_grant": median["simulator_cpu"] / checked * 1e6,
            "peak_rss_mb": median["rss"] / 2**20, "verdicts": median["counters"]["verdicts"],
            "new_ledger_entries": median["counters"]["newLedgerEntries"]}


SCENARIOS = {"B1": b1, "B2": b2, "B3": b3, "B4": b4, "B5": b5, "B6": b6, "B7": b7, "B8": b8, "B9": b9, "B10": b10, "B11": b11, "B12": b12, "B13": b13}


def table(results):
    lines = []
    if "B1" in results:
        r = results["B1"]
        lines.append(f"B1 per-transaction, {r['grants']:,} grants, latency 20±5 ms: {r['grants_per_second']:,.0f} grants/s "
                     f"(target >= 2,000); {r['cpu_microseconds_per_grant']:.0f} µs CPU per grant = "
                     f"{r['cpu_per_grant_in_p256_verifications']:.1f} P-256 verifications of {r['p256_verify_microseconds']:.0f} µs "
                     f"(target <= 4); the simulator, on the same cores: {r['simulator_cpu_microseconds_per_grant']:.0f} µs CPU per grant")
        t = r["tls"]
        lines.append(f"   over TLS + HTTP/2 (nginx in front): {t['grants_per_second']:,.0f} grants/s; {t['cpu_microseconds_per_grant']:.0f} µs "
                     f"CPU per grant = {r['tls_over_http_cpu']:.2f}x plain HTTP (target <= 1.3) = "
                     f"{r['tls_cpu_per_grant_in_p256_verifications']:.1f} P-256 verifications; nginx {t['proxy_cpu_microseconds_per_grant']:.0f} µs")
    if "B2" in results:
        sizes = ", ".join(f"{int(n):,}: {v['peak_rss_mb']:.0f} MB" for n, v in results["B2"]["sizes"].items())
        lines.append(f"B2 peak RSS of clawback run: {sizes} (target <= 150 MB at 1M, within 10% of 100k)")
    if "B3" in results:
        r = results["B3"]
        lines.append(f"B3 Apple's limit 50/s: {r['requests_per_second']:.2f} requests/s = {r['share_of_limit']:.1%} of the limit "
                     f"(target >= 97%); {r['responses_429']} responses 429 (target 0)")
        lines.append(f"   floor on the real App Store, per-transaction: 1,000,000 grants / 50 per s = {1_000_000 / 50 / 3600:.1f} h")
    if "B4" in results:
        r = results["B4"]
        lines.append(f"B4 notifications, {r['grants']:,} grants, {r['refunds']:,} refunds, audit {r['audit_sample_percent']}%: "
                     f"{r['wall']:.1f} s (median of {len(r['walls'])}; target <= 60 s at 1M); {r['apple_calls']:,} Apple calls: "
                     f"{r['notification_history_calls']:,} feed pages + {r['audited']:,} audited (refunds / 20 + audited = "
                     f"{r['expected_calls']:,.0f}; the feed also carries reversals and repeat refunds); "
                     f"Apple's floor for those calls {r['floor_seconds']:.1f} s: {r['wall_over_floor']:.2f}x (target <= 1.25); "
                     f"peak RSS {r['peak_rss_mb']:.0f} MB (target <= 100); CPU {r['cpu_seconds']:.1f} s")
        g = r["growth"]
        lines.append(f"   database growth: {r['bytes_per_grant']:.1f} bytes per grant (checks {g['check_rows']:,} rows "
                     f"{g['checks_bytes'] / 2**20:.1f} MiB, check pages {g['check_page_rows']:,} rows {g['check_pages_bytes'] / 2**20:.1f} MiB, "
                     f"ledger {g['ledger_bytes'] / 2**20:.1f} MiB)")
    if "B10" in results:
        r = results["B10"]
        for name in ("first", "day"):
            run = r[name]
            lines.append(f"B10 the daily run, {r['grants']:,} grants, {name}: {run['wall']:.1f} s, {run['feed_pages']:,} feed pages + "
                         f"{run['transaction_info']:,} Get Transaction Info, {run['checked']:,} checked, {run['new_ledger_entries']:,} "
                         f"ledger entries, {run['bytes_written'] / 2**20:.2f} MiB written, peak RSS {run['peak_rss_mb']:.0f} MB")
        d = r["delays"]
        lines.append(f"   refund to ledger entry over the world's {d['refunds']:,} refunds: daily median {d['daily_median_hours']:.1f} h, "
                     f"p99 {d['daily_p99_hours']:.1f} h; monthly median {d['monthly_median_hours'] / 24:.1f} days, "
                     f"p99 {d['monthly_p99_hours'] / 24:.1f} days; never found (the purchase left the window first): daily "
                     f"{d['daily_never']:,}, monthly {d['monthly_never']:,}")
    if "B11" in results:
        r = results["B11"]
        lines.append(f"B11 Google Play's monthly run (google-orders), {r['grants']:,} grants: {r['wall']:.1f} s (median of {len(r['walls'])}), "
                     f"{r['orders_per_second']:,.0f} orders/s; {r['google_calls']:,} Google calls ({r['batch_calls']:,} batchget + "
                     f"{r['single_calls']:,} get) = {r['calls_per_1000_grants']:.2f} per 1,000 grants; {r['cpu_microseconds_per_grant']:.1f} µs "
                     f"CPU per grant (the simulator {r['simulator_cpu_microseconds_per_grant']:.1f} µs); peak RSS {r['peak_rss_mb']:.0f} MB; "
                     f"{r['new_ledger_entries']:,} ledger entries")
    if "B12" in results:
        r = results["B12"]
        for name in ("first", "day"):
            run = r[name]
            lines.append(f"B12 Google Play's daily run, {r['grants']:,} grants, {name}: {run['wall']:.1f} s over {run['windows']} windows, "
                         f"{run['google_calls']:,} Google calls, {run['checked']:,} checked, {run['new_ledger_entries']:,} entries, "
                         f"{run['bytes_written'] / 2**20:.2f} MiB written, {run['cpu']:.1f} s CPU, peak RSS {run['peak_rss_mb']:.0f} MB")
        d = r["delays"]
        lines.append(f"   Google's refund to its ledger entry over {d['refunds']:,} refunds: daily median {d['daily_median_hours']:.1f} h, "
                     f"p99 {d['daily_p99_hours']:.1f} h (the {d['daily_refunds']:,} Google lists as voids); monthly median "
                     f"{d['monthly_median_hours'] / 24:.1f} days, p99 {d['monthly_p99_hours'] / 24:.1f} days; "
                     f"{d['without_void']:,} without a void wait for the monthly run")
    if "B13" in results:
        r = results["B13"]
        endpoints = ", ".join(f"{calls:,} {name}" for name, calls in sorted(r["calls_by_endpoint"].items(), key=lambda item: -item[1]))
        paced = f"latency {r['latency_ms']} ms, paced" if r["latency_ms"] else "no latency, unpaced"
        lines.append(f"B13 the web shop's monthly run (stripe-payments), {r['grants']:,} grants, {paced}: {r['wall']:.1f} s (median of {len(r['walls'])}), "
                     f"{r['payments_per_second']:,.0f} payments/s; {r['stripe_calls']:,} Stripe calls ({endpoints}) = "
                     f"{r['calls_per_1000_grants']:.2f} per 1,000 grants; Stripe's rate-limit floor for them {r['floor_seconds']:.0f} s; "
                     f"{r['cpu_microseconds_per_grant']:.1f} µs CPU per grant (the simulator {r['simulator_cpu_microseconds_per_grant']:.1f} µs); "
                     f"peak RSS {r['peak_rss_mb']:.0f} MB; {r['new_ledger_entries']:,} ledger entries")
    if "B5" in results:
        r = results["B5"]
        lines.append(f"B5 database: {r['grants']:,} grants streamed through the job's read path at {r['rows_per_second']:,.0f} rows/s "
                     f"(target >= 200,000) = {r['share_of_copy_rate']:.0%} of psql's COPY of the same rows in the same run "
                     f"({r['copy_rows_per_second']:,.0f} rows/s); {r['ledger_entries']:,} ledger entries with their checks in "
                     f"{r['ledger_seconds']:.2f} s (target <= 2 s)")
    if "B6" in results:
        r = results["B6"]
        lines.append(f"B6 clawback {r['clawback_grants_per_second']:,.0f} grants/s ({r['grants']:,}) vs Apple's Python library "
                     f"{r['baseline_grants_per_second']:,.0f} grants/s ({r['baseline_grants']:,}): {r['speedup']:.1f}x (target >= 10x); "
                     f"CPU per grant {r['clawback_cpu_microseconds_per_grant']:.0f} vs {r['baseline_cpu_microseconds_per_grant']:.0f} µs: "
                     f"{r['cpu_ratio']:.1f}x less (target >= 20x)")
    if "B7" in results:
        r = results["B7"]
        lines.append(f"B7 game servers: {r['consumers']} consumers drain {r['entries']:,} entries, claims of {r['claim_size']}: "
                     f"{r['per_entry']['entries_per_second']:,.0f} entries/s acknowledging each in its own round trip, "
                     f"{r['one_statement']['entries_per_second']:,.0f} entries/s acknowledging each claim's in one statement "
                     f"(median of {len(r['per_entry']['runs'])}; target >= 5,000)")
    if "B8" in results:
        r = results["B8"]
        a, w = r["alone"], r["with_jobs"]
        jobs = ", ".join(f"{name} exit {job['status']}" for name, job in r["jobs"].items())
        lines.append(f"B8 grant path: record_grant from {r['sessions']} sessions at {r['rate']:,.0f}/s (half of {r['saturated_calls_per_second']:,.0f}/s) "
                     f"for {r['seconds']} s: alone p50 {a['p50_ms']:.1f} ms, p99 {a['p99_ms']:.1f} ms, max {a['max_ms']:.0f} ms; with run, "
                     f"refund-requests answer and prune: p50 {w['p50_ms']:.1f} ms, p99 {w['p99_ms']:.1f} ms ({r['p99_ratio']:.2f}x; target <= 2), "
                     f"max {w['max_ms']:.0f} ms (target <= 250); errors {a['errors'] + w['errors']}; {r['grants_in_table']:,} grants in the table "
                     f"for {r['granted_calls']:,} granted calls; jobs: {jobs}; "
                     f"old month left: {r['old_month_left']:,} grants")
    if "B9" in results:
        r = results["B9"]
        lines.append(f"B9 refund requests: facts of {r['requests']:,} open requests over {r['grants']:,} kept grants in {r['seconds']:.2f} s "
                     f"of database time ({r['ms_per_request']:.2f} ms each; target < 60 s at 10M); without migration 0010's index "
                     f"{r['unindexed_ms_per_request']:.0f} ms each; building that index held the grants table {r['index_build_seconds']:.1f} s")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path(".bench"))
    parser.add_argument("--only", action="append", choices=sorted(SCENARIOS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--audit-sample", type=float, default=0.1, help="B4: percent of grants re-verified per transaction")
    parser.add_argument("--b4-grants", type=int, default=0,
                        help="B4: grants in the world (default 1,000,000 with --full, else 100,000; 10000000 for the large scenario)")
    parser.add_argument("--b4-refund-rate", type=float, default=0.01,
                        help="B4: share of purchases refunded (0.1 at 1,000,000 grants holds the refund feed of 10,000,000 at 0.01)")
    parser.add_argument("--full", action="store_true", help="include the 1,000,000-grant sizes")
    parser.add_argument("--quick", action="store_true", help="small sizes, to try the driver")
    parser.add_argument("--b11-orders", type=int, default=0, help="B11: Google Play orders (default 100,000; 1,000,000 with --full)")
    parser.add_argument("--stripe-latency-ms", type=int, default=0, help="B13: each Stripe answer delayed this long (the run then paced as by default)")
    parser.add_argument("--b13-payments", type=int, default=0, help="B13: Stripe payments (default 100,000; 1,000,000 with --full)")
    parser.add_argument("--b8-seconds", type=int, default=300, help="B8: how long the grant path is loaded, alone and with the jobs")
    args = parser.parse_args()
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(args.work / "state", ignore_errors=True)
    results = {"machine": machine(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for name in args.only or sorted(SCENARIOS):
        log(f"scenario {name}")
        results[name] = SCENARIOS[name](args, args.work)
    (args.work / "results.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(table(results))
    print(f"machine: {results['machine']['cpu']}, {results['machine']['cores']} cores, {results['machine']['memory_gib']} GiB")
    print(f"figures: {args.work / 'results.json'}")


if __name__ == "__main__":
    main()
