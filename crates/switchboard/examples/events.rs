//! Everything a server says while a tool runs — progress, log lines, list
//! changes — arrives in order on one event stream.
//!
//! ```sh
//! cargo run -p switchboard-mcp --example events -- npx -y @modelcontextprotocol/server-everything
//! ```
//!
//! It calls the everything server's `trigger-long-running-operation` (progress every
//! step) and prints each event as it comes.

use switchboard::transport::stdio::StdioConfig;
use switchboard::types::CallToolRequestParams;
use switchboard::{Client, Event, RequestOptions};

#[tokio::main]
async fn main() -> switchboard::Result<()> {
    let mut command: Vec<String> = std::env::args().skip(1).collect();
    if command.is_empty() {
        command = ["npx", "-y", "@modelcontextprotocol/server-everything"]
            .map(String::from)
            .to_vec();
    }
    let program = command.remove(0);
    let client = Client::builder()
        .connect(StdioConfig::new(program).args(command))
        .await?;
    let mut events = client.events();
    let printer = tokio::spawn(async move {
        while let Some(event) = events.next().await {
            match event {
                Event::Progress(p) => println!(
                    "progress {}/{} {}",
                    p.progress,
                    p.total.map_or("?".to_owned(), |t| t.to_string()),
                    p.message.unwrap_or_default()
                ),
                Event::Log(line) => println!("log {:?}: {}", line.level, line.data),
                other => println!("event {other:?}"),
            }
        }
    });
    let params = CallToolRequestParams {
        name: "trigger-long-running-operation".to_owned(),
        arguments: serde_json::json!({ "duration": 2, "steps": 4 })
            .as_object()
            .cloned(),
        ..Default::default()
    };
    // A progress callback asks the server for progress (a progress token).
    let options = RequestOptions::default().on_progress(|_| {});
    let result = client.call_tool_with(&params, options).await?;
    println!("result: {:?}", result.content);
    client.close().await;
    let _ = printer.await;
    Ok(())
}
