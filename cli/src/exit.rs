//! The exit statuses, by class, so a CI step can tell "fix the key" from "try again later".

pub const OK: u8 = 0;
/// Anything not below: a bad push body, a file that cannot be read, a refused push
/// (`422`, `409`…), an answer the client does not understand.
pub const FAILURE: u8 = 1;
/// Authentication or license: not activated, unlicensed, the API key or the license
/// refused (`401`, `403`, `404 license_not_found`).
pub const AUTH: u8 = 2;
/// `--fail-on-regression` saw the score drop, or `--fail-on-gate` a failed quality gate.
pub const VERDICT: u8 = 3;
/// The service could not be reached, after the retries (connection failure, timeout,
/// 5xx), or its TLS certificate is not trusted (not retried).
pub const NETWORK: u8 = 4;
/// Still rate limited (`429`), busy (`503 server_busy`), or the service's database
/// unavailable or its storage full (`503 database_unavailable`, `507 storage_full`) after
/// the retries: the service is there and will be back; run the job again later.
pub const THROTTLED: u8 = 5;
/// The command line itself is wrong (sysexits' EX_USAGE).
pub const USAGE: u8 = 64;
