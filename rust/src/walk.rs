//! The file walk: which files of a project tree get indexed, by the same rules and in the same
//! order as the Python reference walk (`kenning/sources.py`, whose docstring states the rules).
//!
//! Rules, strongest first: `.kenningignore` files (deepest folder first; a match decides),
//! default excludes by name and virtualenv markers, `.gitignore` files (deepest first), then
//! `.git/info/exclude` of the root. Git's global excludes are not read. A pattern in a folder's
//! file is matched against the path relative to that folder, first the path itself, then its
//! parent folders (so `dist/` or `!dist/` also decides what lies inside `dist`). Ignored folders
//! are pruned. Symlinks are not followed: one pointing inside the root is an alias of a path
//! the walk reaches under its own name (as git stores it), one pointing outside leaves the
//! project. A folder already open higher up (a bind mount loop) is not entered again.
//! Unreadable entries are counted and skipped.
//!
//! Every folder and file is opened relative to the descriptor of its parent folder with
//! `O_NOFOLLOW` (`open_dir_at`, `read_at`, `read_in`: the one place the crate opens a project
//! path), so a folder or file swapped for a symlink after it was listed is refused, not
//! followed out of the project; files are opened with `O_NONBLOCK` (a FIFO never blocks), must
//! be regular files by `fstat` of the open descriptor, and are read to at most a size limit (a
//! link to `/dev/zero` or a file that keeps growing cannot exhaust memory). The Python twin
//! does the same in `kenning/safe_read.py`.
//!
//! The walk yields (relative path, size, mtime in ns) of every candidate file, sorted by path;
//! the binary sniff and the language are the caller's. `changes` compares a walk with the stat
//! data of the files indexed before and keeps only what differs, so a refresh of an unchanged
//! tree hands the caller nothing to look at.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{value_error, CoreResult};
use crate::platform::{
    class_of, dir_key, list_dir, mtime_of, name_from_bytes, open_dir_at, open_file_at, open_root,
    path_from_bytes, sorts_as_bytes, stat_at, Class, Entry, Stat,
};

const IGNORE_FILE: &str = ".gitignore";
const KENNING_IGNORE_FILE: &str = ".kenningignore";

/// The default-exclude tables, passed in by the Python layer so one list rules both walks.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    pub dirs: HashSet<String>,
    pub dir_suffixes: Vec<String>,
    pub files: HashSet<String>,
    pub suffixes: Vec<String>,
    pub env_markers: Vec<String>,
}

/// What a walk found: candidate files sorted by path, and what it left out by reason.
#[derive(Debug, Default)]
pub struct WalkOutput {
    pub files: Vec<(OsString, u64, i64)>,
    /// Ignore files over the ignore-file limit, sorted: rules the walk could not apply, so
    /// the caller must refuse the walk rather than index what they may exclude.
    pub oversized_ignores: Vec<OsString>,
    pub skipped: HashMap<&'static str, u64>,
    pub skipped_dirs: HashMap<&'static str, u64>,
}

/// The ignore files of one folder; `prefix` is the folder relative to the root.
struct Rules {
    prefix: PathBuf,
    git: Option<Gitignore>,
    kenning: Option<Gitignore>,
}

#[derive(Clone, Copy)]
enum Kind {
    Git,
    Kenning,
}

/// Why a project file is not read; `reason` is the name the skip counts use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Symlink,
    Special,
    TooLarge,
    Unreadable,
}

impl Refusal {
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Symlink => "symlink",
            Refusal::Special => "special",
            Refusal::TooLarge => "too_large",
            Refusal::Unreadable => "unreadable",
        }
    }
}

/// A regular file as read: its bytes and the size and modification time it was read at.
#[derive(Debug, PartialEq, Eq)]
pub struct Contents {
    pub data: Vec<u8>,
    pub size: u64,
    pub mtime_ns: i64,
}

/// The content of the regular file `name` inside `dir`, at most `limit` bytes: refused if it
/// is a symlink, not a regular file, or longer than `limit` (even if it grew after a check).
pub fn read_at(dir: &fs::File, name: &OsStr, limit: u64) -> Result<Vec<u8>, Refusal> {
    read_head_at(dir, name, limit, None).map(|read| read.data)
}

/// `read_at`, only the first `head` bytes when given, with the file's stat.
pub fn read_head_at(
    dir: &fs::File,
    name: &OsStr,
    limit: u64,
    head: Option<u64>,
) -> Result<Contents, Refusal> {
    let file = open_file_at(dir, name)?;
    let meta = file.metadata().map_err(|_| Refusal::Unreadable)?;
    if !meta.file_type().is_file() {
        return Err(Refusal::Special);
    }
    if meta.len() > limit {
        return Err(Refusal::TooLarge);
    }
    let want = limit.saturating_add(1).min(head.unwrap_or(u64::MAX));
    let mut data = Vec::with_capacity(meta.len().min(want) as usize);
    file.take(want)
        .read_to_end(&mut data)
        .map_err(|_| Refusal::Unreadable)?;
    if data.len() as u64 > limit {
        return Err(Refusal::TooLarge);
    }
    Ok(Contents {
        data,
        size: meta.len(),
        mtime_ns: mtime_of(&meta),
    })
}

/// The components of the relative path `rel` ('/'-separated); refused if one is empty, `.`
/// or `..` (not a path the walk yields) or cannot be a name here.
fn components(rel: &[u8]) -> Result<Vec<&OsStr>, Refusal> {
    rel.split(|&b| b == b'/')
        .map(|part| match part {
            b"" | b"." | b".." => None,
            name => name_from_bytes(name),
        })
        .collect::<Option<_>>()
        .ok_or(Refusal::Unreadable)
}

/// The folder `folders` names under the open `root` (None: the root itself), each opened
/// with `open_dir_at`.
fn open_folders(root: &fs::File, folders: &[&OsStr]) -> Result<Option<fs::File>, Refusal> {
    let mut held: Option<fs::File> = None;
    for folder in folders {
        held = Some(open_dir_at(held.as_ref().unwrap_or(root), folder)?);
    }
    Ok(held)
}

/// `read_at` for the relative path `rel` ('/'-separated) under the open `root`, every folder
/// on the way opened with `open_dir_at`.
pub fn read_in(root: &fs::File, rel: &[u8], limit: u64) -> Result<Vec<u8>, Refusal> {
    read_head_in(root, rel, limit, None).map(|read| read.data)
}

