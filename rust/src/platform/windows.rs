//! Windows: every name opened by `NtCreateFile` relative to the handle of its parent folder
//! with `FILE_OPEN_REPARSE_POINT`, then refused if it is a reparse point (a symlink, junction
//! or mount point: none is followed, whatever it points at); folders listed from their handle
//! by `GetFileInformationByHandleEx`, whose records carry each name's attributes, size and
//! modification time.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::mem::size_of;
use std::os::windows::ffi::{OsStrExt, OsStringExt};
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle};
use std::path::Path;
use std::ptr::null;

use windows_sys::Wdk::Foundation::OBJECT_ATTRIBUTES;
use windows_sys::Wdk::Storage::FileSystem::{
    NtCreateFile, FILE_DIRECTORY_FILE, FILE_OPEN, FILE_OPEN_REPARSE_POINT,
    FILE_SYNCHRONOUS_IO_NONALERT,
};
use windows_sys::Win32::Foundation::{
    ERROR_NO_MORE_FILES, HANDLE, OBJ_CASE_INSENSITIVE, UNICODE_STRING,
};
use windows_sys::Win32::Storage::FileSystem::{
    FileAttributeTagInfo, FileFullDirectoryInfo, FileFullDirectoryRestartInfo,
    GetFileInformationByHandle, GetFileInformationByHandleEx, BY_HANDLE_FILE_INFORMATION,
    FILE_ATTRIBUTE_DEVICE, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT,
    FILE_ATTRIBUTE_TAG_INFO, FILE_FLAG_BACKUP_SEMANTICS, FILE_FULL_DIR_INFO, FILE_LIST_DIRECTORY,
    FILE_READ_ATTRIBUTES, FILE_READ_DATA, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE,
    SYNCHRONIZE,
};
use windows_sys::Win32::System::IO::IO_STATUS_BLOCK;

use super::{Class, Stat};
use crate::walk::{mtime_ns, Refusal};

/// A name of a folder's listing with what its record says: attributes, size, write time.
#[derive(Debug)]
pub struct Entry {
    pub name: OsString,
    attributes: u32,
    size: u64,
    write_time: i64, // 100 ns ticks since 1601
}

/// The root, opened by its path (links on the way to it are the caller's choice); a folder
/// opens only with backup semantics.
pub fn open_root(path: &Path) -> io::Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)
}

/// `name` opened relative to the open folder `dir`, the reparse point itself if it is one.
fn nt_open(dir: &fs::File, name: &OsStr, access: u32, options: u32) -> io::Result<fs::File> {
    let wide: Vec<u16> = name.encode_wide().collect();
    let bytes = u16::try_from(wide.len() * 2).map_err(|_| io::ErrorKind::InvalidInput)?;
    let object_name = UNICODE_STRING {
        Length: bytes,
        MaximumLength: bytes,
        Buffer: wide.as_ptr().cast_mut(),
    };
    let attributes = OBJECT_ATTRIBUTES {
        Length: size_of::<OBJECT_ATTRIBUTES>() as u32,
        RootDirectory: dir.as_raw_handle() as HANDLE,
        ObjectName: &object_name,
        Attributes: OBJ_CASE_INSENSITIVE, // as Windows resolves every other name
        SecurityDescriptor: null(),
        SecurityQualityOfService: null(),
    };
    let mut handle: HANDLE = std::ptr::null_mut();
    // SAFETY: a zeroed status block is a valid one for the call to fill.
    let mut status_block: IO_STATUS_BLOCK = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointers to a handle slot, the attributes (whose name outlives the call)
    // and a status block; no allocation size and no extended attributes.
    let status = unsafe {
        NtCreateFile(
            &mut handle,
            access | SYNCHRONIZE | FILE_READ_ATTRIBUTES,
            &attributes,
            &mut status_block,
            null(),
            0,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            FILE_OPEN,
            options | FILE_OPEN_REPARSE_POINT | FILE_SYNCHRONOUS_IO_NONALERT,
            null(),
            0,
        )
    };
    if status < 0 {
        return Err(io::Error::other(format!("NTSTATUS {status:#x}")));
    }
    // SAFETY: NtCreateFile returned a new handle that nothing else owns.
    Ok(unsafe { fs::File::from_raw_handle(handle as _) })
}

