//! Webhook deliveries: where they may go, how long a receiver has, how retries are paced.

use super::{ConfigError, Vars};

#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// Webhooks may go to loopback, private and link-local addresses
    /// (`TIDEMARK_WEBHOOK_ALLOW_PRIVATE=1`): for a receiver on the operator's own network,
    /// and for tests. Off by default, so a webhook URL cannot reach into that network.
    pub allow_private: bool,
    /// The pause before a failed webhook delivery's first retry, in milliseconds
    /// (`TIDEMARK_WEBHOOK_RETRY_BASE_MS`, default 10 000); each next pause is three times
    /// longer, at most four hours, for at least a day.
    pub retry_base_ms: u32,
    /// How long a webhook receiver has to answer (`TIDEMARK_WEBHOOK_TIMEOUT_SECONDS`,
    /// default 10, at most 30).
    pub timeout_seconds: u32,
}

impl WebhookConfig {
    pub fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(Self {
            allow_private: vars.flag("TIDEMARK_WEBHOOK_ALLOW_PRIVATE")?,
            retry_base_ms: vars.number("TIDEMARK_WEBHOOK_RETRY_BASE_MS", 10_000)?,
            timeout_seconds: vars.seconds_at_most(
                "TIDEMARK_WEBHOOK_TIMEOUT_SECONDS",
                10,
                30,
                "",
            )?,
        })
    }

    pub fn summary(&self) -> String {
        format!(
            "receivers answer within {} s, first retry after {} ms{}",
            self.timeout_seconds,
            self.retry_base_ms,
            if self.allow_private {
                ", private addresses allowed"
            } else {
                ""
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;

    #[test]
    fn a_receiver_has_at_most_thirty_seconds() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let err = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_WEBHOOK_TIMEOUT_SECONDS", "31"),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("at most 30 seconds, got 31"), "{err}");
        let c = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_WEBHOOK_ALLOW_PRIVATE", "1"),
        ])
        .unwrap();
        assert!(c.webhooks.allow_private && c.webhooks.timeout_seconds == 10);
        assert!(c.webhooks.summary().ends_with("private addresses allowed"));
    }
}
