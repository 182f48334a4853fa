//! Reads remembered while their fingerprint holds: a cheap statement tells whether what was
//! read before is still what the store holds, so the costly read runs only after a change.
//! The fingerprint is taken before the read it vouches for, so a change in between is seen as
//! one next time. Per process, bounded in bytes, forgotten after a while unused; a change
//! made by any instance on the database shows in the next fingerprint.

use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use moka::sync::Cache;

/// A value read, with the fingerprint taken just before reading it.
pub struct Entry<F, V> {
    pub fingerprint: F,
    pub value: V,
}

impl<F, V> std::ops::Deref for Entry<F, V> {
    type Target = V;

    /// The value: a remembered read is used where it is, never copied out.
    fn deref(&self) -> &V {
        &self.value
    }
}

/// Values by key, each valid while its fingerprint is the store's.
pub struct Remembered<K, F, V> {
    cache: Cache<K, Arc<Entry<F, V>>>,
}

impl<K, F, V> Remembered<K, F, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    F: PartialEq + Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    /// At most `max_bytes` as `weigh` counts an entry (its key and value), each forgotten
    /// after `idle` without use.
    pub fn new(max_bytes: u64, idle: Duration, weigh: fn(&K, &V) -> usize) -> Self {
        let cache = Cache::builder()
            .max_capacity(max_bytes)
            .weigher(move |k: &K, e: &Arc<Entry<F, V>>| {
                u32::try_from(weigh(k, &e.value)).unwrap_or(u32::MAX)
            })
            .time_to_idle(idle)
            .build();
        Self { cache }
    }

    /// What is remembered under `key` when it was read under `fingerprint`; else `read()`,
    /// remembered with it.
    pub async fn get_or_read<E, Fut>(
        &self,
        key: K,
        fingerprint: F,
        read: impl FnOnce() -> Fut,
    ) -> Result<Arc<Entry<F, V>>, E>
    where
        Fut: Future<Output = Result<V, E>>,
    {
        if let Some(e) = self
            .cache
            .get(&key)
            .filter(|e| e.fingerprint == fingerprint)
        {
            return Ok(e);
        }
        let value = read().await?;
        let e = Arc::new(Entry { fingerprint, value });
        self.cache.insert(key, e.clone());
        Ok(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_value_is_read_again_only_when_its_fingerprint_changes() {
        let r: Remembered<&str, u32, String> =
            Remembered::new(1 << 20, Duration::from_secs(60), |k, v| k.len() + v.len());
        let reads = std::sync::atomic::AtomicUsize::new(0);
        let read = |v: &'static str| {
            reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { Ok::<_, ()>(v.to_string()) }
        };
        assert_eq!(
            r.get_or_read("p", 1, || read("a")).await.unwrap().value,
            "a"
        );
        assert_eq!(
            r.get_or_read("p", 1, || read("b")).await.unwrap().value,
            "a"
        );
        assert_eq!(
            r.get_or_read("p", 2, || read("c")).await.unwrap().value,
            "c"
        );
        assert_eq!(
            r.get_or_read("q", 2, || read("d")).await.unwrap().value,
            "d"
        );
        assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), 3);
        // A failed read leaves what was remembered as it was.
        let failed = r
            .get_or_read("p", 3, || async { Err::<String, _>(()) })
            .await;
        assert!(failed.is_err());
        assert_eq!(
            r.get_or_read("p", 2, || read("e")).await.unwrap().value,
            "c"
        );
    }
}
