"""Fidelity of the Stripe side of the simulator, judged by Stripe's own Python library.

stripe (PyPI, pinned) builds every request as it sends them to api.stripe.com (its paths, its query
encoding of `created[gte]` and `limit`, its bearer key, its paging with `starting_after`), pointed at the
simulator; every call clawback's Stripe client makes is made here the library's way, and the answers are
read by the library's own objects and errors. Run by Tests/Fidelity/run.sh.
"""
import datetime
import json
import os

import pytest
import stripe

SIMULATOR_URL = os.environ["SIMULATOR_URL"]
WORLD = json.load(open(os.environ["SIMULATOR_STRIPE_WORLD"]))
KEY = open(os.environ["SIMULATOR_STRIPE_KEY"]).read().strip()
PAYMENTS = WORLD["payments"]


def client(key=KEY):
    return stripe.StripeClient(key, stripe_version="2026-07-29.dahlia", base_addresses={"api": SIMULATOR_URL}, max_network_retries=0)


def seconds(text):
    return int(datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def collected():
    return [p for p in PAYMENTS.values() if p["status"] == "succeeded"]


def test_a_payment_intent_is_read_with_its_latest_charge():
    payment = collected()[0]
    intent = client().v1.payment_intents.retrieve(payment["id"])
    assert intent.id == payment["id"] and intent.status == "succeeded"
    assert intent.amount == payment["amount"] and intent.currency == payment["currency"]
    assert intent.latest_charge == payment["charges"][-1]["id"]
    charge = client().v1.charges.retrieve(intent.latest_charge)
    assert charge.payment_intent == payment["id"] and charge.captured and charge.paid


def test_an_unknown_payment_is_stripes_resource_missing():
    with pytest.raises(stripe.InvalidRequestError) as raised:
        client().v1.payment_intents.retrieve("pi_never_made")
    assert raised.value.http_status == 404 and raised.value.code == "resource_missing"


def test_a_wrong_key_is_refused():
    with pytest.raises(stripe.AuthenticationError):
        client("rk_test_wrong").v1.charges.list(params={"limit": 1})


def test_the_charges_of_a_window_page_to_the_end_newest_first():
    created = sorted(seconds(c["created"]) for p in collected() for c in p["charges"])
    gte, lt = created[len(created) // 4], created[3 * len(created) // 4]
    listed = list(client().v1.charges.list(params={"created": {"gte": gte, "lt": lt}, "limit": 100}).auto_paging_iter())
    want = [c for p in collected() for c in p["charges"] if gte <= seconds(c["created"]) < lt]
    assert len(listed) == len(want) and len({c.id for c in listed}) == len(want)
    assert [c.created for c in listed] == sorted((c.created for c in listed), reverse=True)


def test_refunds_and_disputes_list_by_time_and_by_charge():
    refunds = list(client().v1.refunds.list(params={"created": {"gte": 0}, "limit": 100}).auto_paging_iter())
    assert len(refunds) == sum(len(p["refunds"]) for p in PAYMENTS.values())
    assert {r.status for r in refunds} <= {"pending", "requires_action", "succeeded", "failed", "canceled"}
    disputes = list(client().v1.disputes.list(params={"created": {"gte": 0}, "limit": 100}).auto_paging_iter())
    assert len(disputes) == sum(len(p["disputes"]) for p in PAYMENTS.values())
    payment = next(p for p in collected() if p["refunds"])
    charge = payment["charges"][-1]["id"]
    by_charge = client().v1.refunds.list(params={"charge": charge})
    assert [r.id for r in by_charge.data] == [r["id"] for r in payment["refunds"]]
    assert all(r.charge == charge and r.payment_intent == payment["id"] for r in by_charge.data)


def test_a_disputes_balance_transactions_carry_its_fee_and_radars_warnings_list_by_time_and_payment():
    disputes = list(client().v1.disputes.list(params={"created": {"gte": 0}, "limit": 100}).auto_paging_iter())
    chargebacks = [d for d in disputes if d.status in ("needs_response", "under_review", "won", "lost")]
    assert chargebacks and all(d.balance_transactions[0].fee > 0 and d.balance_transactions[0].amount == -d.amount for d in chargebacks)
    assert all(len(d.balance_transactions) == (2 if d.status == "won" else 1) for d in chargebacks)
    assert all(d.balance_transactions == [] for d in disputes if d.status.startswith("warning_"))
    warned = [p for p in PAYMENTS.values() if p.get("fraudWarnings")]
    warnings = list(client().v1.radar.early_fraud_warnings.list(params={"created": {"gte": 0}, "limit": 100}).auto_paging_iter())
    assert warned and len(warnings) == sum(len(p["fraudWarnings"]) for p in warned)
    assert all(w.object == "radar.early_fraud_warning" and w.fraud_type and isinstance(w.actionable, bool) for w in warnings)
    payment = warned[0]
    by_payment = client().v1.radar.early_fraud_warnings.list(params={"payment_intent": payment["id"]})
    assert [w.id for w in by_payment.data] == [w["id"] for w in payment["fraudWarnings"]]


def test_a_limit_over_100_is_refused_as_stripe_refuses_it():
    with pytest.raises(stripe.InvalidRequestError) as raised:
        client().v1.charges.list(params={"limit": 101})
    assert raised.value.http_status == 400 and raised.value.param == "limit"


def test_events_of_the_last_30_days_list_by_type():
    types = ["refund.created", "charge.dispute.created"]
    events = list(client().v1.events.list(params={"types": types, "limit": 100}).auto_paging_iter())
    horizon = datetime.datetime.now(datetime.timezone.utc).timestamp() - 30 * 86400
    assert events and all(e.type in types and e.created >= horizon - 5 for e in events)
    refunds = [e for e in events if e.type == "refund.created"]
    assert all(e.data.object.object == "refund" and e.data.object.payment_intent in PAYMENTS for e in refunds)
    want = sum(1 for p in PAYMENTS.values() for r in p["refunds"] if seconds(r["created"]) >= horizon + 5)
    assert len(refunds) >= want


def awaiting(status):
    return [d for p in PAYMENTS.values() for d in p.get("disputes", []) if d["status"] == status]


def test_a_disputes_evidence_is_staged_then_submitted_once_under_idempotency_keys():
    # The library's way of clawback's two POSTs: evidence[...] with submit=false, then submit=true, each
    # under its own Idempotency-Key; a repeated key is answered with the first answer.
    dispute = awaiting("needs_response")[0]
    staged = client().v1.disputes.update(
        dispute["id"], params={"evidence": {"product_description": "100 gems", "access_activity_log": "spent 40"}, "submit": False},
        options={"idempotency_key": "fidelity-stage"})
    assert staged.evidence.product_description == "100 gems" and staged.evidence_details.submission_count == 0
    assert staged.status == "needs_response" and staged.evidence_details.has_evidence
    submitted = client().v1.disputes.update(dispute["id"], params={"submit": True}, options={"idempotency_key": "fidelity-submit"})
    assert submitted.status == "under_review" and submitted.evidence_details.submission_count == 1
    replayed = client().v1.disputes.update(dispute["id"], params={"submit": True}, options={"idempotency_key": "fidelity-submit"})
    assert replayed.evidence_details.submission_count == 1
    assert client().v1.disputes.retrieve(dispute["id"]).evidence.access_activity_log == "spent 40"
    with pytest.raises(stripe.IdempotencyError):
        client().v1.disputes.update(dispute["id"], params={"submit": False}, options={"idempotency_key": "fidelity-submit"})


def test_an_inquirys_evidence_is_taken_and_submitting_it_puts_it_under_review():
    dispute = awaiting("warning_needs_response")[0]
    answered = client().v1.disputes.update(dispute["id"], params={"evidence": {"uncategorized_text": "delivered"}})
    assert answered.status == "warning_under_review" and answered.evidence.uncategorized_text == "delivered"
