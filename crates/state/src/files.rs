//! The data directory and the SQLite state file on disk: created private, because `state.db`
//! holds secrets (the sign-in service's ID-token signing key, the CSRF key, session and key
//! digests). The directory is created 0700; `state.db` is created 0600 before SQLite opens it,
//! so SQLite gives its `-wal` and `-shm` files the same mode (it copies the database file's);
//! files of an older install that others can read are narrowed to 0600 when opened.

use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of the data directory.
pub const DATA_DIR_MODE: u32 = 0o700;
/// The mode of every file that holds a secret.
pub const SECRET_FILE_MODE: u32 = 0o600;

/// Creates `dir` (and missing parents) with mode 0700 when it does not exist. An existing
/// directory is left as it is; [`group_or_other_access`] tells whether others can reach it.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(DATA_DIR_MODE)
        .create(dir)
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => Ok(()),
        Err(e) => Err(e),
    }
}

/// Whether group or others have any permission on `path`.
pub fn group_or_other_access(path: &Path) -> io::Result<bool> {
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o077 != 0)
}

/// Makes sure the SQLite file at `path` and its `-wal`/`-shm` companions are private:
/// creates the database file 0600 when missing, narrows existing ones to 0600.
pub(crate) fn private_sqlite_files(path: &Path) -> io::Result<()> {
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(SECRET_FILE_MODE)
        .open(path)
    {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        // No directory: nothing to protect; opening reports it as the unreachable database.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    }
    let mut companions = vec![path.to_owned()];
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        companions.push(name.into());
    }
    for file in companions {
        match std::fs::metadata(&file) {
            Ok(meta) if meta.permissions().mode() & 0o077 != 0 => {
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(SECRET_FILE_MODE))?;
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