/// `read_head_at` for the relative path `rel` under the open `root`, as `read_in` opens it.
pub fn read_head_in(
    root: &fs::File,
    rel: &[u8],
    limit: u64,
    head: Option<u64>,
) -> Result<Contents, Refusal> {
    let parts = components(rel)?;
    let (name, folders) = parts.split_last().ok_or(Refusal::Unreadable)?;
    let held = open_folders(root, folders)?;
    read_head_at(held.as_ref().unwrap_or(root), name, limit, head)
}

/// The names in the folder `rel` under the open `root` (empty: the root), every folder on
/// the way opened with `open_dir_at` and the last listed from its handle.
pub fn names_in(root: &fs::File, rel: &[u8]) -> Result<Vec<OsString>, Refusal> {
    let folders = if rel.is_empty() {
        Vec::new()
    } else {
        components(rel)?
    };
    let held = open_folders(root, &folders)?;
    let entries = list_dir(held.as_ref().unwrap_or(root)).map_err(|_| Refusal::Unreadable)?;
    Ok(entries.into_iter().map(|entry| entry.name).collect())
}

/// The rules of an ignore file: none when it is a symlink (git does not follow one either),
/// no regular file or unreadable; `Err` when it is over `limit` bytes (read whole or not at all).
fn read_spec(
    root: &Path,
    dir: &fs::File,
    name: &str,
    limit: u64,
) -> Result<Option<Gitignore>, Refusal> {
    let bytes = match read_at(dir, OsStr::new(name), limit) {
        Ok(bytes) => bytes,
        Err(Refusal::TooLarge) => return Err(Refusal::TooLarge),
        Err(_) => return Ok(None),
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut builder = GitignoreBuilder::new(root);
    for line in text.lines().filter_map(as_git_reads) {
        // a malformed pattern is one line lost, never the whole file
        let _ = builder.add_line(None, &line);
    }
    Ok(builder.build().ok().filter(|spec| !spec.is_empty()))
}

/// `line` spelled for the ignore crate as git reads it, or None where git matches nothing with
/// it and the crate would match something:
/// - a bracket never closed (the crate reads a literal `[`) or naming an unknown class;
/// - a `/` at the end (the folder mark; spaces after it are trimmed) right after another `/`
///   (the crate reads `**//` as every folder) or after an odd run of backslashes, which
///   escapes it (the crate drops the backslash, so `\/` alone would ignore every folder).
///
/// After an even run of backslashes git reads a folder whose name ends with a backslash; the
/// crate would drop one backslash and fail on the other, so that one is spelled as a bracket.
fn as_git_reads(line: &str) -> Option<Cow<'_, str>> {
    if has_broken_bracket(line.as_bytes()) {
        return None;
    }
    let Some(body) = line.trim_end_matches(' ').strip_suffix('/') else {
        return Some(Cow::Borrowed(line));
    };
    if body.ends_with('/') {
        return None;
    }
    match body.bytes().rev().take_while(|&b| b == b'\\').count() {
        0 => Some(Cow::Borrowed(line)),
        run if run % 2 == 1 => None,
        _ => Some(Cow::Owned(format!("{}[\\\\]/", &body[..body.len() - 2]))),
    }
}

/// The classes git reads inside a bracket (`[[:alpha:]]`); with any other name, the pattern
/// matches nothing.
const POSIX_CLASSES: [&[u8]; 12] = [
    b"alnum", b"alpha", b"blank", b"cntrl", b"digit", b"graph", b"lower", b"print", b"punct",
    b"space", b"upper", b"xdigit",
];

