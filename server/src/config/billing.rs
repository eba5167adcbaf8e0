//! Licences made by the checkout: Stripe's webhook signing secrets (several while one is
//! rolled), the API key that reads a checkout's line items, prices and the tiers they buy.

use tidemark_domain::stripe::PriceMap;

use super::{ConfigError, Vars};

/// Stripe's webhook signing secrets and API key: never printed.
#[derive(Clone)]
pub struct StripeSecrets {
    pub webhook_secrets: Vec<String>,
    pub api_key: String,
}

tidemark_domain::redacted_debug!(StripeSecrets);

#[derive(Debug, Clone)]
pub struct StripeConfig {
    pub secrets: StripeSecrets,
    pub prices: PriceMap,
    /// Days added to a paid period's end (`TIDEMARK_STRIPE_GRACE_DAYS`, default 7).
    pub grace_days: u32,
    /// Stripe's API (`TIDEMARK_STRIPE_API_BASE`, default `https://api.stripe.com`).
    pub api_base: String,
}

impl StripeConfig {
    /// `None` unless `TIDEMARK_STRIPE_WEBHOOK_SECRET` is set: then the API key and at least
    /// one price are required too.
    pub fn read(vars: &Vars) -> Result<Option<Self>, ConfigError> {
        // Every setting is read whether or not Stripe is on, so a typo'd one is still seen.
        let api_key = vars.get("TIDEMARK_STRIPE_API_KEY");
        let prices = vars.get("TIDEMARK_STRIPE_PRICES").unwrap_or_default();
        let grace_days = vars.number("TIDEMARK_STRIPE_GRACE_DAYS", 7)?;
        let api_base = vars
            .url("TIDEMARK_STRIPE_API_BASE")?
            .unwrap_or_else(|| "https://api.stripe.com".to_owned());
        let Some(secrets) = vars.get("TIDEMARK_STRIPE_WEBHOOK_SECRET") else {
            return Ok(None);
        };
        let webhook_secrets: Vec<String> = secrets
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if webhook_secrets.iter().any(|s| !s.starts_with("whsec_")) {
            return Err(ConfigError::invalid(
                "TIDEMARK_STRIPE_WEBHOOK_SECRET",
                "expected the endpoint's signing secrets, whsec_…, separated by commas",
            ));
        }
        let api_key = api_key.ok_or_else(|| {
            ConfigError::invalid(
                "TIDEMARK_STRIPE_API_KEY",
                "required with TIDEMARK_STRIPE_WEBHOOK_SECRET: a restricted key that may read \
                 Checkout Sessions (rk_live_… or sk_…)",
            )
        })?;
        let prices = PriceMap::parse(&prices)
            .map_err(|why| ConfigError::invalid("TIDEMARK_STRIPE_PRICES", why))?;
        if prices.is_empty() {
            return Err(ConfigError::invalid(
                "TIDEMARK_STRIPE_PRICES",
                "required with TIDEMARK_STRIPE_WEBHOOK_SECRET: price_…=<tier>, separated by commas",
            ));
        }
        Ok(Some(Self {
            secrets: StripeSecrets {
                webhook_secrets,
                api_key,
            },
            prices,
            grace_days,
            api_base,
        }))
    }

    pub fn summary(&self) -> String {
        format!(
            "{} signing secret(s), grace {} days, API {}",
            self.secrets.webhook_secrets.len(),
            self.grace_days,
            self.api_base
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;

    #[test]
    fn stripe_needs_its_key_and_prices_and_never_shows_a_secret() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let err = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_STRIPE_WEBHOOK_SECRET", "whsec_abc"),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("TIDEMARK_STRIPE_API_KEY"), "{err}");
        let ok = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_STRIPE_WEBHOOK_SECRET", "whsec_abc, whsec_new"),
            ("TIDEMARK_STRIPE_API_KEY", "rk_test_zzz"),
            ("TIDEMARK_STRIPE_PRICES", "price_1=team"),
        ])
        .unwrap();
        let stripe = ok.stripe.as_ref().unwrap();
        assert_eq!(stripe.secrets.webhook_secrets.len(), 2);
        let shown = format!("{ok:?} {:?}", ok.summary());
        assert!(
            !shown.contains("whsec_abc") && !shown.contains("rk_test_zzz"),
            "{shown}"
        );
    }
}
