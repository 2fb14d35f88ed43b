//! What a backend's answers point at, kept inside that backend (issue 28,
//! finding 8).
//!
//! A tool result or a prompt message may link to a resource (a
//! `resource_link`) or embed one (`resource`). Passed through as written,
//! backend A could answer a link to `switchboard://B/…` and have the host
//! read backend B's private resource. So every URI in the content a
//! backend answers is served as its listed resources are
//! ([`Uris::serve`]): as written only where a read of it would reach
//! that same backend, else mapped into the backend's own namespace; a
//! read of it goes back to the backend that answered, with the URI it
//! wrote.
//! `structuredContent` is the tool's own JSON, not links the host follows,
//! and stays as it is.

use std::ops::Deref;

use serde_json::Value;
use switchboard::types::{ContentBlock, ResourceContents};

use super::uris::Uris;

/// Every URI in `blocks` (links, embedded resources, nested tool results,
/// a `uri` of a block of a type this crate does not know) made `server`'s.
/// `uris` is read only for a block that links somewhere (a lazy map
/// costs a text-only result nothing).
pub(crate) fn own_content<U: Deref<Target = Uris>>(
    uris: &U,
    server: &str,
    blocks: &mut [ContentBlock],
) {
    for block in blocks {
        own_block(uris, server, block);
    }
}

/// One block's URIs made `server`'s.
pub(crate) fn own_block<U: Deref<Target = Uris>>(uris: &U, server: &str, block: &mut ContentBlock) {
    match block {
        ContentBlock::ResourceLink(link) => link.uri = uris.serve(server, &link.uri),
        ContentBlock::Resource(embedded) => {
            let uri = match &mut embedded.resource {
                ResourceContents::Text(c) => &mut c.uri,
                ResourceContents::Blob(c) => &mut c.uri,
            };
            *uri = uris.serve(server, uri);
        }
        ContentBlock::ToolResult(result) => own_content(uris, server, &mut result.content),
        ContentBlock::Other(object) => {
            if let Some(Value::String(uri)) = object.get_mut("uri") {
                *uri = uris.serve(server, uri);
            }
            if let Some(Value::String(uri)) = object
                .get_mut("resource")
                .and_then(Value::as_object_mut)
                .and_then(|r| r.get_mut("uri"))
            {
                *uri = uris.serve(server, uri);
            }
        }
        // Text, images, audio and tool uses link to nothing.
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::resource_origin;
    use super::*;

    fn blocks(value: Value) -> Vec<ContentBlock> {
        serde_json::from_value(value).unwrap()
    }

    /// Backend `a` answers links to backend `b`'s resources, to a gateway
    /// URI of `b`, to a skill and inside an embedded resource: every one
    /// leads back to `a`, with what `a` wrote.
    #[test]
    fn a_backends_links_point_only_at_its_own_resources() {
        let mut content = blocks(json!([
            {"type": "resource_link", "uri": "switchboard://b/file%3A%2F%2F%2Fetc%2Fsecret", "name": "x"},
            {"type": "resource_link", "uri": "file:///etc/secret", "name": "y"},
            {"type": "resource", "resource": {"uri": "switchboard://b/x", "text": "t"}},
            {"type": "resource_link", "uri": "skill://b/pdf/SKILL.md", "name": "s"},
            {"type": "future_block", "uri": "switchboard://b/y"},
            {"type": "text", "text": "switchboard://b/z stays text"},
        ]));
        // Two servers that list nothing: every URI is mapped.
        let uris = super::super::uris::UriClaims::default().now(vec!["a".into(), "b".into()]);
        own_content(&&uris, "a", &mut content);
        let value = serde_json::to_value(&content).unwrap();
        for (i, original) in [
            (0, "switchboard://b/file%3A%2F%2F%2Fetc%2Fsecret"),
            (1, "file:///etc/secret"),
            (4, "switchboard://b/y"),
        ] {
            let uri = value[i]["uri"].as_str().unwrap();
            assert_eq!(
                resource_origin(uri),
                Some(("a".to_owned(), original.to_owned())),
                "{uri}"
            );
        }
        let embedded = value[2]["resource"]["uri"].as_str().unwrap();
        assert_eq!(
            resource_origin(embedded),
            Some(("a".to_owned(), "switchboard://b/x".to_owned()))
        );
        assert_eq!(value[3]["uri"], "skill://a/b/pdf/SKILL.md");
        assert_eq!(value[5]["text"], "switchboard://b/z stays text");
    }
}
