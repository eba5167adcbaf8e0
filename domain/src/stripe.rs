//! Stripe's webhook events as Tidemark reads them: the signature Stripe documents, the price
//! to tier mapping, and the few fields of the four events that make and keep a licence.
//! Field paths follow Stripe's API reference, old and new (`invoice.subscription` moved to
//! `invoice.parent.subscription_details.subscription`, a subscription's period end to its
//! items, in the 2025 API versions); both are read.

use serde_json::Value;
use tidemark_wire::Tier;

use crate::webhook::{verify_signature, SignatureError};
use crate::Millis;

/// Prices and the tiers they buy, from `price_A=team,price_B=agency`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriceMap(Vec<(String, Tier)>);

impl PriceMap {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut pairs = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (price, tier) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?} is not <price id>=<tier>"))?;
            let tier = Tier::parse(tier.trim()).ok_or_else(|| {
                format!("{:?} is no tier (team, agency, enterprise)", tier.trim())
            })?;
            let price = price.trim();
            if !price.starts_with("price_") {
                return Err(format!("{price:?} is no Stripe price id (price_…)"));
            }
            pairs.push((price.to_owned(), tier));
        }
        Ok(PriceMap(pairs))
    }

    pub fn tier_of(&self, price: &str) -> Option<Tier> {
        self.0.iter().find(|(p, _)| p == price).map(|(_, t)| *t)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Checks `Stripe-Signature` against each of the endpoint's secrets (several while one is
/// rolled): a header Stripe signed with any of them, within five minutes of `now_secs`.
pub fn verify(
    header: &str,
    secrets: &[String],
    body: &[u8],
    now_secs: i64,
) -> Result<(), SignatureError> {
    let mut worst = SignatureError::Mismatch;
    for secret in secrets {
        match verify_signature(header, secret, body, now_secs) {
            Ok(()) => return Ok(()),
            // Malformed and stale are the header's fault whatever the secret.
            Err(e @ (SignatureError::Malformed | SignatureError::Stale)) => return Err(e),
            Err(e) => worst = e,
        }
    }
    Err(worst)
}

/// An event Tidemark acts on, with what it needs of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// A checkout paid: make a licence for `email` (its price and quantity are the session's
    /// line items, read from Stripe's API).
    CheckoutCompleted {
        session_id: String,
        subscription_id: Option<String>,
        customer_id: Option<String>,
        email: Option<String>,
    },
    /// An invoice paid: the licence runs to the period's end (plus grace).
    InvoicePaid {
        subscription_id: String,
        period_end: Millis,
    },
    /// Tier and seats from the subscription's first item.
    SubscriptionUpdated {
        subscription_id: String,
        price_id: Option<String>,
        quantity: Option<u64>,
    },
    /// Cancelled: the licence expires at the period's end.
    SubscriptionDeleted {
        subscription_id: String,
        period_end: Millis,
    },
    /// A type Tidemark does not use.
    Ignored,
}

/// An event's id, type, creation time and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub id: String,
    pub event_type: String,
    pub action: Action,
}

fn text(v: &Value, path: &[&str]) -> Option<String> {
    let mut at = v;
    for key in path {
        at = at.get(key)?;
    }
    at.as_str().map(str::to_owned)
}

fn secs(v: &Value, path: &[&str]) -> Option<Millis> {
    let mut at = v;
    for key in path {
        at = at.get(key)?;
    }
    at.as_i64().map(|s| s.saturating_mul(1000))
}

/// The id of an object or of a reference to one (`"sub_1"` or `{"id": "sub_1", …}`).
fn id_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("id")?.as_str().map(str::to_owned),
        _ => None,
    }
}

fn subscription_period_end(sub: &Value) -> Option<Millis> {
    secs(sub, &["current_period_end"]).or_else(|| {
        sub.get("items")?
            .get("data")?
            .as_array()?
            .iter()
            .filter_map(|i| secs(i, &["current_period_end"]))
            .max()
    })
}

