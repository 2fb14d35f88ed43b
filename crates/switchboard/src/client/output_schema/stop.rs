//! Stopping a check whose caller stopped waiting for it.
//!
//! `jsonschema` cannot be interrupted, and `fancy-regex` only gives up on a
//! match after [`REGEX_BACKTRACK_LIMIT`](super::REGEX_BACKTRACK_LIMIT) steps:
//! a result holding thousands of strings that each reach that limit keeps a
//! check busy for seconds. What the validator can be given is its view of
//! the instance: `jsonschema` reads it through a JSON representation of the
//! caller's choosing ([`jsonschema::json::Json`]), and [`Stoppable`] is
//! `serde_json`'s with one difference. Once the [`Stop`] watched on this
//! thread is set, every string reads as empty (property names too), every
//! object and array as having no more members, and no property is found.
//! All the validator has left to do is then trivial, so the check ends
//! within one regex match of being stopped, whichever keyword was
//! matching (`pattern`, `patternProperties`, `additionalProperties`,
//! `unevaluatedProperties`, `propertyNames`) and however many runs the
//! validator makes to settle the matches that hit the limit.
//!
//! The answer of a stopped check, computed on that emptied view, is
//! thrown away: only the side that stopped waiting sets the [`Stop`], and
//! it does so once it no longer reads the answer ([`StopOnDrop`]). While
//! the stop is not set the view is exactly `serde_json`'s.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use jsonschema::json::{self, SerdeJson};
use serde_json::{Map, Number, Value};

thread_local! {
    /// The stop of the check running on this thread, if it can be stopped.
    static WATCHED: RefCell<Option<Arc<AtomicBool>>> = const { RefCell::new(None) };
}

/// Whether the check running on this thread was stopped.
#[inline]
pub(super) fn stopped() -> bool {
    WATCHED.with_borrow(|stop| {
        stop.as_ref()
            .is_some_and(|stop| stop.load(Ordering::Relaxed))
    })
}

/// Tells a check running on another thread that nobody waits for it.
#[derive(Clone, Default)]
pub(super) struct Stop(Arc<AtomicBool>);

impl Stop {
    /// Runs `check` on this thread, stopping early once this stop is set
    /// (see the [module docs](self)).
    pub(super) fn watching<T>(&self, check: impl FnOnce() -> T) -> T {
        /// Puts back what was watched before, panic or not.
        struct Restore(Option<Arc<AtomicBool>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                WATCHED.set(self.0.take());
            }
        }
        let _restore = Restore(WATCHED.replace(Some(self.0.clone())));
        check()
    }

    /// Whether this stop was set.
    #[cfg(test)]
    pub(super) fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// A guard that sets this stop when dropped.
    pub(super) fn on_drop(&self) -> StopOnDrop {
        StopOnDrop(self.clone())
    }
}

/// Sets its [`Stop`] when dropped: held by the side that waits for a check,
/// so that the check stops once that side returns or is dropped. Setting
/// the stop of a check that already ended does nothing.
pub(super) struct StopOnDrop(Stop);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.0.store(true, Ordering::Relaxed);
    }
}

/// `serde_json` values as `jsonschema` reads them, emptied once the check
/// is stopped (see the [module docs](self)).
pub(super) struct Stoppable;

impl json::Json for Stoppable {
    type Node<'a> = Node<'a>;
    type PreparedKey = <SerdeJson as json::Json>::PreparedKey;
    type StringBuffer = <SerdeJson as json::Json>::StringBuffer;
    const KEYS_PER_LOOKUP: usize = SerdeJson::KEYS_PER_LOOKUP;

    fn prepare_key(key: &str) -> Self::PreparedKey {
        SerdeJson::prepare_key(key)
    }

    fn with_string_node<T>(
        buffer: &mut Self::StringBuffer,
        string: &str,
        f: impl FnOnce(Node<'_>) -> T,
    ) -> T {
        SerdeJson::with_string_node(buffer, string, |value| f(Node(value)))
    }
}

/// One value of the instance.
#[derive(Clone, Copy)]
pub(super) struct Node<'a>(pub(super) &'a Value);