/// Whether a `[` of `line` (not escaped by a backslash) opens a bracket that no `]` closes, or
/// one naming a class git does not know: a `]` right after the `[` (or after its `!` or `^`)
/// is a member, as is the `]` of a class such as `[:alpha:]`, and a backslash escapes the byte
/// after it inside a bracket too.
fn has_broken_bracket(line: &[u8]) -> bool {
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 2,
            b'[' => {
                let mut j = i + 1;
                if matches!(line.get(j), Some(b'!' | b'^')) {
                    j += 1;
                }
                if line.get(j) == Some(&b']') {
                    j += 1;
                }
                loop {
                    match line.get(j) {
                        None => return true,
                        Some(b']') => break,
                        Some(b'\\') => j += 2,
                        Some(b'[') if line.get(j + 1) == Some(&b':') => {
                            match line[j + 2..].windows(2).position(|w| w == b":]") {
                                Some(end)
                                    if !POSIX_CLASSES.contains(&&line[j + 2..j + 2 + end]) =>
                                {
                                    return true;
                                }
                                Some(end) => j += end + 4,
                                None => j += 1,
                            }
                        }
                        Some(_) => j += 1,
                    }
                }
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    false
}

fn verdict(spec: &Gitignore, sub: &Path, is_dir: bool) -> Option<bool> {
    let direct = spec.matched(sub, is_dir);
    let found = if direct.is_none() {
        sub.ancestors()
            .skip(1)
            .take_while(|p| !p.as_os_str().is_empty())
            .map(|p| spec.matched(p, true))
            .find(|m| !m.is_none())
            .unwrap_or(Match::None)
    } else {
        direct
    };
    match found {
        Match::None => None,
        Match::Ignore(_) => Some(true),
        Match::Whitelist(_) => Some(false),
    }
}

/// True = ignored, false = explicitly kept, None = no rule matched; the deepest folder wins.
fn decide(stack: &[Arc<Rules>], rel: &Path, is_dir: bool, kind: Kind) -> Option<bool> {
    stack.iter().rev().find_map(|rules| {
        let spec = match kind {
            Kind::Git => rules.git.as_ref(),
            Kind::Kenning => rules.kenning.as_ref(),
        }?;
        let sub = rel.strip_prefix(&rules.prefix).ok()?;
        verdict(spec, sub, is_dir)
    })
}

/// A listed entry with what it is.
struct Row {
    entry: Entry,
    is_dir: bool,
    is_link: bool,
}

/// An open folder, its identity, its entries and the rules that apply inside it.
struct Listing {
    dir: Arc<fs::File>,
    key: (u64, u64),
    entries: Vec<Entry>,
    rules: Vec<Arc<Rules>>,
}

/// Orders names as their sort keys (the name, with a trailing '/' for a folder): "a.txt" <
/// "a/b", so the output is sorted by path. Byte order is code point order for UTF-8 names.
fn by_key(a: &Row, b: &Row) -> Ordering {
    let (x, y) = (
        a.entry.name.as_encoded_bytes(),
        b.entry.name.as_encoded_bytes(),
    );
    let common = x.len().min(y.len());
    x[..common].cmp(&y[..common]).then_with(|| {
        let next = |bytes: &[u8], is_dir: bool| match bytes.get(common) {
            Some(&b) => Some(b),
            None => is_dir.then_some(b'/'),
        };
        next(x, a.is_dir).cmp(&next(y, b.is_dir))
    })
}

/// The sort key as Python orders the name: code points, with each byte that is not UTF-8 read
/// as the lone surrogate U+DC00+byte (`os.fsdecode`). Only names that are not UTF-8 need it.
fn code_points(row: &Row) -> Vec<u32> {
    let name = row.entry.name.as_encoded_bytes();
    let mut out = Vec::with_capacity(name.len() + 1);
    for chunk in name.utf8_chunks() {
        out.extend(chunk.valid().chars().map(u32::from));
        out.extend(chunk.invalid().iter().map(|&b| 0xDC00 + u32::from(b)));
    }
    if row.is_dir {
        out.push(u32::from(b'/'));
    }
    out
}

/// The default excludes as lookups: names in sets, suffixes (all starting with '.') by the part
/// of a name from one of its dots.
struct Excludes {
    dirs: FxHashSet<Vec<u8>>,
    dir_suffixes: FxHashSet<Vec<u8>>,
    files: FxHashSet<Vec<u8>>,
    suffixes: FxHashSet<Vec<u8>>,
    odd_suffixes: Vec<Vec<u8>>, // any not starting with '.', checked one by one
    env_markers: Vec<OsString>,
}

impl Excludes {
    fn new(defaults: &Defaults) -> Self {
        let bytes = |xs: &mut dyn Iterator<Item = &String>| -> FxHashSet<Vec<u8>> {
            xs.map(|x| x.as_bytes().to_vec()).collect()
        };
        let dotted = |xs: &[String]| -> FxHashSet<Vec<u8>> {
            bytes(&mut xs.iter().filter(|x| x.starts_with('.')))
        };
        let odd = defaults.dir_suffixes.iter().chain(&defaults.suffixes);
        Excludes {
            dirs: bytes(&mut defaults.dirs.iter()),
            dir_suffixes: dotted(&defaults.dir_suffixes),
            files: bytes(&mut defaults.files.iter()),
            suffixes: dotted(&defaults.suffixes),
            odd_suffixes: odd
                .filter(|x| !x.starts_with('.'))
                .map(|x| x.as_bytes().to_vec())
                .collect(),
            env_markers: defaults.env_markers.iter().map(OsString::from).collect(),
        }
    }

    fn excluded(&self, name: &OsStr, is_dir: bool) -> bool {
        let (names, suffixes) = if is_dir {
            (&self.dirs, &self.dir_suffixes)
        } else {
            (&self.files, &self.suffixes)
        };
        let name = name.as_encoded_bytes();
        names.contains(name)
            || name
                .iter()
                .enumerate()
                .any(|(i, &b)| b == b'.' && suffixes.contains(&name[i..]))
            || self.odd_suffixes.iter().any(|x| name.ends_with(x))
    }
}

/// The modification time in ns, clamped to 64 bits as the Python walk clamps it: a file dated
/// after 2262 or long before 1970 keeps a stable stamp instead of overflowing.
pub fn mtime_ns(seconds: i64, nanos: i64) -> i64 {
    let exact = i128::from(seconds) * 1_000_000_000 + i128::from(nanos);
    exact.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

fn bump(counts: &mut HashMap<&'static str, u64>, reason: &'static str) {
    *counts.entry(reason).or_insert(0) += 1;
}

/// Where a folder to read is: the root (opened as given), or a name in an open folder.
enum At {
    Root,
    In(Arc<fs::File>, OsString),
}

/// One folder to read: where it is, the rules that apply inside it, the folders above it.
struct Job {
    id: usize,
    at: At,
    abs: PathBuf,    // for the ignore rules' base only: never opened
    prefix: PathBuf, // relative to the root, "" for the root itself
    rules: Vec<Arc<Rules>>,
    ancestors: Vec<(u64, u64)>,
}

/// A folder's candidates in path order: files, and the folders to splice in at their place.
enum Item {
    File(OsString, u64, i64),
    Folder(usize),
}

/// Folders waiting to be read, and how many are being read (the walk ends when both are 0).
struct Queue {
    jobs: Vec<Job>,
    busy: usize,
}

/// What one worker thread found: each folder's items by folder id, and its skip counts.
#[derive(Default)]
struct Found {
    listings: Vec<(usize, Vec<Item>)>,
    skipped: HashMap<&'static str, u64>,
    skipped_dirs: HashMap<&'static str, u64>,
    oversized_ignores: Vec<OsString>,
}

/// Whether the walk keeps a candidate file, given its relative path, size and mtime_ns.
type Keep<'a> = dyn Fn(&[u8], u64, i64) -> bool + Sync + 'a;

struct Walker<'a> {
    excludes: &'a Excludes,
    keep: &'a Keep<'a>,
    ignore_limit: u64, // an ignore file above this size is reported, never applied in part
    queue: Mutex<Queue>,
    wake: Condvar,
    next_id: AtomicUsize,
}

impl Walker<'_> {
    fn skip_reason(
        &self,
        stack: &[Arc<Rules>],
        rel: &Path,
        name: &OsStr,
        is_dir: bool,
    ) -> Option<&'static str> {
        if let Some(ignored) = decide(stack, rel, is_dir, Kind::Kenning) {
            return ignored.then_some("ignored");
        }
        if self.excludes.excluded(name, is_dir) {
            return Some("default");
        }
        decide(stack, rel, is_dir, Kind::Git)
            .unwrap_or(false)
            .then_some("ignored")
    }

    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Read folders until none is left; several threads run this at once.
    fn work(&self) -> Found {
        let mut found = Found::default();
        loop {
            let job = {
                let mut queue = self.queue();
                loop {
                    if let Some(job) = queue.jobs.pop() {
                        queue.busy += 1;
                        break job;
                    }
                    if queue.busy == 0 {
                        self.wake.notify_all();
                        return found;
                    }
                    queue = self
                        .wake
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            let id = job.id;
            let (items, children) = self.read(job, &mut found);
            found.listings.push((id, items));
            let mut queue = self.queue();
            queue.jobs.extend(children.into_iter().rev()); // popped in path order
            queue.busy -= 1;
            self.wake.notify_all();
        }
    }

    /// One folder: opened, listed, its entries classified; a folder that cannot be is counted
    /// as skipped, with the reason.
    fn read(&self, job: Job, found: &mut Found) -> (Vec<Item>, Vec<Job>) {
        match self
            .open(&job)
            .and_then(|(dir, key)| self.list(&job, dir, key, found))
        {
            Ok(listing) => self.classify(job, listing, found),
            Err(reason) => {
                bump(&mut found.skipped_dirs, reason);
                (Vec::new(), Vec::new())
            }
        }
    }

    /// The folder of a job, opened without following a link (one swapped in after the parent
    /// was listed is refused), with its identity; refused if it is open higher up already.
    fn open(&self, job: &Job) -> Result<(Arc<fs::File>, (u64, u64)), &'static str> {
        let dir = match &job.at {
            At::Root => open_root(&job.abs).map_err(|_| Refusal::Unreadable),
            At::In(parent, name) => open_dir_at(parent, name),
        }
        .map_err(Refusal::reason)?;
        let key = dir_key(&dir).map_err(|_| Refusal::Unreadable.reason())?;
        if job.ancestors.contains(&key) {
            // a bind mount of a folder above: walking it again never ends
            return Err(Refusal::Symlink.reason());
        }
        Ok((Arc::new(dir), key))
    }

    /// The open folder's entries and the rules that apply inside it, its own ignore files
    /// read; a virtualenv, whatever its name, is skipped whole.
    fn list(
        &self,
        job: &Job,
        dir: Arc<fs::File>,
        key: (u64, u64),
        found: &mut Found,
    ) -> Result<Listing, &'static str> {
        let entries = list_dir(&dir).map_err(|_| Refusal::Unreadable.reason())?;
        let has = |name: &str| entries.iter().any(|e| e.name == name);
        let is_env = !job.prefix.as_os_str().is_empty()
            && self
                .excludes
                .env_markers
                .iter()
                .any(|m| has_name(&entries, m));
        if is_env && decide(&job.rules, &job.prefix, true, Kind::Kenning) != Some(false) {
            return Err("default");
        }
        let mut rules = job.rules.clone();
        let (has_git, has_ken) = (has(IGNORE_FILE), has(KENNING_IGNORE_FILE));
        if has_git || has_ken {
            let mut spec = |name: &str| {
                read_spec(&job.abs, &dir, name, self.ignore_limit).unwrap_or_else(|_| {
                    let rel = child(&job.prefix, OsStr::new(name));
                    found.oversized_ignores.push(rel.into_os_string());
                    None
                })
            };
            let git = if has_git { spec(IGNORE_FILE) } else { None };
            let kenning = if has_ken {
                spec(KENNING_IGNORE_FILE)
            } else {
                None
            };
            if git.is_some() || kenning.is_some() {
                rules.push(Arc::new(Rules {
                    prefix: job.prefix.clone(),
                    git,
                    kenning,
                }));
            }
        }
        Ok(Listing {
            dir,
            key,
            entries,
            rules,
        })
    }

    /// The listed entries in path order, each skipped (by a rule, or as a link), a folder to
    /// read next, or a file with its stat, kept if `keep` says so.
    fn classify(&self, job: Job, listing: Listing, found: &mut Found) -> (Vec<Item>, Vec<Job>) {
        let Listing {
            dir,
            key,
            entries,
            rules,
        } = listing;
        let mut rows = Vec::with_capacity(entries.len());
        for entry in entries {
            match class_of(&dir, &entry) {
                Ok(Class { is_dir, is_link }) => rows.push(Row {
                    entry,
                    is_dir,
                    is_link,
                }),
                Err(_) => bump(&mut found.skipped, Refusal::Unreadable.reason()),
            }
        }
        if rows.iter().all(|row| sorts_as_bytes(&row.entry.name)) {
            rows.sort_unstable_by(by_key);
        } else {
            rows.sort_by_cached_key(code_points);
        }
        let mut ancestors = job.ancestors;
        ancestors.push(key);
        let mut items = Vec::with_capacity(rows.len());
        let mut children = Vec::new();
        for row in rows {
            let name = &row.entry.name;
            let rel = child(&job.prefix, name);
            let mut reason = self.skip_reason(&rules, &rel, name, row.is_dir);
            if reason.is_none() && row.is_link {
                reason = Some(Refusal::Symlink.reason());
            }
            if let Some(reason) = reason {
                let counts = if row.is_dir {
                    &mut found.skipped_dirs
                } else {
                    &mut found.skipped
                };
                bump(counts, reason);
            } else if row.is_dir {
                let id = self.next_id.fetch_add(1, AtomicOrdering::Relaxed);
                items.push(Item::Folder(id));
                children.push(Job {
                    id,
                    at: At::In(Arc::clone(&dir), name.clone()),
                    abs: job.abs.join(name),
                    prefix: rel,
                    rules: rules.clone(),
                    ancestors: ancestors.clone(),
                });
            } else {
                match stat_at(&dir, &row.entry) {
                    Stat::File(size, mtime_ns) => {
                        if (self.keep)(rel.as_os_str().as_encoded_bytes(), size, mtime_ns) {
                            items.push(Item::File(rel.into_os_string(), size, mtime_ns))
                        }
                    }
                    Stat::Other => {}
                    Stat::Unreadable => bump(&mut found.skipped, Refusal::Unreadable.reason()),
                }
            }
        }
        (items, children)
    }
}

