//! This machine's fingerprint, bound into verdicts so that a cache or licence file copied to
//! another machine is refused there. Derived from the OS's machine id (one-way, so the id
//! itself is not sent); `TIDEMARK_MACHINE_FINGERPRINT` overrides it (containers whose id
//! changes on every start can set a stable one). It is an identifier, not a secret.

use sha2::{Digest as _, Sha256};

use crate::env::Env;

const MACHINE_ID_FILES: [&str; 2] = ["/etc/machine-id", "/var/lib/dbus/machine-id"];

pub fn fingerprint(env: &Env) -> String {
    if let Some(given) = env.var("TIDEMARK_MACHINE_FINGERPRINT") {
        return given;
    }
    let id = MACHINE_ID_FILES
        .iter()
        .find_map(|f| std::fs::read_to_string(f).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .or_else(|| env.var("HOSTNAME"))
        .unwrap_or_else(|| "unknown-machine".to_owned());
    let digest = Sha256::digest(format!("tidemark-machine:{id}").as_bytes());
    format!("sha256:{}", &hex::encode(digest)[..32])
}
