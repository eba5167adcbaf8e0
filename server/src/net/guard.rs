//! Outbound requests a tenant names (webhook endpoints, CI token issuers) resolve through
//! this guard, which refuses any host with an address the server must not reach on a
//! tenant's say-so.

use std::net::SocketAddr;

use tidemark_domain::webhook::is_forbidden_ip;

use super::dns::DnsVerifier;

/// Resolves webhook (and CI token issuer) hosts, refusing any name with an address the server
/// must not reach on a tenant's say-so.
pub struct GuardedResolver {
    pub dns: DnsVerifier,
    pub allow_private: bool,
    /// The setting that lifts the rule, named in the refusal.
    pub lifted_by: &'static str,
    /// Hosts resolved without the rule: the operator's own proxy.
    pub exempt: Vec<String>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let dns = self.dns.clone();
        let allow_private = self.allow_private;
        let lifted_by = self.lifted_by;
        let allow_private = allow_private || self.exempt.iter().any(|h| h == name.as_str());
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs = dns.lookup_ip(&host).await?;
            if addrs.is_empty() {
                return Err(format!("{host} has no address").into());
            }
            if !allow_private && addrs.iter().any(|ip| is_forbidden_ip(*ip)) {
                return Err(format!(
                    "{host} resolves to a loopback, private or link-local address; only public \
                     addresses are reached ({lifted_by}=1 allows others)"
                )
                .into());
            }
            let addrs: reqwest::dns::Addrs =
                Box::new(addrs.into_iter().map(|ip| SocketAddr::new(ip, 0)));
            Ok(addrs)
        })
    }
}
