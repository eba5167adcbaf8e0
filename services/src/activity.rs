//! Counting each licence's use (validations, pushes, the client each machine validates with)
//! without a write per request: a replica counts in memory and a worker adds the counts to
//! the database once a minute ([`Activity::take`], `tidemark_store::activity::add`). Counting
//! is a lock and a map update on the request's path; validations answered from the cache are
//! counted too.

use std::collections::HashMap;
use std::sync::Mutex;

use tidemark_domain::client_version::{day_of, ClientVersion};
use tidemark_domain::Millis;
use tidemark_store::activity::Counted;
use tidemark_store::AccountId;

/// Distinct keys kept between flushes at most (a flood of made-up keys cannot grow memory;
/// past it, new keys wait for the next minute and existing ones still count).
const MAX_KEYS: usize = 100_000;

#[derive(Default)]
struct Tally {
    /// By lookup hash, then day: a validation of a licence already counted allocates nothing.
    validations: HashMap<String, HashMap<Millis, i64>>,
    pushes: HashMap<(AccountId, Millis), i64>,
    clients: HashMap<(String, String), String>,
}

#[derive(Default)]
pub struct Activity {
    tally: Mutex<Tally>,
}

fn bump<K: std::hash::Hash + Eq>(map: &mut HashMap<K, i64>, key: K) {
    if map.len() < MAX_KEYS || map.contains_key(&key) {
        *map.entry(key).or_insert(0) += 1;
    }
}

impl Activity {
    /// A validation of the licence with this lookup hash at `at`, from `machine_key`
    /// (`fp:<fingerprint>`) with `client`, when it said.
    pub fn validated(
        &self,
        lookup: &str,
        machine_key: Option<String>,
        client: Option<ClientVersion>,
        at: Millis,
    ) {
        let Ok(mut guard) = self.tally.lock() else {
            return;
        };
        let tally = &mut *guard;
        let day = day_of(at);
        if let Some(days) = tally.validations.get_mut(lookup) {
            *days.entry(day).or_insert(0) += 1;
        } else if tally.validations.len() < MAX_KEYS {
            tally
                .validations
                .insert(lookup.to_owned(), HashMap::from([(day, 1)]));
        }
        if let (Some(machine), Some(client)) = (machine_key, client) {
            let key = (lookup.to_owned(), machine);
            let known = tally.clients.get(&key).map(String::as_str);
            if known != Some(client.as_str()) && (tally.clients.len() < MAX_KEYS || known.is_some())
            {
                tally.clients.insert(key, client.as_str().to_owned());
            }
        }
    }

    /// A push accepted for `account` at `at`.
    pub fn pushed(&self, account: &AccountId, at: Millis) {
        let Ok(mut tally) = self.tally.lock() else {
            return;
        };
        bump(&mut tally.pushes, (account.clone(), day_of(at)));
    }

    /// Everything counted since the last call.
    pub fn take(&self) -> Counted {
        let Ok(mut tally) = self.tally.lock() else {
            return Counted::default();
        };
        let tally = std::mem::take(&mut *tally);
        Counted {
            validations: tally
                .validations
                .into_iter()
                .flat_map(|(lookup, days)| {
                    days.into_iter()
                        .map(move |(day, n)| (lookup.clone(), day, n))
                })
                .collect(),
            pushes: tally
                .pushes
                .into_iter()
                .map(|((account, day), n)| (account, day, n))
                .collect(),
            clients: tally
                .clients
                .into_iter()
                .map(|((lookup, machine), client)| (lookup, machine, client))
                .collect(),
        }
    }

    /// Puts counts back that could not be written (the database was away), so a flush that
    /// fails loses nothing.
    pub fn restore(&self, counted: Counted) {
        let Ok(mut tally) = self.tally.lock() else {
            return;
        };
        for (lookup, day, n) in counted.validations {
            *tally
                .validations
                .entry(lookup)
                .or_default()
                .entry(day)
                .or_insert(0) += n;
        }
        for (account, day, n) in counted.pushes {
            *tally.pushes.entry((account, day)).or_insert(0) += n;
        }
        for (lookup, machine, client) in counted.clients {
            tally.clients.entry((lookup, machine)).or_insert(client);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tidemark_domain::time::DAY_MS;

    #[test]
    fn counts_add_up_per_day_and_a_failed_flush_loses_none() {
        let activity = Activity::default();
        let client = ClientVersion::from_user_agent("tidemark-cli/1.4.2");
        activity.validated("h1", Some("fp:a".into()), client.clone(), 10);
        activity.validated("h1", None, None, 20);
        activity.validated("h1", None, None, DAY_MS + 1);
        let account = AccountId::trusted("acct_1");
        activity.pushed(&account, 30);
        let mut taken = activity.take();
        taken.validations.sort();
        assert_eq!(
            taken.validations,
            vec![("h1".into(), 0, 2), ("h1".into(), DAY_MS, 1)]
        );
        assert_eq!(taken.pushes, vec![(account.clone(), 0, 1)]);
        assert_eq!(
            taken.clients,
            vec![("h1".into(), "fp:a".into(), "tidemark-cli/1.4.2".into())]
        );
        assert!(activity.take().is_empty(), "taken once");

        activity.pushed(&account, 40);
        activity.restore(taken);
        let again = activity.take();
        assert_eq!(again.pushes, vec![(account, 0, 2)]);
        assert_eq!(again.validations.iter().map(|v| v.2).sum::<i64>(), 3);
    }
}
