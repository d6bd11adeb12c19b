//! POSIX: `openat` with `O_NOFOLLOW` relative to the parent folder's descriptor, `fdopendir`
//! and `readdir` on a copy of it, `fstatat` without following.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::{Class, Stat};
use crate::walk::{mtime_ns, Refusal};

/// A name of a folder's listing, with its `d_type` (`DT_UNKNOWN` where the file system does
/// not say) and the NUL-terminated copy `fstatat` takes.
#[derive(Debug)]
pub struct Entry {
    pub name: OsString,
    c_name: CString,
    kind: u8,
}

/// The root, opened by its path (links on the way to it are the caller's choice).
pub fn open_root(path: &Path) -> io::Result<fs::File> {
    fs::File::open(path)
}

/// `openat` relative to an open folder; `O_CLOEXEC` always.
fn open_at(dir: &fs::File, name: &CStr, flags: libc::c_int) -> io::Result<fs::File> {
    // SAFETY: a valid folder descriptor and a NUL-terminated name.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: openat returned a new descriptor that nothing else owns.
    Ok(unsafe { fs::File::from_raw_fd(fd) })
}

fn c_name(name: &OsStr) -> Result<CString, Refusal> {
    CString::new(name.as_bytes()).map_err(|_| Refusal::Unreadable)
}

/// Whether opening with `O_NOFOLLOW` failed because the name is a symlink: ELOOP (Linux,
/// macOS), EMLINK (FreeBSD), or ENOTDIR when a folder was asked for (Linux), checked by lstat.
fn link_refused(dir: &fs::File, name: &CStr, error: &io::Error) -> Refusal {
    let link = match error.raw_os_error() {
        Some(libc::ELOOP | libc::EMLINK) => true,
        Some(libc::ENOTDIR) => {
            matches!(stat_raw(dir, name, false), Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFLNK)
        }
        _ => false,
    };
    if link {
        Refusal::Symlink
    } else {
        Refusal::Unreadable
    }
}

/// The folder `name` inside `dir`, refused if it is a symlink.
pub fn open_dir_at(dir: &fs::File, name: &OsStr) -> Result<fs::File, Refusal> {
    let name = c_name(name)?;
    open_at(
        dir,
        &name,
        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
    )
    .map_err(|e| link_refused(dir, &name, &e))
}

/// `name` inside `dir` opened to be read, refused if it is a symlink; opened with
/// `O_NONBLOCK`, so a FIFO never blocks (the caller refuses all but regular files).
pub fn open_file_at(dir: &fs::File, name: &OsStr) -> Result<fs::File, Refusal> {
    let name = c_name(name)?;
    open_at(
        dir,
        &name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
    )
    .map_err(|e| link_refused(dir, &name, &e))
}

/// The identity of an open folder (device, inode), to see a folder open higher up again.
pub fn dir_key(dir: &fs::File) -> io::Result<(u64, u64)> {
    dir.metadata().map(|st| (st.dev(), st.ino()))
}

/// The name of a relative path's component as the walk yields it.
pub fn name_from_bytes(bytes: &[u8]) -> Option<&OsStr> {
    Some(OsStr::from_bytes(bytes))
}

/// A relative path the caller stored as bytes (`os.fsencode` of the path the walk yielded).
pub fn path_from_bytes(bytes: &[u8]) -> OsString {
    OsStr::from_bytes(bytes).to_os_string()
}

/// Whether the bytes of `name` sort as Python sorts its decoded name: only UTF-8 names do.
pub fn sorts_as_bytes(name: &OsStr) -> bool {
    name.to_str().is_some()
}

/// `fstatat` relative to the open folder: the kernel resolves one name, not the whole path.
fn stat_raw(dir: &fs::File, name: &CStr, follow: bool) -> io::Result<libc::stat> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    let flags = if follow { 0 } else { libc::AT_SYMLINK_NOFOLLOW };
    // SAFETY: a valid folder descriptor, a NUL-terminated name and room for one `stat`.
    let rc = unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), flags) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatat succeeded, so it filled `st`.
    Ok(unsafe { st.assume_init() })
}

/// The modification time of an opened file's stat, in ns as the walk gives it.
pub fn mtime_of(meta: &fs::Metadata) -> i64 {
    use std::os::unix::fs::MetadataExt;
    mtime_ns(meta.mtime(), meta.mtime_nsec())
}

/// The listed file's own stat (symlinks are not followed: the walk never reads through one).
pub fn stat_at(dir: &fs::File, entry: &Entry) -> Stat {
    let Ok(st) = stat_raw(dir, &entry.c_name, false) else {
        return Stat::Unreadable;
    };
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Stat::Other; // a fifo, socket or device: not a file to read
    }
    #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
    Stat::File(
        st.st_size as u64,
        mtime_ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
    )
}

