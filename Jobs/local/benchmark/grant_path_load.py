"""B8's load: the game's grant path, `clawback.record_grant`, called from N sessions at a fixed total rate (0: as
fast as they can) for a number of seconds, each call a new purchase with a unique transaction id. Prints one JSON
line: calls, granted (true), refused as already granted (false), errors, the achieved rate, and latency p50, p99
and maximum in milliseconds. Run with the benchmark's virtualenv (psycopg); connects with libpq's PG* variables."""
import argparse
import json
import statistics
import threading
import time

import psycopg

CALL = """SELECT clawback.record_grant(
    p_transaction_id => %(id)s, p_original_transaction_id => %(id)s, p_bundle_id => 'com.bench.game', p_product_id => 'gems_600',
    p_environment => 'Production', p_player_id => %(player)s, p_units_granted => 600, p_purchased_at => now() - interval '1 hour')"""


def session(index, arguments, deadline, results):
    latencies, granted, refused, errors = [], 0, 0, []
    interval = arguments.sessions / arguments.rate if arguments.rate > 0 else 0
    with psycopg.connect(autocommit=True, application_name=f"bench-grant-path-{index}") as connection:
        next_call = time.monotonic()
        counter = 0
        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            if interval and now < next_call:
                time.sleep(next_call - now)
            next_call += interval
            counter += 1
            started = time.monotonic()
            try:
                result = connection.execute(CALL, {"id": f"{arguments.prefix}{index:02d}{counter:09d}", "player": f"player-{counter % 5000}"})
                if result.fetchone()[0]:
                    granted += 1
                else:
                    refused += 1
            except psycopg.Error as error:
                errors.append(str(error).splitlines()[0] if str(error) else type(error).__name__)
            latencies.append((time.monotonic() - started) * 1000)
    results[index] = (latencies, granted, refused, errors)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--rate", type=float, default=0, help="calls per second, all sessions together; 0: as fast as possible")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--prefix", default="8")
    arguments = parser.parse_args()
    results = {}
    started = time.monotonic()
    deadline = started + arguments.seconds
    threads = [threading.Thread(target=session, args=(index, arguments, deadline, results)) for index in range(arguments.sessions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    latencies = sorted(value for result in results.values() for value in result[0])
    errors = [error for result in results.values() for error in result[3]]
    print(json.dumps({
        "calls": len(latencies), "granted": sum(r[1] for r in results.values()), "refused": sum(r[2] for r in results.values()),
        "errors": len(errors), "first_errors": errors[:5], "calls_per_second": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) if latencies else None,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] if latencies else None, "max_ms": latencies[-1] if latencies else None}))


if __name__ == "__main__":
    main()
