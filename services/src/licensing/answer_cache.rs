//! The cache in front of validation, the hottest read: every scanner calls it. A replica may
//! answer it from memory for a short time (default 2 s, `TIDEMARK_VALIDATION_CACHE_MS`), so
//! operator changes (suspend, extend, a new bundle) reach every scanner within that time. Nothing that
//! authorises a write is cached: activation, pushes and API keys always read the database.
//!
//! Within that window a whole answer is kept too, signed verdict included, keyed by licence
//! and machine: signing (Ed25519) and serialising cost several times what the rest of a
//! validation does, and a scanner fleet asks the same question many times a second.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use moka::sync::Cache;
use tidemark_domain::secrets::LookupHash;
use tidemark_store::bundles::{latest_bundle, Bundle};
use tidemark_store::licenses::{find_license_by_lookup, License};
use tidemark_store::{Db, StoreError};

/// Bounds memory whatever hashes callers send (unknown ones are cached as "none").
const MAX_ENTRIES: u64 = 100_000;

/// Bounds the memory of kept answers (about 1 KiB each), whatever machines callers name.
const MAX_ANSWER_BYTES: u64 = 8 * 1024 * 1024;

/// Which question an answer is for: a licence's lookup hash, and the machine named, if any.
pub type AnswerKey = (String, Option<String>);

/// A value as read from the database, possibly from memory, and when it was read.
#[derive(Debug, Clone)]
pub struct Read<T> {
    pub value: T,
    pub at: Instant,
}

pub struct ValidationCache {
    ttl: Duration,
    licenses: Option<Cache<String, Read<Option<Arc<License>>>>>,
    bundle: Option<Cache<(), Read<Option<Arc<Bundle>>>>>,
    /// Each answer with the end of its life: the window after the oldest read it was built
    /// from, not after it was built.
    answers: Option<Cache<AnswerKey, (Instant, Bytes)>>,
}

impl ValidationCache {
    pub fn new(ttl: Duration) -> Self {
        if ttl.is_zero() {
            return Self {
                ttl,
                licenses: None,
                bundle: None,
                answers: None,
            };
        }
        Self {
            ttl,
            licenses: Some(
                Cache::builder()
                    .max_capacity(MAX_ENTRIES)
                    .time_to_live(ttl)
                    .build(),
            ),
            bundle: Some(Cache::builder().max_capacity(1).time_to_live(ttl).build()),
            answers: Some(
                Cache::builder()
                    .max_capacity(MAX_ANSWER_BYTES)
                    .weigher(
                        |(lookup, machine): &AnswerKey, (_, body): &(Instant, Bytes)| {
                            let size = lookup.len() + machine.as_ref().map_or(0, String::len);
                            u32::try_from(size + body.len()).unwrap_or(u32::MAX)
                        },
                    )
                    .time_to_live(ttl)
                    .build(),
            ),
        }
    }

    /// The serialised answer given to the same question within the window, if any.
    pub fn answer(&self, key: &AnswerKey) -> Option<Bytes> {
        let (until, body) = self.answers.as_ref()?.get(key)?;
        (Instant::now() < until).then_some(body)
    }

    /// Keeps `body` as the answer to `key` until the window after `oldest_read` (the oldest
    /// read it was built from) ends, so an operator's change shows within the window whether
    /// the answer was kept or not.
    pub fn remember_answer(&self, key: AnswerKey, body: Bytes, oldest_read: Instant) {
        if let Some(cache) = &self.answers {
            cache.insert(key, (oldest_read + self.ttl, body));
        }
    }

    pub async fn license(
        &self,
        db: &Db,
        lookup: &LookupHash,
    ) -> Result<Read<Option<Arc<License>>>, StoreError> {
        if let Some(hit) = self.licenses.as_ref().and_then(|c| c.get(lookup.as_str())) {
            return Ok(hit);
        }
        let at = Instant::now();
        let found = Read {
            value: find_license_by_lookup(db, lookup).await?.map(Arc::new),
            at,
        };
        if let Some(cache) = &self.licenses {
            cache.insert(lookup.as_str().to_owned(), found.clone());
        }
        Ok(found)
    }

    pub async fn latest_bundle(&self, db: &Db) -> Result<Read<Option<Arc<Bundle>>>, StoreError> {
        if let Some(hit) = self.bundle.as_ref().and_then(|c| c.get(&())) {
            return Ok(hit);
        }
        let at = Instant::now();
        let found = Read {
            value: latest_bundle(db).await?.map(Arc::new),
            at,
        };
        if let Some(cache) = &self.bundle {
            cache.insert((), found.clone());
        }
        Ok(found)
    }
}
