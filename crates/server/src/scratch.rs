//! Test support: a directory of a test's own under the system temporary directory, removed
//! when dropped (compiled for tests only).

use std::path::{Path, PathBuf};

/// A directory of a test's own, removed with what it holds when dropped.
pub(crate) struct Scratch(PathBuf);

impl Scratch {
    /// A new, empty `periscope-{name}-{pid}` directory (one left by an earlier run of this
    /// process id is emptied first).
    pub(crate) fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("periscope-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory can be created");
        Self(dir)
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