/// The attributes of an open handle (`FILE_ATTRIBUTE_REPARSE_POINT` for a link opened as
/// itself).
fn attributes(file: &fs::File) -> io::Result<u32> {
    // SAFETY: a zeroed tag info is a valid one for the call to fill.
    let mut info: FILE_ATTRIBUTE_TAG_INFO = unsafe { std::mem::zeroed() };
    // SAFETY: an open handle and room for one FILE_ATTRIBUTE_TAG_INFO.
    let ok = unsafe {
        GetFileInformationByHandleEx(
            file.as_raw_handle() as HANDLE,
            FileAttributeTagInfo,
            (&mut info as *mut FILE_ATTRIBUTE_TAG_INFO).cast(),
            size_of::<FILE_ATTRIBUTE_TAG_INFO>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info.FileAttributes)
}

/// `name` in `dir` opened without following, refused if it is a reparse point. A name that
/// fails to open as a folder is looked at once more as itself, so that a link in its place
/// is counted as a link.
fn open_checked(
    dir: &fs::File,
    name: &OsStr,
    access: u32,
    options: u32,
) -> Result<fs::File, Refusal> {
    let is_link = |file: &fs::File| matches!(attributes(file), Ok(a) if a & FILE_ATTRIBUTE_REPARSE_POINT != 0);
    match nt_open(dir, name, access, options) {
        Ok(file) if is_link(&file) => Err(Refusal::Symlink),
        Ok(file) => attributes(&file)
            .map(|_| file)
            .map_err(|_| Refusal::Unreadable),
        Err(_) => match nt_open(dir, name, 0, 0) {
            Ok(file) if is_link(&file) => Err(Refusal::Symlink),
            _ => Err(Refusal::Unreadable),
        },
    }
}

/// The folder `name` inside `dir`, refused if it is a reparse point.
pub fn open_dir_at(dir: &fs::File, name: &OsStr) -> Result<fs::File, Refusal> {
    open_checked(dir, name, FILE_LIST_DIRECTORY, FILE_DIRECTORY_FILE)
}

/// `name` inside `dir` opened to be read, refused if it is a reparse point (the caller
/// refuses all but regular files).
pub fn open_file_at(dir: &fs::File, name: &OsStr) -> Result<fs::File, Refusal> {
    open_checked(dir, name, FILE_READ_DATA, 0)
}

/// The identity of an open folder (volume serial number, file index).
pub fn dir_key(dir: &fs::File) -> io::Result<(u64, u64)> {
    // SAFETY: a zeroed record is a valid one for the call to fill.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: an open handle and room for one record.
    if unsafe { GetFileInformationByHandle(dir.as_raw_handle() as HANDLE, &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let index = u64::from(info.nFileIndexHigh) << 32 | u64::from(info.nFileIndexLow);
    Ok((u64::from(info.dwVolumeSerialNumber), index))
}

/// The name of a relative path's component: UTF-8 (WTF-8 names are never stored apart from
/// their walk) holding no separator, and no `:` (which would name a stream of the file).
pub fn name_from_bytes(bytes: &[u8]) -> Option<&OsStr> {
    let name = std::str::from_utf8(bytes).ok()?;
    (!name.contains(['\\', '/', ':', '\0'])).then(|| OsStr::new(name))
}

/// A relative path the caller stored as bytes (UTF-8, as `os.fsencode` writes it).
pub fn path_from_bytes(bytes: &[u8]) -> OsString {
    String::from_utf8_lossy(bytes).into_owned().into()
}

/// A Windows name is UTF-16: its WTF-8 bytes sort as its code points, as Python sorts it.
pub fn sorts_as_bytes(_name: &OsStr) -> bool {
    true
}

/// The listed file's stat, from its listing record: only a file that is no folder, reparse
/// point or device is a regular one.
pub fn stat_at(_dir: &fs::File, entry: &Entry) -> Stat {
    let special = FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT | FILE_ATTRIBUTE_DEVICE;
    if entry.attributes & special != 0 {
        return Stat::Other;
    }
    Stat::File(entry.size, unix_ns(entry.write_time))
}

/// A time in 100 ns ticks since 1601 (a FILETIME) in ns since 1970, as the walk gives it.
fn unix_ns(ticks: i64) -> i64 {
    const TICKS: i64 = 10_000_000; // per second
    const FROM_1601: i64 = 11_644_473_600; // seconds to 1970
    mtime_ns(
        ticks.div_euclid(TICKS) - FROM_1601,
        ticks.rem_euclid(TICKS) * 100,
    )
}

/// The modification time of an opened file's stat, in ns as the walk gives it.
pub fn mtime_of(meta: &fs::Metadata) -> i64 {
    use std::os::windows::fs::MetadataExt;
    unix_ns(meta.last_write_time() as i64)
}

/// What a listed name is, by its record's attributes: a reparse point is a link, a folder
/// if it carries the folder attribute (a folder symlink or junction).
pub fn class_of(_dir: &fs::File, entry: &Entry) -> io::Result<Class> {
    Ok(Class {
        is_dir: entry.attributes & FILE_ATTRIBUTE_DIRECTORY != 0,
        is_link: entry.attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0,
    })
}

/// The names in an open folder, read from its handle so the listing is of the folder that
/// was opened; a listing that fails midway is an error, not a shorter folder.
pub fn list_dir(dir: &fs::File) -> io::Result<Vec<Entry>> {
    let mut buffer = vec![0u64; 8192]; // 64 KiB, aligned for the records
    let mut class = FileFullDirectoryRestartInfo;
    let mut out = Vec::new();
    loop {
        // SAFETY: an open folder handle and a buffer of the size given.
        let ok = unsafe {
            GetFileInformationByHandleEx(
                dir.as_raw_handle() as HANDLE,
                class,
                buffer.as_mut_ptr().cast(),
                (buffer.len() * 8) as u32,
            )
        };
        if ok == 0 {
            let error = io::Error::last_os_error();
            if error.raw_os_error() == Some(ERROR_NO_MORE_FILES as i32) {
                return Ok(out);
            }
            return Err(error);
        }
        class = FileFullDirectoryInfo;
        let mut at = 0usize;
        loop {
            // SAFETY: the call wrote whole records into the buffer, each 8-byte aligned,
            // chained by NextEntryOffset, each followed by its name's FileNameLength bytes.
            let (record, name) = unsafe {
                let record = &*buffer
                    .as_ptr()
                    .cast::<u8>()
                    .add(at)
                    .cast::<FILE_FULL_DIR_INFO>();
                let name = std::slice::from_raw_parts(
                    record.FileName.as_ptr(),
                    record.FileNameLength as usize / 2,
                );
                (record, name)
            };
            if name != [u16::from(b'.')] && name != [u16::from(b'.'); 2] {
                out.push(Entry {
                    name: OsString::from_wide(name),
                    attributes: record.FileAttributes,
                    size: record.EndOfFile as u64,
                    write_time: record.LastWriteTime,
                });
            }
            if record.NextEntryOffset == 0 {
                break;
            }
            at += record.NextEntryOffset as usize;
        }
    }
}

/// A symlink at `at` to `target` (a folder link if the target is a folder), for the tests
/// of what the walk refuses.
#[cfg(test)]
pub fn symlink(target: &Path, at: &Path) -> io::Result<()> {
    if target.is_dir() {
        std::os::windows::fs::symlink_dir(target, at)
    } else {
        std::os::windows::fs::symlink_file(target, at)
    }
}
