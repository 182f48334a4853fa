//! Read-your-writes across replicas and cluster members, with Neo4j bookmarks. A bookmark
//! names a committed transaction; a read sent with it is answered only once the member
//! serving it has applied that transaction. A request runs in a [`scope`]: the bookmarks it
//! came with ([`Bookmarks::parse`], from the `X-Cairn-Bookmark` header) go with each of its
//! reads ([`follow`]), and the bookmarks of the writes it committed ([`record`]) are handed
//! back for its answer. Outside a scope (background jobs, the CLI) reads follow nothing and
//! writes record nothing.

use std::sync::Mutex;

use neo4rs::Query;

/// Where bookmarks travel, both ways: the HTTP header, named as the field at fault.
pub const FIELD: &str = "X-Cairn-Bookmark";

/// At most this many bookmarks in one header.
pub const MAX_BOOKMARKS: usize = 16;
/// At most this many characters in one bookmark.
pub const MAX_BOOKMARK_CHARS: usize = 256;
/// At most this many bytes in the whole header.
pub const MAX_HEADER_BYTES: usize = 4096;

/// Bookmarks as a client hands them back: opaque to it, shaped as Neo4j (4 and 5) issues
/// them — `FB:` then base64 (`A-Z a-z 0-9 + / =`), at most [`MAX_BOOKMARK_CHARS`] characters
/// in all — separated by commas, at most [`MAX_BOOKMARKS`] of them in at most
/// [`MAX_HEADER_BYTES`] bytes. (Neo4j refuses most other shapes, but ignores some, such as a
/// bare word, which would then be followed by nothing: cairn refuses them all.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bookmarks(Vec<String>);

/// Why a header is not a list of bookmarks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadBookmarks {
    #[error("longer than {MAX_HEADER_BYTES} bytes")]
    TooLong,
    #[error("more than {MAX_BOOKMARKS} bookmarks")]
    TooMany,
    #[error("an empty bookmark between commas")]
    Empty,
    #[error("a bookmark longer than {MAX_BOOKMARK_CHARS} characters")]
    BookmarkTooLong,
    #[error("a bookmark that is not `FB:` followed by base64")]
    Shape,
}

impl Bookmarks {
    /// The bookmarks in `header` (values of repeated headers joined with commas).
    pub fn parse(header: &str) -> Result<Self, BadBookmarks> {
        if header.len() > MAX_HEADER_BYTES {
            return Err(BadBookmarks::TooLong);
        }
        let mut out: Vec<String> = Vec::new();
        for part in header.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(BadBookmarks::Empty);
            }
            if part.len() > MAX_BOOKMARK_CHARS {
                return Err(BadBookmarks::BookmarkTooLong);
            }
            let base64 = |b: u8| b.is_ascii_alphanumeric() || b"+/=".contains(&b);
            match part.strip_prefix("FB:") {
                Some(body) if !body.is_empty() && body.bytes().all(base64) => {}
                _ => return Err(BadBookmarks::Shape),
            }
            if !out.iter().any(|b| b == part) {
                out.push(part.to_string());
            }
        }
        if out.len() > MAX_BOOKMARKS {
            return Err(BadBookmarks::TooMany);
        }
        Ok(Self(out))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    /// The header value: the bookmarks joined with `, `.
    pub fn header_value(&self) -> String {
        self.0.join(", ")
    }

    /// Adds `bookmark` unless it is there; past [`MAX_BOOKMARKS`] the oldest goes (a later
    /// transaction's bookmark implies the earlier ones of the same database).
    fn add(&mut self, bookmark: &str) {
        if self.0.iter().any(|b| b == bookmark) {
            return;
        }
        if self.0.len() == MAX_BOOKMARKS {
            self.0.remove(0);
        }
        self.0.push(bookmark.to_string());
    }
}

struct Causal {
    after: Bookmarks,
    made: Mutex<Bookmarks>,
}

tokio::task_local! {
    static CAUSAL: Causal;
}