fn has_name(entries: &[Entry], name: &OsStr) -> bool {
    entries.iter().any(|e| e.name == name)
}

/// `prefix.join(name)` for a relative folder and a plain name, in one allocation.
fn child(prefix: &Path, name: &OsStr) -> PathBuf {
    let prefix = prefix.as_os_str();
    let mut out = OsString::with_capacity(prefix.len() + 1 + name.len());
    if !prefix.is_empty() {
        out.push(prefix);
        out.push("/");
    }
    out.push(name);
    out.into()
}

/// The rules of `.git/info/exclude`, every folder on the way opened without following;
/// `Err` when it is over `limit` bytes.
fn read_exclude(root: &Path, limit: u64) -> Result<Option<Gitignore>, Refusal> {
    let opened = open_root(root)
        .map_err(|_| Refusal::Unreadable)
        .and_then(|dir| open_dir_at(&dir, OsStr::new(".git")))
        .and_then(|git| open_dir_at(&git, OsStr::new("info")));
    match opened {
        Ok(info) => read_spec(root, &info, "exclude", limit),
        Err(_) => Ok(None),
    }
}

fn merge(into: &mut HashMap<&'static str, u64>, from: HashMap<&'static str, u64>) {
    for (reason, n) in from {
        *into.entry(reason).or_insert(0) += n;
    }
}

