//! Everything that reaches the user's terminal: results and tables
//! ([`output`]), what a server says while a request runs ([`ui`]), forms
//! a server asks the user to fill in ([`ask`]), and the one gate every
//! text a peer wrote passes before it is printed ([`sanitize`]).

pub(crate) mod ask;
pub(crate) mod output;
pub(crate) mod sanitize;
pub(crate) mod ui;
