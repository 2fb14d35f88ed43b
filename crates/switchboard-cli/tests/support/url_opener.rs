//! A host's user who opens every login page the gateway asks for (a URL
//! elicitation): each URL goes to the test's own function, and the
//! elicitation is accepted; a form is declined.
#![allow(dead_code)] // each test binary uses some of `support`

/// Hands each URL elicitation's URL to `.0`, then accepts it.
pub(crate) struct UrlOpener<F>(pub(crate) F);

impl<F: Fn(String) + Send + Sync + 'static> switchboard::ElicitationHandler for UrlOpener<F> {
    fn elicit_form(
        &self,
        _: switchboard::HandlerContext,
        _: switchboard::FormRequest,
    ) -> switchboard::BoxFuture<
        'static,
        Result<switchboard::types::ElicitResult, switchboard::HandlerError>,
    > {
        Box::pin(async { Ok(switchboard::types::ElicitResult::decline()) })
    }

    fn supports_url(&self) -> bool {
        true
    }

    fn elicit_url(
        &self,
        _: switchboard::HandlerContext,
        request: switchboard::UrlRequest,
    ) -> switchboard::BoxFuture<
        'static,
        Result<switchboard::types::ElicitResult, switchboard::HandlerError>,
    > {
        (self.0)(request.url.clone());
        Box::pin(async { Ok(switchboard::types::ElicitResult::accept(None)) })
    }
}
