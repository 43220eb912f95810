"""Fidelity of the Google Play side of the simulator, judged by Google's own Python client.

google-api-python-client builds the Android Publisher v3 service from the discovery document it ships
(static discovery, so every path and parameter is Google's), pointed at the simulator; google-auth's
service-account credentials sign the RS256 assertion and exchange it at the simulator's token endpoint.
Every endpoint clawback uses is called the way Google's client calls it. Run by Tests/Fidelity/run.sh.
"""
import base64
import datetime
import json
import os
import time

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.auth.exceptions import RefreshError
from google.auth.transport.requests import Request
from google.oauth2 import service_account
from googleapiclient.discovery import build
from googleapiclient.errors import HttpError

SIMULATOR_URL = os.environ["SIMULATOR_URL"]
SCOPE = "https://www.googleapis.com/auth/androidpublisher"
KEY = json.load(open(os.environ["SIMULATOR_GOOGLE_KEY"]))
PUBSUB_SCOPE = "https://www.googleapis.com/auth/pubsub"
PACKAGES = []
ORDERS = {}
SUBSCRIPTIONS = []
for line in open(os.environ["SIMULATOR_GOOGLE_WORLD"]):
    record = json.loads(line)
    if record["record"] == "googlePackage":
        PACKAGES.append(record)
    elif record["record"] == "googleSubscription":
        SUBSCRIPTIONS.append(record)
    else:
        ORDERS[record["orderId"]] = record
PACKAGE = PACKAGES[0]["packageName"]


def credentials(info=None, scopes=(SCOPE,)):
    info = dict(info or KEY)
    info["token_uri"] = SIMULATOR_URL + "/google/token"
    return service_account.Credentials.from_service_account_info(info, scopes=list(scopes))


def publisher(creds=None):
    return build("androidpublisher", "v3", credentials=creds or credentials(), static_discovery=True, cache_discovery=False,
                 client_options={"api_endpoint": SIMULATOR_URL + "/"})


def by_state(state):
    return [order for order in ORDERS.values() if order["state"] == state]


def test_the_service_account_gets_a_token_for_an_hour():
    creds = credentials()
    creds.refresh(Request())
    assert creds.token and creds.valid
    assert 3000 < (creds.expiry - datetime.datetime.utcnow()).total_seconds() <= 3600


def test_a_key_google_does_not_list_is_refused():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = dict(KEY, private_key=key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                     serialization.NoEncryption()).decode())
    with pytest.raises(RefreshError) as refused:
        credentials(forged).refresh(Request())
    assert "invalid_grant" in str(refused.value)


@pytest.mark.parametrize("state", ["PROCESSED", "REFUNDED", "PARTIALLY_REFUNDED", "CANCELED", "PENDING_REFUND"])
def test_orders_get_answers_googles_order(state):
    service = publisher()
    records = by_state(state)[:5]
    assert records, f"the generated world has no {state} order"
    for record in records:
        order = service.orders().get(packageName=PACKAGE, orderId=record["orderId"]).execute()
        assert order["orderId"] == record["orderId"] and order["purchaseToken"] == record["purchaseToken"]
        assert order["state"] == state
        item = order["lineItems"][0]
        assert item["productId"] == record["productId"] and item["oneTimePurchaseDetails"]["quantity"] == record["quantity"]
        total = order["total"]
        assert total["currencyCode"] == record["currency"]
        # Google's JSON leaves zero fields out.
        assert int(total.get("units", "0")) * 1000 + total.get("nanos", 0) // 1_000_000 == record["priceMilli"]
        history = order["orderHistory"]
        if state == "REFUNDED":
            assert history["refundEvent"]["refundReason"] == record["refund"]["reason"]
            assert history["refundEvent"]["eventTime"].endswith("Z")
        if state == "PARTIALLY_REFUNDED":
            assert all(event["state"] == "PROCESSED_SUCCESSFULLY" for event in history["partialRefundEvents"])


@pytest.mark.parametrize("state", ["PROCESSED", "REFUNDED", "PARTIALLY_REFUNDED", "CANCELED"])
def test_purchases_products_get_answers_the_purchase_record(state):
    service = publisher()
    for record in by_state(state)[:5]:
        purchase = service.purchases().products().get(
            packageName=PACKAGE, productId=record["productId"], token=record["purchaseToken"]).execute()
        assert purchase["kind"] == "androidpublisher#productPurchase"
        assert purchase["orderId"] == record["orderId"] and purchase["productId"] == record["productId"]
        assert purchase["quantity"] == record["quantity"]
        assert purchase["purchaseState"] == (1 if state == "CANCELED" else 0)
        voided = sum(void.get("quantity") or 0 for void in record.get("voids") or [])
        refundable = 0 if state == "REFUNDED" else record["quantity"] - voided
        assert purchase["refundableQuantity"] == refundable
        assert abs(int(purchase["purchaseTimeMillis"]) / 1000 - datetime.datetime.fromisoformat(
            record["purchaseTime"].replace("Z", "+00:00")).timestamp()) < 0.001


