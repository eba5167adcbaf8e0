//! How much one account, client address or replica may ask of the server, and for how long a
//! replica may answer from memory.

use super::{ConfigError, Vars};

#[derive(Debug, Clone)]
pub struct Limits {
    /// Dashboard writes (appended scans) per rolling minute per account.
    pub writes_per_minute: u32,
    /// Resend requests per rolling minute per source IP before a ban.
    pub resend_per_minute: u32,
    pub resend_ban_seconds: u32,
    /// License mails one address receives per hour at most (`TIDEMARK_RESEND_PER_RECIPIENT_PER_HOUR`);
    /// further requests are answered alike and dropped at delivery.
    pub resend_per_recipient_per_hour: u32,
    /// Sign-in steps (`POST /auth/signin`, the SAML ACS) per rolling minute per client address
    /// (`TIDEMARK_SIGNIN_PER_MINUTE`); over it, the address is refused for a minute.
    pub signin_per_minute: u32,
    /// SCIM requests per rolling minute per account token (`TIDEMARK_SCIM_PER_MINUTE`),
    /// shared by replicas; over it, `429` with `Retry-After`.
    pub scim_per_minute: u32,
    /// Admin API calls per rolling minute per vendor token (`TIDEMARK_ADMIN_PER_MINUTE`),
    /// shared by replicas; over it, `429` with `Retry-After`.
    pub admin_per_minute: u32,
    /// Days a seat may go unseen (no activation, no use of its keys) before housekeeping
    /// frees it (`TIDEMARK_SEAT_RELEASE_AFTER_DAYS`); 0 never frees one.
    pub seat_release_after_days: u32,
    /// Seats a new licence of a tier gets when its maker names none
    /// (`TIDEMARK_DEFAULT_SEATS`, `team=3,agency=10`; a tier not named: unlimited).
    pub default_seats: tidemark_domain::seats::SeatDefaults,
    /// Push body bytes, in MiB, this replica holds at once (`TIDEMARK_PUSH_BUDGET_MIB`); past
    /// it pushes are answered `503 server_busy`. At least 16 (one push of the largest size).
    pub push_budget_mib: u32,
    /// How long a replica may answer `validate` from memory; 0 turns the cache off.
    pub validation_cache_ms: u32,
}

impl Limits {
    pub fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let push_budget_mib = vars.number("TIDEMARK_PUSH_BUDGET_MIB", 64)?;
        if push_budget_mib < 16 {
            return Err(ConfigError::invalid(
                "TIDEMARK_PUSH_BUDGET_MIB",
                format!("at least 16 (one push may be 16 MiB), got {push_budget_mib}"),
            ));
        }
        // Unlike the other numbers, 0 is meaningful here: no cache.
        let validation_cache_ms = match vars.get("TIDEMARK_VALIDATION_CACHE_MS") {
            None => 2000,
            Some(text) => text.trim().parse::<u32>().map_err(|_| {
                ConfigError::invalid(
                    "TIDEMARK_VALIDATION_CACHE_MS",
                    format!("expected milliseconds (0 turns the cache off), got {text:?}"),
                )
            })?,
        };
        Ok(Self {
            writes_per_minute: vars.number("TIDEMARK_WRITES_PER_MINUTE", 5)?,
            resend_per_minute: vars.number("TIDEMARK_RESEND_PER_MINUTE", 3)?,
            resend_ban_seconds: vars.number("TIDEMARK_RESEND_BAN_SECONDS", 900)?,
            resend_per_recipient_per_hour: vars
                .number("TIDEMARK_RESEND_PER_RECIPIENT_PER_HOUR", 3)?,
            signin_per_minute: vars.number("TIDEMARK_SIGNIN_PER_MINUTE", 60)?,
            scim_per_minute: vars.number("TIDEMARK_SCIM_PER_MINUTE", 600)?,
            admin_per_minute: vars.number("TIDEMARK_ADMIN_PER_MINUTE", 600)?,
            seat_release_after_days: match vars.get("TIDEMARK_SEAT_RELEASE_AFTER_DAYS") {
                None => 30,
                // 0 is meaningful: seats are never freed by time.
                Some(text) => text.trim().parse::<u32>().map_err(|_| {
                    ConfigError::invalid(
                        "TIDEMARK_SEAT_RELEASE_AFTER_DAYS",
                        format!("expected whole days (0: never), got {text:?}"),
                    )
                })?,
            },
            default_seats: tidemark_domain::seats::SeatDefaults::parse(
                &vars.get("TIDEMARK_DEFAULT_SEATS").unwrap_or_default(),
            )
            .map_err(|why| ConfigError::invalid("TIDEMARK_DEFAULT_SEATS", why))?,
            push_budget_mib,
            validation_cache_ms,
        })
    }

    pub fn summary(&self) -> String {
        format!(
            "{} dashboard writes/min per account, {} sign-in steps/min and {} resends/min per \
             address, {} SCIM and {} admin API requests/min per token, {} MiB of pushes at once, validate \
             cached {} ms, {}",
            self.writes_per_minute,
            self.signin_per_minute,
            self.resend_per_minute,
            self.scim_per_minute,
            self.admin_per_minute,
            self.push_budget_mib,
            self.validation_cache_ms,
            self.default_seats.describe()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;

    #[test]
    fn defaults_and_the_cache_that_zero_turns_off() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().to_str().unwrap();
        let c = config(&[("TIDEMARK_DATA_DIR", data)]).unwrap();
        let l = &c.limits;
        assert_eq!(
            (
                l.writes_per_minute,
                l.resend_per_minute,
                l.resend_ban_seconds
            ),
            (5, 3, 900)
        );
        let off = config(&[
            ("TIDEMARK_DATA_DIR", data),
            ("TIDEMARK_VALIDATION_CACHE_MS", "0"),
        ])
        .unwrap();
        assert_eq!(off.limits.validation_cache_ms, 0);
        assert!(off
            .limits
            .summary()
            .ends_with("validate cached 0 ms, unlimited seats by default"));
    }
}
