//! The OAuth token store (`codemode_mcp::auth::FileCredentialStore`): 0700 directory, 0600
//! files, a round trip of rmcp's `StoredCredentials`, and refusals of files and directories
//! others can write (or, for files, read) and of symbolic links, with the exact message.

#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;

use codemode_mcp::auth::{token_dir, token_file_name, FileCredentialStore};
use rmcp::transport::auth::{CredentialStore, StoredCredentials};

fn mode(path: &std::path::Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

fn credentials() -> StoredCredentials {
    StoredCredentials::new("client-1".into(), None, vec!["mcp:read".into()], Some(42))
}

#[tokio::test]
async fn saves_0600_in_a_0700_dir_and_reads_back() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("codemode").join("oauth");
    let url = "https://mcp.example.com/mcp";
    let store = FileCredentialStore::new(&dir, url);
    assert_eq!(store.load().await.unwrap().map(|c| c.client_id), None);
    store.save(credentials()).await.unwrap();
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(store.path()), 0o600);
    assert_eq!(
        store.path().file_name().unwrap().to_str().unwrap(),
        token_file_name(url)
    );
    let loaded = store.load().await.unwrap().unwrap();
    assert_eq!(loaded.client_id, "client-1");
    assert_eq!(loaded.granted_scopes, vec!["mcp:read".to_string()]);
    assert_eq!(loaded.token_received_at, Some(42));
    // Only the file itself is left (the temporary file was renamed over it).
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    // Another URL does not see it.
    let other = FileCredentialStore::new(&dir, "https://mcp.example.com/other");
    assert!(other.load().await.unwrap().is_none());
    store.clear().await.unwrap();
    assert!(!store.path().exists());
    assert!(store.load().await.unwrap().is_none());
}

#[tokio::test]
async fn refuses_a_file_others_can_read_or_write() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("oauth");
    let store = FileCredentialStore::new(&dir, "http://127.0.0.1:9/mcp");
    store.save(credentials()).await.unwrap();
    std::fs::set_permissions(store.path(), std::fs::Permissions::from_mode(0o644)).unwrap();
    let error = store.load().await.unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "OAuth credential store failed: refusing to use the OAuth token store {}: its mode is 0644 and others can read or write it; chmod 600 it",
            store.path().display()
        )
    );
}

#[tokio::test]
async fn refuses_a_dir_others_can_write_and_a_symlinked_file() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("oauth");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let store = FileCredentialStore::new(&dir, "http://127.0.0.1:9/mcp");
    let error = store.save(credentials()).await.unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "OAuth credential store failed: refusing to use the OAuth token store {}: its mode is 0777 and others can write it; chmod 700 it",
            dir.display()
        )
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing was written"
    );

    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let target = home.path().join("elsewhere.json");
    std::fs::write(&target, "{}").unwrap();
    std::os::unix::fs::symlink(&target, store.path()).unwrap();
    let error = store.load().await.unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "OAuth credential store failed: refusing to use the OAuth token store {}: it is a symbolic link; name the file it points to",
            store.path().display()
        )
    );
}

#[test]
fn token_dir_follows_xdg_config_home_and_file_names_are_stable() {
    // Read-only check of the rule against this process's environment.
    let expected = match std::env::var_os("XDG_CONFIG_HOME").map(std::path::PathBuf::from) {
        Some(xdg) if xdg.is_absolute() => Some(xdg.join("codemode/oauth")),
        _ => std::env::var_os("HOME")
            .map(|h| std::path::PathBuf::from(h).join(".config/codemode/oauth")),
    };
    assert_eq!(token_dir(), expected);
    assert_eq!(
        token_file_name("http://localhost:3000/mcp"),
        "localhost_3000_mcp-6c24b088ee2da7ae.json"
    );
    assert_ne!(
        token_file_name("http://localhost:3000/a_b"),
        token_file_name("http://localhost:3000/a/b")
    );
}

/// A token file or directory that belongs to another user is refused even with a 0600/0700
/// mode: its owner could have written it. Needs root to hand a file to another uid.
#[tokio::test]
async fn refuses_a_file_or_dir_another_user_owns() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("oauth");
    let store = FileCredentialStore::new(&dir, "http://127.0.0.1:9/mcp");
    store.save(credentials()).await.unwrap();
    if std::os::unix::fs::chown(store.path(), Some(65534), None).is_err() {
        eprintln!("skipped: changing a file's owner needs root");
        return;
    }
    let error = store.load().await.unwrap_err().to_string();
    let me = std::fs::metadata(&dir)
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .unwrap();
    assert_eq!(
        error,
        format!(
            "OAuth credential store failed: refusing to use the OAuth token store {}: it belongs to uid 65534, not to this user (uid {me})",
            store.path().display()
        )
    );
    std::os::unix::fs::chown(store.path(), Some(me), None).unwrap();
    assert!(store.load().await.unwrap().is_some());
    std::os::unix::fs::chown(&dir, Some(65534), None).unwrap();
    let error = store.load().await.unwrap_err().to_string();
    assert_eq!(
        error,
        format!(
            "OAuth credential store failed: refusing to use the OAuth token store {}: it belongs to uid 65534, not to this user (uid {me})",
            dir.display()
        )
    );
}
