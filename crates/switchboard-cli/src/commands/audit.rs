//! `audit verify`: an audit log's chain checked.

use std::path::Path;

use crate::failure::Failure;

/// `audit verify FILE`.
pub(crate) fn verify(file: &Path) -> Result<u8, Failure> {
    use switchboard_hub::hub::audit;
    match audit::verify(file, &audit::AuditOptions::default()) {
        Ok(verified) => {
            let mut text = format!(
                "{}: intact: {} records in {} file(s)",
                file.display(),
                verified.records,
                verified.files
            );
            if verified.dropped > 0 {
                text += &format!(
                    ", {} older file(s) removed by the retention setting",
                    verified.dropped
                );
            }
            if verified.unanchored > 0 {
                text += &format!(
                    ", {} line(s) written after the anchor (a write under way, or a crash)",
                    verified.unanchored
                );
            }
            println!("{text}");
            Ok(0)
        }
        Err(error) => Err(Failure::usage(
            anyhow::Error::new(error)
                .context(format!("the audit log {} does not verify", file.display())),
        )),
    }
}

/// `audit verify --database URL --state-key-file FILE`.
pub(crate) async fn verify_database(url: &str, key_file: &Path) -> Result<u8, Failure> {
    let state = crate::state::connect(url, key_file).await?;
    let verified = tokio::task::spawn_blocking(move || state.verify_audit())
        .await
        .map_err(|e| Failure::usage(anyhow::anyhow!("verifying the audit chain: {e}")))?;
    match verified {
        Ok(verified) => {
            println!(
                "the audit chain in the database: intact: {} records",
                verified.records
            );
            Ok(0)
        }
        Err(error) => Err(Failure::usage(
            anyhow::Error::new(error).context("the audit chain in the database does not verify"),
        )),
    }
}
