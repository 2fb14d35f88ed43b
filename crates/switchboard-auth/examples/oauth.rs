//! A remote MCP server behind OAuth 2.1: log in through the browser (the
//! redirect received on 127.0.0.1), then list its tools. The tokens are
//! kept in the default store and refreshed when they expire.
//!
//! ```sh
//! cargo run -p switchboard-auth --example oauth -- https://mcp.example.com/mcp
//! ```

use std::sync::Arc;

use switchboard::Client;
use switchboard::transport::http::HttpConfig;
use switchboard_auth::flow::{OAuthConfig, OAuthFlow};
use switchboard_auth::loopback::{DEFAULT_TIMEOUT, LoopbackReceiver};
use switchboard_auth::provider::OAuthProvider;
use switchboard_auth::store::default_store;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: oauth URL   (a Streamable HTTP MCP server that wants OAuth)");
        std::process::exit(1);
    };
    let receiver = LoopbackReceiver::bind(0).await?;
    let flow = OAuthFlow::new(OAuthConfig::new(
        "switchboard-example",
        receiver.redirect_uri(),
        default_store()?,
    ))?;
    let request = flow.begin(&url, None).await?;
    println!("open this page to log in:\n{}", request.authorization_url);
    let answer = receiver.receive(&request.state, DEFAULT_TIMEOUT).await?;
    let credentials = flow
        .finish(&answer.code, &answer.state, answer.iss.as_deref())
        .await?;
    let provider = Arc::new(OAuthProvider::for_credentials(flow, &credentials));
    let client = Client::connect(HttpConfig::new(url.as_str()).auth(provider)).await?;
    for tool in client.list_tools().await? {
        println!("{}", tool.name);
    }
    client.close().await;
    Ok(())
}