/// Reads an event's body; `Err` says what is missing from a type Tidemark uses.
pub fn parse_event(body: &[u8]) -> Result<Event, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    let id = text(&v, &["id"])
        .filter(|i| i.starts_with("evt_"))
        .ok_or("no event id (evt_…)")?;
    let event_type = text(&v, &["type"]).ok_or("no event type")?;
    let object = v
        .get("data")
        .and_then(|d| d.get("object"))
        .ok_or("no data.object")?;
    let need = |what: Option<String>, name: &str| {
        what.ok_or_else(|| format!("{event_type} without {name}"))
    };
    let action = match event_type.as_str() {
        "checkout.session.completed" => Action::CheckoutCompleted {
            session_id: need(text(object, &["id"]), "its session id")?,
            subscription_id: id_of(object.get("subscription")),
            customer_id: id_of(object.get("customer")),
            email: text(object, &["customer_details", "email"])
                .or_else(|| text(object, &["customer_email"])),
        },
        "invoice.paid" => {
            let subscription = id_of(object.get("subscription")).or_else(|| {
                id_of(
                    object
                        .get("parent")?
                        .get("subscription_details")?
                        .get("subscription"),
                )
            });
            let lines_end = object
                .get("lines")
                .and_then(|l| l.get("data"))
                .and_then(Value::as_array)
                .and_then(|lines| {
                    lines
                        .iter()
                        .filter_map(|l| secs(l, &["period", "end"]))
                        .max()
                });
            Action::InvoicePaid {
                subscription_id: need(subscription, "a subscription")?,
                period_end: lines_end
                    .or_else(|| secs(object, &["period_end"]))
                    .ok_or_else(|| format!("{event_type} without a period end"))?,
            }
        }
        "customer.subscription.updated" => {
            let item = object
                .get("items")
                .and_then(|i| i.get("data"))
                .and_then(|d| d.get(0));
            Action::SubscriptionUpdated {
                subscription_id: need(text(object, &["id"]), "its subscription id")?,
                price_id: item.and_then(|i| id_of(i.get("price"))),
                quantity: item.and_then(|i| i.get("quantity")).and_then(Value::as_u64),
            }
        }
        "customer.subscription.deleted" => Action::SubscriptionDeleted {
            subscription_id: need(text(object, &["id"]), "its subscription id")?,
            period_end: subscription_period_end(object)
                .or_else(|| secs(object, &["ended_at"]))
                .ok_or_else(|| format!("{event_type} without a period end"))?,
        },
        _ => Action::Ignored,
    };
    Ok(Event {
        id,
        event_type,
        action,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prices_map_to_tiers_and_a_bad_mapping_says_why() {
        let map = PriceMap::parse("price_A=team, price_B=agency").unwrap();
        assert_eq!(map.tier_of("price_B"), Some(Tier::Agency));
        assert_eq!(map.tier_of("price_C"), None);
        assert!(PriceMap::parse("price_A=gold")
            .unwrap_err()
            .contains("gold"));
        assert!(PriceMap::parse("prod_A=team")
            .unwrap_err()
            .contains("prod_A"));
        assert!(PriceMap::parse("").unwrap().is_empty());
    }

    #[test]
    fn any_current_secret_verifies_and_a_forged_one_does_not() {
        let body = br#"{"id":"evt_1"}"#;
        let (old, new) = ("whsec_old".to_owned(), "whsec_new".to_owned());
        let header = crate::webhook::WebhookSecret::from_stored(new.clone()).sign(100, body);
        assert_eq!(
            verify(&header, &[old.clone(), new.clone()], body, 100),
            Ok(())
        );
        assert_eq!(
            verify(&header, std::slice::from_ref(&old), body, 100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify(&header, std::slice::from_ref(&new), body, 100 + 301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify("v1=00", &[new], body, 100),
            Err(SignatureError::Malformed)
        );
    }

    #[test]
    fn both_shapes_of_an_invoice_name_its_subscription_and_period() {
        let old = json!({"id": "evt_1", "type": "invoice.paid", "data": {"object": {
            "subscription": "sub_1", "period_end": 10, "lines": {"data": [{"period": {"end": 2000}}]}}}});
        let new = json!({"id": "evt_2", "type": "invoice.paid", "data": {"object": {
            "parent": {"subscription_details": {"subscription": "sub_1"}}, "period_end": 2000}}});
        for v in [old, new] {
            let e = parse_event(v.to_string().as_bytes()).unwrap();
            assert_eq!(
                e.action,
                Action::InvoicePaid {
                    subscription_id: "sub_1".into(),
                    period_end: 2_000_000
                }
            );
        }
        let other = json!({"id": "evt_3", "type": "charge.refunded", "data": {"object": {}}});
        assert_eq!(
            parse_event(other.to_string().as_bytes()).unwrap().action,
            Action::Ignored
        );
        let broken = json!({"id": "evt_4", "type": "invoice.paid", "data": {"object": {}}});
        assert!(parse_event(broken.to_string().as_bytes())
            .unwrap_err()
            .contains("subscription"));
        assert!(parse_event(b"nope").is_err());
    }
}