/// Runs `fut` as a request that read after `after`; returns its output and the bookmarks of
/// the writes it committed.
pub async fn scope<F: std::future::Future>(after: Bookmarks, fut: F) -> (F::Output, Bookmarks) {
    let causal = Causal {
        after,
        made: Mutex::default(),
    };
    CAUSAL
        .scope(causal, async move {
            let out = fut.await;
            let made =
                CAUSAL.with(|c| std::mem::take(&mut *c.made.lock().expect("bookmarks lock")));
            (out, made)
        })
        .await
}

/// Notes that the current request committed the transaction `bookmark` names.
pub fn record(bookmark: &str) {
    let _ = CAUSAL.try_with(|c| c.made.lock().expect("bookmarks lock").add(bookmark));
}

/// `q`, to be answered only after the current request's bookmarks (none outside a request,
/// or when it came with none): they travel in the statement's `bookmarks` field.
pub fn follow(q: Query) -> Query {
    let after = CAUSAL
        .try_with(|c| (!c.after.is_empty()).then(|| c.after.as_slice().to_vec()))
        .ok()
        .flatten();
    match after {
        Some(list) => q.extra("bookmarks", list),
        None => q,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bookmarks_are_parsed_once_by_their_rules() {
        let b = Bookmarks::parse(
            "FB:kcwQ9vYF5wN+TCaprZQJITJbQnaQ, FB:abc/=,FB:kcwQ9vYF5wN+TCaprZQJITJbQnaQ",
        )
        .unwrap();
        assert_eq!(
            b.as_slice(),
            ["FB:kcwQ9vYF5wN+TCaprZQJITJbQnaQ", "FB:abc/="]
        );
        assert_eq!(
            b.header_value(),
            "FB:kcwQ9vYF5wN+TCaprZQJITJbQnaQ, FB:abc/="
        );
        assert_eq!(Bookmarks::parse(""), Err(BadBookmarks::Empty));
        assert_eq!(Bookmarks::parse("FB:a,,FB:b"), Err(BadBookmarks::Empty));
        for shape in [
            "FB:a b", "<script>", "abc", "FB:", "fb:abc", "FB:a-b", "xyz:1",
        ] {
            assert_eq!(Bookmarks::parse(shape), Err(BadBookmarks::Shape), "{shape}");
        }
        let long = |n: usize| format!("FB:{}", "a".repeat(n - 3));
        assert_eq!(
            Bookmarks::parse(&long(MAX_BOOKMARK_CHARS + 1)),
            Err(BadBookmarks::BookmarkTooLong)
        );
        assert!(Bookmarks::parse(&long(MAX_BOOKMARK_CHARS)).is_ok());
        let many: Vec<String> = (0..=MAX_BOOKMARKS).map(|i| format!("FB:b{i}")).collect();
        assert_eq!(
            Bookmarks::parse(&many.join(",")),
            Err(BadBookmarks::TooMany)
        );
        assert!(Bookmarks::parse(&many[1..].join(",")).is_ok());
        assert_eq!(
            Bookmarks::parse(&"FB:a,".repeat(MAX_HEADER_BYTES / 5 + 1)),
            Err(BadBookmarks::TooLong)
        );
    }

    #[tokio::test]
    async fn a_scope_hands_back_what_its_writes_recorded_and_nothing_leaks_outside() {
        record("outside");
        let after = Bookmarks::parse("FB:x").unwrap();
        let (followed, made) = scope(after, async {
            record("FB:one");
            record("FB:two");
            record("FB:one");
            follow(neo4rs::query("RETURN 1"))
        })
        .await;
        assert_eq!(made.as_slice(), ["FB:one", "FB:two"]);
        assert!(followed.has_extra_key("bookmarks"));
        assert!(!follow(neo4rs::query("RETURN 1")).has_extra_key("bookmarks"));
        let (_, made) = scope(Bookmarks::default(), async {}).await;
        assert!(made.is_empty());
    }

    #[test]
    fn past_the_limit_the_oldest_bookmark_goes() {
        let mut b = Bookmarks::default();
        for i in 0..=MAX_BOOKMARKS {
            b.add(&format!("b{i}"));
        }
        assert_eq!(b.as_slice().len(), MAX_BOOKMARKS);
        assert_eq!(b.as_slice()[0], "b1");
    }
}
