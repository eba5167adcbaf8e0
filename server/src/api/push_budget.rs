//! How many push body bytes this replica holds at once. A push reserves its size (its
//! `Content-Length`, or the 16 MiB maximum when it does not say) before a byte of its body is
//! read, and gives it back when its write has finished. Past the budget, a push is answered
//! `503 server_busy` with `Retry-After` at once, so memory stays bounded whatever arrives;
//! one account may hold at most half the budget, so a flood from one account leaves room for
//! the others' pushes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tidemark_domain::push::MAX_BODY_BYTES;

pub struct PushBudget {
    total: u64,
    per_account: u64,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    total: u64,
    by_account: HashMap<String, u64>,
}

/// Why a reservation was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Busy {
    /// Every byte of the replica's budget is reserved.
    Replica,
    /// This account already holds its share.
    Account,
}

/// Bytes reserved for one push; returned when dropped.
pub struct Reservation {
    budget: Arc<PushBudget>,
    account: String,
    bytes: u64,
}

impl PushBudget {
    /// `total` is at least one push of the largest size, so any push fits when nothing else
    /// is in flight; an account's share is half, but never less than one such push.
    pub fn new(total: u64) -> Arc<Self> {
        let max = MAX_BODY_BYTES as u64;
        let total = total.max(max);
        Arc::new(PushBudget {
            total,
            per_account: (total / 2).max(max),
            held: Mutex::new(Held::default()),
        })
    }

    /// Reserves `bytes` for `account`, or says why not. Never waits.
    pub fn reserve(self: &Arc<Self>, account: &str, bytes: u64) -> Result<Reservation, Busy> {
        let bytes = bytes.min(MAX_BODY_BYTES as u64);
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.total + bytes > self.total {
            return Err(Busy::Replica);
        }
        let mine = held.by_account.get(account).copied().unwrap_or(0);
        if mine + bytes > self.per_account {
            return Err(Busy::Account);
        }
        held.total += bytes;
        held.by_account.insert(account.to_owned(), mine + bytes);
        Ok(Reservation {
            budget: self.clone(),
            account: account.to_owned(),
            bytes,
        })
    }

    /// Bytes reserved now (for metrics and tests).
    pub fn in_flight(&self) -> u64 {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).total
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut held = self.budget.held.lock().unwrap_or_else(|e| e.into_inner());
        held.total -= self.bytes;
        if let Some(mine) = held.by_account.get_mut(&self.account) {
            *mine -= self.bytes;
            if *mine == 0 {
                held.by_account.remove(&self.account);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn the_budget_bounds_the_replica_and_each_account() {
        let budget = PushBudget::new(64 * MIB);
        let a1 = budget.reserve("a", 16 * MIB).unwrap();
        let a2 = budget.reserve("a", 16 * MIB).unwrap();
        // Account a holds its half.
        assert_eq!(budget.reserve("a", 1).err(), Some(Busy::Account));
        let b1 = budget.reserve("b", 16 * MIB).unwrap();
        let b2 = budget.reserve("b", 16 * MIB).unwrap();
        assert_eq!(budget.reserve("c", 1).err(), Some(Busy::Replica));
        drop(a1);
        let c = budget.reserve("c", 10 * MIB).unwrap();
        assert_eq!(budget.in_flight(), 58 * MIB);
        drop((a2, b1, b2, c));
        assert_eq!(budget.in_flight(), 0);
        assert!(budget.held.lock().unwrap().by_account.is_empty());
    }

    #[test]
    fn a_push_of_the_largest_size_always_fits_an_idle_replica() {
        let budget = PushBudget::new(MIB);
        let r = budget.reserve("a", u64::MAX).unwrap();
        assert_eq!(r.bytes, MAX_BODY_BYTES as u64);
        assert_eq!(budget.reserve("b", 1).err(), Some(Busy::Replica));
    }
}
