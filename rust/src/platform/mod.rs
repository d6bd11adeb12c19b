//! The one place where the crate's file access differs by platform: the root opened by path,
//! every other folder or file opened relative to the handle of the folder it is listed in and
//! refused if it is a link (`open_dir_at`, `open_file_at`), an open folder listed from its
//! handle (`list_dir`), what a listed name is (`class_of`, `stat_at`), and how a name maps to
//! the bytes the walk sorts and compares. POSIX does it with `openat`/`O_NOFOLLOW`; everything
//! above this module is the same on every platform.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
pub use unix::*;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
pub use windows::*;

/// What a listed name is, as far as the walk cares. A link is never followed: where it
/// points (a folder or not) only decides how its skip is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Class {
    pub is_dir: bool,
    pub is_link: bool,
}

/// What a listed file's stat says: (size, mtime_ns), not a regular file, or unreadable.
pub enum Stat {
    File(u64, i64),
    Other,
    #[cfg_attr(windows, allow(dead_code))] // there, the listing's record holds the stat
    Unreadable,
}