def test_purchases_products_get_of_an_unknown_token_is_404():
    record = by_state("PROCESSED")[0]
    with pytest.raises(HttpError) as error:
        publisher().purchases().products().get(packageName=PACKAGE, productId=record["productId"], token="no-such-token").execute()
    assert error.value.status_code == 404


def test_orders_get_of_an_unknown_order_is_404():
    with pytest.raises(HttpError) as error:
        publisher().orders().get(packageName=PACKAGE, orderId="GPA.0000-0000-0000-99999").execute()
    assert error.value.status_code == 404


def test_orders_batchget_answers_a_thousand_orders_by_id():
    ids = sorted(ORDERS)[:1000]
    answer = publisher().orders().batchget(packageName=PACKAGE, orderIds=ids).execute()
    assert sorted(order["orderId"] for order in answer["orders"]) == ids


def test_orders_batchget_fails_whole_for_one_unknown_order():
    ids = sorted(ORDERS)[:10] + ["GPA.0000-0000-0000-99999"]
    with pytest.raises(HttpError) as error:
        publisher().orders().batchget(packageName=PACKAGE, orderIds=ids).execute()
    # Google documents the whole-batch failure, not its status; the simulator's is 404 notFound.
    assert error.value.status_code in (400, 404)
    assert error.value.error_details


def test_orders_batchget_refuses_more_than_a_thousand_or_repeated_ids():
    service = publisher()
    for ids in (sorted(ORDERS)[:1001], [sorted(ORDERS)[0]] * 2):
        with pytest.raises(HttpError) as error:
            service.orders().batchget(packageName=PACKAGE, orderIds=ids).execute()
        assert error.value.status_code == 400


def test_an_app_the_account_may_not_read_is_401_permission_denied():
    with pytest.raises(HttpError) as error:
        publisher().orders().get(packageName="com.not.granted", orderId=sorted(ORDERS)[0]).execute()
    assert error.value.status_code in (401, 404)
    assert error.value.error_details[0]["reason"] in ("permissionDenied", "applicationNotFound")


def test_voided_purchases_are_read_page_by_page_within_30_days():
    now_ms = int(time.time() * 1000)
    start_ms = now_ms - 30 * 86_400_000 + 600_000
    expected = set()
    for order in ORDERS.values():
        for void in order.get("voids") or []:
            recorded = int(datetime.datetime.fromisoformat(void["recordedAt"].replace("Z", "+00:00")).timestamp() * 1000)
            if recorded >= start_ms:
                expected.add((order["orderId"], void.get("quantity")))
    assert expected, "the generated world has no void in the last 30 days"
    service = publisher()
    seen, pages, token = set(), 0, None
    while True:
        arguments = dict(packageName=PACKAGE, maxResults=50, includeQuantityBasedPartialRefund=True)
        arguments.update(token=token) if token else arguments.update(startTime=str(start_ms), endTime=str(now_ms))
        page = service.purchases().voidedpurchases().list(**arguments).execute()
        pages += 1
        for row in page.get("voidedPurchases", []):
            assert row["purchaseToken"] == ORDERS[row["orderId"]]["purchaseToken"]
            assert int(row["voidedTimeMillis"]) <= now_ms and 0 <= int(row["voidedReason"]) <= 8
            seen.add((row["orderId"], row.get("voidedQuantity")))
        token = page.get("tokenPagination", {}).get("nextPageToken")
        if not token:
            break
    assert seen == expected
    assert pages == (len(expected) + 49) // 50


def test_voided_purchases_refuse_a_start_older_than_30_days():
    old = int(time.time() * 1000) - 31 * 86_400_000
    with pytest.raises(HttpError) as error:
        publisher().purchases().voidedpurchases().list(packageName=PACKAGE, startTime=str(old)).execute()
    assert error.value.status_code == 400


def pubsub(scopes=(PUBSUB_SCOPE,)):
    return build("pubsub", "v1", credentials=credentials(scopes=scopes), static_discovery=True, cache_discovery=False,
                 client_options={"api_endpoint": SIMULATOR_URL + "/"})


