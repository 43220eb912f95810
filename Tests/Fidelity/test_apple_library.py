"""Fidelity of the App Store simulator, judged by Apple's own Python library (app-store-server-library).

Apple's AppStoreServerAPIClient talks to the simulator (its base URL pointed there), and every signed
payload it gets back is verified by Apple's SignedDataVerifier with strict X.509 checks on, trusting only
the simulator's root. Send Consumption Information goes through Apple's ConsumptionRequest model, and its
answers and refusals are judged as Apple's client reads them. Run by Tests/Fidelity/run.sh, which starts
the simulator and sets the environment.
"""
import datetime
import json
import os
import urllib.request

import pytest
from appstoreserverlibrary.api_client import APIException, AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserverlibrary.models.ConsumptionRequest import ConsumptionRequest
from appstoreserverlibrary.models.ConsumptionRequestReason import ConsumptionRequestReason
from appstoreserverlibrary.models.DeliveryStatus import DeliveryStatus
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.NotificationTypeV2 import NotificationTypeV2
from appstoreserverlibrary.models.RefundPreference import RefundPreference
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


def open_request(record):
    """A refund request Apple sent (CONSUMPTION_REQUEST) and has not decided: an answer to it is solicited."""
    request = record.get("refundRequest")
    return bool(request) and request.get("decision") is None and millis(request["date"]) <= NOW_MS


def client():
    api = AppStoreServerAPIClient(
        open(APP["keyFile"], "rb").read(), APP["keyId"], APP["issuerId"], APP["bundleId"], Environment.PRODUCTION)
    api._base_url = SIMULATOR_URL
    return api


def verifier():
    # Strict X.509 checks stay on (Apple's default): the simulator's chain must pass them.
    return SignedDataVerifier([ROOT_DER], False, Environment.PRODUCTION, APP["bundleId"], APP["appAppleId"])


def notification_history(api, request):
    """Every item of Get Notification History for the request, following paginationToken."""
    items, token = [], None
    while True:
        page = api.get_notification_history(token, request)
        items += page.notificationHistory
        if not page.hasMore:
            return items
        token = page.paginationToken


def simulator(method, path, body=None):
    """The simulator's control API (not Apple's): JSON in, JSON out."""
    data = None if body is None else body.encode()
    with urllib.request.urlopen(urllib.request.Request(SIMULATOR_URL + path, data=data, method=method), timeout=30) as reply:
        return json.loads(reply.read())


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


def test_notification_history_consumption_requests_and_declines():
    api, check = client(), verifier()
    start = NOW_MS - 179 * 86_400_000
    requested = {
        r["transactionId"]: r for r in TRANSACTIONS
        if "refundRequest" in r and start <= millis(r["refundRequest"]["date"]) <= NOW_MS
    }
    declined = {
        r["transactionId"]: r for r in TRANSACTIONS
        if r.get("refundRequest", {}).get("decision") == "REFUND_DECLINED"
        and start <= millis(r["refundRequest"]["decidedAt"]) <= NOW_MS
    }
    assert len(requested) > 0 and len(declined) > 0 and any(open_request(r) for r in requested.values())

    request = NotificationHistoryRequest(startDate=start, endDate=NOW_MS, notificationType=NotificationTypeV2.CONSUMPTION_REQUEST)
    seen = []
    for item in notification_history(api, request):
        notification = check.verify_and_decode_notification(item.signedPayload)
        assert notification.notificationType == NotificationTypeV2.CONSUMPTION_REQUEST
        assert notification.rawSubtype is None
        assert isinstance(notification.data.consumptionRequestReason, ConsumptionRequestReason)
        transaction = check.verify_and_decode_signed_transaction(notification.data.signedTransactionInfo)
        record = requested[transaction.transactionId]
        assert notification.data.rawConsumptionRequestReason == record["refundRequest"]["reason"]
        assert notification.signedDate == millis(record["refundRequest"]["date"])
        assert transaction.revocationDate is None  # asked before any refund
        seen.append(transaction.transactionId)
    assert sorted(seen) == sorted(requested)

    request = NotificationHistoryRequest(startDate=start, endDate=NOW_MS, notificationType=NotificationTypeV2.REFUND_DECLINED)
    seen = []
    for item in notification_history(api, request):
        notification = check.verify_and_decode_notification(item.signedPayload)
        assert notification.notificationType == NotificationTypeV2.REFUND_DECLINED
        assert notification.data.consumptionRequestReason is None
        transaction = check.verify_and_decode_signed_transaction(notification.data.signedTransactionInfo)
        assert notification.signedDate == millis(declined[transaction.transactionId]["refundRequest"]["decidedAt"])
        assert transaction.revocationDate is None
        seen.append(transaction.transactionId)
    assert sorted(seen) == sorted(declined)


