//! A list as the server wrote it ([`Client::list_raw`]): each page's text
//! where it arrived and where each item lies in it, every item checked to
//! parse, none kept parsed. For a caller that passes a list on (the
//! gateway writes each item under its own name), a page of thousands of
//! entries then costs its text and not its parsed form, which is two to
//! four times larger (`switchboard-hub`'s `tests/gateway_list_memory.rs`).

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::ops::Range;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use switchboard_types::PaginatedRequestParams;
use switchboard_types::request::{Paginated, Request};

use super::Client;
use super::send::parse_result;
use crate::engine::RawResult;
use crate::error::{Error, Result};

/// Every item of a list, as the server wrote it (see the module's notes).
pub struct RawList<T> {
    pages: Vec<(RawResult, Vec<Range<usize>>)>,
    len: usize,
    item: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for RawList<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawList")
            .field("pages", &self.pages.len())
            .field("len", &self.len)
            .finish()
    }
}

impl<T> Default for RawList<T> {
    fn default() -> Self {
        Self {
            pages: Vec::new(),
            len: 0,
            item: PhantomData,
        }
    }
}

impl<T: DeserializeOwned> RawList<T> {
    /// How many items there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Each item's JSON text, in order.
    pub fn items(&self) -> impl Iterator<Item = &str> {
        self.pages
            .iter()
            .flat_map(|(page, items)| items.iter().map(|range| &page.get()[range.clone()]))
    }

    /// Each item, parsed as it is reached (each was checked to parse when
    /// the list was read).
    pub fn parsed(&self) -> impl Iterator<Item = T> {
        self.items()
            .filter_map(|item| serde_json::from_str(item).ok())
    }
}

impl Client {
    /// Every page of the list `R` (`tools/list`, `resources/list` …),
    /// following pagination within the same limits as the typed lists,
    /// kept as the server wrote it: see [`RawList`]. The client's own
    /// list (what [`Client::resources`] and the like return) is not
    /// touched.
    ///
    /// # Errors
    /// As [`Client::list_tools`]: also when an item does not parse as the
    /// list's item type.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn list_raw<R>(&self) -> Result<RawList<<R::Result as Paginated>::Item>>
    where
        R: Request<Params = PaginatedRequestParams>,
        R::Result: Paginated,
        <R::Result as Paginated>::Item: DeserializeOwned,
    {
        let server = self.inner.engine.server().clone();
        let mut list = RawList::default();
        self.follow_pages::<R>(|page| {
            let malformed = |detail: String| Error::Protocol {
                server: server.clone(),
                detail: format!("its `{}` result is malformed: {detail}", R::METHOD),
            };
            let (items, next) = {
                let members: BTreeMap<String, &RawValue> =
                    serde_json::from_str(page.get()).map_err(|e| malformed(e.to_string()))?;
                let items: Vec<&RawValue> = match members.get(<R::Result as Paginated>::ITEMS) {
                    Some(items) => {
                        serde_json::from_str(items.get()).map_err(|e| malformed(e.to_string()))?
                    }
                    None => {
                        return Err(malformed(format!(
                            "missing field `{}`",
                            <R::Result as Paginated>::ITEMS
                        )));
                    }
                };
                let next: Option<String> = match members.get("nextCursor") {
                    Some(next) => parse_result(&server, R::METHOD, next.get())?,
                    None => None,
                };
                let start = page.get().as_ptr() as usize;
                let mut ranges = Vec::with_capacity(items.len());
                for item in items {
                    // Checked, then dropped: only its place is kept.
                    parse_result::<<R::Result as Paginated>::Item>(&server, R::METHOD, item.get())?;
                    let at = item.get().as_ptr() as usize - start;
                    ranges.push(at..at + item.get().len());
                }
                (ranges, next)
            };
            let count = items.len();
            list.len += count;
            list.pages.push((page, items));
            Ok((count, next))
        })
        .await?;
        Ok(list)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use switchboard_types::Resource;
    use switchboard_types::request as rq;

    use super::super::scripted_tests::{answer, modern_client_with};
    use crate::error::Error;

    #[tokio::test]
    async fn pages_are_followed_and_items_kept_as_written() {
        let (client, mut server) = modern_client_with(json!({"resources": {}})).await;
        let first = r#"{"uri":"file:///a","name":"a","x-vendor":{"k":[1,2]}}"#;
        let list = tokio::join!(client.list_raw::<rq::ListResources>(), async {
            let page1 = json!({"resources": [serde_json::from_str::<serde_json::Value>(first).unwrap()], "nextCursor": "2"});
            let request = answer(&mut server, page1).await;
            assert_eq!(request["method"], "resources/list");
            let request = answer(
                &mut server,
                json!({"resources": [{"uri": "file:///b", "name": "b"}]}),
            )
            .await;
            assert_eq!(request["params"]["cursor"], "2");
        })
        .0
        .unwrap();
        assert_eq!(list.len(), 2);
        let items: Vec<&str> = list.items().collect();
        assert_eq!(items[0], first);
        assert_eq!(items[1], r#"{"uri":"file:///b","name":"b"}"#);
        let parsed: Vec<Resource> = list.parsed().collect();
        assert_eq!(parsed[1].uri, "file:///b");
        assert_eq!(
            parsed[0].extra.value("x-vendor"),
            Some(json!({"k": [1, 2]}))
        );
        // The client's own list is not touched.
        assert!(client.resources().is_none());
    }

    #[tokio::test]
    async fn an_item_that_does_not_parse_fails_the_list_naming_the_server() {
        let (client, mut server) = modern_client_with(json!({"resources": {}})).await;
        let (list, _) = tokio::join!(
            client.list_raw::<rq::ListResources>(),
            answer(
                &mut server,
                json!({"resources": [{"uri": "file:///a", "name": "a"}, {"uri": 7}]}),
            )
        );
        let error = list.unwrap_err();
        assert!(matches!(error, Error::Protocol { .. }), "{error:?}");
        assert!(error.to_string().contains("resources/list"), "{error}");

        let (list, _) = tokio::join!(
            client.list_raw::<rq::ListResources>(),
            answer(&mut server, json!({"prompts": []}))
        );
        let error = list.unwrap_err();
        assert!(
            error.to_string().contains("missing field `resources`"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn a_repeated_cursor_ends_the_list_with_an_error() {
        let (client, mut server) = modern_client_with(json!({"resources": {}})).await;
        let (list, _) = tokio::join!(client.list_raw::<rq::ListResources>(), async {
            answer(&mut server, json!({"resources": [], "nextCursor": "same"})).await;
            answer(&mut server, json!({"resources": [], "nextCursor": "same"})).await;
        });
        let error = list.unwrap_err();
        assert!(matches!(error, Error::Pagination { .. }), "{error:?}");
    }
}