def test_the_subscription_can_be_pulled_acknowledged_and_handed_back_as_pubsub_does():
    subscription = SUBSCRIPTIONS[0]["name"]
    service = pubsub().projects().subscriptions()
    granted = service.testIamPermissions(resource=subscription, body={"permissions": ["pubsub.subscriptions.consume"]}).execute()
    assert granted.get("permissions") == ["pubsub.subscriptions.consume"]
    received = service.pull(subscription=subscription, body={"maxMessages": 1000}).execute().get("receivedMessages", [])
    assert received, "the simulator published the world's notifications as it started"
    notifications = [json.loads(base64.b64decode(item["message"]["data"])) for item in received]
    assert all(n["packageName"] == PACKAGE and int(n["eventTimeMillis"]) > 0 for n in notifications)
    kinds = {next(key for key in n if key.endswith("Notification")) for n in notifications}
    # The generated voids are older than Pub/Sub's 7 days; clawback's own tests read void notifications.
    assert {"testNotification", "pendingRefundReviewNotification"} <= kinds
    reviews = [n["pendingRefundReviewNotification"] for n in notifications if "pendingRefundReviewNotification" in n]
    assert all(ORDERS[r["orderId"]]["refundReview"]["pendingRefundToken"] == r["pendingRefundToken"] for r in reviews)
    # Leased: nothing more until handed back; a deadline of 0 hands one back at once, with a new ack id.
    assert not service.pull(subscription=subscription, body={"maxMessages": 10}).execute().get("receivedMessages")
    first = received[0]
    service.modifyAckDeadline(subscription=subscription, body={"ackIds": [first["ackId"]], "ackDeadlineSeconds": 0}).execute()
    again = service.pull(subscription=subscription, body={"maxMessages": 10}).execute()["receivedMessages"]
    assert [m["message"]["messageId"] for m in again] == [first["message"]["messageId"]] and again[0]["ackId"] != first["ackId"]
    service.acknowledge(subscription=subscription, body={"ackIds": [m["ackId"] for m in received[1:]] + [again[0]["ackId"]]}).execute()
    with pytest.raises(HttpError) as error:
        service.acknowledge(subscription=subscription, body={"ackIds": ["not-an-ack-id"]}).execute()
    assert error.value.status_code == 400


def test_pubsub_needs_its_scope_and_knows_its_subscriptions():
    with pytest.raises(HttpError) as error:
        pubsub(scopes=(SCOPE,)).projects().subscriptions().pull(subscription=SUBSCRIPTIONS[0]["name"], body={"maxMessages": 1}).execute()
    assert error.value.status_code == 403
    with pytest.raises(HttpError) as error:
        pubsub().projects().subscriptions().pull(subscription="projects/none/subscriptions/none", body={"maxMessages": 1}).execute()
    assert error.value.status_code == 404


def test_orders_reviewrefund_takes_the_first_answer_and_checks_the_body():
    reviewed = sorted((o for o in ORDERS.values() if o.get("refundReview")), key=lambda o: o["orderId"])
    assert len(reviewed) >= 2, "the generated world has chargebacks under review"
    orders = publisher().orders()
    first, second = reviewed[0], reviewed[1]
    token = first["refundReview"]["pendingRefundToken"]
    body = {"pendingRefundToken": token, "refundPreference": "DECLINE", "sampleContentProvided": False,
            "consumptionPercentageMilliunits": 45200,
            "consumptionUsageEvents": [{"consumptionTime": "2026-10-01T10:00:00Z", "consumptionItemDescription": "300 gems",
                                        "location": {"regionCode": "CH"}}]}
    # The method has no response schema, so Google's client hands back the raw body: an empty JSON object.
    assert orders.reviewrefund(packageName=PACKAGE, orderId=first["orderId"], body=body).execute() == b"{}"
    # Google keeps the first answer and ignores later ones: the call still succeeds.
    assert orders.reviewrefund(packageName=PACKAGE, orderId=first["orderId"], body=dict(body, refundPreference="APPROVE")).execute() == b"{}"
    other = second["refundReview"]["pendingRefundToken"]
    for bad in [dict(body, pendingRefundToken=other), dict(body, refundPreference="REFUND_PREFERENCE_UNSPECIFIED"),
                {k: v for k, v in body.items() if k != "sampleContentProvided"}, dict(body, consumptionPercentageMilliunits=100001),
                dict(body, consumptionUsageEvents=[{"consumptionTime": "2026-10-01T10:00:00Z"}] * 1001)]:
        with pytest.raises(HttpError) as error:
            orders.reviewrefund(packageName=PACKAGE, orderId=first["orderId"], body=bad).execute()
        assert error.value.status_code == 400