impl<'a> json::Node<'a, Stoppable> for Node<'a> {
    type Object = Members<'a>;
    type Array = Elements<'a>;
    type Number = &'a Number;

    #[inline]
    fn as_object(&self) -> Option<Members<'a>> {
        self.0.as_object().map(Members)
    }

    #[inline]
    fn as_array(&self) -> Option<Elements<'a>> {
        self.0.as_array().map(|elements| Elements(elements))
    }

    #[inline]
    fn as_string(&self) -> Option<Cow<'a, str>> {
        match self.0 {
            Value::String(_) if stopped() => Some(Cow::Borrowed("")),
            value => value.as_string(),
        }
    }

    #[inline]
    fn as_number(&self) -> Option<&'a Number> {
        self.0.as_number()
    }

    #[inline]
    fn as_boolean(&self) -> Option<bool> {
        self.0.as_bool()
    }

    #[inline]
    fn is_null(&self) -> bool {
        self.0.is_null()
    }

    #[inline]
    fn json_type(&self) -> jsonschema::types::JsonType {
        self.0.json_type()
    }

    #[inline]
    fn string_length(&self) -> Option<u64> {
        match self.0 {
            Value::String(_) if stopped() => Some(0),
            value => value.string_length(),
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        self.0.equals_value(expected)
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Borrowed(self.0)
    }

    #[inline]
    fn identity(&self) -> Option<json::NodeIdentity> {
        self.0.identity()
    }
}

/// An object's members.
#[derive(Clone, Copy)]
pub(super) struct Members<'a>(&'a Map<String, Value>);

impl<'a> json::Object<'a, Stoppable> for Members<'a> {
    type Node = Node<'a>;
    type MemberName = Name<'a>;
    type MembersIter = MembersIter<'a>;

    #[inline]
    fn len(&self) -> usize {
        self.0.len()
    }

    #[inline]
    fn get(&self, key: &String) -> Option<Node<'a>> {
        if stopped() {
            return None;
        }
        self.0.get(key).map(Node)
    }

    #[inline]
    fn members(&self) -> MembersIter<'a> {
        MembersIter(self.0.iter())
    }
}

pub(super) struct MembersIter<'a>(serde_json::map::Iter<'a>);

impl<'a> Iterator for MembersIter<'a> {
    type Item = (Name<'a>, Node<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if stopped() {
            return None;
        }
        self.0.next().map(|(name, value)| (Name(name), Node(value)))
    }
}

/// A property name. Matched against every `patternProperties` pattern in
/// turn, so it is read afresh for each.
#[derive(Clone, Copy)]
pub(super) struct Name<'a>(&'a str);

impl AsRef<str> for Name<'_> {
    #[inline]
    fn as_ref(&self) -> &str {
        if stopped() { "" } else { self.0 }
    }
}

impl<'a> From<Name<'a>> for Cow<'a, str> {
    fn from(name: Name<'a>) -> Self {
        Cow::Borrowed(name.0)
    }
}

/// An array's elements.
#[derive(Clone, Copy)]
pub(super) struct Elements<'a>(&'a [Value]);

impl<'a> json::Array<'a, Stoppable> for Elements<'a> {
    type Node = Node<'a>;
    type ElementsIter = ElementsIter<'a>;

    #[inline]
    fn len(&self) -> usize {
        self.0.len()
    }

    #[inline]
    fn elements(&self) -> ElementsIter<'a> {
        ElementsIter(self.0.iter())
    }

    fn is_unique(&self) -> bool {
        stopped() || json::unique::is_unique(self.0)
    }
}

pub(super) struct ElementsIter<'a>(std::slice::Iter<'a, Value>);

impl<'a> Iterator for ElementsIter<'a> {
    type Item = Node<'a>;

    #[inline]
    fn next(&mut self) -> Option<Node<'a>> {
        if stopped() {
            return None;
        }
        self.0.next().map(Node)
    }
}
