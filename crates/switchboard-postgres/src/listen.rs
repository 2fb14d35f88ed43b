//! Listening on a channel of the shared database (`LISTEN`), on the
//! state's own runtime, again and again: a lost connection is listened on
//! again, and told as "anything may have changed".

use std::time::Duration;

use sqlx::postgres::PgListener;

use crate::PgState;

/// How long a lost watch waits before listening again.
const RELISTEN: Duration = Duration::from_secs(1);

/// Tells `changed` each notification's payload on `channel` (`None` when
/// notifications may have been missed: at the start of each listen, after
/// a lost connection), until it returns `false`. `what` names the changes
/// in the warnings.
pub(crate) fn listen(
    state: &PgState,
    channel: &'static str,
    what: &'static str,
    changed: impl Fn(Option<&str>) -> bool + Send + Sync + 'static,
) {
    let pool = state.pool();
    state.spawn(async move {
        loop {
            let mut listener = match PgListener::connect_with(&pool).await {
                Ok(listener) => listener,
                Err(error) => {
                    tracing::warn!(%error, "cannot listen for {what}; trying again");
                    tokio::time::sleep(RELISTEN).await;
                    continue;
                }
            };
            if let Err(error) = listener.listen(channel).await {
                tracing::warn!(%error, "cannot listen for {what}; trying again");
                tokio::time::sleep(RELISTEN).await;
                continue;
            }
            // Changes made before this listen were missed.
            if !changed(None) {
                return;
            }
            loop {
                let keep = match listener.try_recv().await {
                    Ok(Some(notification)) => changed(Some(notification.payload())),
                    // The connection was lost and is made again: what
                    // changed meanwhile was missed.
                    Ok(None) => changed(None),
                    Err(error) => {
                        tracing::warn!(%error, "lost the watch of {what}; listening again");
                        tokio::time::sleep(RELISTEN).await;
                        break;
                    }
                };
                if !keep {
                    return;
                }
            }
        }
    });
}
