//! The server's DNS resolver: TXT records (the proof that an account owns the e-mail domain
//! it claims for SAML, `_tidemark-challenge.<domain>`; the rules are `tidemark_domain::sso`,
//! the use case `tidemark_services::sso`) and the addresses of outbound hosts.

use std::time::Duration;

use hickory_resolver::config::{NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RData;
use hickory_resolver::TokioResolver;
use tidemark_domain::sso::TxtAnswer;

/// A look-up gives up after this long: "Verify now" must answer the admin promptly.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(3);

/// Looks up TXT records, through one configured nameserver or the system's resolvers.
#[derive(Clone)]
pub struct DnsVerifier {
    /// `None` when no nameserver is configured and the system's could not be read: every
    /// look-up then fails with a message that says so (the rest of the server runs on).
    resolver: Option<TokioResolver>,
}

impl std::fmt::Debug for DnsVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DnsVerifier").finish_non_exhaustive()
    }
}

impl DnsVerifier {
    /// `nameserver`: `TIDEMARK_DNS_RESOLVER`, else `/etc/resolv.conf`.
    pub fn new(nameserver: Option<std::net::SocketAddr>) -> anyhow::Result<Self> {
        let provider = TokioRuntimeProvider::default();
        let mut builder = match nameserver {
            Some(addr) => {
                let mut server = NameServerConfig::udp_and_tcp(addr.ip());
                for connection in &mut server.connections {
                    connection.port = addr.port();
                }
                TokioResolver::builder_with_config(
                    ResolverConfig::from_parts(None, vec![], vec![server]),
                    provider,
                )
            }
            None => match TokioResolver::builder(provider) {
                Ok(builder) => builder,
                Err(err) => {
                    tracing::warn!(%err, "no system DNS configuration: SSO domains cannot be verified until TIDEMARK_DNS_RESOLVER is set");
                    return Ok(Self { resolver: None });
                }
            },
        };
        let options = builder.options_mut();
        options.timeout = LOOKUP_TIMEOUT;
        options.attempts = 1;
        // An admin who has just published the record must not be told an old answer.
        options.cache_size = 0;
        Ok(Self {
            resolver: Some(builder.build()?),
        })
    }

    /// The TXT strings at `name` (a fully qualified name is looked up as given).
    pub async fn lookup_txt(&self, name: &str) -> TxtAnswer {
        let Some(resolver) = &self.resolver else {
            return TxtAnswer::LookupFailed(
                "this server has no DNS resolver configured; its operator sets \
                 TIDEMARK_DNS_RESOLVER"
                    .into(),
            );
        };
        let fqdn = format!("{}.", name.trim_end_matches('.'));
        match resolver.txt_lookup(fqdn).await {
            Ok(lookup) => {
                let values: Vec<String> = lookup
                    .answers()
                    .iter()
                    .filter_map(|record| match &record.data {
                        // A record's character-strings form one value (RFC 7208 §3.3).
                        RData::TXT(txt) => Some(
                            txt.txt_data
                                .iter()
                                .map(|part| String::from_utf8_lossy(part))
                                .collect::<String>(),
                        ),
                        _ => None,
                    })
                    .collect();
                if values.is_empty() {
                    TxtAnswer::NoRecords
                } else {
                    TxtAnswer::Records(values)
                }
            }
            Err(err) if err.is_nx_domain() => TxtAnswer::NxDomain,
            Err(err) if err.is_no_records_found() => TxtAnswer::NoRecords,
            Err(err) => TxtAnswer::LookupFailed(err.to_string()),
        }
    }
}

impl DnsVerifier {
    /// The addresses of `host` (an IP literal is itself), for the webhook sender.
    pub async fn lookup_ip(&self, host: &str) -> Result<Vec<std::net::IpAddr>, String> {
        if let Ok(ip) = host.trim_matches(['[', ']']).parse::<std::net::IpAddr>() {
            return Ok(vec![ip]);
        }
        match &self.resolver {
            Some(resolver) => {
                let fqdn = format!("{}.", host.trim_end_matches('.'));
                match resolver.lookup_ip(fqdn).await {
                    Ok(lookup) => Ok(lookup.iter().collect()),
                    Err(err) if err.is_nx_domain() || err.is_no_records_found() => {
                        Err(format!("{host} has no address"))
                    }
                    Err(err) => Err(format!("could not resolve {host}: {err}")),
                }
            }
            // No resolver configuration: the system's own look-up.
            None => tokio::net::lookup_host((host, 0))
                .await
                .map(|addrs| addrs.map(|a| a.ip()).collect())
                .map_err(|err| format!("could not resolve {host}: {err}")),
        }
    }
}

#[async_trait::async_trait]
impl tidemark_services::ports::TxtLookup for DnsVerifier {
    async fn lookup_txt(&self, name: &str) -> TxtAnswer {
        DnsVerifier::lookup_txt(self, name).await
    }
}