/// Walk `root` (resolved to its real path) and return the candidate files sorted by path;
/// ignore files over `ignore_limit` bytes are listed in `oversized_ignores`, not applied.
pub fn walk(root: &Path, defaults: &Defaults, ignore_limit: u64) -> WalkOutput {
    walk_keeping(root, defaults, ignore_limit, &|_, _, _| true)
}

/// The walk, keeping only the candidate files `keep` accepts. Folders are read by one thread
/// per core (up to 8), each folder whole by one thread; the folders' sorted listings are
/// spliced together at the end.
fn walk_keeping(
    root: &Path,
    defaults: &Defaults,
    ignore_limit: u64,
    keep: &Keep<'_>,
) -> WalkOutput {
    let root = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut out = WalkOutput::default();
    // .git/info/exclude sits below every .gitignore: a root-level layer under them
    let exclude = read_exclude(&root, ignore_limit).unwrap_or_else(|_| {
        out.oversized_ignores.push(".git/info/exclude".into());
        None
    });
    let base = exclude
        .map(|git| {
            Arc::new(Rules {
                prefix: PathBuf::new(),
                git: Some(git),
                kenning: None,
            })
        })
        .into_iter()
        .collect();
    let excludes = Excludes::new(defaults);
    let first = Job {
        id: 0,
        at: At::Root,
        abs: root,
        prefix: PathBuf::new(),
        rules: base,
        ancestors: Vec::new(),
    };
    let walker = Walker {
        excludes: &excludes,
        keep,
        ignore_limit,
        queue: Mutex::new(Queue {
            jobs: vec![first],
            busy: 0,
        }),
        wake: Condvar::new(),
        next_id: AtomicUsize::new(1),
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let parts: Vec<Found> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads)
            .map(|_| scope.spawn(|| walker.work()))
            .collect();
        let mut parts = vec![walker.work()];
        parts.extend(
            helpers
                .into_iter()
                .map(|h| h.join().expect("the walk does not panic")),
        );
        parts
    });
    let mut listings: Vec<Vec<Item>> = Vec::new();
    listings.resize_with(walker.next_id.into_inner(), Vec::new);
    for part in parts {
        merge(&mut out.skipped, part.skipped);
        merge(&mut out.skipped_dirs, part.skipped_dirs);
        out.oversized_ignores.extend(part.oversized_ignores);
        for (id, items) in part.listings {
            listings[id] = items;
        }
    }
    let mut stack = vec![std::mem::take(&mut listings[0]).into_iter()];
    while let Some(top) = stack.last_mut() {
        match top.next() {
            None => {
                stack.pop();
            }
            Some(Item::File(rel, size, mtime_ns)) => out.files.push((rel, size, mtime_ns)),
            Some(Item::Folder(id)) => stack.push(std::mem::take(&mut listings[id]).into_iter()),
        }
    }
    out.oversized_ignores.sort_unstable();
    out
}

/// The stat data of the files indexed before: path -> (size, mtime_ns), each path numbered.
#[derive(Debug, Default)]
pub struct Known<'a> {
    stamps: FxHashMap<&'a [u8], (u64, i64, usize)>,
}

impl Known<'_> {
    /// The known (size, mtime_ns) of `path`.
    pub fn stamp(&self, path: &[u8]) -> Option<(u64, i64)> {
        self.stamps.get(path).map(|&(size, mtime, _)| (size, mtime))
    }

    pub fn len(&self) -> usize {
        self.stamps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stamps.is_empty()
    }
}

/// Parses `path\0size\0mtime_ns` records joined by `\0` (SQLite's `group_concat` of the files
/// table; empty for none). Paths cannot hold a NUL byte, so the separator is unambiguous.
pub fn parse_known(blob: &[u8]) -> CoreResult<Known<'_>> {
    if blob.is_empty() {
        return Ok(Known::default());
    }
    let records = (blob.iter().filter(|&&b| b == 0).count() + 1) / 3;
    let mut stamps = FxHashMap::with_capacity_and_hasher(records, Default::default());
    let mut fields = blob.split(|&b| b == 0);
    while let Some(path) = fields.next() {
        let (Some(size), Some(mtime)) = (fields.next(), fields.next()) else {
            return value_error("known stat data: a record lacks its size or mtime");
        };
        let size = integer(size).and_then(|n| u64::try_from(n).ok());
        let (Some(size), Some(mtime)) = (size, integer(mtime)) else {
            return value_error("known stat data: a size or mtime is not a number");
        };
        let number = stamps.len();
        stamps.entry(path).or_insert((size, mtime, number));
    }
    Ok(Known { stamps })
}

/// A decimal integer as SQLite writes one (an optional '-', then digits).
fn integer(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?; // down, so i64::MIN fits
    }
    if negative {
        Some(value)
    } else {
        value.checked_neg()
    }
}

/// A walk compared with the files indexed before.
#[derive(Debug, Default)]
pub struct Changes {
    /// (path, size, mtime_ns, known before) of new and changed files (of every file when the
    /// caller asks for all), sorted by path.
    pub files: Vec<(OsString, u64, i64, bool)>,
    /// Known paths that are no candidate any more (deleted, now ignored, now too large), sorted.
    pub removed: Vec<OsString>,
    /// Candidate files whose size and mtime are the known ones.
    pub unchanged: u64,
    pub skipped: HashMap<&'static str, u64>,
    pub skipped_dirs: HashMap<&'static str, u64>,
    pub oversized_ignores: Vec<OsString>,
}

