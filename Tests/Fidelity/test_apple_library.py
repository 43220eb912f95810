"""Fidelity of the App Store simulator, judged by Apple's own Python library (app-store-server-library).

Apple's AppStoreServerAPIClient talks to the simulator (its base URL pointed there), and every signed
payload it gets back is verified by Apple's SignedDataVerifier with strict X.509 checks on, trusting only
the simulator's root. Run by Tests/Fidelity/run.sh, which starts the simulator and sets the environment.
"""
import datetime
import json
import os

import pytest
from appstoreserverlibrary.api_client import APIException, AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.NotificationTypeV2 import NotificationTypeV2
from appstoreserverlibrary.models.TransactionHistoryRequest import ProductType, TransactionHistoryRequest
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier

SIMULATOR_URL = os.environ["SIMULATOR_URL"]
WORLD = os.environ["SIMULATOR_WORLD"]
APPS = json.load(open(os.environ["SIMULATOR_APPS"]))
APP = APPS[0]
ROOT_DER = open(os.environ["SIMULATOR_ROOT_DER"], "rb").read()
NOW_MS = int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)


def load_world():
    transactions = []
    for line in open(WORLD):
        record = json.loads(line)
        if record.get("record", "transaction") == "transaction":
            transactions.append(record)
    return transactions


TRANSACTIONS = load_world()


def millis(text):
    return int(datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def active_refund(record):
    refund = record.get("refund")
    if not refund or millis(refund["date"]) > NOW_MS:
        return False
    reversed_date = refund.get("reversedDate")
    return reversed_date is None or millis(reversed_date) > NOW_MS


def client():
    api = AppStoreServerAPIClient(
        open(APP["keyFile"], "rb").read(), APP["keyId"], APP["issuerId"], APP["bundleId"], Environment.PRODUCTION)
    api._base_url = SIMULATOR_URL
    return api


def verifier():
    # Strict X.509 checks stay on (Apple's default): the simulator's chain must pass them.
    return SignedDataVerifier([ROOT_DER], False, Environment.PRODUCTION, APP["bundleId"], APP["appAppleId"])


def test_transaction_info_plain_and_refunded():
    plain = next(r for r in TRANSACTIONS if "refund" not in r)
    refunded = next(r for r in TRANSACTIONS if active_refund(r) and r["refund"]["type"] == "REFUND_PRORATED")
    api, check = client(), verifier()

    decoded = check.verify_and_decode_signed_transaction(api.get_transaction_info(plain["transactionId"]).signedTransactionInfo)
    assert decoded.transactionId == plain["transactionId"]
    assert decoded.productId == plain["productId"]
    assert decoded.price == plain["priceMilli"]
    assert decoded.revocationDate is None

    decoded = check.verify_and_decode_signed_transaction(api.get_transaction_info(refunded["transactionId"]).signedTransactionInfo)
    assert decoded.revocationDate == millis(refunded["refund"]["date"])
    assert decoded.revocationPercentage == refunded["refund"]["percentage"]
    assert decoded.rawRevocationType == "REFUND_PRORATED"
    assert decoded.revocationReason is not None


def test_unknown_transaction_is_4040010():
    with pytest.raises(APIException) as failure:
        client().get_transaction_info("9999999999999999")
    assert failure.value.http_status_code == 404
    assert failure.value.raw_api_error == 4040010


def test_transaction_history_all_pages():
    customers = {}
    for record in TRANSACTIONS:
        customers.setdefault(record["customerId"], []).append(record)
    customer, records = max(customers.items(), key=lambda item: len(item[1]))
    api, check = client(), verifier()
    request = TransactionHistoryRequest(productTypes=[ProductType.CONSUMABLE])
    seen, revision = [], None
    while True:
        page = api.get_transaction_history(records[0]["transactionId"], revision, request, GetTransactionHistoryVersion.V2)
        seen += [check.verify_and_decode_signed_transaction(s).transactionId for s in page.signedTransactions]
        if not page.hasMore:
            break
        revision = page.revision
    assert sorted(seen) == sorted(r["transactionId"] for r in records)


def test_refund_history():
    refunded = next(r for r in TRANSACTIONS if active_refund(r))
    mine = [r for r in TRANSACTIONS if r["customerId"] == refunded["customerId"] and active_refund(r)]
    api, check = client(), verifier()
    seen, revision = [], None
    while True:
        page = api.get_refund_history(refunded["transactionId"], revision)
        seen += [check.verify_and_decode_signed_transaction(s).transactionId for s in page.signedTransactions]
        if not page.hasMore:
            break
        revision = page.revision
    assert sorted(seen) == sorted(r["transactionId"] for r in mine)


def test_notification_history_refunds_and_reversals():
    api, check = client(), verifier()
    start = NOW_MS - 179 * 86_400_000
    expected = {
        NotificationTypeV2.REFUND: {r["transactionId"] for r in TRANSACTIONS if "refund" in r and millis(r["refund"]["date"]) >= start},
        NotificationTypeV2.REFUND_REVERSED: {
            r["transactionId"] for r in TRANSACTIONS
            if r.get("refund", {}).get("reversedDate") and millis(r["refund"]["reversedDate"]) >= start
        },
    }
    for notification_type, ids in expected.items():
        request = NotificationHistoryRequest(startDate=start, endDate=NOW_MS, notificationType=notification_type)
        seen, token = set(), None
        while True:
            page = api.get_notification_history(token, request)
            for item in page.notificationHistory:
                notification = check.verify_and_decode_notification(item.signedPayload)
                assert notification.notificationType == notification_type
                transaction = check.verify_and_decode_signed_transaction(notification.data.signedTransactionInfo)
                assert (transaction.revocationDate is not None) == (notification_type == NotificationTypeV2.REFUND)
                seen.add(transaction.transactionId)
            if not page.hasMore:
                break
            token = page.paginationToken
        assert seen == ids
        assert len(ids) > 0


def test_apple_jwt_accepted_and_tampered_jwt_refused():
    api = client()
    plain = next(r for r in TRANSACTIONS if "refund" not in r)
    api.get_transaction_info(plain["transactionId"])  # Apple's own token is accepted
    original = api._generate_token

    def tampered():
        token = original()
        head, claims, signature = token.split(".")
        return ".".join([head, claims, ("A" if signature[0] != "A" else "B") + signature[1:]])

    api._generate_token = tampered
    with pytest.raises(APIException) as failure:
        api.get_transaction_info(plain["transactionId"])
    assert failure.value.http_status_code == 401
