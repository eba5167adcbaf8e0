//! `validate` is the hottest read: every scanner calls it. A replica may answer it from
//! memory for a short time (default 2 s, `TIDEMARK_VALIDATION_CACHE_MS`), so operator changes
//! (suspend, extend, a new bundle) reach every scanner within that time. Nothing that
//! authorises a write is cached: activation, pushes and API keys always read the database.

use std::sync::Arc;
use std::time::Duration;

use moka::sync::Cache;
use tidemark_domain::secrets::LookupHash;
use tidemark_store::bundles::{latest_bundle, Bundle};
use tidemark_store::licenses::{find_license_by_lookup, License};
use tidemark_store::{Db, StoreError};

/// Bounds memory whatever hashes callers send (unknown ones are cached as "none").
const MAX_ENTRIES: u64 = 100_000;

pub struct ValidationCache {
    licenses: Option<Cache<String, Option<Arc<License>>>>,
    bundle: Option<Cache<(), Option<Arc<Bundle>>>>,
}

impl ValidationCache {
    pub fn new(ttl: Duration) -> Self {
        if ttl.is_zero() {
            return Self {
                licenses: None,
                bundle: None,
            };
        }
        Self {
            licenses: Some(
                Cache::builder()
                    .max_capacity(MAX_ENTRIES)
                    .time_to_live(ttl)
                    .build(),
            ),
            bundle: Some(Cache::builder().max_capacity(1).time_to_live(ttl).build()),
        }
    }

    pub async fn license(
        &self,
        db: &Db,
        lookup: &LookupHash,
    ) -> Result<Option<Arc<License>>, StoreError> {
        if let Some(hit) = self.licenses.as_ref().and_then(|c| c.get(lookup.as_str())) {
            return Ok(hit);
        }
        let found = find_license_by_lookup(db, lookup).await?.map(Arc::new);
        if let Some(cache) = &self.licenses {
            cache.insert(lookup.as_str().to_owned(), found.clone());
        }
        Ok(found)
    }

    pub async fn latest_bundle(&self, db: &Db) -> Result<Option<Arc<Bundle>>, StoreError> {
        if let Some(hit) = self.bundle.as_ref().and_then(|c| c.get(&())) {
            return Ok(hit);
        }
        let found = latest_bundle(db).await?.map(Arc::new);
        if let Some(cache) = &self.bundle {
            cache.insert((), found.clone());
        }
        Ok(found)
    }
}