/// Walk `root` and compare each candidate file no larger than `max_file_size` with `known`;
/// `all` returns unchanged files too (a full refresh), still flagged as known. An unchanged
/// file is compared where it is stat-ed and never gets a path of its own. Ignore files over
/// `ignore_limit` bytes are listed, as by `walk`.
pub fn changes(
    root: &Path,
    defaults: &Defaults,
    max_file_size: u64,
    ignore_limit: u64,
    known: &Known<'_>,
    all: bool,
) -> Changes {
    let seen: Vec<AtomicBool> = (0..known.len()).map(|_| AtomicBool::new(false)).collect();
    let too_large = AtomicU64::new(0);
    let keep = |rel: &[u8], size: u64, mtime_ns: i64| {
        if size > max_file_size {
            too_large.fetch_add(1, AtomicOrdering::Relaxed);
            return false;
        }
        match known.stamps.get(rel) {
            Some(&(known_size, known_mtime, number)) => {
                seen[number].store(true, AtomicOrdering::Relaxed);
                all || (known_size, known_mtime) != (size, mtime_ns)
            }
            None => true,
        }
    };
    let walked = walk_keeping(root, defaults, ignore_limit, &keep);
    let mut out = Changes {
        skipped: walked.skipped,
        skipped_dirs: walked.skipped_dirs,
        oversized_ignores: walked.oversized_ignores,
        ..Changes::default()
    };
    let too_large = too_large.into_inner();
    if too_large > 0 {
        *out.skipped.entry("too_large").or_insert(0) += too_large;
    }
    out.files = walked
        .files
        .into_iter()
        .map(|(path, size, mtime_ns)| {
            let was_known = known.stamps.contains_key(path.as_encoded_bytes());
            (path, size, mtime_ns, was_known)
        })
        .collect();
    let seen_count = seen
        .iter()
        .filter(|s| s.load(AtomicOrdering::Relaxed))
        .count();
    let listed_known = out.files.iter().filter(|f| f.3).count();
    out.unchanged = (seen_count - listed_known) as u64;
    if seen_count < known.len() {
        let mut removed: Vec<&[u8]> = known
            .stamps
            .iter()
            .filter(|(_, &(_, _, number))| !seen[number].load(AtomicOrdering::Relaxed))
            .map(|(&path, _)| path)
            .collect();
        removed.sort_unstable();
        out.removed = removed.into_iter().map(path_from_bytes).collect();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    impl Defaults {
        fn builtin() -> Self {
            let own = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
            Defaults {
                dirs: own(&[".git", "node_modules", "dist", "__pycache__"])
                    .into_iter()
                    .collect(),
                dir_suffixes: own(&[".egg-info"]),
                files: own(&["Cargo.lock", ".git"]).into_iter().collect(),
                suffixes: own(&[".min.js", ".map"]),
                env_markers: own(&["pyvenv.cfg", "conda-meta"]),
            }
        }
    }

    fn tree(files: &[(&str, &str)]) -> tempdir::TempDir {
        let dir = tempdir::TempDir::new();
        for (rel, text) in files {
            let path = dir.path().join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
        dir
    }

    fn paths(dir: &Path) -> Vec<String> {
        names(&walk(dir, &Defaults::builtin(), MIB))
    }

    fn names(out: &WalkOutput) -> Vec<String> {
        out.files
            .iter()
            .map(|(p, _, _)| p.to_string_lossy().into_owned())
            .collect()
    }

    /// A throwaway directory under the system temp dir, removed on drop.
    mod tempdir {
        use std::path::{Path, PathBuf};
        use std::sync::atomic::{AtomicU64, Ordering};

        pub struct TempDir(PathBuf);
        static NEXT: AtomicU64 = AtomicU64::new(0);

        impl TempDir {
            pub fn new() -> Self {
                let n = NEXT.fetch_add(1, Ordering::Relaxed);
                let path =
                    std::env::temp_dir().join(format!("kenning-walk-{}-{n}", std::process::id()));
                let _ = std::fs::remove_dir_all(&path);
                std::fs::create_dir_all(&path).unwrap();
                TempDir(path)
            }
            pub fn path(&self) -> &Path {
                &self.0
            }
        }
        impl Drop for TempDir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
    }

    #[test]
    fn sorted_by_path_with_sizes() {
        let dir = tree(&[
            ("b.py", "x = 1\n"),
            ("a/z.go", "package a\n"),
            ("a.txt", "hi\n"),
            ("a/b/c.rs", ""),
        ]);
        let out = walk(dir.path(), &Defaults::builtin(), MIB);
        let got: Vec<_> = out
            .files
            .iter()
            .map(|(p, s, _)| (p.to_string_lossy().into_owned(), *s))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a.txt".into(), 3),
                ("a/b/c.rs".into(), 0),
                ("a/z.go".into(), 10),
                ("b.py".into(), 6)
            ]
        );
    }

    #[test]
    fn nested_gitignore_negation_and_info_exclude() {
        let dir = tree(&[
            (".gitignore", "*.log\n/generated/\n"),
            (".git/info/exclude", "secret.py\n"),
            ("app.py", ""),
            ("debug.log", ""),
            ("secret.py", ""),
            ("generated/out.py", ""),
            ("pkg/.gitignore", "!keep.log\ntmp_*\n"),
            ("pkg/keep.log", ""),
            ("pkg/other.log", ""),
            ("pkg/tmp_x.py", ""),
            ("pkg/generated/inner.py", ""),
            ("other/tmp_y.py", ""),
        ]);
        assert_eq!(
            paths(dir.path()),
            [
                ".gitignore",
                "app.py",
                "other/tmp_y.py",
                "pkg/.gitignore",
                "pkg/generated/inner.py",
                "pkg/keep.log"
            ]
        );
    }

    #[test]
    fn a_folder_mark_reads_as_in_git() {
        // git reads `\/`, `a\/` and `**//` as patterns that match nothing, and `b\\/` as the
        // folder named `b\` (checked with `git ls-files -o --exclude-standard`)
        let mut files = vec![
            (".gitignore", "\\/\na\\/  \nb\\\\/\n**//\n"),
            ("a/x.py", ""),
            ("c.py", ""),
        ];
        // a Windows name holds no backslash (it separates components there), so only the
        // patterns that match nothing are read there
        if cfg!(unix) {
            files.push(("b\\/y.py", ""));
        }
        let dir = tree(&files);
        assert_eq!(paths(dir.path()), [".gitignore", "a/x.py", "c.py"]);
    }

    #[test]
    fn a_bracket_never_closed_matches_nothing_as_in_git() {
        let dir = tree(&[
            (".gitignore", "[*\na[\n[]\n[!]\n\\[x].py\n"),
            ("[x].py", ""),
            ("a[", ""),
            ("b.py", ""),
        ]);
        assert_eq!(paths(dir.path()), [".gitignore", "a[", "b.py"]);
    }

    #[test]
    fn a_class_closes_no_bracket_and_an_unknown_one_matches_nothing_as_in_git() {
        let dir = tree(&[
            (".gitignore", "[[:alpha:][]\n[[:foo:]]\n"),
            ("b", ""),
            ("[", ""),
            ("]", ""),
            ("x.py", ""),
        ]);
        assert_eq!(paths(dir.path()), [".gitignore", "]", "x.py"]);
    }

    #[test]
    fn kenningignore_decides_before_defaults_and_gitignore() {
        let dir = tree(&[
            (".gitignore", "*.js\ndocs/\n"),
            (
                ".kenningignore",
                "!dist/\n!docs/\n!Cargo.lock\nvendor/drop.py\n",
            ),
            ("dist/bundle.js", "x"),
            ("docs/guide.md", "x"),
            ("Cargo.lock", "x"),
            ("node_modules/x.js", "x"),
            ("vendor/drop.py", "x"),
            ("vendor/keep.py", "x"),
            ("env/pyvenv.cfg", "x"),
            ("env/lib.py", "x"),
        ]);
        let out = walk(dir.path(), &Defaults::builtin(), MIB);
        let got = names(&out);
        assert_eq!(
            got,
            [
                ".gitignore",
                ".kenningignore",
                "Cargo.lock",
                "dist/bundle.js",
                "docs/guide.md",
                "vendor/keep.py"
            ]
        );
        assert_eq!(out.skipped_dirs.get("default"), Some(&2)); // node_modules and the virtualenv
        assert_eq!(out.skipped.get("ignored"), Some(&1));
    }

    /// Whether this system makes the link just asked for at `at`: Wine reports a symlink made
    /// and makes nothing, and a Windows account without the right to make one is refused. A
    /// test that needs links then says why it ends early, unless KENNING_TEST_LINKS is set (the
    /// CI cells, real Windows included), where a link that cannot be made fails it.
    fn made_link(made: std::io::Result<()>, at: &Path) -> bool {
        let why = match made {
            Ok(()) if fs::symlink_metadata(at).is_ok_and(|m| m.file_type().is_symlink()) => {
                return true
            }
            Ok(()) => "the system reported the link made, yet there is none".to_string(),
            Err(error) => format!("the system makes no link: {error}"),
        };
        assert!(std::env::var_os("KENNING_TEST_LINKS").is_none(), "{why}");
        eprintln!("skipped, {why}");
        false
    }

    #[test]
    fn symlinks_are_not_followed() {
        let base = tempdir::TempDir::new();
        let root = base.path().join("repo");
        let outside = base.path().join("outside");
        fs::create_dir_all(root.join("src")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(root.join("src/a.py"), "a\n").unwrap();
        fs::write(outside.join("secret.py"), "s\n").unwrap();
        let link = |target: PathBuf, at: &str| crate::platform::symlink(&target, &root.join(at));
        if !made_link(link(root.join("src"), "src/loop"), &root.join("src/loop")) {
            return;
        }
        link(root.clone(), "up").unwrap();
        link(outside.clone(), "escape").unwrap();
        link(outside.join("secret.py"), "escape.py").unwrap();
        link(root.join("src/a.py"), "alias.py").unwrap();
        link(root.join("missing.py"), "dangling.py").unwrap();
        let out = walk(&root, &Defaults::builtin(), MIB);
        let got = names(&out);
        assert_eq!(got, ["src/a.py"]);
        assert_eq!(out.skipped.get("symlink"), Some(&3)); // escape.py, alias.py, dangling.py
        assert_eq!(out.skipped_dirs.get("symlink"), Some(&3));
        // a read by path refuses a link at any component, as the walk does
        let opened = open_root(&root).unwrap();
        for rel in [
            "escape.py",
            "escape/secret.py",
            "up/src/a.py",
            "src/loop/a.py",
        ] {
            assert_eq!(
                read_in(&opened, rel.as_bytes(), MIB),
                Err(Refusal::Symlink),
                "{rel}"
            );
        }
        assert_eq!(read_in(&opened, b"src/a.py", MIB), Ok(b"a\n".to_vec()));
    }

    /// A junction (a folder reparse point any account may make, to a folder elsewhere on the
    /// volume) is refused as a symlink is: by the walk and at any component of a read.
    #[cfg(windows)]
    #[test]
    fn junctions_are_not_followed() {
        let base = tempdir::TempDir::new();
        let root = base.path().join("repo");
        let outside = base.path().join("outside");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(root.join("a.py"), "a\n").unwrap();
        fs::write(outside.join("secret.py"), "s\n").unwrap();
        let junction = |target: &Path, at: &str| {
            let at = root.join(at);
            let made = std::process::Command::new("cmd")
                .arg("/C")
                .arg("mklink")
                .arg("/J")
                .arg(&at)
                .arg(target)
                .output()
                .map(|done| done.status.success());
            let made = match made {
                Ok(true) => Ok(()),
                Ok(false) => Err(std::io::Error::other("mklink /J failed")),
                Err(error) => Err(error),
            };
            // std names a junction a symlink too (a name-surrogate reparse point)
            made_link(made, &at)
        };
        if !junction(&outside, "escape") {
            return;
        }
        assert!(junction(&root, "up"));
        let out = walk(&root, &Defaults::builtin(), MIB);
        assert_eq!(names(&out), ["a.py"]);
        assert_eq!(out.skipped_dirs.get("symlink"), Some(&2));
        let opened = open_root(&root).unwrap();
        for rel in ["escape/secret.py", "up/a.py"] {
            assert_eq!(
                read_in(&opened, rel.as_bytes(), MIB),
                Err(Refusal::Symlink),
                "{rel}"
            );
        }
    }

    #[cfg(unix)] // a Windows name is UTF-16: its WTF-8 bytes sort as its code points
    #[test]
    fn names_that_are_not_utf8_sort_as_python_decodes_them() {
        use std::os::unix::ffi::OsStringExt;
        let dir = tree(&[("b.py", ""), ("a\u{e9}.py", ""), ("a\u{fffd}.py", "")]);
        fs::write(
            dir.path().join(OsString::from_vec(b"a\xff.py".to_vec())),
            "",
        )
        .unwrap();
        let got: Vec<Vec<u8>> = walk(dir.path(), &Defaults::builtin(), MIB)
            .files
            .into_iter()
            .map(|(p, _, _)| p.into_vec())
            .collect();
        // U+00E9 < U+DCFF (the byte 0xFF) < U+FFFD
        let want: Vec<&[u8]> = vec![b"a\xc3\xa9.py", b"a\xff.py", b"a\xef\xbf\xbd.py", b"b.py"];
        assert_eq!(got, want);
    }

    #[test]
    fn a_read_by_path_gives_the_head_and_the_stat_the_walk_gives_and_names_list_a_folder() {
        let dir = tree(&[
            ("src/a.py", "abcdef\n"),
            ("src/b/c.py", ""),
            ("top.py", "x"),
        ]);
        let root = open_root(dir.path()).unwrap();
        let (_, size, mtime) = walk(dir.path(), &Defaults::builtin(), MIB).files[0].clone();
        let whole = read_head_in(&root, b"src/a.py", MIB, None).unwrap();
        assert_eq!(
            (whole.data.as_slice(), whole.size, whole.mtime_ns),
            (&b"abcdef\n"[..], size, mtime)
        );
        let head = read_head_in(&root, b"src/a.py", MIB, Some(3)).unwrap();
        assert_eq!((head.data.as_slice(), head.size), (&b"abc"[..], 7));
        assert_eq!(
            read_head_in(&root, b"src/a.py", 6, Some(3)),
            Err(Refusal::TooLarge)
        );
        assert_eq!(
            read_head_in(&root, b"src", MIB, None),
            Err(Refusal::Special)
        );
        for bad in [
            &b""[..],
            b"src/../top.py",
            b"./top.py",
            b"src//a.py",
            b"missing.py",
        ] {
            assert_eq!(
                read_head_in(&root, bad, MIB, None),
                Err(Refusal::Unreadable)
            );
        }
        let sorted = |rel: &[u8]| {
            let mut names = names_in(&root, rel).unwrap();
            names.sort();
            names
        };
        assert_eq!(sorted(b""), ["src", "top.py"]);
        assert_eq!(sorted(b"src"), ["a.py", "b"]);
        assert_eq!(names_in(&root, b"top.py"), Err(Refusal::Unreadable));
        assert_eq!(names_in(&root, b"src/.."), Err(Refusal::Unreadable));
    }

    #[test]
    fn known_stat_data_parses_and_rejects_broken_records() {
        let known = parse_known(b"a.py\x003\x00-5\x00b/c.rs\x000\x0017").unwrap();
        assert_eq!(known.stamp(b"a.py"), Some((3, -5)));
        assert_eq!(known.stamp(b"b/c.rs"), Some((0, 17)));
        assert!(parse_known(b"").unwrap().is_empty());
        let extremes = format!("x\0{}\0{}", i64::MAX, i64::MIN);
        assert_eq!(
            parse_known(extremes.as_bytes()).unwrap().stamp(b"x"),
            Some((i64::MAX as u64, i64::MIN))
        );
        for broken in [
            &b"a.py\x003"[..],
            b"a.py\x00x\x001",
            b"a.py\x001\x00",
            b"a.py\x00-1\x001",
            b"a.py\x00+1\x001",
            b"a.py\x001\x009223372036854775808",
        ] {
            assert!(parse_known(broken).is_err());
        }
    }

    #[test]
    fn changes_keep_only_what_differs_from_the_known_stat_data() {
        let dir = tree(&[
            ("same.py", "x\n"),
            ("edited.py", "x\n"),
            ("new.py", "x\n"),
            ("big.py", "xxxxxxxxxx\n"),
        ]);
        let stamp = |name: &str| {
            let st = fs::metadata(dir.path().join(name)).unwrap();
            let since = st.modified().unwrap().duration_since(std::time::UNIX_EPOCH);
            format!("{name}\0{}\0{}", st.len(), since.unwrap().as_nanos())
        };
        let blob = [
            stamp("same.py"),
            "edited.py\x001\x000".into(),
            stamp("big.py"),
            "gone.py\x001\x001".into(),
        ]
        .join("\0");
        let known = parse_known(blob.as_bytes()).unwrap();
        let out = changes(dir.path(), &Defaults::builtin(), 5, MIB, &known, false);
        let files: Vec<_> = out
            .files
            .iter()
            .map(|(p, _, _, was)| (p.to_string_lossy().into_owned(), *was))
            .collect();
        assert_eq!(
            files,
            [("edited.py".into(), true), ("new.py".into(), false)]
        );
        assert_eq!(out.removed, ["big.py", "gone.py"]); // too large now, and deleted
        assert_eq!(out.unchanged, 1);
        assert_eq!(out.skipped.get("too_large"), Some(&1));
        let every = changes(dir.path(), &Defaults::builtin(), 5, MIB, &known, true);
        assert_eq!(every.files.len(), 3);
        assert_eq!(every.unchanged, 0);
    }

    #[test]
    fn unreadable_ignore_file_is_no_rule() {
        let dir = tree(&[("a.py", "x")]);
        fs::create_dir(dir.path().join(".gitignore")).unwrap();
        assert_eq!(paths(dir.path()), ["a.py"]);
    }

    #[test]
    fn ignore_file_over_the_limit_is_reported_not_applied() {
        let big = format!("secrets.py\n#{}\n", "x".repeat(100));
        let dir = tree(&[
            ("secrets.py", "x"),
            ("a.py", "x"),
            ("pkg/.kenningignore", &big),
            (".gitignore", &big),
            (".git/info/exclude", &big),
        ]);
        let out = walk(dir.path(), &Defaults::builtin(), 100);
        assert_eq!(
            out.oversized_ignores,
            [".git/info/exclude", ".gitignore", "pkg/.kenningignore"]
        );
        let read_whole = walk(dir.path(), &Defaults::builtin(), big.len() as u64);
        assert!(read_whole.oversized_ignores.is_empty());
        let got: Vec<_> = read_whole.files.iter().map(|f| f.0.clone()).collect();
        assert_eq!(got, [".gitignore", "a.py", "pkg/.kenningignore"]); // no secrets.py
        let known = parse_known(b"").unwrap();
        let found = changes(dir.path(), &Defaults::builtin(), 5, 100, &known, false);
        assert_eq!(found.oversized_ignores.len(), 3);
    }
}
