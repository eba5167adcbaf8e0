//! Seats: which machine an activation is, and what a full licence tells the client.

use crate::signing::MachineFingerprint;
use crate::text::MachineName;

/// One machine: its fingerprint when the activation sent `X-Machine-Fingerprint`, else the
/// machine name it gave. Re-activating the same machine finds its seat.
pub fn machine_key(fingerprint: Option<&MachineFingerprint>, name: &MachineName) -> String {
    match fingerprint {
        Some(fp) => format!("fp:{}", fp.as_str()),
        None => format!("name:{}", name.as_str()),
    }
}

/// The `seat_limit_reached` message: the limit, and how to free a seat.
pub fn seat_limit_message(limit: u64) -> String {
    let seats = if limit == 1 { "seat is" } else { "seats are" };
    format!(
        "This license's {limit} {seats} all held by other machines. A machine that already \
         holds a seat activates again without a new one; to move the license to this machine, \
         ask the vendor's support to release a seat (its API keys stop working) or to raise the \
         limit."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_machine_is_its_fingerprint_else_its_name() {
        let name = MachineName::parse("ci-runner-3").unwrap();
        let fp = MachineFingerprint::parse("sha256:abc").unwrap();
        assert_eq!(machine_key(Some(&fp), &name), "fp:sha256:abc");
        assert_eq!(machine_key(None, &name), "name:ci-runner-3");
        assert!(seat_limit_message(1).contains("1 seat is all held"));
        assert!(seat_limit_message(3).contains("3 seats are all held"));
    }
}