def test_notification_history_of_a_granted_request_in_order():
    granted = next(
        r for r in TRANSACTIONS
        if r.get("refundRequest", {}).get("decision") == "REFUND" and active_refund(r)
        and millis(r["refundRequest"]["date"]) >= NOW_MS - 179 * 86_400_000
    )
    api, check = client(), verifier()
    request = NotificationHistoryRequest(startDate=NOW_MS - 179 * 86_400_000, endDate=NOW_MS, transactionId=granted["transactionId"])
    mine = []
    for item in notification_history(api, request):
        notification = check.verify_and_decode_notification(item.signedPayload)
        transaction = check.verify_and_decode_signed_transaction(notification.data.signedTransactionInfo)
        if transaction.transactionId == granted["transactionId"]:
            mine.append((notification.notificationType, notification.signedDate, transaction.revocationDate))
    assert mine == [
        (NotificationTypeV2.CONSUMPTION_REQUEST, millis(granted["refundRequest"]["date"]), None),
        (NotificationTypeV2.REFUND, millis(granted["refund"]["date"]), millis(granted["refund"]["date"])),
    ]


def test_send_consumption_information_accepted_and_recorded():
    record = [r for r in TRANSACTIONS if open_request(r)][0]
    body = ConsumptionRequest(
        customerConsented=True, sampleContentProvided=False, deliveryStatus=DeliveryStatus.DELIVERED,
        consumptionPercentage=25_000, refundPreference=RefundPreference.GRANT_PRORATED)
    assert client().send_consumption_information(record["transactionId"], body) is None  # 202, no body

    answers = [a for a in simulator("GET", "/simulator/consumption-answers") if a["transactionId"] == record["transactionId"]]
    assert len(answers) == 1
    answer = answers[0]
    assert answer["body"] == {
        "customerConsented": True, "sampleContentProvided": False, "deliveryStatus": "DELIVERED",
        "consumptionPercentage": 25_000, "refundPreference": "GRANT_PRORATED",
    }
    assert json.loads(answer["raw"]) == client()._get_request_json(body)  # exactly what Apple's client sent
    assert answer["bundleId"] == APP["bundleId"]
    assert answer["environment"] == "Production"
    assert answer["solicited"] is True
    assert answer["late"] is False


def valid_answer(**changes):
    fields = dict(customerConsented=True, sampleContentProvided=True, deliveryStatus=DeliveryStatus.DELIVERED)
    fields.update(changes)
    return ConsumptionRequest(**fields)


@pytest.mark.parametrize("case, body, status, code", [
    ("not consented", valid_answer(customerConsented=False), 400, 4000035),
    ("delivery status not in the enum", valid_answer(deliveryStatus=None, rawDeliveryStatus="DELIVERED_LATE"), 400, 4000036),
    ("sample content provided missing", valid_answer(sampleContentProvided=None), 400, 4000041),
    ("refund preference not in the enum", valid_answer(rawRefundPreference="GRANT_HALF"), 400, 4000044),
    # Documented refusals whose number Apple does not publish: 400 and no errorCode.
    ("GRANT_PRORATED with all consumed", valid_answer(refundPreference=RefundPreference.GRANT_PRORATED, consumptionPercentage=100_000), 400, None),
    ("percentage out of range", valid_answer(consumptionPercentage=100_001), 400, None),
    ("percentage when not delivered", valid_answer(deliveryStatus=DeliveryStatus.UNDELIVERED_OTHER, consumptionPercentage=10_000), 400, None),
])
def test_send_consumption_information_refused(case, body, status, code):
    record = [r for r in TRANSACTIONS if open_request(r)][1]
    with pytest.raises(APIException) as failure:
        client().send_consumption_information(record["transactionId"], body)
    assert failure.value.http_status_code == status
    assert failure.value.raw_api_error == code
    assert not any(a["transactionId"] == record["transactionId"] for a in simulator("GET", "/simulator/consumption-answers"))


@pytest.mark.parametrize("transaction_id, status, code", [("9999999999999999", 404, 4040010), ("12.34", 400, 4000006)])
def test_send_consumption_information_unknown_or_invalid_id(transaction_id, status, code):
    with pytest.raises(APIException) as failure:
        client().send_consumption_information(transaction_id, valid_answer())
    assert failure.value.http_status_code == status
    assert failure.value.raw_api_error == code


def test_send_consumption_information_percentage_on_auto_renewable_is_4000209():
    subscription = {
        "transactionId": "2999999999999001", "originalTransactionId": "2999999999999001", "customerId": "fidelity-subscriber",
        "bundleId": APP["bundleId"], "productId": "pass_monthly", "type": "Auto-Renewable Subscription", "quantity": 1,
        "priceMilli": 4990, "currency": "USD", "storefront": "USA", "environment": "Production",
        "purchaseDate": NOW_MS - 30 * 86_400_000,  # world files take milliseconds too
    }
    assert simulator("POST", "/simulator/world", json.dumps(subscription)) == {"updated": 1}
    with pytest.raises(APIException) as failure:
        client().send_consumption_information(subscription["transactionId"], valid_answer(consumptionPercentage=10_000))
    assert failure.value.http_status_code == 400
    assert failure.value.raw_api_error == 4000209
