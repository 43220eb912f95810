"""B6's alternative: the B1 workload done by a straightforward script on Apple's official Python library.

What a studio would write without clawback: stream the window's grants from PostgreSQL (psycopg, server-side
cursor), ask Get Transaction Info for each with Apple's async client (production, then sandbox on
4040010), verify every signed answer with Apple's SignedDataVerifier, decide refunded or ok, and write one
check row per grant in batches, with the same number of requests in flight as clawback. Run by bench.py
inside the same benchmark run as clawback, against the same simulator; prints one JSON line.
"""
import argparse
import asyncio
import json
import time

import httpx
import psycopg
from appstoreserverlibrary.api_client import APIException, AsyncAppStoreServerAPIClient
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier

NOT_FOUND = 4040010


def clients(app, url, concurrency):
    key = open(app["keyFile"], "rb").read()
    made = {}
    for environment, base in ((Environment.PRODUCTION, url), (Environment.SANDBOX, url + "/sandbox")):
        client = AsyncAppStoreServerAPIClient(key, app["keyId"], app["issuerId"], app["bundleId"], environment)
        client._base_url = base  # the simulator stands in for Apple
        client.http_client = httpx.AsyncClient(limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency))
        made[environment] = client
    return made


async def check(grant, apps, verifiers):
    transaction_id, bundle_id = grant
    clients_by_environment = apps[bundle_id]
    for environment in (Environment.PRODUCTION, Environment.SANDBOX):
        try:
            response = await clients_by_environment[environment].get_transaction_info(transaction_id)
        except APIException as error:
            if error.raw_api_error == NOT_FOUND and environment == Environment.PRODUCTION:
                continue
            return (transaction_id, "unverified" if error.raw_api_error != NOT_FOUND else "unknown_to_apple", None)
        except Exception:
            return (transaction_id, "unverified", None)
        try:
            payload = verifiers[(bundle_id, environment)].verify_and_decode_signed_transaction(response.signedTransactionInfo)
        except Exception:
            return (transaction_id, "unverified", None)
        verdict = "refunded" if payload.revocationDate is not None else "ok"
        return (transaction_id, verdict, payload.revocationDate)
    return (transaction_id, "unknown_to_apple", None)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--simulator-url", required=True)
    parser.add_argument("--apps", required=True)
    parser.add_argument("--root-der", required=True)
    parser.add_argument("--concurrency", type=int, default=128)
    parser.add_argument("--limit", type=int, required=True)
    args = parser.parse_args()

    apps_list = json.load(open(args.apps))
    root = open(args.root_der, "rb").read()
    apps = {app["bundleId"]: clients(app, args.simulator_url, args.concurrency) for app in apps_list}
    verifiers = {
        (app["bundleId"], environment): SignedDataVerifier([root], False, environment, app["bundleId"], app["appAppleId"])
        for app in apps_list for environment in (Environment.PRODUCTION, Environment.SANDBOX)
    }
    started = time.monotonic()
    checked = 0
    async with await psycopg.AsyncConnection.connect(args.dsn) as writer, await psycopg.AsyncConnection.connect(args.dsn) as reader:
        await writer.execute("DROP TABLE IF EXISTS baseline_checks")
        await writer.execute("CREATE TABLE baseline_checks (transaction_id text PRIMARY KEY, verdict text NOT NULL, "
                             "revocation_date bigint, checked_at timestamptz NOT NULL DEFAULT now())")
        await writer.commit()
        semaphore = asyncio.Semaphore(args.concurrency)
        pending = set()
        batch = []

        async def one(grant):
            async with semaphore:
                return await check(grant, apps, verifiers)

        async def flush():
            nonlocal batch
            if batch:
                async with writer.cursor() as cursor:
                    await cursor.executemany("INSERT INTO baseline_checks (transaction_id, verdict, revocation_date) VALUES (%s, %s, %s) "
                                             "ON CONFLICT DO NOTHING", batch)
                await writer.commit()
                batch = []

        async with reader.cursor(name="grants") as cursor:
            await cursor.execute("SELECT transaction_id, bundle_id FROM clawback.grants ORDER BY purchased_at, transaction_id LIMIT %s",
                                 (args.limit,))
            async for grant in cursor:
                pending.add(asyncio.create_task(one(grant)))
                if len(pending) >= args.concurrency * 2:
                    done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                    batch += [task.result() for task in done]
                    checked += len(done)
                    if len(batch) >= 500:
                        await flush()
        if pending:
            done, _ = await asyncio.wait(pending)
            batch += [task.result() for task in done]
            checked += len(done)
        await flush()
    wall = time.monotonic() - started
    print(json.dumps({"checked": checked, "wall": wall, "grants_per_second": checked / wall}))


if __name__ == "__main__":
    asyncio.run(main())