/// What a listed name is: by its `d_type`, or by `fstatat` where the listing did not say;
/// where a symlink points is asked by `fstatat` following it (a dangling one is no folder).
pub fn class_of(dir: &fs::File, entry: &Entry) -> io::Result<Class> {
    let kind = match entry.kind {
        libc::DT_UNKNOWN => mode_kind(stat_raw(dir, &entry.c_name, false)?.st_mode),
        kind => kind,
    };
    let is_link = kind == libc::DT_LNK;
    let is_dir = if is_link {
        match stat_raw(dir, &entry.c_name, true) {
            Ok(st) => st.st_mode & libc::S_IFMT == libc::S_IFDIR,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(e),
        }
    } else {
        kind == libc::DT_DIR
    };
    Ok(Class { is_dir, is_link })
}

/// The `d_type` a file mode stands for (for file systems whose listings do not say).
fn mode_kind(mode: libc::mode_t) -> u8 {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => libc::DT_DIR,
        libc::S_IFLNK => libc::DT_LNK,
        libc::S_IFREG => libc::DT_REG,
        _ => libc::DT_UNKNOWN,
    }
}

/// The names in an open folder, read from the descriptor so the listing is of the folder
/// that was opened.
pub fn list_dir(dir: &fs::File) -> io::Result<Vec<Entry>> {
    // SAFETY: `list_dir_with` passes an open directory stream used by this thread only.
    list_dir_with(dir, |stream| unsafe { libc::readdir(stream) })
}

/// `list_dir` with the function that reads the next entry of the stream (`readdir`, or a
/// test's stand-in that fails).
fn list_dir_with(
    dir: &fs::File,
    mut next: impl FnMut(*mut libc::DIR) -> *mut libc::dirent,
) -> io::Result<Vec<Entry>> {
    // SAFETY: dup of a valid descriptor; fdopendir takes the copy over (closedir closes it).
    let fd = unsafe { libc::dup(dir.as_raw_fd()) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is an open folder descriptor owned by nothing else.
    let stream = unsafe { libc::fdopendir(fd) };
    if stream.is_null() {
        let error = io::Error::last_os_error();
        // SAFETY: fdopendir failed, so `fd` is still ours to close.
        unsafe { libc::close(fd) };
        return Err(error);
    }
    let mut out = Vec::new();
    let ended = loop {
        set_errno(0);
        let entry = next(stream);
        if entry.is_null() {
            // NULL is the end of the folder, or an error that errno names (EIO, ...): a
            // folder that failed mid-listing is unreadable, lest the rest of it look deleted
            let error = io::Error::last_os_error();
            break if error.raw_os_error().unwrap_or(0) == 0 {
                Ok(())
            } else {
                Err(error)
            };
        }
        // SAFETY: readdir returned a valid entry whose name is NUL-terminated.
        let (name, kind) = unsafe { (CStr::from_ptr((*entry).d_name.as_ptr()), (*entry).d_type) };
        let bytes = name.to_bytes();
        if bytes != b"." && bytes != b".." {
            out.push(Entry {
                name: OsStr::from_bytes(bytes).to_os_string(),
                c_name: name.to_owned(),
                kind,
            });
        }
    };
    // SAFETY: `stream` is open and not used after this.
    unsafe { libc::closedir(stream) };
    ended.map(|()| out)
}

/// Sets this thread's `errno`, which `readdir` leaves alone at the end of a folder and sets on
/// an error.
fn set_errno(value: libc::c_int) {
    // SAFETY: each returns the address of this thread's errno, valid while the thread lives.
    unsafe {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        let place = libc::__errno_location();
        #[cfg(any(
            target_vendor = "apple",
            target_os = "freebsd",
            target_os = "dragonfly"
        ))]
        let place = libc::__error();
        #[cfg(any(target_os = "openbsd", target_os = "netbsd"))]
        let place = libc::__errno();
        *place = value;
    }
}

/// A symlink at `at` to `target`, for the tests of what the walk refuses.
#[cfg(test)]
pub fn symlink(target: &Path, at: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_whose_listing_fails_midway_is_an_error_not_a_shorter_folder() {
        let dir = std::env::temp_dir().join(format!("kenning-list-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        for name in ["a.py", "b.py", "c.py"] {
            fs::write(dir.join(name), "x").unwrap();
        }
        // a listing reads through the folder's descriptor, so each one opens it anew
        let open = || fs::File::open(&dir).unwrap();
        assert_eq!(list_dir(&open()).unwrap().len(), 3);
        let mut calls = 0;
        let failed = list_dir_with(&open(), |stream| {
            calls += 1;
            if calls == 1 {
                // SAFETY: the open stream list_dir_with passes, on this thread only.
                unsafe { libc::readdir(stream) }
            } else {
                set_errno(libc::EIO); // as readdir reports a failed read of the folder
                std::ptr::null_mut()
            }
        });
        assert_eq!(failed.unwrap_err().raw_os_error(), Some(libc::EIO));
        // the end of a folder is not an error, even where an earlier call left errno set
        set_errno(libc::ENOENT);
        assert_eq!(list_dir(&open()).unwrap().len(), 3);
        fs::remove_dir_all(&dir).unwrap();
    }
}
